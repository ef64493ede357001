"""Univariate slice sampling (Neal 2003: stepping out and shrinkage), shared by the exact
hyperparameter updates of the IBP (:mod:`pmctx.ibp.hyper`) and the von Mises models
(:mod:`pmctx.vonmises.hyper`, :mod:`pmctx.vonmises.chain`).

Examples
--------
>>> import numpy as np
>>> from pmctx.slice import slice_sample
>>> rng = np.random.default_rng(0)
>>> x = 0.0
>>> draws = []
>>> for _ in range(2000):
...     x = slice_sample(lambda v: -0.5 * v * v, x, rng)
...     draws.append(x)
>>> abs(float(np.mean(draws))) < 0.15, abs(float(np.std(draws)) - 1.0) < 0.1
(True, True)
"""

from __future__ import annotations

__all__ = ["slice_sample"]


def slice_sample(log_density, x0: float, rng, *, width: float = 1.0, max_steps: int = 64):
    """One exact univariate slice-sampling update of ``x0`` (stepping out, shrinkage).

    ``log_density`` is evaluated at scalars; the update leaves ``exp(log_density)``
    invariant for any fixed ``width`` (Neal 2003, Figs. 3 and 5).

    Parameters
    ----------
    log_density : callable
        Log density (up to a constant) of a scalar.
    x0 : float
        Current value (where ``log_density`` is finite).
    rng : numpy.random.Generator
        Random generator.
    width : float, default 1.0
        Initial bracket width.
    max_steps : int, default 64
        Maximum stepping-out steps.

    Returns
    -------
    float
        The new value.
    """
    log_y = float(log_density(x0)) - rng.exponential()
    left = x0 - width * rng.random()
    right = left + width
    steps_left = int(max_steps * rng.random())
    steps_right = max_steps - 1 - steps_left
    while steps_left > 0 and log_density(left) > log_y:
        left -= width
        steps_left -= 1
    while steps_right > 0 and log_density(right) > log_y:
        right += width
        steps_right -= 1
    while True:
        x1 = left + (right - left) * rng.random()
        if log_density(x1) > log_y:
            return x1
        if x1 < x0:
            left = x1
        else:
            right = x1

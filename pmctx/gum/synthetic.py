"""Synthetic data: seed 002 section 3.1 and a simulated psychophysics experiment (3.2, App. D).

Section 3.1: ``rho = f1(x1) f2(x2) + f3(x3)``, Poisson counts with rate ``exp(rho)``;
``f1(x) = exp(x/2) - 1`` and ``f3(x) = -sin(x)`` on [0, 2], ``f2(x) = 1 + cos(2x + pi/3)``
(period pi) on [0, pi].

Examples
--------
>>> from pmctx.gum.synthetic import seed_section_3_1
>>> data = seed_section_3_1(50, random_seed=1)
>>> sorted(data), data["y"].shape
(['x1', 'x2', 'x3', 'y'], (50,))
"""

from __future__ import annotations

import numpy as np

from pmctx.validation import as_rng, check_int, check_positive

__all__ = [
    "SECTION_3_1_FORMULA",
    "TRUE_FUNCTIONS",
    "match_constraints",
    "psychophysics",
    "section_3_1_formula",
    "seed_section_3_1",
]

#: The seed's kernels and hyperparameters (beta = 1, l = 0.1; periodic l = pi/20, T = pi).
SECTION_3_1_FORMULA = (
    "y ~ f(x1, lengthscale=0.1) * f(x2, kernel='periodic', period=pi, lengthscale=pi/20)"
    " + f(x3, lengthscale=0.1)"
)

TRUE_FUNCTIONS = {
    "f_x1": lambda x: np.exp(x / 2.0) - 1.0,
    "f_x2": lambda x: 1.0 + np.cos(2.0 * x + np.pi / 3.0),
    "f_x3": lambda x: -np.sin(x),
}


def section_3_1_formula(*, max_points: int = 48) -> str:
    """The section 3.1 formula with the seed's hyperparameters on ``max_points`` grids.

    Parameters
    ----------
    max_points : int, default 48
        Support points per GP (>= 3).

    Returns
    -------
    str
        The formula.
    """
    max_points = check_int(max_points, "max_points", minimum=3)
    return SECTION_3_1_FORMULA.replace(")", f", max_points={max_points})")


def seed_section_3_1(n: int, *, random_seed=0) -> dict:
    """Draw the section 3.1 data set of size ``n``: ``x1, x3 ~ U[0, 2]``, ``x2 ~ U[0, pi]``.

    Parameters
    ----------
    n : int
        Observations.
    random_seed : int or numpy.random.Generator, default 0
        Random seed or generator.

    Returns
    -------
    dict
        ``x1``, ``x2``, ``x3`` and Poisson ``y``.

    Examples
    --------
    >>> sorted(seed_section_3_1(5))
    ['x1', 'x2', 'x3', 'y']
    """
    n = check_int(n, "n", minimum=1)
    rng = as_rng(random_seed)
    x1, x3 = rng.uniform(0, 2, n), rng.uniform(0, 2, n)
    x2 = rng.uniform(0, np.pi, n)
    rho = TRUE_FUNCTIONS["f_x1"](x1) * TRUE_FUNCTIONS["f_x2"](x2) + TRUE_FUNCTIONS["f_x3"](x3)
    return {"x1": x1, "x2": x2, "x3": x3, "y": rng.poisson(np.exp(rho))}


def match_constraints(grids: dict) -> dict:
    """True 3.1 functions on ``grids`` transformed to the default constraints of the fit.

    The default GUM ``(f1 free) * (f2 mean-one) + (f3 mean-zero) + c0`` identifies
    ``f2 / mean(f2)``, ``f1 * mean(f2)`` and ``f3 - mean(f3)`` (means over each grid); the
    true intercept is then ``mean(f3)``.

    Parameters
    ----------
    grids : dict
        Support points of ``f_x1``, ``f_x2``, ``f_x3``.

    Returns
    -------
    dict
        The transformed true functions and the true ``intercept``.
    """
    f1 = TRUE_FUNCTIONS["f_x1"](grids["f_x1"])
    f2 = TRUE_FUNCTIONS["f_x2"](grids["f_x2"])
    f3 = TRUE_FUNCTIONS["f_x3"](grids["f_x3"])
    scale = f2.mean()
    return {
        "f_x1": f1 * scale,
        "f_x2": f2 / scale,
        "f_x3": f3 - f3.mean(),
        "intercept": f3.mean(),
    }


def psychophysics(
    n_trials: int,
    *,
    min_length: int = 5,
    max_length: int = 10,
    weights=None,
    mapping=None,
    kappa: float = 0.3,
    bias: float = 0.0,
    random_seed=0,
) -> dict:
    """Simulate the grating-sequence task of seed 002 section 3.2 / Appendix D.

    Each trial shows 5-10 gratings whose angles (relative to the category reference, on the
    doubled-angle circle) are von Mises around 0 (category 1) or pi (category 0) with
    concentration ``kappa``; the observer answers 1 with probability
    ``sigmoid(sum_k w_k mapping(angle_k) + bias)``.

    Parameters
    ----------
    n_trials : int
    weights : array of shape (max_length,), optional
        Position weights (default: mild recency, mean one).
    mapping : callable, optional
        Angle-to-evidence map (default: the normative ``cos``).
    min_length, max_length : int, default 5 and 10
        Range of gratings per trial.
    kappa : float, default 0.3
        Von Mises concentration of the angles.
    bias : float, default 0.0
        Observer's bias.
    random_seed : int or numpy.random.Generator, default 0
        Random seed or generator.

    Returns
    -------
    dict with ``angle`` and ``position`` (trials x max_length, NaN where no grating),
    ``choice`` (0/1), ``category`` and ``normative`` (``cos(angle)``, NaN where absent).
    """
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    kappa = check_positive(kappa, "kappa")
    rng = as_rng(random_seed)
    if weights is None:
        weights = np.linspace(0.7, 1.3, max_length)
    weights = np.asarray(weights, float)
    mapping = np.cos if mapping is None else mapping
    lengths = rng.integers(min_length, max_length + 1, n_trials)
    category = rng.integers(0, 2, n_trials)
    centre = np.where(category == 1, 0.0, np.pi)[:, None]
    angle = rng.vonmises(centre, kappa, (n_trials, max_length))
    present = np.arange(max_length)[None, :] < lengths[:, None]
    angle = np.where(present, angle, np.nan)
    position = np.where(present, np.arange(max_length)[None, :], np.nan)
    evidence = np.where(present, weights[None, :] * mapping(np.nan_to_num(angle)), 0.0)
    rho = evidence.sum(axis=1) + bias
    choice = (rng.uniform(size=n_trials) < 1.0 / (1.0 + np.exp(-rho))).astype(int)
    return {
        "angle": angle,
        "position": position,
        "choice": choice,
        "category": category,
        "normative": np.cos(angle),
    }

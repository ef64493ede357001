"""Random streams of a GUM call from its one ``random_seed``.

A call such as ``GumModel.predict(..., kind="response")`` draws from several streams (the
Laplace draws, the GP conditional at new inputs, the responses). :func:`stream` gives stream
``offset`` of a ``random_seed``: an int seeds each stream with ``random_seed + offset`` (so an
int reproduces the same draws, call after call), a ``Generator`` is drawn from in turn.

Examples
--------
>>> import numpy as np
>>> a, b = stream(3, 1).integers(100, size=3), np.random.default_rng(4).integers(100, size=3)
>>> bool((a == b).all())
True
>>> rng = np.random.default_rng(0)
>>> stream(rng, 2) is rng
True
>>> fixed_seed(7), type(fixed_seed(rng)).__name__
(7, 'int')
"""

from __future__ import annotations

import numbers

import numpy as np

from pmctx.validation import as_rng

__all__ = ["fixed_seed", "stream"]


def stream(random_seed, offset: int = 0) -> np.random.Generator:
    """Generator of stream ``offset`` of ``random_seed``.

    Parameters
    ----------
    random_seed : int, sequence of int, numpy.random.Generator or None
        An int seeds ``numpy.random.default_rng(random_seed + offset)``; a sequence of ints
        (as :func:`pymc.sample` takes per chain) seeds the stream with ``offset`` appended; a
        Generator is returned as is (its next draws); None gives fresh entropy.
    offset : int, default 0
        The stream.

    Returns
    -------
    numpy.random.Generator
        The stream's generator.
    """
    if isinstance(random_seed, numbers.Integral) and not isinstance(random_seed, bool):
        return as_rng(int(random_seed) + offset)
    if isinstance(random_seed, list | tuple | np.ndarray):
        return np.random.default_rng([*(int(s) for s in np.ravel(random_seed)), offset])
    return as_rng(random_seed)


def fixed_seed(random_seed):
    """An int seed for what must repeat or only takes ints: a Generator gives one draw of it.

    ``pm.fit`` (ADVI) takes no Generator, and :func:`pmctx.gum.hyper.fit_cv` needs the same
    folds at every evaluation.

    Parameters
    ----------
    random_seed : int, numpy.random.Generator or None
        The seed.

    Returns
    -------
    int or None
        ``random_seed`` itself unless it is a Generator.
    """
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**31))
    return random_seed

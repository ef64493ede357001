"""Reference R-hat and ESS: pmctx's diagnostics as they were before the blocked kernel.

A verbatim copy of the whole-array numpy implementation of rank-normalised split R-hat and
bulk/tail ESS (Vehtari et al. 2021) that :mod:`pmctx.convergence` used: every element at
once, ranks by a stable argsort with ties averaged, ``np.median``/``np.quantile`` for the
folded draws and the tail indicators, and the autocovariance of each chain by a
power-of-two ``numpy.fft`` of the whole (element, chain, draw) array. It is slow and
memory-hungry (an element x chain x 2048 complex array) on purpose: it shares no code with
the blocked, compiled version, which must agree with it to 1e-10 relative.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

__all__ = ["diagnose", "element_diagnostics"]


def _split(x):
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _average_ranks(flat):
    n, size = flat.shape
    order = np.argsort(flat, axis=1, kind="stable")
    ordered = np.take_along_axis(flat, order, axis=1)
    new_group = np.ones((n, size), dtype=bool)
    new_group[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = np.cumsum(new_group.ravel()) - 1
    counts = np.bincount(group)
    starts = np.cumsum(counts) - counts
    position = starts[group] - np.repeat(np.arange(n) * size, size)
    rank_sorted = (position + (counts[group] + 1) / 2.0).reshape(n, size)
    ranks = np.empty_like(rank_sorted)
    np.put_along_axis(ranks, order, rank_sorted, axis=1)
    return ranks


def _rank_normalise(x):
    chains, draws, n = x.shape
    flat = np.ascontiguousarray(x.reshape(chains * draws, n).T)
    ranks = _average_ranks(flat)
    z = ndtri((ranks - 0.375) / (chains * draws + 0.25))
    return z.T.reshape(x.shape)


def _basic_rhat(x):
    draws = x.shape[1]
    between = draws * np.var(x.mean(axis=1), axis=0, ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.sqrt((between / within + draws - 1) / draws)
    return np.where(within > 0, value, np.where(between > 0, np.inf, 1.0))


def _ess(x):
    chains, draws, _ = x.shape
    total = chains * draws
    y = np.ascontiguousarray(np.moveaxis(x, 2, 0))
    centred = y - y.mean(axis=2, keepdims=True)
    size = 2 ** int(np.ceil(np.log2(2 * draws)))
    spectrum = np.fft.rfft(centred, n=size, axis=2)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=2)[:, :, :draws] / draws
    mean_var = acov[:, :, 0].mean(axis=1) * draws / (draws - 1.0)
    var_plus = mean_var * (draws - 1.0) / draws
    if chains > 1:
        var_plus = var_plus + np.var(y.mean(axis=2), axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]).T
    rho[0] = 1.0
    n_pairs = (draws - 1) // 2
    pairs = rho[0 : 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]
    positive = np.cumprod(pairs > 0, axis=0).astype(bool)
    monotone = np.minimum.accumulate(np.where(positive, pairs, 0.0), axis=0)
    tau = -1.0 + 2.0 * np.sum(np.where(positive, monotone, 0.0), axis=0)
    tau = np.maximum(tau, 1.0 / np.log10(total))
    ess = total / tau
    return np.where(var_plus > 0, ess, float(total))


def diagnose(x):
    """(R-hat, bulk ESS, tail ESS) per element of (chain, draw, element) draws.

    Parameters
    ----------
    x : numpy.ndarray
        float64 draws of shape (chain, draw, element), at least 4 draws per chain.

    Returns
    -------
    tuple of numpy.ndarray
        Rank-normalised split R-hat (the larger of bulk and folded), bulk ESS, tail ESS.
    """
    split = _split(x)
    z = _rank_normalise(split)
    pooled = split.reshape(-1, split.shape[2])
    folded = np.abs(split - np.median(pooled, axis=0))
    r = np.maximum(_basic_rhat(z), _basic_rhat(_rank_normalise(folded)))
    tails = [
        _ess((split <= np.quantile(pooled, prob, axis=0)).astype(np.float64))
        for prob in (0.05, 0.95)
    ]
    return r, _ess(z), np.minimum(*tails)


def element_diagnostics(values, period=None):
    """R-hat, bulk and tail ESS per element as :func:`pmctx.convergence.element_diagnostics`.

    Parameters
    ----------
    values : array_like
        Draws with dims (chain, draw, ...).
    period : float, optional
        Period of a circular quantity (diagnosed on cos and sin), ``None`` for a linear one.

    Returns
    -------
    dict of str to numpy.ndarray
        ``r_hat``, ``ess_bulk``, ``ess_tail`` and ``constant``.
    """
    values = np.asarray(values, dtype=np.float64)
    x = values.reshape(values.shape[0], values.shape[1], -1)
    if period is None:
        parts = [x]
    else:
        angle = 2.0 * np.pi * x / float(period)
        parts = [np.cos(angle), np.sin(angle)]
    pooled = [p.reshape(-1, p.shape[2]) for p in parts]
    constant = np.all([np.ptp(p, axis=0) < 1e-12 for p in pooled], axis=0)
    r = np.ones(x.shape[2])
    bulk = np.full(x.shape[2], float(x.shape[0] * x.shape[1]))
    tail = bulk.copy()
    moving = ~constant
    if x.shape[1] < 4:
        nan = np.full(x.shape[2], np.nan)
        return {"r_hat": nan, "ess_bulk": nan, "ess_tail": nan, "constant": constant}
    if moving.any():
        results = [diagnose(p[:, :, moving]) for p in parts]
        r[moving] = np.max([res[0] for res in results], axis=0)
        bulk[moving] = np.min([res[1] for res in results], axis=0)
        tail[moving] = np.min([res[2] for res in results], axis=0)
    return {"r_hat": r, "ess_bulk": bulk, "ess_tail": tail, "constant": constant}

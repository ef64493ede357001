"""Compiled kernels of :mod:`pmctx.convergence`: rank transforms from one sort, Geyer's ESS.

Rank-normalised split R-hat and bulk/tail ESS (Vehtari et al. 2021) need, per element, the
normal scores of the ranks of the pooled split draws, the same of the draws folded about
their median, and the indicators of the draws at or below their 5 % and 95 % quantiles.
:func:`rank_transforms` derives all of them from one ascending order of each element's
draws (``numpy.argsort``, done by the caller on a block of elements):

* ranks with ties averaged: a tie group starting at sorted position ``p`` (0-based) with
  ``m`` members has rank ``p + (m + 1) / 2``, a half-integer, so its normal score is read
  from a table of ``ndtri((r - 3/8) / (N + 1/4))`` at the ``2 N - 1`` half-integers
  ``r = 1, 1.5, ..., N`` (bit for bit what ``ndtri`` gives draw by draw);
* the median is ``(s[N/2 - 1] + s[N/2]) / 2`` of the sorted draws ``s`` (``numpy.median``'s
  arithmetic); the folded draws ``|s - median|`` are two sorted runs (below the median,
  read backwards, and from it upwards), merged in linear time instead of sorted again;
* the quantiles are ``numpy.quantile``'s default (linear) interpolation, with its exact
  rounding (``a + (b - a) g`` below ``g = 1/2``, ``b - (b - a)(1 - g)`` from it), so the
  indicators equal ``draws <= numpy.quantile(draws, prob)``.

The effective sample size reads the chains' summed autocovariances only up to the first
pair of autocorrelations whose sum is not positive (Geyer's initial monotone sequence):
:func:`ess_direct` sums ``y[t] y[t + k]`` for the first lags, which settles most elements
of a mixing fit, and :func:`geyer_ess` finishes the others from an FFT's autocovariances
(:func:`power_over_chains` sums their chains' power spectra first, so one inverse transform
per element serves all chains).

No fastmath: every operation rounds as numpy's does.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["ess_direct", "geyer_ess", "power_over_chains", "rank_transforms"]


@numba.njit(cache=True, inline="always")
def _lerp(a, b, gamma):
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1.0 - gamma)
    return a + diff * gamma


@numba.njit(cache=True)
def _quantile_sorted(s, prev, gamma):
    """``numpy.quantile`` (linear) of sorted ``s`` at virtual index ``prev + gamma``."""
    if prev < 0:  # the virtual index is at or past the last draw
        return s[s.shape[0] - 1]
    return _lerp(s[prev], s[prev + 1], gamma)


@numba.njit(cache=True)
def _scatter_scores(keys, positions, table, out):
    """Normal scores of the average ranks of sorted ``keys`` to their draws' places in
    ``out``."""
    size = keys.shape[0]
    i = 0
    while i < size:
        j = i + 1
        while j < size and keys[j] == keys[i]:
            j += 1
        score = table[i + j - 1]  # rank i + (j - i + 1) / 2 at table index 2 rank - 2
        for k in range(i, j):
            out[positions[k]] = score
        i = j


@numba.njit(cache=True)
def rank_transforms(values, order, table, quantiles, series, folded):
    """Normal scores of ranks, tail indicators and normal scores of folded ranks of a block.

    Parameters
    ----------
    values : numpy.ndarray
        float64 (element, N): each row the pooled split draws of one element, draw ``t`` of
        half-chain ``h`` at column ``h * n + t``.
    order : numpy.ndarray
        int64 (element, N): an ascending order of each row (``numpy.argsort(values, 1)``).
    table : numpy.ndarray
        ``ndtri((1 + k / 2 - 0.375) / (N + 0.25))`` for ``k = 0 .. 2 N - 2``.
    quantiles : numpy.ndarray
        (q, 2) float64: per tail quantile the floor of its virtual index ``(N - 1) prob``
        (``-1`` at or past the last draw) and the fractional part.
    series : numpy.ndarray
        float64 (1 + q, element, N) output: the normal scores of the ranks, then one
        ``draws <= quantile`` indicator (0.0 or 1.0) per quantile, in the order of ``values``.
    folded : numpy.ndarray
        float64 (element, N) output: the normal scores of the ranks of the draws' distances
        from their median; with no rows (shape (0, N)) it is skipped.
    """
    n_el, size = values.shape
    n_quantiles = quantiles.shape[0]
    with_folded = folded.shape[0] == n_el
    keys = np.empty(size)
    positions = np.empty(size, dtype=np.int64)
    fkeys = np.empty(size)
    fpositions = np.empty(size, dtype=np.int64)
    for b in range(n_el):
        for k in range(size):
            positions[k] = order[b, k]
            keys[k] = values[b, positions[k]]
        _scatter_scores(keys, positions, table, series[0, b])
        for q in range(n_quantiles):
            cut = _quantile_sorted(keys, np.int64(quantiles[q, 0]), quantiles[q, 1])
            for pos in range(size):
                series[1 + q, b, pos] = 1.0 if values[b, pos] <= cut else 0.0
        if not with_folded:
            continue
        half_size = size // 2
        if size % 2 == 0:
            median = (keys[half_size - 1] + keys[half_size]) / 2.0
        else:
            median = keys[half_size]
        # Merge |s - median| of the draws below the median (read backwards) with those of
        # the draws from the median up: both runs are ascending.
        up = 0
        while up < size and keys[up] < median:
            up += 1
        down = up - 1
        for k in range(size):
            take_down = down >= 0 and (
                up >= size or abs(keys[down] - median) <= abs(keys[up] - median)
            )
            if take_down:
                fkeys[k] = abs(keys[down] - median)
                fpositions[k] = positions[down]
                down -= 1
            else:
                fkeys[k] = abs(keys[up] - median)
                fpositions[k] = positions[up]
                up += 1
        _scatter_scores(fkeys, fpositions, table, folded[b])


@numba.njit(cache=True)
def geyer_ess(acov_sum, chains, draws, var_of_means, tau_floor):
    """Geyer initial-monotone-sequence ESS from the chains' summed autocovariances.

    The steps of ArviZ's ``_ess`` (Vehtari et al. 2021, eq. 10-11), per element, reading
    lags only up to the first pair of autocorrelations whose sum is not positive.

    Parameters
    ----------
    acov_sum : numpy.ndarray
        (element, lag) float64: the sum over chains and ``t`` of ``y[t] y[t + lag]`` of the
        centred draws, at least ``draws`` lags.
    chains, draws : int
        Chains (half-chains) and draws in each.
    var_of_means : numpy.ndarray
        (element,) variance (ddof 1) of the chain means; zeros for one chain.
    tau_floor : float
        ``1 / log10(chains * draws)``: the smallest autocorrelation time allowed.

    Returns
    -------
    numpy.ndarray
        (element,) ESS; ``chains * draws`` where the pooled variance is not positive.
    """
    n_el = acov_sum.shape[0]
    out = np.empty(n_el)
    for e in range(n_el):
        out[e] = _ess_from_lags(acov_sum[e], draws, chains, draws, var_of_means[e], tau_floor)[0]
    return out


@numba.njit(cache=True)
def _ess_from_lags(acov, n_lags, chains, draws, var_of_means, tau_floor):
    """(ESS, decided, last pair) from the first ``n_lags`` summed lags ``acov``."""
    total = chains * draws
    scale = float(draws * chains)
    mean_var = acov[0] / scale * draws / (draws - 1.0)
    var_plus = mean_var * (draws - 1.0) / draws
    if chains > 1:
        var_plus = var_plus + var_of_means
    if not var_plus > 0:
        return float(total), True, 0.0
    running = np.inf
    tau_sum = 0.0
    for k in range((draws - 1) // 2):
        if 2 * k + 1 >= n_lags:
            return np.nan, False, running
        first = 1.0
        if k > 0:
            first = 1.0 - (mean_var - acov[2 * k] / scale) / var_plus
        second = 1.0 - (mean_var - acov[2 * k + 1] / scale) / var_plus
        pair = first + second
        if not pair > 0:
            break
        running = min(running, pair)
        tau_sum += running
    return total / max(-1.0 + 2.0 * tau_sum, tau_floor), True, running


@numba.njit(cache=True)
def _summed_lags(centred, draws, e, n_lags):
    """``sum over chains and t of y[t] y[t + k]`` for ``k < n_lags`` of element ``e``."""
    acov = np.zeros(n_lags)
    for c in range(centred.shape[1]):
        for t in range(draws):
            a = centred[e, c, t]
            for k in range(min(n_lags, draws - t)):  # a loop LLVM vectorises
                acov[k] += a * centred[e, c, t + k]
    return acov


@numba.njit(cache=True)
def ess_direct(centred, draws, var_of_means, tau_floor, first_lags, max_lags, give_up, streak):
    """Geyer ESS from autocovariances summed directly over the first lags.

    Most elements' sequences end within a few lags, where summing ``y[t] y[t + k]`` for the
    lags read costs far less than a spectrum of all of them. Each element is tried on
    ``first_lags`` lags, then (unless its last pair of autocorrelations is above
    ``give_up``: a long sequence ahead) on ``max_lags``; one still undecided is left to the
    FFT, and so are all elements after ``streak`` undecided ones in a row (chains that do
    not mix, whose every element needs the FFT).

    Parameters
    ----------
    centred : numpy.ndarray
        (element, chain, at least ``draws``) draws minus their chain means (then anything,
        e.g. the zeros that pad them for an FFT).
    draws : int
        Draws per chain.
    var_of_means : numpy.ndarray
        (element,) variance (ddof 1) of the chain means.
    tau_floor : float
        ``1 / log10(chains * draws)``.
    first_lags, max_lags : int
        Lags summed on the first try and at most.
    give_up : float
        Pair value above which an element leaves for the FFT after the first try.
    streak : int
        Undecided elements in a row after which the rest go to the FFT untried.

    Returns
    -------
    ess : numpy.ndarray
        (element,) ESS, NaN where undecided.
    decided : numpy.ndarray
        (element,) bool.
    """
    n_el, chains = centred.shape[:2]
    ess = np.full(n_el, np.nan)
    decided = np.zeros(n_el, dtype=np.bool_)
    tries = (max(min(first_lags, draws), 1), max(min(max_lags, draws), 1))
    undecided_in_a_row = 0
    for e in range(n_el):
        if undecided_in_a_row >= streak:
            break
        undecided_in_a_row += 1
        for n_lags in tries:
            acov = _summed_lags(centred, draws, e, n_lags)
            value, done, last = _ess_from_lags(
                acov, n_lags, chains, draws, var_of_means[e], tau_floor
            )
            if done:
                ess[e] = value
                decided[e] = True
                undecided_in_a_row = 0
            if done or last > give_up or n_lags == draws:
                break
    return ess, decided


@numba.njit(cache=True)
def power_over_chains(spectrum):
    """``sum over chains of |spectrum|^2`` of (element, chain, frequency) complex spectra."""
    n_el, chains, n_freq = spectrum.shape
    out = np.zeros((n_el, n_freq))
    for e in range(n_el):
        for c in range(chains):
            for f in range(n_freq):
                v = spectrum[e, c, f]
                out[e, f] += v.real * v.real + v.imag * v.imag
    return out

"""Convergence report on label-invariant quantities, after every fit.

R-hat of label-switching latents (IBP ``Z``, CRP ``z``) and linear statistics of angles are
meaningless, so pmctx diagnoses each model's *label-invariant* quantities (a
``xarray.Dataset`` with ``chain``/``draw`` dims from the model's ``invariants(idata)``).
Variables with ``attrs["period"]`` are circular: R-hat and ESS are computed on their cosine
and sine (the worse of the two counts). Elements that never change (a constant reconstruction,
an observed node) carry no information and are left out rather than divided by zero.

R-hat is the rank-normalised split R-hat and bulk/tail ESS those of Vehtari et al. (2021),
the same definitions as ``az.rhat``/``az.ess``, computed for many elements at once (ArviZ
loops over them in Python, far too slow for thousands of reconstruction entries): elements
go through in cache-sized blocks, each element is sorted once and a compiled kernel
(:mod:`pmctx._numba_ranks`) derives its ranks, folded ranks and tail indicators from that
order; autocovariances are summed directly over the first lags and by FFT only for elements
whose autocorrelations have not ended there. Memory grows with the block, not the elements.

A quantity with many elements (a map, a reconstruction) is judged by its worst element, and
the largest of many R-hats exceeds 1.01 on perfectly stationary chains (four AR(1) chains
of 1,000 draws with bulk ESS about 710 per element: the largest of 1,000 R-hats is
1.018-1.026). So each element's R-hat is compared with the limit that keeps the false-alarm
rate of the whole quantity at that of the 1.01 rule for one scalar with the same ESS
(:func:`rhat_limit`); for a scalar the limit is exactly 1.01.

Examples
--------
>>> import numpy as np, xarray as xr
>>> from pmctx.convergence import convergence_report
>>> rng = np.random.default_rng(0)
>>> ds = xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(4, 500)))})
>>> report = convergence_report(ds)
>>> bool(report.loc["mu", "converged"])
True
"""

# Long because it computes rank-normalised split R-hat and bulk/tail ESS itself (the compiled
# loops live in pmctx/_numba_ranks.py), next to the report and warnings built on them; about
# 250 of its lines are docstrings.

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.fft
import xarray as xr
from scipy.special import ndtri

from pmctx._numba_ranks import ess_direct, geyer_ess, power_over_chains, rank_transforms
from pmctx.exceptions import ConvergenceWarning, DivergenceWarning
from pmctx.trees import as_datatree

__all__ = [
    "ESS_PER_CHAIN",
    "R_HAT_MAX",
    "check_convergence",
    "check_divergences",
    "convergence_judge",
    "convergence_report",
    "count_divergences",
    "draws_advice",
    "ess_bulk",
    "ess_tail",
    "flatten_elements",
    "rhat",
    "rhat_limit",
]

R_HAT_MAX = 1.01
ESS_PER_CHAIN = 100
MAX_ELEMENTS = 1000
#: Elements diagnosed together: their ranks, scores and spectra fit in the CPU's cache.
BLOCK = 64
TAIL_PROBS = (0.05, 0.95)
#: Autocovariance lags summed directly on a first and a second try, the pair of
#: autocorrelations after the first try above which an element goes to the FFT at once, and
#: the undecided elements in a row after which the rest of a block does (these set the
#: cost, not the results).
FIRST_LAGS, MAX_DIRECT_LAGS, GIVE_UP_PAIR, GIVE_UP_STREAK = 16, 64, 1.0, 8


def flatten_elements(values) -> np.ndarray:
    """(chain, draw, ...) -> (chain, draw, element) float64.

    Parameters
    ----------
    values : array_like
        Draws with dims (chain, draw, ...).

    Returns
    -------
    numpy.ndarray
        float64 array of shape (chain, draw, element), the trailing dims flattened.

    Raises
    ------
    ValueError
        If ``values`` has fewer than two dims.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim < 2:
        raise ValueError(
            "expected draws with dims (chain, draw, ...), got an array of shape "
            f"{values.shape}; for one chain of a scalar pass values[None, :]"
        )
    return values.reshape(values.shape[0], values.shape[1], -1)


def _split(x: np.ndarray) -> np.ndarray:
    """Split each chain in two halves (dropping the middle draw of an odd length)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _basic_rhat(x: np.ndarray) -> np.ndarray:
    draws = x.shape[1]
    between = draws * np.var(x.mean(axis=1), axis=0, ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.sqrt((between / within + draws - 1) / draws)
    # No movement inside any chain: converged only if all chains sit at the same value.
    return np.where(within > 0, value, np.where(between > 0, np.inf, 1.0))


def _ess(y: np.ndarray) -> np.ndarray:
    """Geyer initial-monotone-sequence ESS of (element, chain, draw) draws.

    Autocovariances summed over chains: directly over the first lags
    (:func:`pmctx._numba_ranks.ess_direct`, enough for most elements), else in the frequency
    domain (one inverse transform per element) on the shortest fast FFT length that holds
    every lag without wrapping.
    """
    n_el, chains, draws = y.shape
    size = scipy.fft.next_fast_len(2 * draws - 1, real=True)
    padded = np.empty((n_el, chains, size))  # the centred draws, zero-padded for the FFT
    padded[:, :, draws:] = 0.0
    means = y.mean(axis=2, keepdims=True)
    np.subtract(y, means, out=padded[:, :, :draws])
    spread = np.var(means[:, :, 0], axis=1, ddof=1) if chains > 1 else np.zeros(n_el)
    floor = 1.0 / np.log10(chains * draws)
    ess, decided = ess_direct(
        padded, draws, spread, floor, FIRST_LAGS, MAX_DIRECT_LAGS, GIVE_UP_PAIR, GIVE_UP_STREAK
    )
    slow = np.flatnonzero(~decided)
    if slow.size:
        spectrum = scipy.fft.rfft(padded if slow.size == n_el else padded[slow], axis=2)
        acov = scipy.fft.irfft(power_over_chains(spectrum), n=size, axis=1)
        ess[slow] = geyer_ess(acov, chains, draws, spread[slow], floor)
    return ess


def _diagnose(x: np.ndarray, *, full: bool = True):
    """(R-hat, bulk ESS, tail ESS) per element of (chain, draw, element) draws.

    Elements go through in blocks of :data:`BLOCK` (memory in proportion to the block, not to
    all elements); each block is sorted once per element (:func:`numpy.argsort`) and
    :func:`pmctx._numba_ranks.rank_transforms` derives the normal scores of the ranks, of the
    folded ranks and the tail indicators from that order. ``full=False`` computes the bulk
    ESS only (R-hat and tail ESS come back NaN).
    """
    half = x.shape[1] // 2
    halves, n_el = 2 * x.shape[0], x.shape[2]
    size = halves * half
    table, quantiles = _tables(size)
    if not full:
        quantiles = quantiles[:0]
    r, bulk, tail = (np.full(n_el, np.nan) for _ in range(3))
    for start in range(0, n_el, BLOCK):
        block = slice(start, min(start + BLOCK, n_el))
        split = _split(x[:, :, block])
        width = split.shape[2]
        rows = np.ascontiguousarray(split.reshape(size, width).T)
        series = np.empty((1 + quantiles.shape[0], width, size))
        folded = np.empty((width if full else 0, size))
        rank_transforms(rows, np.argsort(rows, axis=1), table, quantiles, series, folded)
        ess = _ess(series.reshape(-1, halves, half)).reshape(-1, width)
        bulk[block] = ess[0]
        if full:  # R-hat reduces (half, draw, element) views with contiguous draws
            z_rhat, folded_rhat = (
                a.reshape(width, halves, half).transpose(1, 2, 0) for a in (series[0], folded)
            )
            r[block] = np.maximum(_basic_rhat(z_rhat), _basic_rhat(folded_rhat))
            tail[block] = np.minimum(ess[1], ess[2])
    return r, bulk, tail


@functools.lru_cache(maxsize=8)
def _tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The normal score of each possible average rank (the half-integers 1, 1.5, ..., size)
    of ``size`` pooled draws, and ``numpy.quantile``'s (linear) virtual index of each of
    :data:`TAIL_PROBS` as (floor, fraction), floor -1 meaning the last draw."""
    ranks = np.arange(2 * size - 1) / 2.0 + 1.0
    table = ndtri((ranks - 0.375) / (size + 0.25))
    quantiles = []
    for prob in TAIL_PROBS:
        virtual = (size - 1) * prob
        floor = int(np.floor(virtual))
        quantiles.append((-1, 0.0) if virtual >= size - 1 else (floor, virtual - floor))
    quantiles = np.array(quantiles, dtype=np.float64)
    table.flags.writeable = quantiles.flags.writeable = False
    return table, quantiles


def _too_short(x: np.ndarray) -> bool:
    return x.shape[1] < 4


def rhat(values) -> np.ndarray:
    """Rank-normalised split R-hat per element of ``values`` (chain, draw, ...).

    Parameters
    ----------
    values : array_like
        Draws with dims (chain, draw, ...).

    Returns
    -------
    numpy.ndarray
        One R-hat per element (NaN when the chains have fewer than 4 draws).
    """
    x = flatten_elements(values)
    return np.full(x.shape[2], np.nan) if _too_short(x) else _diagnose(x)[0]


def ess_bulk(values) -> np.ndarray:
    """Bulk ESS (rank-normalised split chains) per element.

    Parameters
    ----------
    values : array_like
        Draws with dims (chain, draw, ...).

    Returns
    -------
    numpy.ndarray
        One effective sample size per element (NaN when the chains have fewer than 4 draws).
    """
    x = flatten_elements(values)
    return np.full(x.shape[2], np.nan) if _too_short(x) else _diagnose(x, full=False)[1]


def ess_tail(values) -> np.ndarray:
    """Tail ESS: the smaller ESS of the 5 % and 95 % quantile indicators, per element.

    Parameters
    ----------
    values : array_like
        Draws with dims (chain, draw, ...).

    Returns
    -------
    numpy.ndarray
        One effective sample size per element (NaN when the chains have fewer than 4 draws).
    """
    x = flatten_elements(values)
    return np.full(x.shape[2], np.nan) if _too_short(x) else _diagnose(x)[2]


def rhat_limit(ess_bulk, *, chains: int, draws: int, elements: int = 1, r_hat_max=R_HAT_MAX):
    """R-hat limit per element such that the largest of ``elements`` R-hats of stationary
    chains exceeds its limit as rarely as one scalar exceeds ``r_hat_max``.

    Under stationarity the split R-hat of ``M = 2 chains`` half-chains of ``n = draws // 2``
    draws with bulk ESS ``E`` is approximately ``R^2 = 1 - 1/n + X / (M - 1) / (E / M)`` with
    ``X ~ chi2(M - 1)`` (the between-chain variance of means with ``E / M`` effective draws
    each). The scalar rule fails with probability ``p = P(R > r_hat_max)`` (0.36 at 100
    effective draws per chain: the 1.01 rule is strict); the limit for one of ``elements``
    elements is the quantile of the same law at which ``elements`` independent elements
    exceed their limits with probability ``p`` (Sidak), never below ``r_hat_max``.
    (:func:`convergence_report` holds an element below the ESS threshold to ``r_hat_max``:
    it fails the ESS rule anyway.)

    Parameters
    ----------
    ess_bulk : array_like
        Bulk ESS of each element.
    chains, draws : int
        Chains and draws per chain of the fit.
    elements : int, default 1
        Number of elements judged together (the quantity's non-constant checked elements).
    r_hat_max : float, default 1.01
        The limit for a single scalar.

    Returns
    -------
    numpy.ndarray
        One limit per element; all equal to ``r_hat_max`` when ``elements`` is 1.

    Examples
    --------
    >>> float(rhat_limit(400.0, chains=4, draws=1000)[0])
    1.01
    >>> round(float(rhat_limit(710.0, chains=4, draws=1000, elements=1000)[0]), 3)
    1.024
    """
    from scipy.stats import chi2

    ess = np.atleast_1d(np.asarray(ess_bulk, dtype=np.float64))
    limit = np.full(ess.shape, float(r_hat_max))
    if elements <= 1 or chains < 2 or draws < 4:
        return limit
    halves, n = 2 * chains, draws // 2
    dof = halves - 1
    ok = np.isfinite(ess) & (ess > 0)
    n_eff = np.where(ok, ess, 1.0) / halves
    # P(R > r_hat_max): X > dof * n_eff * (r_hat_max^2 - 1 + 1/n)
    x_max = dof * n_eff * (r_hat_max**2 - 1.0 + 1.0 / n)
    p_scalar = chi2.sf(x_max, dof)
    usable = ok & (p_scalar > 0) & (p_scalar < 1)
    # Sidak: each element's tail probability q with 1 - (1 - q)^elements = p_scalar.
    q = -np.expm1(np.log1p(-np.where(usable, p_scalar, 0.5)) / elements)
    x_limit = chi2.isf(q, dof)
    r_limit = np.sqrt(np.maximum(1.0 - 1.0 / n + x_limit / dof / n_eff, 0.0))
    return np.where(usable, np.maximum(r_limit, r_hat_max), limit)


def _components(values: np.ndarray, period) -> list[np.ndarray]:
    if period is None:
        return [values]
    angle = 2.0 * np.pi * values / float(period)
    return [np.cos(angle), np.sin(angle)]


def _element_label(shape, index) -> str:
    if not shape:
        return ""
    return "[" + ", ".join(str(i) for i in np.unravel_index(index, shape)) + "]"


def element_diagnostics(values, period=None) -> dict[str, np.ndarray]:
    """R-hat, bulk and tail ESS per element; circular values use the worse of cos and sin.

    Constant elements get R-hat 1 and ESS equal to the number of draws (they are exact).

    Parameters
    ----------
    values : array_like
        Draws with dims (chain, draw, ...).
    period : float, optional
        The period of a circular quantity (``2 pi`` for angles, ``pi`` for orientations);
        ``None`` for a linear one.

    Returns
    -------
    dict of str to numpy.ndarray
        ``r_hat``, ``ess_bulk``, ``ess_tail`` (float, one per element) and ``constant``
        (bool, elements that never move).
    """
    x = flatten_elements(values)
    n_el, short = x.shape[2], _too_short(x)
    r = np.ones(n_el)
    bulk = np.full(n_el, float(x.shape[0] * x.shape[1]))
    tail = bulk.copy()
    constant = np.empty(n_el, dtype=bool)
    for start in range(0, n_el, BLOCK):  # blocks: cos and sin never exist for all elements
        block = slice(start, min(start + BLOCK, n_el))
        parts = _components(x[:, :, block], period)
        constant[block] = np.all([np.ptp(p, axis=(0, 1)) < 1e-12 for p in parts], axis=0)
        moving = ~constant[block]
        if short or not moving.any():
            continue
        at = start + np.flatnonzero(moving)
        results = [_diagnose(p if moving.all() else p[:, :, moving]) for p in parts]
        r[at] = np.max([res[0] for res in results], axis=0)
        bulk[at] = np.min([res[1] for res in results], axis=0)
        tail[at] = np.min([res[2] for res in results], axis=0)
    if short:
        nan = np.full(n_el, np.nan)
        return {"r_hat": nan, "ess_bulk": nan, "ess_tail": nan, "constant": constant}
    return {"r_hat": r, "ess_bulk": bulk, "ess_tail": tail, "constant": constant}


def convergence_report(
    idata_or_quantities,
    quantities=None,
    *,
    r_hat_max=R_HAT_MAX,
    ess_per_chain=ESS_PER_CHAIN,
    max_elements: int | None = MAX_ELEMENTS,
) -> pd.DataFrame:
    """One row per quantity: worst R-hat, smallest bulk/tail ESS, and whether it converged.

    Parameters
    ----------
    idata_or_quantities : xarray.DataTree, arviz.InferenceData or xarray.Dataset
        A fit (its model's label-invariant quantities are taken from the registry, see
        :func:`pmctx.registry.invariants_of`) or a dataset with ``chain``/``draw`` dims.
    quantities : list of str, optional
        Restrict the report to these variables.
    r_hat_max, ess_per_chain : float
        Thresholds: R-hat above ``r_hat_max`` or an ESS below ``ess_per_chain`` times the
        number of chains fails. For a quantity with several elements each element's R-hat is
        compared with :func:`rhat_limit` (``r_hat_max`` for a scalar).
    max_elements : int or None, default 1000
        A quantity with more elements (e.g. the IBP's ``X_prob``, N x T) is checked on this
        many evenly spaced elements, so the report after a fit costs seconds, not minutes;
        ``checked`` says how many. ``None`` checks all.

    Returns
    -------
    pandas.DataFrame
        Indexed by quantity, columns ``kind, elements, checked, constant, r_hat, r_hat_limit,
        r_hat_largest, ess_bulk, ess_tail, worst_element, ess_min, converged``. ``r_hat`` and
        ``r_hat_limit`` are the R-hat and its limit of ``worst_element``, the element with the
        largest excess of R-hat over its limit (else the smallest ESS): the figures the verdict
        and the :class:`~pmctx.ConvergenceWarning` quote. ``r_hat_largest`` is the largest
        R-hat over the checked elements, which may exceed ``r_hat`` without failing (each
        element is held to its own limit). The ESS columns are the smallest over elements.
        For a scalar, ``r_hat == r_hat_largest`` and ``r_hat_limit == r_hat_max``.
    """
    defaults = (r_hat_max, ess_per_chain, max_elements) == (R_HAT_MAX, ESS_PER_CHAIN, MAX_ELEMENTS)
    cached = _recall(idata_or_quantities)
    if defaults and cached is not None:
        return cached if quantities is None else cached.loc[list(quantities)]
    dataset = _as_quantities(idata_or_quantities)
    names = list(dataset.data_vars) if quantities is None else list(quantities)
    rows = {}
    for name in names:
        da = dataset[name].transpose("chain", "draw", ...)
        period = da.attrs.get("period")
        values = np.asarray(da.values).reshape(*da.shape[:2], -1)  # float64: checked ones only
        checked = np.arange(values.shape[2])
        if max_elements is not None and checked.size > max_elements:
            checked = np.unique(np.linspace(0, checked.size - 1, max_elements).astype(int))
        diag = element_diagnostics(values[:, :, checked], period)
        n_chains = da.sizes["chain"]
        ess_min = ess_per_chain * n_chains
        shape = da.shape[2:]
        moving = int((~diag["constant"]).sum())
        limits = rhat_limit(
            diag["ess_bulk"],
            chains=n_chains,
            draws=da.sizes["draw"],
            elements=moving,
            r_hat_max=r_hat_max,
        )
        limits = np.where(diag["ess_bulk"] >= ess_min, limits, r_hat_max)
        # The element that fails worst: largest excess over its R-hat limit, ties broken by
        # smallest ESS.
        excess = diag["r_hat"] - limits
        badness = np.maximum(excess, 0) * 1e6 - np.minimum(diag["ess_bulk"], diag["ess_tail"])
        worst_at = int(np.nanargmax(np.where(np.isnan(badness), np.inf, badness)))
        worst = int(checked[worst_at])
        largest, b, t = diag["r_hat"].max(), diag["ess_bulk"].min(), diag["ess_tail"].min()
        r, limit = diag["r_hat"][worst_at], float(limits[worst_at])
        r_ok = bool(np.all(diag["r_hat"] <= limits))
        if np.isnan([largest, b, t]).any():  # fewer than 4 draws: nothing can be judged
            r, b, t, r_ok, largest, limit = np.inf, 0.0, 0.0, False, np.inf, float(r_hat_max)
        rows[name] = {
            "kind": "circular" if period is not None else "linear",
            "elements": int(np.prod(shape, dtype=int)),
            "checked": int(checked.size),
            "constant": int(diag["constant"].sum()),
            "r_hat": float(r),
            "r_hat_limit": limit,
            "r_hat_largest": float(largest),
            "ess_bulk": float(b),
            "ess_tail": float(t),
            "worst_element": _element_label(shape, worst),
            "ess_min": float(ess_min),
            "converged": bool(r_ok and b >= ess_min and t >= ess_min),
        }
    report = pd.DataFrame.from_dict(rows, orient="index")
    report.attrs["draws"] = int(dataset.sizes.get("draw", 0))  # per chain, for the advice
    return report


#: The report of each fit that report_after_fit checked (the model's own invariants at the
#: default thresholds), by id of the live results tree (which is unhashable), so writing its
#: files and printing it do not recompute it.
_REPORTS: dict[int, tuple[weakref.ref, pd.DataFrame]] = {}


def _remember(idata, report: pd.DataFrame) -> None:
    key = id(idata)
    _REPORTS[key] = (weakref.ref(idata, lambda _: _REPORTS.pop(key, None)), report)


def _recall(obj) -> pd.DataFrame | None:
    if isinstance(obj, xr.Dataset) or not hasattr(obj, "__weakref__"):
        return None
    ref, report = _REPORTS.get(id(obj), (None, None))
    return report if ref is not None and ref() is obj else None


def _as_quantities(obj) -> xr.Dataset:
    if isinstance(obj, xr.Dataset):
        return obj
    if isinstance(obj, xr.DataTree) and not obj.children and obj.data_vars:
        return obj.to_dataset()  # one group of a fit, e.g. fit.posterior
    from pmctx.registry import invariants_of

    return invariants_of(as_datatree(obj, name="idata_or_quantities"))


def format_problem(name: str, row, *, advice: str = "") -> str:
    """One sentence naming the quantity and the figures that fail.

    Parameters
    ----------
    name : str
        The quantity's name.
    row : pandas.Series
        Its row of :func:`convergence_report` (``r_hat``, ``r_hat_limit``, ``ess_bulk``,
        ``ess_tail``, ``ess_min``, ``worst_element``).
    advice : str, default ""
        Accepted for symmetry with :func:`check_convergence`, which appends the advice once
        after all problems.

    Returns
    -------
    str
        Such as ``"loglik: R-hat 1.09 > 1.01, bulk ESS 21 < 200"``.
    """
    problems = []
    limit = row.get("r_hat_limit", R_HAT_MAX)
    r_hat = row["r_hat"]
    if r_hat > limit:
        many = row.get("elements", 1) > 1 and limit > R_HAT_MAX
        problems.append(
            f"R-hat {r_hat:.4g} > {limit:.4g}"
            + (f" (the limit for the largest of {row['checked']} elements)" if many else "")
        )
    if row["ess_bulk"] < row["ess_min"]:
        problems.append(f"bulk ESS {row['ess_bulk']:.0f} < {row['ess_min']:.0f}")
    if row["ess_tail"] < row["ess_min"]:
        problems.append(f"tail ESS {row['ess_tail']:.0f} < {row['ess_min']:.0f}")
    where = f" (worst at {row['worst_element']})" if row["worst_element"] else ""
    return f"{name}{where}: " + ", ".join(problems)


def check_convergence(idata_or_quantities, quantities=None, *, advice: str = "", stacklevel=2):
    """Warn :class:`pmctx.ConvergenceWarning` if any quantity fails; return the report.

    The message names each failing quantity with its figure (R-hat, bulk/tail ESS against
    100 per chain) and says what to do.

    Parameters
    ----------
    idata_or_quantities : xarray.DataTree, arviz.InferenceData or xarray.Dataset
        A fit (its model's label-invariant quantities are checked) or the quantities.
    quantities : list of str, optional
        Names to check; default: all.
    advice : str, default ""
        What to do, appended to the warning (each model's spec has its own); default: run
        longer or with more chains.
    stacklevel : int, default 2
        Stack level of the warning.

    Returns
    -------
    pandas.DataFrame
        The :func:`convergence_report`.
    """
    report = convergence_report(idata_or_quantities, quantities)
    _warn_unconverged(report, advice, stacklevel + 1)
    return report


#: ESS grows in proportion to the draws at a fixed mixing; the draws a warning suggests carry
#: this margin for the noise of the ESS estimate, rounded up to a multiple of DRAWS_STEP.
DRAWS_MARGIN = 1.25
DRAWS_STEP = 500
#: Beyond this many times the draws, more of the same chains is not the remedy.
MAX_DRAWS_FACTOR = 10.0


def draws_advice(report: pd.DataFrame) -> str:
    """The draws per chain that would lift the smallest ESS of ``report`` to its minimum.

    At a fixed mixing rate ESS grows in proportion to the number of draws, so a quantity
    with ESS ``e`` short of ``ess_min`` after ``d`` draws per chain needs about
    ``d * ess_min / e``; the suggestion adds :data:`DRAWS_MARGIN` and rounds up to a multiple
    of :data:`DRAWS_STEP`. Beyond :data:`MAX_DRAWS_FACTOR` times the draws the sentence says
    so instead: chains that far apart usually sit in different modes.

    Parameters
    ----------
    report : pandas.DataFrame
        A :func:`convergence_report` (its ``attrs["draws"]``, the draws per chain).

    Returns
    -------
    str
        A sentence ending in a full stop, or ``""`` when no ESS falls short.

    Examples
    --------
    >>> report = pd.DataFrame({"ess_bulk": [113.0], "ess_tail": [358.0], "ess_min": [400.0]},
    ...                       index=["loglik"])
    >>> report.attrs["draws"] = 1000
    >>> draws_advice(report).split(": ")[-1]
    'draws=4500 (tune as many).'
    """
    draws = int(report.attrs.get("draws", 0))
    ess = report[["ess_bulk", "ess_tail"]].min(axis=1)
    short = ess < report["ess_min"]
    if not draws or not short.any():
        return ""
    ratios = report["ess_min"][short] / ess[short].clip(lower=1.0)
    name = ratios.idxmax()
    ratio = float(ratios[name])
    figures = f"({name}, {ess[name]:.0f} of {report.loc[name, 'ess_min']:.0f})"
    if ratio > MAX_DRAWS_FACTOR:
        return (
            f"The smallest ESS {figures} would need more than {MAX_DRAWS_FACTOR:.0f} times "
            f"the {draws} draws per chain: the chains are likely in different modes (see the "
            "trace plot) rather than short."
        )
    needed = int(np.ceil(draws * ratio * DRAWS_MARGIN / DRAWS_STEP) * DRAWS_STEP)
    return (
        f"At this mixing the smallest ESS {figures} needs about {ratio:.1f} times the "
        f"{draws} draws per chain: draws={needed} (tune as many)."
    )


def _warn_unconverged(report: pd.DataFrame, advice: str, stacklevel: int) -> None:
    failed = report[~report["converged"]]
    if len(failed):
        lines = "; ".join(format_problem(name, row) for name, row in failed.iterrows())
        todo = advice or "Run longer or with more chains, and check the trace plot"
        more = draws_advice(report)
        warnings.warn(
            f"The sampler has not converged on {lines}. {more + ' ' if more else ''}{todo}. "
            "Do not use these results "
            "until every quantity has R-hat <= 1.01 (for a quantity with many elements, the "
            "limit for their largest) and ESS >= 100 per chain.",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )


def _budget_advice(idata) -> str:
    """What a run that sampled until converged did before giving up, for the warning."""
    attrs = idata["sample_stats"].attrs if "sample_stats" in idata.children else {}
    reason = attrs.get("pmctx_stop_reason")
    if reason not in ("max_draws", "max_time"):
        return ""
    return (
        f"The same chains were continued to {attrs.get('pmctx_draws_kept')} draws per chain "
        f"({attrs.get('pmctx_extensions')} extensions) and stopped at {reason}: pass a larger "
        f"{reason}= to continue further. "
    )


class ModelCheck(NamedTuple):
    """What :func:`report_after_fit` needs of a model, for code below the model layer (a
    model family's own ``sample``); a :class:`pmctx.registry.ModelSpec` has the same fields.

    Parameters
    ----------
    name : str
        The model's registered name (stored as ``attrs["pmctx_model"]``).
    invariants : callable
        ``invariants(idata) -> xarray.Dataset`` of label-invariant quantities.
    advice : str, default ""
        What to do when the fit has not converged.

    Examples
    --------
    >>> check = ModelCheck("toy", invariants=lambda idata: idata.posterior, advice="")
    >>> check.name
    'toy'
    """

    name: str
    invariants: Callable
    advice: str = ""


def convergence_judge(model, *, check: bool = True):
    """The judge a run sampling until converged asks (:mod:`pmctx.continuation`): the
    :func:`convergence_report` of ``model``'s label-invariant quantities of a tree of draws.

    Parameters
    ----------
    model : ModelSpec or ModelCheck
        The model's spec (its ``invariants``).
    check : bool, default True
        ``False`` (the user turned the check off): no judge, so the run has a fixed length.

    Returns
    -------
    callable or None
        ``judge(tree) -> pandas.DataFrame``.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> toy = ModelCheck("toy", invariants=lambda idata: idata.posterior.to_dataset())
    >>> judge = convergence_judge(toy)
    >>> tree = az.from_dict({"posterior": {"mu": np.random.default_rng(0).normal(size=(4, 500))}})
    >>> bool(judge(tree)["converged"].all())
    True
    """
    if not check:
        return None
    return lambda tree: convergence_report(model.invariants(tree))


def report_after_fit(idata, model, *, check: bool = True, stacklevel: int = 3):
    """Tag ``idata`` with its model name and warn if its invariants have not converged.

    Every model's ``sample``/``fit`` ends with this call, so no fit is silently unconverged.

    Parameters
    ----------
    idata : xarray.DataTree
        The fit; every group gets ``attrs["pmctx_model"] = model.name`` (in place, so pass
        the tree the fit returns; an ArviZ 0.x InferenceData is converted, and tagged, first).
    model : ModelSpec or ModelCheck
        The model's spec (:class:`pmctx.registry.ModelSpec`) or a :class:`ModelCheck`: the
        model passes its own invariants and advice.
    check : bool, default True
        Run :func:`check_convergence`.
    stacklevel : int, default 3
        Stack level of the warning, so that it points at the user's call.

    Returns
    -------
    pandas.DataFrame or None
        The convergence report, ``None`` when ``check`` is False.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> toy = ModelCheck("toy", invariants=lambda idata: idata.posterior)
    >>> idata = az.from_dict({"posterior": {"mu": np.random.default_rng(0).normal(size=(4, 500))}})
    >>> bool(report_after_fit(idata, toy)["converged"].all()), idata.posterior.attrs["pmctx_model"]
    (True, 'toy')
    """
    idata = as_datatree(idata)
    for group in idata.children:
        idata[group].attrs["pmctx_model"] = model.name
    if not check:
        return None
    report = convergence_report(model.invariants(idata))
    _remember(idata, report)  # write_standard_outputs and the CLI read it back
    _warn_unconverged(report, _budget_advice(idata) + model.advice, stacklevel + 1)
    check_divergences(idata, stacklevel=stacklevel + 1)
    return report


def count_divergences(idata) -> tuple[int, int]:
    """Divergent transitions among a fit's draws (after tuning), and the number of draws.

    pmctx's fits pass ``compute_convergence_checks=False`` to :func:`pymc.sample` (their own
    report replaces PyMC's R-hat checks) and nutpie reports nothing, so this is where a
    divergence is counted; :func:`report_after_fit` warns :class:`pmctx.DivergenceWarning`
    when there is any, as PyMC logs "There were N divergences after tuning".

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        A fit; without a ``sample_stats["diverging"]`` (samplers other than NUTS) nothing is
        counted.

    Returns
    -------
    tuple of int
        ``(divergent draws, draws)``; ``(0, 0)`` without the statistic.

    Raises
    ------
    TypeError
        ``idata`` is not a fit (a results tree or an ArviZ 0.x ``InferenceData``).

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> diverging = np.zeros((2, 100), dtype=bool)
    >>> diverging[1, 7] = True
    >>> count_divergences(az.from_dict({"sample_stats": {"diverging": diverging}}))
    (1, 200)
    """
    is_group = isinstance(idata, xr.DataTree) and not idata.children and bool(idata.data_vars)
    if is_group or not (isinstance(idata, xr.DataTree) or callable(getattr(idata, "groups", None))):
        what = f"the group {idata.name!r} of one" if is_group else type(idata).__name__
        raise TypeError(
            f"count_divergences expects a fit (an xarray.DataTree with ArviZ's groups, or an "
            f"ArviZ 0.x InferenceData), got {what}; pass the fit that pm.sample or a pmctx "
            "model's sample returned."
        )
    idata = as_datatree(idata)
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    if stats is None or "diverging" not in stats:
        return 0, 0
    diverging = stats["diverging"].values
    return int(np.count_nonzero(diverging)), int(diverging.size)


def check_divergences(idata, *, stacklevel: int = 2) -> int:
    """Warn :class:`pmctx.DivergenceWarning` when a fit has divergent transitions.

    Every fit that ends with :func:`report_after_fit` runs this; fits without a convergence
    report (:func:`pmctx.conditioning.posterior.sample_subject`) call it directly.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        The fit (see :func:`count_divergences`).
    stacklevel : int, default 2
        Stack level of the warning, so that it points at the user's call.

    Returns
    -------
    int
        The number of divergent draws.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> check_divergences(az.from_dict({"sample_stats": {"diverging": np.zeros((2, 50), bool)}}))
    0
    """
    n_divergent, n_draws = count_divergences(idata)
    if n_divergent:
        warnings.warn(
            f"{n_divergent} of {n_draws} draws after tuning ended in a divergent transition "
            f"({100 * n_divergent / n_draws:.2g} %): NUTS could not follow the posterior's "
            "curvature there, so its draws may be biased. Sample again with a higher "
            "target_accept (e.g. target_accept=0.95, or 0.99; on the command line "
            "--set target_accept=0.95), or reparameterize; do not use these results while "
            "divergences remain.",
            DivergenceWarning,
            stacklevel=stacklevel,
        )
    return n_divergent

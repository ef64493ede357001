"""Simulation-based calibration (Talts et al. 2018) through the batch engine.

Each replication is one unit of :func:`pmctx.batch.run_batch`: draw parameters from the prior
and data from the model (``simulate(random_seed) -> (data, truth)``), fit the data
(``fit(data, random_seed=...) -> DataTree``), thin the posterior draws of every
label-invariant quantity in ``truth`` to ``n_ranks`` draws and record the rank of the true
value among them (ties, e.g. of counts, broken uniformly at random). If the fit samples the
exact posterior, every rank is uniform on ``0..n_ranks``; :func:`uniformity_tests` tests it
with a chi-square test on ``bins`` equal bins and a KS test on the jittered normalised ranks.

Examples
--------
>>> import tempfile
>>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
>>> result = run_sbc(normal_mean_simulate, normal_mean_fit, 20, tempfile.mkdtemp(),
...                  local=True, progressbar=False)
>>> bool(result.tests.loc["mu", "chi2_p"] > 0.001)
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pmctx.validation import as_rng, check_int

__all__ = [
    "SBCResult",
    "SBCTask",
    "plot_ranks",
    "rank_columns",
    "rank_of",
    "run_sbc",
    "uniformity_tests",
]


def rank_of(truth: float, draws: np.ndarray, random_seed=None) -> int:
    """Number of ``draws`` below ``truth``, ties split uniformly at random.

    Parameters
    ----------
    truth : float
        The true value.
    draws : array_like
        Posterior draws.
    random_seed : int or numpy.random.Generator, optional
        Breaks ties.

    Returns
    -------
    int
        The rank, in ``0 .. len(draws)``.

    Examples
    --------
    >>> rank_of(0.5, [0.1, 0.2, 0.9], np.random.default_rng(0))
    2
    """
    draws = np.asarray(draws, dtype=float).ravel()
    below = int(np.sum(draws < truth))
    equal = int(np.sum(draws == truth))
    return below + int(as_rng(random_seed).integers(0, equal + 1))


def _posterior_draws(idata, name: str) -> np.ndarray:
    for group in ("posterior", "sample_stats"):
        if group in idata.children and name in idata[group]:
            values = idata[group][name].values
            return values.reshape(values.shape[0] * values.shape[1], -1)
    raise KeyError(f"The fit has no posterior quantity {name!r}.")


def _thin(draws: np.ndarray, n: int) -> np.ndarray:
    # Evenly spaced draws across all chains: lowers autocorrelation, which would bias ranks.
    index = np.linspace(0, len(draws) - 1, n).round().astype(int)
    return draws[index]


@dataclass(frozen=True)
class SBCTask:
    """One SBC replication as a batch ``fit_unit``: simulate, fit, rank.

    ``invariants(idata) -> dict`` maps the quantities of ``truth`` to posterior draws
    (``(n_draws,)`` or ``(n_draws, k)`` arrays); by default they are read from the posterior
    (or ``sample_stats``) variables of the same names, with an index ``name[i]`` for one
    entry of a vector-valued variable.

    Parameters
    ----------
    simulate : callable
        ``simulate(random_seed, **simulate_options) -> (data, truth)``.
    fit : callable
        ``fit(data, *, random_seed, **options) -> DataTree``.
    n_ranks : int, default 99
        Posterior draws kept (thinned) per rank.
    simulate_options : mapping, optional
        Keyword arguments of ``simulate``.
    invariants : callable, optional
        ``invariants(idata) -> dict`` of draws by truth name.

    Examples
    --------
    >>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
    >>> task = SBCTask(normal_mean_simulate, normal_mean_fit, n_ranks=19)
    >>> idata = task({}, random_seed=0)
    >>> 0 <= rank_columns(idata)["rank:mu"] <= 19
    True
    """

    simulate: Callable
    fit: Callable
    n_ranks: int = 99
    simulate_options: Mapping = field(default_factory=dict)
    invariants: Callable | None = None

    def _draws(self, idata, names) -> dict:
        if self.invariants is not None:
            return {k: np.asarray(v, float) for k, v in self.invariants(idata).items()}
        out = {}
        for name in names:
            base, _, index = name.partition("[")
            values = _posterior_draws(idata, base)
            out[name] = values[:, int(index.rstrip("]"))] if index else values[:, 0]
        return out

    def __call__(self, data: dict, *, random_seed=None, **options):
        rng = np.random.default_rng(random_seed)
        sim_rng, fit_seed, tie_rng = rng.spawn(3)
        sim_data, truth = self.simulate(sim_rng, **dict(self.simulate_options))
        seed = int(fit_seed.integers(2**31))
        idata = self.fit(sim_data, random_seed=seed, **options)
        draws = self._draws(idata, list(truth))
        ranks, kept = {}, {}
        for name, value in truth.items():
            thinned = _thin(np.asarray(draws[name], float), self.n_ranks)
            kept[name] = thinned
            ranks[name] = rank_of(float(value), thinned, tie_rng)
        posterior = xr.Dataset(
            {k: (("chain", "draw"), v[None]) for k, v in kept.items()},
            attrs={f"rank:{k}": r for k, r in ranks.items()}
            | {f"truth:{k}": float(v) for k, v in truth.items()}
            | {"n_ranks": self.n_ranks},
        )
        return xr.DataTree.from_dict({"posterior": posterior})


def rank_columns(idata) -> dict:
    """The ranks an :class:`SBCTask` stored on its results tree, as summary-table columns.

    Parameters
    ----------
    idata : xarray.DataTree
        Returned by an :class:`SBCTask` call.

    Returns
    -------
    dict
        ``{"rank:<name>": rank}``.

    Examples
    --------
    >>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
    >>> idata = SBCTask(normal_mean_simulate, normal_mean_fit, n_ranks=19)({}, random_seed=0)
    >>> list(rank_columns(idata))
    ['rank:mu']
    """
    return {k: int(v) for k, v in idata.posterior.attrs.items() if k.startswith("rank:")}


def uniformity_tests(ranks: pd.DataFrame, n_ranks: int, *, bins: int = 10) -> pd.DataFrame:
    """Chi-square (``bins`` equal bins of ``0..n_ranks``) and KS p-values per quantity.

    The KS test uses ``(rank + U) / (n_ranks + 1)`` with ``U ~ Uniform(0, 1)`` (seeded), which
    is exactly Uniform(0, 1) under calibration.

    Parameters
    ----------
    ranks : pandas.DataFrame
        One row per replication, one column of ranks per quantity.
    n_ranks : int
        Draws per rank (ranks lie in ``0 .. n_ranks``).
    bins : int, default 10
        Histogram bins of the chi-square test; must divide ``n_ranks + 1``.

    Returns
    -------
    pandas.DataFrame
        Per quantity: ``reps``, ``chi2``, ``chi2_p``, ``ks``, ``ks_p``.

    Examples
    --------
    >>> ranks = pd.DataFrame({"mu": np.arange(100) % 100})
    >>> round(float(uniformity_tests(ranks, 99).loc["mu", "chi2_p"]), 3)
    1.0
    """
    from scipy import stats

    n_values = n_ranks + 1
    bins = check_int(bins, "bins", minimum=2)
    if n_values % bins:
        raise ValueError(f"bins={bins} must divide the {n_values} possible ranks evenly.")
    rng = np.random.default_rng(0)
    rows = {}
    for name in ranks.columns:
        r = ranks[name].dropna().to_numpy(int)
        counts = np.bincount(r * bins // n_values, minlength=bins)
        chi2 = stats.chisquare(counts)
        u = (r + rng.random(r.size)) / n_values
        ks = stats.kstest(u, "uniform")
        rows[name] = {
            "reps": r.size,
            "chi2": chi2.statistic,
            "chi2_p": chi2.pvalue,
            "ks": ks.statistic,
            "ks_p": ks.pvalue,
        }
    return pd.DataFrame(rows).T


@dataclass
class SBCResult:
    """Ranks (one row per replication, one column per quantity) and their uniformity tests.

    Parameters
    ----------
    ranks : pandas.DataFrame
        One row per successful replication, one column per quantity.
    tests : pandas.DataFrame
        From :func:`uniformity_tests`.
    n_ranks : int
        Draws per rank.
    summary : pandas.DataFrame
        The batch summary (including failed replications).

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
    >>> result = run_sbc(normal_mean_simulate, normal_mean_fit, 10, tempfile.mkdtemp(),
    ...                  n_ranks=19, local=True)

    >>> result.ranks.shape, result.n_ranks
    ((10, 1), 19)
    """

    ranks: pd.DataFrame
    tests: pd.DataFrame
    n_ranks: int
    summary: pd.DataFrame

    def write(self, out_dir, *, plot: bool = True) -> list[Path]:
        """Write ``sbc_ranks.csv``, ``sbc_tests.csv`` and ``sbc_ranks.png``.

        Parameters
        ----------
        out_dir : path-like
            Output folder (created).
        plot : bool, default True
            Also write the rank histograms.

        Returns
        -------
        list of pathlib.Path
            The files written.

        Examples
        --------
        >>> import tempfile
        >>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
        >>> result = run_sbc(normal_mean_simulate, normal_mean_fit, 10, tempfile.mkdtemp(),
        ...                  n_ranks=19, local=True)

        >>> [p.name for p in result.write(tempfile.mkdtemp(), plot=False)]
        ['sbc_ranks.csv', 'sbc_tests.csv']
        """
        from pmctx.io import save_figure

        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = [out_dir / "sbc_ranks.csv", out_dir / "sbc_tests.csv"]
        self.ranks.to_csv(paths[0])
        self.tests.to_csv(paths[1])
        if plot:
            paths.append(save_figure(plot_ranks(self), out_dir / "sbc_ranks.png"))
        return paths


def plot_ranks(result: SBCResult, *, bins: int = 10):
    """Rank histograms with the 99% band of a uniform histogram; returns the figure.

    Parameters
    ----------
    result : SBCResult
        From :func:`run_sbc`.
    bins : int, default 10
        Histogram bins.

    Returns
    -------
    matplotlib.figure.Figure
        One rank histogram per quantity.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
    >>> result = run_sbc(normal_mean_simulate, normal_mean_fit, 10, tempfile.mkdtemp(),
    ...                  n_ranks=19, local=True)

    >>> len(plot_ranks(result).axes)
    1
    """
    import matplotlib.pyplot as plt
    from scipy import stats

    names = list(result.ranks.columns)
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 2.8), squeeze=False)
    n_values = result.n_ranks + 1
    for ax, name in zip(axes[0], names):
        r = result.ranks[name].dropna().to_numpy(int)
        counts = np.bincount(r * bins // n_values, minlength=bins)
        low, high = stats.binom.ppf([0.005, 0.995], r.size, 1.0 / bins)
        ax.axhspan(low, high, color="0.85", label="99% if uniform")
        ax.bar(np.arange(bins), counts, width=0.9)
        p = result.tests.loc[name, "chi2_p"]
        ax.set_title(f"{name}\nchi2 p = {p:.3g}", fontsize=9)
        ax.set_xlabel(f"rank bin (of {bins})")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def run_sbc(
    simulate: Callable,
    fit: Callable,
    reps: int,
    out_dir,
    *,
    n_ranks: int = 99,
    bins: int = 10,
    simulate_options: Mapping | None = None,
    fit_options: Mapping | None = None,
    invariants: Callable | None = None,
    random_seed: int = 0,
    **batch_kwargs,
) -> SBCResult:
    """Run ``reps`` SBC replications as a batch (resumable; see :func:`run_batch`).

    ``batch_kwargs`` go to :func:`pmctx.batch.run_batch` (``client``, ``workers``,
    ``scheduler``, ``local``, ``progressbar``). Replications that raised are left out of the
    ranks and counted in ``summary``.

    Parameters
    ----------
    simulate : callable
        ``simulate(random_seed, **simulate_options) -> (data, truth)``.
    fit : callable
        ``fit(data, *, random_seed, **fit_options) -> DataTree``.
    reps : int
        Replications.
    out_dir : path-like
        Batch output folder (rerunning resumes).
    n_ranks : int, default 99
        Posterior draws per rank.
    bins : int, default 10
        Histogram bins of the chi-square test.
    simulate_options, fit_options : mapping, optional
        Keyword arguments of ``simulate`` and ``fit``.
    invariants : callable, optional
        See :class:`SBCTask`.
    random_seed : int, default 0
        Batch seed.
    **batch_kwargs
        Passed to :func:`pmctx.batch.run_batch`.

    Returns
    -------
    SBCResult
        Ranks, uniformity tests and the batch summary.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate
    >>> result = run_sbc(normal_mean_simulate, normal_mean_fit, 10, tempfile.mkdtemp(),
    ...                  n_ranks=19, local=True)

    >>> list(result.tests.columns)
    ['reps', 'chi2', 'chi2_p', 'ks', 'ks_p']
    """
    from pmctx.batch.engine import run_batch

    reps = check_int(reps, "reps", minimum=1)
    task = SBCTask(simulate, fit, check_int(n_ranks, "n_ranks", minimum=1),
                   dict(simulate_options or {}), invariants)  # fmt: skip
    units = {f"rep{i:05d}": {} for i in range(reps)}
    summary = run_batch(task, units, out_dir, options=fit_options, random_seed=random_seed,
                        summarize=rank_columns, **batch_kwargs)  # fmt: skip
    ok = summary[summary["status"] == "ok"].set_index("unit").sort_index()
    columns = [c for c in ok.columns if c.startswith("rank:")]
    ranks = ok[columns].rename(columns=lambda c: c.split(":", 1)[1]).astype(int)
    return SBCResult(ranks, uniformity_tests(ranks, n_ranks, bins=bins), n_ranks, summary)

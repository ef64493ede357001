"""Sampling until converged: the same chains run on, in blocks, while the fit's own
convergence report fails and the budget allows.

``pm.sample`` is asked for the whole budget (``max_draws`` per chain) with a callback that
watches the chains: when every chain has reached the next checkpoint (the requested
``draws``, then every ``block`` draws more), it builds the fit's first ``n`` draws per chain,
asks the model's ``judge`` for its convergence report, and stops the run when the report
passes, when ``max_draws`` is reached or when ``max_time`` has passed. The chains therefore
never restart: same step objects, tuned settings, random streams and states, no new warm-up.
A run stopped at ``n`` draws keeps exactly the first ``n`` draws of every chain (faster
chains' extra draws are dropped), so it equals, bit for bit, ``pm.sample`` asked for ``n``
draws with the same seed: a step's draws do not depend on how many are planned.

The checks need every chain to advance together, so with more than one chain the chains run
in parallel processes, one per chain, whatever ``cores`` says (with fewer CPUs than chains,
the operating system shares the CPUs between them).

Stopping rule and its effect on the diagnostic: the report is recomputed on all kept draws
at each checkpoint, and the run stops at the first that passes. Looking several times and
stopping at a pass makes a pass slightly more likely than one look at a fixed length
(optional stopping), so pmctx checks at most ``1 + (max_draws - draws) / block`` times
(five at the defaults) and records every look (``sample_stats.attrs["pmctx_checks"]``); a fit that
needs the last look deserves a second run.

Examples
--------
>>> budget = Budget.from_options(1000, until_converged=True, max_draws=None, max_time=None)
>>> budget.checkpoints
(1000, 1500, 2000, 2500, 3000)
>>> Budget.from_options(1000, until_converged=False, max_draws=None, max_time=None) is None
True
"""

from __future__ import annotations

import logging
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pmctx.validation import check_int

__all__ = [
    "Budget",
    "UntilConverged",
    "first_draws_tree",
    "keep_first",
    "nutpie_until_converged",
    "planned_draws",
    "record_outcome",
]

_log = logging.getLogger("pmctx.continuation")  # `pmctx fit` prints its records

#: Default budget: up to this many times the requested draws.
MAX_DRAWS_FACTOR = 3


@dataclass(frozen=True)
class Budget:
    """How long a run may continue: draws per chain and wall time.

    Parameters
    ----------
    draws : int
        Requested draws per chain (the first check).
    max_draws : int
        Most draws per chain (default ``3 * draws``).
    block : int
        Draws per chain between checks after the first (default ``draws // 2``).
    max_time : float or None
        Seconds after which no further extension starts.
    """

    draws: int
    max_draws: int
    block: int
    max_time: float | None = None

    @classmethod
    def from_options(cls, draws, *, until_converged, max_draws, max_time, block=None):
        """The budget the public keywords ask for, validated; ``None`` for a fixed length.

        Parameters
        ----------
        draws : int
            Requested draws per chain.
        until_converged : bool
            ``False``: a fixed length (no budget).
        max_draws : int or None
            At least ``draws``; default ``3 * draws``.
        max_time : float or None
            Positive seconds; default no limit.
        block : int, optional
            Draws between checks; default ``max(draws // 2, 1)``.

        Returns
        -------
        Budget or None

        Raises
        ------
        TypeError, ValueError
            When an option has the wrong type or range.
        """
        if not isinstance(until_converged, bool | np.bool_):
            raise TypeError(
                f"until_converged must be True or False, got {until_converged!r}; "
                "False samples exactly `draws` draws per chain."
            )
        if not until_converged:
            return None
        draws = check_int(draws, "draws", minimum=1)
        if max_draws is None:
            max_draws = MAX_DRAWS_FACTOR * draws
        max_draws = check_int(max_draws, "max_draws", minimum=1)
        if max_draws < draws:
            raise ValueError(
                f"max_draws must be at least draws ({draws}), got {max_draws}; it is the most "
                "draws per chain a run may reach while it is not converged."
            )
        if max_time is not None:
            if isinstance(max_time, bool) or not isinstance(max_time, int | float | np.number):
                raise TypeError(f"max_time must be a number of seconds or None, got {max_time!r}.")
            if not math.isfinite(max_time) or max_time <= 0:
                raise ValueError(f"max_time must be a positive number of seconds, got {max_time}.")
            max_time = float(max_time)
        block = max(draws // 2, 1) if block is None else check_int(block, "block", minimum=1)
        return cls(draws=draws, max_draws=max_draws, block=block, max_time=max_time)

    @property
    def checkpoints(self) -> tuple[int, ...]:
        """Draws per chain at which the report is computed."""
        points = list(range(self.draws, self.max_draws, self.block))
        return tuple([*points, self.max_draws] if points[-1:] != [self.max_draws] else points)


def planned_draws(draws: int, *, until_converged, max_draws, judged: bool = True) -> int:
    """Draws per chain a model must make room for (its traces, its memory plan).

    Parameters
    ----------
    draws : int
        Requested draws per chain.
    until_converged, max_draws
        As in :meth:`Budget.from_options`.
    judged : bool, default True
        Whether the fit has a convergence check to continue on (``check_convergence``).

    Returns
    -------
    int
        ``max_draws`` (default ``3 * draws``) when the run may continue, else ``draws``.

    Examples
    --------
    >>> planned_draws(100, until_converged=True, max_draws=None)
    300
    >>> planned_draws(100, until_converged=True, max_draws=None, judged=False)
    100
    """
    budget = Budget.from_options(
        draws, until_converged=until_converged, max_draws=max_draws, max_time=None
    )
    return budget.max_draws if budget is not None and judged else int(draws)


@dataclass
class UntilConverged:
    """Stops the chains once ``judge`` passes (see module doc): a ``pm.sample`` callback, and
    the checks of a nutpie run (:func:`nutpie_until_converged`).

    Parameters
    ----------
    budget : Budget
    tune : int
        Tuning iterations per chain (not counted as draws).
    chains : int
    first_draws : callable or None
        ``first_draws(traces, n) -> xarray.DataTree``: the first ``n`` kept draws of every
        chain from the chains' traces (by chain number); ``pm.sample`` runs only.
    judge : callable
        ``judge(tree) -> pandas.DataFrame``: the model's convergence report (a ``converged``
        column, and ``r_hat_largest``, ``ess_bulk`` and ``ess_tail`` when it has them, as
        :func:`pmctx.convergence.convergence_report` does).
    show : bool, default False
        Print one line per check to standard error (with the progress bar).
    """

    budget: Budget
    tune: int
    chains: int
    first_draws: Callable | None
    judge: Callable
    show: bool = False
    #: When the run started (``max_time`` counts from here).
    started: float = field(init=False, default_factory=time.monotonic)
    #: Draws per chain kept, once the run has stopped at a checkpoint.
    kept: int | None = field(init=False, default=None)
    #: Why the run stopped: "converged", "max_draws", "max_time" or "interrupted".
    reason: str = field(init=False, default="interrupted")
    #: One dict per look: draws, converged, r_hat, ess_min, quantity, seconds.
    checks: list = field(init=False, default_factory=list)
    _traces: dict = field(init=False, default_factory=dict)
    _counts: dict = field(init=False, default_factory=dict)
    _next: int = field(init=False, default=0)

    def __call__(self, trace, draw) -> None:
        self._traces[draw.chain] = trace
        self._counts[draw.chain] = draw.draw_idx + 1 - self.tune
        if len(self._counts) < self.chains or self._next >= len(self.budget.checkpoints):
            return
        n = self.budget.checkpoints[self._next]
        if min(self._counts.values()) < n:
            return
        self._next += 1
        if self.look(self.first_draws(self._traces, n), n):
            for t in self._traces.values():  # drop what faster chains drew past n
                keep_first(t, self.tune + n)
            raise KeyboardInterrupt  # pm.sample's documented way for a callback to stop

    def look(self, tree, n: int) -> bool:
        """Judge the first ``n`` draws of every chain (``tree``); whether to stop there.

        Parameters
        ----------
        tree : xarray.DataTree
            The draws.
        n : int
            Draws per chain in ``tree``, a checkpoint of the budget.

        Returns
        -------
        bool
            True when the report passes, the budget's last checkpoint is reached or
            ``max_time`` has passed (``kept`` and ``reason`` then say so).
        """
        report = self.judge(tree)
        converged = bool(report["converged"].all())
        worst = _worst(report)
        seconds = round(time.monotonic() - self.started, 1)
        self.checks.append({"draws": n, "converged": converged, **worst, "seconds": seconds})
        points = self.budget.checkpoints
        last = n >= points[-1]
        late = (
            self.budget.max_time is not None
            and time.monotonic() - self.started >= self.budget.max_time
        )
        reason = "converged" if converged else "max_draws" if last else "max_time" if late else ""
        outcome = {
            "converged": "converged, stopping",
            "max_draws": "not converged, max_draws reached",
            "max_time": "not converged, max_time reached",
        }.get(reason) or f"not converged, continuing to {next(p for p in points if p > n)}"
        line = (
            f"{n} draws per chain: worst R-hat {worst['r_hat']:.3f}, smallest ESS "
            f"{worst['ess_min']:.0f} ({worst['quantity']}): {outcome}"
        )
        _log.info(line)
        if self.show and not _log.hasHandlers():
            print(f"pmctx: {line}", file=sys.stderr, flush=True)
        if reason:
            self.kept, self.reason = n, reason
        return bool(reason)

    @property
    def extensions(self) -> int:
        """Checks after the first that ran (each follows a block of extra draws)."""
        return max(len(self.checks) - 1, 0)


def keep_first(trace, n_iterations: int) -> None:
    """Make ``trace`` end after its first ``n_iterations`` (tuning included) when closed.

    A pmctx trace (:class:`pmctx.memory.ChainTrace`) truncates what it keeps itself; PyMC's
    ``NDArray`` trims its arrays to ``draw_idx`` on ``close``.

    Parameters
    ----------
    trace : pymc.backends.ndarray.NDArray
        One chain's trace, still open.
    n_iterations : int
        Iterations to keep.
    """
    if hasattr(trace, "keep_first"):
        trace.keep_first(n_iterations)
    else:
        trace.draw_idx = min(trace.draw_idx, n_iterations)


def first_draws_tree(model, traces: dict, tune: int, n: int):
    """The first ``n`` kept draws of every chain, read from the chains' traces.

    Parameters
    ----------
    model : pm.Model
        The model sampled (names, dims and coords).
    traces : dict of int to trace
        PyMC ``NDArray`` traces (or pmctx's) by chain number, still recording.
    tune, n : int
        Tuning iterations, and kept draws wanted.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (the model's named variables, and a pmctx trace's big per-draw
        variables; with a thinning trace, every ``thin``-th draw of all of them) and
        ``sample_stats``, with ``chain`` and ``draw`` dims.
    """
    chains = sorted(traces)
    named = model.named_vars
    posterior, stats = {}, {}
    first = traces[chains[0]]
    for name in first.samples:
        if name in named:  # not the transformed copies (``sigma_log__``)
            posterior[name] = np.stack([traces[c].samples[name][tune : tune + n] for c in chains])
    for i, sampler in enumerate(first.sampler_vars or []):
        for name in sampler:
            if name not in stats and name not in ("warning", "tune"):
                stats[name] = np.stack(
                    [traces[c].get_sampler_stats(name, i, burn=tune)[:n] for c in chains]
                )
    if hasattr(first, "kept_first"):  # a pmctx StoreTrace: its big per-draw variables
        parts = [traces[c].kept_first(n)[1] for c in chains]
        thin = getattr(first, "thin", 1)
        if thin > 1:  # the posterior at the kept draws, as the fit's finish makes it
            posterior = {k: v[:, ::thin] for k, v in posterior.items()}
        for name in parts[0]:
            posterior[name] = np.stack([p[name] for p in parts])
    dims = {k: list(v) for k, v in model.named_vars_to_dims.items() if v}
    coords = {k: np.asarray(v) for k, v in model.coords.items() if v is not None}
    thin = getattr(first, "thin", 1) if hasattr(first, "kept_first") else 1
    return _tree(posterior, stats, dims, coords, chains, thin)


def _tree(posterior, stats, dims, coords, chains, thin):
    import xarray as xr

    def dataset(variables, step=1):
        data = {}
        for name, values in variables.items():
            var_dims = dims.get(name, [])
            if len(var_dims) != values.ndim - 2:
                var_dims = [f"{name}_dim_{i}" for i in range(values.ndim - 2)]
            data[name] = (("chain", "draw", *var_dims), values)
        used = {dim for var_dims, _ in data.values() for dim in var_dims}
        known = {k: v for k, v in coords.items() if k in used}
        length = next(iter(variables.values())).shape[1] if variables else 0
        draw = np.arange(length) * step
        return xr.Dataset(data, coords={"chain": np.asarray(chains), "draw": draw, **known})

    groups = {"posterior": dataset(posterior, thin), "sample_stats": dataset(stats)}
    return xr.DataTree.from_dict(groups)


def _worst(report) -> dict:
    """The worst R-hat and smallest ESS of a report, and the quantity that failed first."""
    r_col = "r_hat_largest" if "r_hat_largest" in report else "r_hat"
    r_hat = float(np.nanmax(report[r_col])) if r_col in report else float("nan")
    ess_cols = [c for c in ("ess_bulk", "ess_tail") if c in report]
    ess = float(np.nanmin(report[ess_cols].to_numpy())) if ess_cols else float("nan")
    failing = report.index[~report["converged"].astype(bool)]
    return {
        "r_hat": round(r_hat, 4),
        "ess_min": round(ess, 1),
        "quantity": str(failing[0]) if len(failing) else "all pass",
    }


def nutpie_until_converged(sampler, stopper: UntilConverged, *, poll: float = 0.2):
    """Run a non-blocking nutpie sampler (``nutpie.sample(..., blocking=False)``, asked for
    the whole budget) until ``stopper`` stops it; returns its trace cut to the kept draws.

    nutpie's chains run in threads; at each checkpoint the draws so far are read
    (``inspect``), judged, and the sampler is aborted when ``stopper`` says so. Its draws do
    not depend on how many are asked for, so the result equals a run of the kept length.

    Parameters
    ----------
    sampler : nutpie sampler
        From ``nutpie.sample(compiled, draws=budget.max_draws, ..., blocking=False)``.
    stopper : UntilConverged
        The budget and the judge.
    poll : float, default 0.2
        Seconds between looks at the chains' progress.

    Returns
    -------
    xarray.DataTree
        nutpie's trace with ``stopper.kept`` draws per chain.
    """
    try:
        for n in stopper.budget.checkpoints:
            while True:
                finished = _nutpie_finished(sampler)
                with warnings.catch_warnings():  # ArviZ on a first look with fewer draws
                    warnings.simplefilter("ignore", UserWarning)  # than chains
                    tree = sampler.inspect()
                done = (~np.isnan(tree["sample_stats"]["logp"].values)).sum(axis=1)
                if finished or done.min() >= n:
                    break
                time.sleep(poll)
            first = tree.isel(draw=slice(0, n), missing_dims="ignore")
            if stopper.look(first, n):
                break
    except KeyboardInterrupt:  # the user's: keep what the chains drew
        stopper.kept = None
    trace = sampler.wait() if _nutpie_finished(sampler) else sampler.abort()
    if stopper.kept is None:
        return trace
    return trace.isel(draw=slice(0, stopper.kept), missing_dims="ignore")


def _nutpie_finished(sampler) -> bool:
    # nutpie 0.16's is_finished raises TimeoutError while its chains still run
    try:
        return bool(sampler.is_finished)
    except TimeoutError:
        return False


def record_outcome(idata, stopper: UntilConverged | None, *, draws: int):
    """Write how the run ended into ``sample_stats`` attrs; returns ``idata``.

    Attributes: ``pmctx_until_converged`` (bool), ``pmctx_draws_requested``,
    ``pmctx_draws_kept``, ``pmctx_extensions``, ``pmctx_stop_reason`` (``"converged"``,
    ``"max_draws"``, ``"max_time"``, ``"fixed_length"`` or ``"interrupted"``) and
    ``pmctx_checks`` (one ``"draws:converged:r_hat:ess_min:seconds"`` string per look;
    seconds since sampling started).

    Parameters
    ----------
    idata : xarray.DataTree
        The fit, with a ``sample_stats`` group (else nothing is written).
    stopper : UntilConverged or None
        The callback of the run; ``None`` for a fixed length.
    draws : int
        Requested draws per chain.

    Returns
    -------
    xarray.DataTree
    """
    if "sample_stats" not in idata.children:
        return idata
    attrs = idata["sample_stats"].attrs
    kept = draws
    if stopper is not None and stopper.kept is not None:
        kept = stopper.kept
    elif stopper is not None and "posterior" in idata.children:  # interrupted: what it drew
        kept = int(idata["posterior"].sizes.get("draw", draws))
    attrs["pmctx_until_converged"] = int(stopper is not None)
    attrs["pmctx_draws_requested"] = int(draws)
    attrs["pmctx_draws_kept"] = kept
    if stopper is None:
        attrs["pmctx_extensions"] = 0
        attrs["pmctx_stop_reason"] = "fixed_length"
        return idata
    attrs["pmctx_extensions"] = stopper.extensions
    attrs["pmctx_stop_reason"] = stopper.reason
    attrs["pmctx_checks"] = [
        f"{c['draws']}:{int(c['converged'])}:{c['r_hat']}:{c['ess_min']}:{c['seconds']}"
        for c in stopper.checks
    ]
    return idata

"""Units one after another, each unit's files written while the next unit fits.

Writing a unit's NetCDF costs about a tenth of a fast fit (a CRP alpha or GUM Laplace fit;
``docs/benchmarks.md``), and most of it is spent inside the netCDF/HDF5 C library, which runs
without Python's global interpreter lock. :func:`run_units` hands each unit's writing (its
NetCDF, then its JSON record) to one background thread and fits the next unit meanwhile, so on
a machine with a core to spare the writing leaves the fits' critical path; the CPU time is the
same. The engine's promises hold:

* a unit's record is yielded only after its NetCDF and record are on disk (atomically, record
  last), so a progress bar or a summary row never runs ahead of the files;
* at most one unit is being written while the next fits (one results tree held in memory);
* stopping early (an exception, a closed generator) waits for the write in progress, and a
  process killed mid-write leaves only a temporary file, which the next run removes and whose
  unit it fits again.

The netCDF C library is not thread-safe: the writer holds xarray's netCDF/HDF5 locks while it
writes, the locks xarray takes to read a NetCDF, so a fit that loads NetCDF data through
xarray waits for the write instead of racing it.

Examples
--------
>>> import tempfile
>>> from pmctx.batch import discover_units
>>> from pmctx.batch.toy import normal_mean_fit
>>> units = discover_units({u: {"y": [0.1, 0.4], "name": u} for u in ("a", "b", "c")})
>>> records = run_units(normal_mean_fit, list(units.values()), tempfile.mkdtemp(),
...                     seeds=[1, 2, 3], options={"fail_on": "b"})
>>> [(r["unit"], r["status"]) for r in records]
[('a', 'ok'), ('b', 'error'), ('c', 'ok')]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from pmctx.batch.records import UNIT_GROUPS, _fit_phase, _write_phase
from pmctx.batch.units import UnitSource

__all__ = ["run_units"]


def _netcdf_locks():
    try:
        from xarray.backends.locks import HDF5_LOCK, NETCDFC_LOCK
    except ImportError:  # an xarray without them: nothing of xarray's to wait for
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    stack.enter_context(NETCDFC_LOCK)
    stack.enter_context(HDF5_LOCK)
    return stack


def _write_locked(fitted, groups):
    with _netcdf_locks():
        return _write_phase(fitted, groups=groups, thread_cpu=True)


def run_units(
    fit_unit: Callable,
    sources: list[UnitSource],
    out_dir,
    *,
    seeds: list[int],
    options=None,
    summarize: Callable | None = None,
    run_id: str = "",
    groups=UNIT_GROUPS,
    background_writes: bool = False,
) -> Iterator[dict]:
    """Fit ``sources`` in order, yielding each unit's record once its files are on disk.

    Parameters
    ----------
    fit_unit : callable
        The batch's fit (see :func:`~pmctx.batch.engine.run_batch`).
    sources : list of UnitSource
        Units, fitted in this order.
    out_dir : path
        The batch's output folder.
    seeds : list of int
        Each unit's seed.
    options : dict, optional
        Keyword arguments of every ``fit_unit`` call.
    summarize : callable, optional
        ``summarize(idata) -> dict`` of scalars added to each record.
    run_id : str
        This run's id (a unit this run already recorded is not fitted again).
    groups : sequence of str or None
        groups written per unit.
    background_writes : bool, default False
        Write each unit while the next one fits; ``False`` writes in this thread, as
        :func:`~pmctx.batch.engine.run_unit` does.

    Yields
    ------
    dict
        Each unit's record, in the order of ``sources``. ``cpu_seconds`` is the process CPU
        time of the unit's fit plus the writing thread's CPU time of its files.
    """
    kwargs = {"options": options, "summarize": summarize, "run_id": run_id}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pmctx-writer") as writer:
        writing = None
        for source, seed in zip(sources, seeds, strict=True):
            fitted = _fit_phase(fit_unit, source, out_dir, seed=seed, **kwargs)
            if writing is not None:
                yield writing.result()
                writing = None
            if isinstance(fitted, dict):  # recorded before: nothing to fit or write
                yield fitted
            elif background_writes:
                writing = writer.submit(_write_locked, fitted, groups)
            else:
                yield _write_phase(fitted, groups=groups)
        if writing is not None:
            yield writing.result()

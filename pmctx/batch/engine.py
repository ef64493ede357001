"""Many independent fits on ``dask.distributed``: results on disk as they finish, resumable.

Every unit is one call ``fit_unit(data, random_seed=..., **options)`` that returns an
``xarray.DataTree`` (on a cluster, several units share a task: see
:mod:`pmctx.batch.scheduling`). The worker loads the unit's data (a file is read there,
not shipped), writes ``<out>/units/<unit>.nc`` and then a record ``<out>/units/<unit>.json``
(status, seconds, CPU seconds, seed, worker, error), each to a temporary file renamed into
place, so a file that exists is complete; only the record travels back to the client. The
client gathers records with ``as_completed`` and appends each as a row of
``<out>/summary.csv`` (sorted and rewritten once at the end; the JSON records are the ground
truth a rerun reads). Consequences:

* a rerun skips units whose record says ``ok`` (and, with ``rerun_errors``, retries failed ones);
* a unit that raises records the error and traceback; the batch goes on;
* a task on a worker that dies is rescheduled by the scheduler on another worker (a unit that
  kills ``allowed-failures`` workers in a row is recorded as an error); a rerun of a task
  whose first worker died after writing its record returns that record instead of refitting.

Workers must see ``out_dir`` (one machine, or a shared file system on a cluster).

Examples
--------
>>> import tempfile
>>> from pmctx.batch import run_batch
>>> from pmctx.batch.toy import normal_mean_fit
>>> units = {"a": {"y": [0.1, 0.3]}, "b": {"y": [1.0, 1.2, 0.9]}}
>>> out = tempfile.mkdtemp()
>>> table = run_batch(normal_mean_fit, units, out, local=True)  # no cluster: a plain loop
>>> table["status"].tolist()
['ok', 'ok']
"""

from __future__ import annotations

import csv
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from pmctx.batch.cluster import connect
from pmctx.batch.records import (
    UNIT_GROUPS,
    _finished,
    _read_record,
    run_unit,
    write_atomic,
    write_idata,
)
from pmctx.batch.units import discover_units, unit_seed
from pmctx.progress import progress
from pmctx.validation import check_int

__all__ = ["UNIT_GROUPS", "connect", "load_records", "run_batch", "run_unit", "write_atomic",
           "write_idata"]  # fmt: skip

SUMMARY_COLUMNS = ["unit", "status", "seconds", "cpu_seconds", "seed", "path", "worker", "run_id",
                   "error"]  # fmt: skip


def _columns(keys) -> list[str]:
    keys = [k for k in dict.fromkeys(keys) if k != "traceback"]
    return [c for c in SUMMARY_COLUMNS if c in keys] + [c for c in keys if c not in SUMMARY_COLUMNS]


def _write_summary(out_dir: Path, records: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(records)
    frame = frame[_columns(frame.columns)].sort_values("unit").reset_index(drop=True)
    path = Path(out_dir) / "summary.csv"
    write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False))
    return frame


class _Summary:
    """``summary.csv`` while a batch runs: one row appended per finished unit.

    Rewriting the whole table after every unit costs O(units) each time; appending costs one
    row. The table is rewritten (atomically, sorted by unit) at the start, when a record
    brings a new column, and by :meth:`close`. A row cut short by a crash is harmless: the
    per-unit JSON records are what a rerun reads, and it rewrites the table.
    """

    def __init__(self, out_dir: Path, records: list[dict]):
        self.out_dir, self.records = Path(out_dir), list(records)
        self.columns: list[str] = []
        if self.records:
            self._rewrite()

    def _rewrite(self) -> None:
        self.columns = list(_write_summary(self.out_dir, self.records).columns)

    def add(self, record: dict) -> None:
        self.records.append(record)
        if not self.columns or set(record) - set(self.columns) - {"traceback"}:
            self._rewrite()
            return
        with open(self.out_dir / "summary.csv", "a", newline="") as handle:
            writer = csv.DictWriter(handle, self.columns, restval="", extrasaction="ignore")
            writer.writerow(record)

    def close(self) -> pd.DataFrame:
        if not self.records:
            return load_records(self.out_dir)
        return _write_summary(self.out_dir, self.records)


def load_records(out_dir) -> pd.DataFrame:
    """The records of every unit written under ``out_dir`` so far (one row per unit).

    Parameters
    ----------
    out_dir : path-like
        Batch output folder.

    Returns
    -------
    pandas.DataFrame
        One row per unit record (empty, with the summary columns, when there is none).

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit

    >>> out = tempfile.mkdtemp()
    >>> _ = run_batch(normal_mean_fit, {"a": {"y": [0.1]}}, out, local=True)
    >>> load_records(out)["unit"].tolist()
    ['a']
    """
    folder = Path(out_dir) / "units"
    records = [r for p in sorted(folder.glob("*.json")) if (r := _read_record(p)) is not None]
    if not records:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    return pd.DataFrame(records).drop(columns=["traceback"], errors="ignore")


def _remove_stale_temps(out_dir: Path) -> None:
    # temporary files of writes that never finished (one batch per folder at a time)
    for stale in (out_dir / "units").glob(".*.tmp"):
        stale.unlink(missing_ok=True)


def run_batch(
    fit_unit: Callable,
    units,
    out_dir,
    *,
    options: Mapping | None = None,
    random_seed: int = 0,
    client=None,
    workers: int | None = None,
    scheduler: str | None = None,
    local: bool = False,
    summarize: Callable | None = None,
    rerun_errors: bool = False,
    progressbar: bool | None = None,
    groups=UNIT_GROUPS,
    chunk_size: int | None = None,
    background_writes: bool = False,
) -> pd.DataFrame:
    """Fit every unit (skipping finished ones) and return the summary table.

    Parameters
    ----------
    fit_unit : callable
        ``fit_unit(data: dict, *, random_seed: int, **options) -> DataTree``; a model's
        fit (see :func:`pmctx.batch.resolve_fit`) or your own. It must be importable or
        picklable by value, since it runs on the workers.
    units : folder, table file, DataFrame with a ``unit`` column, or dict of data dicts
        See :func:`pmctx.batch.discover_units`.
    out_dir : path
        Gets ``units/<unit>.nc``, ``units/<unit>.json`` and ``summary.csv``.
    options : dict, optional
        Keyword arguments of every ``fit_unit`` call.
    random_seed : int, default 0
        Batch seed; unit ``u`` gets ``unit_seed(random_seed, u)``.
    client : distributed.Client, optional
        Use this client; else connect with ``workers``/``scheduler`` (see :func:`connect`),
        and close what was opened at the end.
    local : bool
        Run in this process, one unit after another (no Dask); same files and seeds.
    summarize : callable, optional
        ``summarize(idata) -> dict`` of scalars added to each unit's row.
    rerun_errors : bool
        Also rerun units whose record is an error (default: keep them as finished).
    groups : sequence of str or None
        groups written per unit (default :data:`UNIT_GROUPS`: all but the
        predictive draws); ``None`` writes every group.
    workers : int, optional
        Worker processes of a new local cluster (see :func:`connect`).
    scheduler : str, optional
        Address of a running Dask scheduler.
    progressbar : bool, optional
        Show progress (default: when running in a terminal).
    chunk_size : int, optional
        Units per Dask task. Default: sized from the measured fit times, about a second of
        fits per task (see :mod:`pmctx.batch.scheduling`); each unit is still written the
        moment it finishes, and a retried task refits only its unfinished units.
    background_writes : bool, default False
        Write each unit's files in a background thread while the next unit fits (see
        :mod:`pmctx.batch.writer`). Off by default: for short fits it costs more CPU than it
        saves (``benchmarks/bench_batch.py``, ``benchmarks/results/batch.json``).

    Returns
    -------
    pandas.DataFrame
        One row per unit: ``unit, status, seconds, cpu_seconds, seed, path, worker, run_id,
        error`` and the ``summarize`` columns. ``status`` is ``ok`` or ``error``;
        ``cpu_seconds`` is the CPU time of the process that ran the unit (fit and writing).

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit

    >>> table = run_batch(normal_mean_fit, {"a": {"y": [0.1]}, "b": {"y": [1.0]}},
    ...                   tempfile.mkdtemp(), local=True)
    >>> sorted(table["unit"]), set(table["status"])
    (['a', 'b'], {'ok'})
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = discover_units(units)
    random_seed = check_int(random_seed, "random_seed", minimum=0)
    run_id = uuid.uuid4().hex[:12]
    _remove_stale_temps(out_dir)
    records, todo = [], []
    for name, source in sources.items():
        done = _finished(out_dir, name, rerun_errors)
        if done is not None:
            records.append(done)
        else:
            todo.append(source)
    groups = None if groups is None else tuple(groups)
    kwargs = dict(options=dict(options or {}), summarize=summarize, run_id=run_id, groups=groups,
                  background_writes=bool(background_writes))  # fmt: skip
    disable = None if progressbar is None else not progressbar
    summary = _Summary(out_dir, records)
    if local or not todo:
        from pmctx.batch.writer import run_units

        seeds = [unit_seed(random_seed, source.name) for source in todo]
        records = run_units(fit_unit, todo, out_dir, seeds=seeds, **kwargs)
        for record in progress(records, total=len(todo), description="units", disable=disable):
            summary.add(record)
        return summary.close()
    from pmctx.batch.scheduling import run_distributed

    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    records = run_distributed(fit_unit, todo, out_dir, random_seed=random_seed, kwargs=kwargs,
                              client=client, workers=workers, scheduler=scheduler,
                              units_per_task=chunk_size)  # fmt: skip
    for record in progress(records, total=len(todo), description="units", disable=disable):
        summary.add(record)
    # a worker killed while its writer thread was mid-write leaves a temporary file; every
    # task has ended now, so nothing else writes into the folder
    _remove_stale_temps(out_dir)
    return summary.close()

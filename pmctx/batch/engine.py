"""Many independent fits on ``dask.distributed``: results on disk as they finish, resumable.

Every unit is one call ``fit_unit(data, random_seed=..., **options)`` that returns an
``arviz.InferenceData`` (on a cluster, several units share a task: see
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

# Long because it holds one unit's whole path (fit, atomic NetCDF and JSON writes, resume
# records) and the batch loop with its summary table; about 220 of its lines are docstrings.

from __future__ import annotations

import csv
import json
import os
import socket
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from pmctx.batch.cluster import connect
from pmctx.batch.units import UnitSource, discover_units, unit_seed
from pmctx.progress import progress
from pmctx.validation import check_int

__all__ = ["UNIT_GROUPS", "connect", "load_records", "run_batch", "run_unit", "write_atomic",
           "write_idata"]  # fmt: skip

SUMMARY_COLUMNS = ["unit", "status", "seconds", "cpu_seconds", "seed", "path", "worker", "run_id",
                   "error"]  # fmt: skip

#: InferenceData groups a unit's NetCDF keeps by default: everything the population view,
#: model selection (log evidence in the posterior attributes, or LOO from ``log_likelihood``)
#: and SBC read, and the data. Predictive draws are left out: they are often the largest
#: group, writing them costs as much as a small fit, and they can be drawn again from the
#: posterior. ``run_batch(..., groups=None)`` keeps every group.
UNIT_GROUPS = ("posterior", "sample_stats", "log_likelihood", "observed_data", "constant_data")


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, then rename it onto ``path``.

    A reader (or a rerun after a crash) sees either no file or a complete one.

    Parameters
    ----------
    path : path-like
        Final file path (its folder is created).
    write : callable
        ``write(tmp_path)`` writes the complete file to the temporary path.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> target = Path(tempfile.mkdtemp()) / "note.txt"
    >>> write_atomic(target, lambda tmp: tmp.write_text("done")).read_text()
    'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _netcdf4_module():
    try:
        import netCDF4
    except ImportError:
        return None
    return netCDF4


def _write_numeric_netcdf4(netCDF4, datasets: dict, path: Path) -> None:
    # The netCDF4 library called directly: half the time of xarray's writer on top of it
    # (which encodes each variable for the general case), for the numeric draws a fit returns.
    # Every variable is defined before any is written (writing ends netCDF's define mode, and
    # each switch back costs a metadata sync: ~0.1 ms per variable), and every variable is
    # written whole, so fill values need not be written first.
    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as handle:
        handle.set_fill_off()
        defined = []
        for group, ds in datasets.items():
            node = handle.createGroup(group)
            node.setncatts(dict(ds.attrs))
            for dim, size in ds.sizes.items():
                node.createDimension(dim, size)
            for name, var in ds.variables.items():
                out = node.createVariable(name, var.dtype, var.dims, contiguous=True)
                out.setncatts(dict(var.attrs))
                defined.append((out, var.values))
        for out, values in defined:
            _put_whole(out, values)


def _put_whole(out, values: np.ndarray) -> None:
    # ``Variable._put`` (start, count, stride) is what ``out[...] = values`` calls after
    # working out those three from the slice in Python (``_StartCountStride``, masking
    # checks): a third of a small fit's writing time, spent on a whole-variable write whose
    # start, count and stride are known. Anything unusual takes the public path.
    put = getattr(out, "_put", None)
    if values.ndim == 0:
        out.assignValue(values)
    elif put is None or not values.dtype.isnative or values.dtype != out.dtype:
        out[...] = values
    else:
        ndim = values.ndim
        put(np.ascontiguousarray(values), np.zeros(ndim, int), np.array(values.shape),
            np.ones(ndim, int))  # fmt: skip


def _plain_attrs(attrs) -> bool:
    return all(
        isinstance(v, str | int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in attrs.values()
    )


def write_idata(idata, path, *, groups=UNIT_GROUPS) -> Path:
    """Write ``idata`` to the NetCDF file ``path`` atomically, uncompressed, keeping ``groups``
    (all groups when ``None``); readable by :func:`pmctx.io.load_idata`.

    Writing is a large share of a small fit's cost: numeric groups with plain attributes are
    written with the netCDF4 library directly when it is installed; anything else (strings,
    booleans, times) goes through xarray's encoders in one open file (``xarray.DataTree``),
    with netCDF4 or else h5netcdf.

    Parameters
    ----------
    idata : arviz.InferenceData
        The fit to write.
    path : path-like
        Target ``.nc`` file.
    groups : sequence of str or None, default UNIT_GROUPS
        Groups to keep; None keeps all.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit

    >>> from pmctx.io import load_idata
    >>> path = write_idata(normal_mean_fit({"y": [0.5]}, random_seed=0),
    ...                    Path(tempfile.mkdtemp()) / "unit.nc")
    >>> load_idata(path).posterior["mu"].shape
    (1, 200)
    """
    import xarray as xr

    datasets = {g: idata[g] for g in idata.groups() if groups is None or g in groups}
    netCDF4 = _netcdf4_module()
    numeric = all(
        _plain_attrs(ds.attrs)
        and all(v.dtype.kind in "iuf" and _plain_attrs(v.attrs) for v in ds.variables.values())
        for ds in datasets.values()
    )
    if netCDF4 is not None and numeric:
        return write_atomic(path, lambda tmp: _write_numeric_netcdf4(netCDF4, datasets, tmp))
    engine = "h5netcdf" if netCDF4 is None else "netcdf4"
    if hasattr(xr, "DataTree"):
        tree = xr.DataTree.from_dict(datasets)
        return write_atomic(path, lambda tmp: tree.to_netcdf(tmp, engine=engine))
    return write_atomic(  # xarray before 2024.10: one file opening per group
        path,
        lambda tmp: idata.to_netcdf(str(tmp), compress=False, groups=list(datasets), engine=engine),
    )


def _write_json(path: Path, record: dict) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_text(json.dumps(record, default=str)))


def _read_record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _unit_paths(out_dir: Path, unit: str) -> tuple[Path, Path]:
    folder = Path(out_dir) / "units"
    return folder / f"{unit}.nc", folder / f"{unit}.json"


def _finished(out_dir: Path, unit: str, rerun_errors: bool) -> dict | None:
    nc, js = _unit_paths(out_dir, unit)
    record = _read_record(js) if js.exists() else None
    if record is None:
        return None
    if record.get("status") == "ok" and nc.exists():
        return record
    if record.get("status") == "error" and not rerun_errors:
        return record
    return None


def run_unit(
    fit_unit: Callable,
    source: UnitSource,
    out_dir,
    *,
    random_seed: int,
    options: Mapping | None = None,
    summarize: Callable | None = None,
    run_id: str = "",
    groups=UNIT_GROUPS,
) -> dict:
    """Fit one unit and write its NetCDF and record (the task each worker runs).

    Returns the record (a small dict; the InferenceData stays on the worker's disk).
    ``summarize(idata) -> dict`` adds scalar columns (e.g. an ELPD) to it; ``groups`` are the
    InferenceData groups written (see :data:`UNIT_GROUPS`). A record already on disk with
    status ``ok``, or one this run (``run_id``) wrote, is returned without refitting, which
    makes a rescheduled task (its first worker died after writing) idempotent.

    Parameters
    ----------
    fit_unit : callable
        ``fit_unit(data, *, random_seed, **options) -> InferenceData``.
    source : pmctx.batch.units.UnitSource
        The unit (its name and data).
    out_dir : path-like
        Batch output folder.
    random_seed : int
        The unit's random seed.
    options : mapping, optional
        Keyword arguments of ``fit_unit``.
    summarize : callable, optional
        ``summarize(idata) -> dict`` of scalar columns for the record.
    run_id : str, default ""
        Identifier of the batch run, stored in the record.
    groups : sequence of str or None, default UNIT_GROUPS
        InferenceData groups written.

    Returns
    -------
    dict
        The unit's record: ``unit``, ``status`` (``"ok"`` or ``"error"``), ``seed``, ``path``,
        ``error``, timings and the ``summarize`` columns.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch.toy import normal_mean_fit

    >>> from pmctx.batch.units import UnitSource
    >>> record = run_unit(normal_mean_fit, UnitSource("s01", data={"y": [0.5]}),
    ...                   tempfile.mkdtemp(), random_seed=1)
    >>> record["unit"], record["status"]
    ('s01', 'ok')
    """
    started = _fit_phase(fit_unit, source, out_dir, seed=random_seed, options=options,
                         summarize=summarize, run_id=run_id)  # fmt: skip
    return started if isinstance(started, dict) else _write_phase(started, groups=groups)


class _Fitted(NamedTuple):
    """A unit whose fit ran (or raised) and whose files are still to be written."""

    record: dict
    idata: object  # None when the fit raised
    nc: Path
    js: Path
    seconds: float  # wall and process CPU seconds of loading, fitting and summarizing
    cpu_seconds: float


def _fit_phase(fit_unit, source, out_dir, *, seed, options, summarize, run_id) -> dict | _Fitted:
    # The unit's record when it needs no fit in this run, else its fit and the record so far.
    nc, js = _unit_paths(out_dir, source.name)
    done = _read_record(js)
    if done is not None and (
        (done.get("status") == "ok" and nc.exists()) or (run_id and done.get("run_id") == run_id)
    ):
        return done
    start, cpu_start = time.perf_counter(), time.process_time()
    record = {
        "unit": source.name,
        "seed": seed,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "run_id": run_id,
        "path": str(nc),
        "error": "",
    }
    idata = None
    try:
        data = source.load()
        idata = fit_unit(data, random_seed=seed, **dict(options or {}))
        record.update(dict(summarize(idata)) if summarize is not None else {}, status="ok")
    except Exception as err:  # a failing unit must not stop the batch: record it instead
        idata = None
        record.update(_error_fields(err))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return _Fitted(record, idata, nc, js, seconds, cpu)


def _error_fields(err: Exception) -> dict:
    return {"status": "error", "path": "", "error": f"{type(err).__name__}: {err}",
            "traceback": traceback.format_exc()}  # fmt: skip


def _write_phase(fitted: _Fitted, *, groups=UNIT_GROUPS, thread_cpu: bool = False) -> dict:
    # The unit's NetCDF, then its record: a record on disk means its NetCDF is complete.
    # ``thread_cpu``: count this thread's CPU only (a background writer, whose process CPU
    # includes the next unit's fit).
    clock = time.thread_time if thread_cpu else time.process_time
    start, cpu_start = time.perf_counter(), clock()
    record = fitted.record
    if fitted.idata is not None:
        try:
            write_idata(fitted.idata, fitted.nc, groups=groups)
        except Exception as err:  # e.g. a full disk: this unit failed, the batch goes on
            record.update(_error_fields(err))
    record["seconds"] = fitted.seconds + time.perf_counter() - start
    record["cpu_seconds"] = fitted.cpu_seconds + clock() - cpu_start
    _write_json(fitted.js, record)
    return record


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
        ``fit_unit(data: dict, *, random_seed: int, **options) -> InferenceData``; a model's
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
        InferenceData groups written per unit (default :data:`UNIT_GROUPS`: all but the
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

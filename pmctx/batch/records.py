"""One batch unit on disk: its fit, its atomic NetCDF and JSON files, and its resume record.

What :func:`pmctx.batch.engine.run_batch`, the local writer loop (:mod:`pmctx.batch.writer`)
and the Dask scheduling (:mod:`pmctx.batch.scheduling`) share, below all three, so that none
of them imports another's private helpers.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> path = write_atomic(Path(tempfile.mkdtemp()) / "a.txt", lambda tmp: tmp.write_text("x"))
>>> path.read_text()
'x'
"""

from __future__ import annotations

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

from pmctx.batch.units import UnitSource

__all__ = ["UNIT_GROUPS", "run_unit", "write_atomic", "write_idata"]

#: groups a unit's NetCDF keeps by default: everything the population view,
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
    # Lists of strings too: ArviZ 1 puts ``sample_dims`` (``["chain", "draw"]``, ``[]`` on
    # observed data) on every group; netCDF4 writes them as xarray's writer does (a list
    # reads back as a list, an empty one as an empty array).
    return all(
        (isinstance(v, str | int | float | np.integer | np.floating) and not isinstance(v, bool))
        or (isinstance(v, list | tuple) and all(isinstance(x, str) for x in v))
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
    idata : xarray.DataTree
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

    datasets = {g: idata[g] for g in idata.children if groups is None or g in groups}
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

    Returns the record (a small dict; the results tree stays on the worker's disk).
    ``summarize(idata) -> dict`` adds scalar columns (e.g. an ELPD) to it; ``groups`` are the
    groups written (see :data:`UNIT_GROUPS`). A record already on disk with
    status ``ok``, or one this run (``run_id``) wrote, is returned without refitting, which
    makes a rescheduled task (its first worker died after writing) idempotent.

    Parameters
    ----------
    fit_unit : callable
        ``fit_unit(data, *, random_seed, **options) -> DataTree``.
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
        groups written.

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

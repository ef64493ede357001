"""Many fits at scale on ``dask.distributed``: batches, population views, model selection, SBC.

* :mod:`~pmctx.batch.units`: units from a folder of files or a table with a ``unit`` column.
* :mod:`~pmctx.batch.engine`: :func:`run_batch`, results written per unit as they finish,
  resumable, robust to failing units and dying workers.
* :mod:`~pmctx.batch.cluster`: :func:`connect`, the engine's local cluster, its workers tuned
  for many short fits (Dask's memory trimming and profiler off); or a cluster by address.
* :mod:`~pmctx.batch.adapters`: model name -> fit callable (:func:`resolve_fit`).
* :mod:`~pmctx.batch.toy`: a closed-form model to try the engine on.

Running on a Slurm cluster: start the cluster with dask-jobqueue and pass its client (or its
scheduler address as ``--scheduler`` / ``DASK_SCHEDULER_ADDRESS``)::

    from dask_jobqueue import SLURMCluster
    from distributed import Client
    cluster = SLURMCluster(cores=1, processes=1, memory="4GB", walltime="02:00:00")
    cluster.scale(jobs=50)
    run_batch(resolve_fit("crp"), "subjects/", "fits/", client=Client(cluster))

The output folder must be on a file system that every worker can write to.
"""

from __future__ import annotations

import importlib

# Imported on first use (PEP 562), so that ``pmctx batch --help`` and the rest of the
# command line start without pandas and Dask: attribute -> submodule that defines it.
_LAZY = {
    "resolve_fit": "adapters",
    "resolve_simulate": "adapters",
    "connect": "engine",
    "load_records": "engine",
    "run_batch": "engine",
    "run_unit": "engine",
    "UnitSource": "units",
    "discover_units": "units",
    "load_data_file": "units",
    "unit_seed": "units",
}

__all__ = [
    "UnitSource",
    "connect",
    "discover_units",
    "load_data_file",
    "load_records",
    "resolve_fit",
    "resolve_simulate",
    "run_batch",
    "run_unit",
    "unit_seed",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})

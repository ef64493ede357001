"""The batch engine's own ``LocalCluster``, with worker settings tuned for many short fits.

Dask's defaults suit workers that hold data and run many tiny tasks; a batch worker runs one
fit after another (tens of milliseconds each) in one thread, and some defaults cost those
fits CPU time inside the worker process. :func:`connect` starts its local cluster under
:data:`TUNED_CONFIG`:

* no ``MALLOC_TRIM_THRESHOLD_`` for the worker processes. Dask sets it to 65536 before it
  spawns a worker; glibc then keeps a fixed mmap threshold (setting it turns glibc's dynamic
  threshold off), so every array above 128 KiB is a fresh ``mmap`` and ``munmap`` (page faults
  on each first touch), and freed memory is returned to the system at once. A fit allocates
  and frees such arrays constantly;
* the worker's statistical profiler off (by default it samples the running task's stack
  every 10 ms, on the worker's event-loop thread, taking the interpreter lock from the fit);
* the event loop's health tick every second instead of every 20 ms, the memory monitor every
  second instead of every 100 ms, the system monitor every 2 s (and no GIL sampling);
* worker saturation 1.0 instead of 1.1: the scheduler hands a one-thread worker one task at a
  time, so no task waits in the queue of a worker that another task kills. Dask counts a
  worker's death against every task assigned to it, and with 1.1 a unit queued behind a
  unit that crashes its worker could be recorded as the crasher (the engine's
  worker-killing slow test failed that way in CI). The next chunk waits at the scheduler
  instead, one round trip (milliseconds) per chunk of about a second.

``python -m benchmarks.batch_worker_cpu`` measures what they save per unit (the worker's
page faults and event-loop CPU; figures on the docs' benchmarks page).

What is given up: the dashboard's profile page stays empty, a worker's memory limits are
checked every second (a fit that fills memory faster is stopped later), and freed memory
goes back to the system less eagerly (a worker's resident size stays nearer its peak).
``connect(tuned=False)`` starts a cluster with Dask's own settings.

The settings travel with every worker: the nannies are created inside the tuned
configuration (which fixes the spawned processes' environment), and each nanny also gets the
settings as its ``config``, which it hands to every worker process it starts, including one
it restarts after the worker died. A cluster given by address (``scheduler`` or
``$DASK_SCHEDULER_ADDRESS``) is left as it is.

BLAS threads: Dask's nanny also sets ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``OPENBLAS_NUM_THREADS`` to 1 in each worker (one fit per worker process); these are kept.

Examples
--------
>>> TUNED_CONFIG["distributed.worker.profile.enabled"]
False
>>> client = connect(workers=2)  # doctest: +SKIP
>>> client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))  # doctest: +SKIP
{'tcp://127.0.0.1:40331': None, 'tcp://127.0.0.1:41197': None}
"""

from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path

from pmctx.validation import check_int

__all__ = ["TUNED_CONFIG", "connect", "tuned_config"]

#: Dask settings of the engine's local cluster (``dask.config.set`` keys; see the module text).
TUNED_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.worker.profile.enabled": False,
    "distributed.worker.profile.interval": "1s",
    "distributed.worker.profile.cycle": "60s",
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.tick.limit": "10s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.scheduler.worker-saturation": 1.0,
}

_MALLOC = "MALLOC_TRIM_THRESHOLD_"


def _initial_environ() -> dict[str, str] | None:
    # The environment this process started with (Linux), not what it set since.
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _drop_leaked_malloc_setting() -> None:
    # A nanny sets its pre-spawn variables in *this* process's environment before spawning
    # (Dask documents the leak), and later worker processes inherit it from there whatever
    # their nanny's configuration says. Remove Dask's own value when this process did not
    # start with it; a value the user exported is kept.
    import dask

    value = os.environ.get(_MALLOC)
    if value is None:
        return
    default = dask.config.get(f"distributed.nanny.pre-spawn-environ.{_MALLOC}", default=None)
    initial = _initial_environ()
    leaked = _MALLOC not in initial if initial is not None else value == str(default)
    if leaked:
        del os.environ[_MALLOC]


@contextlib.contextmanager
def tuned_config():
    """Context in which a new ``LocalCluster`` (or a ``cluster.scale`` call) gets
    :data:`TUNED_CONFIG` for its scheduler, nannies and worker processes.

    Returns
    -------
    contextlib.AbstractContextManager
        Yields a deep copy of the whole Dask configuration in force inside the context.

    Examples
    --------
    >>> import dask
    >>> with tuned_config() as config:
    ...     dask.config.get("distributed.admin.tick.interval")
    '1s'
    >>> tick = config["distributed"]["admin"]["tick"]["interval"]  # the copy keeps it
    >>> tick, dask.config.get("distributed.admin.tick.interval")
    ('1s', '20ms')
    """
    import dask
    import distributed  # noqa: F401  (its defaults enter dask.config on import)

    _drop_leaked_malloc_setting()
    with dask.config.set(TUNED_CONFIG):
        yield copy.deepcopy(dask.config.config)


def connect(*, workers: int | None = None, scheduler: str | None = None, tuned: bool = True,
            **cluster_kwargs):  # fmt: skip
    """A ``distributed.Client``: to ``scheduler`` (or ``$DASK_SCHEDULER_ADDRESS``) when given,
    else to a new ``LocalCluster`` of ``workers`` processes with one thread each.

    Close it (``client.close()``; and ``client.cluster.close()`` for a local cluster) when done,
    or use it as a context manager.

    Parameters
    ----------
    workers : int, optional
        Worker processes of a new local cluster (default: the number of CPUs).
    scheduler : str, optional
        Address of a running Dask scheduler; its cluster's settings are left alone.
    tuned : bool, default True
        Start the local cluster with :data:`TUNED_CONFIG` (``False``: Dask's own settings).
    **cluster_kwargs
        Passed to ``distributed.LocalCluster``.

    Returns
    -------
    distributed.Client
        A client connected to the scheduler or the new local cluster.

    Examples
    --------
    >>> client = connect(workers=2)  # doctest: +SKIP
    >>> client.close(); client.cluster.close()  # doctest: +SKIP
    """
    from distributed import Client, LocalCluster

    scheduler = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    if scheduler:
        return Client(scheduler)
    n = check_int(workers if workers is not None else os.cpu_count() or 1, "workers", minimum=1)
    cluster_kwargs.setdefault("dashboard_address", None)
    if not tuned:
        return Client(LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   **cluster_kwargs))  # fmt: skip
    with tuned_config() as config:
        # A nanny keeps ``toolz.merge(dask.config.config, config)``: a shallow copy whose
        # nested dicts are the global ones, which leaving the context restores in place, so
        # a worker it restarts later would get Dask's defaults. A whole deep copy as its own
        # ``config`` (which replaces every top-level section) keeps the settings.
        cluster_kwargs["config"] = _merge(config, cluster_kwargs.get("config") or {})
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               **cluster_kwargs)  # fmt: skip
    return Client(cluster)


def _merge(base: dict, override: dict) -> dict:
    from dask.config import merge

    return merge(base, override)

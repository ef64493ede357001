"""Units on a Dask cluster in chunks: several units per task, sized from measured fit times.

One task per unit costs a scheduler round trip, a task's bookkeeping on the worker and a
result transfer per unit: for fits of tens of milliseconds that is a large share of the fit
again (``docs/benchmarks.md``). A
task here runs a *chunk*: :func:`run_chunk` fits its units one after another with
:func:`pmctx.batch.writer.run_units`, so each unit's NetCDF and record are still written
atomically as soon as that unit finishes (while the next one fits), and a unit that raises
records its error while the chunk goes on. Chunk sizes (:func:`chunk_size`) come from the
units' measured seconds: the first chunks hold one unit each; then a chunk holds about
:data:`CHUNK_SECONDS` of work, at most an even share of what is left per worker slot, so the
progress bar moves every second or so and the last chunks still spread over every worker.
Two chunks per worker slot are submitted, so the scheduler always holds the next chunk for a
worker (the engine's local cluster hands each worker one task at a time:
:data:`pmctx.batch.cluster.TUNED_CONFIG`).

Exactly once: a chunk whose worker dies is retried by the scheduler on another worker, and a
unit that this run already recorded (or an earlier run, with status ``ok``) is returned from
its record instead of being fitted again, so the retry fits only the units the dead worker
had not finished. A chunk that fails as a whole (``KilledWorker``: it took down every worker
it met) is split: its units without a record are resubmitted one per task, so only the unit
that kills its workers is recorded as an error.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator

from pmctx.batch.records import _read_record, _unit_paths, _write_json
from pmctx.batch.units import UnitSource, unit_seed
from pmctx.batch.writer import run_units

__all__ = ["CHUNK_SECONDS", "chunk_size", "run_chunk", "run_distributed"]

#: Seconds of fitting a chunk aims at: long enough that a task's own cost (a few milliseconds
#: of scheduling and transfer) is under 1% of it, short enough for a moving progress bar.
CHUNK_SECONDS = 1.0

#: Seconds between two looks at the number of worker threads.
SLOTS_REFRESH_SECONDS = 5.0

#: Chunks in flight per worker slot: one running and one waiting on the worker or scheduler.
IN_FLIGHT_PER_SLOT = 2


def chunk_size(seconds_per_unit: float | None, remaining: int, slots: int) -> int:
    """Units in the next chunk: about :data:`CHUNK_SECONDS` of fits, at most an even share of
    the ``remaining`` units over ``IN_FLIGHT_PER_SLOT * slots``; one while no fit time is known.

    Parameters
    ----------
    seconds_per_unit : float or None
        Mean wall seconds of the units finished so far (``None``: none yet).
    remaining : int
        Units not yet submitted.
    slots : int
        Worker threads of the cluster.

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> chunk_size(None, 200, 1), chunk_size(0.04, 200, 1), chunk_size(0.04, 20, 2)
    (1, 25, 5)
    >>> chunk_size(30.0, 200, 4)  # slow fits: one unit per task
    1
    """
    if seconds_per_unit is None or remaining <= 0:
        return 1
    by_time = int(CHUNK_SECONDS / max(seconds_per_unit, 1e-6))
    by_share = math.ceil(remaining / (IN_FLIGHT_PER_SLOT * max(slots, 1)))
    return max(1, min(by_time, by_share))


def run_chunk(fit_unit: Callable, sources: list[UnitSource], out_dir, *, seeds: list[int],
              **kwargs) -> list[dict]:  # fmt: skip
    """Fit each unit in turn with :func:`~pmctx.batch.writer.run_units` (the task a worker runs).

    Parameters
    ----------
    fit_unit : callable
        The batch's fit (see :func:`~pmctx.batch.engine.run_batch`).
    sources : list of UnitSource
        The chunk's units.
    out_dir : path
        The batch's output folder.
    seeds : list of int
        Each unit's seed.
    **kwargs
        Passed to :func:`~pmctx.batch.writer.run_units` (options, summarize, run_id, groups,
        background_writes).

    Returns
    -------
    list of dict
        The units' records, in order; a unit that raised has status ``error``.

    Examples
    --------
    >>> import tempfile
    >>> from pmctx.batch import discover_units
    >>> from pmctx.batch.toy import normal_mean_fit
    >>> units = discover_units({u: {"y": [0.1], "name": u} for u in ("a", "b")})
    >>> records = run_chunk(normal_mean_fit, list(units.values()), tempfile.mkdtemp(),
    ...                     seeds=[1, 2], options={"fail_on": "b"})
    >>> [(r["unit"], r["status"]) for r in records]
    [('a', 'ok'), ('b', 'error')]
    """
    return list(run_units(fit_unit, sources, out_dir, seeds=seeds, **kwargs))


def _slots(client) -> int:
    try:
        workers = client.scheduler_info()["workers"].values()
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers))
    except Exception:  # an info call that fails must not stop the batch: assume one slot
        return 1


class _Chunks:
    """Submission and completion of chunks; iterating yields one record per unit."""

    def __init__(self, client, fit_unit, todo, out_dir, seed, kwargs, fixed_size):
        from distributed import as_completed

        self.client, self.fit_unit, self.out_dir = client, fit_unit, str(out_dir)
        self.seed, self.kwargs, self.fixed_size = seed, kwargs, fixed_size
        self.pending = deque(todo)  # units not yet submitted
        self.singles: deque[UnitSource] = deque()  # units of a chunk that failed as a whole
        self.futures: dict = {}
        self.done = as_completed()
        self.seconds, self.timed, self.count = 0.0, 0, 0
        self.slots, self.slots_at = 1, -math.inf

    def _slot_count(self) -> int:
        # A round trip to the scheduler: asked again at most every few seconds (workers that
        # join an adaptive cluster get chunks from then on).
        if time.monotonic() - self.slots_at > SLOTS_REFRESH_SECONDS:
            self.slots, self.slots_at = _slots(self.client), time.monotonic()
        return self.slots

    def _size(self, slots: int) -> int:
        if self.fixed_size is not None:
            return self.fixed_size
        mean = self.seconds / self.timed if self.timed else None
        return chunk_size(mean, len(self.pending), slots)

    def _submit(self, sources: list[UnitSource]) -> None:
        self.count += 1
        future = self.client.submit(
            run_chunk,
            self.fit_unit,
            sources,
            self.out_dir,
            seeds=[unit_seed(self.seed, s.name) for s in sources],
            key=f"pmctx-units-{sources[0].name}-{self.kwargs['run_id']}-{self.count}",
            pure=False,
            **self.kwargs,
        )
        self.futures[future] = sources
        self.done.add(future)

    def _fill(self) -> None:
        slots = self._slot_count()
        while len(self.futures) < IN_FLIGHT_PER_SLOT * slots and (self.singles or self.pending):
            if self.singles:
                self._submit([self.singles.popleft()])
                continue
            size = self._size(slots)
            self._submit([self.pending.popleft() for _ in range(min(size, len(self.pending)))])

    def _failed(self, sources: list[UnitSource], err: Exception) -> list[dict]:
        # A chunk whose every worker died: keep what its units wrote in this run, split the rest.
        records = []
        for source in sources:
            record = _read_record(_unit_paths(self.out_dir, source.name)[1])
            if record is not None and record.get("run_id") == self.kwargs["run_id"]:
                records.append(record)
            elif len(sources) > 1:
                self.singles.append(source)
            else:  # e.g. KilledWorker: the unit took down every worker it met
                record = {
                    "unit": source.name,
                    "status": "error",
                    "seed": unit_seed(self.seed, source.name),
                    "run_id": self.kwargs["run_id"],
                    "path": "",
                    "worker": "",
                    "seconds": float("nan"),
                    "error": f"{type(err).__name__}: {err}",
                }
                _write_json(_unit_paths(self.out_dir, source.name)[1], record)
                records.append(record)
        return records

    def __iter__(self) -> Iterator[dict]:
        self._fill()
        for future in self.done:
            sources = self.futures.pop(future)
            try:
                records = future.result()
            except Exception as err:
                records = self._failed(sources, err)
            future.release()
            for record in records:
                seconds = float(record.get("seconds", math.nan))
                if record.get("status") == "ok" and math.isfinite(seconds):
                    self.seconds += seconds
                    self.timed += 1
            self._fill()
            yield from records


def run_distributed(fit_unit, todo, out_dir, *, random_seed, kwargs, client=None, workers=None,
                    scheduler=None, units_per_task=None) -> Iterator[dict]:  # fmt: skip
    """Yield one record per unit of ``todo`` as chunks finish on a Dask cluster.

    Parameters
    ----------
    fit_unit : callable
        The batch's fit.
    todo : list of UnitSource
        Units to fit.
    out_dir : path
        The batch's output folder.
    random_seed : int
        Batch seed (unit seeds from :func:`~pmctx.batch.units.unit_seed`).
    kwargs : dict
        :func:`~pmctx.batch.engine.run_unit`'s keyword arguments, with ``run_id``.
    client : distributed.Client, optional
        Else a cluster is opened with :func:`~pmctx.batch.engine.connect` (``workers``,
        ``scheduler``) and closed at the end.
    workers : int, optional
        Worker processes of a new local cluster.
    scheduler : str, optional
        Address of an existing scheduler.
    units_per_task : int, optional
        Fixed chunk size (default: :func:`chunk_size` from measured fit times).

    Yields
    ------
    dict
        One record per unit, in order of completion.
    """
    from pmctx.batch.cluster import connect

    own = client is None
    if own:
        client = connect(workers=workers, scheduler=scheduler)
    try:
        yield from _Chunks(client, fit_unit, todo, out_dir, random_seed, kwargs, units_per_task)
    finally:
        if own:
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()

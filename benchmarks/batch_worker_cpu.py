"""Worker CPU per unit against a plain loop's, in paired rounds (a diagnostic, not a table).

``python -m benchmarks.batch_worker_cpu [--units N] [--rounds R] [--case crp_alpha|gum_laplace]``

Each round, in turn: the plain loop in this process (fits only, BLAS limited to 1 thread as
in a Dask worker) and the engine in this process (``local=True``, files written); the same
loop run as one task on the worker of a 1-worker cluster with Dask's default settings, and on
one with :data:`pmctx.batch.cluster.TUNED_CONFIG` (CPU measured in the worker while its event
loop runs beside the task: no engine, only the worker process's surroundings); and the engine
(:func:`pmctx.batch.run_batch`) on each of the two clusters (worker CPU per unit).
Prints the median and range over rounds of CPU ms per unit and of the ratio to the same
round's loop's fitting thread, the CPU of the fitting thread and of a worker's event loop, and
minor page faults per unit, with the load average. CPU time, not wall time, is the number to
trust on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from benchmarks.bench_batch import CASES
from pmctx.batch import connect, run_batch, unit_seed


def usage(worker: bool = False) -> dict[str, float]:
    """This process's CPU seconds, minor page faults, and CPU seconds of its fitting thread
    (the main thread here, the task thread in a worker) and of a worker's event loop."""
    import resource
    import threading

    import psutil

    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {"cpu": time.process_time(), "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt}
    for thread in psutil.Process().threads():
        name = names.get(thread.id, "")
        if "Dask-Default-Threads" in name or (name == "MainThread" and not worker):
            key = "fit thread"
        elif name == "MainThread":
            key = "event loop"
        else:
            key = "other threads"
        out[key] = out.get(key, 0.0) + thread.user_time + thread.system_time
    return out


def _per_unit(before: dict, after: dict, n: int) -> dict[str, float]:
    return {k: (after.get(k, 0.0) - before.get(k, 0.0)) / n for k in after}


def fit_loop(fit, units, options) -> dict[str, float]:
    """:func:`usage` per unit of fitting ``units`` one after another (nothing written)."""
    worker = _in_worker()
    before = usage(worker)
    for name, data in units.items():
        fit(dict(data), random_seed=unit_seed(0, name), **options)
    return _per_unit(before, usage(worker), len(units))


def _in_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def engine_usage(client, fit, units, options) -> dict[str, float]:
    """:func:`usage` per unit of ``run_batch`` on ``client`` (one worker, measured there;
    ``None``: in this process)."""
    out = Path(tempfile.mkdtemp(prefix="pmctx-cpu-"))
    try:
        if client is None:
            before = usage()
            run_batch(fit, units, out, options=options, progressbar=False, local=True)
            return _per_unit(before, usage(), len(units))
        (before,) = client.run(usage, True).values()
        table = run_batch(fit, units, out, options=options, progressbar=False, client=client)
        (after,) = client.run(usage, True).values()
        assert (table["status"] == "ok").all()
        return _per_unit(before, after, len(units))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--case", choices=sorted(CASES), default="crp_alpha")
    parser.add_argument("--no-engine", action="store_true", help="only the loops")
    args = parser.parse_args(argv)
    os.environ.setdefault("PMCTX_NO_PROGRESS", "1")
    make_units, fit, options = CASES[args.case]
    units = make_units(args.units)
    clients = {"default": connect(workers=1, tuned=False), "tuned": connect(workers=1)}
    try:
        warm = dict(list(units.items())[:2])
        for client in clients.values():
            client.submit(fit_loop, fit, warm, options, pure=False).result()
        with threadpool_limits(1, user_api="blas"):
            fit_loop(fit, warm, options)
        results: dict[str, dict[str, list[float]]] = {}
        loads = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            with threadpool_limits(1, user_api="blas"):
                row = {"loop": fit_loop(fit, units, options)}
                if not args.no_engine:
                    row["engine, in-process"] = engine_usage(None, fit, units, options)
            for label, client in clients.items():
                task = client.submit(fit_loop, fit, units, options, pure=False)
                row[f"worker loop, {label}"] = task.result()
                if not args.no_engine:
                    row[f"engine, {label}"] = engine_usage(client, fit, units, options)
            for key, measured in row.items():
                measured["ratio"] = measured["cpu"] / row["loop"]["fit thread"]
                for name, value in measured.items():
                    results.setdefault(key, {}).setdefault(name, []).append(value)
            loads.append(os.getloadavg()[0])
    finally:
        for client in clients.values():
            cluster = client.cluster
            client.close()
            cluster.close()
    print(f"{args.case}: {args.units} units x {args.rounds} rounds; load "
          + "->".join(f"{x:.1f}" for x in loads))  # fmt: skip
    for key, measured in results.items():
        parts = []
        for name, values in measured.items():
            scale, fmt = (1.0, ".3f") if name == "ratio" else (1.0, ".0f")
            if name in ("cpu", "fit thread", "event loop", "other threads"):
                scale, fmt = 1000.0, ".2f"
            med = statistics.median(values) * scale
            parts.append(f"{name} {med:{fmt}} [{min(values) * scale:{fmt}}, "
                         f"{max(values) * scale:{fmt}}]")  # fmt: skip
        print(f"  {key}: " + "; ".join(parts))
    print(
        "  (cpu: process CPU, fit thread / event loop / other threads: their CPU, ms per unit;"
        " faults: minor page faults per unit; ratio: process CPU over the same round's loop's"
        " fit thread (this process also runs the clusters' schedulers and nannies); median"
        " [min, max] over rounds)"
    )


if __name__ == "__main__":
    main()

"""Worker CPU per unit against a plain loop's, in paired rounds (a diagnostic, not a table).

``python -m benchmarks.batch_worker_cpu [--units N] [--rounds R] [--case crp_alpha|gum_laplace]``

Each round, in turn: the plain loop in this process (fits only, BLAS limited to 1 thread as
in a Dask worker) and the engine in this process (``local=True``, files written); the same
loop run as one task on the worker of a 1-worker cluster with Dask's default settings, and on
one with :data:`pmctx.batch.cluster.TUNED_CONFIG` (CPU measured in the worker while its event
loop runs beside the task: no engine, only the worker process's surroundings); and the engine
(:func:`pmctx.batch.run_batch`) on each of the two clusters (worker CPU per unit).
Prints the median and range over rounds of CPU ms per unit and of the ratio to the same
round's loop, with the load average. CPU time, not wall time, is the number to trust on a
shared machine.
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


def fit_loop(fit, units, options) -> float:
    """CPU seconds per unit of fitting ``units`` one after another (nothing written)."""
    cpu = time.process_time()
    for name, data in units.items():
        fit(dict(data), random_seed=unit_seed(0, name), **options)
    return (time.process_time() - cpu) / len(units)


def engine_cpu(client, fit, units, options) -> float:
    """Worker CPU seconds per unit of ``run_batch`` on ``client`` (one worker; ``None``: in
    this process)."""
    out = Path(tempfile.mkdtemp(prefix="pmctx-cpu-"))
    try:
        if client is None:
            cpu = time.process_time()
            run_batch(fit, units, out, options=options, progressbar=False, local=True)
            return (time.process_time() - cpu) / len(units)
        before = client.run(time.process_time)
        table = run_batch(fit, units, out, options=options, progressbar=False, client=client)
        after = client.run(time.process_time)
        assert (table["status"] == "ok").all()
        return sum(after[w] - before[w] for w in before) / len(units)
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
            client.run(fit_loop, fit, warm, options)
        with threadpool_limits(1, user_api="blas"):
            fit_loop(fit, warm, options)
        results: dict[str, list[float]] = {}
        loads = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            with threadpool_limits(1, user_api="blas"):
                row = {"loop": fit_loop(fit, units, options)}
                if not args.no_engine:
                    row["engine, in-process"] = engine_cpu(None, fit, units, options)
            for label, client in clients.items():
                cpu = client.submit(fit_loop, fit, units, options, pure=False).result()
                row[f"worker loop, {label}"] = cpu
                if not args.no_engine:
                    row[f"engine, {label}"] = engine_cpu(client, fit, units, options)
            for key, value in row.items():
                results.setdefault(key, []).append(value)
                if key != "loop":
                    results.setdefault(f"{key} / loop", []).append(value / row["loop"])
            loads.append(os.getloadavg()[0])
    finally:
        for client in clients.values():
            cluster = client.cluster
            client.close()
            cluster.close()
    print(f"{args.case}: {args.units} units x {args.rounds} rounds; load "
          + "->".join(f"{x:.1f}" for x in loads))  # fmt: skip
    for key, values in results.items():
        scale, unit = (1.0, "x") if "/ loop" in key else (1000.0, "ms")
        med = statistics.median(values) * scale
        print(f"  {key:32s} median {med:7.3f} {unit}  range {min(values) * scale:.3f}"
              f"-{max(values) * scale:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

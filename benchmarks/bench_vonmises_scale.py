"""Augmented sampler at scale: series vs vectorised vs table kernel, 1 and 2 threads, same run.

Problem: rank R = 10, kappa = 5, a map of uniform random observations (kappa_obs = 2, 30 %
missing) from 100 x 100 to 512 x 512; 20 sweeps of the default ``augmented_sweep``
(a column pass then a row pass) after one warm-up sweep, timed by CPU seconds of this process
(``time.process_time``, all threads) and wall seconds. Kernels: ``"series"``
(:mod:`pmctx.vonmises._numba_series`, the default since session 13), ``"vector"``
(:mod:`pmctx.vonmises._numba_vector`, the default of session 12) and ``"table"`` (the earliest
compiled kernel, :mod:`pmctx.vonmises._numba_chains`), all from the same random stream (they
give the same draws), with ``numba.set_num_threads(1)`` and ``(2)``, timed one after the other
for each size and thread count. Baseline: the table kernel with the same threads and size (the
notes also give the vector kernel's times). The target of issue #17: 512 x 512, 20 sweeps
under 10 s.
"""

from __future__ import annotations

import os
import time

import numba
import numpy as np

from pmctx.vonmises._numba_vector import PARALLEL_MIN_NODES
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.potentials import natural_field

KAPPA, KAPPA_OBS, RANK, N_SWEEPS = 5.0, 2.0, 10, 20


def _problem(size: int):
    rng = np.random.default_rng(size)
    z = rng.uniform(-np.pi, np.pi, (size, size))
    mask = rng.random((size, size)) > 0.3
    return natural_field(z, mask, KAPPA_OBS), np.where(mask, z, 0.0)


def time_sweeps(size: int, kernel: str, threads: int, n_sweeps: int = N_SWEEPS):
    """CPU and wall seconds of ``n_sweeps`` sweeps (after a warm-up sweep)."""
    field, o = _problem(size)
    numba.set_num_threads(threads)
    rng = np.random.default_rng(1)
    o = augmented_sweep(o, field, KAPPA, RANK, rng, kernel=kernel)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n_sweeps):
        o = augmented_sweep(o, field, KAPPA, RANK, rng, kernel=kernel)
    return time.process_time() - cpu, time.perf_counter() - wall


def run(quick: bool = False) -> list[dict]:
    sizes = (100, 200) if quick else (100, 200, 400, 512)
    threads = (1, 2) if numba.config.NUMBA_NUM_THREADS >= 2 else (1,)
    rows = []
    for size in sizes:
        for n_threads in threads:
            times = {k: time_sweeps(size, k, n_threads) for k in ("table", "vector", "series")}
            for kernel, (cpu, wall) in times.items():
                base_cpu, base_wall = times["table"]
                vec_cpu, vec_wall = times["vector"]
                mode = "parallel" if size * size >= PARALLEL_MIN_NODES else "one thread"
                rows.append(
                    {
                        "benchmark": "vonmises-scale",
                        "variant": f"{kernel}, {n_threads} thread(s)",
                        "size": f"{size}x{size} R={RANK}",
                        "seconds_per_sweep": wall / N_SWEEPS,
                        "sweeps_per_s": N_SWEEPS / wall,
                        "ess_per_s": None,
                        "baseline": f"table, {n_threads} thread(s)",
                        "ratio_vs_baseline": base_cpu / cpu,
                        "kernel": kernel,
                        "threads": n_threads,
                        "cpu_s": cpu,
                        "wall_s": wall,
                        "notes": (
                            f"{N_SWEEPS} sweeps: CPU {cpu:.2f} s (table {base_cpu:.2f} s), wall "
                            f"{wall:.2f} s (table {base_wall:.2f} s, vector {vec_wall:.2f} s, "
                            f"vector CPU {vec_cpu:.2f} s); kernel {mode}; "
                            f"load {os.getloadavg()[0]:.1f}"
                        ),
                    }
                )
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows

"""Augmented sampler at scale: 1 and 2 threads, maps from 100 x 100 to 512 x 512.

Problem: rank R = 10, kappa = 5, a map of uniform random observations (kappa_obs = 2, 30 %
missing); 20 sweeps of the default ``augmented_sweep`` (a column pass then a row pass) after
one warm-up sweep, timed by CPU seconds of this process (``time.process_time``, all threads)
and wall seconds, with ``numba.set_num_threads(1)`` and ``(2)`` one after the other for each
size. Baseline: the same size with one thread (the ratio is the wall-clock speed-up of two).
Maps of ``PARALLEL_MIN_NODES`` nodes or more run their passes in threads.
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


def time_sweeps(size: int, threads: int, n_sweeps: int = N_SWEEPS):
    """CPU and wall seconds of ``n_sweeps`` sweeps (after a warm-up sweep)."""
    field, o = _problem(size)
    numba.set_num_threads(threads)
    rng = np.random.default_rng(1)
    o = augmented_sweep(o, field, KAPPA, RANK, rng)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n_sweeps):
        o = augmented_sweep(o, field, KAPPA, RANK, rng)
    return time.process_time() - cpu, time.perf_counter() - wall


def run(quick: bool = False) -> list[dict]:
    sizes = (100, 200) if quick else (100, 200, 400, 512)
    threads = (1, 2) if numba.config.NUMBA_NUM_THREADS >= 2 else (1,)
    rows = []
    for size in sizes:
        times = {n: time_sweeps(size, n) for n in threads}
        base_wall = times[1][1]
        mode = "parallel" if size * size >= PARALLEL_MIN_NODES else "one thread"
        for n_threads, (cpu, wall) in times.items():
            rows.append(
                {
                    "benchmark": "vonmises-scale",
                    "variant": f"{n_threads} thread(s)",
                    "size": f"{size}x{size} R={RANK}",
                    "seconds_per_sweep": wall / N_SWEEPS,
                    "sweeps_per_s": N_SWEEPS / wall,
                    "ess_per_s": None,
                    "baseline": None if n_threads == 1 else "1 thread(s)",
                    "ratio_vs_baseline": None if n_threads == 1 else base_wall / wall,
                    "threads": n_threads,
                    "cpu_s": cpu,
                    "wall_s": wall,
                    "notes": (
                        f"{N_SWEEPS} sweeps: CPU {cpu:.2f} s, wall {wall:.2f} s; kernel {mode}; "
                        f"load {os.getloadavg()[0]:.1f}"
                    ),
                }
            )
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows

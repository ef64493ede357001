"""GPU rows: the orientation-map sweep in JAX and the GUM through numpyro, against the CPU.

Run on a machine with a GPU and the ``pmctx[jax]`` extra; every part writes its own JSON so
that a run cut short keeps what it finished (``benchmarks/gpu_run.sh`` runs all parts).

``--part vonmises``: the augmented sampler's sweep (a column pass then a row pass) on the
problem of :mod:`benchmarks.bench_vonmises_scale` (rank 10, kappa 5, kappa_obs 2, 30 %
missing) at 512 x 512 and 2,048 x 2,048: the compiled CPU sweep
(:func:`pmctx.vonmises.augmented.augmented_sweep`, every thread of the machine) against
:func:`pmctx.vonmises.jax_series.augmented_sweeps` on the default JAX device, in one process.
Both have the same law per sweep (the tests tie them together given the same uniforms), so
the ratio of sweeps per second is the ratio of effective samples per second. JAX's first call
(compilation included) is reported apart from the timed second call.

``--part gum``: the seed 002 section 3.1 GUM (Poisson) at N = 500 (4 x (1000 + 1000)) and
N = 10,000 (4 x (100 + 100)) through :func:`benchmarks.bench_gum_samplers.timed_row`, with the
back ends named by ``--samplers``; the JAX platform is chosen by ``JAX_PLATFORMS`` before
this process starts (``cpu`` or ``cuda``), so CPU and GPU rows come from two processes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

KAPPA, KAPPA_OBS, RANK = 5.0, 2.0, 10
#: (map side, CPU sweeps, JAX sweeps) timed after a warm-up.
VONMISES_PLAN = ((512, 10, 50), (2048, 3, 20))
#: (N, tune = draws per chain)
GUM_PLAN = ((500, 1000), (10_000, 100))


def _problem(size: int):
    from pmctx.vonmises.potentials import natural_field

    rng = np.random.default_rng(size)
    z = rng.uniform(-np.pi, np.pi, (size, size))
    mask = rng.random((size, size)) > 0.3
    return natural_field(z, mask, KAPPA_OBS), np.where(mask, z, 0.0)


def _machine() -> dict:
    import jax

    return {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "jax_device": str(jax.devices()[0].device_kind),
        "jax_platform": jax.devices()[0].platform,
    }


def vonmises_rows(plan=VONMISES_PLAN) -> list[dict]:
    import numba

    from pmctx.vonmises.augmented import augmented_sweep
    from pmctx.vonmises.jax_series import augmented_sweeps

    device = _machine()["jax_device"]
    rows = []
    for size, cpu_sweeps, jax_sweeps in plan:
        field, o = _problem(size)
        rng = np.random.default_rng(1)
        o_cpu = augmented_sweep(o, field, KAPPA, RANK, rng)  # warm-up (and numba's compile)
        start = time.perf_counter()
        for _ in range(cpu_sweeps):
            o_cpu = augmented_sweep(o_cpu, field, KAPPA, RANK, rng)
        cpu_s = (time.perf_counter() - start) / cpu_sweeps
        start = time.perf_counter()
        augmented_sweeps(o, field, KAPPA, RANK, n_sweeps=jax_sweeps, random_seed=0)
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        o_jax = augmented_sweeps(o, field, KAPPA, RANK, n_sweeps=jax_sweeps, random_seed=1)
        jax_s = (time.perf_counter() - start) / jax_sweeps
        # same law: the maps' mean neighbour alignment after the runs should be close
        align = [float(np.mean(np.cos(np.diff(m, axis=1)))) for m in (o_cpu, o_jax)]
        base = {"benchmark": "vonmises_gpu", "size": size, "rank": RANK, "kappa": KAPPA}
        rows.append({**base, "variant": f"numba CPU, {numba.get_num_threads()} threads",
                     "seconds_per_sweep": cpu_s, "sweeps_per_s": 1 / cpu_s,
                     "node_updates_per_s": 2 * size * size / cpu_s, "baseline": "numba CPU",
                     "ratio_vs_baseline": 1.0, "neighbour_alignment": align[0]})  # fmt: skip
        rows.append({**base, "variant": f"JAX {device}", "seconds_per_sweep": jax_s,
                     "sweeps_per_s": 1 / jax_s, "node_updates_per_s": 2 * size * size / jax_s,
                     "first_call_s": first_s, "baseline": "numba CPU",
                     "ratio_vs_baseline": cpu_s / jax_s,
                     "neighbour_alignment": align[1]})  # fmt: skip
        for row in rows[-2:]:
            print(json.dumps(row), flush=True)
    return rows


def gum_rows(samplers, plan=GUM_PLAN, *, chain_method="parallel") -> list[dict]:
    from benchmarks import bench_gum_samplers as bench
    from pmctx.gum import gum
    from pmctx.gum.init import laplace_initvals
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

    bench._listen_to_jax_compiles()
    platform_name = _machine()["jax_platform"]
    rows = []
    for n, steps in plan:
        g = gum(section_3_1_formula(), seed_section_3_1(n, random_seed=0), family="poisson")
        start = time.perf_counter()
        laplace_initvals(g)
        laplace_s = time.perf_counter() - start
        baseline = None  # PyMC's NUTS, when this process runs it first
        for sampler in samplers:
            try:
                extra = {}
                if sampler == "numpyro":
                    extra["nuts_sampler_kwargs"] = {"chain_method": chain_method}
                row = bench.timed_row(g, sampler, n, draws=steps, tune=steps,
                                      laplace_s=laplace_s, baseline=baseline, **extra)  # fmt: skip
            except Exception as err:  # a back end that fails here must not cost the others
                row = {"variant": sampler, "size": n, "error": f"{type(err).__name__}: {err}"}
            baseline = row if sampler == "pymc" else baseline
            row["benchmark"] = "gum_gpu"
            row["jax_platform"] = platform_name if sampler == "numpyro" else "cpu"
            row["chain_method"] = chain_method if sampler == "numpyro" else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("vonmises", "gum"), required=True)
    parser.add_argument("--samplers", default="numpyro", help="comma-separated back ends")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--sizes", default=None, help="comma-separated N of the GUM part")
    parser.add_argument(
        "--chain-method",
        default="parallel",
        choices=("parallel", "vectorized"),
        help="numpyro's: 'vectorized' runs all chains in one call (one GPU)",
    )
    parser.add_argument("out", type=Path, help="JSON file to write")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.part == "vonmises":
        rows = vonmises_rows(((64, 2, 5),) if args.quick else VONMISES_PLAN)
    else:
        plan = ((500, 100),) if args.quick else GUM_PLAN
        if args.sizes:
            plan = tuple((n, s) for n, s in plan if str(n) in args.sizes.split(","))
        rows = gum_rows(args.samplers.split(","), plan, chain_method=args.chain_method)
    payload = {"benchmark": f"{args.part}_gpu", "machine": _machine(), "rows": rows}
    args.out.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()

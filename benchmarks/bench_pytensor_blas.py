"""PyTensor's C backend with and without SciPy's OpenBLAS (pmctx._pytensor_blas), same run.

A GUM of seed 002 section 3.1 (N = 500, Poisson): one log density + gradient evaluation of
``g.model`` (mean of 2,000 after a warm-up) and a plain ``pm.sample`` (PyMC's NUTS, 4 chains x
(400 + 400), one process) whose rate is the minimum bulk ESS over the function values per
second of sampling. ``baseline`` is PyTensor's own default on a pip install
(``PMCTX_SCIPY_BLAS=0``: no BLAS found, matrix products through Python calls); the variant is
pmctx's default. Each row runs in a fresh process that compiled the model once before timing.

Run: ``python -m benchmarks pytensor_blas [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import json, sys, time
import numpy as np
import arviz as az
import pymc as pm
import pytensor
from pmctx.gum import gum
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

draws, tune, chains = (int(v) for v in sys.argv[1:4])
g = gum(section_3_1_formula(), seed_section_3_1(500, random_seed=0), family="poisson")
m = g.model
logp, dlogp, point = m.compile_logp(), m.compile_dlogp(), m.initial_point()
for _ in range(50):
    logp(point), dlogp(point)
start = time.perf_counter()
for _ in range(2000):
    logp(point), dlogp(point)
eval_us = (time.perf_counter() - start) / 2000 * 1e6
with m:  # compile once, untimed
    pm.sample(draws=5, tune=5, chains=1, random_seed=0, progressbar=False,
              compute_convergence_checks=False)
    start = time.perf_counter()
    idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=11,
                      progressbar=False, compute_convergence_checks=False)
    seconds = time.perf_counter() - start
names = [*g.function_names, "intercept"]
ess = float(az.ess(idata, var_names=names).to_array().min())
print(json.dumps({"eval_us": eval_us, "seconds": seconds, "ess": ess,
                  "blas": bool(pytensor.config.blas__ldflags)}))
"""


def _measure(switch: str, draws: int, tune: int, chains: int) -> dict:
    env = {**os.environ, "PMCTX_SCIPY_BLAS": switch, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(draws), str(tune), str(chains)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[dict]:
    draws, tune, chains = (200, 200, 2) if quick else (400, 400, 4)
    size = f"N=500, {chains} x ({tune} + {draws}), NUTS"
    base = _measure("0", draws, tune, chains)
    linked = _measure("1", draws, tune, chains)
    rows = []
    for variant, result in (
        ("PyTensor default (PMCTX_SCIPY_BLAS=0)", base),
        ("SciPy's OpenBLAS (pmctx default)", linked),
    ):
        iterations = chains * (draws + tune)
        rows.append(
            {
                "benchmark": "pytensor_blas",
                "variant": variant,
                "size": size,
                "seconds_per_sweep": result["seconds"] / iterations,
                "sweeps_per_s": iterations / result["seconds"],
                "ess_per_s": result["ess"] / result["seconds"],
                "baseline": "PyTensor default",
                "ratio_vs_baseline": base["seconds"] / result["seconds"],
                "notes": (
                    f"logp+grad {result['eval_us']:.0f} us; pm.sample {result['seconds']:.1f} s;"
                    f" min bulk ESS {result['ess']:.0f}; BLAS linked: {result['blas']}"
                ),
            }
        )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)

"""A plain ``pm.sample()`` on the IBP model: ``IBPGibbs``'s "auto" policy against the old default.

What a user gets from ``with build_model(F, X, K_max=10): pm.sample(step=[IBPGibbs(),
IBPAlphaGibbs(), IBPHyperGibbs()])`` (every hyperparameter learned; PyMC's start, ``Z = 0``;
PyMC's default chains and draws: on the 2-CPU benchmark machine 2 chains x (1000 + 1000),
one after the other) on ``visuomotor_data(1000, random_seed=s)``:
``old`` is ``IBPGibbs(birth_death=0, sweeps=1)``, what a plain ``pm.sample()`` ran before the
step chose its birth/death proposals from the trial count, ``auto`` is ``IBPGibbs()`` (5
proposals per sweep from 500 trials on). Per fit: wall seconds of ``pm.sample``, bulk ESS and
R-hat of ``n_shared`` (features owned by two or more trials) and ``n_active``.

Run: ``python -m benchmarks.ibp_plain_sample [--seeds 0 1] [--out PATH]``; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
from pmctx.models.ibp import build_model

from pmctx.ibp.data import visuomotor_data
from pmctx.steps.ibp_gibbs import IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs

VARIANTS = {"old": dict(birth_death=0, sweeps=1), "auto": {}}


def fit(data, seed: int, variant: str) -> dict:
    """One plain ``pm.sample`` with the variant's ``IBPGibbs``; returns its row."""
    model = build_model(data.F, data.X, K_max=10, reconstructions=False)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        steps = [IBPGibbs(**VARIANTS[variant]), IBPAlphaGibbs(), IBPHyperGibbs()]
        start = time.perf_counter()
        idata = pm.sample(
            step=steps, random_seed=seed + 10, progressbar=False, compute_convergence_checks=False
        )
        wall = time.perf_counter() - start
    n_shared = (idata.posterior["Z"].values.sum(axis=2) >= 2).sum(axis=-1).astype(float)
    n_active = idata.sample_stats["n_active"].values.astype(float)
    return dict(
        seed=seed,
        variant=variant,
        wall_s=round(wall, 1),
        ess_n_shared=round(float(az.ess(n_shared)), 1),
        rhat_n_shared=round(float(az.rhat(n_shared)), 3),
        ess_n_active=round(float(az.ess(n_active)), 1),
        rhat_n_active=round(float(az.rhat(n_active)), 3),
        mean_n_shared=round(float(np.mean(n_shared)), 3),
        load_after=os.getloadavg(),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--out", default="benchmarks/results/ibp_plain_sample.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'seed':>4} {'variant':>7} {'wall s':>7} {'ESS n_shared':>12} {'R-hat':>6}")
    for seed in args.seeds:
        data = visuomotor_data(1000, random_seed=seed)
        for variant in VARIANTS:
            r = fit(data, seed, variant)
            rows.append(r)
            print(f"{seed:>4} {variant:>7} {r['wall_s']:>7} {r['ess_n_shared']:>12} "
                  f"{r['rhat_n_shared']:>6}", flush=True)  # fmt: skip
            out.write_text(json.dumps({"benchmark": "ibp_plain_sample", "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

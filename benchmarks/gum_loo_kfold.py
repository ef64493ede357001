"""PSIS-LOO vs exact K-fold refits for the GUM of seed 002 section 3.1 and its GLM baseline.

For each model: the share of Pareto k > 0.7 of ``az.loo`` on the full-data fit, its PSIS
elpd, and the elpd of exact K-fold cross-validation (:func:`pmctx.kfold.kfold` with
:func:`pmctx.kfold.gum_functions`): each fold refitted through the model's own fit, its
held-out rows scored by the exact held-out density (``GumModel.predict``,
:mod:`pmctx.gum.heldout`). K-fold trains on (K-1)/K of the data, so its elpd is a little
below leave-one-out's by construction; the two agree within their standard errors when PSIS
is reliable. Writes ``benchmarks/results/gum_loo_kfold.json``.

Run: ``python -m benchmarks.gum_loo_kfold [--n 200] [--k 10] [--method laplace|nuts]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np

from pmctx.gum import gum
from pmctx.gum.glm import glm
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
from pmctx.kfold import gum_functions, kfold

HERE = Path(__file__).resolve().parent


def builders(max_points: int) -> dict:
    return {
        "gum": lambda d: gum(section_3_1_formula(max_points=max_points), d, family="poisson"),
        "glm": lambda d: glm("y", ["x1", "x2", "x3"], d, family="poisson"),
    }


def full_fit(g, method: str, draws: int, seed: int):
    if method == "laplace":
        return g.laplace(draws=draws, random_seed=seed, posterior_predictive=False)
    return g.sample(draws=draws // 4, chains=4, random_seed=seed, posterior_predictive=False)


def run(n=200, k=10, method="laplace", draws=4000, max_points=24, seed=0) -> list[dict]:
    warnings.simplefilter("ignore")
    data = seed_section_3_1(n, random_seed=seed)
    rows = []
    for name, build in builders(max_points).items():
        start = time.perf_counter()
        idata = full_fit(build(data), method, draws, seed)
        loo = az.loo(idata, pointwise=True)
        options = {"draws": draws} if method == "laplace" else {"draws": draws // 4, "chains": 4}
        fit, log_predictive = gum_functions(build, method=method, fit_options=options)
        exact = kfold(fit, log_predictive, data, k=k, random_seed=seed)
        diff = np.asarray(exact.loo_i) - np.asarray(loo.loo_i)
        rows.append({
            "model": name, "n": n, "k": k, "method": method, "draws": draws,
            "share_k_gt_0.7": float(np.mean(np.asarray(loo.pareto_k) > 0.7)),
            "max_pareto_k": float(np.max(loo.pareto_k)),
            "elpd_psis": float(loo.elpd_loo), "se_psis": float(loo.se),
            "elpd_kfold": float(exact.elpd_loo), "se_kfold": float(exact.se),
            "kfold_minus_psis": float(diff.sum()),
            "se_of_difference": float(np.sqrt(n * np.var(diff))),
            "seconds": time.perf_counter() - start,
        })  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--method", choices=("laplace", "nuts"), default="laplace")
    parser.add_argument("--draws", type=int, default=4000)
    args = parser.parse_args(argv)
    rows = run(n=args.n, k=args.k, method=args.method, draws=args.draws)
    out = HERE / "results" / f"gum_loo_kfold_{args.method}.json"
    out.write_text(json.dumps({"rows": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Model comparison by PSIS alone, by ``pmctx.compare`` (exact refits where PSIS fails) and by
exact refits of every unit, with the time each took.

Three cases (issue 30):

* ``gum``: seed 002 section 3.1, N = 200 Poisson rows, the GUM against its GLM baseline,
  Laplace fits; PSIS flags about 30% of the GUM's rows, so ``pmctx.compare`` scores both
  models by exact 10-fold Laplace refits on shared folds. Exact reference: exact 20-fold
  (another partition; leave-one-out would take 400 refits).
* ``ibp``: forces given cues (``F``) of simulated bars data (4 true features; sigma_n, lam
  and eps fixed at the generating values), K_max 6 against K_max 2, with warm-started short
  MCMC refits. Exact reference: exact 10-fold with the same warm-started refits.
* ``crp``: a subject's responses under two CRP variants (alpha 0.1 and 10, logistic
  response model). Exact reference: brute-force leave-one-out (one refit per response).

Writes ``benchmarks/results/compare_refits.json``.

Run: ``python -m benchmarks.compare_refits [--cases gum ibp crp] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np

from pmctx.compare import compare
from pmctx.kfold import kfold
from pmctx.refit import as_refitter, crp_response_refitter, gum_refitter

HERE = Path(__file__).resolve().parent


def _psis(idata, var_name=None):
    from pmctx.io import log_likelihood_view

    view = idata if var_name is None or var_name in idata.log_likelihood else \
        log_likelihood_view(idata, var_name)  # fmt: skip
    return az.loo(view, var_name=var_name, pointwise=True)


def _rows(case, fits, refitters, exact_k, exact_label, var_name=None, **compare_options):
    rows = {}
    for name, idata in fits.items():
        start = time.perf_counter()
        loo = _psis(idata, var_name)
        rows[name] = {
            "case": case, "model": name, "n": int(np.size(loo.loo_i)),
            "elpd_psis": float(loo.elpd_loo), "se_psis": float(loo.se),
            "share_k_gt_0.7": float(np.mean(np.asarray(loo.pareto_k) > 0.7)),
            "seconds_psis": time.perf_counter() - start,
        }  # fmt: skip
    start = time.perf_counter()
    table = compare(fits, refit=refitters, var_name=var_name, **compare_options)
    seconds = time.perf_counter() - start
    for name in fits:
        rows[name].update(
            elpd_compare=float(table.loc[name, "elpd_loo"]),
            se_compare=float(table.loc[name, "se"]),
            rank_compare=int(table.loc[name, "rank"]), refit=str(table.loc[name, "refit"]),
            n_refit=int(table.loc[name, "n_refit"]), seconds_compare_all=seconds,
        )  # fmt: skip
    for name, r in refitters.items():
        start = time.perf_counter()
        exact = kfold(r.fit, r.log_predictive, r.data, k=exact_k or r.n_units(), split=r.split,
                      random_seed=1)  # fmt: skip
        rows[name].update(
            elpd_exact=float(exact.elpd_loo), se_exact=float(exact.se), exact=exact_label,
            seconds_exact=time.perf_counter() - start,
        )  # fmt: skip
    for key in ("psis", "exact"):
        order = sorted(rows, key=lambda m: -rows[m][f"elpd_{key}"])
        for rank, name in enumerate(order):
            rows[name][f"rank_{key}"] = rank
    return list(rows.values())


def gum_case(quick=False):
    from benchmarks.gum_loo_kfold import builders, full_fit
    from pmctx.gum.synthetic import seed_section_3_1

    n, draws = (80, 1000) if quick else (200, 4000)
    data = seed_section_3_1(n, random_seed=0)
    fits, refitters = {}, {}
    for name, build in builders(24).items():
        fits[name] = full_fit(build(data), "laplace", draws, 0)
        refitters[name] = gum_refitter(build, data, fit_options={"draws": draws})
    return _rows("gum", fits, refitters, 20, "exact 20-fold (Laplace)")


def ibp_case(quick=False):
    from pmctx.models.ibp import refit_functions, sample

    from pmctx.ibp.data import visuomotor_data

    n, draws = (24, 150) if quick else (60, 400)
    data = visuomotor_data(n_trials=n, random_seed=0)
    options = dict(draws=draws, tune=draws, chains=2, cores=1, random_seed=1, sigma_n=0.3,
                   lam=0.9, eps=0.05, progressbar=False, check_convergence=False)  # fmt: skip
    fits = {f"K_max={k}": sample(data.F, data.X, K_max=k, **options) for k in (6, 2)}
    refitters = {name: as_refitter(refit_functions(idata, var_name="F", draws=draws // 2))
                 for name, idata in fits.items()}  # fmt: skip
    return _rows("ibp", fits, refitters, 10, "exact 10-fold (warm-started MCMC)", var_name="F")


def crp_case(quick=False):
    from scipy.special import expit

    from pmctx.conditioning import particle_filter, shipped_design

    design = shipped_design("renewal_aba", n_acquisition=8, n_extinction=8, n_test=4)
    V = {a: particle_filter(design, alpha=a, n_particles=500, random_seed=1).V for a in (0.1, 10.0)}
    rng = np.random.default_rng(0)
    y = (rng.random(V[0.1].shape) < expit(-1 + 5 * (V[0.1] - 0.5))).astype(float)
    fits, refitters = {}, {}
    for a in (0.1, 10.0):
        r = crp_response_refitter(y, V[a], n_draws=500 if quick else 2000)
        idata = r.fit(r.data)
        idata.add_groups(log_likelihood={"responses": r.log_predictive(idata, r.data)[None]})
        fits[f"alpha={a:g}"], refitters[f"alpha={a:g}"] = idata, r
    return _rows("crp", fits, refitters, None, "exact leave-one-out")


CASES = {"gum": gum_case, "ibp": ibp_case, "crp": crp_case}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    rows = []
    for case in args.cases:
        rows += CASES[case](quick=args.quick)
        for row in rows[-2:]:
            print(
                f"{row['case']:4} {row['model']:12} psis {row['elpd_psis']:8.1f} "
                f"(k>0.7 {row['share_k_gt_0.7']:4.0%}, rank {row['rank_psis']}) | compare "
                f"{row['elpd_compare']:8.1f} (rank {row['rank_compare']}, {row['refit'] or 'psis'}"
                f", {row['seconds_compare_all']:.0f} s both) | {row['exact']} "
                f"{row['elpd_exact']:8.1f} ± {row['se_exact']:.1f} (rank {row['rank_exact']}, "
                f"{row['seconds_exact']:.0f} s)",
                flush=True,
            )
    out = HERE / "results" / ("compare_refits_quick.json" if args.quick else "compare_refits.json")
    out.write_text(json.dumps({"rows": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""GUM benchmarks: seed 002 section 3.1 fitted by Laplace (with hyperparameter fitting), NUTS
and ADVI at N=500; Laplace and minibatch ADVI on the inducing-grid (sparse) model at N=10,000
and 100,000. One-shot fits report their total wall time in ``seconds_per_sweep`` (one
"sweep" = one complete fit); NUTS reports seconds per draw and bulk ESS per second.
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import pymc as pm

from pmctx.gum import gum
from pmctx.gum.hyper import fit_evidence
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def _row(variant, size, seconds, *, baseline=None, baseline_seconds=None, ess=None, notes=""):
    return {
        "benchmark": "gum",
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": 1.0 / seconds if seconds else None,
        "ess_per_s": ess,
        "baseline": baseline,
        "ratio_vs_baseline": baseline_seconds / seconds if baseline_seconds else None,
        "notes": notes,
    }


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _model(n, max_points, seed=0):
    return gum(
        section_3_1_formula(max_points=max_points), seed_section_3_1(n, seed=seed), family="poisson"
    )


def run(quick: bool = False) -> list[dict]:
    warnings.simplefilter("ignore")
    rows = []
    n = 200 if quick else 500
    draws = 100 if quick else 500
    g = _model(n, 32)
    g.fit_laplace()  # warm numpy/threadpool once; not timed
    g = _model(n, 32)
    _, hyper_s = _timed(lambda: (fit_evidence(g), g.laplace(draws=1000)))
    g = _model(n, 32)
    _, laplace_s = _timed(lambda: g.laplace(draws=1000))
    g = _model(n, 32)
    compile_start = time.perf_counter()
    _ = g.model.compile_logp()
    compile_s = time.perf_counter() - compile_start
    nuts, nuts_s = _timed(lambda: g.sample(draws=draws, tune=draws, chains=2, seed=1, cores=1))
    ess = float(az.ess(nuts, var_names=g.function_names).to_array().min())
    _advi, advi_s = _timed(lambda: g.advi(n=3000 if quick else 10000, draws=500, seed=1))
    size = f"N={n}, 3 GPs x 32 pts"
    rows.append(
        _row(
            "nuts",
            size,
            nuts_s / (2 * 2 * draws),
            ess=ess / nuts_s,
            notes=f"per draw incl. tune; total {nuts_s:.1f} s, min bulk ESS {ess:.0f}",
        )
    )
    rows.append(_row("nuts_total", size, nuts_s, notes="whole pm.sample call (2 chains)"))
    rows.append(
        _row(
            "laplace+evidence_hyper",
            size,
            hyper_s,
            baseline="nuts_total",
            baseline_seconds=nuts_s,
            notes="lengthscales by evidence + 1000 draws",
        )
    )
    rows.append(
        _row(
            "laplace",
            size,
            laplace_s,
            baseline="nuts_total",
            baseline_seconds=nuts_s,
            notes="fixed hyperparameters, 4 Newton starts + 1000 draws",
        )
    )
    rows.append(
        _row(
            "advi",
            size,
            advi_s,
            baseline="nuts_total",
            baseline_seconds=nuts_s,
            notes=f"mean-field, started at the MAP; model compile {compile_s:.1f} s",
        )
    )
    for big in (10_000,) if quick else (10_000, 100_000):
        g = _model(big, 32)
        result, lap_s = _timed(lambda g=g: g.fit_laplace(n_starts=2))
        g.laplace(draws=200, log_likelihood=False, result=result)
        _, advi_big_s = _timed(
            lambda g=g: g.advi(
                n=3000 if quick else 10000,
                minibatch_size=2000,
                draws=200,
                seed=1,
                start_at_map=False,
                log_likelihood=False,
                obj_optimizer=pm.adam(learning_rate=0.05),
            )
        )
        size = f"N={big}, sparse grid 32"
        rows.append(
            _row(
                "advi_minibatch",
                size,
                advi_big_s,
                notes="cold-start mean-field ADVI, batches of 2000 (includes compile)",
            )
        )
        rows.append(
            _row(
                "laplace_sparse",
                size,
                lap_s,
                baseline="advi_minibatch",
                baseline_seconds=advi_big_s,
                notes="MAP + Hessian + evidence, 2 Newton starts",
            )
        )
    return rows

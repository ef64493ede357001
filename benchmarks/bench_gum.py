"""GUM benchmarks (seed 002 section 3.1, Poisson ``f1(x1) f2(x2) + f3(x3)``, 32-point grids).

Rows (each reports wall seconds and, in ``notes``, the process CPU seconds, which are the
honest number on a shared machine):

* ``nuts_laplace_metric``: NUTS 4 chains x 1000 draws (+1000 tune) at N=500 with the Laplace
  covariance as dense mass matrix (the default of ``GumModel.sample``), C backend;
  baseline ``nuts_diag`` = pm.sample's diagonal adaptation, 1 chain x 200 (+200), ESS/s ratio;
* ``nuts_numba``: the same as the first row with ``compile_kwargs={"mode": "NUMBA"}``;
* ``nuts_nutpie_lowrank``: nutpie with its low-rank mass matrix (when the optional extra is
  installed), compile and sampling CPU seconds reported apart;
* ``nuts_grid_10k``: NUTS at N=10,000 on the inducing-grid model (the sparse path of this
  package; HSGP is not implemented), 4 x 500 (+500), on the backend ``GumModel.sample``
  picks by itself (nutpie when installed, else pm.sample with the Laplace metric);
* ``laplace_evidence_100k``: Laplace with evidence-fitted lengthscales at N=100,000
  (L-BFGS-B with the evidence gradient), then 1000 draws reusing the final Newton fit;
  baseline ``laplace_evidence_nelder_mead`` = the derivative-free search.
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import pymc as pm

from pmctx.gum import gum
from pmctx.gum.hyper import fit_evidence
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def _row(variant, size, seconds, *, baseline=None, ratio=None, ess=None, notes=""):
    return {
        "benchmark": "gum",
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": 1.0 / seconds if seconds else None,
        "ess_per_s": ess,
        "baseline": baseline,
        "ratio_vs_baseline": ratio,
        "notes": notes,
    }


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _model(n, max_points=32, seed=0):
    return gum(
        section_3_1_formula(max_points=max_points),
        seed_section_3_1(n, random_seed=seed),
        family="poisson",
    )


def _min_ess(g, idata):
    return float(az.ess(idata, var_names=g.function_names).to_array().min())


def _nuts(g, draws, chains, backend="pymc", **kwargs):
    return g.sample(
        backend=backend,
        draws=draws,
        tune=draws,
        chains=chains,
        cores=1,
        random_seed=1,
        posterior_predictive=False,
        compute_convergence_checks=False,
        **kwargs,
    )


def run(quick: bool = False) -> list[dict]:
    warnings.simplefilter("ignore")
    return nuts_rows(quick) + grid_rows(quick) + laplace_rows(quick)


def nuts_rows(quick: bool = False) -> list[dict]:
    rows = []
    n = 200 if quick else 500
    draws, chains = (200, 2) if quick else (1000, 4)
    size = f"N={n}, {chains}x{draws}"
    g = _model(n)
    g.fit_laplace()  # the MAP and covariance the sampler starts from; not timed
    g.model.compile_logp()  # warm the C cache
    with g.model:  # PyMC's own diagonal adaptation: a NUTS step of our own replaces the metric
        diag = pm.NUTS(target_accept=0.9)
    base, base_s, base_cpu = _timed(lambda: _nuts(g, 200, 1, step=diag))
    base_rate = _min_ess(g, base) / base_cpu
    steps_base = float(base.sample_stats.n_steps.mean())
    nuts, nuts_s, nuts_cpu = _timed(lambda: _nuts(g, draws, chains))
    ess = _min_ess(g, nuts)
    steps = float(nuts.sample_stats.n_steps.mean())
    rows.append(
        _row(
            "nuts_laplace_metric",
            size,
            nuts_s,
            ess=ess / nuts_s,
            baseline="nuts_diag (1x200)",
            ratio=(ess / nuts_cpu) / base_rate,
            notes=f"cpu {nuts_cpu:.1f} s; min bulk ESS {ess:.0f}; {steps:.0f} leapfrog/draw "
            f"(diag: {steps_base:.0f}); ratio = ESS per CPU-s",
        )
    )
    rows.append(
        _row(
            "nuts_diag",
            f"N={n}, 1x200",
            base_s,
            ess=_min_ess(g, base) / base_s,
            notes=f"cpu {base_cpu:.1f} s; pm.sample diagonal adaptation from the MAP",
        )
    )
    numba, numba_s, numba_cpu = _timed(
        lambda: _nuts(g, draws, chains, compile_kwargs={"mode": "NUMBA"})
    )
    rows.append(
        _row(
            "nuts_numba",
            size,
            numba_s,
            ess=_min_ess(g, numba) / numba_s,
            baseline="nuts_laplace_metric",
            ratio=nuts_cpu / numba_cpu,
            notes=f"cpu {numba_cpu:.1f} s incl. numba compile; ratio = CPU time C / numba",
        )
    )
    rows.extend(nutpie_rows(g, n, draws, chains, size, nuts_cpu))
    return rows


def nutpie_rows(g, n, draws, chains, size, pymc_cpu) -> list[dict]:
    """nutpie (low-rank mass matrix), compile and sampling timed apart; skipped when the
    optional nutpie extra is not installed."""
    from pmctx.gum.backends import nutpie_available

    if not nutpie_available():
        return []
    import nutpie

    compiled, compile_s, compile_cpu = _timed(
        lambda: nutpie.compile_pymc_model(g.model, initial_points=g.map_point())
    )
    idata, wall, cpu = _timed(
        lambda: nutpie.sample(
            compiled,
            draws=draws,
            tune=draws,
            chains=chains,
            cores=1,
            random_seed=1,
            progress_bar=False,
            low_rank_modified_mass_matrix=True,
        )
    )
    ess = _min_ess(g, idata)
    steps = float(idata.sample_stats.n_steps.mean())
    return [
        _row(
            "nuts_nutpie_lowrank",
            size,
            wall,
            ess=ess / wall,
            baseline="nuts_laplace_metric",
            ratio=pymc_cpu / (cpu + compile_cpu),
            notes=f"cpu {cpu:.1f} s sampling + {compile_cpu:.1f} s compile (wall {compile_s:.1f}); "
            f"min bulk ESS {ess:.0f}; {steps:.1f} leapfrog/draw; ratio = CPU pm.sample / "
            "nutpie incl. compile",
        )
    ]


def grid_rows(quick: bool = False) -> list[dict]:
    rows = []
    chains = 2 if quick else 4
    big = 2000 if quick else 10_000
    g = _model(big)
    g.fit_laplace(n_starts=2)
    from pmctx.gum.backends import choose_backend

    draws = 200 if quick else 500
    backend = choose_backend("auto", draws=draws, tune=draws, chains=chains, pymc_only=False)
    grid, grid_s, grid_cpu = _timed(lambda: _nuts(g, draws, chains, backend=backend))
    rows.append(
        _row(
            "nuts_grid_10k",
            f"N={big}, {chains}x{200 if quick else 500}",
            grid_s,
            ess=_min_ess(g, grid) / grid_s,
            notes=f"cpu {grid_cpu:.1f} s incl. compile; inducing grid (not HSGP); backend "
            f"{backend} (GumModel.sample's auto choice)",
        )
    )
    return rows


def laplace_rows(quick: bool = False) -> list[dict]:
    """Evidence fit with its gradient (L-BFGS-B) against the derivative-free Nelder-Mead
    search, both on the sparse Hessians of :mod:`pmctx.gum.curvature`; 1000 draws reuse the
    final fit."""
    rows, timings = [], {}
    huge = 10_000 if quick else 100_000
    for gradient in (True, False):
        g = _model(huge)
        (result, _), wall, cpu = _timed(
            lambda g=g, gradient=gradient: (
                fit_evidence(g, gradient=gradient),
                g.laplace(draws=1000, log_likelihood=False, posterior_predictive=False),
            )
        )
        timings[gradient] = (wall, cpu, result)
    (wall, cpu, result), (nm_wall, nm_cpu, nm) = timings[True], timings[False]
    rows.append(
        _row(
            "laplace_evidence_100k",
            f"N={huge}",
            wall,
            baseline="laplace_evidence_nelder_mead",
            ratio=nm_cpu / cpu,
            notes=f"cpu {cpu:.1f} s; L-BFGS-B with the evidence gradient, "
            f"{result.n_evaluations} evaluations, log evidence {result.objective:.2f}; + 1000 "
            "draws reusing the fit; ratio = CPU time Nelder-Mead / gradient",
        )
    )
    rows.append(
        _row(
            "laplace_evidence_nelder_mead",
            f"N={huge}",
            nm_wall,
            notes=f"cpu {nm_cpu:.1f} s; Nelder-Mead, {nm.n_evaluations} evaluations, log "
            f"evidence {nm.objective:.2f} (before the sparse Hessians: cpu 67.8 s)",
        )
    )
    return rows

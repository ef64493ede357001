"""Latent-cause model: particle-filter time and collapsed-Gibbs sweeps/s.

* Particle filter over a 200-trial renewal design (acquisition 80 in A, extinction 80 in B,
  test 40 in A; alpha = 0.1) with M = 100 and M = 1,000 particles, plus the local MAP.
  One "sweep" is one full pass of the filter over all trials. Target: M=1000, T=200 < 0.5 s.
* The collapsed Gibbs step (z sweep + conjugate weights/theta refresh) against
  ``pm.CategoricalGibbsMetropolis`` on z, on the same PyMC model (40-trial ABA design,
  K = 10 causes). Both are called through ``step(point)``; one sweep visits every z_t once.
  ``ess_per_s`` of the collapsed step is the ESS of the number of occupied causes per second.
* The temporal (power-law kernel) prior at M = 1,000, T = 200 (target < 1 s), against the CRP
  filter on the same design.
* Per-subject fits on a 100-trial design (``recovery_design(100)``, linear-Gaussian CR):
  the ML fit of each LCM variant (5 Nelder-Mead starts, M = 100, common random numbers) and
  the full posterior of ``lcm`` (``sample_subject``, 2 chains): the pseudo-marginal sampler
  (PMMH on the filter parameters + NUTS, the baseline) and the same on the deterministic
  local MAP; ``ess_per_s`` is the bulk ESS of alpha per second, the notes give ESS per 1,000
  draws of every parameter.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pymc as pm
from pmctx.models.crp_conditioning import build_model

from pmctx.conditioning import particle_filter, shipped_design
from pmctx.steps.crp_gibbs import CRPCollapsedGibbs


def _row(
    benchmark, variant, size, seconds, *, baseline=None, base_seconds=None, ess=None, notes=""
):
    return {
        "benchmark": benchmark,
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": 1.0 / seconds,
        "ess_per_s": ess,
        "baseline": baseline,
        "ratio_vs_baseline": None if base_seconds is None else base_seconds / seconds,
        "notes": notes,
    }


def _best_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_filter(quick):
    design = shipped_design("renewal_aba", n_acquisition=80, n_extinction=80, n_test=40)
    particle_filter(design, n_particles=10, random_seed=0)  # compile / load the numba cache
    repeats = 2 if quick else 5
    rows = []
    t_map = _best_time(lambda: particle_filter(design, method="local_map", random_seed=0), repeats)
    rows.append(_row("crp_filter", "local_map", "T=200, M=1", t_map))
    t100 = _best_time(lambda: particle_filter(design, n_particles=100, random_seed=0), repeats)
    rows.append(_row("crp_filter", "particle", "T=200, M=100", t100))
    t1000 = _best_time(lambda: particle_filter(design, n_particles=1000, random_seed=0), repeats)
    rows.append(
        _row(
            "crp_filter",
            "particle",
            "T=200, M=1000",
            t1000,
            baseline="particle M=100",
            base_seconds=t100,
            notes=f"target < 0.5 s: {'met' if t1000 < 0.5 else 'NOT met'}",
        )
    )
    return rows


def bench_gibbs(quick):
    design = shipped_design("renewal_aba", n_acquisition=15, n_extinction=15, n_test=10)
    F = design.to_array()
    model = build_model(design, alpha=1.0, max_causes=10)
    coded = np.where(np.isnan(F), -1, F).astype(np.int64)
    with model:
        ours = CRPCollapsedGibbs(
            [model["z"], model["weights"], model["theta"]], features=coded, alpha=1.0, rng=0
        )
        cgm = pm.CategoricalGibbsMetropolis([model["z"]])
    point = model.initial_point()
    n_ours = 500 if quick else 5000
    n_cgm = 20 if quick else 200
    ours.step(point)
    occupied = np.empty(n_ours)
    start = time.perf_counter()
    p = point
    for i in range(n_ours):
        p, stats = ours.step(p)
        occupied[i] = stats[0]["n_occupied"]
    t_ours = (time.perf_counter() - start) / n_ours
    ess = float(az.ess(occupied[None, :])) / (t_ours * n_ours)
    cgm.step(point)
    start = time.perf_counter()
    p = point
    for _ in range(n_cgm):
        p, _stats = cgm.step(p)
    t_cgm = (time.perf_counter() - start) / n_cgm
    size = f"T={F.shape[0]}, K=10, D={F.shape[1]}"
    return [
        _row(
            "crp_gibbs",
            "pm.CategoricalGibbsMetropolis (z only)",
            size,
            t_cgm,
            notes="weights/theta held fixed; needs NUTS for them on top",
        ),
        _row(
            "crp_gibbs",
            "CRPCollapsedGibbs (z + weights + theta)",
            size,
            t_ours,
            baseline="pm.CategoricalGibbsMetropolis (z only)",
            base_seconds=t_cgm,
            ess=ess,
            notes="ess of n_occupied",
        ),
    ]


def bench_temporal(quick):
    design = shipped_design("renewal_aba", n_acquisition=80, n_extinction=80, n_test=40)
    particle_filter(design, n_particles=10, temporal_kernel="power", random_seed=0)  # compile
    repeats = 2 if quick else 5
    t_crp = _best_time(lambda: particle_filter(design, n_particles=1000, random_seed=0), repeats)
    t_tmp = _best_time(
        lambda: particle_filter(design, n_particles=1000, temporal_kernel="power", random_seed=0),
        repeats,
    )
    # CPU time as well: on a shared machine wall-clock time mostly measures the queue.
    cpu = []
    for _ in range(repeats):
        start = time.process_time()
        particle_filter(design, n_particles=1000, temporal_kernel="power", random_seed=0)
        cpu.append(time.process_time() - start)
    return [
        _row("crp_filter", "particle, CRP prior", "T=200, M=1000", t_crp),
        _row(
            "crp_filter",
            "particle, temporal power-law prior",
            "T=200, M=1000",
            t_tmp,
            baseline="particle, CRP prior",
            base_seconds=t_crp,
            notes=f"target < 1 s: {'met' if t_tmp < 1.0 else 'NOT met'} (wall); "
            f"CPU time {min(cpu):.3f} s",
        ),
    ]


def bench_subject_fits(quick):
    from pmctx.conditioning.fitting import (
        LCM_VARIANTS,
        fit_subject,
        recovery_design,
        simulate_subject,
    )
    from pmctx.conditioning.posterior import sample_subject

    design = recovery_design(100)
    truth = {"alpha": 0.5, "a": 1.0, "stickiness": 1.0, "gain": 1.0, "sd": 0.1}
    data = simulate_subject(design, truth, variant="lcm_sticky", rng=0)
    rows = []
    n_starts = 2 if quick else 5
    for variant in LCM_VARIANTS:
        fit = fit_subject(
            data["responses"], design, variant=variant, n_starts=n_starts, random_seed=1
        )
        rows.append(
            _row(
                "crp_subject_fit",
                f"ML {variant} ({n_starts} starts)",
                "T=100, M=100",
                fit.seconds,
                notes=f"{fit.n_evals} filter runs",
            )
        )
    draws = 200 if quick else 1000
    names = ["alpha", "a", "gain", "level", "sd"]
    base = None
    # PMMH + NUTS is the baseline: the particle filter's likelihood, sampled exactly.
    for label, kw in [
        ("PMMH + NUTS", {}),
        ("PMMH + NUTS, local MAP (exact likelihood)", dict(method="local_map")),
    ]:
        start = time.perf_counter()
        idata = sample_subject(
            data["responses"],
            design,
            variant="lcm",
            draws=draws,
            tune=draws,
            chains=2,
            random_seed=2,
            **kw,
        )
        seconds = time.perf_counter() - start
        ess = az.ess(idata, var_names=names)
        ess_alpha = float(ess["alpha"])
        per_1000 = {p: float(ess[p]) * 1000 / (2 * draws) for p in names}
        if base is None:
            base = ess_alpha / seconds
        rows.append(
            _row(
                "crp_subject_fit",
                f"posterior lcm ({label}, 2 chains)",
                f"T=100, M=100, {draws}+{draws} draws/chain",
                seconds,
                ess=ess_alpha / seconds,
                baseline="PMMH + NUTS",
                notes=f"ESS(alpha)/s vs baseline x{ess_alpha / seconds / base:.2f}; "
                "ESS per 1000 draws "
                + ", ".join(f"{p} {v:.0f}" for p, v in per_1000.items())
                + f"; particle loglik sd {idata.posterior.attrs['particle_loglik_sd']:.2f}",
            )
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    return [
        *bench_filter(quick),
        *bench_temporal(quick),
        *bench_gibbs(quick),
        *bench_subject_fits(quick),
    ]

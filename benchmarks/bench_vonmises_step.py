"""Orientation-map step: CPU per stored draw, and ESS per CPU second at 1 vs 8 sweeps per draw.

Data: the demo's (``pmctx demo``: a 50 x 50 prior map, R = 5, kappa = 5, seed 0; noisy
observations kappa_obs = 2 with 25 % missing, seed 1; 24 x 24 in ``--quick``).

1. CPU per call of ``AugmentedVonMisesGibbs.step`` (the work PyMC does per stored draw, less
   its own trace bookkeeping), with the stored ``log_joint`` stat computed the earlier way
   (NumPy ``logsumexp``, :func:`pmctx.vonmises.potentials.log_joint`) and compiled
   (:func:`pmctx.vonmises._numba_vector.log_joint_compiled`), at 1 and 8 sweeps per draw, and
   the kernel sweep alone. Baseline: the earlier ``log_joint`` at 1 sweep, same run.
2. ``reconstruct`` as a user runs it (4 chains started apart at the missing pixels, one
   process so that ``time.process_time`` sees all the work) at 1 and 8 sweeps per stored
   draw: CPU seconds of the whole ``pm.sample`` call, bulk ESS and R-hat of the worst node's
   theta (circular, on cos/sin) and of the pinwheel count (pmctx's convergence report), and
   ESS per CPU second. Baseline: 1 sweep per draw, same run.
"""

from __future__ import annotations

import os
import time

import numpy as np

QUICK_PLAN = {"size": 24, "calls": 40, "draws": 150, "tune": 50}
FULL_PLAN = {"size": 50, "calls": 200, "draws": 500, "tune": 500}


def _demo_data(size: int):
    from pmctx.models.vonmises_map import noisy_observations, o_to_theta, sample_prior

    truth = o_to_theta(sample_prior((size, size), kappa=5.0, rank=5, n_sweeps=30, random_seed=0))
    return noisy_observations(truth, kappa_obs=2.0, missing=0.25, random_seed=1)


def _per_call_rows(theta_obs, calls: int) -> list[dict]:
    from pmctx.models.vonmises_map import build_model, theta_to_o

    import pmctx.steps.vonmises as steps_module
    from pmctx.steps.vonmises import AugmentedVonMisesGibbs
    from pmctx.vonmises.augmented import augmented_sweep
    from pmctx.vonmises.potentials import log_joint, natural_field

    z = theta_to_o(theta_obs)
    seen = ~np.isnan(z)
    model = build_model(z, kappa=5.0, kappa_obs=2.0, rank=5)
    point = model.initial_point()
    key = next(k for k in point if k.startswith("o"))
    point[key] = np.where(seen, z, 0.0)
    rows, baseline = [], None
    compiled = steps_module.log_joint_compiled
    variants = (("log_joint NumPy", 1, log_joint), ("log_joint compiled", 1, compiled))
    variants += (("log_joint compiled", 8, compiled),)
    for label, n_sweeps, stat in variants:
        steps_module.log_joint_compiled = stat
        try:
            with model:
                step = AugmentedVonMisesGibbs(n_sweeps=n_sweeps, rng=0)
            current = step.step(point)[0]  # warm-up
            begin = time.process_time()
            for _ in range(calls):
                current = step.step(current)[0]
            seconds = (time.process_time() - begin) / calls
        finally:
            steps_module.log_joint_compiled = compiled
        baseline = baseline or seconds
        rows.append(_row(f"step, {label}", n_sweeps, seconds, baseline, f"{calls} calls"))
    field = natural_field(np.where(seen, z, 0.0), seen, 2.0)
    rng, o = np.random.default_rng(0), np.where(seen, z, 0.0)
    o = augmented_sweep(o, field, 5.0, 5, rng)
    begin = time.process_time()
    for _ in range(calls):
        o = augmented_sweep(o, field, 5.0, 5, rng)
    seconds = (time.process_time() - begin) / calls
    rows.append(_row("kernel sweep alone", 1, seconds, baseline, f"{calls} sweeps"))
    return rows


def _row(variant, n_sweeps, seconds, baseline, notes):
    return {
        "benchmark": "vonmises-step",
        "variant": variant,
        "size": f"{n_sweeps} sweep(s)/draw",
        "seconds_per_sweep": seconds / n_sweeps,
        "sweeps_per_s": n_sweeps / seconds,
        "ess_per_s": None,
        "baseline": "step, log_joint NumPy, 1 sweep",
        "ratio_vs_baseline": baseline / seconds,
        "cpu_ms_per_draw": 1e3 * seconds,
        "notes": f"{notes}; CPU {1e3 * seconds:.2f} ms per stored draw",
    }


def _reconstruct_rows(theta_obs, draws: int, tune: int) -> list[dict]:
    from pmctx.models.vonmises_map import invariants, reconstruct

    from pmctx.convergence import convergence_report

    kwargs = dict(kappa=5.0, kappa_obs=2.0, rank=5, chains=4, cores=1, progressbar=False)
    kwargs.update(posterior_predictive=False, check_convergence=False)
    reconstruct(theta_obs, draws=5, tune=5, random_seed=1, **kwargs)  # compile
    rows, baseline = [], None
    for n_sweeps in (1, 8):
        begin = time.process_time()
        idata = reconstruct(
            theta_obs, draws=draws, tune=tune, random_seed=0, n_sweeps=n_sweeps, **kwargs
        )
        seconds = time.process_time() - begin
        inv = invariants(idata)
        report = convergence_report(inv)
        theta, pins = report.loc["theta"], report.loc["pinwheels"]
        per_s = {"theta": theta["ess_bulk"] / seconds, "pinwheels": pins["ess_bulk"] / seconds}
        baseline = baseline or per_s
        chain_means = np.round(inv["pinwheels"].mean("draw").values, 1).tolist()
        rows.append(
            {
                "benchmark": "vonmises-step-ess",
                "variant": f"reconstruct, {n_sweeps} sweep(s)/draw",
                "size": f"{theta_obs.shape[0]}x{theta_obs.shape[1]} R=5, 4x({tune}+{draws})",
                "seconds_per_sweep": seconds / (4 * (draws + tune) * n_sweeps),
                "sweeps_per_s": 4 * (draws + tune) * n_sweeps / seconds,
                "ess_per_s": per_s["theta"],
                "baseline": "reconstruct, 1 sweep/draw",
                "ratio_vs_baseline": per_s["theta"] / baseline["theta"],
                "cpu_s": seconds,
                "cpu_ms_per_draw": 1e3 * seconds / (4 * (draws + tune)),
                "theta_r_hat": float(theta["r_hat"]),
                "theta_ess_bulk": float(theta["ess_bulk"]),
                "pinwheels_r_hat": float(pins["r_hat"]),
                "pinwheels_ess_bulk": float(pins["ess_bulk"]),
                "notes": (
                    f"CPU {seconds:.1f} s; worst theta {theta['worst_element']}: R-hat "
                    f"{theta['r_hat']:.3f}, ESS {theta['ess_bulk']:.0f} "
                    f"({per_s['theta']:.2f}/CPU s); pinwheels: R-hat {pins['r_hat']:.3f}, ESS "
                    f"{pins['ess_bulk']:.0f} ({per_s['pinwheels']:.2f}/CPU s, "
                    f"x{per_s['pinwheels'] / baseline['pinwheels']:.2f}); chain mean pinwheels "
                    f"{chain_means}; "
                    f"load {os.getloadavg()[0]:.1f}"
                ),
            }
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    plan = QUICK_PLAN if quick else FULL_PLAN
    theta_obs = _demo_data(plan["size"])
    rows = _per_call_rows(theta_obs, plan["calls"])
    return rows + _reconstruct_rows(theta_obs, plan["draws"], plan["tune"])

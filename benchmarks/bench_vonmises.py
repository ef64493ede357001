"""Orientation-map samplers: time per sweep and ESS per second, same run, same machine.

Problem: the posterior of a map observed with von Mises noise (kappa_obs = 2 on doubled
angles, 30% missing), true map a prior sample (kappa = 5). One sweep updates every node once
(FFBS: even then odd columns; augmented "columns": one column pass). The augmented default
("both": a column pass then a row pass) updates every node twice. Baseline: the seed note's
column FFBS sampler (``tests/oracles/vonmises_ffbs.py``, kept as an exactness oracle; the
point-wise and FFBS samplers left the package, docs/guides/choosing_a_sampler.md) at the same
size and rank. ESS is
that of the map smoothness (mean cos of neighbour differences), a smooth global statistic,
estimated from one chain; slow drifts of the pinwheel layout make single-chain ESS noisy
(a factor of several between seeds), so read ESS/s as an order of magnitude.

Default vs candidates (``_convergence_rows``): the demo data (a 50 x 50 prior map, seed 0,
kappa_obs = 2, 25 % missing; 24 x 24 in ``--quick``), 4 chains started at the data as
``reconstruct`` starts them, ``tune`` + ``draws`` steps of ``n_sweeps`` sweeps each; R-hat
and bulk ESS (pmctx's convergence report) of the worst node's theta and of the pinwheel
count, per second of CPU time of the draw phase. Baseline: the augmented sampler at one
sweep per draw, in the same run.
"""

from __future__ import annotations

import functools
import time

import arviz as az
import numpy as np

from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.cluster import cluster_sweep
from pmctx.vonmises.maps import smoothness
from pmctx.vonmises.potentials import natural_field
from tests.oracles.vonmises_ffbs import ffbs_sweep

KAPPA, KAPPA_OBS = 5.0, 2.0
VARIANTS = {
    "ffbs": ffbs_sweep,
    "augmented-columns": functools.partial(augmented_sweep, direction="columns"),
    "augmented-both": augmented_sweep,
}


def _problem(size: int, rank: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-np.pi, np.pi, size=(size, size))
    for _ in range(30):
        o = augmented_sweep(o, np.zeros((size, size, 2)), KAPPA, rank, rng)
    z = np.mod(rng.vonmises(o, KAPPA_OBS) + np.pi, 2 * np.pi) - np.pi
    mask = rng.random((size, size)) > 0.3
    start = np.where(mask, z, rng.uniform(-np.pi, np.pi, size=z.shape))
    return natural_field(z, mask, KAPPA_OBS), start


def _time_sweeps(sweep, field, start, rank, n_sweeps: int, *, trace: bool = False):
    rng = np.random.default_rng(1)
    o = sweep(start, field, KAPPA, rank, rng)  # warm-up (numba compile, caches)
    values = []
    begin = time.perf_counter()
    for _ in range(n_sweeps):
        o = sweep(o, field, KAPPA, rank, rng)
        if trace:
            values.append(smoothness(o))
    seconds = (time.perf_counter() - begin) / n_sweeps
    return seconds, np.asarray(values)


def run(quick: bool = False) -> list[dict]:
    rows = []
    if quick:
        plan = [
            (50, 5, {"ffbs": 3, "augmented-columns": 40, "augmented-both": 20}),
            (100, 10, {"augmented-columns": 20, "augmented-both": 20}),
        ]
        ess_plan = {(50, 5): {"augmented-both": 300, "ffbs": 40}}
    else:
        plan = [
            (size, rank, {"ffbs": 2, "augmented-columns": 40, "augmented-both": 20})
            for size in (50, 100)
            for rank in (5, 10)
        ]
        plan.append((512, 10, {"augmented-both": 20}))  # the scale target: 20 sweeps < 10 s
        ess_plan = {
            (50, 5): {
                "augmented-both": 1000,
                "augmented-columns": 1000,
                "ffbs": 200,
            },
            (100, 10): {"augmented-both": 400},
        }
    for size, rank, counts in plan:
        field, start = _problem(size, rank)
        baseline = None
        for variant, n_sweeps in counts.items():
            seconds, _ = _time_sweeps(VARIANTS[variant], field, start, rank, n_sweeps)
            if variant == "ffbs":
                baseline = seconds
            ess_per_s, notes = None, f"{n_sweeps} timed sweeps"
            n_ess = ess_plan.get((size, rank), {}).get(variant)
            if n_ess:
                ess_seconds, values = _time_sweeps(
                    VARIANTS[variant], field, start, rank, n_ess, trace=True
                )
                ess = float(az.ess(values[None, n_ess // 5 :]))
                ess_per_s = ess / (ess_seconds * n_ess)
                notes += f"; ESS {ess:.0f} of smoothness from {n_ess} sweeps"
            if variant == "augmented-both":
                notes += f"; 20 sweeps take {20 * seconds:.2f} s"
            rows.append(
                {
                    "benchmark": "vonmises",
                    "variant": variant,
                    "size": f"{size}x{size} R={rank}",
                    "seconds_per_sweep": seconds,
                    "sweeps_per_s": 1.0 / seconds,
                    "ess_per_s": ess_per_s,
                    "baseline": "ffbs" if baseline is not None else None,
                    "ratio_vs_baseline": baseline / seconds if baseline is not None else None,
                    "notes": notes,
                }
            )
    return rows + _convergence_rows(quick)


def _convergence_rows(quick: bool) -> list[dict]:
    import xarray as xr
    from pmctx.models.vonmises_map import (
        invariants,
        noisy_observations,
        o_to_theta,
        sample_prior,
        theta_to_o,
    )

    from pmctx.convergence import convergence_report

    size, tune, draws, chains = (24, 200, 200, 4) if quick else (50, 1000, 1000, 4)
    truth = o_to_theta(sample_prior((size, size), kappa=5.0, rank=5, n_sweeps=30, random_seed=0))
    z = theta_to_o(noisy_observations(truth, kappa_obs=2.0, missing=0.25, random_seed=1))
    seen = ~np.isnan(z)
    field = natural_field(np.where(seen, z, 0.0), seen, KAPPA_OBS)
    rows, baseline = [], None
    variants = (
        ("augmented, 1 sweep/draw", augmented_sweep, 1),
        ("augmented, 4 sweeps/draw", augmented_sweep, 4),
        ("cluster, 1 sweep/draw", cluster_sweep, 1),
    )
    for variant, sweep, n_sweeps in variants:
        sweep(np.where(seen, z, 0.0), field, KAPPA, 5, np.random.default_rng(0))  # compile
        o_draws = np.empty((chains, draws, size, size))
        seconds = 0.0
        for chain in range(chains):
            rng = np.random.default_rng(100 + chain)
            o = np.where(seen, z, rng.uniform(-np.pi, np.pi, z.shape))
            for t in range(tune + draws):  # as pm.sample: every draw, tuning or not, is a step
                begin = time.process_time()
                for _ in range(n_sweeps):
                    o = sweep(o, field, KAPPA, 5, rng)
                if t >= tune:
                    seconds += time.process_time() - begin
                    o_draws[chain, t - tune] = o
        dims = ("chain", "draw", "row", "col")
        post = xr.Dataset({"o": (dims, o_draws), "theta": (dims, o_to_theta(o_draws))})
        report = convergence_report(invariants(xr.DataTree.from_dict({"posterior": post})))
        theta, pins = report.loc["theta"], report.loc["pinwheels"]
        ess = {"theta": theta["ess_bulk"], "pinwheels": pins["ess_bulk"]}
        per_s = {k: v / seconds for k, v in ess.items()}
        baseline = baseline or per_s
        pin_ratio = per_s["pinwheels"] / baseline["pinwheels"]
        rows.append(
            {
                "benchmark": "vonmises-convergence",
                "variant": variant,
                "size": f"{size}x{size} R=5, {chains}x({tune}+{draws}) sweeps",
                "seconds_per_sweep": seconds / (chains * draws),
                "sweeps_per_s": chains * draws / seconds,
                "ess_per_s": per_s["theta"],
                "baseline": variants[0][0],
                "ratio_vs_baseline": per_s["theta"] / baseline["theta"],
                "notes": (
                    f"worst-node theta {theta['worst_element']}: R-hat {theta['r_hat']:.3f}, "
                    f"ESS {ess['theta']:.0f} ({per_s['theta']:.2f}/s); pinwheels: R-hat "
                    f"{pins['r_hat']:.3f}, ESS {ess['pinwheels']:.0f} "
                    f"({per_s['pinwheels']:.2f}/s, x{pin_ratio:.2f} vs baseline)"
                ),
            }
        )
    return rows

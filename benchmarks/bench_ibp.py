"""IBP visuo-motor samplers: per-sweep cost against PyMC, and ESS/s old kernel vs new defaults.

Part 1 (N=100, K_max=10, D=2, T=36, 6x6 bar cues), all from the same starting point:
(a) ``pm.BinaryGibbsMetropolis`` on Z and Y (one full-model logp per proposed flip),
(b) the generic row-parallel ``BinaryMatrixGibbs`` on Z (rows) and Y (columns), if present,
(c) the specialised ``IBPGibbs`` at its defaults (joint row moves; also redraws A, pi and
new features each sweep).

Part 2, at N=100, 1,000 and 10,000: ESS per second of the label-invariant quantities users
read, ``n_active`` and ``loglik``, over 4 chains (ArviZ rank-normalised ESS, first half of
each chain dropped as warm-up; the time is that of the kept half), for
``old``: ``IBPGibbs(moves="legacy")`` with the hyperparameters fixed (the previous package
default, sigma_n fixed at the true 0.3), and
``joint``: ``IBPGibbs()`` (joint row moves) with the same fixed hyperparameters (the moves'
effect alone), and
``new``: the package defaults, ``IBPGibbs()`` (joint row moves) with ``IBPAlphaGibbs`` and
``IBPHyperGibbs`` learning every hyperparameter.
Both run in the same process on the same data from random starts, step by step through the
PyMC step objects (what ``pm.sample`` calls), so the times include the steps' own overhead
but not ``pm.sample``'s trace bookkeeping.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pymc as pm
from pmctx.models.ibp import build_model

from pmctx.ibp.conditionals import force_loglik, noisy_or_loglik
from pmctx.ibp.data import visuomotor_data
from pmctx.steps.ibp_gibbs import IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs

OLD_HYPER = dict(alpha=1.0, sigma_n=0.3, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)


def _model_and_start(n, k_max, seed=0, **hyper):
    data = visuomotor_data(n, seed=seed)
    model = build_model(data.F, data.X, K_max=k_max, reconstructions=False, **hyper)
    with model:
        warm = IBPGibbs(rng=seed)
    point = model.initial_point()
    for _ in range(5):  # a realistic state (several active features), same for every variant
        point, _ = warm.step(point)
    return model, point, data


def _time_steps(steps, point, n_sweeps):
    start = time.perf_counter()
    for _ in range(n_sweeps):
        for step in steps:
            point, _ = step.step(point)
    return (time.perf_counter() - start) / n_sweeps


def _row(variant, size, seconds, *, baseline=None, base_seconds=None, ess=None, notes=""):
    return {
        "benchmark": "ibp",
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": 1.0 / seconds,
        "ess_per_s": ess,
        "baseline": baseline,
        "ratio_vs_baseline": None if base_seconds is None else base_seconds / seconds,
        "notes": notes,
    }


def _per_sweep_rows(quick):
    rows = []
    size = "N=100 K_max=10 D=2 T=36"
    model, start, _ = _model_and_start(100, 10, **OLD_HYPER)
    with model:
        bgm = pm.BinaryGibbsMetropolis([model["Z"], model["Y"]])
        ibp_step = IBPGibbs(rng=1)
    bgm_sweeps = 1 if quick else 3
    bgm.step(start)  # compile outside the timing
    t_a = _time_steps([bgm], start, bgm_sweeps)
    rows.append(_row("a: pm.BinaryGibbsMetropolis", size, t_a, notes=f"{bgm_sweeps} sweep(s)"))
    try:
        from pmctx.steps.binary_gibbs import BinaryMatrixGibbs
    except ImportError:
        BinaryMatrixGibbs = None
    if BinaryMatrixGibbs is not None:
        with model:
            generic = [
                BinaryMatrixGibbs([model["Z"]], independent_axis=0, rng=2),
                BinaryMatrixGibbs([model["Y"]], independent_axis=1, rng=3),
            ]
        t_b = _time_steps(generic, start, 20 if quick else 200)
        rows.append(
            _row(
                "b: generic BinaryMatrixGibbs",
                size,
                t_b,
                baseline="a: pm.BinaryGibbsMetropolis",
                base_seconds=t_a,
                notes="Z and Y only (pi, A fixed), as (a)",
            )
        )
    ibp_step.step(start)
    t_c = _time_steps([ibp_step], start, 300 if quick else 3000)
    rows.append(
        _row(
            "c: specialised IBPGibbs (joint moves)",
            size,
            t_c,
            baseline="a: pm.BinaryGibbsMetropolis",
            base_seconds=t_a,
            notes="also redraws A, pi and new features",
        )
    )
    return rows


def _loglik(point, data, hyper):
    Z = np.asarray(point["Z"])
    out = force_loglik(data.F, Z, point["A"], hyper["sigma_n"]).sum()
    return out + noisy_or_loglik(data.X, Z, point["Y"], hyper["lam"], hyper["eps"]).sum()


def _ess_run(n, k_max, variant, n_sweeps, chains=4):
    """Seconds per sweep and ESS/s of n_active and loglik over ``chains`` random starts."""
    hyper = {} if variant == "new" else OLD_HYPER
    model, _, data = _model_and_start(n, k_max, **hyper)
    names = ("alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")
    read = model.compile_fn(
        model.replace_rvs_by_values([model[h] for h in names]),
        inputs=model.value_vars,
        on_unused_input="ignore",
        point_fn=True,
    )
    traces = np.empty((2, chains, n_sweeps))
    seconds = 0.0
    for chain in range(chains):
        with model:
            if variant == "old":
                steps = [IBPGibbs(moves="legacy", rng=chain)]
            elif variant == "joint":
                steps = [IBPGibbs(rng=chain)]
            else:
                steps = [IBPGibbs(rng=chain), IBPAlphaGibbs(rng=chain), IBPHyperGibbs(rng=chain)]
        point = model.initial_point()
        rng = np.random.default_rng(100 + chain)
        point["Z"] = (rng.random(point["Z"].shape) < 0.2).astype(np.int64)  # random start
        steps[0].step(point)  # compile outside the timing
        for s in range(n_sweeps):
            start = time.perf_counter()
            for step in steps:
                point, _ = step.step(point)
            seconds += time.perf_counter() - start
            traces[0, chain, s] = np.asarray(point["Z"]).any(axis=0).sum()
            traces[1, chain, s] = _loglik(point, data, dict(zip(names, read(point))))
    keep = traces[:, :, n_sweeps // 2 :]
    per_sweep = seconds / (chains * n_sweeps)
    run_seconds = per_sweep * chains * keep.shape[2]
    out = []
    for j in range(2):
        if np.ptp(keep[j]) == 0:
            out.append(None)  # ESS undefined for a constant trace
        else:
            out.append(float(az.ess(keep[j])) / run_seconds)
    return per_sweep, out, keep[0]


def run(quick: bool = False) -> list[dict]:
    rows = _per_sweep_rows(quick)
    sizes = [(100, 10, 400 if quick else 2000), (1000, 20, 120 if quick else 400),
             (10000, 20, 24 if quick else 80)]  # fmt: skip
    for n, k_max, sweeps in sizes:
        size = f"N={n} K_max={k_max} D=2 T=36"
        base_ess = None
        for variant in ("old", "joint", "new"):
            per_sweep, (ess_n, ess_ll), n_active = _ess_run(n, k_max, variant, sweeps)
            label = {
                "old": "old: legacy moves, fixed hyper",
                "joint": "joint moves, fixed hyper",
                "new": "new: defaults",
            }[variant]
            notes = (
                f"ESS/s n_active={ess_n if ess_n is None else round(ess_n, 2)}, "
                f"loglik={ess_ll if ess_ll is None else round(ess_ll, 2)}; 4 chains x {sweeps} "
                f"sweeps (2nd half kept); P(n_active=4)={np.mean(n_active == 4):.2f}"
            )
            row = _row(label, size, per_sweep, ess=ess_n, notes=notes)
            if variant != "old" and base_ess and ess_n:
                # The ratio column is ESS/s of n_active against the old kernel, same run.
                row["baseline"] = "old: legacy moves, fixed hyper (ESS/s n_active)"
                row["ratio_vs_baseline"] = ess_n / base_ess
            rows.append(row)
            base_ess = ess_n if variant == "old" else base_ess
    return rows

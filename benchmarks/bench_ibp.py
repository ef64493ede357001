"""IBP visuo-motor samplers: per-sweep cost against PyMC, and ESS/s old kernel vs new defaults.

Times are CPU seconds of this process (``time.process_time``) unless a column says wall: the
benchmark machine is shared, so wall time includes other jobs' load while CPU time does not
(numba and PyTensor run single-threaded here; set ``OPENBLAS_NUM_THREADS=1``). Wall times are
kept in the JSON (``wall_seconds_per_sweep``, ``wall_ess_per_s``).

Part 1 (N=100, K_max=10, D=2, T=36, 6x6 bar cues), all from the same starting point:
(a) ``pm.BinaryGibbsMetropolis`` on Z and Y (one full-model logp per proposed flip),
(b) the generic row-parallel ``BinaryMatrixGibbs`` on Z (rows) and Y (columns), if present,
(c) the specialised ``IBPGibbs`` at its defaults (joint row moves; also redraws A, pi and
new features each sweep).

Part 2, at N=100, 1,000 and 10,000: ESS per second of the label-invariant quantities users
read, ``n_active`` and ``loglik``, over 4 chains (ArviZ rank-normalised ESS, first half of
each chain dropped as warm-up; the time is that of the kept half), for
``old``: ``IBPGibbs(moves="legacy", birth_death=0, sweeps=1)`` with the hyperparameters
fixed (the previous package default, sigma_n fixed at the true 0.3), and
``joint``: ``IBPGibbs(birth_death=0, sweeps=1)`` (joint row moves) with the same fixed
hyperparameters (the moves' effect alone; N=100 and 1,000 only), and
``new``: the package defaults, ``IBPGibbs()`` (joint row moves; from 500 trials on with
birth/death proposals, from 5,000 two sweeps per step: rows recorded before those defaults
ran one sweep without them) with ``IBPAlphaGibbs`` and ``IBPHyperGibbs`` learning every
hyperparameter, from ``Z = 0``, and
``start``: the same steps from ``sample()``'s start at N >= 500, each chain from its own
:func:`pmctx.ibp.start.subsample_start` (its CPU time is reported apart, per chain; the ESS
is of the kept half as for the others).
All run in the same process on the same data, ``old``, ``joint`` and ``new`` from
``pm.sample``'s start (``Z = 0``; every chain with its own random stream), step by step
through the PyMC step objects (what ``pm.sample`` calls), so the times include the steps'
own overhead but not ``pm.sample``'s trace bookkeeping. ``P(n_active=4)`` over the kept
half says whether a variant reached the truth at all; an ESS/s of a chain that never left
its start is meaningless.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pymc as pm
from pmctx.models.ibp import build_model, subsample_initvals
from pymc.initial_point import make_initial_point_fn

from pmctx.ibp.conditionals import force_loglik, noisy_or_loglik
from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.diagnostics import match_features
from pmctx.steps.binary_gibbs import BinaryMatrixGibbs
from pmctx.steps.ibp_gibbs import IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs

OLD_HYPER = dict(alpha=1.0, sigma_n=0.3, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)


def _model_and_start(n, k_max, seed=0, **hyper):
    data = visuomotor_data(n, random_seed=seed)
    model = build_model(data.F, data.X, K_max=k_max, reconstructions=False, **hyper)
    with model:
        warm = IBPGibbs(rng=seed)
    point = model.initial_point()
    for _ in range(5):  # a realistic state (several active features), same for every variant
        point, _ = warm.step(point)
    return model, point, data


def _time_steps(steps, point, n_sweeps):
    """Wall and CPU seconds per sweep."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n_sweeps):
        for step in steps:
            point, _ = step.step(point)
    return (time.perf_counter() - wall) / n_sweeps, (time.process_time() - cpu) / n_sweeps


def _row(variant, size, times, *, baseline=None, base_times=None, ess=None, notes="", **extra):
    wall, cpu = times
    return {
        "benchmark": "ibp",
        "variant": variant,
        "size": size,
        "seconds_per_sweep": cpu,
        "sweeps_per_s": 1.0 / cpu,
        "ess_per_s": ess,
        "baseline": baseline,
        "ratio_vs_baseline": None if base_times is None else base_times[1] / cpu,
        "notes": notes,
        "wall_seconds_per_sweep": wall,
        "wall_ratio_vs_baseline": None if base_times is None else base_times[0] / wall,
        **extra,
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
            base_times=t_a,
            notes="Z and Y only (pi, A fixed), as (a)",
        )
    )
    ibp_step.step(start)
    n_c = 300 if quick else 3000
    t_c = _time_steps([ibp_step], start, n_c)
    rows.append(
        _row(
            "c: specialised IBPGibbs (joint moves)",
            size,
            t_c,
            baseline="a: pm.BinaryGibbsMetropolis",
            base_times=t_a,
            notes=f"also redraws A, pi and new features; {n_c} sweeps",
        )
    )
    return rows


def _loglik(point, data, hyper):
    Z = np.asarray(point["Z"])
    out = force_loglik(data.F, Z, point["A"], hyper["sigma_n"]).sum()
    return out + noisy_or_loglik(data.X, Z, point["Y"], hyper["lam"], hyper["eps"]).sum()


def _ess(trace):
    return None if np.ptp(trace) == 0 else float(az.ess(trace))  # undefined when constant


def _ess_run(n, k_max, variant, n_sweeps, chains=4):
    """Per-sweep times, ESS of n_active and loglik, and the kept n_active trace."""
    hyper = {} if variant in ("new", "start") else OLD_HYPER
    model, _, data = _model_and_start(n, k_max, **hyper)
    names = ("alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")
    read = model.compile_fn(
        model.replace_rvs_by_values([model[h] for h in names]),
        inputs=model.value_vars,
        on_unused_input="ignore",
        point_fn=True,
    )
    traces = np.empty((2, chains, n_sweeps))
    wall = cpu = start_cpu = 0.0
    z_right = []
    for chain in range(chains):
        with model:
            if variant == "old":
                steps = [IBPGibbs(moves="legacy", birth_death=0, sweeps=1, rng=chain)]
            elif variant == "joint":
                steps = [IBPGibbs(birth_death=0, sweeps=1, rng=chain)]
            else:
                steps = [IBPGibbs(rng=chain), IBPAlphaGibbs(rng=chain), IBPHyperGibbs(rng=chain)]
        point = model.initial_point()  # pm.sample's start: Z = 0
        if variant == "start":  # sample()'s start="auto" from 500 trials on
            c0 = time.process_time()
            initvals = subsample_initvals(model, data.F, data.X, chains=1, random_seed=chain)[0]
            point = make_initial_point_fn(model=model, overrides=initvals, jitter_rvs=set())(0)
            start_cpu += time.process_time() - c0
        for step in steps:  # compile and warm the numba caches outside the timing
            step.step(dict(point))
        for s in range(n_sweeps):
            w, c = time.perf_counter(), time.process_time()
            for step in steps:
                point, _ = step.step(point)
            wall += time.perf_counter() - w
            cpu += time.process_time() - c
            traces[0, chain, s] = np.asarray(point["Z"]).any(axis=0).sum()
            traces[1, chain, s] = _loglik(point, data, dict(zip(names, read(point))))
        Z = np.asarray(point["Z"])  # last draw, columns matched to the truth
        z_right.append(float((Z[:, match_features(Z, data.Z)] == data.Z).mean()))
    keep = traces[:, :, n_sweeps // 2 :]
    kept_share = keep.shape[2] / n_sweeps
    times = (wall / (chains * n_sweeps), cpu / (chains * n_sweeps))
    ess = [_ess(keep[0]), _ess(keep[1])]
    extra = dict(start_cpu_s_per_chain=start_cpu / chains, z_right_last_draw=z_right)
    return times, ess, (wall * kept_share, cpu * kept_share), keep[0], extra


LABELS = {
    "old": "old: legacy moves, fixed hyper",
    "joint": "joint moves, fixed hyper",
    "new": "new: defaults, Z = 0 start",
    "start": "new: defaults, subsample start",
}


def _per_s(ess, seconds):
    return None if ess is None else ess / seconds


def _fmt(x):
    return "-" if x is None else f"{x:.3g}"


def run(quick: bool = False) -> list[dict]:
    rows = _per_sweep_rows(quick)
    sizes = [(100, 10, 400 if quick else 2000, ("old", "joint", "new")),
             (1000, 20, 100 if quick else 400, ("old", "joint", "new", "start")),
             (10000, 20, 16 if quick else 150, ("old", "new", "start"))]  # fmt: skip
    for n, k_max, sweeps, variants in sizes:
        size = f"N={n} K_max={k_max} D=2 T=36"
        base = None
        for variant in variants:
            times, (ess_n, ess_ll), (wall_s, cpu_s), n_active, extra = _ess_run(
                n, k_max, variant, sweeps
            )
            per_cpu = [_per_s(ess_n, cpu_s), _per_s(ess_ll, cpu_s)]
            per_wall = [_per_s(ess_n, wall_s), _per_s(ess_ll, wall_s)]
            notes = (
                f"ESS/CPU-s n_active={_fmt(per_cpu[0])}, loglik={_fmt(per_cpu[1])} "
                f"(per wall-s {_fmt(per_wall[0])}, {_fmt(per_wall[1])}); 4 chains x {sweeps} "
                f"sweeps (2nd half kept); P(n_active=4)={np.mean(n_active == 4):.2f}"
            )
            row = _row(
                LABELS[variant],
                size,
                times,
                ess=per_cpu[0],
                notes=notes,
                sweeps_per_chain=sweeps,
                ess_n_active=ess_n,
                ess_loglik=ess_ll,
                ess_per_cpu_s_loglik=per_cpu[1],
                wall_ess_per_s=per_wall[0],
                wall_ess_per_s_loglik=per_wall[1],
                p_n_active_4=float(np.mean(n_active == 4)),
                **extra,
            )
            row["notes"] += f"; Z right (last draw) {min(extra['z_right_last_draw']):.3f}"
            if variant == "start":
                row["notes"] += f"; start {extra['start_cpu_s_per_chain']:.2f} CPU-s/chain"
            if variant == "old":
                base = per_cpu
            elif base is not None:
                # Ratio column: ESS per CPU second of n_active against the old kernel, same run.
                row["baseline"] = "old: legacy moves, fixed hyper (ESS/CPU-s n_active)"
                row["ratio_vs_baseline"] = None if None in (per_cpu[0], base[0]) else (
                    per_cpu[0] / base[0])  # fmt: skip
                row["ratio_loglik_vs_baseline"] = None if None in (per_cpu[1], base[1]) else (
                    per_cpu[1] / base[1])  # fmt: skip
            rows.append(row)
    return rows

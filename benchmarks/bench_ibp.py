"""Per-sweep cost of the IBP visuo-motor samplers on the same model.

Variants at N=100, K_max=10, D=2, T=36 (6x6 bar cues), all from the same starting point:
(a) ``pm.BinaryGibbsMetropolis`` on Z and Y (one full-model logp per proposed flip),
(b) the generic row-parallel ``BinaryMatrixGibbs`` on Z (rows) and Y (columns), if present,
(c) the specialised ``IBPGibbs`` (which also redraws A, pi and new features each sweep).
Then (c) alone at N=1,000 and N=10,000 (K_max=20), and ESS/s of the number of active
features for the chains that are cheap enough to run long.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pymc as pm
from pmctx.models.ibp import build_model

from pmctx.ibp.data import visuomotor_data
from pmctx.steps.ibp_gibbs import IBPGibbs

HYPER = dict(sigma_n=0.3)


def _model_and_start(n, k_max, seed=0):
    data = visuomotor_data(n, seed=seed)
    model = build_model(data.F, data.X, K_max=k_max, reconstructions=False, **HYPER)
    with model:
        warm = IBPGibbs(rng=seed)
    point = model.initial_point()
    for _ in range(5):  # a realistic state (several active features), same for every variant
        point, _ = warm.step(point)
    return model, point


def _time_steps(steps, point, n_sweeps, *, n_active_of=None):
    trace = []
    start = time.perf_counter()
    for _ in range(n_sweeps):
        for step in steps:
            point, _ = step.step(point)
        if n_active_of is not None:
            trace.append(int(np.asarray(point["Z"]).any(axis=0).sum()))
    seconds = (time.perf_counter() - start) / n_sweeps
    return seconds, np.array(trace)


def _ess_per_s(trace, seconds_per_sweep):
    if trace.size < 20 or np.all(trace == trace[0]):
        return None
    ess = float(az.ess(trace[None, :].astype(float)))
    return ess / (seconds_per_sweep * trace.size)


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


def run(quick: bool = False) -> list[dict]:
    rows = []
    size = "N=100 K_max=10 D=2 T=36"
    model, start = _model_and_start(100, 10)
    with model:
        bgm = pm.BinaryGibbsMetropolis([model["Z"], model["Y"]])
        ibp_step = IBPGibbs(rng=1)
    bgm_sweeps = 1 if quick else 3
    bgm.step(start)  # compile outside the timing
    t_a, _ = _time_steps([bgm], start, bgm_sweeps)
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
        n_generic = 20 if quick else 200
        t_b, trace_b = _time_steps(generic, start, n_generic, n_active_of="Z")
        rows.append(
            _row(
                "b: generic BinaryMatrixGibbs",
                size,
                t_b,
                baseline="a: pm.BinaryGibbsMetropolis",
                base_seconds=t_a,
                ess=_ess_per_s(trace_b, t_b),
                notes="Z and Y only (pi, A fixed), as (a)",
            )
        )

    ibp_step.step(start)
    n_c = 300 if quick else 3000
    t_c, trace_c = _time_steps([ibp_step], start, n_c, n_active_of="Z")
    rows.append(
        _row(
            "c: specialised IBPGibbs",
            size,
            t_c,
            baseline="a: pm.BinaryGibbsMetropolis",
            base_seconds=t_a,
            ess=_ess_per_s(trace_c, t_c),
            notes="also redraws A, pi and new features",
        )
    )
    for n, k_max, sweeps in ((1000, 20, 30 if quick else 200), (10000, 20, 3 if quick else 30)):
        model, start = _model_and_start(n, k_max)
        with model:
            step = IBPGibbs(rng=4)
        t, trace = _time_steps([step], start, sweeps, n_active_of="Z")
        rows.append(
            _row(
                "c: specialised IBPGibbs",
                f"N={n} K_max={k_max} D=2 T=36",
                t,
                ess=_ess_per_s(trace, t),
                notes=f"{sweeps} sweeps",
            )
        )
    return rows

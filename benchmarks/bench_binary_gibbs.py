"""Per-sweep time of the generic binary-matrix Gibbs step vs ``pm.BinaryGibbsMetropolis``.

Both update Z (N x K_max, rows independent given pi, A, Y) and Y (K_max x T, columns
independent given Z) of the IBP visuo-motor model at N=100, K_max=10, D=2, T=36, with the
continuous variables held at their generating values. One sweep = every entry of Z and Y
visited once. Both steps are called through ``step(point)``; the baseline is measured in the
same run; times are medians over sweeps. ``ess_per_s`` is the ESS of the number of ones in Z
per second of generic sweeps.

Expected ratio: BinaryGibbsMetropolis evaluates the full model logp once per entry
(N K + K T = 1360 evaluations per sweep); the generic step evaluates the terms that depend on
the updated matrix once per line plus once per step (2 (K + 1) = 22). At equal cost per
evaluation that alone gives about 1360 / 22 = 62. Both are dominated by the N x T noisy-OR
term, whose transcendental functions of the integer matrix Z @ Y the generic step computes
once per distinct value and gathers (and Z @ Y itself through float BLAS), which makes each
of its evaluations several times cheaper and the ratio a few hundred; only model-specific
incremental updates (the specialised IBP kernel) go far beyond it.

The last rows time one evaluation of Z's per-unit log density with the tables against the
direct graph, both built in the same run, from 3 x 2 to 300 x 36 noisy-OR entries: the step
uses the tables from ``TABULATE_MIN_ENTRIES`` entries on (``notes`` say which it picks).
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pmctx.steps import binary_gibbs
from pmctx.steps.binary_gibbs import BinaryMatrixGibbs

ALPHA, SIGMA_N, SIGMA_A, PHI, LAM, EPS = 2.0, 0.5, 1.0, 0.3, 0.9, 0.05


def simulate_ibp_data(n_trials, k_max, force_dim, n_pixels, *, k_true=4, seed=0):
    """Draw (F, X) and the generating (Z, A, Y) from the truncated IBP generative model."""
    rng = np.random.default_rng(seed)
    z = np.zeros((n_trials, k_max), dtype=np.int64)
    z[:, :k_true] = rng.random((n_trials, k_true)) < 0.4
    a = rng.normal(0.0, SIGMA_A, size=(k_max, force_dim))
    y = (rng.random((k_max, n_pixels)) < PHI).astype(np.int64)
    f = z @ a + rng.normal(0.0, SIGMA_N, size=(n_trials, force_dim))
    log_p_off = (z @ y) * np.log1p(-LAM) + np.log1p(-EPS)
    x = (rng.random((n_trials, n_pixels)) < -np.expm1(log_p_off)).astype(np.int64)
    return {"F": f, "X": x, "Z": z, "A": a, "Y": y}


def build_ibp_model(data, k_max):
    """Finite IBP (pi_k ~ Beta(alpha/K_max, 1)) with Gaussian forces and noisy-OR cues."""
    n_trials, force_dim = data["F"].shape
    coords = {
        "trial": range(n_trials),
        "feature": range(k_max),
        "force_dim": range(force_dim),
        "pixel": range(data["X"].shape[1]),
    }
    with pm.Model(coords=coords) as model:
        pi = pm.Beta("pi", ALPHA / k_max, 1.0, dims="feature")
        z = pm.Bernoulli("Z", pi, dims=("trial", "feature"))
        a = pm.Normal("A", 0.0, SIGMA_A, dims=("feature", "force_dim"))
        y = pm.Bernoulli("Y", PHI, dims=("feature", "pixel"))
        pm.Normal("F", pt.dot(z, a), SIGMA_N, observed=data["F"], dims=("trial", "force_dim"))
        # Noisy-OR in log space: log P(x = 0) = (z.y) log(1 - lambda) + log(1 - eps).
        log_p_off = pt.dot(z, y) * np.log1p(-LAM) + np.log1p(-EPS)
        logit_p = pt.log(-pt.expm1(log_p_off)) - log_p_off
        pm.Bernoulli("X", logit_p=logit_p, observed=data["X"], dims=("trial", "pixel"))
    return model


def _start_point(model, data):
    point = model.initial_point()
    point.update(Z=data["Z"].copy(), Y=data["Y"].copy(), A=data["A"].copy())
    return point


def _time_sweeps(steps, point, n_sweeps, record=None):
    """Median seconds per sweep (robust to other processes on a shared machine), trace."""
    trace, seconds = [], []
    for _ in range(n_sweeps):
        start = time.perf_counter()
        for step in steps:
            point, _ = step.step(point)
        seconds.append(time.perf_counter() - start)
        if record is not None:
            trace.append(record(point))
    return float(np.median(seconds)), np.array(trace)


def _row(variant, size, seconds, *, baseline=None, baseline_seconds=None, ess_per_s=None, notes=""):
    return {
        "benchmark": "binary_gibbs",
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": 1.0 / seconds,
        "ess_per_s": ess_per_s,
        "baseline": baseline,
        "ratio_vs_baseline": None if baseline_seconds is None else baseline_seconds / seconds,
        "notes": notes,
    }


def _generic_steps(model):
    with model:
        z_step = BinaryMatrixGibbs([model["Z"]], independent_axis=0, rng=2)
        y_step = BinaryMatrixGibbs([model["Y"]], independent_axis=1, rng=3)
    return [z_step, y_step]


def _generic_row(n_trials, k_max, force_dim, n_pixels, n_sweeps, *, baseline_seconds=None):
    data = simulate_ibp_data(n_trials, k_max, force_dim, n_pixels, seed=0)
    model = build_ibp_model(data, k_max)
    point = _start_point(model, data)
    steps = _generic_steps(model)
    _time_sweeps(steps, point, 3)  # warm-up
    seconds, n_ones = _time_sweeps(steps, point, n_sweeps, record=lambda p: p["Z"].sum())
    ess = float(az.ess(n_ones[None, :].astype(float)))
    return _row(
        "BinaryMatrixGibbs (generic)",
        f"N={n_trials} K_max={k_max} D={force_dim} T={n_pixels}",
        seconds,
        baseline=None if baseline_seconds is None else "pm.BinaryGibbsMetropolis",
        baseline_seconds=baseline_seconds,
        ess_per_s=ess / (seconds * n_sweeps),
        notes=f"{n_sweeps} sweeps, {2 * k_max + 2} logp evaluations each; ESS of sum(Z), "
        "pi and A fixed at the truth",
    )


def _seconds_per_call(step, point, n_calls):
    per_unit = step._per_unit_function(point)
    values = np.ascontiguousarray(point["Z"], dtype=np.int64)
    per_unit(values)
    seconds = []
    for _ in range(n_calls):
        start = time.perf_counter()
        per_unit(values)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def _table_rows(quick: bool) -> list[dict]:
    """Z's per-unit log density per call, with tables against direct, at growing sizes."""
    rows = []
    for n_trials, k_max, n_pixels in [(3, 2, 2), (12, 4, 8), (40, 6, 16), (100, 10, 36),
                                      (300, 10, 36)]:  # fmt: skip
        data = simulate_ibp_data(n_trials, k_max, 2, n_pixels, k_true=min(4, k_max), seed=0)
        model = build_ibp_model(data, k_max)
        point = _start_point(model, data)
        seconds = {}
        for threshold in (0, np.inf):  # every size tabulates / none does
            default, binary_gibbs.TABULATE_MIN_ENTRIES = (
                binary_gibbs.TABULATE_MIN_ENTRIES,
                threshold,
            )
            try:
                step = BinaryMatrixGibbs([model["Z"]], independent_axis=0, model=model, rng=0)
            finally:
                binary_gibbs.TABULATE_MIN_ENTRIES = default
            seconds[step.tabulated] = _seconds_per_call(step, point, 300 if quick else 3000)
        picks = n_trials * n_pixels >= binary_gibbs.TABULATE_MIN_ENTRIES
        row = _row(
            "per-unit log density of Z, tables",
            f"N={n_trials} K_max={k_max} D=2 T={n_pixels}",
            seconds[True],
            baseline="the same without tables",
            baseline_seconds=seconds[False],
            notes=f"seconds per call (median); {n_trials * n_pixels} noisy-OR entries; the "
            f"step uses {'tables' if picks else 'the direct graph'} at this size",
        )
        row["sweeps_per_s"] = None  # one evaluation, not a sweep
        rows.append(row)
    return rows


def run(quick: bool = False) -> list[dict]:
    n_trials, k_max, force_dim, n_pixels = 100, 10, 2, 36
    data = simulate_ibp_data(n_trials, k_max, force_dim, n_pixels, seed=0)
    model = build_ibp_model(data, k_max)
    point = _start_point(model, data)
    with model:
        bgm = pm.BinaryGibbsMetropolis([model["Z"], model["Y"]], rng=1)
    bgm.step(point)  # warm-up: first calls pay for lazy initialisation
    n_bgm = 1 if quick else 3
    bgm_seconds, _ = _time_sweeps([bgm], point, n_bgm)
    n_entries = n_trials * k_max + k_max * n_pixels
    return [
        _row(
            "pm.BinaryGibbsMetropolis",
            f"N={n_trials} K_max={k_max} D={force_dim} T={n_pixels}",
            bgm_seconds,
            notes=f"{n_bgm} sweep(s), {n_entries} full-model logp evaluations each",
        ),
        _generic_row(
            n_trials,
            k_max,
            force_dim,
            n_pixels,
            200 if quick else 2000,
            baseline_seconds=bgm_seconds,
        ),
        _generic_row(1000, k_max, force_dim, n_pixels, 30 if quick else 300),
        *_table_rows(quick),
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)

"""IBP recovery at the package defaults for large N (1,000 and 10,000 trials).

What ``pmctx.models.ibp.sample(F, X, K_max=10)`` runs, step by step through the same PyMC step
objects (``IBPGibbs``, ``IBPAlphaGibbs``, ``IBPHyperGibbs``, every hyperparameter learned),
from the start ``sample`` uses at N >= 500 (each chain from its own
:func:`pmctx.ibp.start.subsample_start`), but with shorter chains than pm.sample's 1,000 + 1,000
so that N = 10,000 fits in minutes, and without storing the draws (``Z`` alone is N x K_max
per draw). Generators: :func:`pmctx.ibp.data.visuomotor_data` with (K, sigma_n) = (4, 0.3),
(3, 0.2), (4, 0.5), the kinds of ``tests/ibp/test_ibp_recovery.py``. ``IBPGibbs`` runs at its
defaults, so each step is what ``sample`` runs per draw (birth/death proposals from 50
trials, two sweeps from 5,000); rows recorded before those became the step's own defaults
ran one sweep without birth/death.

Per fit: the CPU seconds (start and sweeps), ``R-hat(n_active)`` over 4 chains (second half
of each kept), ``P(n_active = K)`` and ``P(n_shared = K)`` per chain (``n_shared`` = features
owned by two or more trials) and the share of ``Z`` and ``Y`` entries right in the rounded
posterior mean of the kept draws, every draw's columns matched to the truth.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
from pmctx.models.ibp import build_model, subsample_initvals
from pymc.initial_point import make_initial_point_fn

from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.diagnostics import match_features
from pmctx.steps.ibp_gibbs import IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs

GENERATORS = [(4, 0.3), (3, 0.2), (4, 0.5)]


def fit(n, k, sigma_n, seed, sweeps, chains=4, k_max=10):
    """One data set, ``chains`` chains of ``sweeps`` sweeps; returns a result dict."""
    data = visuomotor_data(n, n_features=k, sigma_n=sigma_n, random_seed=seed)
    model = build_model(data.F, data.X, K_max=k_max, reconstructions=False)
    keep = sweeps // 2
    n_active = np.empty((chains, keep), dtype=np.int64)
    n_shared = np.empty((chains, keep), dtype=np.int64)
    z_mean = np.zeros(data.Z.shape)
    y_mean = np.zeros(data.Y.shape)
    cpu = time.process_time()
    starts = subsample_initvals(model, data.F, data.X, chains=chains, random_seed=seed)
    for chain in range(chains):
        rngs = [np.random.default_rng((seed, chain, j)) for j in range(3)]
        with model:
            steps = [IBPGibbs(rng=rngs[0]), IBPAlphaGibbs(rng=rngs[1]), IBPHyperGibbs(rng=rngs[2])]
        point = make_initial_point_fn(model=model, overrides=starts[chain], jitter_rvs=set())(0)
        for s in range(sweeps):
            for step in steps:
                point, _ = step.step(point)
            if s >= sweeps - keep:
                Z = np.asarray(point["Z"])
                m = Z.sum(axis=0)
                n_active[chain, s - (sweeps - keep)] = np.count_nonzero(m)
                n_shared[chain, s - (sweeps - keep)] = np.count_nonzero(m >= 2)
                perm = match_features(Z, data.Z)
                z_mean += Z[:, perm]
                y_mean += np.asarray(point["Y"])[perm]
    cpu = time.process_time() - cpu
    draws = chains * keep
    z_right = float(((z_mean / draws).round() == data.Z).mean())
    y_right = float(((y_mean / draws).round() == data.Y).mean())
    rhat = None if np.ptp(n_active) == 0 else float(az.rhat(n_active.astype(float)))
    return dict(
        cpu_s=cpu,
        rhat_n_active=rhat,
        p_n_active_k=(n_active == k).mean(axis=1).tolist(),
        p_n_shared_k=(n_shared == k).mean(axis=1).tolist(),
        z_right=z_right,
        y_right=y_right,
    )


def run(quick: bool = False) -> list[dict]:
    # (N, sweeps per chain, generators, seeds); N = 10,000 costs ~0.07 CPU s per sweep.
    plan = [(1000, 60 if quick else 300, GENERATORS, (0,)),
            (10000, 10 if quick else 100, GENERATORS[:2], (0,))]  # fmt: skip
    rows = []
    for n, sweeps, generators, seeds in plan:
        for k, sigma_n in generators[:1] if quick else generators:
            for seed in seeds:
                r = fit(n, k, sigma_n, seed, sweeps)
                fmt = " ".join(f"{p:.2f}" for p in r["p_n_active_k"])
                fmt_s = " ".join(f"{p:.2f}" for p in r["p_n_shared_k"])
                rhat = "-" if r["rhat_n_active"] is None else f"{r['rhat_n_active']:.3f}"
                rows.append(
                    {
                        "benchmark": "ibp_recovery",
                        "variant": f"K={k} sigma_n={sigma_n} seed={seed}",
                        "size": f"N={n} K_max=10 D=2 T=36",
                        "seconds_per_sweep": r["cpu_s"] / (4 * sweeps),
                        "sweeps_per_s": 4 * sweeps / r["cpu_s"],
                        "ess_per_s": None,
                        "baseline": None,
                        "ratio_vs_baseline": None,
                        "notes": (
                            f"R-hat(n_active) {rhat}; P(n_active=K) {fmt}; P(n_shared=K) "
                            f"{fmt_s}; Z right {r['z_right']:.4f}, Y right {r['y_right']:.4f}; "
                            f"{r['cpu_s']:.0f} CPU-s for 4 chains x {sweeps} sweeps incl. start"
                        ),
                        "sweeps_per_chain": sweeps,
                        **r,
                    }
                )
    return rows

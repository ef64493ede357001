"""Chain smoother: ESS per CPU second of the learned concentrations, conditional vs collapsed.

Problem: the chain demo's data (``pmctx.models.vonmises_chain.demo``): T = 300 samples of a
prior draw with kappa = 4, kappa_obs = 3, rank 5, 30 % missing (T = 100 in ``--quick``).
Each variant runs 4 chains (started at kappa = kappa_obs = 1, as far from the posterior as
a user's start may be), ``tune`` iterations discarded, then ``draws`` iterations; one
iteration is what one ``pm.sample`` draw does with the steps plain ``pm.sample()`` assigns:

* ``conditional``: FFBS of ``x`` by :func:`pmctx.vonmises.chain.sample_chain` (the serial
  one-chain kernel), then 2 slice updates of kappa given ``x`` (:func:`_slice_kappa`, here
  only: the package's former ``hyper_update="conditional"``, removed as it lost to the
  collapsed update, docs/guides/choosing_a_sampler.md) and 2 of kappa_obs given ``x``.
  Baseline.
* ``collapsed``: :func:`pmctx.vonmises.chain_collapsed.collapsed_update`, one slice update
  of each of log kappa, log kappa_obs with ``x`` summed out, then one FFBS draw of ``x``.

Reported: bulk ESS (ArviZ, 4 chains) of kappa and of kappa_obs divided by the CPU seconds of
the draw phase (``time.process_time``, which counts numba's threads too), R-hat, and the
ratio of the worst of the two ESS/s to the baseline's.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np

from pmctx.vonmises.chain import CHAIN_KAPPA_PRIOR, chain_log_normaliser, sample_chain
from pmctx.vonmises.chain_collapsed import collapsed_update
from pmctx.vonmises.hyper import (
    kappa_obs_statistics,
    log_gamma_density,
    sample_kappa_obs,
    slice_sample,
)
from pmctx.vonmises.potentials import natural_field

KAPPA, KAPPA_OBS, RANK, MISSING = 4.0, 3.0, 5, 0.3


def _slice_kappa(x, kappa, rank, rng, n_steps=2):
    """Slice updates of kappa given the angles: prior + edge potentials - log Z_T(kappa)."""
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    cos_sum = np.cos(x[:-1, None] - phases) + np.cos(x[1:, None] - phases)

    def log_density(k):
        if k <= 0:
            return -np.inf
        edges = np.logaddexp.reduce(k * cos_sum, axis=1).sum()
        prior = log_gamma_density(k, *CHAIN_KAPPA_PRIOR)
        return float(prior + edges - chain_log_normaliser(k, rank, x.size))

    for _ in range(n_steps):
        kappa = slice_sample(log_density, kappa, rng)
    return kappa


def _conditional(ffbs):
    def iterate(state, z, observed, rng):
        x, kappa, kappa_obs = state
        x = ffbs(natural_field(z, observed, kappa_obs), kappa, RANK, rng)
        kappa = _slice_kappa(x, kappa, RANK, rng)
        kappa_obs = sample_kappa_obs(kappa_obs_statistics(x, z, observed), kappa_obs, rng)
        return x, kappa, kappa_obs

    return iterate


def _collapsed(state, z, observed, rng):
    new = collapsed_update(z, observed, state[1], state[2], RANK, rng)
    return new.x, new.kappa, new.kappa_obs


VARIANTS = {
    "conditional": _conditional(lambda f, k, r, rng: sample_chain(f, k, r, rng)[0]),
    "collapsed": _collapsed,
}


def _data(length: int, seed: int = 0):
    from pmctx.models.vonmises_chain import simulate

    _, y = simulate(
        length, kappa=KAPPA, kappa_obs=KAPPA_OBS, rank=RANK, missing=MISSING, random_seed=seed
    )
    observed = ~np.isnan(y)
    return np.where(observed, y, 0.0), observed


def _run(iterate, z, observed, tune: int, draws: int, chains: int = 4):
    trace = np.empty((2, chains, draws))
    cpu = 0.0
    for chain in range(chains):
        rng = np.random.default_rng(100 + chain)
        state = (np.zeros(z.size), 1.0, 1.0)
        for _ in range(tune):
            state = iterate(state, z, observed, rng)
        start = time.process_time()
        for i in range(draws):
            state = iterate(state, z, observed, rng)
            trace[:, chain, i] = state[1], state[2]
        cpu += time.process_time() - start
    return trace, cpu


def run(quick: bool = False) -> list[dict]:
    length, tune, draws = (100, 200, 500) if quick else (300, 1000, 1000)
    z, observed = _data(length)
    for iterate in VARIANTS.values():  # compile and warm every kernel before timing
        _run(iterate, z, observed, 2, 2, chains=1)
    rows, baseline = [], None
    for variant, iterate in VARIANTS.items():
        trace, cpu = _run(iterate, z, observed, tune, draws)
        ess = [float(az.ess(trace[i], method="bulk")) for i in range(2)]
        rhat = [float(az.rhat(trace[i])) for i in range(2)]
        worst = min(ess) / cpu
        baseline = worst if baseline is None else baseline
        rows.append(
            {
                "benchmark": "vonmises_chain",
                "variant": variant,
                "size": f"T={length} R={RANK} 4x({tune}+{draws})",
                "seconds_per_sweep": cpu / (4 * draws),
                "sweeps_per_s": 4 * draws / cpu,
                "ess_per_s": worst,
                "baseline": None if variant == "conditional" else "conditional",
                "ratio_vs_baseline": None if variant == "conditional" else worst / baseline,
                "notes": (
                    f"bulk ESS kappa {ess[0]:.0f}, kappa_obs {ess[1]:.0f}; ESS/CPU-s kappa "
                    f"{ess[0] / cpu:.1f}, kappa_obs {ess[1] / cpu:.1f}; R-hat {rhat[0]:.3f}, "
                    f"{rhat[1]:.3f}; CPU {cpu:.1f} s"
                ),
            }
        )
    return rows

"""Is the IBP's extra one-trial feature the posterior? Exact singleton odds beside long runs.

For each synthetic data set (:func:`pmctx.ibp.data.visuomotor_data`, N = 100 and 1,000,
(K, sigma_n) = (4, 0.3), (3, 0.2), (4, 0.5), seeds 0 and 1):

* ``exact``: :func:`pmctx.ibp.diagnostics.singleton_log_odds` at the true ``Z, A, Y`` with
  (a) the generator's hyperparameters (``sigma_n, lam, eps`` as generated, ``phi`` the true
  pixel density 1/6, ``sigma_A`` the rms of the true force entries, ``alpha = 1``), and
  (b) the learned-default posterior (every hyperparameter learned under ``HYPER_PRIORS``):
  the mean over 40 kept draws of the run below of the implied ``P(n_active > K)``;
* ``sampler``: chains of the package's kernel (joint row move) with the hyperparameters
  learned (one chain from the truth, one from the default start: ``Z = 0`` below 500 trials,
  :func:`pmctx.ibp.start.subsample_start` from 500) and one chain with them fixed at (a),
  from the truth; first quarter dropped; ``P(n_active = K)``, ``P(n_active > K)`` and
  ``P(n_shared = K)`` (``n_shared``: features owned by two or more trials).

Run: ``python benchmarks/ibp_extra_features.py [--quick] [--out PATH]``; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.diagnostics import singleton_log_odds
from pmctx.ibp.hyper import HYPER_PRIORS, update_hyper
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.ibp.start import START_HYPER, subsample_start

NAMES = ("alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")
GENERATORS = [(4, 0.3), (3, 0.2), (4, 0.5)]
K_MAX = 10


def _hyper(values) -> IBPHyper:
    return IBPHyper(**{("sigma_a" if k == "sigma_A" else k): float(v) for k, v in values.items()})


def generator_hyper(data, sigma_n) -> dict:
    """The generating values (``alpha = 1``: the generator has no IBP concentration)."""
    return dict(alpha=1.0, sigma_n=sigma_n, sigma_A=float(np.sqrt(np.mean(data.A**2))),
                phi=float(data.Y.mean()), lam=0.9, eps=0.05)  # fmt: skip


def truth_state(data) -> IBPState:
    n, k = data.Z.shape
    Z = np.zeros((n, K_MAX))
    Z[:, :k] = data.Z
    A = np.zeros((K_MAX, data.A.shape[1]))
    A[:k] = data.A
    Y = np.zeros((K_MAX, data.Y.shape[1]))
    Y[:k] = data.Y
    return IBPState.from_arrays(Z, A, Y)


def run_chain(data, state, values, learned, sweeps, rng):
    """Sweeps of the package kernel (+ hyperparameter updates); kept draws' stats."""
    keep = sweeps - sweeps // 4
    n_active = np.empty(keep, dtype=np.int64)
    n_shared = np.empty(keep, dtype=np.int64)
    hyper_draws = []
    for s in range(sweeps):
        gibbs_sweep(state, data.F, data.X, _hyper(values), rng)
        if learned:
            update_hyper(values, learned, state.Z, state.A, state.Y, data.F, data.X,
                         HYPER_PRIORS, rng, pi_logit=state.pi_logit)  # fmt: skip
        if s >= sweeps - keep:
            m = state.Z.sum(axis=0)
            n_active[s - (sweeps - keep)] = np.count_nonzero(m)
            n_shared[s - (sweeps - keep)] = np.count_nonzero(m >= 2)
            hyper_draws.append(dict(values))
    return n_active, n_shared, hyper_draws


def one_data_set(n, k, sigma_n, seed, sweeps) -> dict:
    data = visuomotor_data(n, n_features=k, sigma_n=sigma_n, random_seed=seed)
    gen = generator_hyper(data, sigma_n)
    truth = (data.Z, data.A, data.Y, data.F, data.X)
    exact_gen = singleton_log_odds(*truth, gen, K_max=K_MAX)
    cpu = time.process_time()
    chains = {}
    rng = np.random.default_rng((seed, n, k))
    for name in ("learned_truth", "learned_default", "fixed_truth"):
        learned = () if name == "fixed_truth" else NAMES
        values = dict(gen) if name == "fixed_truth" else dict(START_HYPER)
        if name == "learned_default" and n >= 500:
            st = subsample_start(data.F, data.X, K_MAX, learned=NAMES, rng=rng)
            values = {key: st[key] for key in NAMES}
            state = IBPState.from_arrays(st["Z"], st["A"], st["Y"])
        elif name == "learned_default":
            state = IBPState.from_arrays(np.zeros((n, K_MAX)), np.zeros((K_MAX, 2)),
                                         np.zeros((K_MAX, data.X.shape[1])))  # fmt: skip
        else:
            state = truth_state(data)
        na, ns, hyper_draws = run_chain(data, state, values, learned, sweeps, rng)
        chains[name] = dict(
            p_n_active_k=float(np.mean(na == k)),
            p_n_active_gt_k=float(np.mean(na > k)),
            p_n_shared_k=float(np.mean(ns == k)),
            hyper_draws=hyper_draws,
        )
    cpu = time.process_time() - cpu
    # Exact odds under the learned posterior: averaged over kept hyperparameter draws.
    draws = chains["learned_truth"]["hyper_draws"] + chains["learned_default"]["hyper_draws"]
    pick = np.linspace(0, len(draws) - 1, 40).astype(int)
    p_learned = [singleton_log_odds(*truth, draws[j], K_max=K_MAX)["p_extra"] for j in pick]
    post_mean = {key: float(np.mean([d[key] for d in draws])) for key in NAMES}
    exact_mean = singleton_log_odds(*truth, post_mean, K_max=K_MAX)
    for c in chains.values():
        del c["hyper_draws"]
    lo = exact_gen["log_odds"]
    return dict(
        N=n, K=k, sigma_n=sigma_n, seed=seed, sweeps_per_chain=sweeps, cpu_s=cpu,
        generator_hyper=gen, learned_posterior_mean_hyper=post_mean,
        exact_generator_p_extra=exact_gen["p_extra"],
        exact_generator_expected_extra=exact_gen["expected_extra"],
        exact_generator_max_log_odds=float(lo.max()),
        exact_generator_rows_log_odds_gt_minus3=int((lo > -3).sum()),
        exact_learned_p_extra_mean=float(np.mean(p_learned)),
        exact_learned_p_extra_range=[float(np.min(p_learned)), float(np.max(p_learned))],
        exact_learned_postmean_p_extra=exact_mean["p_extra"],
        chains=chains,
    )  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="benchmarks/results/ibp_extra_features.json")
    args = parser.parse_args(argv)
    plan = [(100, 400 if args.quick else 4000), (1000, 60 if args.quick else 1000)]
    seeds = (0,) if args.quick else (0, 1)
    gens = GENERATORS[:1] if args.quick else GENERATORS
    rows = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for n, sweeps in plan:
        for k, sigma_n in gens:
            for seed in seeds:
                rows.append(one_data_set(n, k, sigma_n, seed, sweeps))
                print(json.dumps({key: v for key, v in rows[-1].items()
                                  if "hyper" not in key}), flush=True)  # fmt: skip
                payload = dict(benchmark="ibp_extra_features", load=os.getloadavg(), rows=rows)
                out.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

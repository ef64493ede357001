"""Birth/death move for small shared features: mixing of ``n_shared`` at N = 1,000.

Per data set (:func:`pmctx.ibp.data.visuomotor_data`, N = 1,000, (K, sigma_n) = (4, 0.3),
(3, 0.2), (4, 0.5)), four chains from the default start for this size (each its own
:func:`pmctx.ibp.start.subsample_start`, every hyperparameter learned), computed once and
shared by every variant, as are the chains' random seeds. Each sweep: ``moves`` birth/death
proposals (:func:`pmctx.ibp.birth_death.birth_death_move`; 0 = the package kernel alone),
then the package sweep (joint row move, which also redraws ``pi | Z``) and the
hyperparameter updates. First half of each chain dropped. Reported: CPU s of the sweeps
(start excluded, same for all variants), R-hat and bulk ESS of ``n_shared`` (features owned
by >= 2 trials) and ``n_active``, ESS per CPU second, acceptance rates and the load average.

Run: ``python benchmarks/ibp_birth_death.py [--sweeps 500] [--moves 0 5] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import arviz as az
import numpy as np

from pmctx.ibp.birth_death import birth_death_move
from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.hyper import HYPER_PRIORS, update_hyper
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.ibp.start import subsample_start

NAMES = ("alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")
GENERATORS = [(4, 0.3), (3, 0.2), (4, 0.5)]
K_MAX = 10


def _hyper(values) -> IBPHyper:
    return IBPHyper(**{("sigma_a" if k == "sigma_A" else k): float(v) for k, v in values.items()})


def _stat(fn, x):
    x = x.astype(float)
    return None if np.ptp(x) == 0 else float(fn(x))


def run_variant(data, starts, seed, sweeps, moves) -> dict:
    keep = sweeps // 2
    n_shared = np.empty((len(starts), keep), dtype=np.int64)
    n_active = np.empty((len(starts), keep), dtype=np.int64)
    acc = {"birth": [0, 0], "death": [0, 0], "none": [0, 0]}
    cpu = time.process_time()
    for c, st in enumerate(starts):
        rng = np.random.default_rng((seed, c, 7))
        values = {key: st[key] for key in NAMES}
        state = IBPState.from_arrays(st["Z"].copy(), st["A"].copy(), st["Y"].copy())
        for s in range(sweeps):
            h = _hyper(values)
            for _ in range(moves):
                kind, ok = birth_death_move(state.Z, state.A, state.Y, data.F, data.X, h, rng)
                acc[kind][0] += 1
                acc[kind][1] += int(ok)
            gibbs_sweep(state, data.F, data.X, h, rng)
            update_hyper(values, NAMES, state.Z, state.A, state.Y, data.F, data.X,
                         HYPER_PRIORS, rng, pi_logit=state.pi_logit)  # fmt: skip
            if s >= sweeps - keep:
                m = state.Z.sum(axis=0)
                n_shared[c, s - (sweeps - keep)] = np.count_nonzero(m >= 2)
                n_active[c, s - (sweeps - keep)] = np.count_nonzero(m)
    cpu = time.process_time() - cpu
    ess_s = _stat(lambda x: az.ess(x), n_shared)
    ess_a = _stat(lambda x: az.ess(x), n_active)
    return dict(
        moves_per_sweep=moves,
        cpu_s=cpu,
        cpu_ms_per_sweep=1000 * cpu / (len(starts) * sweeps),
        rhat_n_shared=_stat(az.rhat, n_shared),
        rhat_n_active=_stat(az.rhat, n_active),
        ess_n_shared=ess_s,
        ess_n_active=ess_a,
        ess_per_cpu_s_n_shared=None if ess_s is None else ess_s / cpu,
        ess_per_cpu_s_n_active=None if ess_a is None else ess_a / cpu,
        mean_n_shared_per_chain=n_shared.mean(axis=1).tolist(),
        acceptance={k: (v[1] / v[0] if v[0] else None) for k, v in acc.items()},
        proposals=acc,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=500)
    parser.add_argument("--moves", type=int, nargs="+", default=[0, 5])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--generators", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default="benchmarks/results/ibp_birth_death.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for g in args.generators:
        k, sigma_n = GENERATORS[g]
        for seed in args.seeds:
            data = visuomotor_data(1000, n_features=k, sigma_n=sigma_n, random_seed=seed)
            rngs = [np.random.default_rng((seed, c)) for c in range(4)]
            starts = [subsample_start(data.F, data.X, K_MAX, learned=NAMES, rng=r) for r in rngs]
            for moves in args.moves:
                r = run_variant(data, starts, seed, args.sweeps, moves)
                r.update(N=1000, K=k, sigma_n=sigma_n, seed=seed, sweeps=args.sweeps,
                         load_after=os.getloadavg())  # fmt: skip
                rows.append(r)
                print(json.dumps(r), flush=True)
                out.write_text(json.dumps({"benchmark": "ibp_birth_death", "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

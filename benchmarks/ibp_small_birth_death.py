"""How often ``sample(F, X)`` at every default converges on small data, with and without births.

The fit a user gets with nothing set (``pmctx.models.ibp.sample``: K_max = 10, every
hyperparameter learned, 4 chains x (1000 + 1000), one process) on
``visuomotor_data(n, random_seed=s)``, judged by its own check (``convergence_report`` of the
label-invariant quantities). ``none``: ``IBPGibbs`` without birth/death proposals, the default
below 500 trials until 2026-12-02; ``births``: 5 proposals per sweep
(``BIRTH_DEATH_PER_SWEEP``), the default from ``BIRTH_DEATH_MIN_TRIALS`` trials on. Per fit:
CPU seconds, whether it passed the check, the largest R-hat and the smallest ESS of the
checked quantities.

Run: ``python -m benchmarks.ibp_small_birth_death [--sizes 30 60] [--seeds 0 1 2 3]
[--fit-seeds 1] [--out PATH]``; writes JSON (default
``benchmarks/results/ibp_small_birth_death.json``).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "ibp_small_birth_death.json"
VARIANTS = ("none", "births")


def fit(n_trials: int, data_seed: int, fit_seed: int, variant: str) -> dict:
    """One default fit with the variant's birth/death policy; returns its row."""
    from pmctx.models.ibp import sample

    import pmctx.steps.ibp_gibbs as ibp_gibbs
    from pmctx.convergence import convergence_report
    from pmctx.ibp.data import visuomotor_data
    from pmctx.registry import invariants_of

    data = visuomotor_data(n_trials, random_seed=data_seed)
    default = ibp_gibbs.BIRTH_DEATH_MIN_TRIALS
    ibp_gibbs.BIRTH_DEATH_MIN_TRIALS = 0 if variant == "births" else 10**9
    start = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = sample(data.F, data.X, random_seed=fit_seed, progressbar=False,
                           check_convergence=False, cores=1)  # fmt: skip
    finally:
        ibp_gibbs.BIRTH_DEATH_MIN_TRIALS = default
    cpu = time.process_time() - start
    report = convergence_report(invariants_of(idata))
    return {
        "variant": variant,
        "n_trials": n_trials,
        "data_seed": data_seed,
        "fit_seed": fit_seed,
        "cpu_s": round(cpu, 1),
        "converged": bool(report["converged"].all()),
        "r_hat_max": round(float(report["r_hat_largest"].max()), 4),
        "ess_min": round(float(report[["ess_bulk", "ess_tail"]].min().min()), 1),
    }


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 60, 100, 150, 300])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--fit-seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    for n_trials in args.sizes:
        for fit_seed in args.fit_seeds:
            for variant in VARIANTS:
                for data_seed in args.seeds:
                    rows.append(fit(n_trials, data_seed, fit_seed, variant))
                    print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "ibp_small_birth_death", "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()

"""Latent-cause fits for a whole study (issue 27 items 3-4), before and after in one run.

* ``crp_filter``: the particle filter kernel (T = 200 renewal design, alpha = 0.1) at
  M = 1,000 and 10,000 particles: the kernel before its compact-storage rewrite
  (``tests/oracles/crp_filter_reference.py``), the per-particle compact kernel before the
  node rewrite (``tests/oracles/crp_filter_compact.py``, "before") and today's (one state
  per distinct particle history, "after"); target M = 10,000 < 0.5 s.
* ``crp_ml_fit``: one 100-trial subject (``recovery_design(100)``, linear-Gaussian CR), ML
  fit of ``lcm`` and ``lcm_sticky`` with M = 100 particles (common random numbers) and with
  the local MAP; "before" runs the compact per-particle kernel (its grid in one compiled
  call, as today); target < 2 s.
* ``crp_study``: ``pmctx batch crp`` (2 workers) on a simulated study (100 subjects, quick:
  12), three variants each, then random-effects BMS; target 100 subjects < 5 min. The notes
  give the recovery: how often the best variant (log evidence) is the generating one, the
  BMS expected frequencies against the generating ones, and the rank correlation of fitted
  and generating alpha and a among subjects whose best variant is the generating one.
* ``crp_posterior``: the per-subject posterior of ``lcm`` (``sample_subject``, 2 chains),
  before (random-walk PMMH on alpha, a; NUTS on gain, level, sd) and after ((level, gain)
  integrated out of PMMH's acceptance and redrawn exactly; grid-fitted t independence
  proposal after tuning; NUTS on sd); target < 20 s with R-hat <= 1.01.

Times are wall-clock (``seconds_per_sweep`` = seconds per call) with the process CPU time in
the notes: on a shared 2-CPU machine the wall time also measures the queue.
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pmctx.conditioning import shipped_design
from pmctx.conditioning.design import as_feature_matrix


def _row(benchmark, variant, size, seconds, *, baseline=None, base_seconds=None, notes=""):
    return {
        "benchmark": benchmark,
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": 1.0 / seconds,
        "ess_per_s": None,
        "baseline": baseline,
        "ratio_vs_baseline": None if base_seconds is None else base_seconds / seconds,
        "notes": notes,
    }


def _timed(fn, repeats):
    # Best wall and CPU seconds of ``repeats`` calls, and the last call's result.
    best, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best, best_cpu, out


def bench_filter(quick):
    from pmctx.conditioning.filter_kernel import _filter_kernel
    from tests.oracles.crp_filter_compact import filter_kernel as compact
    from tests.oracles.crp_filter_reference import filter_kernel as reference

    design = shipped_design("renewal_aba", n_acquisition=80, n_extinction=80, n_test=40)
    F, _ = as_feature_matrix(design)
    T = F.shape[0]
    rows = []
    for M in (1000, 10000):
        rng = np.random.default_rng(0)
        u, v = rng.random((T, M)), rng.random((T, M))
        args = (F, 0.1, 1.0, 1.0, 1.0, 0.0, T, False, u, v, np.zeros(1), 0, 1.0, 0.0)
        for kernel in (reference, compact, _filter_kernel):  # compile / load
            kernel(*args[:7], False, u[:, :10], v[:, :10], *args[10:])
        repeats = 1 if quick and M == 10000 else 3
        t_ref, c_ref, _ = _timed(lambda a=args: reference(*a), repeats)
        t_old, c_old, old = _timed(lambda a=args: compact(*a), repeats)
        t_new, c_new, new = _timed(lambda a=args: _filter_kernel(*a), repeats)
        same = all(np.array_equal(x, y) for x, y in zip(old, new, strict=True))
        rows.append(_row("crp_filter", "reference kernel (two rewrites ago)", f"T=200, M={M}",
                         t_ref, notes=f"CPU {c_ref:.3f} s"))  # fmt: skip
        rows.append(_row("crp_filter", "compact per-particle kernel (before)", f"T=200, M={M}",
                         t_old, baseline="reference kernel (two rewrites ago)",
                         base_seconds=t_ref, notes=f"CPU {c_old:.3f} s"))  # fmt: skip
        met = "" if M != 10000 else f"; target < 0.5 s: {'met' if t_new < 0.5 else 'NOT met'}"
        rows.append(_row("crp_filter", "node kernel (after)", f"T=200, M={M}", t_new,
                         baseline="compact per-particle kernel (before)", base_seconds=t_old,
                         notes=f"CPU {c_new:.3f} s (before {c_old:.3f} s); same arrays as "
                         f"before bit for bit: {same}{met}"))  # fmt: skip
    return rows


@functools.cache
def _compact_V_many():
    """``_filter_V_many`` over the compact per-particle kernel (compiled on first use)."""
    import numba

    from tests.oracles.crp_filter_compact import filter_kernel as compact

    @numba.njit
    def many(F, points, n_slots, local_map, u_resample, u_cause, times, kernel_kind, timescale):
        out = np.empty((points.shape[0], F.shape[0]))
        for p in range(points.shape[0]):
            out[p] = compact(F, points[p, 0], points[p, 1], points[p, 2], points[p, 3],
                             points[p, 4], n_slots, local_map, u_resample, u_cause, times,
                             kernel_kind, timescale, points[p, 5])[0]  # fmt: skip
        return out

    return compact, many


@contextlib.contextmanager
def _before():
    """The fits as they ran before: the compact per-particle kernel (grid in one call)."""
    import pmctx.conditioning.likelihood as likelihood

    saved = likelihood._filter_kernel, likelihood._filter_V_many
    likelihood._filter_kernel, likelihood._filter_V_many = _compact_V_many()
    try:
        yield
    finally:
        likelihood._filter_kernel, likelihood._filter_V_many = saved


def bench_ml_fits(quick):
    from pmctx.conditioning.fitting import fit_subject, recovery_design, simulate_subject

    design = recovery_design(100)
    truth = {"alpha": 0.5, "a": 1.0, "stickiness": 1.0, "gain": 1.0, "sd": 0.1}
    data = simulate_subject(design, truth, variant="lcm_sticky", rng=0)
    rows = []
    variants = ("lcm",) if quick else ("lcm", "lcm_sticky")
    for method in ("particle", "local_map"):
        for variant in variants:

            def fit(method=method, variant=variant):
                return fit_subject(data["responses"], design, variant=variant, method=method,
                                   random_seed=1)  # fmt: skip

            fit()  # compile / load both kernels
            with _before():
                fit()
                t_old, c_old, old = _timed(fit, 1 if quick else 2)
            t_new, c_new, new = _timed(fit, 1 if quick else 2)
            size = "T=100, " + ("M=100, CRN" if method == "particle" else "local MAP")
            rows.append(_row("crp_ml_fit", f"{variant}, before", size, t_old,
                             notes=f"CPU {c_old:.2f} s; {old.n_evals} filter runs"))  # fmt: skip
            rows.append(_row(
                "crp_ml_fit", f"{variant}, after", size, t_new,
                baseline=f"{variant}, before", base_seconds=t_old,
                notes=f"CPU {c_new:.2f} s; target < 2 s: {'met' if t_new < 2 else 'NOT met'}; "
                f"log lik {new.log_likelihood:.6f} (before {old.log_likelihood:.6f})",
            ))  # fmt: skip
    return rows


def bench_study(quick, n=None):
    import pandas as pd
    from scipy.stats import spearmanr

    from pmctx.conditioning.study import simulate_study

    n = (12 if quick else 100) if n is None else n
    table, truth = simulate_study(n, n_trials=100, rng=0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        table.to_csv(tmp / "subjects.csv", index=False)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pmctx", "batch", "crp", "--data", str(tmp / "subjects.csv"),
             "--out", str(tmp / "fits"), "--workers", "2"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"pmctx batch crp failed:\n{done.stderr[-3000:]}")
        units = pd.read_csv(tmp / "fits" / "units_models.csv", index_col="unit")
        bms = pd.read_csv(tmp / "fits" / "bms.csv", index_col="model")
        cpu = pd.read_csv(tmp / "fits" / "summary.csv")["cpu_seconds"].sum()
    hit = units["best_variant"] == truth.loc[units.index, "variant"]
    generating = truth["variant"].value_counts(normalize=True)
    freq = ", ".join(
        f"{v} {bms.loc[v, 'expected_frequency']:.2f} (true {generating.get(v, 0):.2f}, "
        f"pxp {bms.loc[v, 'pxp']:.2f})"
        for v in bms.index
    )
    recov = []
    for p in ("alpha", "a"):
        keep = hit & truth.loc[units.index, p].notna()
        fitted = [units.loc[u, f"{truth.loc[u, 'variant']}.{p}"] for u in units.index[keep]]
        rho = spearmanr(truth.loc[units.index[keep], p], fitted).statistic
        recov.append(f"{p} rank corr {rho:.2f} (n={int(keep.sum())})")
    print(pd.crosstab(truth.loc[units.index, "variant"], units["best_variant"]))
    print(bms)
    return [
        _row(
            "crp_study",
            "pmctx batch crp, 3 variants + BMS (2 workers)",
            f"{n} subjects x T=100, M=100",
            seconds,
            notes=(f"target < 300 s: {'met' if seconds < 300 else 'NOT met'}; " if n == 100 else "")
            + f"fit CPU {cpu:.0f} s; best variant = "
            f"generating for {hit.mean():.0%}; BMS frequencies {freq}; BOR "
            f"{bms['bor'].iloc[0]:.2g}; " + "; ".join(recov),
        )
    ]


@contextlib.contextmanager
def _old_posterior_sampler():
    """The PMMH sampler before issue 27's fix: random walk only, NUTS on (gain, level, sd)."""
    from pmctx.conditioning import posterior

    class RandomWalkOnly(posterior.ParticleMarginalMH):
        def __init__(self, *args, **kwargs):
            kwargs.update(independence_prob=0.0, collapse=None)
            super().__init__(*args, **kwargs)

    saved = posterior.ParticleMarginalMH, posterior._GaussianBlock.build
    posterior.ParticleMarginalMH = RandomWalkOnly
    posterior._GaussianBlock.build = classmethod(lambda cls, *args: None)
    try:
        yield
    finally:
        posterior.ParticleMarginalMH = saved[0]
        posterior._GaussianBlock.build = saved[1]


def _cpu_with_children():
    """CPU seconds of this process and of its waited-for children (forked chains)."""
    import resource

    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def bench_posterior(quick, draws=None):
    """Before (random-walk PMMH + NUTS) and after (collapsed (level, gain), grid proposal),
    the latter also with its two chains in forked processes (``cores=2``)."""
    import arviz as az

    from pmctx.conditioning.fitting import recovery_design, simulate_subject
    from pmctx.conditioning.posterior import sample_subject

    design = recovery_design(100)
    truth = {"alpha": 0.5, "a": 1.0, "gain": 1.0, "sd": 0.1}
    data = simulate_subject(design, truth, variant="lcm", rng=0)
    draws = draws or (300 if quick else 1000)
    names = ["alpha", "a", "gain", "level", "sd"]
    rows, seconds = [], {}
    for label in ("before", "after", "after, cores=2"):
        patch = _old_posterior_sampler() if label == "before" else contextlib.nullcontext()
        with patch:
            start, cpu = time.perf_counter(), _cpu_with_children()
            idata = sample_subject(data["responses"], design, variant="lcm", draws=draws,
                                   tune=draws, chains=2, random_seed=2,
                                   cores=2 if "cores" in label else 1)  # fmt: skip
            seconds[label], cpu = time.perf_counter() - start, _cpu_with_children() - cpu
        rhat = az.rhat(idata, var_names=names)
        ess = az.ess(idata, var_names=names)
        max_rhat = float(rhat.to_array().max())
        min_ess = float(ess.to_array().min())
        accept = float(idata.sample_stats["accepted"].mean())
        per = ", ".join(f"{n} {float(rhat[n]):.3f}/{float(ess[n]):.0f}" for n in names)
        met = seconds[label] < 20 and max_rhat <= 1.01
        rows.append(
            _row(
                "crp_posterior",
                f"sample_subject lcm, {label} (2 chains): "
                + (
                    "random-walk PMMH + NUTS"
                    if label == "before"
                    else "PMMH, (level, gain) collapsed, grid t proposal + NUTS on sd"
                    + (" (chains in 2 forked processes, same draws)" if "cores" in label else "")
                ),
                f"T=100, M=100, {draws}+{draws} draws/chain",
                seconds[label],
                baseline=None if label == "before" else "before",
                base_seconds=None if label == "before" else seconds["before"],
                notes=f"CPU {cpu:.1f} s; max R-hat {max_rhat:.3f}; min ESS {min_ess:.0f}; "
                f"R-hat/ESS {per}; PMMH acceptance {accept:.2f}; target < 20 s with R-hat <= "
                f"1.01: {'met' if met else 'NOT met'}",
            )
        )
        print(rows[-1])
    return rows


def run(quick: bool = False) -> list[dict]:
    return [*bench_filter(quick), *bench_ml_fits(quick), *bench_study(quick),
            *bench_posterior(quick)]  # fmt: skip


def main(argv=None) -> int:
    """``python -m benchmarks.bench_crp_study --subjects 50``: the study row alone, at any
    size, written to ``benchmarks/results/crp_study_subjects<N>.json``; ``--posterior 300``:
    the posterior rows alone (before/after), replacing those of that size in
    ``crp_study.json``; ``--kernels``: the filter and ML-fit rows alone, replacing them."""
    import argparse
    import json
    import platform

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_crp_study")
    parser.add_argument("--subjects", type=int, default=50)
    parser.add_argument(
        "--posterior",
        type=int,
        metavar="DRAWS",
        help="run only the posterior rows (before/after) at DRAWS+DRAWS draws per chain and "
        "replace the crp_posterior rows of that size in benchmarks/results/crp_study.json",
    )
    parser.add_argument(
        "--kernels",
        action="store_true",
        help="run only the filter and ML-fit rows (before/after, full sizes) and replace them "
        "in benchmarks/results/crp_study.json",
    )
    args = parser.parse_args(argv)
    path = Path(__file__).resolve().parent / "results" / "crp_study.json"
    if args.posterior or args.kernels:
        record = json.loads(path.read_text())
        if args.posterior:
            new = bench_posterior(True, draws=args.posterior)
            size = f"{args.posterior}+{args.posterior} draws/chain"

            def replaced(r):
                return r["benchmark"] == "crp_posterior" and r["size"].endswith(size)
        else:
            new = [*bench_filter(False), *bench_ml_fits(False)]

            def replaced(r):
                return r["benchmark"] in ("crp_filter", "crp_ml_fit")

        record["rows"] = [r for r in record["rows"] if not replaced(r)] + new
        path.write_text(json.dumps(record, indent=1))
        print(json.dumps(new, indent=1))
        return 0
    start = time.perf_counter()
    rows = bench_study(False, n=args.subjects)
    out = Path(__file__).resolve().parent / "results" / f"crp_study_subjects{args.subjects}.json"
    record = {
        "benchmark": "crp_study",
        "quick": False,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "elapsed_s": time.perf_counter() - start,
        "rows": rows,
    }
    out.write_text(json.dumps(record, indent=1))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Do default IBP fits end converged? Simulated bars-style data sets from 30 to 10,000 trials.

Each case is one data set of :func:`pmctx.ibp.data.bars_data` (true feature count 2-8, bar or
overlapping blob images, 1-3 force dimensions, image and force noise levels), fitted with
``pmctx.models.ibp.sample(F, X, random_seed=seed, progressbar=False, cores=1)`` and nothing
else: the package defaults (K_max, draws, tune, chains, priors, moves, start). Per fit it
records the CPU seconds of this process, whether the model's own convergence report passes
(``pmctx.convergence.convergence_report(pmctx.registry.invariants_of(idata))``), the largest
R-hat and smallest ESS in that report, and per chain the mode and mean of ``n_active`` and of
``n_shared = n_active - n_singletons``: chains "disagree" when their modes of ``n_shared``
differ. When ``sample`` takes ``until_converged`` the fit runs with it (the default) and the
verdict on the first ``draws`` is recorded beside the final one and the number of extensions.

Results are merged into the JSON by case id and ``--label`` (e.g. "before", "after"), so
subsets can run one after another or in parallel processes writing separate ``--out`` files
(``--merge`` joins them)::

    nice -n 10 python benchmarks/ibp_defaults_benchmark.py --label after --sizes 30,45
    nice -n 10 python benchmarks/ibp_defaults_benchmark.py --label after --cases 0-9
    python benchmarks/ibp_defaults_benchmark.py --table        # print what is stored
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "ibp_defaults_benchmark.json"

# Trials per data set: log-spaced from 30 to 10,000, more small ones, a few large (a default
# fit at 10,000 trials costs about 25 CPU minutes).
SIZES = (
    [30] * 6 + [45] * 4 + [70] * 5 + [100] * 6 + [150] * 5 + [230] * 4 + [350] * 3
    + [550] * 2 + [1000] * 2 + [2000] + [4000] + [10000] * 2
)  # fmt: skip
PATTERN_CYCLE = ("bars", "blobs", "bars")
SIGMA_CYCLE = (0.3, 0.2, 0.5, 0.3)
# Image noise: (lam, eps) of the noisy-OR (clean, default, noisy).
NOISE_CYCLE = ((0.9, 0.05), (0.95, 0.02), (0.8, 0.1))
DIMS_CYCLE = (2, 1, 3, 2)


def _cpu_seconds() -> float:
    """CPU of this process and its finished children: a fit sampling until converged runs its
    chains in child processes."""
    import resource

    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def cases() -> list[dict]:
    """The benchmark's data sets: one dict of :func:`bars_data` arguments and a fit seed each.

    Case 0 is the issue's data set (100 trials, four 6 x 6 bars, two force dimensions,
    force noise 0.3).

    Returns
    -------
    list of dict
    """
    out = [dict(n_trials=100, n_features=4, pattern="bars", n_dims=2, sigma_n=0.3, lam=0.9,
                eps=0.05, p_own=0.4, data_seed=1000, fit_seed=1)]  # fmt: skip
    for i, n in enumerate(SIZES[1:], start=1):
        lam, eps = NOISE_CYCLE[i % 3]
        out.append(
            dict(
                n_trials=n,
                n_features=2 + (i * 5) % 7,  # 2..8, spread over sizes
                pattern=PATTERN_CYCLE[i % 3],
                n_dims=DIMS_CYCLE[i % 4],
                sigma_n=SIGMA_CYCLE[(i // 3) % 4],
                lam=lam,
                eps=eps,
                p_own=(0.25, 0.4, 0.3)[(i // 2) % 3],
                data_seed=1000 + i,
                fit_seed=i + 1,
            )
        )
    for i, case in enumerate(out):
        case["id"] = i
    return out


def _per_chain(idata) -> dict:
    from pmctx.ibp.fit_checks import shared_feature_modes  # what the fit's warning reads

    na = np.asarray(idata.posterior["n_active"].values)
    ns = na - np.asarray(idata.sample_stats["n_singletons"].values)

    def modes(x):
        return [int(np.bincount(row.astype(int)).argmax()) for row in x]

    return {
        "mode_n_active": modes(na),
        "mean_n_active": [round(float(v), 3) for v in na.mean(axis=1)],
        "mode_n_shared": shared_feature_modes(idata),
        "mean_n_shared": [round(float(v), 3) for v in ns.mean(axis=1)],
    }


def _verdict(quantities) -> dict:
    from pmctx.convergence import convergence_report

    rep = convergence_report(quantities)
    return {
        "converged": bool(rep["converged"].all()),
        "max_rhat": round(float(rep["r_hat_largest"].max()), 4),
        "min_ess": round(float(np.minimum(rep["ess_bulk"], rep["ess_tail"]).min()), 1),
        "failing": [str(q) for q in rep.index[~rep["converged"]]],
    }


def run_case(case: dict) -> dict:
    """Fit one case at the package defaults and return its record."""
    from pmctx.models import ibp

    from pmctx.ibp.data import bars_data
    from pmctx.registry import invariants_of

    data_args = {k: case[k] for k in ("n_trials", "n_features", "pattern", "n_dims",
                                      "sigma_n", "lam", "eps", "p_own")}  # fmt: skip
    data = bars_data(**data_args, random_seed=case["data_seed"])
    kwargs = dict(random_seed=case["fit_seed"], progressbar=False, cores=1)
    continuation = "until_converged" in inspect.signature(ibp.sample).parameters
    start, wall_start = _cpu_seconds(), time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = ibp.sample(data.F, data.X, **kwargs)
    cpu = _cpu_seconds() - start
    wall = time.monotonic() - wall_start
    quantities = invariants_of(idata)
    record = {
        "id": case["id"],
        "case": case,
        "true_K": int(data.Z.any(axis=0).sum()),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "chains": int(quantities.sizes["chain"]),
        "draws": int(quantities.sizes["draw"]),
        "final": _verdict(quantities),
        "convergence_warning": any("Convergence" in type(w.message).__name__ for w in caught),
        **_per_chain(idata),
    }
    record["chains_disagree"] = len(set(record["mode_n_shared"])) > 1
    attrs = dict(idata.sample_stats.attrs)
    if continuation:
        first = _first_draws(idata, quantities, attrs)
        record["first_pass"] = _verdict(first) if first is not None else None
        record["extensions"] = int(attrs.get("pmctx_extensions", 0) or 0)
        record["stop_reason"] = str(attrs.get("pmctx_stop_reason", ""))
        record["draws_kept"] = int(attrs.get("pmctx_draws_kept", quantities.sizes["draw"]))
        # Sampling seconds (wall) at each look: the first is what a fixed-length run would
        # have cost, since a continued run equals a fixed one draw for draw.
        record["look_s"] = [float(c.split(":")[-1]) for c in attrs.get("pmctx_checks", [])]
    else:
        record["first_pass"] = record["final"]
        record["extensions"] = None
    return record


def _first_draws(idata, quantities, attrs):
    """The invariants on the first ``draws`` requested (before any continuation)."""
    from pmctx.sampling import SAMPLE_DEFAULTS

    first = int(attrs.get("pmctx_draws_requested", SAMPLE_DEFAULTS["draws"]))
    if first >= quantities.sizes["draw"]:
        return quantities
    return quantities.isel(draw=slice(0, first))


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"runs": {}}


def _save(path: Path, store: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(store, indent=1) + "\n")
    os.replace(tmp, path)


def _select(args) -> list[dict]:
    chosen = cases()
    if args.sizes:
        sizes = {int(s) for s in args.sizes.split(",")}
        chosen = [c for c in chosen if c["n_trials"] in sizes]
    if args.cases:
        ids = set()
        for part in args.cases.split(","):
            lo, _, hi = part.partition("-")
            ids.update(range(int(lo), int(hi or lo) + 1))
        chosen = [c for c in chosen if c["id"] in ids]
    if args.max_trials:
        chosen = [c for c in chosen if c["n_trials"] <= args.max_trials]
    return chosen[: args.limit] if args.limit else chosen


def table(store: dict) -> str:
    """One line per case and label, then the share converged and CPU per label."""
    lines = ["label   id     N  K pattern D sig_n lam   cpu_s first final max_rhat min_ess "
             "ext disagree modes(n_shared)"]  # fmt: skip
    summary = []
    for label, runs in sorted(store["runs"].items()):
        recs = sorted(runs.values(), key=lambda r: r["id"])
        for r in recs:
            c = r["case"]
            first = r["first_pass"]["converged"] if r.get("first_pass") else None
            lines.append(
                f"{label:7s} {r['id']:2d} {c['n_trials']:5d} {c['n_features']:2d} "
                f"{c['pattern']:7s} {c['n_dims']} {c['sigma_n']:.1f}  {c['lam']:.2f} "
                f"{r['cpu_s']:7.1f} {first!s:5s} {r['final']['converged']!s:5s} "
                f"{r['final']['max_rhat']:8.3f} {r['final']['min_ess']:7.0f} "
                f"{r.get('extensions')!s:3s} {r['chains_disagree']!s:5s} "
                f"{r['mode_n_shared']}"
            )
        n = len(recs)
        if n:
            ok_first = sum(bool(r["first_pass"] and r["first_pass"]["converged"]) for r in recs)
            ok_final = sum(r["final"]["converged"] for r in recs)
            cpu = sum(r["cpu_s"] for r in recs)
            summary.append(
                f"{label}: {n} fits, converged first pass {ok_first}/{n}, final {ok_final}/{n}, "
                f"chains disagree {sum(r['chains_disagree'] for r in recs)}/{n}, "
                f"CPU s total {cpu:.0f} (mean {cpu / n:.1f})"
            )
    return "\n".join([*lines, "", *summary])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current", help="name of this run (before/after)")
    parser.add_argument("--sizes", help="comma-separated trial counts to run")
    parser.add_argument("--cases", help="case ids, e.g. 0-9,12")
    parser.add_argument("--max-trials", type=int, help="skip cases with more trials")
    parser.add_argument("--limit", type=int, help="run at most this many cases")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--merge", type=Path, nargs="*", help="JSON files to merge into --out")
    parser.add_argument("--redo", action="store_true", help="refit cases already stored")
    parser.add_argument("--table", action="store_true", help="print the stored table only")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    if args.list:
        for c in cases():
            print(c)
        return
    store = _load(args.out)
    for other in args.merge or []:
        for label, runs in _load(other)["runs"].items():
            store["runs"].setdefault(label, {}).update(runs)
        _save(args.out, store)
    if args.table or args.merge:
        print(table(store))
        return
    runs = store["runs"].setdefault(args.label, {})
    for case in _select(args):
        if str(case["id"]) in runs and not args.redo:
            continue
        record = run_case(case)
        store = _load(args.out)  # another process may have written meanwhile
        store["runs"].setdefault(args.label, {})[str(case["id"])] = record
        runs = store["runs"][args.label]
        _save(args.out, store)
        f = record["final"]
        print(f"{args.label} case {case['id']} N={case['n_trials']} K={case['n_features']} "
              f"cpu {record['cpu_s']:.1f}s converged {f['converged']} rhat {f['max_rhat']} "
              f"ess {f['min_ess']} modes {record['mode_n_shared']} {f['failing']}",
              flush=True)  # fmt: skip
    print(table(store))


if __name__ == "__main__":
    main()

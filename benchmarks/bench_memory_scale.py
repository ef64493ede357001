"""Peak resident memory and wall time of fits at package defaults, against their size.

Cases (``--cases``; default ``DEFAULT_CASES``, the table of issue 31, at package defaults,
which takes hours on a shared 2-CPU machine; ``--shared`` runs ``SHARED_CASES``, the same
table with fewer draws where defaults take too long; ``--draws``/``--tune`` or
``run(quick=True)`` for less): IBP fits of ``visuomotor_data(N)`` (``ibp:N``), von Mises map
reconstructions of an ``S x S`` pinwheel map (``map:S``) and GUM NUTS fits of ``y ~ f(x)``
with ``R`` Poisson rows (``gum:R``). A case may carry its own draws (``map:512@32+4``: 32
draws after 4 tuning sweeps; for a 512 x 512 map that keeps as many draws per chain as the
default 1000 draws thinned by 32 do) and ``/disk`` (``map:512/disk``: ``store="fit.zarr"``,
draws streamed to a temporary Zarr store, :mod:`pmctx.streaming`). Each
case runs in its own Python process (``--child``), which reports its peak resident memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and that of the chain processes PyMC starts
(``RUSAGE_CHILDREN``: the largest one), and the wall time of the fit call; the table adds the
two peaks as ``peak_gb`` (an upper bound on the memory the fit needed at once). The ``*_gb``
columns are GiB (``ru_maxrss`` kB / 2**20; 2 GiB = 2.15 GB).

``--draws``/``--tune`` override the defaults (1000/1000) for a quicker look; rows say what they
used. ``--before PATH`` runs the same cases on another checkout of the package (e.g.
``git archive <commit> | tar -x -C PATH`` with ``models/`` copied to ``PATH/pmctx/models``),
for before/after tables. Results: ``benchmarks/results/memory_scale.json`` (rows appended
per label, one current file).

Examples
--------
``python benchmarks/bench_memory_scale.py --cases ibp:1000 --draws 200 --tune 200``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "memory_scale.json"
DEFAULT_CASES = ("ibp:1000", "ibp:10000", "map:128", "map:256", "map:512", "gum:10000",
                 "gum:100000")  # fmt: skip
#: The same table on a shared 2-CPU machine: defaults where they finish in minutes, else fewer
#: draws (IBP: R-hat of n_active reported; maps: as many kept draws per chain as defaults
#: where the default thinning keeps 32 or fewer); ``ibp:50000`` is left to ``--cases``.
SHARED_CASES = ("ibp:1000@200+200", "ibp:10000@100+100", "map:128@32+4", "map:256@32+4",
                "map:512@32+4", "map:512/disk@32+4", "gum:10000", "gum:100000")  # fmt: skip


def parse_case(case: str, draws: int, tune: int) -> tuple[str, int, int]:
    """``"map:512/disk@32+4"`` -> ``("map:512/disk", 32, 4)``; without ``@``, the given
    draws and tune."""
    if "@" in case:
        case, counts = case.split("@")
        draws, tune = (int(n) for n in counts.split("+"))
    return case, draws, tune


def _fit(case: str, draws: int, tune: int) -> None:
    import tempfile

    import numpy as np

    kind, size = case.split(":")
    size, _, where = size.partition("/")
    size = int(size)
    kw = dict(draws=draws, tune=tune, random_seed=1, progressbar=False)
    if where == "disk":
        kw["store"] = Path(tempfile.mkdtemp(prefix="pmctx_bench_")) / "fit.zarr"
    if kind == "ibp":
        from pmctx.models import ibp

        from pmctx.ibp.data import visuomotor_data

        data = visuomotor_data(size, random_seed=1)
        idata = ibp.sample(data.F, data.X, K_max=10, **kw)
        return {"n_active_rhat": _rhat(idata, "n_active"), **_converged(idata), **_disk(kw)}
    if kind == "map":
        from pmctx.models import vonmises_map as vm

        rng = np.random.default_rng(1)
        y, x = np.mgrid[0:size, 0:size] / size * 4 * np.pi
        theta = np.mod(np.arctan2(np.sin(y), np.cos(x)) / 2 + rng.vonmises(0, 8, (size, size)) / 2,
                       np.pi)  # fmt: skip
        idata = vm.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, **kw)
        return {"kept_draws": int(idata.posterior.sizes["draw"]), **_converged(idata),
                **_disk(kw)}  # fmt: skip
    if kind == "gum":
        from pmctx.models import gum

        x = rng_x = np.random.default_rng(1).uniform(0, 2, size)
        y = np.random.default_rng(2).poisson(np.exp(np.sin(rng_x)))
        g = gum.gum("y ~ f(x, max_points=8)", {"x": x, "y": y}, family="poisson")
        idata = g.sample(**kw)
        return {"log_likelihood_draws": int(idata.log_likelihood.sizes["draw"]),
                **_converged(idata)}  # fmt: skip
    raise ValueError(f"unknown case {case!r}; expected ibp:N, map:S or gum:R")


def _disk(kw) -> dict:
    """Size of the Zarr store of a ``/disk`` case (removed after measuring)."""
    import shutil

    if "store" not in kw:
        return {}
    size = sum(f.stat().st_size for f in kw["store"].rglob("*") if f.is_file())
    shutil.rmtree(kw["store"].parent, ignore_errors=True)
    return {"disk_gb": round(size / 1e9, 2)}


def _converged(idata) -> dict:
    """pmctx's own convergence report of the fit (None when it kept none, e.g. on disk)."""
    from pmctx.convergence import _recall

    report = _recall(idata)
    return {"converged": None if report is None else bool(report["converged"].all())}


def _rhat(idata, name):
    import arviz as az

    return float(az.rhat(idata.posterior[name]).to_array().max())


def child(case: str, draws: int, tune: int) -> None:
    """Run one case in this process and print a JSON line with its measurements."""
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    extra = _fit(case, draws, tune)
    wall = time.perf_counter() - start
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    row = {"case": case, "draws": draws, "tune": tune, "wall_s": round(wall, 1),
           "peak_main_gb": round(self_kb / 2**20, 2), "peak_chain_gb": round(kids_kb / 2**20, 2),
           **extra}  # fmt: skip
    print("RESULT " + json.dumps(row), flush=True)


def run_case(case, draws, tune, *, label, pythonpath=None, timeout=3600):
    env = dict(os.environ, PYTHONWARNINGS="ignore", PMCTX_NO_PROGRESS="1")
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    cmd = [sys.executable, __file__, "--child", case, "--draws", str(draws), "--tune", str(tune)]
    start = time.perf_counter()
    # Own session, so a timeout ends the case and the chain processes PyMC started for it.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=pythonpath or None, start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"case": case, "label": label, "status": f"timed out after {timeout} s"}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = [line[7:] for line in stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not rows:
        status = "killed (out of memory?)" if proc.returncode in (-9, 137) else "failed"
        return {"case": case, "label": label, "status": f"{status}, rc {proc.returncode}",
                "stderr_tail": stderr[-400:],
                "elapsed_s": round(time.perf_counter() - start, 1),
                "peak_any_child_gb": round(usage.ru_maxrss / 2**20, 2)}  # fmt: skip
    row = json.loads(rows[-1])
    row["peak_gb"] = round(row["peak_main_gb"] + row["peak_chain_gb"], 2)
    return {**_columns(case, label, draws, tune, row), "label": label, "status": "ok", **row}


def _columns(case, label, draws, tune, row):
    """The columns ``python -m benchmarks`` prints (no sweep timings here: memory)."""
    return {"benchmark": "memory_scale", "variant": label, "size": f"{case} {draws}+{tune}",
            "seconds_per_sweep": None, "sweeps_per_s": None, "ess_per_s": None,
            "baseline": "before" if label != "before" else None, "ratio_vs_baseline": None,
            "notes": f"peak {row['peak_main_gb']} GB main + {row['peak_chain_gb']} GB chain, "
                     f"{row['wall_s']} s"}  # fmt: skip


def run(quick: bool = False) -> list[dict]:
    """Rows for ``python -m benchmarks memory_scale``: small cases with ``quick``, else the
    default cases at package defaults (hours on a shared 2-CPU machine)."""
    if quick:
        cases = [("ibp:300", 100, 100), ("map:64", 100, 100), ("gum:2000", 200, 200)]
    else:
        cases = [parse_case(case, 1000, 1000) for case in DEFAULT_CASES]
    return [run_case(case, draws, tune, label="after") for case, draws, tune in cases]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*")
    parser.add_argument("--shared", action="store_true", help="run SHARED_CASES")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--before", type=Path, help="checkout to run as 'before'")
    parser.add_argument("--label", default="after")
    parser.add_argument("--timeout", type=int, default=3600)
    parser.add_argument("--child")
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.draws, args.tune)
    cases = args.cases or list(SHARED_CASES if args.shared else DEFAULT_CASES)
    rows = []
    for spec in cases:
        case, draws, tune = parse_case(spec, args.draws, args.tune)
        if args.before:
            rows.append(run_case(case, draws, tune, label="before",
                                 pythonpath=args.before, timeout=args.timeout))  # fmt: skip
            print(rows[-1], flush=True)
        rows.append(run_case(case, draws, tune, label=args.label, timeout=args.timeout))
        print(rows[-1], flush=True)
    print(f"\n{'case':>16} {'label':>7} {'draws':>9} {'wall s':>7} {'main GiB':>8} "
          f"{'chain GiB':>9} {'sum GiB':>7}  status")  # fmt: skip
    for r in rows:
        print(f"{r['case']:>16} {r['label']:>7} {r.get('draws', '')!s:>4}+{r.get('tune', '')!s:<4} "
              f"{r.get('wall_s', '')!s:>7} {r.get('peak_main_gb', '')!s:>8} "
              f"{r.get('peak_chain_gb', '')!s:>9} "
              f"{r.get('peak_gb', r.get('peak_any_child_gb', ''))!s:>7}  "
              f"{r['status']}")  # fmt: skip
    old = json.loads(RESULTS.read_text())["rows"] if RESULTS.exists() else []
    keep = {(r["case"], r["label"], r.get("draws")) for r in rows}
    merged = [r for r in old if (r["case"], r["label"], r.get("draws")) not in keep] + rows
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"benchmark": "memory_scale", "rows": merged}, indent=1))
    return rows


if __name__ == "__main__":
    main()

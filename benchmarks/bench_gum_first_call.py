"""Wall time of a whole fresh Python process that runs ``g.sample()`` once (seed 002
section 3.1 structure, N = 500, 4 chains x (1000 + 1000), pmctx's defaults: nutpie on the
whitened model, chains in parallel), on a fresh install (PyTensor's compile directory and
Numba's cache directory empty), after ``make``'s warm-up step (``python -m pmctx.gum.warm``)
and in later processes. Writes ``benchmarks/results/gum_first_call.json``.

Rows: ``fresh install`` (empty caches, no warm-up), ``warm-up`` (what ``make`` adds to its
set-up), ``after warm-up, first process`` (the target: under 5 s), ``warm cache, process k``,
``after warm-up, other data`` (same formula and N, another data set: the callbacks' Numba
code is on disk, the whitened model is rewritten once). With ``--before REV`` the same
process rows run first on pmctx at git revision ``REV`` (exported to a temporary directory).
Every row records the child's CPU seconds and the load average when it ended.

Run: ``python -m benchmarks.bench_gum_first_call [--quick] [--before REV]``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "gum_first_call.json"
ROOT = Path(__file__).resolve().parents[1]

# SRC (optional): a pmctx source tree to import instead of the installed (editable) one
SCRIPT = """
import os, sys, time
start = time.perf_counter()
src = os.environ.get("BENCH_PMCTX_SRC")
if src:
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
    sys.path.insert(0, src)
from pmctx.gum import gum
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
assert src is None or sys.modules["pmctx"].__file__.startswith(src)
seed = int(os.environ.get("BENCH_DATA_SEED", "0"))
g = gum(section_3_1_formula(), seed_section_3_1(500, random_seed=seed), family="poisson")
idata = g.sample(random_seed=1, progressbar=False)
print("in-process seconds", time.perf_counter() - start)
"""


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process(args: list, caches: tuple[str, str], **env_extra) -> dict:
    compiledir, numba_dir = caches
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    env = {
        **os.environ,
        "PYTENSOR_FLAGS": f"base_compiledir={compiledir},{flags}".rstrip(","),
        "NUMBA_CACHE_DIR": numba_dir,
        **env_extra,
    }
    cpu, start = _child_cpu(), time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True, cwd=ROOT)
    return {
        "process_s": time.perf_counter() - start,
        "cpu_s": _child_cpu() - cpu,
        "load_average": os.getloadavg(),
    }


def _sample(caches, **env_extra) -> dict:
    return _process(["-c", SCRIPT], caches, **env_extra)


def _export(rev: str, into: str) -> str:
    """``pmctx/`` at git revision ``rev`` under ``into``."""
    archive = subprocess.run(
        ["git", "archive", rev, "pmctx"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def _row(variant: str, result: dict, what: str = "whole process wall") -> dict:
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    return {
        "benchmark": "gum_first_call",
        "variant": variant,
        "size": "N=500, 4 x (1000 + 1000)",
        "seconds_per_sweep": None,
        "sweeps_per_s": None,
        "ess_per_s": None,
        "baseline": "target < 5 s",
        "ratio_vs_baseline": None,
        "notes": f"{what} {result['process_s']:.1f} s, CPU {result['cpu_s']:.1f} s, load {load}",
        **result,
    }


def run(quick: bool = False, before: str | None = None) -> list[dict]:
    """Rows as the module doc lists them.

    Parameters
    ----------
    quick : bool, default False
        One warm process instead of three, no other-data row.
    before : str, optional
        A git revision whose pmctx runs the fresh-install and warm rows first.

    Returns
    -------
    list of dict
        Rows in the benchmark runner's columns (plus ``process_s``, ``cpu_s``,
        ``load_average``).
    """
    rows = []

    def add(variant, result, what="whole process wall"):
        rows.append(_row(variant, result, what))
        print(rows[-1]["variant"], "|", rows[-1]["notes"], flush=True)

    if before:
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as a:
            with tempfile.TemporaryDirectory() as b:
                source = {"BENCH_PMCTX_SRC": _export(before, src)}
                add(f"before ({before}): fresh install", _sample((a, b), **source))
                add(f"before ({before}): warm cache", _sample((a, b), **source))
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        add("fresh install, no warm-up", _sample((a, b)))
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        add("warm-up (make set-up step)", _process(["-m", "pmctx.gum.warm"], (a, b)), "wall")
        add("after warm-up, first process", _sample((a, b)))
        for i in range(1 if quick else 3):
            add(f"warm cache, process {i + 2}", _sample((a, b)))
        if not quick:
            add("after warm-up, other data (seed 1)", _sample((a, b), BENCH_DATA_SEED="1"))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"load_average": os.getloadavg(), "rows": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    revision = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else None
    run(quick="--quick" in sys.argv, before=revision)

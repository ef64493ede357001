"""Wall time of a whole fresh Python process that runs ``g.sample()`` once (seed 002
section 3.1 structure, N = 500, 4 chains x (1000 + 1000), pmctx's defaults: nutpie on the
whitened model, chains in parallel), with PyTensor's compile cache empty (a fresh install)
and warm (every later process). Writes ``benchmarks/results/gum_first_call.json``.

Run: ``python -m benchmarks.bench_gum_first_call [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "gum_first_call.json"

SCRIPT = """
import time
start = time.perf_counter()
from pmctx.gum import gum
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
g = gum(section_3_1_formula(), seed_section_3_1(500, random_seed=0), family="poisson")
idata = g.sample(random_seed=1, progressbar=False)
print("in-process seconds", time.perf_counter() - start)
"""


def _process_seconds(compiledir: str) -> float:
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={compiledir},{flags}".rstrip(",")}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def run(quick: bool = False) -> list[dict]:
    """Rows: first process with an empty compile cache, then processes with it warm.

    Parameters
    ----------
    quick : bool, default False
        One warm process instead of three.

    Returns
    -------
    list of dict
        Rows in the benchmark runner's columns.
    """
    with tempfile.TemporaryDirectory() as compiledir:
        cold = _process_seconds(compiledir)
        warm = [_process_seconds(compiledir) for _ in range(1 if quick else 3)]
    rows = [
        {
            "benchmark": "gum_first_call",
            "variant": variant,
            "size": "N=500, 4 x (1000 + 1000)",
            "seconds_per_sweep": None,
            "sweeps_per_s": None,
            "ess_per_s": None,
            "baseline": "target < 5 s",
            "ratio_vs_baseline": None,
            "notes": f"whole process wall {seconds:.1f} s",
            "process_s": seconds,
        }
        for variant, seconds in [("empty compile cache", cold)]
        + [(f"warm cache, process {i + 1}", s) for i, s in enumerate(warm)]
    ]
    for row in rows:
        print(row["variant"], f"{row['process_s']:.1f} s", flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"load_average": os.getloadavg(), "rows": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)

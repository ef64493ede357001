"""Convergence diagnostics on many elements (issue 28 item 3: the IBP demo's reconstructions).

Times :func:`pmctx.convergence.element_diagnostics` (rank-normalised split R-hat, bulk and
tail ESS per element) on 4 chains x 1,000 draws of 1,000 and 5,000 elements, for two kinds
of draws: random walks (the chains never mix: every element's autocorrelation sequence runs
to the end, so its ESS needs the FFT) and AR(1) chains with coefficient 0.5 (mixing well,
like a converged reconstruction: the sequences end after a few lags). ``before`` is the
whole-array numpy implementation kept as ``tests/oracles/convergence_reference.py``,
``after`` the blocked, compiled one, measured in the same run on the same draws; the notes
give the largest relative difference of R-hat and ESS between them and the peak memory that
``tracemalloc`` saw (numpy's allocations; 1,000 elements).

``python benchmarks/bench_convergence.py`` prints the table and writes
``benchmarks/results/convergence.json``; ``python -m benchmarks convergence`` writes the rows
only (``--quick``: 1,000 elements).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHAINS, DRAWS = 4, 1000
SIZES = (1000, 5000)
TARGET_S = 3.0  # seconds for 5,000 random-walk elements (the micro-benchmark)


def _draws(kind: str, elements: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(CHAINS, DRAWS, elements))
    if kind == "random walk":
        return noise.cumsum(axis=1)
    x = noise.copy()
    for t in range(1, DRAWS):
        x[:, t] += 0.5 * x[:, t - 1]
    return x


def _implementations():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pmctx.convergence import element_diagnostics
    from tests.oracles.convergence_reference import element_diagnostics as reference

    return {"before": reference, "after": element_diagnostics}


def _timed(function, x):
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    result = function(x)
    return result, time.perf_counter() - start_wall, time.process_time() - start_cpu


def _peak_mb(function, x) -> float:
    tracemalloc.start()
    try:
        function(x)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def measure(sizes=SIZES) -> list[dict]:
    """One record per (kind, size, implementation): wall and CPU seconds, peak memory.

    Parameters
    ----------
    sizes : tuple of int
        Numbers of elements.

    Returns
    -------
    list of dict
        ``kind, elements, label, wall_s, cpu_s, max_rel_diff, peak_mb`` (``peak_mb`` for the
        smallest size only).
    """
    functions = _implementations()
    functions["after"](_draws("ar1", 3))  # compile (or load the cache) outside the timings
    records = []
    for kind in ("random walk", "AR(1) 0.5"):
        for elements in sizes:
            x = _draws(kind, elements)
            results = {}
            for label, function in functions.items():
                results[label], wall, cpu = _timed(function, x)
                peak = _peak_mb(function, x) if elements == min(sizes) else None
                records.append(
                    {
                        "kind": kind,
                        "elements": elements,
                        "label": label,
                        "wall_s": wall,
                        "cpu_s": cpu,
                        "peak_mb": peak,
                    }
                )
            diff = max(
                float(np.max(np.abs(results["after"][k] / results["before"][k] - 1.0)))
                for k in ("r_hat", "ess_bulk", "ess_tail")
            )
            records[-1]["max_rel_diff"] = records[-2]["max_rel_diff"] = diff
    return records


def _rows(records: list[dict]) -> list[dict]:
    rows = []
    for record in records:
        before = next(
            r["wall_s"]
            for r in records
            if (r["kind"], r["elements"], r["label"])
            == (record["kind"], record["elements"], "before")
        )
        after = record["label"] == "after"
        notes = f"CPU {record['cpu_s']:.2f} s; max rel diff {record['max_rel_diff']:.1e}"
        if record["peak_mb"] is not None:
            notes += f"; peak traced {record['peak_mb']:.0f} MB"
        if after and record["kind"] == "random walk" and record["elements"] == max(SIZES):
            # On a busy machine the wall time counts other processes' turns; the CPU time is
            # what an idle machine's wall time would be, near enough.
            notes += f"; target < {TARGET_S} s of CPU met: {record['cpu_s'] < TARGET_S}"
        rows.append(
            {
                "benchmark": "convergence",
                "variant": f"element_diagnostics, {record['kind']} ({record['label']})",
                "size": f"{record['elements']} elements x {CHAINS} x {DRAWS}",
                "seconds_per_sweep": record["wall_s"],
                "sweeps_per_s": 1.0 / record["wall_s"],
                "ess_per_s": None,
                "baseline": "before (tests/oracles/convergence_reference.py)" if after else None,
                "ratio_vs_baseline": before / record["wall_s"] if after else None,
                "notes": notes,
            }
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    """Rows for ``python -m benchmarks convergence`` (``quick``: 1,000 elements only)."""
    return _rows(measure(SIZES[:1] if quick else SIZES))


def main() -> int:
    from benchmarks.__main__ import format_table

    start = time.perf_counter()
    load = os.getloadavg()[0]
    records = measure()
    rows = _rows(records)
    print(format_table(rows))
    payload = {
        "benchmark": "convergence",
        "quick": False,
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1min_start": load,
            "load_average_1min_end": os.getloadavg()[0],
        },
        "elapsed_s": time.perf_counter() - start,
        "notes": "wall seconds in one process, one thread; before and after run back to back "
        "on the same draws, so they share the machine's load (see load_average_*)",
        "records": records,
        "rows": rows,
    }
    path = ROOT / "benchmarks" / "results" / "convergence.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

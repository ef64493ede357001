"""Run named benchmarks, print a table and write one JSON file per benchmark module.

Each ``benchmarks/bench_<name>.py`` exposes ``run(quick: bool = False) -> list[dict]`` whose
rows hold ``benchmark, variant, size, seconds_per_sweep, sweeps_per_s, ess_per_s, baseline,
ratio_vs_baseline, notes``; baselines are measured in the same run as what they are compared to.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLUMNS = (
    "benchmark",
    "variant",
    "size",
    "seconds_per_sweep",
    "sweeps_per_s",
    "ess_per_s",
    "baseline",
    "ratio_vs_baseline",
    "notes",
)


def discover() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_table(rows: list[dict]) -> str:
    cells = [[_fmt(row.get(c)) for c in COLUMNS] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def main(argv=None) -> int:
    names = discover()
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {names} (default all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute each")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="JSON folder")
    args = parser.parse_args(argv)
    # ``bench_batch`` (the module's name) means ``batch``.
    args.names = [n.removeprefix("bench_") for n in args.names]
    unknown = sorted(set(args.names) - set(names))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; available: {names}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        start = time.perf_counter()
        rows = module.run(quick=args.quick)
        elapsed = time.perf_counter() - start
        print(f"\n== {name} ({elapsed:.1f} s)\n{format_table(rows)}")
        payload = {
            "benchmark": name,
            "quick": args.quick,
            "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
            "elapsed_s": elapsed,
            "rows": rows,
        }
        path = args.out / f"{name}.json"
        path.write_text(json.dumps(payload, indent=2, default=float))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

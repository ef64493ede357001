"""Start-up time of the ``pmctx`` command (issue 28 item 5: under 0.5 s without a fit).

Times ``pmctx --version``, ``pmctx --help``, ``pmctx fit --help`` and an argument error
(``pmctx fit nosuchmodel --data x``), each the best of 5 runs of the installed console script
in a fresh process (wall seconds, start to exit). ``after`` is the working tree; ``before`` is
:data:`BASELINE_REF` (the commit before the CLI imported PyMC, PyTensor, ArviZ and Dask
lazily), extracted with ``git archive`` and put first on ``PYTHONPATH``, measured in the same
run, interleaved with ``after``. ``ratio_vs_baseline`` is before / after.

``python benchmarks/bench_cli_start.py`` prints the table and writes
``benchmarks/results/cli_start.json`` with the rows and ``before`` / ``after`` mappings
(command -> seconds); ``python -m benchmarks cli_start`` writes the rows only.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The last commit with the eager imports (``pmctx --version`` took about 2.4 s).
BASELINE_REF = "9f93e77"
COMMANDS = {
    "pmctx --version": ["--version"],
    "pmctx --help": ["--help"],
    "pmctx fit --help": ["fit", "--help"],
    "pmctx fit nosuchmodel --data x": ["fit", "nosuchmodel", "--data", "x"],
}
REPEATS = 5
TARGET_S = 0.5


def _pmctx() -> list[str]:
    script = Path(sys.executable).with_name("pmctx")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pmctx"]


def _extract(ref: str, into: Path) -> Path:
    """The ``pmctx`` package of commit ``ref`` under ``into`` (``pmctx.models`` is shared)."""
    archive = into / "pmctx.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", ref, "pmctx"], cwd=ROOT, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def _wall(argv: list[str], tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    subprocess.run(argv, cwd=tree, env=env, capture_output=True, check=False)
    return time.perf_counter() - start


def measure(repeats: int = REPEATS) -> dict[str, dict[str, float]]:
    """Best-of-``repeats`` wall seconds per command, for ``before`` and ``after``.

    Parameters
    ----------
    repeats : int, default 5
        Runs per command and tree; the minimum is kept.

    Returns
    -------
    dict
        ``{"before": {command: seconds}, "after": {command: seconds}}``.
    """
    pmctx = _pmctx()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _extract(BASELINE_REF, Path(tmp)), "after": ROOT}
        times = {label: {name: [] for name in COMMANDS} for label in trees}
        for _ in range(repeats):
            for name, args in COMMANDS.items():
                for label, tree in trees.items():
                    times[label][name].append(_wall([*pmctx, *args], tree))
    return {label: {name: min(t) for name, t in by.items()} for label, by in times.items()}


def _rows(result: dict) -> list[dict]:
    rows = []
    for label in ("before", "after"):
        for name, seconds in result[label].items():
            before = result["before"][name]
            rows.append(
                {
                    "benchmark": "cli_start",
                    "variant": f"{name} ({label})",
                    "size": None,
                    "seconds_per_sweep": seconds,
                    "sweeps_per_s": 1.0 / seconds,
                    "ess_per_s": None,
                    "baseline": None if label == "before" else f"before ({BASELINE_REF})",
                    "ratio_vs_baseline": None if label == "before" else before / seconds,
                    "notes": f"best of {REPEATS} wall s; target < {TARGET_S} s"
                    + ("" if label == "before" else f"; met: {seconds < TARGET_S}"),
                }
            )
    return rows


def run(quick: bool = False) -> list[dict]:
    """Rows for ``python -m benchmarks cli_start`` (``quick``: 2 runs per command, not 5)."""
    return _rows(measure(2 if quick else REPEATS))


def main() -> int:
    from benchmarks.__main__ import format_table

    start = time.perf_counter()
    result = measure()
    rows = _rows(result)
    print(format_table(rows))
    payload = {
        "benchmark": "cli_start",
        "quick": False,
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0],
        },
        "elapsed_s": time.perf_counter() - start,
        "notes": "wall seconds of fresh processes, so they grow with the machine's load "
        "(see load_average_1min); before and after are interleaved, so they share it",
        "baseline_ref": BASELINE_REF,
        "before": result["before"],
        "after": result["after"],
        "rows": rows,
    }
    path = ROOT / "benchmarks" / "results" / "cli_start.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

"""Write ``tests/durations.json`` from pytest JUnit XML reports (``make durations``).

Per test file and suite (``fast``: not marked slow, ``slow``), the summed seconds and the
number of tests. ``tests/conftest.py`` reads it to hand the longest files to pytest-xdist
first (longest-processing-time-first), so the two workers finish together.

Run: ``python tools/test_durations.py fast.xml slow.xml`` (the second report is the slow
suite's).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "durations.json"


def file_seconds(report: Path) -> dict[str, list]:
    """``{test file: [seconds, tests]}`` of one JUnit XML report."""
    totals: dict[str, list] = {}
    for case in ET.parse(report).iter("testcase"):
        path = case.get("classname").replace(".", "/") + ".py"
        entry = totals.setdefault(path, [0.0, 0])
        entry[0] += float(case.get("time", 0.0))
        entry[1] += 1
    return {path: [round(seconds, 2), count] for path, (seconds, count) in sorted(totals.items())}


def main(fast: str, slow: str) -> None:
    durations = {"fast": file_seconds(Path(fast)), "slow": file_seconds(Path(slow))}
    # One line per file, so a refresh reads as a diff of the files whose time changed.
    suites = [
        f'"{suite}": {{\n'
        + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in files.items())
        + "\n}"
        for suite, files in durations.items()
    ]
    OUT.write_text("{\n" + ",\n".join(suites) + "\n}\n")
    print(f"wrote {OUT} ({sum(len(v) for v in durations.values())} entries)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tools/test_durations.py FAST_JUNIT.xml SLOW_JUNIT.xml")
    main(*sys.argv[1:])

"""Render ``benchmarks/results/*.json`` as Markdown tables when the docs are built."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.__main__ import format_table

DOCS = Path(__file__).resolve().parents[1]
RESULTS = DOCS.parent / "benchmarks" / "results"


def write_tables(app=None) -> Path:
    parts, titles = [], set()
    for path in sorted(RESULTS.glob("*.json")):
        payload = json.loads(path.read_text())
        size = "quick sizes" if payload.get("quick") else "full sizes"
        machine = payload.get("machine", {})
        if not isinstance(machine, dict):  # some benchmarks record the machine as one line
            machine = {"platform": str(machine)}
        elapsed = payload.get("elapsed_s")
        took = f"; {elapsed:.0f} s in all" if isinstance(elapsed, int | float) else ""
        # The benchmark's name, made unique by its file when two files hold runs of one.
        title = str(payload.get("benchmark", payload.get("study", path.stem)))
        title = f"{title} ({path.name})" if title in titles else title
        titles.add(title)
        rows = payload.get("rows")
        if not isinstance(rows, list):  # a study's own layout (e.g. per data set): no table
            parts.append(
                f"## {title}\n\n"
                f"Study results in `benchmarks/results/{path.name}` (not a table of rows).\n"
            )
            continue
        parts.append(
            f"## {title}\n\n{size}; Python "
            f"{machine.get('python', '?')} on {machine.get('platform', '?')}{took}.\n\n"
            f"```text\n{format_table(rows)}\n```\n"
        )
    out = DOCS / "generated" / "benchmark_tables.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(parts) or "No benchmark results are committed yet.\n")
    return out


def setup(app):
    app.connect("builder-inited", write_tables)
    return {"parallel_read_safe": True}

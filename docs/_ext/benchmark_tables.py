"""Render ``benchmarks/results/*.json`` as Markdown tables when the docs are built."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.__main__ import format_table

DOCS = Path(__file__).resolve().parents[1]
RESULTS = DOCS.parent / "benchmarks" / "results"


def write_tables(app=None) -> Path:
    parts = []
    for path in sorted(RESULTS.glob("*.json")):
        payload = json.loads(path.read_text())
        size = "quick sizes" if payload.get("quick") else "full sizes"
        machine = payload.get("machine", {})
        parts.append(
            f"## {payload['benchmark']}\n\n{size}; Python {machine.get('python', '?')} on "
            f"{machine.get('platform', '?')}; {payload.get('elapsed_s', 0):.0f} s in all.\n\n"
            f"```text\n{format_table(payload['rows'])}\n```\n"
        )
    out = DOCS / "generated" / "benchmark_tables.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(parts) or "No benchmark results are committed yet.\n")
    return out


def setup(app):
    app.connect("builder-inited", write_tables)
    return {"parallel_read_safe": True}

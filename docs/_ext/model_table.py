"""Render the registered models (``pmctx.registry``) as the docs' model table."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]


def write_table(app=None) -> Path:
    from pmctx.registry import list_specs

    lines = ["| model | CLI name | module | options (`--set key=value`) |", "|---|---|---|---|"]
    for spec in list_specs():
        options = ", ".join(f"`{key}`" for key in spec.options) or "none"
        lines.append(
            f"| {spec.summary} | `{spec.name}` | {{mod}}`{spec.module}` | {options} |"
        )
    out = DOCS / "generated" / "model_table.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return out


def setup(app):
    app.connect("builder-inited", write_table)
    return {"parallel_read_safe": True}

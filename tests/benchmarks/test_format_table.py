"""The runner's table and the docs' benchmark page accept every committed result file."""

import json
import sys
from pathlib import Path

from benchmarks.__main__ import COLUMNS, format_table

ROOT = Path(__file__).resolve().parents[2]


def test_format_table_of_no_rows_is_the_header():
    lines = format_table([]).splitlines()
    assert len(lines) == 2 and lines[0].split() == list(COLUMNS)


def test_docs_page_renders_every_result_file(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import benchmark_tables
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    results = tmp_path / "results"
    results.mkdir()
    (results / "study.json").write_text(json.dumps({"study": "kappa", "size": 16}))
    (results / "bench.json").write_text(
        json.dumps({"benchmark": "b", "rows": [{"benchmark": "b", "variant": "v"}]})
    )
    monkeypatch.setattr(benchmark_tables, "RESULTS", results)
    monkeypatch.setattr(benchmark_tables, "DOCS", tmp_path)
    text = benchmark_tables.write_tables().read_text()
    assert "## kappa" in text and "not a table" in text and "## b" in text
    assert text.count("```text") == 1

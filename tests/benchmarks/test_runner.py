import json
import sys
import types

import benchmarks.__main__ as runner


def test_runner_prints_table_and_writes_json(tmp_path, monkeypatch, capsys):
    fake = types.ModuleType("benchmarks.bench_fake")
    fake.run = lambda quick=False: [
        {
            "benchmark": "fake",
            "variant": "baseline",
            "size": "n=1",
            "seconds_per_sweep": 2.0,
            "sweeps_per_s": 0.5,
            "ess_per_s": None,
            "baseline": None,
            "ratio_vs_baseline": None,
            "notes": "",
        },
        {
            "benchmark": "fake",
            "variant": "fast",
            "size": "n=1",
            "seconds_per_sweep": 0.5,
            "sweeps_per_s": 2.0,
            "ess_per_s": 10.0,
            "baseline": "baseline",
            "ratio_vs_baseline": 4.0,
            "notes": "quick" if quick else "",
        },
    ]
    monkeypatch.setitem(sys.modules, "benchmarks.bench_fake", fake)
    monkeypatch.setattr(runner, "discover", lambda: ["fake"])
    assert runner.main(["fake", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ratio_vs_baseline" in out and "fast" in out and "4" in out
    payload = json.loads((tmp_path / "fake.json").read_text())
    assert payload["quick"] is True and payload["rows"][1]["ratio_vs_baseline"] == 4.0


def test_discover_finds_bench_modules():
    assert all(isinstance(name, str) for name in runner.discover())

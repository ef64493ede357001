"""python -m pmctx.gum.warm: argument checks and its command line (the warm-up itself is
measured by benchmarks/bench_gum_first_call.py; its caches are tested in test_gum_recipes)."""

import pytest

import pmctx.gum.warm as warm


@pytest.mark.parametrize("n", [5, 2.5, True, "500"])
def test_bad_observation_counts_are_refused(n):
    with pytest.raises(ValueError, match=r"at least 10, got .*; pass integers"):
        warm.warm(n_values=(n,))


def test_command_line_warms_each_n(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(
        warm, "warm", lambda ns: calls.append(ns) or [{"n": n, "seconds": 1.0} for n in ns]
    )
    assert warm.main(["--n", "200", "500"]) == 0
    assert calls == [[200, 500]]
    out = capsys.readouterr().out
    assert "N=200: 1.0 s" in out and "N=500: 1.0 s" in out

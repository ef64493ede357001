"""``pmctx batch`` and ``pmctx sbc`` on the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pmctx.cli import main, parse_options


def test_batch_settings_use_the_fit_option_parser():
    # `pmctx batch/sbc --set` parse values as `pmctx fit --set` does (TOML, else a string).
    assert parse_options(["a=1", "b=x y", "c=[1, 2]", "d=true"]) == {
        "a": 1, "b": "x y", "c": [1, 2], "d": True,
    }  # fmt: skip
    with pytest.raises(ValueError, match="key=value"):
        parse_options(["nokey"])


def test_batch_gum_table_then_resume(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = []
    for unit in ("a", "b", "c"):
        x = rng.uniform(0, 1, 30)
        rows += [{"unit": unit, "x": xi, "y": np.sin(3 * xi) + 0.2 * rng.normal()} for xi in x]
    pd.DataFrame(rows).to_csv(tmp_path / "units.csv", index=False)
    args = ["batch", "gum", "--data", str(tmp_path / "units.csv"), "--out", str(tmp_path / "o"),
            "--workers", "0", "--set", "formula=y ~ f(x, max_points=8)", "--set", "noise_sd=0.2",
            "--set", "draws=50"]  # fmt: skip
    assert main(args) == 0
    assert "3 ok" in capsys.readouterr().out
    summary = pd.read_csv(tmp_path / "o" / "summary.csv")
    assert summary["status"].tolist() == ["ok"] * 3
    assert (tmp_path / "o" / "population.nc").exists()
    assert main(args) == 0  # everything finished: nothing reruns
    assert pd.read_csv(tmp_path / "o" / "summary.csv")["run_id"].nunique() == 1


def test_batch_reports_bad_data(tmp_path, capsys):
    assert main(["batch", "gum", "--data", str(tmp_path / "missing"), "--out", str(tmp_path)]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["batch", "gum", "--data", str(tmp_path / "empty"), "--out", str(tmp_path)]) == 2
    assert "no unit data files" in capsys.readouterr().err


def test_sbc_command(tmp_path, capsys):
    out = tmp_path / "sbc"
    code = main(["sbc", "gum", "--reps", "10", "--out", str(out), "--workers", "0",
                 "--sim", "n=20", "--set", "draws=99"])  # fmt: skip
    assert code == 0
    assert (out / "sbc_tests.csv").exists() and (out / "sbc_ranks.png").exists()
    assert len(pd.read_csv(out / "sbc_ranks.csv")) == 10


@pytest.mark.slow
def test_batch_command_on_a_local_cluster(tmp_path, capsys):
    folder = tmp_path / "units"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for i in range(3):  # one .npz per neuron, its model stored with its data
        x = rng.uniform(0, 1, 25)
        np.savez(folder / f"s{i}.npz", x=x, y=np.cos(3 * x) + 0.3 * rng.normal(size=25),
                 formula="y ~ f(x, max_points=6)", noise_sd=0.3)  # fmt: skip
    args = ["batch", "gum", "--data", str(folder), "--out", str(tmp_path / "o"), "--workers",
            "2", "--set", "draws=50", "--chunk-size", "2"]  # fmt: skip
    assert main(args) == 0
    summary = pd.read_csv(tmp_path / "o" / "summary.csv")
    assert summary["status"].tolist() == ["ok"] * 3
    assert summary["unit"].tolist() == ["s0", "s1", "s2"]


def test_batch_passes_the_sampling_budget_to_every_unit(tmp_path):
    import arviz as az

    rng = np.random.default_rng(1)
    rows = []
    for unit in ("a", "b"):
        x = rng.uniform(0, 1, 30)
        rows += [{"unit": unit, "x": xi, "y": np.sin(3 * xi) + 0.2 * rng.normal()} for xi in x]
    pd.DataFrame(rows).to_csv(tmp_path / "units.csv", index=False)
    base = ["batch", "gum", "--data", str(tmp_path / "units.csv"), "--workers", "0",
            "--set", "formula=y ~ f(x, max_points=8)", "--set", "noise_sd=0.2",
            "--set", "draws=40", "--set", "method=nuts"]  # fmt: skip
    fixed = ["--set", "until_converged=false", "--set", "check_convergence=false"]
    assert main([*base, "--out", str(tmp_path / "fixed"), *fixed]) == 0
    for unit in ("a", "b"):
        fit = az.from_netcdf(tmp_path / "fixed" / "units" / f"{unit}.nc")
        assert fit.sample_stats.attrs["pmctx_stop_reason"] == "fixed_length"
        assert fit.posterior.sizes["draw"] == 40
    main([*base, "--out", str(tmp_path / "budget"), "--set", "max_draws=50"])
    summary = pd.read_csv(tmp_path / "budget" / "summary.csv").set_index("unit")
    for unit in ("a", "b"):
        if summary.loc[unit, "status"] == "ok":  # converged within the budget
            fit = az.from_netcdf(tmp_path / "budget" / "units" / f"{unit}.nc")
            attrs = fit.sample_stats.attrs
            assert fit.posterior.sizes["draw"] == attrs["pmctx_draws_kept"] <= 50
        else:  # a unit that warns fails; the warning says the budget ran out
            assert "continued to 50 draws per chain" in summary.loc[unit, "error"]

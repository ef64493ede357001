"""Study-level workflow: every LCM variant per subject through ``pmctx batch crp``, then
random-effects BMS across subjects (a small simulated study; the 50-subject run with its
recovery of variants and parameters is ``benchmarks/bench_crp_study.py``)."""

import numpy as np
import pandas as pd
import pytest

from pmctx.conditioning.fitting import compare_variants
from pmctx.conditioning.likelihood import recovery_design
from pmctx.conditioning.study import fit_variants, simulate_study

FAST = {"method": "local_map", "n_starts": 1, "max_evals": 20}


def test_simulated_study_table():
    table, truth = simulate_study(4, n_trials=30, n_particles=10, missing=0.2, rng=0)
    assert list(table.columns) == ["unit", *recovery_design(30).feature_names, "CR"]
    assert table.groupby("unit").size().tolist() == [30] * 4
    assert 0 < table["CR"].isna().mean() < 0.4
    assert truth["variant"].tolist() == ["lcm_sticky", "lcm", "lcm_one_cause", "lcm_sticky"]
    assert truth.loc["s01", "stickiness"] != truth.loc["s01", "stickiness"]  # NaN: not in lcm


def test_fit_variants_equals_compare_variants():
    table, _ = simulate_study(1, n_trials=30, n_particles=10, rng=2)
    unit = table.drop(columns="unit").to_dict("list")
    idata = fit_variants(unit, random_seed=7, **FAST)
    F = table.drop(columns=["unit", "CR"]).to_numpy()
    direct = compare_variants(table["CR"].to_numpy(), F, random_seed=7, **FAST)
    attrs = idata.posterior.attrs
    for v in direct.index:
        assert attrs[f"log_evidence_{v}"] == direct.loc[v, "log_evidence_bic"]
        assert idata.posterior[f"{v}.alpha"].item() == direct.loc[v, "alpha"]
    best = direct["log_evidence_bic"].astype(float).idxmax()
    assert attrs["best_variant"] == best
    assert idata.posterior["a"].item() == direct.loc[best, "a"]
    np.testing.assert_array_equal(idata.observed_data["responses"], table["CR"])


def test_fit_variants_errors():
    with pytest.raises(ValueError, match="'CR' column"):
        fit_variants({"US": [1.0, 0.0], "tone": [1.0, 1.0]})
    with pytest.raises(ValueError, match="at least one"):
        fit_variants({"CR": [0.1, 0.2], "US": [1.0, 0.0]}, variants=())
    with pytest.raises(ValueError, match="missing must be"):
        simulate_study(2, missing=1.0)
    with pytest.raises(ValueError, match="variants must be among"):
        simulate_study(2, variants=("lcm", "nope"))


@pytest.mark.slow  # about 13 s: the CLI, a batch of three subjects and the population files
def test_batch_crp_fits_variants_and_runs_bms(tmp_path, capsys):
    from pmctx.cli import main

    table, _ = simulate_study(3, n_trials=20, n_particles=10, rng=3)
    table.to_csv(tmp_path / "subjects.csv", index=False)
    out = tmp_path / "fits"
    code = main(["batch", "crp", "--data", str(tmp_path / "subjects.csv"), "--out", str(out),
                 "--workers", "0", "--set", "method='local_map'", "--set", "n_starts=1",
                 "--set", "max_evals=20"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    bms = pd.read_csv(out / "bms.csv", index_col="model")
    assert sorted(bms.index) == ["lcm", "lcm_one_cause", "lcm_sticky"]
    assert bms["expected_frequency"].sum() == pytest.approx(1.0)
    assert ((bms["pxp"] >= 0) & (bms["pxp"] <= 1)).all()
    units = pd.read_csv(out / "units_models.csv", index_col="unit")
    assert list(units.index) == ["s00", "s01", "s02"]
    for v in bms.index:
        assert np.isfinite(units[f"log_evidence_{v}"]).all()
        assert f"{v}.alpha" in units.columns
    probs = pd.read_csv(out / "bms_units.csv", index_col="unit")
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)

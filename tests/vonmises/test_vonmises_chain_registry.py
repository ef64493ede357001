"""The chain smoother as a registered model: plain pm.sample() picks its exact steps, and
the registry/CLI load, fit and summarise it like the other models."""

import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_chain import build_model, simulate

from pmctx import cli
from pmctx.registry import get_spec
from pmctx.steps.registration import assigned_steps


def test_plain_sample_assigns_the_exact_chain_steps():
    _, y = simulate(12, kappa=3.0, kappa_obs=2.0, rank=3, missing=0.3, random_seed=0)
    # Learned concentrations: tests/vonmises/test_vonmises_chain_collapsed.py checks the
    # collapsed block's assignment.
    fixed = build_model(y, kappa=3.0, kappa_obs=2.0, rank=3)
    assert assigned_steps(fixed) == {"ChainFFBSVonMises": ["x"]}
    with fixed:
        idata = pm.sample(
            draws=20, tune=5, chains=1, random_seed=1, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    assert "log_evidence" in idata.sample_stats


def test_registry_fit_and_invariants(tmp_path):
    spec = get_spec("vonmises-chain")
    data, truth = spec.simulate(np.random.default_rng(2), length=30)
    assert data["y"].shape == (30,) and sorted(truth) == ["cos_x", "sin_x", "smoothness"]
    path = tmp_path / "series.npz"
    np.savez(path, y=data["y"], rank=3)
    loaded = spec.load(path)
    assert loaded["options"] == {"rank": 3}
    idata = spec.fit(
        {"y": loaded["y"]}, draws=20, tune=5, chains=2, random_seed=3, check_convergence=False,
        **loaded["options"],
    )  # fmt: skip
    assert idata.posterior.attrs["pmctx_model"] == "vonmises-chain"
    assert "log_likelihood" in idata.children
    inv = spec.invariants(idata)
    assert set(inv.data_vars) == {"x", "smoothness", "kappa", "kappa_obs"}
    assert inv["x"].attrs["period"] == pytest.approx(2 * np.pi)
    paths = spec.write_outputs(idata, tmp_path / "out")
    assert {p.name for p in paths} >= {
        "vonmises-chain_posterior.nc", "vonmises-chain_smoothing.png"
    }  # fmt: skip


def test_schema_rejects_bad_series(tmp_path):
    spec = get_spec("vonmises-chain")
    wide = tmp_path / "wide.csv"
    wide.write_text("0.1,0.2\n0.3,0.4\n")
    with pytest.raises(ValueError, match="one column"):
        spec.load(wide)
    empty = tmp_path / "empty.npz"
    np.savez(empty, y=np.full(5, np.nan))
    with pytest.raises(ValueError, match="one observed angle"):
        spec.load(empty)
    no_y = tmp_path / "no_y.npz"
    np.savez(no_y, theta=np.zeros(3))
    with pytest.raises(ValueError, match="y"):
        spec.load(no_y)


@pytest.mark.slow
def test_cli_fit(tmp_path, capsys):
    series = tmp_path / "series.csv"
    _, y = simulate(25, kappa=3.0, kappa_obs=3.0, rank=3, missing=0.2, random_seed=4)
    series.write_text("".join("\n" if np.isnan(v) else f"{v}\n" for v in y))
    out = tmp_path / "out"
    code = cli.main(
        ["fit", "vonmises-chain", "--data", str(series), "--out", str(out), "--draws", "30",
         "--tune", "10", "--chains", "2", "--set", "rank=3"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (out / "vonmises-chain" / "vonmises-chain_summary.csv").exists()
    loaded = get_spec("vonmises-chain").load(series)  # empty lines stay missing samples
    np.testing.assert_array_equal(np.isnan(loaded["y"]), np.isnan(y))
    header = tmp_path / "header.csv"
    header.write_text("angle\n0.1\n")
    with pytest.raises(ValueError, match="header"):
        get_spec("vonmises-chain").load(header)


def test_map_posterior_predictive_with_learned_kappa_obs():
    """reconstruct(kappa_obs="prior") draws replicated data with each draw's kappa_obs."""
    from pmctx.models.vonmises_map import predict, reconstruct

    theta = np.full((4, 4), 0.5)
    theta[0, 0] = np.nan
    idata = reconstruct(
        theta, kappa=2.0, kappa_obs="prior", rank=3, draws=15, tune=5, chains=1,
        random_seed=0, check_convergence=False,
    )  # fmt: skip
    assert idata.posterior_predictive["z"].shape == (1, 15, 15)
    assert predict(idata, random_seed=1)["theta_pred"].shape == (1, 15, 1)


def test_cli_batch_and_sbc_run_the_chain_smoother(tmp_path, capsys):
    units = tmp_path / "units"
    units.mkdir()
    for i in range(2):
        data, _ = get_spec("vonmises-chain").simulate(i, length=15)
        np.savez(units / f"s{i}.npz", y=data["y"], rank=3)
    fit_options = ["--set", "draws=100", "--set", "tune=50", "--set", "chains=2",
                   "--set", "check_convergence=false", "--set", "progressbar=false"]  # fmt: skip
    code = cli.main(["batch", "vonmises-chain", "--data", str(units), "--out",
                     str(tmp_path / "fits"), "--workers", "0", *fit_options])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "fits" / "population.nc").exists()
    sbc = ["sbc", "vonmises-chain", "--reps", "4", "--n-ranks", "9", "--workers", "0"]
    code = cli.main([*sbc, "--out", str(tmp_path / "sbc"), "--sim", "length=12", *fit_options])
    assert code == 0, capsys.readouterr().err
    assert "smoothness" in capsys.readouterr().out

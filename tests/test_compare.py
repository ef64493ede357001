"""pmctx.compare: ranking with Pareto-k reporting, the warning, and the CLI."""

import arviz as az
import numpy as np
import pytest

import pmctx
from pmctx.cli import main
from pmctx.compare import LooReliabilityWarning, compare, pareto_k_share


def normal_fit(y, mu_center, mu_sd, seed=0, draws=400):
    rng = np.random.default_rng(seed)
    mu = rng.normal(mu_center, mu_sd, size=(2, draws))
    ll = -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu[..., None]) ** 2
    return az.from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})


def conditional_like_fit(y, seed=1, draws=400):
    # Each observation gets its own latent drawn near it, as a per-trial latent does: its
    # likelihood given the latent is very peaked, and PSIS fails (k > 0.7 on many points).
    rng = np.random.default_rng(seed)
    latent = y + 0.05 * rng.normal(size=(2, draws, y.size))
    ll = -0.5 * np.log(2 * np.pi * 0.01) - 0.5 * ((y - latent) / 0.1) ** 2
    jump = rng.random((2, draws, y.size)) < 0.02  # occasional draws far away
    ll = np.where(jump, ll - 30.0, ll)
    return az.from_dict({"posterior": {"mu": latent.mean(-1)}, "log_likelihood": {"y": ll}})


@pytest.fixture(scope="module")
def y():
    return np.random.default_rng(0).normal(size=40)


def test_reliable_comparison_ranks_and_reports_k(y):
    table = compare({"right": normal_fit(y, y.mean(), 0.15), "shifted": normal_fit(y, 1.5, 0.15)})
    assert list(table.index) == ["right", "shifted"]
    assert (table["k_share"] <= 0.02).all() and table["reliable"].all()
    assert table["n_high_k"].dtype.kind == "i"
    assert set(table.attrs["loo"]) == {"right", "shifted"}


def test_unreliable_comparison_warns(y):
    with pytest.warns(LooReliabilityWarning, match="unreliable for \\['peaked'\\]"):
        table = compare({"ok": normal_fit(y, y.mean(), 0.15), "peaked": conditional_like_fit(y)})
    assert table.loc["peaked", "k_share"] > 0.02
    assert not table.loc["peaked", "reliable"]
    share = pareto_k_share(table.attrs["loo"]["peaked"])
    assert share == table.loc["peaked", "k_share"]


def test_package_level_alias():
    assert pmctx.compare is compare
    assert issubclass(pmctx.LooReliabilityWarning, pmctx.PmctxWarning)


def test_bad_input(y):
    with pytest.raises(ValueError, match="at least two models"):
        compare({"one": normal_fit(y, 0, 1)})
    with pytest.raises(ValueError, match="different numbers of observations"):
        compare({"a": normal_fit(y, 0, 0.2), "b": normal_fit(y[:10], 0, 0.2)})
    two = normal_fit(y, 0, 0.2)
    two.log_likelihood["z"] = two.log_likelihood["y"]
    with pytest.raises(ValueError, match="several variables"):
        compare({"a": two, "b": normal_fit(y, 0, 0.2)})
    compare({"a": two, "b": normal_fit(y, y.mean(), 0.2)}, var_name="y")  # resolves it


def test_cli_prints_table_and_warning(tmp_path, y, capsys):
    paths = []
    for name, idata in [("ok", normal_fit(y, y.mean(), 0.15)), ("peaked", conditional_like_fit(y))]:
        paths.append(tmp_path / f"{name}.nc")
        idata.to_netcdf(paths[-1])
    assert main(["compare", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("WARNING: PSIS-LOO is unreliable for ['peaked']")
    assert "k_share" in out and "ok" in out
    assert main(["compare", str(paths[0]), str(tmp_path / "missing.nc")]) == 2
    assert main(["compare", *map(str, paths), "--names", "a"]) == 2


def test_docstring_examples():
    from pmctx.testing import assert_docstring_examples

    assert_docstring_examples("pmctx.compare")


def test_every_compare_flag_has_help(capsys):
    import argparse

    from pmctx.compare import add_parser

    parser = argparse.ArgumentParser(prog="pmctx")
    add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--threshold THRESHOLD Pareto k above which" in text and "(0.7)" in text
    assert "--max-bad-share MAX_BAD_SHARE share of observations with k > THRESHOLD" in text
    assert "(0.02, i.e. 2%)" in text


@pytest.mark.parametrize(
    ("model", "variables", "expected"),
    [
        ("ibp", ["F", "X", "joint"], "joint"),
        ("crp", ["features", "trial_features", "responses"], "responses"),
    ],
)
def test_default_variable_is_the_first_the_model_declares(y, model, variables, expected):
    from pmctx.registry import get_spec

    assert next(iter(get_spec(model).comparisons)) == expected
    fits = {}
    for name, centre in (("a", y.mean()), ("b", 0.5)):
        fit = normal_fit(y, centre, 0.15)
        for var in variables:  # the declared default carries the data; the rest are decoys
            shift = 0.0 if var == expected else 5.0 * (name == "a")
            fit.log_likelihood[var] = fit.log_likelihood["y"] - shift
        fit["log_likelihood"] = fit.log_likelihood.to_dataset().drop_vars("y")
        fit.posterior.attrs["pmctx_model"] = model
        fits[name] = fit
    table = compare(fits)
    assert list(table.index) == ["a", "b"]
    assert (table["var_name"] == expected).all()


def test_cli_refit_flags(tmp_path, y, capsys):
    import argparse

    from pmctx.compare import add_parser

    parser = argparse.ArgumentParser(prog="pmctx")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["compare", "a.nc", "b.nc", "--time-budget", "30", "--no-refit"])
    assert args.time_budget == 30.0 and args.no_refit
    paths = []
    for name, idata in [("ok", normal_fit(y, y.mean(), 0.15)), ("peaked", conditional_like_fit(y))]:
        paths.append(tmp_path / f"{name}.nc")
        idata.to_netcdf(paths[-1])
    assert main(["compare", *map(str, paths), "--no-refit", "--time-budget", "5"]) == 0
    out = capsys.readouterr().out
    assert "n_refit" in out and "Pass refit=" in out


def test_observations_over_two_dimensions(y):
    # Pointwise values over (obs, feature): the reliability share counts every entry.
    fits = {}
    for name, fit in (("ok", normal_fit(y, y.mean(), 0.15)), ("peaked", conditional_like_fit(y))):
        ll = fit.log_likelihood["y"].values.reshape(2, -1, y.size // 2, 2)
        fits[name] = az.from_dict({"posterior": {"mu": fit.posterior["mu"].values},
                                  "log_likelihood": {"y": ll}})  # fmt: skip
    with pytest.warns(LooReliabilityWarning, match="peaked"):
        table = compare(fits)
    assert table.loc["peaked", "n_high_k"] >= 1 and not table.loc["peaked", "reliable"]

"""Random-effects BMS recovers the generating model frequencies of simulated populations."""

from __future__ import annotations

import numpy as np
import pytest

from pmctx.batch import run_batch
from pmctx.batch.bms import evidence_table, plot_bms, random_effects_bms
from pmctx.batch.toy import normal_mean_fit
from pmctx.io import load_idata


def _normal_evidences(model, rng, n_obs=100, tau=2.0):
    """Exact log evidences of one subject's data under m0 (mu = 0) and m1 (mu ~ N(0, tau^2)).

    Subjects of m1 whose mu is near 0 are (rightly) attributed to m0; with 100 observations
    and tau = 2 that happens rarely enough for the frequencies to be recoverable.
    """
    mu = 0.0 if model == 0 else rng.normal(0.0, tau)
    y = rng.normal(mu, 1.0, n_obs)
    log_m0 = -0.5 * n_obs * np.log(2 * np.pi) - 0.5 * np.sum(y**2)
    # y ~ N(0, I + tau^2 11^T): the conjugate marginal, by the matrix determinant lemma.
    quad = np.sum(y**2) - tau**2 * y.sum() ** 2 / (1 + n_obs * tau**2)
    log_m1 = -0.5 * n_obs * np.log(2 * np.pi) - 0.5 * np.log1p(n_obs * tau**2) - 0.5 * quad
    return [log_m0, log_m1]


def _population(freq, n_units, seed):
    rng = np.random.default_rng(seed)
    models = rng.choice(len(freq), size=n_units, p=freq)
    return np.array([_normal_evidences(m, rng) for m in models]), models


@pytest.mark.parametrize("freq", [(0.75, 0.25), (0.3, 0.7), (0.5, 0.5)])
def test_recovers_generating_frequencies(freq):
    errors = []
    for seed in range(4):
        L, models = _population(freq, 80, seed)
        result = random_effects_bms(L, models=["null", "mean"], n_samples=20_000, random_seed=seed)
        estimate = result.table["expected_frequency"].to_numpy()
        errors.append(np.abs(estimate - np.asarray(freq)).max())
        # The unit posteriors classify the generating model of most units.
        assert (result.unit_probabilities.to_numpy().argmax(1) == models).mean() > 0.85
    # Sampling noise of 80 units alone is about 0.05; the mean error must stay near it.
    assert np.mean(errors) < 0.08, errors


def test_exceedance_and_bor():
    L, _ = _population((0.85, 0.15), 60, seed=1)
    result = random_effects_bms(L, models=["null", "mean"], n_samples=50_000)
    assert result.table.loc["null", "xp"] > 0.99 and result.table.loc["null", "pxp"] > 0.95
    assert result.bor < 0.05
    # Models that cannot be told apart: the omnibus risk is high, pxp close to 1/K.
    flat = random_effects_bms(np.zeros((40, 3)), n_samples=20_000)
    assert flat.bor > 0.9
    np.testing.assert_allclose(flat.table["pxp"], 1 / 3, atol=0.05)
    np.testing.assert_allclose(flat.table["expected_frequency"], 1 / 3, atol=1e-6)


def test_three_models_and_plot():
    rng = np.random.default_rng(5)
    truth = rng.choice(3, size=90, p=[0.5, 0.3, 0.2])
    L = rng.normal(0.0, 1.0, (90, 3))
    L[np.arange(90), truth] += 6.0
    result = random_effects_bms(L, models=list("abc"), n_samples=20_000)
    np.testing.assert_allclose(
        result.table["expected_frequency"], np.bincount(truth) / 90, atol=0.05
    )
    fig = plot_bms(result)
    assert len(fig.axes) == 2


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2 models"):
        random_effects_bms(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="log_evidence"):
        random_effects_bms(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="prior"):
        random_effects_bms(np.zeros((3, 2)), prior=-1.0)


def _fit_with_evidence(data, *, random_seed=None, prior_sd=1.0, **options):
    """The toy fit plus its exact log evidence: y ~ N(0, I + prior_sd^2 11^T)."""
    from scipy.stats import multivariate_normal

    idata = normal_mean_fit(data, random_seed=random_seed, prior_sd=prior_sd, **options)
    y = np.asarray(data["y"], float)
    cov = np.eye(y.size) + prior_sd**2
    idata.posterior.attrs["log_evidence"] = float(
        multivariate_normal(np.zeros(y.size), cov).logpdf(y)
    )
    return idata


def test_evidence_table_from_batch_folders(tmp_path):
    import arviz as az

    rng = np.random.default_rng(3)
    units = {f"s{i}": {"y": rng.normal(0.5 * i, 1.0, 6), "name": f"s{i}"} for i in range(4)}
    wide = tmp_path / "wide"  # prior sd 3; s2 fails under this model and must be dropped
    run_batch(
        _fit_with_evidence, units, wide, local=True, options={"prior_sd": 3.0, "fail_on": "s2"}
    )
    narrow = tmp_path / "narrow"
    run_batch(_fit_with_evidence, units, narrow, local=True, options={"prior_sd": 0.3})
    fits = {"wide": wide, "narrow": narrow}

    table = evidence_table(fits)  # every fit has a log evidence: that is what auto takes
    assert list(table.columns) == ["wide", "narrow"] and list(table.index) == ["s0", "s1", "s3"]
    for model, folder in fits.items():
        for unit in table.index:
            idata = load_idata(folder / "units" / f"{unit}.nc")
            assert table.loc[unit, model] == idata.posterior.attrs["log_evidence"]
            expected = _fit_with_evidence(
                dict(units[unit]), prior_sd=3.0 if model == "wide" else 0.3
            )
            np.testing.assert_allclose(
                table.loc[unit, model], expected.posterior.attrs["log_evidence"]
            )
    # Units near 0 favour the narrow prior, s3 (mean 1.5) the wide one.
    assert table.loc["s0", "narrow"] > table.loc["s0", "wide"]
    assert table.loc["s3", "wide"] > table.loc["s3", "narrow"]

    loo = evidence_table(fits, criterion="loo")
    idata = load_idata(narrow / "units" / "s1.nc")
    assert loo.loc["s1", "narrow"] == pytest.approx(float(az.loo(idata).elpd))

    plain = tmp_path / "plain"  # a model without log evidence: auto falls back to LOO for all
    run_batch(normal_mean_fit, units, plain, local=True)
    mixed = evidence_table({"narrow": narrow, "plain": plain})
    assert list(mixed.index) == ["s0", "s1", "s2", "s3"]  # s2 finished under both
    np.testing.assert_allclose(mixed.loc[loo.index, "narrow"], loo["narrow"])
    with pytest.raises(ValueError, match="no log_evidence"):
        evidence_table({"narrow": narrow, "plain": plain}, criterion="log_evidence")
    with pytest.raises(ValueError, match="criterion"):
        evidence_table(fits, criterion="bic")
    result = random_effects_bms(table)
    assert list(result.table.index) == ["wide", "narrow"]
    assert list(result.unit_probabilities.index) == ["s0", "s1", "s3"]


def _two_model_fit(data, *, random_seed=None):
    """A unit fitted under two models whose log evidences it stores in its attributes."""
    from pmctx.io import to_inference_data

    y = np.asarray(data["y"], float)
    L = _normal_evidences_of(y)
    return to_inference_data(
        {"mu": np.array([[y.mean()]])},
        attrs={"log_evidence_zero": L[0], "log_evidence_free": L[1], "zero.mu": 0.0},
    )


def _normal_evidences_of(y, tau=2.0):
    n_obs = y.size
    log_m0 = -0.5 * n_obs * np.log(2 * np.pi) - 0.5 * np.sum(y**2)
    quad = np.sum(y**2) - tau**2 * y.sum() ** 2 / (1 + n_obs * tau**2)
    log_m1 = -0.5 * n_obs * np.log(2 * np.pi) - 0.5 * np.log1p(n_obs * tau**2) - 0.5 * quad
    return [float(log_m0), float(log_m1)]


def test_write_model_selection_reads_unit_evidences(tmp_path):
    import pandas as pd

    from pmctx.batch.bms import unit_attributes, write_model_selection

    rng = np.random.default_rng(5)
    units = {f"u{i}": {"y": rng.normal(0.0 if i < 6 else 3.0, 1.0, 50)} for i in range(8)}
    run_batch(_two_model_fit, units, tmp_path, local=True)
    paths = write_model_selection(tmp_path, random_seed=1)
    assert [p.name for p in paths] == ["units_models.csv", "bms.csv", "bms_units.csv"]
    table = pd.read_csv(tmp_path / "bms.csv", index_col="model")
    # The same as random_effects_bms on the evidences the units stored.
    L = np.array([_normal_evidences_of(units[u]["y"]) for u in sorted(units)])
    expected = random_effects_bms(L, models=["zero", "free"], random_seed=1).table
    np.testing.assert_allclose(table.loc[["zero", "free"], "alpha"], expected["alpha"])
    probs = pd.read_csv(tmp_path / "bms_units.csv", index_col="unit")
    assert (probs.loc["u7", "free"] > 0.99) and (probs.loc["u0", "zero"] > 0.5)
    attrs = unit_attributes(tmp_path)
    assert list(attrs.index) == sorted(units) and "created_at" not in attrs.columns
    assert (attrs["zero.mu"] == 0.0).all()

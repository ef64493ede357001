"""pmctx.summarize: circular rows whose mean lies inside their interval as written."""

import numpy as np
import pytest
import xarray as xr

from pmctx.summarize import summary


def _circular(draws, period, name="q"):
    """A dataset of one circular quantity from draws of shape (chain, draw, element)."""
    dims = ("chain", "draw", "element")
    return xr.Dataset({name: (dims, draws, {"period": period})})


def _inside_modulo(values, lower, upper, period):
    """Whether each value lies on the arc from ``lower`` to ``upper`` read modulo ``period``."""
    return np.mod(values - lower, period) <= upper - lower


def test_angles_around_three_halves_pi_keep_the_mean_inside_the_interval():
    rng = np.random.default_rng(0)
    draws = np.mod(1.5 * np.pi + 0.1 * rng.standard_normal((2, 500, 1)), 2 * np.pi)
    row = summary(_circular(draws, 2 * np.pi)).iloc[0]
    assert row["kind"] == "circular" and row["period"] == pytest.approx(2 * np.pi)
    assert row["mean"] == pytest.approx(1.5 * np.pi, abs=0.02)
    assert row["lower"] <= row["mean"] <= row["upper"]
    assert row["lower"] == pytest.approx(1.5 * np.pi - 0.188, abs=0.03)
    assert row["upper"] == pytest.approx(1.5 * np.pi + 0.188, abs=0.03)


@pytest.mark.parametrize("period", [2 * np.pi, np.pi, 1.0])
def test_every_generated_row_has_lower_mean_upper_and_the_right_arc(period):
    rng = np.random.default_rng(1)
    n_elements, prob = 400, 0.9
    centres = rng.uniform(-period, 2 * period, n_elements)  # many near and on the wrap
    kappas = np.exp(rng.uniform(np.log(0.5), np.log(200.0), n_elements))
    scale = period / (2 * np.pi)
    draws = np.mod(centres + scale * rng.vonmises(0.0, kappas, (4, 300, n_elements)), period)
    table = summary(_circular(draws, period), prob=prob)
    lower, mean, upper = (table[c].to_numpy() for c in ("lower", "mean", "upper"))
    assert len(table) == n_elements
    assert np.all((mean >= 0) & (mean < period))
    assert np.all((lower <= mean) & (mean <= upper))
    assert np.all(upper - lower < period)
    # right modulo the period: the arc holds prob of each element's draws ...
    pooled = draws.reshape(-1, n_elements)
    share = _inside_modulo(pooled, lower, upper, period).mean(axis=0)
    np.testing.assert_allclose(share, prob, atol=0.01)
    # ... and its ends are the linear quantiles of the draws unwrapped onto the mean's branch
    unwrapped = mean + np.mod(pooled - mean + period / 2, period) - period / 2
    np.testing.assert_allclose(lower, np.quantile(unwrapped, 0.05, axis=0), atol=1e-9)
    np.testing.assert_allclose(upper, np.quantile(unwrapped, 0.95, axis=0), atol=1e-9)


@pytest.mark.parametrize("period", [2 * np.pi, np.pi])
def test_ninety_percent_intervals_cover_a_known_von_mises_truth(period):
    """Uniform prior, one observation y ~ VM(truth, kappa): the posterior is VM(y, kappa)."""
    rng = np.random.default_rng(2)
    n_rep, kappa = 2000, 4.0
    scale = period / (2 * np.pi)
    truth = rng.uniform(0, period, n_rep)
    y = truth / scale + rng.vonmises(0.0, kappa, n_rep)
    draws = np.mod(scale * rng.vonmises(y, kappa, (2, 200, n_rep)), period)
    table = summary(_circular(draws, period), prob=0.9)
    lower, upper = table["lower"].to_numpy(), table["upper"].to_numpy()
    coverage = _inside_modulo(truth, lower, upper, period).mean()
    assert abs(coverage - 0.9) < 0.025  # binomial sd 0.0067


def test_linear_rows_have_no_period():
    draws = np.random.default_rng(3).normal(size=(2, 100))
    table = summary(xr.Dataset({"mu": (("chain", "draw"), draws)}))
    assert np.isnan(table.loc["mu", "period"]) and table.loc["mu", "kind"] == "linear"


def test_float_coordinates_are_labelled_with_as_few_digits_as_keep_them_apart():
    grid = np.array([0.006373541236234237, 0.5, 0.50001, 1.0])
    draws = np.random.default_rng(0).normal(size=(2, 50, 4))
    ds = xr.Dataset({"f_x": (("chain", "draw", "x"), draws)}, coords={"x": grid})
    assert list(summary(ds).index) == ["f_x[0.00637354]", "f_x[0.5]", "f_x[0.50001]", "f_x[1]"]
    apart = ds.assign_coords(x=[0.006373541236234237, 0.5, 0.75, 1.0])
    assert summary(apart).index[0] == "f_x[0.006374]"
    ints = xr.Dataset({"z": (("chain", "draw", "k"), draws)}, coords={"k": [3, 1, 2, 7]})
    assert list(summary(ints).index) == ["z[3]", "z[1]", "z[2]", "z[7]"]

"""Public boundary of gum(): structure of the pm.Model, bad input, GLM comparison by LOO."""

import numpy as np
import pandas as pd
import pytest

from pmctx.gum import GP, Linear, gum
from pmctx.gum.glm import compare, glm, psychophysics_glm, psychophysics_gum
from pmctx.gum.synthetic import psychophysics, section_3_1_formula, seed_section_3_1


@pytest.fixture(scope="module")
def data():
    return seed_section_3_1(60, random_seed=3)


def test_model_has_dims_deterministic_grids_and_observed(data):
    g = gum(section_3_1_formula(max_points=12), pd.DataFrame(data), family="poisson")
    model = g.model
    assert {"obs", "f_x1_x", "f_x2_x", "f_x3_x"} <= set(model.coords)
    assert [rv.name for rv in model.observed_RVs] == ["y"]
    assert tuple(model.named_vars_to_dims["f_x1"]) == ("f_x1_x",)
    assert tuple(model.named_vars_to_dims["y"]) == ("obs",)
    assert {d.name for d in model.deterministics} == {"f_x1", "f_x2", "f_x3", "intercept"}
    assert np.isclose(model.coords["f_x2_x"][-1], data["x2"].max())
    # non-centred: the free variables are standard normal
    assert {rv.name for rv in model.free_RVs} == {"f_x1_z", "f_x2_z", "f_x3_z", "intercept_z"}


def test_two_d_regressors_sum_over_positions():
    data = psychophysics(30, random_seed=1)
    g = psychophysics_glm(data)
    u = np.zeros(g.design.n_free)
    u[g.design.slices["w_position"]] = np.linspace(0.1, 1.0, 10) / 10.0  # sd 10 scaling
    w = g.design.thetas(u)["w_position"]
    expected = np.nansum(w[None, :] * np.cos(data["angle"]), axis=1)
    assert np.allclose(g.design.predictor(u), expected)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"formula_or_terms": "y ~ f(x9)"}, ValueError, r"Unknown column\(s\) \['x9'\]"),
        ({"formula_or_terms": "z ~ f(x1)"}, ValueError, r"Unknown column\(s\) \['z'\]"),
        ({"family": "binomial"}, ValueError, "family"),
        ({"family": "poisson", "link": "logit"}, ValueError, "link"),
        ({"formula_or_terms": "y ~ f(x1) * (f(x1) + f(x2))"}, ValueError, "same product"),
        ({"formula_or_terms": 3}, TypeError, "formula string or a Term"),
        ({"formula_or_terms": GP("x1")}, ValueError, "response="),
        ({"intercept_sd": -1.0}, ValueError, "intercept_sd"),
    ],
)
def test_bad_arguments(data, kwargs, error, match):
    args = {"formula_or_terms": "y ~ f(x1)", "family": "poisson", **kwargs}
    with pytest.raises(error, match=match):
        gum(args.pop("formula_or_terms"), data, **args)


def test_bad_data(data):
    with pytest.raises(ValueError, match="only 0 and 1|binary|0/1"):
        gum("y ~ f(x1)", data, family="bernoulli")  # counts are not binary
    negative = {**data, "y": -data["y"] - 1}
    with pytest.raises(ValueError, match="non-negative|negative"):
        gum("y ~ f(x1)", negative, family="poisson")
    with_nan = {**data, "x1": np.where(np.arange(60) == 3, np.nan, data["x1"])}
    with pytest.raises(ValueError, match="NaN"):
        gum("y ~ f(x1)", with_nan, family="poisson")
    nan_y = {**data, "y": np.where(np.arange(60) == 3, np.nan, data["y"].astype(float))}
    with pytest.raises(ValueError, match="NaN|integer|finite"):
        gum("y ~ f(x1)", nan_y, family="gaussian")
    short = {**data, "x1": data["x1"][:10]}
    with pytest.raises(ValueError, match="shape"):
        gum("y ~ f(x1)", short, family="poisson")
    with pytest.raises(TypeError, match="DataFrame or a dict"):
        gum("y ~ f(x1)", [1, 2, 3], family="poisson")
    gaussian = gum("y ~ f(x1)", data, family="gaussian")
    with pytest.raises(ValueError, match="noise_sd"):
        gaussian.fit_laplace()
    with pytest.raises(ValueError, match="must be positive"):
        gaussian.set_hyperparameters({"f_x1": {"lengthscale": 0.0}})


def test_categorical_strings_and_probit():
    rng = np.random.default_rng(0)
    n = 200
    group = rng.choice(["a", "b", "c"], n)
    effect = {"a": -1.0, "b": 0.0, "c": 1.0}
    x = rng.normal(size=n)
    y = (rng.normal(size=n) < np.array([effect[g] for g in group]) + 0.5 * x).astype(int)
    g = gum("y ~ w(group) + x", {"y": y, "group": group, "x": x}, family="bernoulli", link="probit")
    summary = g.function_summary(g.laplace(draws=400), "w_group")
    assert list(summary["x"]) == ["a", "b", "c"]
    assert summary["mean"].is_monotonic_increasing
    assert abs(summary["mean"].iloc[2] - summary["mean"].iloc[0] - 2.0) < 0.8


def test_loo_prefers_gum_only_when_the_mapping_is_nonlinear():
    """Seed 3.2: with a non-normative (step-like) mapping the GUM wins by more than 2 dse; with
    data from the normative GLM the GUM is not better by a significant margin."""
    step = lambda a: np.tanh(4 * np.cos(a)) + 0.5 * np.sin(a)  # noqa: E731
    nonlinear = psychophysics(400, mapping=step, random_seed=0)
    table = compare(
        {
            "glm": psychophysics_glm(nonlinear).laplace(draws=800),
            "gum": psychophysics_gum(nonlinear).laplace(draws=800),
        }
    )
    assert table.index[0] == "gum"
    assert -table.loc["glm", "elpd_diff"] > 2 * table.loc["glm", "dse"]  # ArviZ 1: diff <= 0
    normative = psychophysics(400, random_seed=1)
    table = compare(
        {
            "glm": psychophysics_glm(normative).laplace(draws=800),
            "gum": psychophysics_gum(normative).laplace(draws=800),
        }
    )
    if table.index[0] == "gum":
        assert -table.loc["glm", "elpd_diff"] < 2 * table.loc["glm", "dse"]


def test_glm_helper_and_advi():
    rng = np.random.default_rng(1)
    x = rng.normal(size=300)
    y = rng.poisson(np.exp(0.5 + 0.8 * x))
    g = glm("y", ["x"], {"x": x, "y": y}, family="poisson")
    laplace = g.laplace(draws=500)
    advi = g.advi(n=3000, draws=500, random_seed=1)
    for idata in (laplace, advi):
        assert abs(float(idata.posterior["b_x"].mean()) - 0.8) < 0.1
        assert "y" in idata.log_likelihood
    with pytest.raises(ValueError, match="log_likelihood"):
        compare(
            {"a": laplace, "b": g.to_idata(g.laplace_result.draws(5, rng), log_likelihood=False)}
        )
    with pytest.raises(ValueError, match="at least one regressor"):
        glm("y", [], {"x": x, "y": y})
    assert isinstance(Linear("x"), Linear)


def test_sampled_lengthscale_model_structure():
    rng = np.random.default_rng(2)
    data = {"x": rng.uniform(0, 1, 20)}
    data["y"] = np.sin(4 * data["x"]) + rng.normal(0, 0.1, 20)
    g = gum("y ~ f(x, lengthscale=0.3)", data, family="gaussian", lengthscale_prior_sigma=0.5)
    assert "f_x_lengthscale" in {rv.name for rv in g.model.free_RVs}
    logp = g.model.compile_logp()
    point = g.model.initial_point()
    point["f_x_lengthscale_log__"] = np.log(0.3)
    point["f_x_z"] = np.random.default_rng(0).standard_normal(point["f_x_z"].shape)
    assert np.isfinite(logp(point))
    # at the declared lengthscale the model equals the fixed-hyperparameter one plus the prior
    fixed = gum("y ~ f(x, lengthscale=0.3)", data, family="gaussian")
    fixed_point = {k: v for k, v in point.items() if k != "f_x_lengthscale_log__"}
    from scipy.stats import lognorm

    prior = lognorm(s=0.5, scale=0.3).logpdf(0.3) + np.log(0.3)  # log-transformed value
    assert np.isclose(logp(point), fixed.model.compile_logp()(fixed_point) + prior)
    with pytest.raises(ValueError, match="lengthscale_prior_sigma"):
        gum("y ~ f(x)", data, family="gaussian", lengthscale_prior_sigma=0.0)


def test_minibatch_advi_matches_laplace():
    rng = np.random.default_rng(6)
    n = 3000
    data = {"x": rng.uniform(0, 2, n)}
    data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"])))
    g = gum("y ~ f(x, lengthscale=0.5, max_points=12)", data, family="poisson")
    laplace = g.function_summary(g.laplace(draws=500), "f_x")
    idata = g.advi(n=2000, minibatch_size=300, draws=300, random_seed=2)
    advi = g.function_summary(idata, "f_x")
    assert np.abs(advi["mean"] - laplace["mean"]).max() < 3 * laplace["sd"].max()
    assert idata.log_likelihood["y"].shape == (1, 300, n)
    with pytest.raises(ValueError, match="minibatch_size"):
        g.advi(n=10, minibatch_size=0)


def test_empty_data_is_rejected_with_the_response_named():
    frame = pd.DataFrame({"x1": [0.1, 0.5, 0.9], "x2": [1.0, 0.0, 2.0], "y": [0, 2, 1]})
    for formula in ("y ~ f(x1) + f(x2)", "y ~ x1 + x2"):
        with pytest.raises(
            ValueError,
            match=r"data\['y'\] must have at least 1 observation \(one per entry\), got no "
            r"entries .*df\.iloc\[:0\]\), check that some rows are left",
        ):
            gum(formula, frame.iloc[:0], family="poisson")
    frame["g"] = ["a", "b", "a"]
    with pytest.raises(ValueError, match=r"data\['y'\] must have at least 1 observation"):
        gum("y|g ~ x1", frame.iloc[:0], family="poisson")


def test_repr_shows_the_structure_family_and_size():
    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(0, 2, 30), "z": rng.uniform(0, 2, 30)}
    data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    g = gum("y ~ (f(x) + f(z)) * z", data, family="poisson")
    assert (
        repr(g)
        == f"GumModel(y ~ (f_x + f_z) * b_z, family='poisson', n_obs=30, n_free={g.design.n_free})"
    )


def test_function_plot_says_how_the_fit_was_made():
    from pmctx.gum.plots import plot_functions

    rng = np.random.default_rng(1)
    data = {"x": rng.uniform(0, 2, 40)}
    data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    fig = plot_functions(g, g.laplace(draws=50, random_seed=0))
    assert fig._suptitle.get_text() == "Posterior functions, Laplace approximation"

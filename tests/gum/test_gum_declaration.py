"""A GUM fit remembers its model, so pmctx.compare refits it exactly with no refitter given."""

import gc
import warnings

import arviz as az
import numpy as np
import pytest
from pmctx.models.gum import refit_functions

from pmctx.compare import compare
from pmctx.gum import gum
from pmctx.gum.declaration import fitted_model, redeclare, refit_data
from pmctx.kfold import kfold
from pmctx.refit import as_refitter


def quiet_compare(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return compare(*args, **kwargs)


@pytest.fixture
def outlier_data():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 3, 20))
    data = {"x": x, "y": rng.poisson(np.exp(1 + np.sin(2 * x)))}
    data["y"][[3, 15]] += 12  # outliers: influential points, Pareto k above 0.5
    return data


def test_fits_remember_their_model_while_the_user_holds_it(outlier_data):
    g = gum("y ~ f(x, lengthscale=0.5)", outlier_data, family="poisson")
    idata = g.laplace(draws=20)
    assert fitted_model(idata) is g
    assert idata.posterior.attrs["pmctx_model"] == "gum"
    del g
    gc.collect()
    assert fitted_model(idata) is None
    assert refit_functions(idata) is None  # compare keeps PSIS and says how to refit


def test_redeclared_on_its_own_rows_the_model_is_the_same(outlier_data):
    g = gum("y ~ f(x, lengthscale=0.5)", outlier_data, family="poisson")
    g.set_hyperparameters({"f_x": {"lengthscale": 0.8, "variance": 2.0}})
    again = redeclare(g, refit_data(g))
    assert again.hyperparameters() == g.hyperparameters()
    assert again.fit_laplace().log_evidence == pytest.approx(g.fit_laplace().log_evidence, abs=1e-8)


def test_weights_and_categories_follow_the_rows():
    rng = np.random.default_rng(2)
    data = {"x": rng.normal(size=12), "g": np.array(list("abc") * 4)}
    data["y"] = rng.normal(size=12)
    weights = np.arange(1.0, 13.0)
    g = gum("y ~ x + cat(g)", data, noise_sd=1.0, weights=weights)
    rows = {name: values[4:] for name, values in refit_data(g).items()}
    part = redeclare(g, rows)
    assert np.array_equal(part.design.weights, weights[4:])
    assert part.design.noise_sd == 1.0
    assert {k: list(v) for k, v in part.labels.items()} == {k: list(v) for k, v in g.labels.items()}


def test_compare_refits_a_gum_fit_by_itself_as_a_given_refitter_would(outlier_data):
    g = gum("y ~ f(x, lengthscale=0.5)", outlier_data, family="poisson")
    full = g.laplace(draws=500, random_seed=0, posterior_predictive=False)
    flat = az.from_dict({"posterior": {"mu": np.zeros((1, 50))},
                        "log_likelihood": {"y": np.full((1, 50, 20), -5.0)}})  # fmt: skip
    table = quiet_compare({"gum": full, "flat": flat}, threshold=0.5)
    assert table.loc["gum", "n_refit"] == table.loc["gum", "n_high_k"] >= 1
    assert "laplace" in table.loc["gum", "refit"]
    hook = as_refitter(refit_functions(full))
    brute = kfold(hook.fit, hook.log_predictive, hook.data, k=20)
    assert abs(table.loc["gum", "elpd"] - brute.elpd) < 2 * brute.se


@pytest.mark.slow
def test_gum_section_3_1_is_ranked_first_with_no_refitter_given():
    # Seed 002 section 3.1, N = 200: PSIS ranks the GLM first (30% of the GUM's rows have
    # k > 0.7); compare's own exact refits, found from the fits alone, rank the GUM first.
    from pmctx.gum.glm import glm
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

    data = seed_section_3_1(200, random_seed=0)
    models = {
        "gum": gum(section_3_1_formula(max_points=24), data, family="poisson"),
        "glm": glm("y", ["x1", "x2", "x3"], data, family="poisson"),
    }
    fits = {name: m.laplace(draws=2000, random_seed=0, posterior_predictive=False)
            for name, m in models.items()}  # fmt: skip
    table = quiet_compare(fits)
    assert table.loc["gum", "elpd_psis"] < table.loc["glm", "elpd_psis"]
    assert list(table.index) == ["gum", "glm"] and table["reliable"].all()
    assert (table["refit"] == "kfold 10 fits (laplace)").all()

"""Outputs of a fitted GUM: bands, design matrix, binned fit, explained variance, comparison."""

import numpy as np
import pytest

from pmctx.gum import gum
from pmctx.gum.glm import psychophysics_glm, psychophysics_gum
from pmctx.gum.outputs import (
    binned_fit,
    comparison_table,
    design_matrix,
    explained_variance,
    function_bands,
)
from pmctx.gum.synthetic import psychophysics


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(3)
    data = {"x": rng.uniform(0, 2, 300), "g": rng.choice(["a", "b"], 300)}
    data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"]) + (data["g"] == "b")))
    g = gum("y ~ f(x, max_points=10) + w(g)", data, family="poisson")
    return data, g, g.laplace(draws=400)


def test_design_matrix_reproduces_the_additive_predictor(fitted):
    _data, g, _ = fitted
    X = design_matrix(g)
    assert list(X.columns[-2:]) == ["w_g[a]", "w_g[b]"] and X.shape == (300, 12)
    u = g.laplace_result.u_map
    thetas = g.design.thetas(u)
    beta = np.concatenate([thetas["f_x"], thetas["w_g"]])
    rho = X.to_numpy() @ beta + g.design.scalars(u)["intercept"]
    assert np.allclose(rho, g.design.predictor(u))


def test_bands_binned_fit_and_explained_variance(fitted):
    _, g, idata = fitted
    bands = function_bands(g, idata, x={"f_x": np.linspace(0, 2, 7)})
    assert np.all(bands["f_x"]["lower"] <= bands["f_x"]["upper"]) and len(bands["f_x"]) == 7
    assert list(bands["w_g"]["x"]) == ["a", "b"]
    table = binned_fit(g, idata, "x", bins=6)
    assert table["count"].sum() == 300
    # observed bin means lie near the predicted ones (Poisson noise: sd ~ sqrt(mean / count))
    z = (table["observed"] - table["predicted"]) / np.sqrt(table["predicted"] / table["count"])
    assert np.all(np.abs(z) < 3.5)
    ev = explained_variance(g, idata)
    assert 0.1 < ev["r2"] < 0.9 and 0.1 < ev["variance_explained"] < 0.9
    with pytest.raises(ValueError, match="1-D regressor"):
        # a 2-D regressor
        binned_fit(psychophysics_gum(psychophysics(50, random_seed=0)), None, "angle")


def test_comparison_table_has_loo_and_evidence():
    data = psychophysics(300, mapping=lambda a: np.tanh(3 * np.cos(a)), random_seed=2)
    fits = {}
    for name, builder in (("glm", psychophysics_glm), ("gum", psychophysics_gum)):
        g = builder(data)
        fits[name] = (g, g.laplace(draws=400))
    table = comparison_table(fits)
    assert {"elpd", "log_evidence", "log_evidence_diff"} <= set(table.columns)
    assert table.loc[table["log_evidence"].idxmax(), "log_evidence_diff"] == 0
    assert np.isfinite(table["log_evidence"]).all()

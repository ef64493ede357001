"""Laplace-whitened NUTS coordinates (pmctx.gum.whiten) and the compiled-model cache of
GumModel.sample's nutpie path."""

import numpy as np
import pytest

from pmctx.gum import backends, gum
from pmctx.gum.whiten import WHITE_NAME, laplace_frame, whitened_model


def _logp_differences(g, L_used):
    """log p_white(z) - log p_model(mode + L z) at random z, with the whitened model built
    from ``L_used`` (the correct factor, or a deliberately wrong one)."""
    mode, L, layout = laplace_frame(g)
    white = whitened_model(g)
    if L_used is not L:
        import pmctx.gum.whiten as whiten

        original = whiten.laplace_frame
        whiten.laplace_frame = lambda _: (mode, L_used, layout)
        try:
            white = whitened_model(g)
        finally:
            whiten.laplace_frame = original
    white_logp, plain_logp = white.compile_logp(), g.model.compile_logp()
    rng = np.random.default_rng(0)
    out = []
    for _ in range(5):
        z = 2 * rng.normal(size=len(mode))
        x = mode + L @ z  # the correct map: a wrong white model must disagree with it
        point = {v.name: x[cut].reshape(v.type.shape) for v, cut in layout}
        out.append(white_logp({WHITE_NAME: z}) - plain_logp(point))
    return np.array(out), float(np.sum(np.log(np.diag(L))))


def test_whitened_logp_equals_model_logp_plus_log_det(product_gum):
    g = product_gum(150)
    diffs, logdet = _logp_differences(g, laplace_frame(g)[1])
    np.testing.assert_allclose(diffs, logdet, atol=1e-8)
    # the user's variables are Deterministics of the same names and dims
    white = g.whitened_model
    assert [v.name for v in white.free_RVs] == [WHITE_NAME]
    names = {d.name for d in white.deterministics}
    assert {"f_x", "f_z", "f_x_z", "f_z_z", "intercept", "intercept_z"} <= names
    assert white.named_vars_to_dims["f_x"] == g.model.named_vars_to_dims["f_x"]
    assert g.whitened_model is white  # built once per model and Laplace fit


def test_broken_whitening_is_caught(product_gum):
    """A whitened model built with the wrong factor (L transposed) does not reproduce the
    model's density: the differences are not one constant."""
    g = product_gum(150)
    L = laplace_frame(g)[1]
    diffs, _ = _logp_differences(g, L.T.copy())
    assert np.ptp(diffs) > 1.0


def test_whitened_model_refused_with_sampled_lengthscales():
    rng = np.random.default_rng(1)
    data = {"x": rng.uniform(0, 2, 60)}
    data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"])))
    g = gum("y ~ f(x, max_points=8)", data, family="poisson", lengthscale_prior_sigma=0.5)
    assert g.whitened_model is None


@pytest.mark.slow
def test_whitened_nutpie_gives_the_plain_model_posterior(product_gum):
    """Same posterior as the plain model sampled by nutpie (low-rank mass matrix): means
    within 4 Monte Carlo standard errors (of the difference) and sds within 15%."""
    import arviz as az

    g = product_gum(150)
    kw = dict(draws=1000, tune=600, chains=2, progressbar=False, backend="nutpie")
    kw |= dict(posterior_predictive=False, check_convergence=False)
    white = g.sample(random_seed=1, **kw)
    plain = g.sample(random_seed=2, whiten=False, **kw)
    assert WHITE_NAME not in white.posterior
    assert set(white.posterior.data_vars) == set(plain.posterior.data_vars)
    for name in ("f_x", "f_z", "intercept"):
        a, b = white.posterior[name], plain.posterior[name]
        se = np.hypot(
            az.mcse(white, var_names=[name])[name], az.mcse(plain, var_names=[name])[name]
        )
        diff = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw")))
        assert np.all(diff.values <= 4 * se.values + 1e-9), name
        ratio = a.std(("chain", "draw")) / b.std(("chain", "draw"))
        assert np.all(np.abs(ratio.values - 1) < 0.15), name
    assert white.log_likelihood["y"].shape == plain.log_likelihood["y"].shape


@pytest.mark.slow
def test_compiled_nutpie_model_is_reused(product_gum, monkeypatch, tmp_path):
    import pmctx.gum.recipes as recipes

    # An empty recipe store: a recipe that an earlier run on this machine left on disk would
    # skip the compile this test counts.
    monkeypatch.setattr(recipes, "cache_dir", lambda: tmp_path)
    g = product_gum(80)
    calls = []
    original = backends.compile_nutpie

    def counting(model, initial_point=None, **kwargs):
        calls.append(model)
        return original(model, initial_point, **kwargs)

    monkeypatch.setattr(backends, "compile_nutpie", counting)
    kw = dict(draws=50, tune=50, chains=1, progressbar=False, backend="nutpie")
    kw |= dict(posterior_predictive=False, check_convergence=False)
    first = g.sample(random_seed=1, **kw)
    second = g.sample(random_seed=2, **kw)
    assert len(calls) == 1 and calls[0] is g.whitened_model
    assert not np.allclose(first.posterior["f_x"].values, second.posterior["f_x"].values)
    g.sample(random_seed=3, whiten=False, **kw)  # another kind: compiled once more
    g.sample(random_seed=4, whiten=False, **kw)
    assert len(calls) == 2 and calls[1] is g.model
    g.set_hyperparameters({"f_x": {"lengthscale": 0.4}})  # a new model: compiled again
    g.sample(random_seed=5, **kw)
    assert len(calls) == 3

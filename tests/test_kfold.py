"""K-fold CV and reloo-style exact refits against closed-form leave-one-out predictions."""

import warnings

import arviz as az
import numpy as np
import pytest
from scipy.stats import norm

from pmctx.compare import compare
from pmctx.kfold import elpd_data, fold_indices, gum_functions, kfold, kfold_functions, reloo

PRIOR_SD, NOISE_SD = 2.0, 1.0


def posterior_params(y):
    precision = 1 / PRIOR_SD**2 + y.size / NOISE_SD**2
    return y.sum() / NOISE_SD**2 / precision, precision**-0.5


def fit(train, draws=4000):
    # Exact posterior draws of a normal mean with known noise (conjugate).
    mean, sd = posterior_params(train["y"])
    rng = np.random.default_rng(train["y"].size)
    return az.from_dict({"posterior": {"mu": rng.normal(mean, sd, size=(2, draws // 2))}})


def log_predictive(idata, test):
    mu = idata.posterior["mu"].values[..., None]
    return norm.logpdf(test["y"], mu, NOISE_SD)


def exact_loo(y):
    out = []
    for i in range(y.size):
        mean, sd = posterior_params(np.delete(y, i))
        out.append(norm.logpdf(y[i], mean, np.hypot(sd, NOISE_SD)))
    return np.array(out)


@pytest.fixture(scope="module")
def y():
    return np.random.default_rng(1).normal(0.5, NOISE_SD, size=15)


def test_leave_one_out_refits_match_closed_form(y):
    result = kfold(fit, log_predictive, {"y": y}, k=y.size)
    np.testing.assert_allclose(result.elpd_i, exact_loo(y), atol=0.01)
    assert result.n_data_points == y.size and not result.warning


def test_kfold_uses_map_fn_and_partitions(y):
    calls = []

    def recording_map(function, jobs):
        jobs = list(jobs)
        calls.append(len(jobs))
        return [function(job) for job in jobs]

    result = kfold(fit, log_predictive, {"y": y, "label": "kept"}, k=5, map_fn=recording_map)
    assert calls == [5]
    folds = fold_indices(y.size, 5, random_seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(y.size))
    # 5-fold predicts from 12 of 15 points: a little worse than exact leave-one-out.
    assert result.elpd < exact_loo(y).sum() + 0.05


def test_reloo_replaces_only_high_k(y):
    full = fit({"y": y})
    ll = norm.logpdf(y, full.posterior["mu"].values[..., None], NOISE_SD)
    full["log_likelihood"] = az.dict_to_dataset({"y": ll})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loo = az.loo(full, pointwise=True)
    loo.pareto_k[:] = 0.1
    loo.pareto_k[[2, 7]] = 1.2  # pretend PSIS failed on two units
    fixed = reloo(fit, log_predictive, {"y": y}, loo)
    exact = exact_loo(y)
    np.testing.assert_allclose(np.asarray(fixed.elpd_i)[[2, 7]], exact[[2, 7]], atol=0.01)
    keep = np.setdiff1d(np.arange(y.size), [2, 7])
    np.testing.assert_array_equal(np.asarray(fixed.elpd_i)[keep], np.asarray(loo.elpd_i)[keep])
    assert np.all(np.asarray(fixed.pareto_k) <= 0.7)


def test_results_rank_in_compare(y):
    good = kfold(fit, log_predictive, {"y": y}, k=5)
    bad = elpd_data(np.asarray(good.elpd_i) - 1.0, n_samples=100)
    table = compare({"good": good, "bad": bad})
    assert list(table.index) == ["good", "bad"] and table["reliable"].all()


def test_bad_input(y):
    with pytest.raises(ValueError, match="partition"):
        kfold(fit, log_predictive, {"y": y}, folds=[np.arange(3)])
    with pytest.raises(ValueError, match="k must be <= 15"):
        kfold(fit, log_predictive, {"y": y}, k=30)
    with pytest.raises(ValueError, match="number of units"):
        kfold(fit, log_predictive, {"y": y, "z": np.zeros(4)})
    with pytest.raises(ValueError, match="values per draw"):
        kfold(fit, lambda idata, test: np.zeros((10, 1)), {"y": y}, k=3)
    with pytest.raises(ValueError, match="var_name must be"):
        kfold_functions("ibp", var_name="Z")


def test_gum_adapter_scores_held_out_rows_through_predict():
    # GumModel.predict exists now: each fold is refitted through the GUM's own fit and its
    # held-out rows are scored by the exact held-out density (pmctx.gum.heldout).
    from pmctx.gum import gum
    from pmctx.gum.heldout import held_out_lpd

    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2, 24)
    data = {"x": x, "y": rng.poisson(np.exp(np.sin(2 * x)))}

    def build(train):
        return gum("y ~ f(x, lengthscale=0.5)", train, family="poisson")

    fit_gum, log_pred = gum_functions(build, method="laplace", fit_options={"draws": 300})
    result = kfold(fit_gum, log_pred, data, k=3)
    for test in fold_indices(24, 3, random_seed=0):
        train = np.setdiff1d(np.arange(24), test)
        g = build({key: value[train] for key, value in data.items()})
        idata = g.laplace(draws=300, log_likelihood=False, posterior_predictive=False)
        expected = held_out_lpd(g, {key: value[test] for key, value in data.items()}, idata)
        np.testing.assert_allclose(np.asarray(result.elpd_i)[test], expected, rtol=1e-10)


def test_docstring_examples():
    from pmctx.testing import assert_docstring_examples

    assert_docstring_examples("pmctx.kfold")


def test_ibp_predictive_scores_held_out_forces_given_cues():
    from pmctx.ibp.marginal import trial_logliks

    rng = np.random.default_rng(0)
    n_fit, k, d, t = 5, 3, 2, 4
    Z = rng.integers(0, 2, (n_fit, k))
    Z[:, 2] = 0
    A, Y, pi = rng.normal(size=(k, d)), rng.integers(0, 2, (k, t)), np.array([0.4, 0.6, 0.01])
    posterior = {"Z": Z[None, None], "A": A[None, None], "Y": Y[None, None], "pi": pi[None, None]}
    idata = az.from_dict(
        {
            "posterior": posterior,
            "constant_data": {
                "sigma_n": np.array(0.5),
                "lam": np.array(0.9),
                "eps": np.array(0.05),
            },
        },
    )
    test = {"F": rng.normal(size=(2, d)), "X": rng.integers(0, 2, (2, t))}
    _, log_pred = kfold_functions("ibp", var_name="F", marginal_options={"inactive": "exact"})
    got = log_pred(idata, test)
    want = trial_logliks(test["F"], test["X"], Z, A, Y, pi, sigma_n=0.5, inactive="exact")["F"]
    assert got.shape == (1, 1, 2)
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-12)


def test_gum_adapter_rejects_an_unknown_refit_method():
    with pytest.raises(ValueError, match="method must be 'nuts' or 'laplace'; got 'advi'"):
        gum_functions(lambda train: None, method="advi")

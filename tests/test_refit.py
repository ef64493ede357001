"""pmctx.compare's exact refits (pmctx.refit) against brute-force leave-one-out refits.

Tolerance: the issue's 2 standard errors of the brute-force elpd; where refits are exact
(conjugate posterior draws) the refitted units also match the closed form within 4 Monte
Carlo standard errors of ``log mean_s p(y_i | mu_s)`` over 4,000 exact draws
(:func:`mc_se`, in closed form).
"""

import warnings

import arviz as az
import numpy as np
import pytest
from scipy.stats import norm

from pmctx.compare import LooReliabilityWarning, compare
from pmctx.kfold import kfold
from pmctx.refit import Refitter, as_refitter, crp_response_refitter, refit_loos

PRIOR_SD = 1.0


def posterior_params(y):
    precision = 1 / PRIOR_SD**2 + y.size
    return y.sum() / precision, precision**-0.5


def fit(train, draws=4000):
    mean, sd = posterior_params(train["y"])
    rng = np.random.default_rng(train["y"].size)
    return az.from_dict({"posterior": {"mu": rng.normal(mean, sd, size=(1, draws))}})


def log_predictive(idata, test):
    return norm.logpdf(test["y"], idata.posterior["mu"].values[..., None], 1.0)


def full_fit(y, centre=None, draws=500):
    if centre is None:
        idata = fit({"y": y}, draws)
    else:
        mu = np.random.default_rng(0).normal(centre, 0.3, (1, draws))
        idata = az.from_dict({"posterior": {"mu": mu}})
    idata["log_likelihood"] = az.dict_to_dataset({"y": log_predictive(idata, {"y": y})})
    return idata


def mc_se(y, draws=4000):
    """Monte Carlo sd of log mean_s N(y_i | mu_s, 1), mu_s from the leave-i-out posterior.

    With w = N(y | mu, 1) and mu ~ N(m, s^2): E[w] = N(y | m, 1 + s^2) and
    E[w^2] = N(y | m, 1/2 + s^2) / (2 sqrt(pi)); the delta method gives
    sd(log mean w) = sqrt((E[w^2] / E[w]^2 - 1) / draws).
    """
    out = []
    for i in range(y.size):
        mean, sd = posterior_params(np.delete(y, i))
        second = norm.pdf(y[i], mean, np.sqrt(0.5 + sd**2)) / (2 * np.sqrt(np.pi))
        ratio = second / norm.pdf(y[i], mean, np.sqrt(1 + sd**2)) ** 2
        out.append(np.sqrt((ratio - 1) / draws))
    return np.array(out)


def exact_loo(y):
    out = []
    for i in range(y.size):
        mean, sd = posterior_params(np.delete(y, i))
        out.append(norm.logpdf(y[i], mean, np.hypot(sd, 1.0)))
    return np.array(out)


@pytest.fixture(scope="module")
def y():
    y = np.random.default_rng(3).normal(size=12)
    y[0], y[1] = 9.0, -7.0  # influential points: PSIS k > 0.7 on the first
    return y


def refitter(y):
    return Refitter(fit, log_predictive, {"y": y}, method="conjugate")


def quiet_compare(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return compare(*args, **kwargs)


def test_flagged_units_are_refitted_one_by_one(y):
    table = quiet_compare({"m": full_fit(y), "prior": full_fit(y, 0.0)}, refit={"m": refitter(y)})
    record = table.attrs["refits"]["m"]
    psis = table.attrs["psis"]["m"]
    flagged = np.flatnonzero(np.asarray(psis.pareto_k) > 0.7)
    assert flagged.size >= 1 and record.refitted.tolist() == flagged.tolist()
    assert set(record.how[flagged]) == {"loo"} and record.n_fits == flagged.size
    got = np.asarray(table.attrs["loo"]["m"].elpd_i)
    assert np.all(np.abs(got[flagged] - exact_loo(y)[flagged]) < 4 * mc_se(y)[flagged])
    exact = exact_loo(y)
    se = np.sqrt(y.size * np.var(exact))
    assert abs(table.loc["m", "elpd"] - exact.sum()) < 2 * se
    assert table.loc["m", "reliable"] and table.loc["m", "n_refit"] == flagged.size
    assert table.loc["m", "refit"] == f"loo {flagged.size} fits (conjugate)"
    assert table.loc["m", "elpd_psis"] == pytest.approx(float(psis.elpd))


def test_many_flagged_switch_to_paired_kfold(y):
    models = {"m": full_fit(y), "n": full_fit(y)}
    table = quiet_compare(models, refit={"m": refitter(y), "n": refitter(y)}, max_loo_refits=0,
                          k=y.size)  # fmt: skip
    exact = exact_loo(y)
    for name in ("m", "n"):  # k = n folds: exact leave-one-out for every unit
        record = table.attrs["refits"][name]
        assert (record.how == "kfold").all() and record.n_fits == y.size
        error = np.abs(np.asarray(table.attrs["loo"][name].elpd_i) - exact)
        assert np.all(error < 4 * mc_se(y))
    table = quiet_compare(models, refit={"m": refitter(y), "n": refitter(y)}, max_loo_refits=0,
                          k=4)  # fmt: skip
    folds_m = table.attrs["refits"]["m"].folds
    folds_n = table.attrs["refits"]["n"].folds
    assert all(np.array_equal(a, b) for a, b in zip(folds_m, folds_n, strict=True))
    assert abs(table.loc["m", "elpd"] - exact.sum()) < 2 * np.sqrt(y.size * np.var(exact))


def test_out_of_time_keeps_psis_and_warns(y):
    with pytest.warns(LooReliabilityWarning, match="not refitted"):
        table = compare({"m": full_fit(y), "p": full_fit(y, 0.0)},
                              refit={"m": refitter(y)}, time_budget=0)  # fmt: skip
    record = table.attrs["refits"]["m"]
    assert record.n_fits == 0 and "psis, out of time" in set(record.how)
    assert not table.loc["m", "reliable"] and table.loc["m", "refit"].endswith("out of time")


def test_refit_none_keeps_psis(y):
    with pytest.warns(LooReliabilityWarning, match="Pass refit="):
        table = compare({"m": full_fit(y), "p": full_fit(y, 0.0)}, refit=None)
    assert table.attrs["refits"] == {} and (table["n_refit"] == 0).all()


def test_other_scales_rank_the_refitted_values(y):
    table = quiet_compare({"m": full_fit(y), "p": full_fit(y, 0.0)}, refit={"m": refitter(y)},
                          scale="deviance")  # fmt: skip
    log = quiet_compare({"m": full_fit(y), "p": full_fit(y, 0.0)}, refit={"m": refitter(y)})
    assert table.loc["m", "elpd"] == pytest.approx(-2 * log.loc["m", "elpd"])


def test_bad_refit_arguments(y):
    models = {"m": full_fit(y), "p": full_fit(y, 0.0)}
    with pytest.raises(TypeError, match="refit must be 'auto', None or a mapping"):
        compare(models, refit="yes")
    with pytest.raises(TypeError, match="must be a pmctx.refit.Refitter"):
        compare(models, refit={"m": (fit, log_predictive)})
    with pytest.raises(ValueError, match="not in models"):
        compare(models, refit={"zz": refitter(y)})
    with pytest.raises(ValueError, match="refitter's data hold 5 units"):
        quiet_compare(models, refit={"m": refitter(y[:5])})
    with pytest.raises(ValueError, match="time_budget must be >= 0"):
        refit_loos({"m": az.loo(full_fit(y), pointwise=True)}, {"m": refitter(y)},
                   time_budget=-1)  # fmt: skip
    assert (
        as_refitter({"fit": fit, "log_predictive": log_predictive, "data": {"y": y}}).n_units()
        == 12
    )


def test_crp_response_refits_match_brute_force_leave_one_out():
    from scipy.special import expit

    rng = np.random.default_rng(0)
    V = np.clip(0.5 + 0.4 * np.sin(np.arange(16) / 2.0), 0.01, 0.99)
    responses = (rng.random(16) < expit(-0.5 + 4 * (V - 0.5))).astype(float)
    r = crp_response_refitter(responses, V, n_draws=1000)
    full = r.fit(r.data)
    full["log_likelihood"] = az.dict_to_dataset({"responses": r.log_predictive(full, r.data)[None]})
    coin = {"responses": np.full((1, 50, 16), np.log(0.5))}
    other = az.from_dict({"posterior": {"mu": np.zeros((1, 50))}, "log_likelihood": coin})
    table = quiet_compare({"crp": full, "coin": other}, refit={"crp": r}, threshold=0.3)
    brute = kfold(r.fit, r.log_predictive, r.data, k=16, split=r.split)
    assert table.loc["crp", "n_refit"] == table.loc["crp", "n_high_k"]
    refitted = table.attrs["refits"]["crp"].refitted
    np.testing.assert_allclose(
        np.asarray(table.attrs["loo"]["crp"].elpd_i)[refitted], np.asarray(brute.elpd_i)[refitted]
    )
    assert abs(table.loc["crp", "elpd"] - brute.elpd) < 2 * brute.se
    with pytest.raises(ValueError, match="every response observed"):
        crp_response_refitter(np.where(np.arange(16) == 3, np.nan, responses), V)


def test_gum_laplace_refits_match_brute_force_leave_one_out():
    from pmctx.gum import gum
    from pmctx.refit import gum_refitter

    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 3, 20))
    data = {"x": x, "y": rng.poisson(np.exp(1 + np.sin(2 * x)))}
    data["y"][[3, 15]] += 12  # outliers: influential points

    def build(train):
        return gum("y ~ f(x, lengthscale=0.5)", train, family="poisson")

    r = gum_refitter(build, data, fit_options={"draws": 500})
    full = build(data).laplace(draws=500, random_seed=0, posterior_predictive=False)
    flat = az.from_dict({"posterior": {"mu": np.zeros((1, 50))},
                        "log_likelihood": {"y": np.full((1, 50, 20), -5.0)}})  # fmt: skip
    table = quiet_compare({"gum": full, "flat": flat}, refit={"gum": r}, threshold=0.5)
    brute = kfold(r.fit, r.log_predictive, data, k=20)
    assert table.loc["gum", "n_refit"] == table.loc["gum", "n_high_k"] >= 1
    assert abs(table.loc["gum", "elpd"] - brute.elpd) < 2 * brute.se


def test_docstring_examples():
    from pmctx.testing import assert_docstring_examples

    assert_docstring_examples("pmctx.refit")


@pytest.mark.slow
def test_ibp_warm_started_refits_match_brute_force_leave_one_out():
    from pmctx.models.ibp import refit_functions, sample

    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(n_trials=10, random_seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = dict(draws=200, tune=200, chains=2, cores=1, random_seed=1, sigma_n=0.5,
                       progressbar=False, check_convergence=False)  # fmt: skip
        full = sample(data.F, data.X, K_max=5, **options)
        other = sample(data.F, data.X, K_max=2, **options)
        table = compare({"k5": full, "k2": other}, var_name="F", threshold=0.5, k=5)
        hook = as_refitter(refit_functions(full, var_name="F"))
        brute = kfold(hook.fit, hook.log_predictive, hook.data, k=10)
    assert hook.method.startswith("mcmc, warm start")
    assert abs(table.loc["k5", "elpd"] - brute.elpd) < 2 * brute.se


@pytest.mark.slow
def test_gum_section_3_1_is_ranked_first_by_its_exact_refits():
    # Seed 002 section 3.1, N = 200: PSIS flags about 30% of the GUM's rows and ranks the GLM
    # first; compare's exact 10-fold Laplace refits rank the GUM first (by about 13 nats).
    from pmctx.gum import gum
    from pmctx.gum.glm import glm
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
    from pmctx.refit import gum_refitter

    data = seed_section_3_1(200, random_seed=0)
    builds = {
        "gum": lambda d: gum(section_3_1_formula(max_points=24), d, family="poisson"),
        "glm": lambda d: glm("y", ["x1", "x2", "x3"], d, family="poisson"),
    }
    fits = {name: build(data).laplace(draws=2000, random_seed=0, posterior_predictive=False)
            for name, build in builds.items()}  # fmt: skip
    refitters = {name: gum_refitter(build, data, fit_options={"draws": 2000})
                 for name, build in builds.items()}  # fmt: skip
    table = quiet_compare(fits, refit=refitters)
    assert table.loc["gum", "k_share"] > 0.1 and table.loc["gum", "elpd_psis"] < table.loc[
        "glm", "elpd_psis"]  # fmt: skip
    assert list(table.index) == ["gum", "glm"] and table["reliable"].all()
    assert (table["refit"] == "kfold 10 fits (laplace)").all()

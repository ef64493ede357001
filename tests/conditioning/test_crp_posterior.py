"""The PyMC posterior of one subject: the model, its Op and chain-specific random numbers.

The sampler's correctness is tested against an exact posterior in test_crp_pmmh.py; coverage
of the posterior intervals over simulated subjects is measured by
``recovery.posterior_coverage`` (a study of minutes, see the issue-13 report), not here.
"""

import numpy as np
import pytest

from pmctx.conditioning.fitting import SubjectLikelihood, recovery_design, simulate_subject
from pmctx.conditioning.posterior import build_subject_model, sample_subject

DESIGN = recovery_design(30)
TRUTH = {"alpha": 1.0, "a": 1.0, "gain": 1.0, "sd": 0.1}


@pytest.fixture(scope="module")
def data():
    return simulate_subject(DESIGN, TRUTH, variant="lcm", n_particles=20, rng=0)


def test_model_logp_is_prior_plus_filter_likelihood(data):
    """The model's log density equals the priors plus the CR likelihood given the filter's V."""
    y = data["responses"].copy()
    y[3] = np.nan
    model = build_subject_model(y, DESIGN, variant="lcm", n_particles=20, rng=5)
    lik = model.filter_op.likelihood
    point = {"alpha": 0.8, "a": 1.2, "gain": 1.1, "level": 0.6, "sd": 0.12}
    V = lik.V(point)
    seen = ~np.isnan(y)
    mu = point["level"] + point["gain"] * (V[seen] - 0.5)
    s = np.std(y[seen])
    from scipy import stats

    expected = (
        stats.norm.logpdf(y[seen], mu, point["sd"]).sum()
        + stats.uniform.logpdf(point["alpha"], 0, 10)
        + stats.uniform.logpdf(point["a"], 0.5, 1.0)
        + stats.norm.logpdf(point["gain"], 0, 5 * s)
        + stats.norm.logpdf(point["level"], np.mean(y[seen]), 2 * s)
        + stats.halfnorm.logpdf(point["sd"], scale=2 * s)
    )
    logp = model.compile_logp(jacobian=False)
    # Values on the sampler's (transformed) scale: logit of the box position, log of sd.
    unconstrained = {
        "alpha_interval__": np.log(0.8 / (10 - 0.8)),
        "a_interval__": np.log(0.7 / 0.3),
        "gain": 1.1,
        "level": 0.6,
        "sd_log__": np.log(0.12),
    }
    assert set(unconstrained) == set(model.initial_point())
    # Round-off of the transforms only (a wrong term would be off by O(1)).
    assert logp(unconstrained) == pytest.approx(expected, abs=1e-6)
    assert model["cr"].eval().shape == (seen.sum(),)


def test_sample_subject_runs_chains_with_their_own_uniforms(data):
    idata = sample_subject(
        data["responses"],
        DESIGN,
        variant="lcm",
        draws=30,
        tune=30,
        chains=2,
        n_particles=20,
        random_seed=1,
        check_convergence=False,  # short runs here check plumbing, not convergence
    )
    assert idata.posterior.sizes["chain"] == 2
    assert set(idata.log_likelihood) == {"cr"}
    assert idata.log_likelihood["cr"].shape[-1] == DESIGN.n_trials
    assert idata.posterior.attrs["particle_loglik_sd"] > 0
    assert "intercept" in idata.posterior
    # Chain-specific CRN: the same parameters give different V in the two chains' filters
    # (checked through the likelihoods they were given).
    a = SubjectLikelihood(data["responses"], DESIGN, n_particles=20, rng=1)
    b = SubjectLikelihood(data["responses"], DESIGN, n_particles=20, rng=2)
    assert a({"alpha": 1.0}) != b({"alpha": 1.0})


@pytest.mark.slow
def test_chains_in_forked_processes_give_the_sequential_draws(data):
    """cores=2 forks the chains after the steps are compiled: every draw, sampler stat and
    the noise attribute equal those of the sequential run with the same seed."""
    kwargs = dict(variant="lcm", draws=15, tune=15, chains=2, n_particles=10, random_seed=4)
    kwargs["check_convergence"] = False
    seq = sample_subject(data["responses"], DESIGN, **kwargs)
    par = sample_subject(data["responses"], DESIGN, cores=2, **kwargs)
    for name in seq.posterior.data_vars:
        np.testing.assert_array_equal(par.posterior[name], seq.posterior[name], err_msg=name)
    np.testing.assert_array_equal(par.sample_stats["loglik"], seq.sample_stats["loglik"])
    assert par.posterior.attrs["particle_loglik_sd"] == seq.posterior.attrs["particle_loglik_sd"]


def test_binary_and_ordinal_models_build(data):
    y = (data["V"] > 0.5).astype(float)
    m = build_subject_model(y, DESIGN, variant="lcm_one_cause", response="logistic", n_particles=5)
    assert {v.name for v in m.free_RVs} == {"a", "bias", "slope"}
    r = np.clip(np.round(data["V"] * 3), 0, 3)
    m = build_subject_model(
        r,
        DESIGN,
        variant="lcm",
        response="ordinal",
        response_options={"n_levels": 4},
        n_particles=5,
    )
    assert np.isfinite(m.compile_logp()(m.initial_point()))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("response", "options"),
    [("linear_gaussian", {}), ("logistic", {}), ("ordinal", {"n_levels": 4})],
)
def test_pmmh_log_likelihood_is_pymc_logp_at_the_recorded_V(data, response, options):
    """The pointwise log likelihood PMMH records (from each draw's V) is PyMC's logp there."""
    import pymc as pm

    y = {
        "linear_gaussian": data["responses"],
        "logistic": (data["V"] > 0.6).astype(float),
        "ordinal": np.clip(np.round(data["V"] * 3), 0, 3),
    }[response]
    idata = sample_subject(
        y,
        DESIGN,
        variant="lcm",
        draws=5,
        tune=5,
        chains=1,
        n_particles=5,
        random_seed=3,
        check_convergence=False,
        response=response,
        response_options=options or None,
    )
    post = idata.posterior.isel(chain=0)
    for d in range(5):
        V = post["V"].values[d]

        def par(name, d=d):
            return post[name].values[d]

        if response == "linear_gaussian":
            dist = pm.Normal.dist(par("intercept") + par("gain") * V, par("sd"))
        elif response == "logistic":
            dist = pm.Bernoulli.dist(logit_p=par("bias") + par("slope") * (V - 0.5))
        else:
            dist = pm.OrderedLogistic.dist(eta=par("slope") * V, cutpoints=par("cutpoints"))
        expected = pm.logp(dist, y.astype(int) if response != "linear_gaussian" else y).eval()
        np.testing.assert_allclose(idata.log_likelihood["cr"].values[0, d], expected, rtol=1e-8)


def test_pmmh_is_the_default_and_records_noise(data):
    idata = sample_subject(
        data["responses"],
        DESIGN,
        variant="lcm",
        draws=20,
        tune=20,
        chains=1,
        n_particles=10,
        random_seed=4,
        check_convergence=False,
    )
    stats = idata.sample_stats
    assert {"accept", "loglik", "loglik_sd"} <= set(stats)
    assert np.isnan(stats["loglik_sd"].values).sum() == 0  # measured when tuning ended
    assert idata.log_likelihood["cr"].shape == (1, 20, DESIGN.n_trials)


def test_fixed_priors_and_their_validation(data):
    priors = {"gain": ("uniform", 0.5, 1.5), "sd": ("halfnormal", 0.3)}
    m = build_subject_model(data["responses"], DESIGN, variant="lcm", priors=priors)
    assert m["gain"].owner.op.name == "uniform"
    with pytest.raises(ValueError, match="priors\\['sd'\\]"):
        build_subject_model(data["responses"], DESIGN, variant="lcm", priors={"sd": ("gamma", 1)})


def test_draw_from_prior_stays_in_the_prior_boxes():
    from pmctx.conditioning.recovery import COVERAGE_PRIORS, draw_from_prior

    for seed in range(20):
        t = draw_from_prior("lcm_sticky", rng=seed)
        assert 0 <= t["alpha"] <= 10 and 0.5 <= t["a"] <= 1.5 and 0 <= t["stickiness"] <= 5
        for name, (_, lo, hi) in COVERAGE_PRIORS.items():
            assert lo <= t[name] <= hi
        assert t["intercept"] == pytest.approx(t["level"] - t["gain"] / 2)
    with pytest.raises(ValueError, match="uniform"):
        draw_from_prior("lcm", priors={"gain": ("normal", 0, 1)}, rng=0)

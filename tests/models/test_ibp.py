"""The IBP visuo-motor pm.Model: log density, bad input, recovery, LOO, demo and fit."""

import arviz as az
import numpy as np
import pytest
from pmctx.models import ibp
from scipy import stats

import pmctx
from pmctx.ibp.conditionals import force_loglik, noisy_or_log_p, noisy_or_loglik
from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.diagnostics import align_features, recovery_report

HYPER = dict(alpha=1.3, sigma_n=0.6, sigma_A=1.1, phi=0.4, lam=0.8, eps=0.1)


def deterministic(model, name):
    """A model deterministic as a function of a point of value variables."""
    out = model.replace_rvs_by_values([model[name]])[0]
    return model.compile_fn(out, inputs=model.value_vars, on_unused_input="ignore")


def test_model_logp_matches_the_generative_density():
    rng = np.random.default_rng(0)
    n, k, d, t = 4, 3, 2, 3
    F, X = rng.normal(size=(n, d)), rng.integers(0, 2, size=(n, t))
    model = ibp.build_model(F, X, K_max=k, **HYPER)
    assert dict(model.dim_lengths.items()).keys() >= {"trial", "feature", "force_dim", "pixel"}
    logp = model.compile_logp(jacobian=False)
    for _ in range(3):
        pi = rng.uniform(0.05, 0.95, size=k)
        Z, Y = rng.integers(0, 2, size=(n, k)), rng.integers(0, 2, size=(k, t))
        A = rng.normal(size=(k, d))
        point = {"pi_logodds__": np.log(pi / (1 - pi)), "Z": Z, "A": A, "Y": Y}
        want = (
            stats.beta(HYPER["alpha"] / k, 1).logpdf(pi).sum()
            + stats.bernoulli(np.broadcast_to(pi, Z.shape)).logpmf(Z).sum()
            + stats.norm(0, HYPER["sigma_A"]).logpdf(A).sum()
            + stats.bernoulli(HYPER["phi"]).logpmf(Y).sum()
            + force_loglik(F, Z, A, HYPER["sigma_n"]).sum()
            + noisy_or_loglik(X, Z, Y, HYPER["lam"], HYPER["eps"]).sum()
        )
        assert logp(point) == pytest.approx(want, rel=1e-9)
        loglik = deterministic(model, "loglik")(point)
        want_ll = force_loglik(F, Z, A, HYPER["sigma_n"]).sum()
        want_ll += noisy_or_loglik(X, Z, Y, HYPER["lam"], HYPER["eps"]).sum()
        assert float(loglik) == pytest.approx(want_ll, rel=1e-9)


def test_noisy_or_in_the_model_does_not_underflow():
    X = np.ones((2, 1), dtype=int)
    model = ibp.build_model(X=X, K_max=400, lam=0.99, eps=1e-3, alpha=1.0, phi=0.5)
    point = {"pi_logodds__": np.zeros(400), "Z": np.ones((2, 400), int), "Y": np.ones((400, 1))}
    # P(x = 1) = 1 - 0.01^400 * 0.999: log P = 0 to double precision, not log(0) or NaN.
    value = deterministic(model, "loglik")(point)
    assert np.isfinite(value) and value == pytest.approx(0.0, abs=1e-12)


def test_one_likelihood_may_be_absent():
    rng = np.random.default_rng(1)
    forces = ibp.build_model(F=rng.normal(size=(5, 2)), K_max=2)
    visuals = ibp.build_model(X=rng.integers(0, 2, size=(5, 4)), K_max=2)
    assert "A" in forces.named_vars and "Y" not in forces.named_vars
    assert "Y" in visuals.named_vars and "A" not in visuals.named_vars


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(F=np.ones((4, 2)), X=np.array([[0, 2]] * 4)), "X"),
        (dict(F=np.array([[np.nan, 1.0]] * 4)), "F"),
        (dict(F=np.ones((4, 2)), X=np.ones((5, 3))), "same|length|F|X"),
        (dict(F=np.ones((4, 2)), K_max=0), "K_max"),
        (dict(F=np.ones((4, 2)), lam=1.5), "lam"),
        (dict(F=np.ones((4, 2)), eps=0.0), "eps"),
        (dict(F=np.ones((4, 2)), sigma_n=-1.0), "sigma_n"),
        (dict(F=np.ones((4, 2)), sigma_A=0.0), "sigma_A"),
        (dict(F=np.ones((4, 2)), alpha=-2.0), "alpha"),
        (dict(F=np.ones(4)), "F"),
        (dict(), "neither"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ibp.build_model(**kwargs)


def test_unknown_hyperparameter_is_rejected():
    with pytest.raises(TypeError, match="Unknown hyperparameters"):
        ibp.build_model(F=np.ones((3, 2)), sigma=1.0)


@pytest.fixture(scope="module")
def recovery():
    data = visuomotor_data(60, random_seed=0)
    idata = ibp.sample(
        data.F, data.X, K_max=8, draws=300, tune=400, chains=2, cores=1, random_seed=3,
        sigma_n=0.3, check_convergence=False,  # recovery here; convergence in test_convergence
    )  # fmt: skip
    return data, idata


def test_recovery_of_features_and_reconstructions(recovery):
    data, idata = recovery
    log_q, _ = noisy_or_log_p(data.Z @ data.Y, 0.9, 0.05)
    report = recovery_report(idata, data.Z, data.Z @ data.A, -np.expm1(log_q))
    assert report["k_mode"] == 4
    assert report["p_k_true"] > 0.5
    assert report["F_rmse"] < 0.15  # noise sd is 0.3; ZA is recovered well within it
    assert report["X_prob_mae"] < 0.05
    aligned = align_features(idata, reference=data.Z)
    np.testing.assert_allclose(aligned["A"].mean(axis=(0, 1)), data.A, atol=0.3)
    assert np.mean(np.abs(aligned["Y"].mean(axis=(0, 1)) - data.Y)) < 0.05


def test_label_invariant_diagnostics_and_loo(recovery):
    _, idata = recovery
    summary = pmctx.summary(idata, var_names=["n_active", "loglik"])
    assert list(summary.index) == ["n_active", "loglik"]
    assert set(idata.log_likelihood.data_vars) == {"joint"}  # az.loo(idata) needs no var_name
    assert set(idata.log_likelihood_parts.data_vars) == {"F", "X"}
    assert set(idata.conditional_log_likelihood.data_vars) == {"F", "X"}
    loo = az.loo(idata, pointwise=True)  # no var_name: the one LOO should use
    assert np.isfinite(loo.elpd)
    assert float((loo.pareto_k > 0.7).mean()) <= 0.05  # integrated likelihood: PSIS works


def test_demo_and_fit_write_outputs(tmp_path):
    rng = np.random.default_rng(0)
    data = visuomotor_data(12, random_seed=1)
    path = tmp_path / "data.npz"
    # K_max=10: with learned hyperparameters 12 trials can ask for more than 5 features.
    np.savez(path, F=data.F, X=data.X, K_max=10, sigma_n=0.3)
    written = ibp.fit(path, draws=20, tune=10, chains=1, random_seed=0, out_dir=tmp_path / "out",
                      check_convergence=False)  # fmt: skip
    names = {p.name for p in written}
    assert {"ibp_posterior.nc", "ibp_summary.csv", "ibp_diagnostics.csv", "ibp_trace.png",
            "ibp_bases.png"} <= names  # fmt: skip
    assert all(p.exists() for p in written)
    bad = tmp_path / "bad.npz"
    np.savez(bad, forces=rng.normal(size=(3, 2)))
    with pytest.raises(ValueError, match="'F'"):
        ibp.fit(bad, draws=5, tune=5, chains=1, random_seed=0, out_dir=tmp_path)


def test_hyperparameters_with_priors_are_learned_next_to_the_ibp_step():
    data = visuomotor_data(60, random_seed=0)
    idata = ibp.sample(
        data.F, data.X, K_max=8, draws=200, tune=200, chains=1, random_seed=0,
        sigma_n="prior", alpha="prior", check_convergence=False,
    )  # fmt: skip
    # Conjugate / slice updates (IBPAlphaGibbs, IBPHyperGibbs), not NUTS (issue 10).
    assert "n_active" in idata.sample_stats and "diverging" not in idata.sample_stats
    sigma_n = idata.posterior["sigma_n"].values
    # 60 trials x 2 force dims pin the noise scale (truth 0.3) to within about 10 %.
    assert 0.24 < sigma_n.mean() < 0.38
    assert np.all(np.isfinite(idata.posterior["alpha"].values))


def test_sample_warns_before_storing_draws_too_large_for_memory(monkeypatch):
    from pmctx.models import ibp

    from pmctx import PmctxWarning
    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(n_trials=6, random_seed=0)
    monkeypatch.setenv("PMCTX_MEMORY_BYTES", "1000")  # 1 kB available: any fit is too big

    def no_sampling(*args, **kwargs):
        raise RuntimeError("sampling started")

    monkeypatch.setattr(ibp, "run_sampler", no_sampling)  # the warning comes before any work
    with (
        pytest.warns(PmctxWarning, match=r"need about .* kB .*reconstructions='moments'"),
        pytest.raises(RuntimeError, match="sampling started"),
    ):
        ibp.sample(data.F, data.X, draws=5, tune=2, chains=1, check_convergence=False)


@pytest.mark.parametrize(
    ("F", "X", "match"),
    [
        (np.empty((0, 2)), np.empty((0, 16)), r"F must have at least 1 trial .*shape \(0, 2\)"),
        (None, np.empty((0, 16)), r"X must have at least 1 trial .*got no rows"),
        (np.empty((5, 0)), None, r"F must have .*dimension 1 is empty, e\.g\. no columns"),
        ([["a", "b"]], None, "F must hold real numbers, got dtype <U1 with text such as 'a'"),
    ],
)
def test_empty_or_text_data_is_rejected_before_sampling(monkeypatch, F, X, match):
    def no_sampling(*args, **kwargs):
        raise AssertionError("sampling started on bad data")

    monkeypatch.setattr(ibp, "run_sampler", no_sampling)
    with pytest.raises((ValueError, TypeError), match=match):
        ibp.sample(F, X)

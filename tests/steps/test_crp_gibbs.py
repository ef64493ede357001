"""Collapsed Gibbs step for CRP-mixture assignments: conditional, stationary law, PyMC."""

import itertools

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from pmctx.models.crp_conditioning import build_model, log_marginal_assignments
from scipy.special import logsumexp

from pmctx.conditioning.design import as_feature_matrix
from pmctx.steps.crp_gibbs import CRPCollapsedGibbs, collapsed_conditional, collapsed_gibbs_sweep
from pmctx.testing import (
    assert_chains_match_exact,
    assert_geweke,
    assert_matches_exact,
    geweke_test,
    state_indices,
)

ALPHA, K, ETA = 1.5, 3, 1.0
# Five trials, three features, one missing US (a probe).
RAW = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1], [np.nan, 1, 0]])
F, _ = as_feature_matrix(RAW)
STATES = np.array(list(itertools.product(range(K), repeat=len(F))))


def _exact_state_probs():
    logp = np.array(
        [
            log_marginal_assignments(z, RAW, alpha=ALPHA, max_causes=K, concentration=ETA)
            for z in STATES
        ]
    )
    return np.exp(logp - logsumexp(logp))


def _canonical(z):
    """Relabel causes by order of first appearance (a label-free partition code)."""
    z = np.asarray(z)
    out = np.empty_like(z)
    for row, zr in zip(out, z):
        seen = {}
        for j, k in enumerate(zr):
            row[j] = seen.setdefault(int(k), len(seen))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conditional_matches_brute_force(seed):
    z = np.random.default_rng(seed).integers(0, K, size=len(F))
    for t in range(len(F)):
        logp = []
        for k in range(K):
            zk = z.copy()
            zk[t] = k
            logp.append(log_marginal_assignments(zk, RAW, alpha=ALPHA, max_causes=K))
        brute = np.exp(np.array(logp) - logsumexp(logp))
        np.testing.assert_allclose(
            collapsed_conditional(z, t, F, K, ALPHA / K, ETA), brute, rtol=1e-10
        )


def test_raw_sweep_leaves_exact_posterior_invariant():
    rng = np.random.default_rng(5)
    z = np.zeros(len(F), dtype=np.int64)
    draws = np.empty((20_000, len(F)), dtype=np.int64)
    for i in range(len(draws)):
        z = collapsed_gibbs_sweep(z, F, K, ALPHA / K, ETA, rng.random(len(F)))
        draws[i] = z
    idx = state_indices(draws, STATES)
    assert_matches_exact(idx, _exact_state_probs(), tv_tol=0.05, ess=len(draws) / 4)


@pytest.fixture(scope="module")
def model():
    return build_model(RAW, alpha=ALPHA, max_causes=K, concentration=ETA)


@pytest.fixture(scope="module")
def gibbs_idata(model):
    with model:
        step = CRPCollapsedGibbs(
            [model["z"], model["weights"], model["theta"]], features=F, alpha=ALPHA
        )
        return pm.sample(
            draws=10_000,
            tune=200,
            chains=2,
            cores=1,
            step=[step],
            random_seed=11,
            progressbar=False,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
        )


def test_pm_sample_with_step_matches_enumeration(gibbs_idata):
    z = gibbs_idata.posterior["z"].values.reshape(-1, len(F))
    assert_matches_exact(
        state_indices(z, STATES), _exact_state_probs(), tv_tol=0.05, ess=len(z) / 4
    )
    n_occ = gibbs_idata.sample_stats["n_occupied"].values.ravel()
    exact_n = _exact_state_probs() @ np.array([len(set(s)) for s in STATES])
    assert n_occ.mean() == pytest.approx(exact_n, abs=0.05)
    assert "features" in gibbs_idata.log_likelihood


def test_conjugate_refresh_of_weights_and_theta(gibbs_idata):
    """E[theta[z_t, i] | F] and E[weights[z_t] | F] are label-free and exactly computable."""
    probs = _exact_state_probs()
    exact_theta = np.zeros(F.shape)
    exact_w = np.zeros(len(F))
    for p, s in zip(probs, STATES):
        n_k = np.bincount(s, minlength=K)
        for t in range(len(F)):
            members = s == s[t]
            ones = (F[members] == 1).sum(axis=0)
            seen = (F[members] >= 0).sum(axis=0)
            exact_theta[t] += p * (ones + ETA) / (seen + 2 * ETA)
            exact_w[t] += p * (n_k[s[t]] + ALPHA / K) / (len(F) + ALPHA)
    post = gibbs_idata.posterior
    z = post["z"].values.reshape(-1, len(F))
    theta = post["theta"].values.reshape(-1, K, F.shape[1])
    w = post["weights"].values.reshape(-1, K)
    rows = np.arange(len(z))[:, None]
    np.testing.assert_allclose(theta[rows, z].mean(axis=0), exact_theta, atol=0.03)
    np.testing.assert_allclose(w[rows, z].mean(axis=0), exact_w, atol=0.03)


@pytest.mark.slow  # NUTS compile + CategoricalGibbsMetropolis
def test_agrees_with_categorical_gibbs_metropolis(model):
    """PyMC's own sampler (CategoricalGibbsMetropolis on z, NUTS on the rest) on the same
    model reaches the same partition distribution (compared label-free).

    The chain's ESS is measured (not assumed) and the total-variation tolerance follows from
    it, so the test passes or fails on the sampler, not on which PyTensor backend drew the
    numbers; the draws are enough that the tolerance is tighter than 0.12.
    """
    with model:
        idata = pm.sample(
            draws=2500,
            tune=300,
            chains=2,
            cores=1,
            step=[pm.CategoricalGibbsMetropolis([model["z"]])],
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
        )
    z = idata.posterior["z"].values
    parts = np.unique(_canonical(STATES), axis=0)
    lookup = state_indices(_canonical(STATES), parts)
    exact = np.bincount(lookup, weights=_exact_state_probs(), minlength=len(parts))
    codes = state_indices(_canonical(z.reshape(-1, len(F))), parts).reshape(z.shape[:2])
    assert_chains_match_exact(codes, exact, max_tv_tol=0.12)


def test_step_pickles_and_rejects_bad_input(model):
    with model:
        step = CRPCollapsedGibbs(
            [model["z"], model["weights"], model["theta"]], features=F, alpha=ALPHA, rng=0
        )
        clone = cloudpickle.loads(cloudpickle.dumps(step))
        point, stats = clone.step(model.initial_point())
        assert set(point) == set(model.initial_point()) and 1 <= stats[0]["n_occupied"] <= K
        with pytest.raises(ValueError, match=r"\[z, weights, theta\]"):
            CRPCollapsedGibbs([model["z"]], features=F, alpha=ALPHA)
        with pytest.raises(ValueError, match="n_trials"):
            CRPCollapsedGibbs(
                [model["z"], model["weights"], model["theta"]], features=F[:3], alpha=ALPHA
            )
        with pytest.raises(ValueError, match="alpha"):
            CRPCollapsedGibbs([model["z"], model["weights"], model["theta"]], features=F, alpha=-1)


def test_geweke_joint_distribution():
    """Geweke: alternating the step with fresh data leaves p(z, weights, theta, F) invariant."""
    T, D, K_g, alpha_g = 6, 2, 3, 2.0
    geweke_model = build_model(np.zeros((T, D)), alpha=alpha_g, max_causes=K_g)
    with geweke_model:
        step = CRPCollapsedGibbs(
            [geweke_model["z"], geweke_model["weights"], geweke_model["theta"]],
            features=np.zeros((T, D), dtype=np.int64),
            alpha=alpha_g,
            rng=0,
        )
    start = geweke_model.initial_point()

    def sample_prior(rng):
        w = rng.dirichlet(np.full(K_g, alpha_g / K_g))
        w = np.maximum(w, 1e-300) / np.maximum(w, 1e-300).sum()
        return {"z": rng.choice(K_g, size=T, p=w), "w": w, "theta": rng.beta(1, 1, (K_g, D))}

    def sample_data(params, rng):
        return (rng.random((T, D)) < params["theta"][params["z"]]).astype(np.int64)

    def transition(params, data, rng):
        step.features = data
        step.rng = rng
        point = dict(start)
        point["z"] = params["z"]
        new, _ = step.step(point)
        x = np.append(new["weights_simplex__"], -new["weights_simplex__"].sum())
        w = np.exp(x - x.max())
        theta = 1.0 / (1.0 + np.exp(-new["theta_logodds__"]))
        return {"z": new["z"], "w": w / w.sum(), "theta": theta}

    rows = np.arange(T)
    tests = {
        "n_occupied": lambda p, f: len(np.unique(p["z"])),
        "theta_own": lambda p, f: p["theta"][p["z"], 0].mean(),
        "theta_fit": lambda p, f: (p["theta"][p["z"]] * f).mean(),
        "w_own": lambda p, f: p["w"][p["z"]].mean(),
        "w_max": lambda p, f: p["w"].max(),
        "same_01": lambda p, f: float(p["z"][0] == p["z"][1]),
        "f_agree": lambda p, f: float((f[rows, 0] == f[rows, 1]).mean()),
    }
    result = geweke_test(
        sample_prior,
        sample_data,
        transition,
        tests,
        n_marginal=20_000,
        n_successive=20_000,
        rng=1,
    )
    assert_geweke(result, z_threshold=4.0)

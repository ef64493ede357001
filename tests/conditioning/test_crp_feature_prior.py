"""``feature_prior="lcm"``: the authors' LCM code's feature likelihood, against a direct
NumPy transcription of its update (``LCM_infer.m``: a feature's likelihood in cause k is
``(count of the observed value + a) / (N_k + a + b)`` for a present *and* an absent value).
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.conditioning import particle_filter
from pmctx.conditioning.fitting import fit_subject
from pmctx.conditioning.likelihood import SubjectLikelihood
from pmctx.conditioning.particle_filter import common_uniforms


def _feature_lik(counts, value, a, b, rule):
    """The LCM_infer.m score of one observed binary value given (absent, present) counts."""
    pseudo = a if (value == 1 or rule == "lcm") else b
    return (counts[int(value)] + pseudo) / (counts.sum() + a + b)


def _reference_filter(F, alpha, a, b, rule, uniforms=None, local_map=False):
    """Loop-by-loop transcription: optimal proposal, resampling with the given uniforms."""
    T, D = F.shape
    M = 1 if local_map else uniforms[0].shape[1]
    particles = [{"counts": [], "n": []} for _ in range(M)]
    V = np.empty(T)
    for t in range(T):
        logpost, logw, v = [], [], []
        for p in particles:
            K = len(p["n"])
            prior = np.array([*p["n"], alpha if t > 0 else 1.0], dtype=float)
            lp = np.log(prior / prior.sum())
            new = np.zeros((D, 2))
            counts = [*p["counts"], new]
            lx = np.array(
                [
                    sum(
                        np.log(_feature_lik(counts[k][i], F[t, i], a, b, rule))
                        for i in range(1, D)
                        if not np.isnan(F[t, i])
                    )
                    for k in range(K + 1)
                ]
            )
            pus = np.array([_feature_lik(c[0], 1, a, b, rule) for c in counts])
            post_x = lp + lx
            v.append(np.exp(post_x - logsumexp(post_x)) @ pus)
            full = post_x.copy()
            if not np.isnan(F[t, 0]):
                full += np.log([_feature_lik(c[0], F[t, 0], a, b, rule) for c in counts])
            logpost.append(full)
            logw.append(logsumexp(full))
        V[t] = np.mean(v)
        logw = np.array(logw)
        weights = np.exp(logw - logsumexp(logw))
        cw = np.cumsum(weights)
        cw[-1] = np.inf
        new_particles = []
        for j in range(M):
            if local_map:
                anc, k_new = j, int(np.argmax(logpost[j]))
            else:
                anc = int(np.searchsorted(cw, uniforms[0][t, j] * weights.sum(), side="right"))
                probs = np.exp(logpost[anc] - logw[anc])
                run, k_new = np.cumsum(probs), len(probs) - 1
                below = np.nonzero(uniforms[1][t, j] < run)[0]
                k_new = int(below[0]) if below.size else k_new
            old = particles[anc]
            counts = [c.copy() for c in old["counts"]] + [np.zeros((D, 2))]
            n = [*old["n"], 0]
            n[k_new] += 1
            for i in range(D):
                if not np.isnan(F[t, i]):
                    counts[k_new][i, int(F[t, i])] += 1
            keep = len(old["n"]) + (k_new == len(old["n"]))
            new_particles.append({"counts": counts[:keep], "n": n[:keep]})
        particles = new_particles
    return V


def _design(seed, T=14, D=4):
    rng = np.random.default_rng(seed)
    F = (rng.random((T, D)) < rng.uniform(0.2, 0.8, size=D)).astype(float)
    F[rng.random(T) < 0.15, 0] = np.nan  # probe trials: the US unknown
    return F


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("a", "b"), [(0.7, 1.0), (1.4, 0.6)])
def test_lcm_local_map_equals_the_transcription(seed, a, b):
    F = _design(seed)
    got = particle_filter(F, alpha=0.8, a=a, b=b, method="local_map", feature_prior="lcm")
    want = _reference_filter(F, 0.8, a, b, "lcm", local_map=True)
    np.testing.assert_allclose(got.V, want, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("rule", ["lcm", "beta"])
def test_particle_filter_equals_the_transcription_with_the_same_uniforms(seed, rule):
    F = _design(seed, T=10)
    uniforms = common_uniforms(10, 7, random_seed=seed)
    got = particle_filter(F, alpha=0.5, a=0.7, b=1.0, uniforms=uniforms, feature_prior=rule)
    want = _reference_filter(F, 0.5, 0.7, 1.0, rule, uniforms=uniforms)
    np.testing.assert_allclose(got.V, want, rtol=1e-10)


def test_default_is_the_normalised_beta_and_a_equal_b_makes_them_agree():
    F = _design(5)
    uniforms = common_uniforms(F.shape[0], 20, random_seed=1)
    run = {
        (rule, a): particle_filter(F, alpha=0.5, a=a, b=1.0, uniforms=uniforms, feature_prior=rule)
        for rule in ("beta", "lcm")
        for a in (0.6, 1.0)
    }
    default = particle_filter(F, alpha=0.5, a=0.6, b=1.0, uniforms=uniforms)
    np.testing.assert_array_equal(default.V, run["beta", 0.6].V)
    assert not np.allclose(run["beta", 0.6].V, run["lcm", 0.6].V)  # a != b: they differ
    np.testing.assert_array_equal(run["beta", 1.0].V, run["lcm", 1.0].V)


def test_subject_fits_use_the_lcm_convention_by_default():
    F = _design(6, T=20)
    responses = np.where(np.isnan(F[:, 0]), 0.5, F[:, 0]) * 0.8
    params = {"alpha": 0.5, "a": 0.6}
    lcm = SubjectLikelihood(responses, F, method="local_map")
    beta = SubjectLikelihood(responses, F, method="local_map", feature_prior="beta")
    want = particle_filter(F, alpha=0.5, a=0.6, b=1.0, method="local_map", feature_prior="lcm")
    np.testing.assert_allclose(lcm.V(params), want.V, rtol=1e-12)
    assert not np.allclose(lcm.V(params), beta.V(params))
    fit = fit_subject(responses, F, variant="lcm", method="local_map", n_starts=1, max_evals=5,
                      random_seed=0)  # fmt: skip
    assert np.isfinite(fit.log_likelihood)


def test_unknown_feature_prior_is_rejected():
    with pytest.raises(ValueError, match="feature_prior"):
        particle_filter(_design(0), feature_prior="dirichlet")

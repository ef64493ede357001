"""The particle filter against exact enumeration, a reference local MAP and bad input."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from pmctx.conditioning import exact_filter, particle_filter
from pmctx.conditioning.exact import enumerate_partitions

nan = np.nan
# Eight trials with a changing context, partial US and two probes (US unknown).
FEATURES = np.array(
    [
        [1, 1, 1, 0],
        [1, 1, 1, 0],
        [1, 0, 1, 0],
        [0, 1, 0, 1],
        [0, 1, 0, 1],
        [nan, 1, 1, 0],
        [0, 1, 1, 0],
        [nan, 1, 0, 1],
    ]
)


def test_partition_enumeration_counts_bell_numbers():
    assert [len(enumerate_partitions(n)) for n in range(1, 8)] == [1, 2, 5, 15, 52, 203, 877]
    assert len(enumerate_partitions(5, max_blocks=2)) == 16  # 2**4 two-block-or-fewer


def test_exact_filter_is_self_consistent():
    ex = exact_filter(FEATURES, alpha=0.7)
    # The cause posterior of each trial is a distribution; trial 1 is always cause 0.
    np.testing.assert_allclose(ex.cause_posterior.sum(axis=1), 1.0)
    assert ex.cause_posterior[0, 0] == pytest.approx(1.0)
    assert ex.V[0] == pytest.approx(0.5)  # a fresh cause predicts 0.5
    # Probes carry no US information, so their log predictive equals the predictive of
    # their CS/context features alone; the marginal likelihood sums the predictives.
    assert ex.log_marginal_likelihood == pytest.approx(ex.log_predictive.sum())
    probs = ex.settings["partition_probs"]
    assert probs.sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "settings",
    [
        {"alpha": 0.5},
        {"alpha": 2.0, "max_causes": 2, "stickiness": 1.0},
        {"alpha": 1.0, "concentration": 0.5},
        {"alpha": 0.8, "a": 0.6, "b": 1.7, "stickiness": 0.5},
    ],
    ids=["crp", "capped-sticky", "eta0.5", "a-ne-b"],
)
def test_particle_filter_matches_exact_enumeration(settings):
    exact = exact_filter(FEATURES, **settings)
    pf = particle_filter(FEATURES, n_particles=20_000, random_seed=7, **settings)
    # Monte Carlo error of V with 20k particles is ~1e-3 here; V and V_weighted differ by up
    # to 0.008-0.013, so this tolerance separates eq. 6 from the weighted predictive.
    np.testing.assert_allclose(pf.V, exact.V, atol=5e-3)
    np.testing.assert_allclose(pf.V_weighted, exact.V_weighted, atol=5e-3)
    assert np.abs(exact.V - exact.V_weighted).max() > 0.007
    np.testing.assert_allclose(pf.cause_posterior[-1, :3], exact.cause_posterior[-1, :3], atol=0.02)
    assert pf.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, abs=0.03)
    assert pf.mean_n_causes[-1] == pytest.approx(exact.mean_n_causes[-1], abs=0.05)
    # The final particles' histories (rebuilt from the genealogy) sample the partition
    # posterior: compare the label-free probabilities that two trials share a cause.
    np.testing.assert_array_equal(pf.n_causes[-1], pf.assignments.max(axis=1) + 1)

    def coassign(parts, weights):
        return np.einsum("p,pij->ij", weights, parts[:, :, None] == parts[:, None, :])

    probs = exact.settings["partition_probs"]
    M = len(pf.assignments)
    np.testing.assert_allclose(
        coassign(pf.assignments, np.full(M, 1 / M)), coassign(exact.assignments, probs), atol=0.02
    )


def test_symmetric_concentration_is_the_a_equals_b_case():
    sym = particle_filter(FEATURES, alpha=0.7, concentration=0.4, n_particles=64, random_seed=3)
    ab = particle_filter(FEATURES, alpha=0.7, a=0.4, b=0.4, n_particles=64, random_seed=3)
    np.testing.assert_array_equal(sym.V, ab.V)
    ex_sym = exact_filter(FEATURES, alpha=0.7, concentration=0.4)
    ex_ab = exact_filter(FEATURES, alpha=0.7, a=0.4, b=0.4)
    np.testing.assert_allclose(ex_sym.V, ex_ab.V, rtol=1e-13)
    # A new cause predicts the US with a / (a + b).
    assert particle_filter(FEATURES, a=0.5, b=1.5, random_seed=0).V[0] == pytest.approx(0.25)
    assert exact_filter(FEATURES, a=0.5, b=1.5).V[0] == pytest.approx(0.25)


def _reference_local_map(F, alpha, eta=1.0):
    """A direct, loop-by-loop local MAP (hard assignment to the most probable cause)."""
    causes, V = [], []
    for t, row in enumerate(F):
        n_k = [causes.count(k) for k in range(len(set(causes)))]
        options = [*range(len(n_k)), len(n_k)]
        log_x, log_full, p_us = [], [], []
        for k in options:
            prior = (n_k[k] if k < len(n_k) else alpha) if t > 0 else 1.0
            members = [s for s, c in enumerate(causes) if c == k]
            lik = [
                (np.sum(F[members, i] == row[i]) + eta)
                / (np.sum(~np.isnan(F[members, i])) + 2 * eta)
                for i in range(len(row))
            ]
            lx = np.log(prior) + sum(np.log(lik[i]) for i in range(1, len(row)) if row[i] == row[i])
            pus = (np.sum(F[members, 0] == 1) + eta) / (np.sum(~np.isnan(F[members, 0])) + 2 * eta)
            log_x.append(lx)
            p_us.append(pus)
            log_full.append(lx + (np.log(lik[0]) if row[0] == row[0] else 0.0))
        r = np.exp(np.array(log_x) - logsumexp(log_x))
        V.append(float(r @ np.array(p_us)))
        causes.append(options[int(np.argmax(log_full))])
    return np.array(V), np.array(causes)


@pytest.mark.parametrize("alpha", [0.05, 1.0, 5.0])
def test_local_map_matches_reference(alpha):
    V, causes = _reference_local_map(FEATURES, alpha)
    res = particle_filter(FEATURES, alpha=alpha, method="local_map", random_seed=0)
    np.testing.assert_allclose(res.V, V, rtol=1e-12)
    np.testing.assert_array_equal(res.assignments[0], causes)


def test_zero_alpha_is_one_cause_and_large_alpha_many():
    one = particle_filter(FEATURES, alpha=0.0, n_particles=50, random_seed=0)
    assert (one.n_causes == 1).all()
    # With a single cause V is the running US frequency with the +1/+2 smoothing.
    us = FEATURES[:, 0]
    seen = np.concatenate([[0], np.cumsum(np.nan_to_num(us))[:-1]])
    n_obs = np.concatenate([[0], np.cumsum(~np.isnan(us))[:-1]])
    np.testing.assert_allclose(one.V, (seen + 1) / (n_obs + 2))


def test_larger_alpha_gives_more_causes():
    rng = np.random.default_rng(3)
    F = rng.integers(0, 2, size=(30, 5)).astype(float)
    means = [
        np.mean(
            [
                particle_filter(F, alpha=a, n_particles=200, random_seed=s).mean_n_causes[-1]
                for s in range(3)
            ]
        )
        for a in (0.01, 0.3, 3.0, 30.0)
    ]
    assert all(b > a for a, b in itertools.pairwise(means)), means


def test_max_causes_caps_the_number_of_causes():
    res = particle_filter(FEATURES, alpha=50.0, max_causes=2, n_particles=100, random_seed=0)
    assert res.n_causes.max() == 2 and res.cause_posterior.shape[1] == 2


def test_seeded_runs_are_reproducible_and_result_converts():
    a = particle_filter(FEATURES, alpha=0.5, n_particles=64, random_seed=11)
    b = particle_filter(FEATURES, alpha=0.5, n_particles=64, random_seed=11)
    np.testing.assert_array_equal(a.assignments, b.assignments)
    ds = a.to_dataset()
    assert ds["cause_posterior"].dims == ("trial", "cause")
    idata = a.to_inference_data()
    assert idata.posterior["n_causes"].shape == (1, 64, len(FEATURES))
    assert "V" in idata.filtering


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": np.nan}, "alpha"),
        ({"n_particles": 0}, "n_particles"),
        ({"max_causes": 0}, "max_causes"),
        ({"concentration": 0.0}, "concentration"),
        ({"a": 0.0}, "a"),
        ({"b": -1.0}, "b"),
        ({"stickiness": -1.0}, "stickiness"),
        ({"method": "smc"}, "method"),
        ({"method": "local_map", "n_particles": 5}, "one particle"),
    ],
)
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        particle_filter(FEATURES, **kwargs)


@pytest.mark.parametrize(
    ("features", "match"),
    [
        (np.array([[1, 0.5, 1]]), "binary"),
        (np.array([[1, np.inf, 1]]), "finite"),
        (np.array([[1, np.nan, 1]]), "NaN only in the US column"),
        (np.array([1, 0, 1]), "2-dimensional"),
    ],
)
def test_bad_features_raise(features, match):
    with pytest.raises(ValueError, match=match):
        particle_filter(features)
    with pytest.raises(ValueError, match=match):
        exact_filter(features)


def test_exact_refuses_long_sequences():
    with pytest.raises(ValueError, match="at most 10"):
        exact_filter(np.zeros((11, 2)))

"""The time-sensitive latent-cause prior (Gershman, Blei & Niv 2010).

An old cause's prior weight is the sum of a temporal kernel over its trials instead of its
count. Checked against exact enumeration of partitions, against today's CRP filter in the
no-decay limit, and on spontaneous recovery.
"""

import numpy as np
import pytest

from pmctx.conditioning import exact_filter, particle_filter, shipped_design

nan = np.nan
FEATURES = np.array(
    [
        [1, 1, 1, 0],
        [1, 1, 1, 0],
        [1, 1, 1, 0],
        [0, 1, 1, 0],
        [0, 1, 1, 0],
        [0, 1, 0, 1],
        [nan, 1, 1, 0],
        [0, 1, 1, 0],
    ]
)
# Irregular time stamps with a long gap before the probe.
TIMES = np.array([0.0, 1.0, 2.5, 3.0, 4.0, 6.0, 40.0, 41.0])


@pytest.mark.parametrize(
    "settings",
    [
        {"temporal_kernel": "power", "timescale": 1.0, "decay": 1.5, "alpha": 0.5},
        {"temporal_kernel": "exponential", "timescale": 3.0, "alpha": 0.3, "stickiness": 0.5},
    ],
    ids=["power", "exponential-sticky"],
)
def test_temporal_filter_matches_exact_enumeration(settings):
    exact = exact_filter(FEATURES, times=TIMES, **settings)
    pf = particle_filter(FEATURES, times=TIMES, n_particles=20_000, random_seed=5, **settings)
    # 20k particles: Monte Carlo error of V ~1e-3 (same tolerance as the CRP test).
    np.testing.assert_allclose(pf.V, exact.V, atol=5e-3)
    np.testing.assert_allclose(pf.V_weighted, exact.V_weighted, atol=5e-3)
    assert pf.log_marginal_likelihood == pytest.approx(exact.log_marginal_likelihood, abs=0.03)
    # The temporal prior changes the answer: it is not the CRP in disguise.
    crp = exact_filter(FEATURES, alpha=settings["alpha"], stickiness=settings.get("stickiness", 0))
    assert np.abs(crp.V - exact.V).max() > 0.03


def test_exact_temporal_prior_is_a_distribution():
    """Summed over all partitions and all US values the prior-times-likelihood normalises."""
    ex = exact_filter(FEATURES[:5], times=TIMES[:5], temporal_kernel="power", decay=2.0)
    assert ex.settings["partition_probs"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(ex.cause_posterior.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    "limit",
    [
        {"temporal_kernel": "power", "decay": 0.0},
        {"temporal_kernel": "exponential", "timescale": np.inf},
    ],
    ids=["power-decay0", "exponential-inf"],
)
def test_no_decay_limit_is_todays_crp_filter_exactly(limit):
    design = shipped_design("renewal_aba", n_acquisition=6, n_extinction=6, n_test=2)
    kw = dict(alpha=0.4, stickiness=0.3, n_particles=300, random_seed=2)
    crp = particle_filter(design, **kw)
    tmp = particle_filter(design, **kw, **limit)
    np.testing.assert_array_equal(tmp.V, crp.V)
    np.testing.assert_array_equal(tmp.assignments, crp.assignments)
    np.testing.assert_array_equal(tmp.log_predictive, crp.log_predictive)


def spontaneous_recovery_curve(intervals, *, n_seeds=3, n_particles=300):
    """V on the (non-reinforced) test trial after each retention interval, power kernel."""
    out = []
    for R in intervals:
        design = shipped_design("spontaneous_recovery", retention_interval=R)
        V = [
            particle_filter(
                design, alpha=0.1, temporal_kernel="power", n_particles=n_particles, random_seed=s
            ).V[-1]
            for s in range(n_seeds)
        ]
        out.append(np.mean(V))
    return np.array(out)


def test_spontaneous_recovery_grows_with_retention_interval():
    intervals = [1, 10, 100, 1000]
    curve = spontaneous_recovery_curve(intervals)
    assert (np.diff(curve) > 0.02).all(), curve
    # Under the CRP the interval has no effect (the prior is exchangeable).
    crp = [
        particle_filter(
            shipped_design("spontaneous_recovery", retention_interval=R), alpha=0.1, random_seed=0
        ).V[-1]
        for R in (1, 1000)
    ]
    assert crp[0] == crp[1]


def test_temporal_prior_keeps_renewal():
    """ABA renewal survives the temporal prior (the existing phenomena stay intact)."""
    V = {
        c: np.mean(
            [
                particle_filter(
                    shipped_design(f"renewal_{c}"),
                    temporal_kernel="power",
                    random_seed=s,
                    alpha=0.1,
                ).V[-1]
                for s in range(3)
            ]
        )
        for c in ("aba", "abc", "aaa")
    }
    assert V["aba"] > V["abc"] + 0.2 and V["aba"] > V["aaa"] + 0.2, V


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temporal_kernel": "hyperbolic"}, "temporal_kernel"),
        ({"temporal_kernel": "power", "timescale": 0.0}, "timescale"),
        ({"temporal_kernel": "power", "decay": -1.0}, "decay"),
        ({"temporal_kernel": "power", "times": np.arange(3.0)}, "one time stamp per trial"),
        ({"temporal_kernel": "power", "times": TIMES[::-1]}, "non-decreasing"),
    ],
)
def test_bad_temporal_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        particle_filter(FEATURES, **kwargs)
    with pytest.raises(ValueError, match=match):
        exact_filter(FEATURES, **kwargs)

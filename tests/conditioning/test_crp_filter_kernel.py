"""The compact-storage CRP filter kernel against the earlier kernel (the oracle), and the
batched evaluation of many parameter points against one call per point.

The kernel keeps per-particle counts in arrays sized by the causes in use and multiplies the
US predictive in as a ratio of counts; the oracle (``tests/oracles/crp_filter_reference.py``)
is the kernel before that rewrite. Same uniforms in, so the same resampling and cause
choices: assignments and cause counts equal exactly, ``V``, ``V_weighted``, the predictive
log likelihoods and the cause posterior to 1e-12 (rounding only: sums of exps taken in a
different order).
"""

import numpy as np
import pytest

from pmctx.conditioning.filter_settings import absent_pseudo_count
from pmctx.conditioning.likelihood import SubjectLikelihood, recovery_design
from pmctx.conditioning.particle_filter import _filter_kernel, common_uniforms
from tests.oracles.crp_filter_reference import filter_kernel as reference_kernel


def _random_design(rng, T, D):
    F = (rng.random((T, D)) < 0.4).astype(np.int64)
    F[rng.random(T) < 0.15, 0] = -1  # probe trials: US unknown
    return F


CASES = [
    # alpha, a, b, feature_prior, stickiness, max_causes, temporal (kind, timescale, decay)
    (0.5, 1.0, 1.0, "beta", 0.0, None, (0, 1.0, 0.0)),
    (4.0, 0.7, 1.3, "lcm", 0.0, None, (0, 1.0, 0.0)),  # many causes: the slots grow
    (2.0, 0.7, 1.3, "beta", 1.5, None, (0, 1.0, 0.0)),
    (3.0, 1.2, 0.6, "lcm", 0.5, 3, (0, 1.0, 0.0)),  # capped at 3 causes
    (0.0, 1.0, 1.0, "beta", 0.0, None, (0, 1.0, 0.0)),  # one cause
    (1.0, 0.8, 1.1, "lcm", 0.0, None, (2, 2.0, 1.0)),  # power-law temporal prior
    (1.0, 1.0, 1.0, "beta", 0.3, 12, (1, 5.0, 0.0)),  # exponential kernel, capped
]


@pytest.mark.parametrize("local_map", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_kernel_matches_reference(case, local_map):
    alpha, a, b, prior, stick, max_causes, (kind, timescale, decay) = case
    rng = np.random.default_rng([CASES.index(case), int(local_map)])
    for T, D in [(30, 4), (60, 6)]:
        F = _random_design(rng, T, D)
        M = 1 if local_map else 64
        u, v = common_uniforms(T, M, rng)
        n_slots = T if max_causes is None else min(max_causes, T)
        times = np.cumsum(rng.exponential(1.0, T))
        args = (F, alpha, a, b, absent_pseudo_count(a, b, prior), stick, n_slots, local_map,
                u, v, times, kind, timescale, decay)  # fmt: skip
        new = _filter_kernel(*args)
        old = reference_kernel(*args)
        for name, x, y in zip(
            ["V", "V_weighted", "log_pred", "post", "n_causes", "assign"], new, old, strict=True
        ):
            if name in ("n_causes", "assign"):
                np.testing.assert_array_equal(x, y, err_msg=name)
            else:
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("method", ["particle", "local_map"])
def test_many_points_equal_one_call_each(method):
    design = recovery_design(30)
    lik = SubjectLikelihood(np.linspace(0, 1, 30), design, n_particles=20, method=method,
                            rng=3, feature_prior="lcm")  # fmt: skip
    points = [
        {"alpha": 0.0, "a": 0.6},
        {"alpha": 0.3, "a": 1.4, "stickiness": 2.0},
        {"alpha": 9.0, "a": 1.0, "b": 0.7},
    ]
    many = lik.V_many(points)
    for row, p in zip(many, points, strict=True):
        np.testing.assert_array_equal(row, lik.V(p))
    np.testing.assert_array_equal(lik.log_likelihoods(points), [lik(p) for p in points])
    assert lik.V_many([]).shape == (0, 30)

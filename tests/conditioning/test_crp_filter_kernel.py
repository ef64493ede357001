"""The CRP filter kernel against the earlier kernels (the oracles), and the batched
evaluation of many parameter points against one call per point.

The kernel keeps one state per node (particles sharing their whole cause history) in arrays
sized by the causes in use and multiplies the US predictive in as a ratio of counts. Two
oracles: ``tests/oracles/crp_filter_reference.py`` is the kernel before the compact storage
(same uniforms in, so the same resampling and cause choices: assignments and cause counts
equal exactly, ``V``, ``V_weighted``, the predictive log likelihoods and the cause posterior
to 1e-12, rounding only: sums of exps taken in a different order);
``tests/oracles/crp_filter_compact.py`` is the per-particle kernel before the nodes, which
the node kernel equals bit for bit (its sums run over the particles in the same order).
"""

import numpy as np
import pytest

from pmctx.conditioning.filter_kernel import _filter_kernel, _guide_table, _guided_search
from pmctx.conditioning.filter_settings import absent_pseudo_count
from pmctx.conditioning.likelihood import SubjectLikelihood, recovery_design
from pmctx.conditioning.particle_filter import common_uniforms
from tests.oracles.crp_filter_compact import filter_kernel as compact_kernel
from tests.oracles.crp_filter_reference import filter_kernel as reference_kernel


def _random_design(rng, T, D):
    F = (rng.random((T, D)) < 0.4).astype(np.int64)
    F[rng.random(T) < 0.15, 0] = -1  # probe trials: US unknown
    return F


NAMES = ["V", "V_weighted", "log_pred", "post", "n_causes", "assign"]
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
        for name, x, y in zip(NAMES, new, old, strict=True):
            if name in ("n_causes", "assign"):
                np.testing.assert_array_equal(x, y, err_msg=name)
            else:
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_node_kernel_equals_per_particle_kernel_bit_for_bit(case):
    alpha, a, b, prior, stick, max_causes, (kind, timescale, decay) = case
    rng = np.random.default_rng([7, CASES.index(case)])
    # Particle counts from one (a single node) to many more particles than nodes.
    for T, D, M in [(25, 3, 1), (40, 5, 7), (50, 4, 300), (30, 6, 64)]:
        F = _random_design(rng, T, D)
        u, v = common_uniforms(T, M, rng)
        n_slots = T if max_causes is None else min(max_causes, T)
        times = np.cumsum(rng.exponential(1.0, T))
        args = (F, alpha, a, b, absent_pseudo_count(a, b, prior), stick, n_slots, False,
                u, v, times, kind, timescale, decay)  # fmt: skip
        for x, y, name in zip(_filter_kernel(*args), compact_kernel(*args), NAMES, strict=True):
            np.testing.assert_array_equal(x, y, err_msg=name)


def test_guided_search_equals_searchsorted():
    rng = np.random.default_rng(11)
    for M in (1, 2, 5, 100, 1000):
        # Weights with zeros, ties, tiny and huge values: flat and steep stretches of cw.
        w = rng.choice([0.0, 1e-300, 1e-12, 0.3, 1.0, 7.0, 1e9], size=M)
        w[rng.integers(M)] = 1.0
        cw = np.cumsum(w)
        acc = cw[-1]
        cw[-1] = np.inf
        guide = np.empty(M + 1, np.int64)
        _guide_table(cw, acc, guide)
        u = np.concatenate([rng.random(2000), [0.0, np.nextafter(1.0, 0.0)],
                            np.arange(M + 1) / M * (1 - 1e-16)])  # fmt: skip
        got = [_guided_search(cw, guide, x, acc) for x in u]
        np.testing.assert_array_equal(got, np.searchsorted(cw, u * acc, side="right"))


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


def test_an_f_ordered_design_reaches_the_kernel_in_c_order():
    """Features from a DataFrame or a transpose are F-ordered; coding them in C order keeps
    one compiled filter kernel (another layout compiled it again, about 14 s on a fresh cache)."""
    F = np.asfortranarray(recovery_design(20).to_array())
    lik = SubjectLikelihood([0.5] * 20, F, n_particles=4, rng=0)
    assert lik.F.flags.c_contiguous
    lik.V({"alpha": 1.0})
    assert all(signature[0].layout == "C" for signature in _filter_kernel.signatures)

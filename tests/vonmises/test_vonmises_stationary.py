"""Stationary distributions of the augmented and cluster samplers, the augmented reference
kernels and the FFBS oracle on tiny grids.

Exact reference: the joint of a 2x2 grid (some nodes observed, some missing) integrated over
3 x 3 x 3 x 3 angle bins by quadrature; the samplers' binned draws must match it (total
variation and chi-square on an effective sample size), and so must exact edge statistics.
A Geweke joint-distribution test on a 2x3 grid uses exact prior draws by rejection.
"""

import functools

import numpy as np
import pytest

from pmctx.testing import assert_geweke, assert_matches_exact, compare_to_exact, geweke_test
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.cluster import cluster_sweep
from pmctx.vonmises.potentials import log_sphere_normaliser, natural_field
from tests.oracles import vonmises_kernels as reference
from tests.oracles.vonmises_exact import bin_index, binned_joint, rejection_prior
from tests.oracles.vonmises_ffbs import ffbs_sweep

KAPPA, RANK, N_BINS = 1.5, 2, 3
Z = np.array([[0.3, -2.0], [2.5, 0.0]])
MASK = np.array([[1, 0], [0, 1]])
FIELD = natural_field(Z, MASK, 1.2)
SAMPLERS = {
    "ffbs_oracle": ffbs_sweep,
    "augmented": augmented_sweep,
    "augmented_columns": functools.partial(augmented_sweep, direction="columns"),
    "augmented_vector": functools.partial(reference.augmented_sweep, kernel="vector"),
    "augmented_table": functools.partial(reference.augmented_sweep, kernel="table"),
    "cluster": functools.partial(cluster_sweep, n_moves=2),
}


@pytest.fixture(scope="module")
def exact():
    probs, (joint, angles) = binned_joint(FIELD, KAPPA, RANK, n_bins=N_BINS, points_per_bin=12)
    a = angles
    # Nodes in row-major order: 0=(0,0), 1=(0,1), 2=(1,0), 3=(1,1).
    cos_h = np.cos(a[:, None, None, None] - a[None, :, None, None])
    cos_d = np.cos(a[:, None, None, None] - a[None, None, None, :])
    stats = {"cos_h01": float((joint * cos_h).sum()), "cos_diag03": float((joint * cos_d).sum())}
    return probs.ravel(), stats


def run_chain(sweep, n_draws, seed, **kwargs):
    rng = np.random.default_rng(seed)
    o = rng.uniform(-np.pi, np.pi, size=(2, 2))
    draws = np.empty((n_draws, 2, 2))
    for t in range(n_draws):
        o = sweep(o, FIELD, KAPPA, RANK, rng, **kwargs)
        draws[t] = o
    return draws


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_binned_joint_and_edge_statistics_match_exact(exact, name):
    probs, stats = exact
    n = 12000
    draws = run_chain(SAMPLERS[name], n, seed=11)
    # Block samplers on 2x2 are nearly independent; half the count is a safe ESS.
    assert_matches_exact(bin_index(draws, N_BINS), probs, tv_tol=0.04, ess=n / 2)
    cos_h = np.cos(draws[:, 0, 0] - draws[:, 0, 1])
    cos_d = np.cos(draws[:, 0, 0] - draws[:, 1, 1])
    for values, key in ((cos_h, "cos_h01"), (cos_d, "cos_diag03")):
        se = values.reshape(40, -1).mean(axis=1).std(ddof=1) / np.sqrt(40)
        assert abs(values.mean() - stats[key]) < 4 * se + 1e-3, (key, values.mean(), stats[key])


def test_seed_normaliser_fails_the_same_check(exact):
    probs, _ = exact
    n = 6000  # the seed's normaliser is off by a total variation of about 0.07 here
    draws = run_chain(ffbs_sweep, n, seed=12, log_normaliser=log_sphere_normaliser)
    result = compare_to_exact(bin_index(draws, N_BINS), probs, tv_tol=0.04, ess=n / 2)
    assert not result.passed, str(result)


def test_a_broken_vector_kernel_fails_the_same_check(exact, monkeypatch):
    """The check has power against kernel bugs: mode FFBS at half the node vectors fails."""
    real = reference.vector_chain_modes

    def broken(node_vec, ext, uniforms, **kwargs):
        return real(0.5 * np.asarray(node_vec), ext, uniforms, **kwargs)

    monkeypatch.setattr(reference, "vector_chain_modes", broken)
    probs, _ = exact
    n = 6000
    draws = run_chain(reference.augmented_sweep, n, seed=14, kernel="vector")
    result = compare_to_exact(bin_index(draws, N_BINS), probs, tv_tol=0.04, ess=n / 2)
    assert not result.passed, str(result)


@pytest.mark.parametrize("bug", ["mode_uniforms", "half_field"])
def test_a_broken_series_kernel_fails_the_same_check(exact, monkeypatch, bug):
    """The same check against the default (series) pass: mode draws from skewed uniforms, or
    the node factors at half strength, fail."""
    from pmctx.vonmises import _numba_series_pass

    real = _numba_series_pass.column_pass

    def broken(o, field, ext, u_edge, u_chain, **kwargs):
        if bug == "mode_uniforms":
            return real(o, field, ext, u_edge, u_chain**2, **kwargs)
        return real(o, 0.5 * np.asarray(field), ext, u_edge, u_chain, **kwargs)

    monkeypatch.setattr(_numba_series_pass, "column_pass", broken)
    probs, _ = exact
    n = 6000
    draws = run_chain(augmented_sweep, n, seed=14)
    result = compare_to_exact(bin_index(draws, N_BINS), probs, tv_tol=0.04, ess=n / 2)
    assert not result.passed, str(result)


GEWEKE_SHAPE, GEWEKE_KAPPA, GEWEKE_OBS = (2, 3), 1.0, 2.0


def _geweke(sweep, n, seed):
    # Exact prior draws, made in one batch; geweke_test needs n + 1 of them.
    bank = iter(
        rejection_prior(GEWEKE_SHAPE, GEWEKE_KAPPA, RANK, n + 1, np.random.default_rng(seed))
    )

    def prior(rng):
        return next(bank)

    def data(o, rng):
        return rng.vonmises(o, GEWEKE_OBS)

    def transition(o, z, rng):
        field = natural_field(z, np.ones(GEWEKE_SHAPE), GEWEKE_OBS)
        return sweep(o, field, GEWEKE_KAPPA, RANK, rng)

    tests = {
        "cos_o00": lambda o, z: np.cos(o[0, 0]),
        "sin_o12": lambda o, z: np.sin(o[1, 2]),
        "cos_edge": lambda o, z: np.cos(o[0, 1] - o[1, 1]),
        "cos_fit": lambda o, z: np.mean(np.cos(o - z)),
        "cos_o_sq": lambda o, z: np.cos(o[1, 0]) ** 2,
    }
    return geweke_test(prior, data, transition, tests, n_marginal=n, n_successive=n, rng=seed)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_geweke(name):
    assert_geweke(_geweke(SAMPLERS[name], 3000, 13), z_threshold=4.0)


@pytest.mark.slow
def test_samplers_agree_on_a_larger_posterior():
    """12x12 grid, beyond exact reach: the augmented sampler agrees with the FFBS oracle."""
    rng = np.random.default_rng(30)
    z = rng.uniform(-np.pi, np.pi, size=(12, 12))
    field = natural_field(z, rng.random((12, 12)) < 0.5, 0.8)
    means = {}
    for name in ("ffbs_oracle", "augmented"):
        chain_rng = np.random.default_rng(31)
        o = chain_rng.uniform(-np.pi, np.pi, size=(12, 12))
        values = []
        for t in range(3000):
            o = SAMPLERS[name](o, field, 2.0, 3, chain_rng)
            if t >= 500:
                values.append(np.mean(np.cos(np.diff(o, axis=1))))
        values = np.asarray(values)
        se = values.reshape(25, -1).mean(axis=1).std(ddof=1) / 5.0
        means[name] = (values.mean(), se)
    ref, ref_se = means["augmented"]
    for mean, se in means.values():
        assert abs(mean - ref) < 4 * np.hypot(se, ref_se), means

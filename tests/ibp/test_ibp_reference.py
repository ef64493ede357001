"""The untruncated reference sampler (seed Algorithm 2) and the truncated kernel agree."""

import numpy as np
import pytest

from pmctx.ibp.conditionals import noisy_or_loglik
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.testing import assert_geweke, geweke_test
from tests.oracles.ibp_reference import reference_sweep, sample_ibp_prior

HYPER = IBPHyper(alpha=1.2, sigma_n=0.5, sigma_a=1.0, phi=0.4, lam=0.85, eps=0.1)


def data_from(Z, A, Y, rng, hyper=HYPER):
    n = Z.shape[0]
    F = Z @ A + hyper.sigma_n * rng.normal(size=(n, A.shape[1]))
    p1 = -np.expm1(noisy_or_loglik(np.zeros((n, Y.shape[1])), Z, Y, hyper.lam, hyper.eps))
    return F, (rng.random(p1.shape) < p1).astype(np.int64)


def test_reference_geweke_untruncated_ibp():
    n, d, t = 3, 1, 2

    def transition(state, data, rng):
        return reference_sweep(*state, data[0], data[1], HYPER, rng)

    tests = {
        "n_active": lambda s, data: s[0].shape[1],
        "z_sum": lambda s, data: s[0].sum(),
        "a_sq": lambda s, data: float((s[1] ** 2).sum()),
        "y_sum": lambda s, data: s[2].sum(),
        "fit": lambda s, data: float(((data[0] - s[0] @ s[1]) ** 2).sum()),
    }
    result = geweke_test(
        lambda rng: sample_ibp_prior(n, d, t, HYPER, rng),
        lambda s, rng: data_from(*s, rng),
        transition,
        tests,
        n_marginal=2000,
        n_successive=2000,
        rng=0,
    )
    assert_geweke(result, z_threshold=4.0)


def kernel_n_active(F, X, k_max, sweeps, seed):
    rng = np.random.default_rng(seed)
    n = F.shape[0]
    state = IBPState.from_arrays(
        np.zeros((n, k_max)), np.zeros((k_max, F.shape[1])), np.zeros((k_max, X.shape[1]))
    )
    out = np.empty(sweeps, dtype=np.int64)
    for s in range(sweeps):
        gibbs_sweep(state, F, X, HYPER, rng)
        out[s] = state.n_active
    return out


def reference_n_active(F, X, sweeps, seed):
    rng = np.random.default_rng(seed)
    n = F.shape[0]
    Z, A, Y = np.zeros((n, 0), np.int64), np.zeros((0, F.shape[1])), np.zeros((0, X.shape[1]))
    out = np.empty(sweeps, dtype=np.int64)
    for s in range(sweeps):
        Z, A, Y = reference_sweep(Z, A, Y, F, X, HYPER, rng)
        out[s] = Z.shape[1]
    return out


@pytest.mark.parametrize("sweeps", [1000])
def test_kernel_with_large_truncation_matches_untruncated_reference(sweeps):
    rng = np.random.default_rng(7)
    Z = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0]])
    F, X = data_from(Z, np.array([[1.5, 0.0], [0.0, -1.5]]), np.array([[1, 0, 1], [0, 1, 1]]), rng)
    ref = reference_n_active(F, X, sweeps, seed=1)[100:]
    ker = kernel_n_active(F, X, 60, 4 * sweeps, seed=2)[200:]
    p_ref = np.bincount(ref, minlength=12)[:12] / ref.size
    p_ker = np.bincount(ker, minlength=12)[:12] / ker.size
    tv = 0.5 * np.abs(p_ref - p_ker).sum()
    # K_max = 60 makes the finite model's K+ law within ~1e-2 of the IBP's; the rest is
    # Monte Carlo error of two autocorrelated chains.
    assert tv < 0.08, (p_ref.round(3), p_ker.round(3))
    assert abs(ref.mean() - ker.mean()) < 0.15

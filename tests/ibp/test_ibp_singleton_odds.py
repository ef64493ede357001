"""``singleton_log_odds`` against the joint row move's enumeration weights and brute force."""

import numpy as np
import pytest

from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.diagnostics import singleton_log_odds
from pmctx.ibp.joint_row import clear_row_block, joint_row_log_weights, singleton_tables
from pmctx.ibp.kernels import noisy_or_tables
from pmctx.ibp.sampler import IBPHyper
from pmctx.ibp.sweep import row_caches

HYPER = IBPHyper(alpha=1.3, sigma_n=0.4, sigma_a=1.1, phi=0.3, lam=0.85, eps=0.08)


def joint_weights(Z, A, Y, F, X, i, k_max):
    """``log w[0, k]`` of the joint row move with an empty shared block, for row ``i``."""
    Z, A, Y = Z.copy(), A.copy(), Y.copy()
    R, C, m = row_caches(Z, A, Y, F)
    ll0, _ = noisy_or_tables(HYPER.lam, HYPER.eps, k_max)
    lk0, lk1 = singleton_tables(ll0, HYPER.lam, HYPER.phi)
    free = np.empty(k_max, dtype=np.int64)
    cols = np.zeros(k_max, dtype=np.int64)
    n_free = clear_row_block(i, cols, 0, Z, A, Y, R, C, m, free)
    hyper = HYPER.as_array(k_max)
    return joint_row_log_weights(i, cols, 0, n_free, A, Y, X, R, C, m, hyper, lk0, lk1)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_odds_equal_the_joint_row_weights(seed):
    data = visuomotor_data(30, n_features=3, random_seed=seed)
    k_max = 8  # columns 3-5 become singletons of rows 4 and 7, 6-7 stay empty
    rng = np.random.default_rng(seed)
    # Pad to K_max and give a few rows singletons of their own, so removal is exercised too.
    Z = np.zeros((30, k_max), dtype=np.int64)
    Z[:, :3] = data.Z
    A = np.zeros((k_max, 2))
    A[:3] = data.A
    A[3:6] = rng.normal(size=(3, 2))
    Y = np.zeros((k_max, data.Y.shape[1]), dtype=np.int64)
    Y[:3] = data.Y
    Y[3:6] = rng.integers(0, 2, size=(3, Y.shape[1]))
    Z[4, 3] = Z[7, 4] = Z[7, 5] = 1
    F, X = np.ascontiguousarray(data.F), np.ascontiguousarray(data.X)
    out = singleton_log_odds(Z, A, Y, F, X, HYPER)
    Z0, A0, Y0 = Z.copy(), A.copy(), Y.copy()
    for i in range(30):
        logw = joint_weights(Z, A, Y, F, X, i, k_max)
        assert abs(out["log_odds"][i] - (logw[1] - logw[0])) < 1e-9
        log_p0 = logw[0] - np.logaddexp.reduce(logw)
        assert abs(out["log_p_none"][i] - log_p0) < 1e-9
    np.testing.assert_array_equal(Z, Z0)  # the state is not modified
    np.testing.assert_array_equal(Y, Y0)
    np.testing.assert_array_equal(A, A0)
    want = 1.0 - np.exp(out["log_p_none"].sum())
    assert out["p_extra"] == pytest.approx(want, rel=1e-12)


def test_log_odds_match_brute_force_forces_only():
    """Forces only, one row: the singleton's A integrated by hand (variance s_n^2 + s_A^2)."""
    rng = np.random.default_rng(3)
    n, k_max = 5, 3
    Z = np.zeros((n, k_max), dtype=np.int64)
    Z[:, 0] = [1, 1, 0, 1, 1]
    A = np.zeros((k_max, 2))
    A[0] = [1.0, -0.5]
    F = Z @ A + rng.normal(size=(n, 2))
    X = np.zeros((n, 0), dtype=np.int64)
    out = singleton_log_odds(Z, A, np.zeros((k_max, 0)), F, X, HYPER)
    i = 2  # owns nothing; J = 2 free columns
    a = HYPER.alpha / k_max
    r2 = (F[i] ** 2).sum()
    s2, v = HYPER.sigma_n**2, HYPER.sigma_n**2 + HYPER.sigma_a**2
    prior = np.log(2 * a / n)  # Binom(1; 2, p) / Binom(0; 2, p) with p / (1 - p) = a / n
    lik = -np.log(v / s2) - 0.5 * r2 / v + 0.5 * r2 / s2  # D = 2: -(D/2) log(v / s2)
    assert out["log_odds"][i] == pytest.approx(prior + lik, abs=1e-9)


def test_validates_k_max():
    with pytest.raises(ValueError, match="K_max"):
        singleton_log_odds(np.zeros((2, 3)), np.zeros((3, 1)), np.zeros((3, 0)),
                           np.zeros((2, 1)), np.zeros((2, 0)), HYPER, K_max=2)  # fmt: skip

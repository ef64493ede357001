"""Each conditional of the specialised IBP kernel against brute-force enumeration."""

import itertools

import numpy as np
import pytest
from scipy import stats

from pmctx.ibp.conditionals import (
    a_posterior,
    log_joint,
    noisy_or_log_p,
    sample_a,
    sample_pi_logit,
)
from pmctx.ibp.kernels import (
    new_feature_block,
    new_feature_log_posterior,
    noisy_or_tables,
    refresh_empty_columns,
    row_block_update,
    y_log_odds,
    z_log_odds,
)
from pmctx.testing import assert_matches_exact, state_indices

HYPER = dict(alpha=1.3, sigma_n=0.6, sigma_a=1.1, phi=0.4, lam=0.8, eps=0.1)


def hyper_array(k_max):
    h = HYPER
    return np.array(
        [h["alpha"], h["sigma_n"], h["sigma_a"], h["phi"], h["lam"], h["eps"], float(k_max)]
    )


def tiny_problem(seed, n=4, k_max=3, d=2, t=3):
    rng = np.random.default_rng(seed)
    Z = rng.integers(0, 2, size=(n, k_max)).astype(np.int64)
    A = rng.normal(size=(k_max, d))
    Y = rng.integers(0, 2, size=(k_max, t)).astype(np.int64)
    F = rng.normal(size=(n, d))
    X = rng.integers(0, 2, size=(n, t)).astype(np.int64)
    return Z, A, Y, F, X


def caches(Z, A, Y, F):
    return np.ascontiguousarray(F - Z @ A), Z @ Y, Z.sum(axis=0)


def test_noisy_or_stays_finite_for_many_causes():
    ll0, ll1 = noisy_or_tables(0.9, 1e-3, 2000)
    assert np.all(np.isfinite(ll0)) and np.all(np.isfinite(ll1))
    assert ll0[-1] == pytest.approx(2000 * np.log(0.1) + np.log1p(-1e-3))
    # P(x=1) with no cause is eps, which naive 1 - (1 - eps) loses for tiny eps.
    assert np.exp(noisy_or_tables(0.5, 1e-18, 1)[1][0]) == pytest.approx(1e-18, rel=1e-9)
    lq, lp1 = noisy_or_log_p(np.arange(5), 0.8, 0.1)
    np.testing.assert_allclose(np.exp(lq) + np.exp(lp1), 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_z_log_odds_matches_enumerated_joint(seed):
    Z, A, Y, F, X = tiny_problem(seed)
    n, k_max = Z.shape
    R, C, m = caches(Z, A, Y, F)
    ll0, ll1 = noisy_or_tables(HYPER["lam"], HYPER["eps"], k_max)
    checked = 0
    for i, k in itertools.product(range(n), range(k_max)):
        if m[k] - Z[i, k] == 0:
            continue  # free columns are handled by the new-feature block
        z1, z0 = Z.copy(), Z.copy()
        z1[i, k], z0[i, k] = 1, 0
        brute = log_joint(z1, A, Y, F, X, **HYPER) - log_joint(z0, A, Y, F, X, **HYPER)
        a_over_k = HYPER["alpha"] / k_max
        got = z_log_odds(i, k, Z, A, Y, X, R, C, m, a_over_k, HYPER["sigma_n"], ll0, ll1)
        assert got == pytest.approx(brute, rel=1e-10, abs=1e-10)
        checked += 1
    assert checked > 3


@pytest.mark.parametrize("seed", [0, 3])
def test_y_log_odds_matches_enumerated_joint(seed):
    Z, A, Y, F, X = tiny_problem(seed)
    _, C, _ = caches(Z, A, Y, F)
    ll0, ll1 = noisy_or_tables(HYPER["lam"], HYPER["eps"], Z.shape[1])
    for k, t in itertools.product(range(Y.shape[0]), range(Y.shape[1])):
        y1, y0 = Y.copy(), Y.copy()
        y1[k, t], y0[k, t] = 1, 0
        brute = log_joint(Z, A, y1, F, X, **HYPER) - log_joint(Z, A, y0, F, X, **HYPER)
        rows = np.flatnonzero(Z[:, k]).astype(np.int64)
        got = y_log_odds(k, t, Y, X, C, rows, rows.size, HYPER["phi"], ll0, ll1)
        assert got == pytest.approx(brute, rel=1e-10, abs=1e-10)


def test_a_posterior_matches_gaussian_conditioning():
    Z, _, _, F, _ = tiny_problem(4, n=5, k_max=3, d=2)
    sn, sa = HYPER["sigma_n"], HYPER["sigma_a"]
    mean, chol = a_posterior(Z, F, sn, sa)
    # Brute force: condition the joint Gaussian of (vec A, F) column by column.
    cov_f = sa**2 * Z @ Z.T + sn**2 * np.eye(Z.shape[0])
    cross = sa**2 * Z.T
    want_mean = cross @ np.linalg.solve(cov_f, F)
    want_cov = sa**2 * np.eye(Z.shape[1]) - cross @ np.linalg.solve(cov_f, cross.T)
    np.testing.assert_allclose(mean, want_mean, atol=1e-10)
    np.testing.assert_allclose(sn**2 * np.linalg.inv(chol @ chol.T), want_cov, atol=1e-10)
    rng = np.random.default_rng(0)
    draws = np.stack([sample_a(Z, F, sn, sa, rng) for _ in range(4000)])
    np.testing.assert_allclose(draws.mean(0), want_mean, atol=5 * np.sqrt(want_cov.max() / 4000))
    np.testing.assert_allclose(np.cov(draws[:, :, 0].T), want_cov, atol=0.08)


def test_pi_logit_draws_follow_the_beta_posterior():
    rng = np.random.default_rng(1)
    m, n, alpha, k_max = np.array([0, 3]), 5, 0.6, 2
    draws = np.array([sample_pi_logit(m, n, alpha, k_max, rng) for _ in range(4000)])
    assert np.all(np.isfinite(draws))
    for k in range(2):
        pi = 1 / (1 + np.exp(-draws[:, k]))
        ks = stats.kstest(pi, stats.beta(alpha / k_max + m[k], 1 + n - m[k]).cdf)
        assert ks.pvalue > 1e-3


def free_column_problem(seed):
    """Row 0 owns column 0 with others; columns 1, 2 are used by no other row."""
    Z, A, Y, F, X = tiny_problem(seed, n=3, k_max=3, d=2, t=2)
    Z[:, 0] = [1, 1, 0]
    Z[1:, 1:] = 0
    Z[0, 1:] = [1, 0]  # a singleton that the block must be free to keep or drop
    return Z, A, Y, F, X


def brute_block_logp(Z, A, Y, F, X, free, i=0):
    """log p(z_i,free, Y_free | rest) with A_free integrated, over all configurations."""
    sn, sa = HYPER["sigma_n"], HYPER["sigma_a"]
    fixed = [k for k in range(Z.shape[1]) if k not in free]
    t_dim = Y.shape[1]
    configs, logps = [], []
    for zs in itertools.product([0, 1], repeat=len(free)):
        for ys in itertools.product([0, 1], repeat=len(free) * t_dim):
            Zc, Yc = Z.copy(), Y.copy()
            Zc[i, free] = zs
            Yc[free] = np.reshape(ys, (len(free), t_dim))
            mean = Zc[:, fixed] @ A[fixed]
            cov = sn**2 * np.eye(Z.shape[0]) + sa**2 * Zc[:, free] @ Zc[:, free].T
            lf = sum(
                stats.multivariate_normal(mean[:, d], cov).logpdf(F[:, d])
                for d in range(F.shape[1])
            )
            lj_wo_force = log_joint(Zc, A, Yc, None, X, **HYPER)  # prior Z, Y + noisy-OR
            configs.append(np.concatenate([zs, ys]))
            logps.append(lf + lj_wo_force)
    return np.array(configs), np.array(logps)


@pytest.mark.parametrize("seed", [0, 1])
def test_new_feature_count_posterior_matches_enumeration(seed):
    Z, A, Y, F, X = free_column_problem(seed)
    free = [1, 2]
    configs, logps = brute_block_logp(Z, A, Y, F, X, free)
    probs = np.exp(logps - logps.max())
    count = configs[:, : len(free)].sum(axis=1)
    brute = np.array([probs[count == k].sum() for k in range(len(free) + 1)])
    brute /= brute.sum()

    Zs = Z.copy()
    Zs[0, free] = 0
    R, C, _ = caches(Zs, A, Y, F)
    ll0, _ = noisy_or_tables(HYPER["lam"], HYPER["eps"], Z.shape[1])
    lp = new_feature_log_posterior(0, len(free), X, R, C, hyper_array(Z.shape[1]), ll0)
    got = np.exp(lp - lp.max())
    np.testing.assert_allclose(got / got.sum(), brute, rtol=1e-9)


def test_new_feature_block_draws_the_exact_conditional():
    Z, A, Y, F, X = free_column_problem(2)
    free = [1, 2]
    configs, logps = brute_block_logp(Z, A, Y, F, X, free)
    probs = np.exp(logps - logps.max())
    probs /= probs.sum()
    ll0, ll1 = noisy_or_tables(HYPER["lam"], HYPER["eps"], Z.shape[1])
    hyper = hyper_array(Z.shape[1])
    rng = np.random.default_rng(3)
    draws = []
    for _ in range(12000):
        Zc, Ac, Yc = Z.copy(), A.copy(), Y.copy()
        R, C, m = caches(Zc, Ac, Yc, F)
        new_feature_block(0, Zc, Ac, Yc, X, R, C, m, hyper, ll0, ll1, rng)
        # Unused free columns are redrawn from the prior at the end of a sweep, not here.
        refresh_empty_columns(Ac, Yc, m, HYPER["sigma_a"], HYPER["phi"], rng)
        np.testing.assert_array_equal(C, Zc @ Yc)  # caches stay in sync
        np.testing.assert_allclose(R, F - Zc @ Ac)
        draws.append(np.concatenate([Zc[0, free], Yc[free].ravel()]))
    assert_matches_exact(state_indices(np.array(draws), configs), probs, tv_tol=0.03)


def test_new_feature_forces_follow_eq_14():
    Z, A, Y, F, X = free_column_problem(2)
    free = [1, 2]
    F[0] += [4.0, -4.0]  # a large unexplained residual makes two new features likely
    ll0, ll1 = noisy_or_tables(HYPER["lam"], HYPER["eps"], Z.shape[1])
    hyper = hyper_array(Z.shape[1])
    rng = np.random.default_rng(4)
    a_new = []
    for _ in range(6000):
        Zc, Ac, Yc = Z.copy(), A.copy(), Y.copy()
        R, C, m = caches(Zc, Ac, Yc, F)
        new_feature_block(0, Zc, Ac, Yc, X, R, C, m, hyper, ll0, ll1, rng)
        if Zc[0, free].sum() == 2:
            a_new.append(Ac[free])
    assert len(a_new) > 2000
    # Eq. 14 (with ERRATA): each new row has mean r_i / (rho + 2), the block has precision
    # (1 1^T + rho I) / sigma_n^2 in every force dimension.
    sn, sa = HYPER["sigma_n"], HYPER["sigma_a"]
    rho = sn**2 / sa**2
    resid = F[0] - Z[0, [0]] @ A[[0]]
    a_new = np.array(a_new)
    se = sa / np.sqrt(len(a_new))
    np.testing.assert_allclose(a_new.mean(axis=0), np.tile(resid / (rho + 2), (2, 1)), atol=5 * se)
    want_cov = np.linalg.inv((np.ones((2, 2)) + rho * np.eye(2)) / sn**2)
    for d in range(2):
        np.testing.assert_allclose(np.cov(a_new[:, :, d].T), want_cov, atol=0.08)


def test_row_block_update_draws_the_exact_joint_row_conditional():
    Z, A, Y, F, X = tiny_problem(5, n=4, k_max=3, d=2, t=3)
    Z[1:, :] = [[1, 1, 0], [0, 1, 1], [1, 0, 1]]  # every column shared with another row
    configs = np.array(list(itertools.product([0, 1], repeat=3)))
    logps = []
    for conf in configs:
        Zc = Z.copy()
        Zc[0] = conf
        logps.append(log_joint(Zc, A, Y, F, X, **HYPER))
    probs = np.exp(np.array(logps) - max(logps))
    probs /= probs.sum()
    ll0, ll1 = noisy_or_tables(HYPER["lam"], HYPER["eps"], 3)
    cols = np.array([2, 0, 1], dtype=np.int64)
    rng = np.random.default_rng(6)
    a_over_k, sigma_n = HYPER["alpha"] / 3, HYPER["sigma_n"]
    draws = []
    for _ in range(6000):
        Zc = Z.copy()
        R, C, m = caches(Zc, A, Y, F)
        row_block_update(0, cols, 3, Zc, A, Y, X, R, C, m, a_over_k, sigma_n, ll0, ll1, rng)
        np.testing.assert_allclose(R, F - Zc @ A)
        draws.append(Zc[0].copy())
    assert_matches_exact(state_indices(np.array(draws), configs), probs, tv_tol=0.03)

"""The joint row move (shared block + number of singletons) against brute-force enumeration."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from pmctx.ibp.conditionals import log_joint
from pmctx.ibp.joint_row import (
    apply_joint_draw,
    clear_row_block,
    joint_row_log_weights,
    joint_row_update,
    singleton_tables,
)
from pmctx.ibp.kernels import noisy_or_tables, refresh_empty_columns
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.testing import assert_matches_exact, compare_to_exact, state_indices

HYPER = dict(alpha=1.3, sigma_n=0.6, sigma_a=1.1, phi=0.4, lam=0.8, eps=0.1)
K_MAX = 3


def hyper_array():
    h = HYPER
    return np.array(
        [h["alpha"], h["sigma_n"], h["sigma_a"], h["phi"], h["lam"], h["eps"], float(K_MAX)]
    )


def problem(seed, block, free):
    """N=4, K_max=3: rows 1-3 use the block columns, no other row uses the free ones."""
    rng = np.random.default_rng(seed)
    Z = rng.integers(0, 2, size=(4, K_MAX)).astype(np.int64)
    Z[1:, free] = 0
    for k in block:
        Z[1 + (k % 3), k] = 1  # every block column is shared with another row
    A = rng.normal(size=(K_MAX, 2))
    Y = rng.integers(0, 2, size=(K_MAX, 2)).astype(np.int64)
    F = rng.normal(size=(4, 2))
    F[0] += 1.5 * A[block].sum(axis=0)  # row 0 looks like the sum of its block features
    X = rng.integers(0, 2, size=(4, 2)).astype(np.int64)
    return Z, A, Y, F, X


def brute_force(Z, A, Y, F, X, block, free, i=0):
    """log p(z_i,block, z_i,free, Y_free | rest) with A_free integrated, every configuration."""
    sn, sa = HYPER["sigma_n"], HYPER["sigma_a"]
    kept = [k for k in range(K_MAX) if k not in free]
    t_dim = Y.shape[1]
    configs, logps = [], []
    for zb in itertools.product([0, 1], repeat=len(block)):
        for zf in itertools.product([0, 1], repeat=len(free)):
            for ys in itertools.product([0, 1], repeat=len(free) * t_dim):
                Zc, Yc = Z.copy(), Y.copy()
                Zc[i, block], Zc[i, free] = zb, zf
                Yc[free] = np.reshape(ys, (len(free), t_dim))
                mean = Zc[:, kept] @ A[kept]
                cov = sn**2 * np.eye(Z.shape[0]) + sa**2 * Zc[:, free] @ Zc[:, free].T
                lf = sum(
                    stats.multivariate_normal(mean[:, d], cov).logpdf(F[:, d])
                    for d in range(F.shape[1])
                )
                configs.append(np.concatenate([zb, zf, ys]))
                logps.append(lf + log_joint(Zc, A, Yc, None, X, **HYPER))
    logps = np.array(logps)
    probs = np.exp(logps - logps.max())
    return np.array(configs, dtype=np.int64), probs / probs.sum()


CASES = [([0, 1], [2]), ([1], [0, 2]), ([], [0, 1, 2])]


def prepared(seed, block, free):
    Z, A, Y, F, X = problem(seed, block, free)
    R, C, m = np.ascontiguousarray(F - Z @ A), Z @ Y, Z.sum(axis=0)
    ll0, ll1 = noisy_or_tables(HYPER["lam"], HYPER["eps"], K_MAX)
    lk0, lk1 = singleton_tables(ll0, HYPER["lam"], HYPER["phi"])
    return Z, A, Y, F, X, R, C, m, ll0, ll1, lk0, lk1


@pytest.mark.parametrize("block, free", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_joint_weights_match_enumerated_joint(seed, block, free):
    Z, A, Y, F, X, R, C, m, _, _, lk0, lk1 = prepared(seed, block, free)
    configs, probs = brute_force(Z, A, Y, F, X, block, free)
    nb = len(block)
    # Brute-force law of (block configuration, number of free columns owned).
    conf = (configs[:, :nb] * (1 << np.arange(nb))).sum(axis=1).astype(np.int64)
    count = configs[:, nb : nb + len(free)].sum(axis=1)
    want = np.zeros((1 << nb, len(free) + 1))
    np.add.at(want, (conf, count), probs)

    cols = np.array(block + [0] * (K_MAX - nb), dtype=np.int64)
    free_out = np.empty(K_MAX, dtype=np.int64)
    n_free = clear_row_block(0, cols, nb, Z, A, Y, R, C, m, free_out)
    assert sorted(free_out[:n_free]) == free
    logw = joint_row_log_weights(0, cols, nb, n_free, A, Y, X, R, C, m, hyper_array(), lk0, lk1)
    got = np.exp(logw - logw.max())
    np.testing.assert_allclose(got / got.sum(), want, rtol=1e-9, atol=1e-14)


def broken_update(i, cols, nb, free, Z, A, Y, X, R, C, m, hyper, ll0, ll1, lk0, lk1, rng, kind):
    """The joint move with a deliberate error, to show the enumeration test catches it."""
    n_free = clear_row_block(i, cols, nb, Z, A, Y, R, C, m, free)
    logw = joint_row_log_weights(i, cols, nb, n_free, A, Y, X, R, C, m, hyper, lk0, lk1)
    if kind == "no_binomial":  # forget that k of J free columns can be chosen C(J, k) ways
        logw = logw - np.array([np.log(float(math.comb(n_free, k))) for k in range(n_free + 1)])
    elif kind == "a_not_integrated":  # singleton force variance sigma_n^2 instead of + k sigma_A^2
        k = np.arange(n_free + 1)
        rr = 1.0  # any fixed residual: the point is the missing variance term
        v_ok = HYPER["sigma_n"] ** 2 + k * HYPER["sigma_a"] ** 2
        v_bad = np.full(k.shape, HYPER["sigma_n"] ** 2)
        logw = logw + (np.log(v_ok) - np.log(v_bad)) + 0.5 * rr * (1 / v_ok - 1 / v_bad)
    p = np.exp(logw - logw.max()).ravel()
    flat = rng.choice(p.size, p=p / p.sum())
    conf, k_new = divmod(int(flat), n_free + 1)
    apply_joint_draw(i, conf, k_new, cols, nb, free, n_free, Z, A, Y, X, R, C, m, hyper, ll0,
                     ll1, rng)  # fmt: skip


def joint_draws(seed, block, free, n_draws, broken=None):
    Z0, A0, Y0, F, X, *_, ll0, ll1, lk0, lk1 = prepared(seed, block, free)
    nb = len(block)
    cols = np.array(block + [0] * (K_MAX - nb), dtype=np.int64)
    rng = np.random.default_rng(seed + 10)
    hyper = hyper_array()
    draws = []
    for _ in range(n_draws):
        Z, A, Y = Z0.copy(), A0.copy(), Y0.copy()
        R, C, m = np.ascontiguousarray(F - Z @ A), Z @ Y, Z.sum(axis=0)
        free_out = np.empty(K_MAX, dtype=np.int64)
        args = (0, cols, nb, free_out, Z, A, Y, X, R, C, m, hyper, ll0, ll1, lk0, lk1, rng)
        if broken is None:
            joint_row_update(*args)
        else:
            broken_update(*args, broken)
        # Free columns the row did not take are redrawn from the prior at the end of a sweep.
        refresh_empty_columns(A, Y, m, HYPER["sigma_a"], HYPER["phi"], rng)
        draws.append(np.concatenate([Z[0, block], Z[0, free], Y[free].ravel()]))
    np.testing.assert_array_equal(C, Z @ Y)  # caches stay in sync
    np.testing.assert_allclose(R, F - Z @ A)
    return np.array(draws), F, X


@pytest.mark.parametrize("block, free", CASES[:2])
def test_joint_update_draws_the_exact_conditional(block, free):
    Z, A, Y, F, X = problem(2, block, free)
    configs, probs = brute_force(Z, A, Y, F, X, block, free)
    draws, _, _ = joint_draws(2, block, free, 8000)
    assert_matches_exact(state_indices(draws, configs), probs, tv_tol=0.04)


@pytest.mark.parametrize("kind", ["no_binomial", "a_not_integrated"])
def test_enumeration_test_rejects_a_broken_joint_move(kind):
    block, free = CASES[1]
    Z, A, Y, F, X = problem(2, block, free)
    configs, probs = brute_force(Z, A, Y, F, X, block, free)
    draws, _, _ = joint_draws(2, block, free, 8000, broken=kind)
    result = compare_to_exact(state_indices(draws, configs), probs, tv_tol=0.04)
    assert not result.passed, result


def test_joint_move_escapes_the_singleton_trap():
    """A row owning {0, 1, 3} but parked on {1, s} with A_s = A_0 + A_3 leaves at once."""
    rng = np.random.default_rng(0)
    n, k_max = 40, 6
    A_true = np.array([[1.5, 0.0], [0.0, 1.5], [-1.0, 1.0], [1.0, 1.0]])
    Z = (rng.random((n, 4)) < 0.4).astype(np.int64)
    Z[0] = [1, 1, 0, 1]
    F = Z @ A_true + 0.1 * rng.normal(size=(n, 2))
    X = np.zeros((n, 0), dtype=np.int64)
    hyper = IBPHyper(alpha=1.0, sigma_n=0.1, sigma_a=1.0)
    escaped = {}
    for moves in ("legacy", "joint"):
        Zs = np.zeros((n, k_max), dtype=np.int64)
        Zs[:, :4] = Z
        Zs[0] = [0, 1, 0, 0, 1, 0]  # the trap: column 4 is a singleton with A_0 + A_3
        A = np.zeros((k_max, 2))
        A[:4] = A_true
        A[4] = A_true[0] + A_true[3]
        state = IBPState.from_arrays(Zs, A, np.zeros((k_max, 0)))
        sweeps_rng = np.random.default_rng(1)
        hits = 0
        for _ in range(20):
            gibbs_sweep(state, F, X, hyper, sweeps_rng, moves=moves)
            hits += int(state.n_active == 4)
        escaped[moves] = hits
    assert escaped["joint"] >= 18, escaped

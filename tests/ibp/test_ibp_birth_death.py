"""Birth/death move for small features: exact stationarity and detailed balance by enumeration."""

import itertools
import math

import numpy as np
import pytest

from pmctx.ibp.birth_death import birth_death_move, birth_log_ratio
from pmctx.ibp.conditionals import log_joint
from pmctx.ibp.sampler import IBPHyper

H = IBPHyper(alpha=1.4, sigma_n=0.5, sigma_a=1.2, phi=0.35, lam=0.85, eps=0.1)
OPTS = dict(m_max=3, bias=-0.5, g_on=0.8, g_off=0.3)
G_ON, G_OFF, BIAS = OPTS["g_on"], OPTS["g_off"], OPTS["bias"]


def log_target(Z, A, Y, F, X):
    return log_joint(Z, A, Y, F, X, alpha=H.alpha, sigma_n=H.sigma_n, sigma_a=H.sigma_a,
                     phi=H.phi, lam=H.lam, eps=H.eps)  # fmt: skip


def noisy_or_ll(Z, Y, X):
    """Per-row log-likelihood of the cues (written out, independent of the module)."""
    C = Z @ Y
    log_q = C * math.log1p(-H.lam) + math.log1p(-H.eps)
    return np.where(X == 1, np.log(-np.expm1(log_q)), log_q).sum(axis=1)


def proposal_terms(Z, A, Y, F, X, k, a, y):
    """log q(a, y) (mixture over seeds) and per-row join probabilities, recomputed here."""
    keep = np.arange(Z.shape[1]) != k
    R = F - Z[:, keep] @ A[keep]
    C = Z[:, keep] @ Y[keep]
    n = Z.shape[0]
    g = np.where((X == 1) & (C == 0), G_ON, G_OFF)
    lq = []
    for i0 in range(n):
        v = -math.log(n) + np.where(y == 1, np.log(g[i0]), np.log1p(-g[i0])).sum()
        if F.shape[1]:
            s2 = H.sigma_n**2
            v += (-0.5 * (np.log(2 * np.pi * s2)) - (a - R[i0]) ** 2 / (2 * s2)).sum()
        lq.append(v)
    Zk = Z.copy()
    Zk[:, k] = 0
    Z1 = Zk.copy()
    Z1[:, k] = 1
    A1, Y1 = A.copy(), Y.copy()
    A1[k], Y1[k] = a, y
    gain = noisy_or_ll(Z1, Y1, X) - noisy_or_ll(Zk, Y1, X)
    if F.shape[1]:
        r1 = F - Z1 @ A1
        r0 = F - Zk @ A1
        gain += ((r0**2).sum(1) - (r1**2).sum(1)) / (2 * H.sigma_n**2)
    p_join = 1.0 / (1.0 + np.exp(-(gain + BIAS)))
    return np.logaddexp.reduce(lq), p_join


def state_space(n, k_max):
    """Every (Z, Y) with D = 0 and T = 1."""
    out = []
    for zb in itertools.product([0, 1], repeat=n * k_max):
        for yb in itertools.product([0, 1], repeat=k_max):
            out.append((np.array(zb).reshape(n, k_max), np.array(yb).reshape(k_max, 1)))
    return out


def transition_matrix(states, X, broken=None):
    """The move's exact kernel over (Z, Y), D = 0, built from its proposal law."""
    index = {(z.tobytes(), yy.tobytes()): j for j, (z, yy) in enumerate(states)}
    n, k_max = states[0][0].shape
    F, A = np.zeros((n, 0)), np.zeros((k_max, 0))
    P = np.zeros((len(states), len(states)))
    for j, (Z, Y) in enumerate(states):
        m = Z.sum(axis=0)
        empty = np.flatnonzero(m == 0)
        small = np.flatnonzero((m >= 2) & (m <= OPTS["m_max"]))
        for k in empty:
            for yv in (0, 1):
                y = np.array([yv])
                log_q, p_join = proposal_terms(Z, A, Y, F, X, k, np.zeros(0), y)
                for S in itertools.product([0, 1], repeat=n):
                    S = np.flatnonzero(S)
                    if not 2 <= S.size <= OPTS["m_max"]:
                        continue
                    inside = np.isin(np.arange(n), S)
                    p_s = np.prod(np.where(inside, p_join, 1 - p_join))
                    prob = 0.5 / empty.size * math.exp(log_q) * p_s
                    lr = birth_log_ratio(Z, A, Y, F, X, k, S, np.zeros(0), y, H, **OPTS,
                                         broken=broken)  # fmt: skip
                    Z2, Y2 = Z.copy(), Y.copy()
                    Z2[S, k], Y2[k] = 1, y
                    P[j, index[Z2.tobytes(), Y2.tobytes()]] += prob * min(1.0, math.exp(lr))
        for k in small:
            S = np.flatnonzero(Z[:, k])
            before = Z.copy()
            before[:, k] = 0
            lr = -birth_log_ratio(before, A, Y, F, X, k, S, np.zeros(0), Y[k], H, **OPTS,
                                  broken=broken)  # fmt: skip
            for yv in (0, 1):
                Y2 = Y.copy()
                Y2[k] = yv
                prior = H.phi if yv else 1 - H.phi
                P[j, index[before.tobytes(), Y2.tobytes()]] += (
                    0.5 / small.size * prior * min(1.0, math.exp(lr))
                )
        P[j, j] += 1.0 - P[j].sum()
    return P


@pytest.fixture(scope="module")
def tiny():
    X = np.array([[1], [0], [1]])
    states = state_space(3, 2)
    F, A = np.zeros((3, 0)), np.zeros((2, 0))
    logp = np.array([log_target(Z, A, Y, F, X) for Z, Y in states])
    pi = np.exp(logp - logp.max())
    return states, X, pi / pi.sum()


def test_move_leaves_the_enumerated_posterior_invariant(tiny):
    states, X, pi = tiny
    P = transition_matrix(states, X)
    assert np.all(P >= -1e-15)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    flux = pi[:, None] * P
    np.testing.assert_allclose(flux, flux.T, atol=1e-13)  # detailed balance, every pair
    np.testing.assert_allclose(pi @ P, pi, atol=1e-13)
    assert (P - np.diag(np.diag(P))).sum(axis=1).max() > 0.05  # the move does move


def test_broken_ratio_fails_the_enumeration(tiny):
    states, X, pi = tiny
    P = transition_matrix(states, X, broken="no_row_set")
    assert np.abs(pi @ P - pi).max() > 1e-3


def test_sampled_moves_follow_the_enumerated_kernel(tiny):
    states, X, _ = tiny
    P = transition_matrix(states, X)
    index = {(z.tobytes(), yy.tobytes()): j for j, (z, yy) in enumerate(states)}
    Z0, Y0 = np.array([[1, 0], [1, 0], [0, 0]]), np.array([[1], [0]])
    j0 = index[Z0.tobytes(), Y0.tobytes()]
    rng = np.random.default_rng(0)
    counts = np.zeros(len(states))
    n_draws = 20000
    for _ in range(n_draws):
        Z, Y, A = Z0.copy(), Y0.copy(), np.zeros((2, 0))
        birth_death_move(Z, A, Y, np.zeros((3, 0)), X, H, rng, **OPTS)
        counts[index[Z.tobytes(), Y.tobytes()]] += 1
    tv = 0.5 * np.abs(counts / n_draws - P[j0]).sum()
    assert tv < 0.02, tv


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("broken", [None, "no_row_set"])
def test_detailed_balance_with_continuous_forces(seed, broken):
    """N = 4, K_max = 3, D = 1, T = 2: pi(x) q(x -> x') a = pi(x') q(x' -> x) a' pointwise."""
    rng = np.random.default_rng(seed)
    n, k_max = 4, 3
    Z = rng.integers(0, 2, size=(n, k_max))
    Z[:, 2] = 0
    A, Y = rng.normal(size=(k_max, 1)), rng.integers(0, 2, size=(k_max, 2))
    F, X = rng.normal(size=(n, 1)), rng.integers(0, 2, size=(n, 2))
    k, a, y = 2, rng.normal(size=1), np.array([1, 0])
    mismatch = []
    for S in ([0, 1], [1, 2, 3], [0, 3]):
        S = np.array(S)
        Z2, A2, Y2 = Z.copy(), A.copy(), Y.copy()
        Z2[S, k], A2[k], Y2[k] = 1, a, y
        m, m2 = Z.sum(0), Z2.sum(0)
        log_q, p_join = proposal_terms(Z, A, Y, F, X, k, a, y)
        inside = np.isin(np.arange(n), S)
        fwd = math.log(0.5 / (m == 0).sum()) + log_q
        fwd += np.log(np.where(inside, p_join, 1 - p_join)).sum()
        small2 = ((m2 >= 2) & (m2 <= OPTS["m_max"])).sum()
        rev = math.log(0.5 / small2) - 0.5 * math.log(2 * math.pi * H.sigma_a**2)
        rev += -(A[k, 0] ** 2) / (2 * H.sigma_a**2)
        rev += np.where(Y[k] == 1, math.log(H.phi), math.log1p(-H.phi)).sum()
        lr = birth_log_ratio(Z, A, Y, F, X, k, S, a, y, H, **OPTS, broken=broken)
        lhs = log_target(Z, A, Y, F, X) + fwd + min(0.0, lr)
        rhs = log_target(Z2, A2, Y2, F, X) + rev + min(0.0, -lr)
        mismatch.append(abs(lhs - rhs))
    if broken is None:
        assert max(mismatch) < 1e-9, mismatch
    else:
        assert max(mismatch) > 1e-3, mismatch


def test_validates_m_max():
    with pytest.raises(ValueError, match="m_max"):
        birth_death_move(np.zeros((2, 2), int), np.zeros((2, 0)), np.zeros((2, 0), int),
                         np.zeros((2, 0)), np.zeros((2, 0), int), H, np.random.default_rng(0),
                         m_max=1)  # fmt: skip

"""A user's own variables composed with pmctx models under plain ``pm.sample()``.

Each test declares a hyperprior in an enclosing ``pm.Model``, builds the pmctx model inside
it with that variable in place of a fixed hyperparameter, and samples with
``pm.sample()`` without naming steps: the pmctx step runs for the latents it owns (reading
the hyperparameter from the current point) and PyMC's NUTS for the user's variable. The
posterior is compared with the exact answer by enumeration of the latents and quadrature
over the hyperparameter. Tolerance: 4 Monte Carlo standard errors (ArviZ ``mcse``) plus
0.01; fixed seeds.
"""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pmctx.models import crp_conditioning, ibp, vonmises_map
from scipy.special import betaln, gammaln, i0e, logsumexp
from scipy.stats import gamma, halfnorm

from pmctx.steps.registration import assigned_steps

pytestmark = pytest.mark.slow


def _sample(model, draws=1500, seed=1):
    with model:
        return pm.sample(draws=draws, tune=300, chains=2, cores=1, random_seed=seed,
                         progressbar=False, compute_convergence_checks=False)  # fmt: skip


def _assert_close(samples, exact, label):
    samples = np.asarray(samples, dtype=np.float64)
    mcse = float(np.ravel(az.mcse(samples.reshape(samples.shape[0], -1)))[0])
    assert abs(samples.mean() - exact) < 4 * mcse + 0.01, (label, samples.mean(), exact, mcse)


# ---------------------------------------------------------------- CRP: Gamma prior on alpha

F_CRP = np.array([[1, 1], [1, 1], [0, 0], [1, 0]])
K_CRP = 3


def _crp_exact(grid):
    """E[alpha | F] and P(n_occupied = k | F) by enumerating z and quadrature over alpha."""
    prior = gamma(a=2.0, scale=0.5).logpdf(grid)
    n_trials = F_CRP.shape[0]
    zs = (
        np.array(np.meshgrid(*[np.arange(K_CRP)] * n_trials, indexing="ij")).reshape(n_trials, -1).T
    )
    logp = np.empty((len(zs), len(grid)))
    for i, z in enumerate(zs):
        n_k = np.bincount(z, minlength=K_CRP)
        a = grid / K_CRP
        log_prior_z = gammaln(grid) - gammaln(grid + n_trials)
        log_prior_z = log_prior_z + np.sum(gammaln(n_k[:, None] + a) - gammaln(a), axis=0)
        onehot = (z[:, None] == np.arange(K_CRP)).astype(float)  # counts, not boolean OR
        ones, zeros = onehot.T @ (F_CRP == 1).astype(float), onehot.T @ (F_CRP == 0).astype(float)
        log_lik = np.sum(betaln(ones + 1.0, zeros + 1.0) - betaln(1.0, 1.0))
        logp[i] = prior + log_prior_z + log_lik
    w = np.exp(logp - logsumexp(logp))
    occupied = np.array([len(set(z)) for z in zs])
    p_occ = {k: float(w[occupied == k].sum()) for k in range(1, K_CRP + 1)}
    return float((w.sum(axis=0) * grid).sum()), p_occ


def test_crp_with_gamma_hyperprior_on_alpha_matches_exact():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", alpha=2.0, beta=2.0)
        crp_conditioning.build_model(F_CRP, alpha=alpha, max_causes=K_CRP)
    assert sorted(assigned_steps(model)) == ["CRPCollapsedGibbs", "NUTS"]
    idata = _sample(model, draws=2000)
    mean_alpha, p_occ = _crp_exact(np.linspace(1e-4, 15.0, 6000))
    _assert_close(idata.posterior["alpha"].values, mean_alpha, "E[alpha]")
    occupied = idata.sample_stats["n_occupied"].values
    for k, p in p_occ.items():
        _assert_close((occupied == k).astype(float), p, f"P(n_occupied={k})")


# ---------------------------------------------------------------- von Mises: prior on kappa_obs

Z_VM = np.array([[0.3, 1.2, -0.4]])
KAPPA, RANK = 1.5, 2


def _vonmises_exact(n_angle=40, n_kappa=160):
    o = np.linspace(-np.pi, np.pi, n_angle, endpoint=False)
    k = np.linspace(1e-3, 25.0, n_kappa)
    phases = 2.0 * np.pi * np.arange(RANK + 1) / (RANK + 1)

    def log_psi(a, b):
        return logsumexp(
            KAPPA * (np.cos(a[..., None] - phases) + np.cos(b[..., None] - phases)), -1
        )

    o1, o2, o3 = np.meshgrid(o, o, o, indexing="ij")
    log_mrf = log_psi(o1, o2) + log_psi(o2, o3)
    cos = [np.cos(Z_VM[0, i] - oi) for i, oi in enumerate((o1, o2, o3))]
    total = (cos[0] + cos[1] + cos[2])[..., None] * k  # (o, o, o, kappa)
    log_norm = -3 * (np.log(2 * np.pi * i0e(k)) + k)
    logp = log_mrf[..., None] + total + log_norm + gamma(a=3.0).logpdf(k)
    w = np.exp(logp - logsumexp(logp))
    return float((w.sum(axis=(0, 1, 2)) * k).sum()), float((w.sum(axis=3) * cos[0]).sum())


def test_vonmises_with_prior_on_kappa_obs_matches_exact():
    with pm.Model() as model:
        kappa_obs = pm.Gamma("kappa_obs", alpha=3.0, beta=1.0)
        vonmises_map.build_model(Z_VM, kappa=KAPPA, kappa_obs=kappa_obs, rank=RANK)
    assert sorted(assigned_steps(model)) == ["AugmentedVonMisesGibbs", "NUTS"]
    idata = _sample(model, draws=2000)
    mean_kappa, mean_cos = _vonmises_exact()
    _assert_close(idata.posterior["kappa_obs"].values, mean_kappa, "E[kappa_obs]")
    cos = np.cos(Z_VM[0, 0] - idata.posterior["o"].values[:, :, 0, 0])
    _assert_close(cos, mean_cos, "E[cos(z - o)]")


# ---------------------------------------------------------------- IBP: prior on the force noise

F_IBP = np.array([[1.2], [1.0], [-0.1]])
K_IBP, ALPHA, SIGMA_A = 2, 1.0, 1.0


def _ibp_exact(grid):
    """E[sigma_n | F], P(n_active = k | F): enumerate Z, integrate A and pi analytically."""
    n = F_IBP.shape[0]
    a = ALPHA / K_IBP
    states = np.array(np.meshgrid(*[[0, 1]] * (n * K_IBP), indexing="ij")).reshape(n * K_IBP, -1).T
    prior = halfnorm(scale=1.0).logpdf(grid)
    logp, active = [], []
    for bits in states:
        Z = bits.reshape(n, K_IBP)
        m = Z.sum(axis=0)
        log_pz = np.sum(betaln(a + m, n - m + 1.0) - betaln(a, 1.0))
        cov = SIGMA_A**2 * Z @ Z.T
        row = []
        for s in grid:
            c = cov + s**2 * np.eye(n)
            _, logdet = np.linalg.slogdet(c)
            quad = F_IBP[:, 0] @ np.linalg.solve(c, F_IBP[:, 0])
            row.append(-0.5 * (logdet + quad + n * np.log(2 * np.pi)))
        logp.append(prior + log_pz + np.array(row))
        active.append(int((m > 0).sum()))
    logp, active = np.array(logp), np.array(active)
    w = np.exp(logp - logsumexp(logp))
    p_active = {k: float(w[active == k].sum()) for k in range(K_IBP + 1)}
    return float((w.sum(axis=0) * grid).sum()), p_active


def test_ibp_with_user_prior_on_sigma_n_matches_exact():
    with pm.Model() as model:
        sigma_n = pm.HalfNormal("sigma_n", 1.0)
        ibp.build_model(F=F_IBP, K_max=K_IBP, alpha=ALPHA, sigma_A=SIGMA_A, sigma_n=sigma_n)
    assert sorted(assigned_steps(model)) == ["IBPGibbs", "NUTS"]
    idata = _sample(model, draws=2000)
    mean_sigma, p_active = _ibp_exact(np.linspace(1e-3, 5.0, 800))
    _assert_close(idata.posterior["sigma_n"].values, mean_sigma, "E[sigma_n]")
    n_active = idata.posterior["n_active"].values
    for k, p in p_active.items():
        _assert_close((n_active == k).astype(float), p, f"P(n_active={k})")


# -------------------------------------------------- IBP: regression of F on a covariate

COVARIATE = np.array([1.0, -0.5, 0.8])
SIGMA_BETA, SIGMA_N_REG = 1.0, 0.5


def _ibp_regression_exact():
    """E[beta | F], P(n_active = k | F): enumerate Z; A and beta are Gaussian given Z, so
    F | Z ~ N(0, sigma_A^2 Z Z^T + sigma_beta^2 c c^T + sigma_n^2 I) and
    E[beta | F, Z] = sigma_beta^2 c^T Sigma_Z^-1 F."""
    n = F_IBP.shape[0]
    a = ALPHA / K_IBP
    states = np.array(np.meshgrid(*[[0, 1]] * (n * K_IBP), indexing="ij")).reshape(n * K_IBP, -1).T
    logp, beta_mean, active = [], [], []
    for bits in states:
        Z = bits.reshape(n, K_IBP)
        m = Z.sum(axis=0)
        cov = SIGMA_A**2 * Z @ Z.T + SIGMA_BETA**2 * np.outer(COVARIATE, COVARIATE)
        cov += SIGMA_N_REG**2 * np.eye(n)
        _, logdet = np.linalg.slogdet(cov)
        solved = np.linalg.solve(cov, F_IBP[:, 0])
        log_pz = np.sum(betaln(a + m, n - m + 1.0) - betaln(a, 1.0))
        logp.append(log_pz - 0.5 * (logdet + F_IBP[:, 0] @ solved))
        beta_mean.append(SIGMA_BETA**2 * COVARIATE @ solved)
        active.append(int((m > 0).sum()))
    logp, active = np.array(logp), np.array(active)
    w = np.exp(logp - logsumexp(logp))
    p_active = {k: float(w[active == k].sum()) for k in range(K_IBP + 1)}
    return float(w @ np.array(beta_mean)), p_active


def test_ibp_with_user_regression_of_forces_on_a_covariate_matches_exact():
    # The user's coefficient enters the force mean (F_offset); IBPGibbs keeps Z, pi, A and
    # reads the offset from the point, NUTS samples the coefficient.
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, SIGMA_BETA)
        ibp.build_model(F=F_IBP, K_max=K_IBP, alpha=ALPHA, sigma_A=SIGMA_A,
                        sigma_n=SIGMA_N_REG, F_offset=COVARIATE[:, None] * beta)  # fmt: skip
    steps = assigned_steps(model)
    assert sorted(steps["IBPGibbs"]) == ["A", "Z", "pi"] and steps["NUTS"] == ["beta"]
    idata = _sample(model, draws=2000)
    mean_beta, p_active = _ibp_regression_exact()
    _assert_close(idata.posterior["beta"].values, mean_beta, "E[beta]")
    n_active = idata.posterior["n_active"].values
    for k, p in p_active.items():
        _assert_close((n_active == k).astype(float), p, f"P(n_active={k})")

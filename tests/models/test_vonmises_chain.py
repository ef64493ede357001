"""Chain smoother for angular time series: exact marginals, exact draws, learned concentrations.

References are quadrature on a fine periodic grid (midpoint rule, spectrally accurate) of the
joint of a 3-sample chain. (The learned concentrations' collapsed update is checked in
tests/vonmises/test_vonmises_chain_collapsed.py.)
"""

import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_chain import (
    build_model,
    default_steps,
    posterior_marginals,
    simulate,
    smooth,
    smoothing_marginals,
)
from scipy.special import logsumexp

from pmctx.testing import assert_matches_exact
from pmctx.vonmises.chain import (
    CHAIN_KAPPA_PRIOR,
    chain_log_normaliser,
    chain_marginals,
    sample_chain,
)
from pmctx.vonmises.hyper import (
    kappa_obs_log_conditional,
    kappa_obs_statistics,
    log_gamma_density,
)
from pmctx.vonmises.potentials import log_edge_potential, natural_field
from tests.oracles.vonmises_exact import bin_index


def chain_kappa_log_conditional(kappa, x, rank):
    """Unnormalised ``log p(kappa | x)``: prior + edge potentials - ``log Z_T(kappa)``."""
    x = np.asarray(x, dtype=np.float64)
    edges = np.sum(log_edge_potential(x[:-1], x[1:], kappa, rank))
    prior = log_gamma_density(kappa, *CHAIN_KAPPA_PRIOR)
    return float(prior + edges - chain_log_normaliser(kappa, rank, x.size))


KAPPA, RANK, POINTS = 2.0, 3, 96
Y = np.array([0.4, np.nan, -2.5])
SIGNAL = np.array([1.0, 1.0, 2.0])
FIELD = natural_field(np.nan_to_num(Y), ~np.isnan(Y), 1.5, signal=SIGNAL)


def quadrature(field, kappa, rank, points=POINTS):
    """Normalised joint density of a 3-sample chain on a points^3 midpoint grid."""
    a = -np.pi + (np.arange(points) + 0.5) * 2.0 * np.pi / points
    unit = np.stack([np.cos(a), np.sin(a)], axis=-1)
    log_psi = log_edge_potential(a[:, None], a[None, :], kappa, rank)
    lp = (
        (unit @ field[0])[:, None, None]
        + (unit @ field[1])[None, :, None]
        + (unit @ field[2])[None, None, :]
        + log_psi[:, :, None]
        + log_psi[None, :, :]
    )
    log_z = logsumexp(lp) + 3 * np.log(2 * np.pi / points)
    return np.exp(lp - logsumexp(lp)), log_z, a


def test_marginals_and_evidence_equal_quadrature():
    joint, log_z, _ = quadrature(FIELD, KAPPA, RANK)
    _, density, log_evidence = chain_marginals(FIELD, KAPPA, RANK, n_angles=POINTS)
    bin_width = 2 * np.pi / POINTS
    np.testing.assert_allclose(log_evidence, log_z, atol=1e-10)
    for t, axes in enumerate([(1, 2), (0, 2), (0, 1)]):
        np.testing.assert_allclose(density[t], joint.sum(axis=axes) / bin_width, atol=1e-10)


@pytest.mark.parametrize(("kappa", "rank"), [(0.5, 1), (2.0, 3), (6.0, 8)])
def test_closed_form_normaliser(kappa, rank):
    _, log_z, _ = quadrature(np.zeros((3, 2)), kappa, rank, points=128)
    np.testing.assert_allclose(chain_log_normaliser(kappa, rank, 3), log_z, rtol=1e-11)
    _, _, log_z50 = chain_marginals(np.zeros((50, 2)), kappa, rank)
    np.testing.assert_allclose(chain_log_normaliser(kappa, rank, 50), log_z50, rtol=1e-11)


def test_ffbs_draws_match_quadrature_bins():
    joint, _, _ = quadrature(FIELD, KAPPA, RANK, points=48)
    probs = joint.reshape(3, 16, 3, 16, 3, 16).sum(axis=(1, 3, 5)).ravel()
    rng = np.random.default_rng(3)
    draws = np.array([sample_chain(FIELD, KAPPA, RANK, rng)[0] for _ in range(6000)])
    assert_matches_exact(bin_index(draws[:, None, :], 3), probs, tv_tol=0.03)


@pytest.mark.slow  # compiling the model's logp (Bessel function in C) takes ~30 s
def test_model_logp_is_the_kernels_target():
    model = build_model(Y, kappa="prior", kappa_obs="prior", rank=RANK, signal=SIGNAL)
    logp = model.compile_logp()
    rng = np.random.default_rng(0)
    gaps = []
    for _ in range(4):
        x = rng.uniform(-np.pi, np.pi, 3)
        kappa, kappa_obs = rng.gamma(2.0, 2.0, size=2)
        point = {
            "x_circular__": x,
            "kappa_log__": np.log(kappa),
            "kappa_obs_log__": np.log(kappa_obs),
        }
        stats = kappa_obs_statistics(x, np.nan_to_num(Y), ~np.isnan(Y), SIGNAL)
        kernel = (
            chain_kappa_log_conditional(kappa, x, RANK)
            + kappa_obs_log_conditional(kappa_obs, stats)
            + np.log(kappa * kappa_obs)  # log-transform Jacobians
        )
        gaps.append(logp(point) - kernel)
    np.testing.assert_allclose(gaps, gaps[0], atol=1e-8)


def test_smooth_learns_and_marginals_track_the_truth():
    x, y = simulate(120, kappa=4.0, kappa_obs=3.0, rank=6, missing=0.3, random_seed=4)
    # random_seed=0 and no convergence report: what smooth() did before it took pm.sample's
    # defaults (random_seed=None, check_convergence=True); one short chain is the point here.
    idata = smooth(y, rank=6, draws=150, tune=50, chains=1, random_seed=0, check_convergence=False)
    assert {"kappa", "kappa_obs", "x"} <= set(idata.posterior.data_vars)
    assert "y" in idata.log_likelihood
    angles, density, mean, sd = posterior_marginals(idata, y, rank=6, n_draws=10)
    np.testing.assert_allclose(density.sum(axis=1) * (angles[1] - angles[0]), 1.0)
    # As close to the truth as the exact smoother that knows the generating concentrations.
    _, oracle = smoothing_marginals(y, kappa=4.0, kappa_obs=3.0, rank=6)
    oracle_mean = np.angle((oracle * np.exp(1j * angles)).sum(axis=1))
    assert np.mean(np.cos(mean - x)) > np.mean(np.cos(oracle_mean - x)) - 0.03
    assert np.all((sd > 0) & (sd < 2.0))


def test_fixed_concentrations_use_only_the_ffbs_step():
    model = build_model(Y, kappa=1.0, kappa_obs=1.0, rank=2)
    with model:
        steps = default_steps(model)
        assert [s.name for s in steps] == ["vonmises_chain_ffbs"]
        idata = pm.sample(
            draws=20,
            tune=5,
            chains=1,
            step=steps,
            random_seed=0,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert idata.posterior["x"].shape == (1, 20, 3)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="at least 2"):
        build_model(np.array([0.1]))
    with pytest.raises(ValueError, match="radians"):
        build_model(np.array([0.1, 9.0]))
    with pytest.raises(ValueError, match="'prior'"):
        build_model(np.array([0.1, 0.2]), kappa="learn")
    with pytest.raises(ValueError, match="signal"):
        build_model(np.array([0.1, 0.2]), signal=[1.0, 0.0])
    with pytest.raises(ValueError, match="mask"):
        build_model(np.array([0.1, np.nan]), mask=[1, 1])


def test_empty_or_one_sample_series_are_rejected_before_sampling():
    with pytest.raises(ValueError, match=r"y must have at least 2 samples .*got no entries"):
        smooth(np.empty(0), draws=5, tune=5, chains=1)
    with pytest.raises(ValueError, match=r"y must have at least 2 samples .*got 1: .*Pass 2 or"):
        build_model([0.3])
    with pytest.raises(TypeError, match="y must hold real numbers.*numeric values were expected"):
        smooth(["a"] * 5, draws=5, tune=5, chains=1)

"""SpectralFieldHMC: the band-pass model's step delegates to the exact HMC kernel.

The kernel's stationary law is tested against importance sampling in
``tests/vonmises/test_vonmises_spectral.py``; here: the step is that kernel under the
change of variables ``u = F nu``, and the ``pm.Model`` declares the kernel's target
(log densities differ by a constant between points).
"""

import numpy as np
import pytest
import scipy.fft
from pmctx.models.vonmises_spectral import build_spectral_model, sample_spectral_model

from pmctx.steps.vonmises_spectral import SpectralFieldHMC
from pmctx.vonmises.spectral import CURVATURE, TRAJECTORY
from pmctx.vonmises.spectral_hmc import hmc_move, potential_and_gradient


def _theta(seed=0, size=6):
    rng = np.random.default_rng(seed)
    z = rng.vonmises(np.zeros((size, size)), 3.0)
    theta = np.mod(z, 2 * np.pi) / 2
    theta[rng.random(theta.shape) < 0.3] = np.nan
    return theta


def _kernel_args(model, kappa_obs):
    spectrum = model["spectrum"].get_value()
    observed = model["obs_mask"].get_value().astype(bool)
    z = model["z_filled"].get_value()[observed]
    rows, cols = np.nonzero(observed)
    obs = rows * spectrum.shape[1] + cols
    return spectrum, (np.sqrt(spectrum), obs, np.cos(z), np.sin(z), kappa_obs)


def test_step_is_the_kernel_move_in_white_noise_coordinates():
    model = build_spectral_model(_theta(), spacing=3.0, kappa_obs=2.5)
    rng = np.random.default_rng(1)
    nu = rng.normal(0, np.sqrt(0.5), size=model["nu"].type.shape)
    with model:
        step = SpectralFieldHMC(rng=7, step_size=0.2)
    new, stats = step.step({"nu": nu})
    spectrum, args = _kernel_args(model, 2.5)
    u = scipy.fft.fft2(nu[0] + 1j * nu[1], norm="ortho")
    replay = np.random.default_rng(7)
    jitter = 0.2 * replay.uniform(0.9, 1.1)
    mass = 2.0 + spectrum * (CURVATURE * 2.5 * args[1].size / spectrum.size)
    n_leap = int(np.ceil(TRAJECTORY / 0.2))
    state, prob = hmc_move(potential_and_gradient(u, *args), *args, mass, jitter, n_leap, replay)
    expected = scipy.fft.ifft2(state.u, norm="ortho")
    np.testing.assert_allclose(new["nu"], np.stack([expected.real, expected.imag]), atol=1e-12)
    assert stats[0]["accept"] == pytest.approx(prob)
    assert stats[0]["n_leap"] == n_leap


def test_step_refuses_other_models_and_variables():
    import pymc as pm

    with pm.Model(), pytest.raises(ValueError, match="build_spectral_model"):
        pm.Normal("x")
        SpectralFieldHMC()
    model = build_spectral_model(_theta(), spacing=3.0)
    with model, pytest.raises(ValueError, match="updates nu only"):
        SpectralFieldHMC(vars=[model["kappa_obs"]])
    with pytest.raises(ValueError, match="one number of pixels"):
        build_spectral_model(_theta(), spacing=[3.0, 4.0])


@pytest.mark.slow
def test_model_logp_is_the_kernel_target_and_pm_sample_runs():
    # About 10 s (PyTensor compiles the model).
    model = build_spectral_model(_theta(size=8), spacing=4.0, kappa_obs=2.0)
    logp = model.compile_logp()
    _, args = _kernel_args(model, 2.0)
    rng = np.random.default_rng(3)
    values = []
    for _ in range(3):
        nu = rng.normal(0, np.sqrt(0.5), size=model["nu"].type.shape)
        u = scipy.fft.fft2(nu[0] + 1j * nu[1], norm="ortho")
        values.append(logp({"nu": nu}) + potential_and_gradient(u, *args).potential)
    np.testing.assert_allclose(values, values[0], rtol=1e-9)
    learned = build_spectral_model(_theta(size=8), spacing=4.0)
    idata = sample_spectral_model(learned, draws=20, tune=20, random_seed=4)
    assert idata.posterior["theta"].shape == (1, 20, 8, 8)
    assert np.all(np.isfinite(idata.posterior["o"].values))
    assert 0.0 < float(idata.sample_stats["accept"].mean()) <= 1.0
    assert np.ptp(idata.posterior["kappa_obs"].values) > 0

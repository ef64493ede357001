"""The band-pass (spectral) orientation prior: prior draws, exact samplers, spacing CV.

Stationarity tests use a 3 x 2 torus with three observed pixels at fixed ``kappa_obs``:
the exact posterior of the doubled angles is approximated by importance sampling with
200,000 prior draws (weights ``exp(kappa sum cos(z - arg w))``), and the chain's joint
histogram of two angles (4 x 4 cells) is compared with it cell by cell; the standard error
of each chain frequency comes from batch means (20 batches), that of the reference from
its effective sample size. A chain run at a wrong ``kappa_obs`` (twice the target's) must
fail the same comparison, so the test has the power to see a wrong kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import vonmises

from pmctx.vonmises.average import stacking_weights
from pmctx.vonmises.select import heldout_log_predictive
from pmctx.vonmises.spectral import (
    estimate_spacing,
    padded_shape,
    prior_draws,
    ring_spectrum,
    spectral_covariance,
    spectral_posterior,
    spectral_start,
)
from pmctx.vonmises.spectral_cv import (
    COARSE_RATIOS,
    RESCORE_WEIGHT,
    cross_validate_spacing,
    spacing_grid,
    torus_for,
)
from pmctx.vonmises.spectral_hmc import hmc_move, potential_and_gradient, whiten

TORUS = (3, 2)
KAPPA = 1.5
Z = np.array([[0.3, np.nan], [-2.0, np.nan], [np.nan, 1.2]])
OBSERVED = ~np.isnan(Z)
Z0 = np.nan_to_num(Z)
CELL_PIXELS = ((0, 1), (0, 0))  # a missing and an observed pixel
N_BINS = 4


def _spectrum():
    return ring_spectrum(TORUS, 2.0, width=0.5, floor=0.3)


def _cells(angles):
    """Joint 4 x 4 bin index of the two pixels' angles, per draw."""
    a = angles[:, CELL_PIXELS[0][0], CELL_PIXELS[0][1]]
    b = angles[:, CELL_PIXELS[1][0], CELL_PIXELS[1][1]]
    ia = np.floor((a + np.pi) / (2 * np.pi) * N_BINS).astype(int) % N_BINS
    ib = np.floor((b + np.pi) / (2 * np.pi) * N_BINS).astype(int) % N_BINS
    return ia * N_BINS + ib


def _reference():
    rng = np.random.default_rng(11)
    w = prior_draws(_spectrum(), 200_000, rng)
    angles = np.angle(w)
    loglik = KAPPA * np.sum(np.cos(Z0[OBSERVED] - angles[:, OBSERVED]), axis=1)
    weight = np.exp(loglik - loglik.max())
    weight /= weight.sum()
    p = np.bincount(_cells(angles), weights=weight, minlength=N_BINS**2)
    ess = 1.0 / np.sum(weight**2)
    return p, ess


def _max_z(draws, p_ref, ess_ref, n_batches=20):
    cells = _cells(draws)
    batches = np.array_split(cells, n_batches)
    freq = np.array([np.bincount(b, minlength=N_BINS**2) / len(b) for b in batches])
    p_hat = freq.mean(axis=0)
    var_hat = freq.var(axis=0, ddof=1) / n_batches
    var_ref = p_ref * (1 - p_ref) / ess_ref
    return float(np.max(np.abs(p_hat - p_ref) / np.sqrt(var_hat + var_ref + 1e-12)))


@pytest.fixture(scope="module")
def reference():
    return _reference()


@pytest.mark.slow
def test_sampler_matches_importance_sampling(reference):
    # About 2-4 CPU s (both chains). 16 cells: under exactness each |z| is about
    # standard normal; 4.5 bounds the maximum of 16 with probability > 0.9999. The
    # wrong-kappa chain's maximum |z| is far above it (about 14).
    p_ref, ess_ref = reference
    spectrum = _spectrum()
    o, _ = spectral_posterior(
        Z0,
        OBSERVED,
        spectrum,
        draws=4000,
        tune=200,
        kappa_obs=KAPPA,
        random_seed=3,
    )
    assert _max_z(o, p_ref, ess_ref) < 4.5
    wrong, _ = spectral_posterior(
        Z0,
        OBSERVED,
        spectrum,
        draws=4000,
        tune=200,
        kappa_obs=2 * KAPPA,
        random_seed=3,
    )
    assert _max_z(wrong, p_ref, ess_ref) > 6.0


def test_prior_draws_have_the_spectrum_covariance():
    # E[w_x conj(w_0)] = ifft2(S)[x]; E[w_x w_0] = 0. 20,000 draws: standard error of each
    # estimate about sqrt(C(0)^2 / 20000) ~ 0.008 C(0); 5 standard errors allowed.
    spectrum = ring_spectrum((6, 5), 3.0, floor=0.05)
    w = prior_draws(spectrum, 20_000, np.random.default_rng(0))
    cov = np.mean(w * np.conj(w[:, :1, :1]), axis=0)
    pseudo = np.mean(w * w[:, :1, :1], axis=0)
    exact = spectral_covariance(spectrum)
    se = exact[0, 0].real / np.sqrt(len(w))
    assert np.max(np.abs(cov - exact)) < 5 * se
    assert np.max(np.abs(pseudo)) < 5 * se
    assert exact[0, 0].real == pytest.approx(spectrum.mean())


def test_hmc_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    spectrum = ring_spectrum((6, 6), 3.0, floor=0.1)
    root = np.sqrt(spectrum)
    obs = np.array([0, 7, 13, 22])
    z = rng.uniform(-np.pi, np.pi, obs.size)
    u = rng.normal(size=(6, 6)) + 1j * rng.normal(size=(6, 6))
    state = potential_and_gradient(u, root, obs, np.cos(z), np.sin(z), 2.0)
    for index in [(0, 0), (2, 3), (5, 1)]:
        for direction, part in ((1.0, "real"), (1j, "imag")):
            shifted = u.copy()
            shifted[index] += 1e-6 * direction
            up = potential_and_gradient(shifted, root, obs, np.cos(z), np.sin(z), 2.0)
            fd = (up.potential - state.potential) / 1e-6
            assert fd == pytest.approx(getattr(state.gradient[index], part), rel=1e-4, abs=1e-5)


def test_hmc_move_is_reversible_at_zero_accept_risk():
    # A move either returns the old state or one whose potential is finite.
    rng = np.random.default_rng(2)
    spectrum = ring_spectrum((6, 6), 3.0)
    root = np.sqrt(spectrum)
    obs = np.arange(0, 36, 3)
    z = rng.uniform(-np.pi, np.pi, obs.size)
    args = (root, obs, np.cos(z), np.sin(z), 2.0)
    state = potential_and_gradient(whiten(prior_draws(spectrum, 1, rng)[0], root), *args)
    new, prob = hmc_move(state, *args, 2.0 + spectrum, 0.1, 5, rng)
    assert 0.0 <= prob <= 1.0 and np.isfinite(new.potential)


def test_estimate_spacing_finds_a_plane_wave_and_a_bandpass_map():
    _, x = np.indices((40, 40))
    assert estimate_spacing(2 * np.pi * x / 10.0, np.ones((40, 40), bool)) == pytest.approx(
        10.0, rel=0.05
    )
    rng = np.random.default_rng(5)
    w = prior_draws(ring_spectrum((64, 64), 12.0, floor=0.0), 1, rng)[0]
    z = np.angle(w)
    assert estimate_spacing(z, rng.random(z.shape) > 0.3) == pytest.approx(12.0, rel=0.2)


def test_start_and_torus_shapes():
    assert padded_shape((10, 7), 24) == (35, 32)
    assert torus_for((10, 10), [4.0, 30.0]) == padded_shape((10, 10), 30)
    spectrum = ring_spectrum((16, 16), 4.0)
    w = spectral_start(Z0, OBSERVED, spectrum)
    assert w.shape == (16, 16)
    assert np.mean(np.abs(w) ** 2) == pytest.approx(spectrum.mean())


def test_cv_pointwise_is_the_heldout_density_of_its_draws():
    # Replay the CV's random stream: the same folds and fits, scored directly with scipy.
    rng = np.random.default_rng(6)
    z = rng.vonmises(np.zeros((6, 6)), 3.0)
    observed = rng.random(z.shape) > 0.2
    spacings = [3.0, 5.0]
    cv = cross_validate_spacing(
        z, observed, spacings=spacings, n_folds=2, draws=4, tune=3, rescore_draws=0, random_seed=7
    )
    assert cv.curve["draws"].tolist() == [4, 4]
    replay = np.random.default_rng(7)
    index = np.flatnonzero(observed)
    fold_of = replay.permutation(index.size) % 2
    torus = torus_for(z.shape, spacings)
    for g, spacing in enumerate(spacings):
        for fold in range(2):
            test = np.zeros(z.shape, bool)
            test.flat[index[fold_of == fold]] = True
            o, k = spectral_posterior(
                z,
                observed & ~test,
                ring_spectrum(torus, spacing),
                draws=4,
                tune=3,
                keep=test,
                random_seed=replay,
            )
            dens = vonmises.pdf(z[test][None], k[:, None], loc=o)
            direct = np.log(dens.mean(axis=0))
            np.testing.assert_allclose(cv.pointwise[g, fold_of == fold], direct, rtol=1e-9)
            np.testing.assert_allclose(heldout_log_predictive(z[test], o, k), direct, rtol=1e-9)
    assert cv.curve["delta"].max() == 0.0
    # Rescoring (default 4 x draws) scores the rows of weight >= 0.1 again after the same
    # search, and leaves the others as they were.
    rescored = cross_validate_spacing(
        z, observed, spacings=spacings, n_folds=2, draws=4, tune=3, random_seed=7
    )
    again = stacking_weights(cv.pointwise) >= RESCORE_WEIGHT
    assert rescored.curve["draws"].tolist() == [16 if a else 4 for a in again]
    np.testing.assert_array_equal(rescored.pointwise[~again], cv.pointwise[~again])
    assert np.all(rescored.pointwise[again] != cv.pointwise[again])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ring_spectrum((8, 8), 0.0), "spacing must be positive"),
        (lambda: ring_spectrum((8, 8), -3.0), "spacing must be positive"),
        (lambda: ring_spectrum((8, 8), 1.5), "at least 2 pixels"),
        (lambda: ring_spectrum((8, 8), 4.0, width=0.0), "width must be positive"),
        (lambda: ring_spectrum((8, 8), 4.0, floor=-1.0), "floor must be non-negative"),
        (lambda: ring_spectrum((8,), 4.0), "two positive sizes"),
        (lambda: padded_shape((8, 8), -1), "pad"),
        (
            lambda: spectral_posterior(Z0, OBSERVED, np.ones((2, 2))),
            "at least the map's shape",
        ),
        (
            lambda: cross_validate_spacing(Z0, OBSERVED, spacings=[3.0], n_folds=9),
            "at most the number of observed pixels",
        ),
        (lambda: estimate_spacing(Z0, np.zeros(Z0.shape, bool)), "at least one observed"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_spacing_search_reaches_a_spacing_2_5_times_below_its_start():
    # A plane wave of spacing 6 with the search started at 15 (2.5 times too large, as the
    # data's estimate was on difference-of-Gaussians maps): linear prediction ranks the
    # grid's lowest spacing (0.397 x 15 = 5.96) first, the posterior fits are centred on
    # it, and the best of them is within the refinement's 25% of 6.
    rng = np.random.default_rng(3)
    x = np.indices((16, 16))[1]
    z = rng.vonmises(2 * np.pi * x / 6.0, 4.0)
    observed = rng.random(z.shape) > 0.3
    cv = cross_validate_spacing(
        z, observed, estimate=15.0, width=[0.25], n_folds=2, draws=8, tune=8, random_seed=0
    )
    assert cv.estimate == 15.0
    search = cv.search
    grid = spacing_grid(z, observed, COARSE_RATIOS, estimate=15.0)[0]  # clipped at 16
    assert search["spacing"].tolist() == grid and grid[0] == pytest.approx(5.955)
    assert search["spacing"].iloc[int(np.argmax(search["cosine"]))] == pytest.approx(5.955)
    assert cv.curve["spacing"].tolist() == pytest.approx([4.764, 5.955, 7.444])  # 3 decimals
    best = cv.curve["spacing"].iloc[int(np.argmax(cv.curve["score"]))]
    assert 6.0 / 1.25 <= best <= 6.0 * 1.25


def test_spacing_grid_clips_to_the_map_and_drops_duplicates():
    z = np.zeros((16, 20))
    spacings, estimate = spacing_grid(z, z == 0, (0.1, 0.4, 1.6, 2.0), estimate=12.0)
    assert estimate == 12.0
    assert spacings == [2.0, 4.8, 16.0]

"""HSGP terms (pmctx.gum.hsgp): structure against hand-built PyMC models, accuracy against the
exact GP posterior, constraints kept."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

from pmctx.gum import gum, hsgp
from pmctx.gum.hsgp import (
    HSGP_MIN_OBS,
    HSGP_TOL,
    choose_n_basis,
    covariance_error,
    hsgp_factor,
)


def _additive_data(n, seed=0):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(0, 2, n), rng.uniform(0, np.pi, n)
    y = np.sin(3 * x1) + np.cos(2 * x2) + 0.3 * rng.normal(size=n)
    return {"x1": x1, "x2": x2, "y": y}


FORMULA = (
    "y ~ f(x1, lengthscale=0.3, max_points=30)"
    " + f(x2, kernel='periodic', period=pi, lengthscale=0.8, max_points=30)"
)


def _hand_built(g, sizes, *, sample_lengthscale):
    """The same model written with PyMC's HSGP API directly (no pmctx builder)."""
    d = g.design
    f1, f2 = d.functions["f_x1"], d.functions["f_x2"]
    W1 = d.blocks[0][0][0].basis[:, 0, :]
    W2 = d.blocks[1][0][0].basis[:, 0, :]
    with pm.Model() as hand:
        (n1, c1), (n2, _) = sizes["f_x1"], sizes["f_x2"]
        z1 = pm.Normal("f_x1_z", size=n1)
        ell = 0.3
        if sample_lengthscale:
            ell = pm.LogNormal("f_x1_lengthscale", mu=np.log(0.3), sigma=0.5)
        hs = pm.gp.HSGP(m=[n1], c=c1, cov_func=pm.gp.cov.ExpQuad(1, ls=ell))
        phi, sqrt_psd = hs.prior_linearized(pt.as_tensor(f1.support[:, None]))
        grid1 = phi @ (sqrt_psd * z1)
        hp = pm.gp.HSGPPeriodic(m=n2, cov_func=pm.gp.cov.Periodic(1, np.pi, ls=0.8))
        (cos, sin), q2 = hp.prior_linearized(pt.as_tensor(f2.support[:, None]))
        z2 = pm.Normal("f_x2_z", size=2 * n2 - 1)
        q = pt.sqrt(q2)  # amplitudes (see pmctx.gum.hsgp on PyMC's q2)
        grid2 = cos @ (q * z2[:n2]) + sin[:, 1:] @ (q[1:] * z2[n2:])
        # mean-zero constraints of an additive model with an intercept
        grid1, grid2 = grid1 - grid1.mean(), grid2 - grid2.mean()
        c0 = pm.Normal("intercept_z")
        noise = pm.HalfNormal("noise_sd", float(np.std(d.y)))
        pm.Normal("y", W1 @ grid1 + W2 @ grid2 + 10.0 * c0, noise, observed=d.y)
    return hand


@pytest.mark.slow
@pytest.mark.parametrize("sample_lengthscale", [False, True])
def test_hsgp_logp_matches_hand_built_pymc_model(sample_lengthscale):
    g = gum(
        FORMULA,
        _additive_data(80),
        approximation="hsgp",
        lengthscale_prior_sigma=0.5 if sample_lengthscale else None,
    )
    assert g.constraints["f_x1"] == g.constraints["f_x2"] == "mean-zero"
    sizes = g.hsgp_sizes
    assert set(sizes) == {"f_x1", "f_x2"}
    model = g.model
    hand = _hand_built(g, sizes, sample_lengthscale=sample_lengthscale)
    if sample_lengthscale:
        model["f_x2_lengthscale"]
    ours, theirs = model.compile_logp(), hand.compile_logp()
    rng = np.random.default_rng(2)
    for _ in range(4):
        point = {
            v.name: rng.normal(size=model.initial_point()[v.name].shape) for v in model.value_vars
        }
        hand_point = {v.name: point[v.name] for v in hand.value_vars}
        # the periodic lengthscale is not in the hand-built model: compare at its prior mode
        if sample_lengthscale:
            point["f_x2_lengthscale_log__"] = np.log(0.8)
        expected = theirs(hand_point)
        if sample_lengthscale:  # its log prior density (with log-Jacobian) at log(0.8)
            expected += pm.logp(pm.Normal.dist(np.log(0.8), 0.5), np.log(0.8)).eval()
        np.testing.assert_allclose(ours(point), expected, rtol=1e-9)
        # identifiability: the HSGP functions keep their mean-zero constraint
        f1 = model.replace_rvs_by_values([model["f_x1"]])[0]
        f1_at = pytensor.function(model.value_vars, f1, on_unused_input="ignore")
        assert abs(f1_at(*[point[v.name] for v in model.value_vars]).mean()) < 1e-10


def _gaussian_posterior(W, Q, theta0, y, noise):
    """Posterior mean and sd on the grid of theta = theta0 + Q z, y ~ N(W theta, noise^2)."""
    A = W @ Q
    precision = np.eye(Q.shape[1]) + A.T @ A / noise**2
    cov = np.linalg.inv(precision)
    mean_z = cov @ A.T @ (y - W @ theta0) / noise**2
    return theta0 + Q @ mean_z, np.sqrt(np.einsum("ij,jk,ik->i", Q, cov, Q))


@pytest.mark.slow
def test_hsgp_posterior_matches_exact_gp_posterior():
    """Moderate problem (N=400, one SE term, known noise): HSGP posterior mean within 0.1
    posterior sd of the exact one and sd within 10%, on the whole grid; the pm.Model's MAP
    (= posterior mean, Gaussian) reproduces the HSGP mean."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 2, 400)
    y = np.sin(3 * x) + 0.3 * rng.normal(size=400)
    g = gum("y ~ f(x, lengthscale=0.3, max_points=40)", {"x": x, "y": y}, intercept=False,
            noise_sd=0.3, approximation="hsgp")  # fmt: skip
    fn = g.design.functions["f_x"]
    n_basis, c = g.hsgp_sizes["f_x"]
    assert covariance_error(fn, n_basis, c=c) <= HSGP_TOL
    W = g.design.blocks[0][0][0].basis[:, 0, :]
    exact_mean, exact_sd = _gaussian_posterior(W, fn.Q, fn.theta0, y, 0.3)
    mean, sd = _gaussian_posterior(W, hsgp_factor(fn, n_basis, c=c), fn.theta0, y, 0.3)
    assert np.max(np.abs(mean - exact_mean) / exact_sd) < 0.1
    assert np.max(np.abs(sd / exact_sd - 1)) < 0.1
    with g.model:
        point = pm.find_MAP(progressbar=False)
    np.testing.assert_allclose(point["f_x"], mean, atol=1e-3 * np.abs(mean).max())


@pytest.mark.slow
def test_auto_uses_hsgp_from_threshold_and_start_matches_laplace_mode():
    small = gum(FORMULA, _additive_data(200), noise_sd=0.3)
    assert small.hsgp_sizes == {}
    assert small.model["f_x1_z"].type.shape == (small.design.functions["f_x1"].n_free,)
    # fixed lengthscales: HSGP gave no speed-up at N=1k-10k, so "auto" keeps the exact prior
    assert gum(FORMULA, _additive_data(HSGP_MIN_OBS), noise_sd=0.3).hsgp_sizes == {}
    big = gum(FORMULA, _additive_data(HSGP_MIN_OBS), noise_sd=0.3, lengthscale_prior_sigma=0.3)
    assert set(big.hsgp_sizes) == {"f_x1", "f_x2"}
    start = big.map_point()
    thetas = big.design.thetas(big.laplace_result.u_map)
    fn = big.design.functions["f_x1"]
    values = (
        fn.theta0
        + hsgp_factor(fn, big.hsgp_sizes["f_x1"][0], c=big.hsgp_sizes["f_x1"][1]) @ start["f_x1_z"]
    )
    assert np.max(np.abs(values - thetas["f_x1"])) < 0.02


def test_choose_n_basis_and_bad_approximation():
    g = gum(FORMULA, _additive_data(50))
    fn = g.design.functions["f_x1"]
    n_basis, c = choose_n_basis(fn)
    assert covariance_error(fn, n_basis, c=c) <= HSGP_TOL < covariance_error(fn, n_basis - 2, c=c)
    with pytest.raises(ValueError, match="approximation"):
        gum(FORMULA, _additive_data(50), approximation="sparse")


@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("n", [HSGP_MIN_OBS - 1, HSGP_MIN_OBS])
def test_auto_hsgp_threshold(sampled, n):
    """ "auto": HSGP only with sampled lengthscales and at least HSGP_MIN_OBS rows; "hsgp"
    always, "exact" never."""
    sigma = 0.3 if sampled else None
    data = _additive_data(n)
    auto = gum(FORMULA, data, noise_sd=0.3, lengthscale_prior_sigma=sigma)
    expected = {"f_x1", "f_x2"} if sampled and n >= HSGP_MIN_OBS else set()
    assert set(auto.hsgp_sizes) == expected
    forced = gum(FORMULA, data, noise_sd=0.3, lengthscale_prior_sigma=sigma, approximation="hsgp")
    assert set(forced.hsgp_sizes) == {"f_x1", "f_x2"}
    exact = gum(FORMULA, data, noise_sd=0.3, lengthscale_prior_sigma=sigma, approximation="exact")
    assert exact.hsgp_sizes == {}


def test_basis_size_searched_once_per_function(monkeypatch):
    import pmctx.gum.coordinates as coordinates

    calls = []
    original = coordinates.choose_n_basis
    monkeypatch.setattr(
        coordinates, "choose_n_basis", lambda fn: calls.append(fn.name) or original(fn)
    )
    g = gum(FORMULA, _additive_data(50), approximation="hsgp")
    first = g.hsgp_sizes
    assert g.hsgp_sizes == first and len(calls) == 2
    g.set_hyperparameters({"f_x1": {"lengthscale": 0.5}})  # new hyperparameters: new search
    assert g.hsgp_sizes["f_x2"] == first["f_x2"] and len(calls) == 3


@pytest.mark.parametrize("kernel", ["se", "matern52", "periodic"])
def test_smaller_basis_is_column_subset_of_largest(kernel):
    """choose_n_basis evaluates the largest basis once and slices it: the sliced covariance
    error equals the one of a basis built at that size (and a wrong slice differs)."""
    period = ", period=pi" if kernel == "periodic" else ""
    g = gum(f"y ~ f(x1, kernel='{kernel}', lengthscale=0.3{period}, max_points=20)",
            _additive_data(50))  # fmt: skip
    fn = g.design.functions["f_x1"]
    c = 1.0 if kernel == "periodic" else 2.0
    largest = hsgp._largest(fn)
    big = hsgp._basis(fn, largest, fn.hyper["lengthscale"], c).eval()
    for n_basis in (4, 6, 8):
        built = covariance_error(fn, n_basis, c=c)
        assert covariance_error(fn, n_basis, c=c, basis=big) == pytest.approx(built, rel=1e-9)
    wrong = big[:, ::-1]  # columns from the other end: not the basis of size 6
    assert covariance_error(fn, 6, c=c, basis=wrong) != pytest.approx(
        covariance_error(fn, 6, c=c), rel=1e-3
    )

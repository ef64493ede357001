"""Every formula operator against a hand-built pm.Model of the same structure: same logp at
random points (and the Laplace log joint changes by the same amounts where it applies)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pmctx.gum import gum
from pmctx.gum.laplace import log_joint

N = 60


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    return {
        "x": rng.integers(0, 5, N).astype(float),  # exact supports: indicator bases
        "z": rng.integers(0, 4, N).astype(float),
        "u": rng.normal(size=N),
        "a": rng.choice(["p", "q", "r"], N),
        "b": rng.choice(["s", "t"], N),
        "g": rng.choice(["g1", "g2", "g3", "g4"], N),
        "y": rng.poisson(2.0, N),
        "w8": rng.uniform(0.2, 3.0, N),
    }


def _codes(values):
    return np.unique(values, return_inverse=True)[1]


def _gp(g, name):
    """Non-centred GP values of function ``name``: theta0 + Q z (the prior factor is tested
    against the kernel in test_gum_kernels_terms)."""
    fn = g.design.functions[name]
    z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=fn.n_free)
    return pt.as_tensor(fn.theta0) + pt.dot(pt.as_tensor(fn.Q), z)


def _intercept():
    return 10.0 * pm.Normal("intercept_z", 0.0, 1.0)


def _same_logp(g, hand, *, laplace=True, n_points=3):
    ours, theirs = g.model.compile_logp(), hand.compile_logp()
    rng = np.random.default_rng(0)
    base = g.model.initial_point()
    assert set(base) == set(hand.initial_point()), (set(base), set(hand.initial_point()))
    values = []
    for _ in range(n_points):
        point = {k: 0.5 * rng.standard_normal(np.shape(v)) for k, v in base.items()}
        assert np.isclose(ours(point), theirs(point), rtol=1e-10, atol=1e-8)
        values.append(ours(point))
        if laplace:
            u = np.zeros(g.design.n_free)
            for name, sl in g.design.slices.items():
                u[sl] = np.atleast_1d(point[f"{name}_z"])
            values[-1] = (values[-1], log_joint(g.design, u))
    if laplace:  # same density up to a constant
        diffs = [(a[0] - values[0][0], a[1] - values[0][1]) for a in values[1:]]
        assert all(np.isclose(d1, d2) for d1, d2 in diffs), diffs


def test_numeric_multipliers_and_minus(data):
    g = gum("y ~ 2*f(z) - f(x)", data, family="poisson")
    with pm.Model() as hand:
        rho = 2 * _gp(g, "f_z")[_codes(data["z"])] - _gp(g, "f_x")[_codes(data["x"])]
        pm.Poisson("y", mu=pt.exp(rho + _intercept()), observed=data["y"])
    _same_logp(g, hand)


def test_fixed_regressor(data):
    g = gum("y ~ [u] + f(x)", data, family="poisson")
    with pm.Model() as hand:
        rho = data["u"] + _gp(g, "f_x")[_codes(data["x"])] + _intercept()
        pm.Poisson("y", mu=pt.exp(rho), observed=data["y"])
    _same_logp(g, hand)


def _random_effect(g, name):
    fn = g.design.functions[name]
    sd = pm.HalfNormal(f"{name}_sd", sigma=1.0)
    z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=fn.n_free)
    return sd * pt.dot(pt.as_tensor(fn.P.T), z)  # orthonormal free basis, shared sd


def test_random_intercepts_and_slopes(data):
    g = gum("y ~ 1|g + u|g + f(x)", data, family="poisson")
    assert g.constraints["r_g"] == "mean-zero" and g.constraints["r_u_g"] == "free"
    with pm.Model() as hand:
        group = _codes(data["g"])
        rho = (
            _gp(g, "f_x")[_codes(data["x"])]
            + _random_effect(g, "r_g")[group]
            + data["u"] * _random_effect(g, "r_u_g")[group]
            + _intercept()
        )
        pm.Poisson("y", mu=pt.exp(rho), observed=data["y"])
    _same_logp(g, hand, laplace=False)  # NUTS samples the shared sd; Laplace fits it


def test_categorical_interactions(data):
    g = gum("y ~ cat(a)^cat(b)", data, family="poisson")
    assert sorted(g.function_names) == ["w_a", "w_a_b", "w_b"]
    pairs = np.char.add(np.char.add(data["a"], ":"), data["b"])
    with pm.Model() as hand:
        rho = (
            _gp(g, "w_a")[_codes(data["a"])]
            + _gp(g, "w_b")[_codes(data["b"])]
            + _gp(g, "w_a_b")[_codes(pairs)]
            + _intercept()
        )
        pm.Poisson("y", mu=pt.exp(rho), observed=data["y"])
    _same_logp(g, hand)
    only = gum("y ~ cat(a):cat(b)", data, family="poisson")
    assert only.function_names == ["w_a_b"] and len(only.labels["w_a_b"]) == 6


def test_lags(data):
    g = gum("y ~ lag(u, lags=1:3)", data, family="poisson")
    u = data["u"]
    lagged = np.stack([np.r_[np.zeros(k), u[:-k]] for k in (1, 2, 3)], axis=1)
    with pm.Model() as hand:
        w = 10.0 * pm.Normal("w_lag_u_z", 0.0, 1.0, shape=3)
        pm.Poisson("y", mu=pt.exp(pt.dot(lagged, w) + _intercept()), observed=data["y"])
    _same_logp(g, hand)


def test_quantile_binning(data):
    g = gum("y ~ f(u, binning=4)", data, family="poisson")
    edges = np.quantile(data["u"], [0.25, 0.5, 0.75])
    index = np.searchsorted(edges, data["u"], side="right")
    assert np.allclose(
        g.design.functions["f_u"].support, [data["u"][index == k].mean() for k in range(4)]
    )
    with pm.Model() as hand:
        rho = _gp(g, "f_u")[index] + _intercept()
        pm.Poisson("y", mu=pt.exp(rho), observed=data["y"])
    _same_logp(g, hand)


def test_observation_weights(data):
    g = gum("y ~ f(x)", data, family="poisson", weights=data["w8"])
    with pm.Model() as hand:
        rho = _gp(g, "f_x")[_codes(data["x"])] + _intercept()
        logp = pm.logp(pm.Poisson.dist(mu=pt.exp(rho)), data["y"])
        pm.Potential("weighted", (data["w8"] * logp).sum())
    _same_logp(g, hand)
    with pytest.raises(ValueError, match="non-negative"):
        gum("y ~ f(x)", data, family="poisson", weights=-data["w8"])
    with pytest.raises(ValueError, match="weights"):
        gum("y ~ f(x)", data, family="poisson", weights=data["w8"][:5])


def test_negative_binomial(data):
    g = gum("y ~ f(x)", data, family="negative_binomial", alpha=2.5)
    with pm.Model() as hand:
        rho = _gp(g, "f_x")[_codes(data["x"])] + _intercept()
        pm.NegativeBinomial("y", mu=pt.exp(rho), alpha=2.5, observed=data["y"])
    _same_logp(g, hand)
    free = gum("y ~ f(x)", data, family="negative_binomial")
    assert "alpha" in {rv.name for rv in free.model.free_RVs}
    with pytest.raises(ValueError, match="alpha"):
        free.fit_laplace()
    with pytest.raises(ValueError, match="negative-binomial dispersion"):
        gum("y ~ f(x)", data, family="poisson", alpha=1.0)


def test_nested_weights_hierarchical_psychophysics():
    """(w(position) + w(position|subject)) * f(angle): population weights plus partially
    pooled subject deviations, one shared f, in one pm.Model."""
    from pmctx.gum.synthetic import psychophysics

    data = psychophysics(40, min_length=3, max_length=3, random_seed=5)
    data["subject"] = np.repeat(["s1", "s2"], 20)
    g = gum(
        "choice ~ (w(position) + w(position|subject)) * f(angle, max_points=6)",
        data,
        family="bernoulli",
    )
    assert g.constraints == {
        "f_angle": "free",
        "w_position": "mean-one",
        "w_position_subject": "mean-zero",
    }
    assert list(g.labels["w_position_subject"]) == ["0|s1", "0|s2", "1|s1", "1|s2", "2|s1", "2|s2"]
    position = data["position"].astype(int)
    pair = position * 2 + (data["subject"] == "s2")[:, None]
    grid = g.design.functions["f_angle"].support
    W = np.stack([np.interp(data["angle"], grid, np.eye(6)[k]) for k in range(6)], axis=-1)
    with pm.Model() as hand:
        f = _gp(g, "f_angle")
        w = _gp(g, "w_position")[position] + _random_effect(g, "w_position_subject")[pair]
        rho = (w * pt.tensordot(pt.as_tensor(W), f, 1)).sum(axis=1) + _intercept()
        pm.Bernoulli("choice", logit_p=rho, observed=data["choice"])
    _same_logp(g, hand, laplace=False)

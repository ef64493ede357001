"""Kernels, term algebra, formula parsing and constraint projections of the GUM."""

import numpy as np
import pytest

from pmctx.gum.constraints import projection, resolve_constraints
from pmctx.gum.formula import parse_formula
from pmctx.gum.kernels import KERNELS, kernel_matrix
from pmctx.gum.terms import GP, Categorical, Fixed, Linear, normalize


def names(blocks):
    return [[[leaf.name for leaf in factor] for factor in block] for block in blocks]


@pytest.mark.parametrize("kind", KERNELS)
def test_kernels_are_psd_with_the_right_variance(kind):
    x = np.linspace(0, 3, 30)
    K = kernel_matrix(kind, x, x, lengthscale=0.7, variance=2.5, period=1.3)
    assert np.allclose(np.diag(K), 2.5)
    assert np.allclose(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-8


def test_kernel_values():
    r = np.array([0.0, 0.5])
    se = kernel_matrix("se", r[:1], r, lengthscale=0.5)
    assert np.allclose(se, [[1.0, np.exp(-0.5)]])
    # periodic: identical values one period apart; the seed's form exp(-2 sin^2(pi r/T)/l^2)
    per = kernel_matrix(
        "periodic", np.array([0.0]), np.array([0.3, np.pi + 0.3]), lengthscale=0.4, period=np.pi
    )
    assert np.isclose(per[0, 0], per[0, 1])
    assert np.isclose(per[0, 0], np.exp(-2 * np.sin(0.3) ** 2 / 0.16))
    m32 = kernel_matrix("matern32", r[:1], r, lengthscale=1.0)
    s = np.sqrt(3) * 0.5
    assert np.isclose(m32[0, 1], (1 + s) * np.exp(-s))


def test_formula_matches_term_api():
    response, term, intercept = parse_formula(
        "y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3) + x4"
    )
    assert response == "y" and intercept
    assert names(normalize(term)) == [[["f_x1"], ["f_x2"]], [["f_x3"]], [["b_x4"]]]
    periodic = normalize(term)[0][1][0]
    assert periodic.kernel == "periodic" and np.isclose(periodic.period, np.pi)
    api = GP("x1") * GP("x2", kernel="periodic", period=np.pi) + GP("x3") + Linear("x4")
    assert names(normalize(api)) == names(normalize(term))


def test_formula_intercept_and_nesting():
    _, term, intercept = parse_formula("choice ~ w(position) * f(angle) - 1")
    assert not intercept
    # canonical order (pmctx.gum.terms.canonical_order): the GP factor first, whatever the order
    assert names(normalize(term)) == [[["f_angle"], ["w_position"]]]
    _, term, intercept = parse_formula("y ~ (f(a) + f(b)) * lin(c) + 0")
    assert not intercept and names(normalize(term)) == [[["f_a", "f_b"], ["b_c"]]]
    _, term, _ = parse_formula("y ~ f(a) * (f(b) * f(c) + f(d))")  # distributes
    assert names(normalize(term)) == [[["f_a"], ["f_b"], ["f_c"]], [["f_a"], ["f_d"]]]
    _, term, _ = parse_formula("y ~ fixed(a, fn=cos) * w(p)")
    leaf = normalize(term)[0][0][0]
    assert isinstance(leaf, Fixed) and leaf.fn is np.cos


@pytest.mark.parametrize(
    ("formula", "match"),
    [
        ("y = f(x)", "exactly one '~'"),
        ("y ~ g(x)", "unknown term 'g'"),
        ("y ~ f(x,", "invalid syntax"),
        ("y ~ f(x, kernel=foo)", "unknown name 'foo'"),
        ("y ~ f(x) - 2", "unsupported expression '2'"),
        ("y ~ f(x, bogus=1)", "bad options"),
        ("y ~ f(x, kernel='periodic')", "no period"),
        ("y ~ f(x, lengthscale=-1)", "must be positive"),
    ],
)
def test_bad_formulas(formula, match):
    with pytest.raises(ValueError, match=match):
        _response, term, _ = parse_formula(formula)
        normalize(term)


def test_function_twice_in_a_product_is_rejected():
    with pytest.raises(ValueError, match="two factors of the same product"):
        normalize(GP("x", name="f") * (GP("x", name="f") + GP("z")))
    # sharing across blocks is allowed (seed Appendix B.2)
    blocks = normalize(GP("a", name="f") * GP("b") + GP("c", name="f") * GP("d"))
    assert names(blocks) == [[["f"], ["f_b"]], [["f"], ["f_d"]]]
    with pytest.raises(ValueError, match="differ in their options"):
        normalize(GP("a", name="f") + GP("b", name="f", lengthscale=2.0))
    with pytest.raises(TypeError, match="combine"):
        GP("a") + 3


@pytest.mark.parametrize("kind", ["free", "first-zero", "mean-zero", "mean-one", "sum-one"])
def test_projections_satisfy_their_constraint(kind):
    m = 7
    P, theta0 = projection(kind, m)
    assert np.allclose(P @ P.T, np.eye(P.shape[0]))  # orthonormal rows
    theta = theta0 + P.T @ np.random.default_rng(0).standard_normal(P.shape[0])
    expected = {
        "free": None,
        "first-zero": lambda t: t[0] == pytest.approx(0.0),
        "mean-zero": lambda t: t.mean() == pytest.approx(0.0),
        "mean-one": lambda t: t.mean() == pytest.approx(1.0),
        "sum-one": lambda t: t.sum() == pytest.approx(1.0),
    }[kind]
    assert P.shape[0] == (m if kind == "free" else m - 1)
    if expected is not None:
        assert expected(theta)


def test_default_constraints_follow_appendix_a():
    # seed 3.1: first factor free, second mean-one, additive function mean-zero
    blocks = normalize(GP("x1") * GP("x2") + GP("x3") + Linear("x4"))
    constraints, offsets = resolve_constraints(blocks, intercept=True)
    assert constraints == {"f_x1": "free", "f_x2": "mean-one", "f_x3": "mean-zero", "b_x4": "free"}
    assert offsets == {}
    # sums inside a factor: the first function carries the factor's constraint
    blocks = normalize((GP("a") + GP("b")) * (GP("c") + Categorical("d")))
    constraints, _ = resolve_constraints(blocks, intercept=True)
    assert constraints == {"f_a": "free", "f_b": "mean-zero", "f_c": "mean-one", "w_d": "mean-zero"}
    # user first-zero constraints: offsets c_i1 free, c_ij = 1 for j > 1, none when D_i = 1
    blocks = normalize(
        GP("a", constraint="first-zero") * GP("b", constraint="first-zero")
        + GP("c", constraint="first-zero")
    )
    _, offsets = resolve_constraints(blocks, intercept=True)
    assert offsets == {(0, 0): "free", (0, 1): 1.0}
    _, offsets = resolve_constraints(blocks, intercept=False)
    assert offsets == {(0, 0): "free", (0, 1): 1.0, (1, 0): "free"}
    # a fixed function removes the factor's constraints
    blocks = normalize(Categorical("p") * Fixed("x", fn=np.cos))
    constraints, offsets = resolve_constraints(blocks, intercept=True)
    assert constraints == {"w_p": "free"} and offsets == {}

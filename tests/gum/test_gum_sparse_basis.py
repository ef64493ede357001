"""The gathered (sparse) basis path of the PyMC builder gives the dense product's log density."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pmctx.gum import gum
from pmctx.gum.build import sparse_basis, sparse_product
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def test_sparse_basis_reproduces_dense_rows():
    rng = np.random.default_rng(0)
    basis = np.zeros((7, 3, 12))
    for row in np.ndindex(7, 3):
        cols = rng.choice(12, size=2, replace=False)
        basis[row][cols] = rng.uniform(size=2)
    index, weight = sparse_basis(basis)
    theta = rng.normal(size=12)
    np.testing.assert_allclose((weight * theta[index]).sum(-1), basis @ theta)
    assert sparse_basis(np.ones((5, 6))) is None  # dense rows keep the dense product


def test_gum_model_logp_matches_dense_design_product():
    g = gum(
        section_3_1_formula(max_points=12), seed_section_3_1(60, random_seed=3), family="poisson"
    )
    model = g.model
    logp = model.compile_logp()
    rng = np.random.default_rng(1)
    d = g.design
    for _ in range(3):
        point = {
            v.name: rng.normal(size=model.initial_point()[v.name].shape) for v in model.value_vars
        }
        u = np.concatenate([np.atleast_1d(point[f"{k}_z"]) for k in d.slices])
        rho = d.predictor(u)
        expected = pm.logp(pm.Poisson.dist(mu=pt.exp(rho)), d.y).sum().eval()
        expected += sum(
            pm.logp(pm.Normal.dist(), np.atleast_1d(x)).sum().eval() for x in point.values()
        )
        np.testing.assert_allclose(logp(point), expected, rtol=1e-10)


def _random_basis(rng, shape, m, nonzeros):
    basis = np.zeros((*shape, m))
    for row in np.ndindex(*shape):
        cols = rng.choice(m, size=rng.integers(1, nonzeros + 1), replace=False)
        basis[row][cols] = rng.uniform(size=len(cols))
    return basis


@pytest.mark.parametrize("nonzeros", [1, 2])
def test_sparse_product_equals_dense_matmul_and_its_gradient(nonzeros):
    """One lookup per non-zero column (rows with fewer non-zeros padded with weight 0) gives
    the dense ``basis @ theta`` and its gradient; a lookup with the columns swapped does not."""
    rng = np.random.default_rng(nonzeros)
    basis = _random_basis(rng, (9, 2), 12, nonzeros)
    index, weight = sparse_basis(basis)
    assert index.shape == (9, 2, nonzeros)
    theta_value = rng.normal(size=12)
    theta = pt.vector("theta")
    out = sparse_product(theta, index, weight)
    dense = pt.tensordot(pt.as_tensor(basis), theta, 1)
    np.testing.assert_allclose(out.eval({theta: theta_value}), basis @ theta_value, rtol=1e-12)
    cotangent = rng.normal(size=(9, 2))
    grad_sparse = pt.grad((out * cotangent).sum(), theta).eval({theta: theta_value})
    grad_dense = pt.grad((dense * cotangent).sum(), theta).eval({theta: theta_value})
    np.testing.assert_allclose(grad_sparse, grad_dense, rtol=1e-12)
    if nonzeros == 2:  # a deliberately broken lookup (weights paired with the wrong columns)
        broken = sparse_product(theta, index[..., ::-1], weight).eval({theta: theta_value})
        assert not np.allclose(broken, basis @ theta_value)

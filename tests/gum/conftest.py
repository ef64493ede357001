"""Shared GUM test data."""

import numpy as np
import pytest

from pmctx.gum import gum


@pytest.fixture
def product_gum():
    """Factory ``product_gum(n, seed=3)``: a Poisson GUM with a product of GPs in x and z."""

    def make(n, seed=3):
        rng = np.random.default_rng(seed)
        data = {"x": rng.uniform(0, 2, n), "z": rng.uniform(0, 2, n)}
        data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"]) * (1 + 0.5 * data["z"])))
        return gum(
            "y ~ f(x, lengthscale=0.5, max_points=10) * f(z, lengthscale=1.0, max_points=6)",
            data,
            family="poisson",
        )

    return make

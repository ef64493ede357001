"""CLI entry points of the GUM model: demo (quick) and fit from a file."""

import numpy as np
import pytest
from pmctx.models import gum as gum_module

from pmctx.io import load_idata


def test_quick_demo_writes_outputs(tmp_path):
    paths = gum_module.demo(tmp_path, quick=True, random_seed=0)
    names = {p.name for p in paths}
    assert {
        "gum_laplace_posterior.nc",
        "gum_laplace_summary.csv",
        "gum_laplace_diagnostics.csv",
        "gum_laplace_functions.png",
    } <= names
    idata = load_idata(tmp_path / "gum_laplace_posterior.nc")
    assert "log_likelihood" in idata.children
    assert all(p.exists() for p in paths)


def test_fit_from_npz(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2, 80)
    path = tmp_path / "data.npz"
    np.savez(
        path,
        formula="y ~ f(x, max_points=8)",
        family="poisson",
        x=x,
        y=rng.poisson(np.exp(np.sin(2 * x))),
    )
    paths = gum_module.fit(
        path, draws=1000, tune=1000, chains=2, cores=1, random_seed=1, out_dir=tmp_path / "o"
    )
    idata = load_idata(paths[0])
    assert idata.posterior["f_x"].shape == (2, 1000, 8)
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=x, y=x)
    with pytest.raises(ValueError, match="formula"):
        gum_module.fit(bad, draws=10, tune=10, chains=1, random_seed=0, out_dir=tmp_path)

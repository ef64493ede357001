"""Every registered model's demo fit is an ArviZ 1 results tree that ``az.loo`` reads as it is.

``pmctx demo`` fits each model at its defaults (``--quick``: smaller data and chains) and
saves the posterior; a user then calls ``az.loo(tree)`` and ``az.summary(tree)`` with no
argument, so the ``log_likelihood`` group must hold exactly one variable with the sample
dims ArviZ expects, and the file must load back as the same tree.
"""

import arviz as az
import numpy as np
import pytest
import xarray as xr

from pmctx import cli
from pmctx.io import load_idata
from pmctx.registry import model_names

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", model_names())
def test_demo_fit_loads_as_a_tree_that_az_loo_reads_without_arguments(name, tmp_path):
    assert cli.main(["demo", name, "--quick", "--out", str(tmp_path)]) == 0
    files = sorted((tmp_path / name).glob("*_posterior.nc"))
    assert len(files) == 1, f"the {name} demo wrote {len(files)} posterior files"
    tree = load_idata(files[0])
    assert isinstance(tree, xr.DataTree)
    assert {"posterior", "log_likelihood"} <= set(tree.children)
    loo = az.loo(tree)
    assert np.isfinite(loo.elpd) and np.isfinite(loo.se)
    n_obs = sum(
        int(np.prod([size for dim, size in da.sizes.items() if dim not in ("chain", "draw")]))
        for da in tree.log_likelihood.data_vars.values()
    )
    assert loo.n_data_points == n_obs
    assert len(az.summary(tree)) > 0

"""Results trees at pmctx's boundary: a DataTree is used as is, an ArviZ 0.x InferenceData
(anything with its ``groups()`` method and one attribute per group) is converted once and gives
the same answers; ``az.loo``, ``az.summary`` and ``pmctx.summary`` need no extra argument."""

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pmctx
from pmctx.convergence import check_divergences, convergence_report, count_divergences
from pmctx.io import to_inference_data
from pmctx.trees import as_datatree, set_group


class InferenceDataLike:
    """What pmctx reads of an ArviZ 0.x ``InferenceData``: ``groups()`` (a method there, a
    property of paths on a DataTree) and each group as a Dataset attribute."""

    def __init__(self, tree):
        self._groups = list(tree.children)
        for group in self._groups:
            setattr(self, group, tree[group].to_dataset())

    def groups(self):
        return list(self._groups)


def _fit(centre, seed=0, n=30, draws=300):
    rng = np.random.default_rng(seed)
    y = np.random.default_rng(100).normal(size=n)
    mu = rng.normal(centre, 0.2, size=(2, draws))
    log_lik = -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu[..., None]) ** 2
    return to_inference_data(
        {"mu": mu, "sigma": np.exp(rng.normal(0.0, 0.1, size=(2, draws)))},
        sample_stats={"diverging": np.zeros((2, draws), bool)},
        log_likelihood={"y": log_lik},
        observed_data={"y": y},
        coords={"obs": np.arange(n)},
        dims={"y": ["obs"]},
    )


def _without_attrs(table):
    table = table.copy()
    table.attrs = {}
    return table


def test_as_datatree_passes_trees_and_converts_inference_data_once():
    tree = _fit(0.0)
    assert as_datatree(tree) is tree
    old = InferenceDataLike(tree)
    converted = as_datatree(old)
    assert isinstance(converted, xr.DataTree)
    assert sorted(converted.children) == sorted(tree.children)
    xr.testing.assert_identical(converted.posterior.to_dataset(), tree.posterior.to_dataset())
    with pytest.raises(TypeError, match="must be a fit: an xarray.DataTree"):
        as_datatree({"posterior": tree.posterior.to_dataset()})


def test_set_group_replaces_a_group_in_place():
    tree = _fit(0.0)
    set_group(tree, "log_likelihood", {"y": tree.log_likelihood["y"] - 1.0})
    np.testing.assert_allclose(tree.log_likelihood["y"], _fit(0.0).log_likelihood["y"] - 1.0)


def test_summary_of_an_inference_data_equals_that_of_its_tree():
    tree = _fit(0.3)
    table = pmctx.summary(tree)
    assert list(table.index) == ["mu", "sigma"]
    pd.testing.assert_frame_equal(pmctx.summary(InferenceDataLike(tree)), table)
    # one group of a tree (a DataTree node) is summarised as its dataset
    pd.testing.assert_frame_equal(pmctx.summary(tree.posterior), table)


def test_convergence_report_of_an_inference_data_equals_that_of_its_tree():
    tree = _fit(0.3)
    report = convergence_report(tree)
    pd.testing.assert_frame_equal(convergence_report(InferenceDataLike(tree)), report)
    assert count_divergences(InferenceDataLike(tree)) == count_divergences(tree) == (0, 600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_divergences(InferenceDataLike(tree)) == 0


def test_compare_of_inference_data_equals_that_of_trees():
    trees = {"near": _fit(0.0, seed=1), "far": _fit(1.5, seed=2)}
    table = pmctx.compare(trees)
    assert list(table.index) == ["near", "far"]
    old = pmctx.compare({name: InferenceDataLike(tree) for name, tree in trees.items()})
    pd.testing.assert_frame_equal(_without_attrs(old), _without_attrs(table))
    mixed = pmctx.compare({"near": InferenceDataLike(trees["near"]), "far": trees["far"]})
    pd.testing.assert_frame_equal(_without_attrs(mixed), _without_attrs(table))


def test_arviz_and_pmctx_read_a_results_tree_without_arguments():
    tree = _fit(0.0)
    loo = az.loo(tree)
    assert np.isfinite(loo.elpd) and int(loo.n_data_points) == 30
    assert {"mu", "sigma"} <= set(az.summary(tree).index)
    assert list(pmctx.summary(tree).index) == ["mu", "sigma"]


def test_a_pymc_fit_is_a_tree_that_arviz_and_pmctx_read_without_arguments():
    import pymc as pm

    from pmctx.io import add_log_likelihood
    from pmctx.sampling import run_sampler

    with pm.Model(coords={"obs": range(5)}) as model:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=[0.1, -0.3, 0.2, 0.5, -0.1], dims="obs")
    fit = run_sampler(model, draws=100, tune=100, chains=2, cores=1, random_seed=0)
    assert isinstance(fit, xr.DataTree)
    fit = add_log_likelihood(fit, model)
    assert np.isfinite(az.loo(fit).elpd)
    assert "mu" in az.summary(fit).index
    assert list(pmctx.summary(fit).index) == ["mu"]

import arviz as az
import numpy as np
import pymc as pm
import pytest

from pmctx.io import (
    add_log_likelihood,
    load_idata,
    save_figure,
    save_idata,
    to_inference_data,
    write_summary,
)


@pytest.fixture(scope="module")
def custom_idata():
    rng = np.random.default_rng(0)
    y = rng.normal(size=5)
    mu = y.mean() + 0.3 * rng.normal(size=(2, 50))
    loglik = -0.5 * (y[None, None, :] - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    return to_inference_data(
        {"mu": mu},
        sample_stats={"n_active": rng.integers(3, size=(2, 50))},
        log_likelihood={"y": loglik},
        observed_data={"y": y},
        coords={"trial": np.arange(5)},
        dims={"y": ["trial"]},
        attrs={"inference": "test"},
    )


def test_custom_inference_data_works_with_arviz(custom_idata):
    assert custom_idata.log_likelihood["y"].dims == ("chain", "draw", "trial")
    assert custom_idata.observed_data["y"].dims == ("trial",)
    summary = az.summary(custom_idata, var_names=["mu"])
    assert "mu" in summary.index
    loo = az.loo(custom_idata)
    assert np.isfinite(loo.elpd)
    # WAIC (ArviZ 1 has no az.waic): lppd - p_waic from the same log_likelihood group
    ll = custom_idata.log_likelihood["y"].stack(sample=("chain", "draw")).values
    lppd = np.log(np.mean(np.exp(ll), axis=-1))
    assert np.isfinite(np.sum(lppd - np.var(ll, axis=-1, ddof=1)))


def test_sample_axes_are_required():
    with pytest.raises(ValueError, match=r"must have leading \(chain, draw\) axes"):
        to_inference_data({"mu": np.zeros(10)})


def test_netcdf_round_trip_and_summary(custom_idata, tmp_path):
    path = save_idata(custom_idata, tmp_path / "sub" / "fit.nc")
    loaded = load_idata(path)
    path.unlink()  # loaded eagerly, so the file is no longer needed
    np.testing.assert_allclose(loaded.posterior["mu"], custom_idata.posterior["mu"])
    np.testing.assert_allclose(loaded.log_likelihood["y"], custom_idata.log_likelihood["y"])
    assert loaded.posterior.attrs["inference"] == "test"
    csv = write_summary(loaded, tmp_path / "summary.csv", var_names=["mu"])
    assert csv.read_text().splitlines()[0].startswith(",mean")
    with pytest.raises(FileNotFoundError, match="No InferenceData file"):
        load_idata(tmp_path / "missing.nc")


def test_add_log_likelihood_for_pymc_model(tmp_path):
    with pm.Model(coords={"obs": range(3)}) as model:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1, observed=[0.1, -0.3, 0.2], dims="obs")
        idata = pm.sample(30, tune=30, chains=2, progressbar=False, random_seed=0, cores=1)
    idata = add_log_likelihood(idata, model)
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "obs")
    assert add_log_likelihood(idata, model) is idata
    import matplotlib.pyplot as plt

    plots = az.plot_trace(idata)  # ArviZ 1: a PlotCollection
    number = plots.viz["figure"].item().number
    png = save_figure(plots, tmp_path / "trace.png")
    assert png.stat().st_size > 1000 and number not in plt.get_fignums()


def test_load_idata_reads_netcdf_files_of_arviz_0x(tmp_path):
    """Fits saved by pmctx before the ArviZ 1 port are ArviZ 0.x InferenceData netCDF files:
    one netCDF4 group per ArviZ group, written one after the other (the first with mode="w")."""
    import xarray as xr

    rng = np.random.default_rng(1)
    chain_draw = {"chain": [0, 1], "draw": np.arange(40)}
    groups = {
        "posterior": xr.Dataset(
            {"mu": (("chain", "draw"), rng.normal(size=(2, 40)))},
            coords=chain_draw,
            attrs={"inference_library": "pymc", "arviz_version": "0.23.0"},
        ),
        "log_likelihood": xr.Dataset(
            {"y": (("chain", "draw", "trial"), rng.normal(-1.0, 0.1, (2, 40, 4)))},
            coords={**chain_draw, "trial": np.arange(4)},
        ),
        "observed_data": xr.Dataset({"y": ("trial", np.zeros(4))}, coords={"trial": np.arange(4)}),
    }
    path = tmp_path / "old.nc"
    for i, (name, ds) in enumerate(groups.items()):
        ds.to_netcdf(path, group=name, mode="w" if i == 0 else "a", engine="netcdf4")
    loaded = load_idata(path)
    path.unlink()  # loaded eagerly
    assert isinstance(loaded, xr.DataTree)
    assert sorted(loaded.children) == sorted(groups)
    np.testing.assert_array_equal(loaded.posterior["mu"], groups["posterior"]["mu"])
    assert loaded.posterior.attrs["arviz_version"] == "0.23.0"
    assert loaded.log_likelihood["y"].dims == ("chain", "draw", "trial")
    assert np.isfinite(az.loo(loaded).elpd)

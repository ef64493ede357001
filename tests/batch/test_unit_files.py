"""Per-unit files: ``load_idata`` reads back what ``write_idata`` wrote, with either writer."""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pmctx.batch import records, run_batch
from pmctx.batch.engine import UNIT_GROUPS, write_idata
from pmctx.batch.toy import normal_mean_fit
from pmctx.io import load_idata


def _numeric_idata():
    rng = np.random.default_rng(0)
    idata = az.from_dict(
        {
            "posterior": {"mu": rng.normal(size=(2, 5)), "f": rng.normal(size=(2, 5, 3))},
            "posterior_predictive": {"y": rng.normal(size=(2, 5, 4))},
            "log_likelihood": {"y": rng.normal(size=(2, 5, 4))},
            "observed_data": {"y": rng.normal(size=4)},
        },
        coords={"f_x": [0.1, 0.5, 0.9], "obs": np.arange(4)},
        dims={"f": ["f_x"], "y": ["obs"]},
        attrs={"posterior": {"log_evidence": -3.25, "converged": 1, "inference": "laplace"}},
    )
    idata.posterior["scalar_check"] = xr.DataArray(np.float64(2.5))  # a 0-d variable
    return idata


def _mixed_idata():
    # What PyMC returns: boolean sample stats, string coordinates (categorical levels).
    rng = np.random.default_rng(1)
    return az.from_dict(
        {
            "posterior": {"b": rng.normal(size=(2, 5, 2))},
            "sample_stats": {"diverging": rng.random((2, 5)) < 0.2, "lp": rng.normal(size=(2, 5))},
        },
        coords={"level": ["low", "high"]},
        dims={"b": ["level"]},
    )


def _assert_same(written, back, groups):
    assert list(back.children) == groups
    for group in groups:
        a, b = written[group], back[group]
        assert set(a.variables) == set(b.variables)
        for name in a.variables:
            assert a[name].dims == b[name].dims and a[name].dtype == b[name].dtype, name
            np.testing.assert_array_equal(a[name].values, b[name].values)
        assert set(a.attrs) == set(b.attrs)
        for key, value in a.attrs.items():  # ArviZ 1's empty ``sample_dims`` list reads back
            np.testing.assert_array_equal(b.attrs[key], value, err_msg=key)  # as an empty array


@pytest.mark.parametrize("netcdf4", [True, False], ids=["netCDF4", "h5netcdf"])
@pytest.mark.parametrize("make", [_numeric_idata, _mixed_idata], ids=["numeric", "mixed"])
def test_write_idata_round_trip(make, netcdf4, tmp_path, monkeypatch):
    if netcdf4:
        pytest.importorskip("netCDF4")
    else:  # the fallback when the netCDF4 library is not installed
        monkeypatch.setattr(records, "_netcdf4_module", lambda: None)
    idata = make()
    write_idata(idata, tmp_path / "all.nc", groups=None)
    _assert_same(idata, load_idata(tmp_path / "all.nc"), list(idata.children))
    write_idata(idata, tmp_path / "default.nc")
    kept = [g for g in idata.children if g in UNIT_GROUPS]
    assert "posterior_predictive" not in kept
    _assert_same(idata, load_idata(tmp_path / "default.nc"), kept)
    assert not list(tmp_path.glob(".*.tmp"))


def test_batch_groups_and_cpu_seconds(tmp_path):
    units = {"a": {"y": [0.0, 0.1]}, "b": {"y": [1.0]}}
    table = run_batch(normal_mean_fit, units, tmp_path / "default", local=True)
    assert (table["cpu_seconds"] > 0).all() and (table["cpu_seconds"] < 60).all()
    assert list(load_idata(tmp_path / "default" / "units" / "a.nc").children) == [
        "posterior", "log_likelihood", "observed_data"
    ]  # fmt: skip
    run_batch(normal_mean_fit, units, tmp_path / "post", local=True, groups=["posterior"])
    assert list(load_idata(tmp_path / "post" / "units" / "b.nc").children) == ["posterior"]


def test_summary_rows_appended_then_sorted(tmp_path):
    units = {name: {"y": [float(i)], "name": name} for i, name in enumerate(["c", "a", "b"])}
    first = run_batch(normal_mean_fit, {"c": units["c"]}, tmp_path, local=True)
    assert list(first["unit"]) == ["c"]
    # A later unit fails (an error row with a traceback) and another brings a new column.
    table = run_batch(
        normal_mean_fit,
        units,
        tmp_path,
        local=True,
        options={"fail_on": "a"},
        summarize=lambda idata: {"mu_mean": float(idata.posterior["mu"].mean())},
    )
    on_disk = pd.read_csv(tmp_path / "summary.csv")
    assert on_disk["unit"].tolist() == ["a", "b", "c"] == table["unit"].tolist()
    assert on_disk.set_index("unit").loc["a", "status"] == "error"
    assert "traceback" not in on_disk.columns
    assert np.isfinite(on_disk.set_index("unit").loc["b", "mu_mean"])

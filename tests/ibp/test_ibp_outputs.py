"""The IBP's figures say what they show, and a DataFrame's column names label the model's dims."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from pmctx.models import ibp

from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.outputs import plot_bases, plot_n_active, write_outputs


def _frames(n=12, random_seed=1):
    data = visuomotor_data(n, random_seed=random_seed)
    F = pd.DataFrame(data.F, columns=["fx", "fy"])
    X = pd.DataFrame(data.X, columns=[f"px{i}" for i in range(data.X.shape[1])])
    return data, F, X


def test_dataframe_column_names_become_the_coords_of_force_dim_and_pixel():
    data, F, X = _frames()
    model = ibp.build_model(F, X, K_max=4)
    assert list(model.coords["force_dim"]) == ["fx", "fy"]
    assert list(model.coords["pixel"]) == list(X.columns)
    # arrays keep numbered coords
    assert list(ibp.build_model(data.F, K_max=4).coords["force_dim"]) == [0, 1]


@pytest.fixture(scope="module")
def dataframe_fit():
    data, F, X = _frames()
    idata = ibp.sample(F, X, K_max=6, draws=20, tune=10, chains=2, cores=1, random_seed=0,
                       sigma_n=0.3, check_convergence=False, progressbar=False)  # fmt: skip
    return data, idata


def test_a_fit_on_dataframes_keeps_their_column_names(dataframe_fit):
    _, idata = dataframe_fit
    assert list(idata.posterior["A"]["force_dim"].values) == ["fx", "fy"]
    assert list(idata.posterior["F_hat"]["force_dim"].values) == ["fx", "fy"]
    assert str(idata.posterior["Y"]["pixel"].values[0]) == "px0"


def test_written_figures_label_their_axes(dataframe_fit, tmp_path, monkeypatch):
    import pmctx.io

    data, idata = dataframe_fit
    figures = {}
    save = pmctx.io.save_figure

    def keep(fig, path, **kwargs):
        figures[path.name] = fig
        return save(fig, path, **kwargs)

    monkeypatch.setattr(pmctx.io, "save_figure", keep)
    write_outputs(idata, tmp_path, reference=data.Z, side=data.side)
    assert {"ibp_trace.png", "ibp_n_active.png", "ibp_bases.png"} <= set(figures)

    # trace: the discrete n_active is a bar chart of probabilities, every axes is labelled
    trace = figures["ibp_trace.png"].axes
    n_active_axes = trace[1]
    assert n_active_axes.get_xlabel() == "n_active"
    assert n_active_axes.get_ylabel() == "posterior probability"
    bars = [c for c in n_active_axes.containers if isinstance(c, BarContainer)]
    assert bars and sum(p.get_height() for p in bars[0]) == pytest.approx(1.0)
    assert all(ax.get_ylabel() for ax in trace)
    assert trace[3].get_ylabel() == "density"  # loglik is continuous

    counts = figures["ibp_n_active.png"].axes[0]
    assert counts.get_ylabel() == "posterior probability"
    assert any(isinstance(c, BarContainer) for c in counts.containers)

    # bases: say it is the posterior mean; force axes named by the DataFrame's columns
    bases = figures["ibp_bases.png"]
    assert "posterior mean" in bases._suptitle.get_text().lower()
    k = len(bases.axes) // 2
    force_axes = bases.axes[k:]
    assert all(ax.get_xlabel() == "fx" and ax.get_ylabel() == "fy" for ax in force_axes)


def test_plot_bases_labels_force_axes_by_default():
    fig = plot_bases(np.eye(4, 9), A=np.ones((4, 2)), suptitle="true features")
    assert fig.axes[4].get_xlabel() == "force dim 0"
    assert fig.axes[4].get_ylabel() == "force dim 1"
    assert fig._suptitle.get_text() == "true features"


def test_plot_n_active_is_a_bar_chart_of_probabilities_on_integer_ticks():
    ax = plot_n_active(np.array([[3, 4, 4, 6]]))
    (bars,) = ax.containers
    assert [p.get_x() + p.get_width() / 2 for p in bars] == [3, 4, 6]
    assert [p.get_height() for p in bars] == [0.25, 0.5, 0.25]
    ticks = ax.get_xticks()
    assert np.allclose(ticks, np.round(ticks))


def test_moved_functions_stay_reachable_from_the_model_module():
    from pmctx.ibp import inputs, outputs, start

    assert ibp.plot_bases is outputs.plot_bases
    assert ibp.write_outputs is outputs.write_outputs
    assert ibp.subsample_initvals is start.subsample_initvals
    assert ibp.validate_inputs is inputs.validate_inputs
    assert ibp.SPEC.write_outputs is outputs.write_outputs
    assert ibp.SPEC.demo is ibp.demo

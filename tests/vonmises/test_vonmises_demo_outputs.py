"""The von Mises family's demo data, prior maps, figures and output files
(:mod:`pmctx.vonmises.demo`, :mod:`~pmctx.vonmises.simulate`, :mod:`~pmctx.vonmises.plots`,
:mod:`~pmctx.vonmises.outputs`): the figures break lines at the +-pi wrap and explain the
pinwheel markers."""

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pytest

import pmctx.vonmises.outputs as outputs
from pmctx.vonmises.demo import DEMO_KAPPAS, demo_data, plot_prior_samples
from pmctx.vonmises.plots import (
    PINWHEEL_LABELS,
    break_at_wraps,
    plot_angle_series,
    plot_orientation_map,
    plot_reconstruction,
)
from pmctx.vonmises.simulate import sample_prior


def test_interrupted_prior_sampling_returns_finished_maps(monkeypatch):
    import pmctx.vonmises.simulate as simulate
    from pmctx import PmctxWarning

    calls = {"n": 0}
    real = simulate.SWEEPS["augmented"]

    def interrupting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 6:  # during the third map
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setitem(simulate.SWEEPS, "augmented", interrupting)
    with pytest.warns(PmctxWarning, match="Interrupted"):
        maps = sample_prior((4, 4), kappa=1.0, rank=2, n_sweeps=3, n_maps=5, random_seed=0)
    assert maps.shape == (2, 4, 4)


def test_demo_data_takes_kappa_with_the_best_held_out_score():
    data = demo_data(12, random_seed=3)
    curve = data["cv"]
    assert sorted(curve["kappa"]) == sorted(DEMO_KAPPAS)
    assert data["kappa"] == curve.loc[curve["score"].idxmax(), "kappa"]
    assert data["theta_obs"].shape == data["truth"].shape == (12, 12)
    assert 0.1 < np.isnan(data["theta_obs"]).mean() < 0.4


@pytest.mark.parametrize(
    ("size", "error", "match"),
    [(1, ValueError, "size must be >= 2, got 1"), (2.5, TypeError, "size must be an integer")],
)
def test_demo_data_rejects_a_bad_size(size, error, match):
    with pytest.raises(error, match=match):
        demo_data(size)


def _wrapping_draws(n_draws=40, length=30, seed=0):
    """Angle draws whose mean drifts upwards through +pi twice (wraps to -pi)."""
    rng = np.random.default_rng(seed)
    drift = np.linspace(2.0, 2.0 + 4.0 * np.pi - 1.0, length)
    return np.mod(drift + 0.1 * rng.normal(size=(n_draws, length)) + np.pi, 2 * np.pi) - np.pi


def _jumps(values):
    finite = values[~np.isnan(values)]
    return np.abs(np.diff(finite))


def test_break_at_wraps_inserts_nan_between_wrapping_neighbours_only():
    t, x, lo = break_at_wraps([0, 1, 2, 3, 4], [2.9, 3.1, -3.1, -2.0, 3.0], [0, 1, 2, 3, 4])
    assert t.tolist() == [0, 1, 1.5, 2, 3, 3.5, 4]
    assert np.isnan(x).tolist() == [False, False, True, False, False, True, False]
    assert np.isnan(lo).tolist() == np.isnan(x).tolist()
    t, x = break_at_wraps([0, 1, 2], [0.0, 1.0, 2.0])  # no wrap: unchanged
    assert t.tolist() == [0, 1, 2] and not np.isnan(x).any()


def test_smoothing_line_and_band_break_where_the_angle_wraps():
    draws = _wrapping_draws()
    mean = np.angle(np.exp(1j * draws).mean(axis=0))
    n_wraps = int((np.abs(np.diff(mean)) > np.pi).sum())
    assert n_wraps == 2
    fig = plot_angle_series(draws, y=draws[0], truth=draws[1])
    ax = fig.axes[0]
    line = next(ln for ln in ax.lines if ln.get_label() == "posterior circular mean")
    ydata = np.asarray(line.get_ydata(), dtype=float)
    assert np.isnan(ydata).sum() == n_wraps
    # Between any two drawn neighbours the line moves less than half a turn: no spikes.
    segments = np.split(ydata, np.flatnonzero(np.isnan(ydata)))
    assert all((np.abs(np.diff(s[~np.isnan(s)])) < np.pi).all() for s in segments)
    (band,) = ax.collections
    assert band.get_label() == "90% band"
    assert len(band.get_paths()) == n_wraps + 1  # one polygon per unwrapped stretch
    for path in band.get_paths():  # no vertical spike along an edge of the band
        assert (np.abs(np.diff(path.vertices[:, 1])) < np.pi).all()
    plt.close(fig)


def test_chain_outputs_write_the_broken_smoothing_figure(tmp_path, monkeypatch):
    saved = {}

    def keep(fig, path, **kwargs):
        saved[path.name] = fig
        return path

    monkeypatch.setattr(outputs, "write_standard_outputs", lambda idata, out_dir, prefix: [])
    monkeypatch.setattr(outputs, "save_figure", keep)
    idata = az.from_dict({"posterior": {"x": _wrapping_draws().reshape(2, 20, -1)}})
    paths = outputs.write_chain_outputs(idata, tmp_path)
    assert [p.name for p in paths] == ["vonmises-chain_smoothing.png"]
    line = saved["vonmises-chain_smoothing.png"].axes[0].lines[0]
    assert np.isnan(np.asarray(line.get_ydata(), dtype=float)).sum() == 2
    plt.close("all")


def _pinwheel_map():
    """A 2 x 3 map with one +1/2 and one -1/2 pinwheel."""
    return np.array([[0.0, np.pi / 4, 0.0], [3 * np.pi / 4, np.pi / 2, 3 * np.pi / 4]])


def test_pinwheel_markers_carry_their_meaning():
    fig, ax = plt.subplots()
    plot_orientation_map(ax, _pinwheel_map())
    labels = [c.get_label() for c in ax.collections]
    assert labels == [PINWHEEL_LABELS[0.5], PINWHEEL_LABELS[-0.5]]
    assert "+1/2" in labels[0] and "clockwise" in labels[0]
    assert "-1/2" in labels[1] and "counter-clockwise" in labels[1]
    plt.close(fig)


def _legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_reconstruction_figure_legend_names_the_pinwheel_markers():
    theta = _pinwheel_map()
    fig = plot_reconstruction(theta, theta, np.zeros_like(theta), truth=theta)
    assert _legend_texts(fig) == [PINWHEEL_LABELS[0.5], PINWHEEL_LABELS[-0.5]]
    (legend,) = fig.legends
    markers = [h.get_marker() for h in legend.legend_handles]
    assert markers == ["o", "x"]  # as plot_orientation_map draws them
    plt.close(fig)


def test_prior_samples_figure_legend_names_the_pinwheel_markers():
    fig = plot_prior_samples(6, ranks=(2, 3), kappas=(1.0,), n_sweeps=2, random_seed=0)
    assert len(fig.axes) == 2
    assert _legend_texts(fig) == [PINWHEEL_LABELS[0.5], PINWHEEL_LABELS[-0.5]]
    plt.close(fig)

"""Plots of orientation maps (cyclic colour for orientation, pinwheels marked and explained
by :func:`add_pinwheel_legend`) and of smoothed angular time series (:func:`plot_angle_series`,
lines and bands broken where the angle wraps at +-pi).

Examples
--------
>>> import numpy as np, matplotlib.pyplot as plt
>>> from pmctx.vonmises.plots import plot_orientation_map
>>> fig, ax = plt.subplots()
>>> im = plot_orientation_map(ax, np.zeros((4, 4)))
>>> plt.close(fig)
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.maps import pinwheel_charges
from pmctx.vonmises.potentials import wrap_angle

__all__ = [
    "PINWHEEL_LABELS",
    "add_pinwheel_legend",
    "break_at_wraps",
    "orientation_colorbar",
    "plot_angle_series",
    "plot_orientation_map",
    "plot_reconstruction",
    "plot_smoothness_trace",
    "plot_uncertainty_map",
]

#: What the pinwheel markers mean, by charge. On the image (row 0 at the top) the corners
#: (i, j) -> (i, j+1) -> (i+1, j+1) -> (i+1, j) of a +1/2 plaquette run clockwise.
PINWHEEL_LABELS = {
    0.5: "+1/2 pinwheel: orientation grows clockwise around it",
    -0.5: "-1/2 pinwheel: orientation grows counter-clockwise around it",
}

_PINWHEEL_MARKERS = {
    0.5: dict(marker="o", facecolors="none", edgecolors="white"),
    -0.5: dict(marker="x", color="black"),
}


def plot_orientation_map(ax, theta, *, mark_pinwheels: bool = True, title: str | None = None):
    """Show orientations ``theta`` in ``[0, pi)`` with a cyclic colour map on ``ax``.

    ``+1/2`` pinwheels are marked with white circles, ``-1/2`` with black crosses (labelled
    with :data:`PINWHEEL_LABELS`; :func:`add_pinwheel_legend` explains them in a figure).
    Returns the image artist.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to draw on.
    theta : array_like (M, N)
        Orientations.
    mark_pinwheels : bool, default True
        Mark the pinwheels.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.image.AxesImage
        The image.
    """
    theta = np.mod(np.asarray(theta, dtype=np.float64), np.pi)
    image = ax.imshow(theta, cmap="hsv", vmin=0.0, vmax=np.pi, interpolation="nearest")
    if mark_pinwheels and min(theta.shape) > 1:
        charges = pinwheel_charges(theta)
        for sign, style in _PINWHEEL_MARKERS.items():
            rows, cols = np.nonzero(charges == sign)
            ax.scatter(
                cols + 0.5, rows + 0.5, s=18, linewidths=1.0, label=PINWHEEL_LABELS[sign], **style
            )
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return image


def add_pinwheel_legend(fig):
    """A figure legend below the panels that says what the pinwheel markers are.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure with maps from :func:`plot_orientation_map`.

    Returns
    -------
    matplotlib.legend.Legend
        The legend (grey, so that the white circles show).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> image = plot_orientation_map(ax, np.zeros((4, 4)))
    >>> [t.get_text()[:13] for t in add_pinwheel_legend(fig).get_texts()]
    ['+1/2 pinwheel', '-1/2 pinwheel']
    >>> plt.close(fig)
    """
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], linestyle="none", markersize=6, label=PINWHEEL_LABELS[0.5],
               marker="o", markerfacecolor="none", markeredgecolor="white"),
        Line2D([], [], linestyle="none", markersize=6, label=PINWHEEL_LABELS[-0.5],
               marker="x", color="black"),
    ]  # fmt: skip
    return fig.legend(
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8,
        facecolor="0.6", framealpha=1.0,
    )  # fmt: skip


def orientation_colorbar(fig, image, ax, *, label: str = "orientation (deg)"):
    """Colour key of an orientation map from :func:`plot_orientation_map`, in degrees.

    Ticks at 0, 45, 90, 135 and 180 degrees (the colour map is cyclic: 0 and 180 are the
    same orientation and the same colour). Returns the colour bar.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    image : matplotlib.image.AxesImage
        From :func:`plot_orientation_map`.
    ax : matplotlib.axes.Axes
        Axes the bar is attached to.
    label : str, default "orientation (deg)"
        Bar label.

    Returns
    -------
    matplotlib.colorbar.Colorbar
        The colour bar.
    """
    bar = fig.colorbar(image, ax=ax, fraction=0.046, ticks=np.linspace(0.0, np.pi, 5))
    bar.ax.set_yticklabels(["0", "45", "90", "135", "180"])
    bar.set_label(label, fontsize=8)
    return bar


def plot_uncertainty_map(ax, circular_sd, *, title: str | None = None):
    """Show a map of posterior circular standard deviations (radians of orientation).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to draw on.
    circular_sd : array_like (M, N)
        Circular standard deviations.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.image.AxesImage
        The image.
    """
    image = ax.imshow(np.asarray(circular_sd), cmap="magma", interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return image


def plot_reconstruction(theta_obs, mean, circular_sd, *, truth=None):
    """Figure with (true map,) observations, posterior mean and posterior circular sd.

    Parameters
    ----------
    theta_obs : array_like (M, N)
        Observed orientations (NaN where missing).
    mean : array_like (M, N)
        Posterior mean orientation.
    circular_sd : array_like (M, N)
        Posterior circular sd.
    truth : array_like (M, N), optional
        True orientations.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    import matplotlib.pyplot as plt

    panels = [("observed (white: missing)", theta_obs), ("posterior mean", mean)]
    if truth is not None:
        panels.insert(0, ("true map", truth))
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(3.2 * (len(panels) + 1), 3.4))
    for ax, (title, values) in zip(axes, panels):
        values = np.asarray(values, dtype=np.float64)
        image = plot_orientation_map(
            ax, values, mark_pinwheels=not np.isnan(values).any(), title=title
        )
    orientation_colorbar(fig, image, axes[-2])
    image = plot_uncertainty_map(axes[-1], circular_sd, title="posterior circular sd")
    fig.colorbar(image, ax=axes[-1], fraction=0.046).set_label("rad", fontsize=8)
    add_pinwheel_legend(fig)
    return fig


def plot_smoothness_trace(smoothness_by_chain):
    """Trace plot of the map smoothness statistic, one line per chain ``(chain, draw)``.

    Parameters
    ----------
    smoothness_by_chain : array_like (chain, draw)
        Smoothness per draw.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    for chain, values in enumerate(np.atleast_2d(smoothness_by_chain)):
        ax.plot(values, lw=0.8, label=f"chain {chain}")
    ax.set_xlabel("draw")
    ax.set_ylabel("mean cos of neighbour differences")
    ax.legend(fontsize=8)
    return fig


def break_at_wraps(t, values, *others, period: float = 2.0 * np.pi):
    """Insert NaN where ``values`` wraps (a step of more than half a period), so that a line
    or band drawn through them stops at the edge instead of crossing the plot.

    Parameters
    ----------
    t : array_like (T,)
        Positions (e.g. time steps).
    values : array_like (T,)
        Angles whose wraps are found (e.g. a circular mean in ``[-pi, pi)``).
    *others : array_like (T,)
        Further series broken at the same places (e.g. a band's lower and upper ends).
    period : float, default 2 pi
        Period of ``values``.

    Returns
    -------
    tuple of numpy.ndarray
        ``t`` with the midpoint of each wrapping step inserted, then ``values`` and each of
        ``others`` with NaN inserted there.

    Examples
    --------
    >>> t, x = break_at_wraps([0, 1, 2, 3], [3.0, 3.1, -3.1, -3.0])
    >>> t.tolist(), x.tolist()
    ([0.0, 1.0, 1.5, 2.0, 3.0], [3.0, 3.1, nan, -3.1, -3.0])
    """
    t = np.asarray(t, dtype=np.float64)
    series = [np.asarray(s, dtype=np.float64) for s in (values, *others)]
    cuts = np.flatnonzero(np.abs(np.diff(series[0])) > period / 2.0) + 1
    t_cut = np.insert(t, cuts, (t[cuts - 1] + t[cuts]) / 2.0)
    return (t_cut, *(np.insert(s, cuts, np.nan) for s in series))


def plot_angle_series(draws, *, y=None, truth=None, level: float = 0.9):
    """Posterior circular mean of an angular time series with a central band, broken at the
    +-pi wrap, with the observations and (if given) the true angles.

    The band is ``mean +- h``, ``h`` the ``level`` quantile of the draws' absolute circular
    deviation from the mean. Where the mean wraps between two time steps, line and band stop
    at the plot's edge and restart at the other (:func:`break_at_wraps`).

    Parameters
    ----------
    draws : array_like (..., T)
        Posterior draws of the angles in radians (leading axes are pooled, e.g. chain, draw).
    y : array_like (T,), optional
        Observed angles (NaN where missing).
    truth : array_like (T,), optional
        True angles.
    level : float, default 0.9
        Mass of the band.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> draws = np.array([[3.0, 3.1, -3.1], [3.0, 3.1, -3.1]])
    >>> fig = plot_angle_series(draws)
    >>> np.isnan(fig.axes[0].lines[0].get_ydata()).tolist()
    [False, False, True, False]
    >>> plt.close(fig)
    """
    import matplotlib.pyplot as plt

    x = np.asarray(draws, dtype=np.float64)
    x = x.reshape(-1, x.shape[-1])
    mean = np.angle(np.mean(np.exp(1j * x), axis=0))
    half = np.quantile(np.abs(wrap_angle(x - mean)), level, axis=0)
    t = np.arange(x.shape[1])
    t_cut, mean_cut, lower, upper = break_at_wraps(t, mean, mean - half, mean + half)
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.fill_between(t_cut, lower, upper, alpha=0.3, label=f"{level:.0%} band")
    ax.plot(t_cut, mean_cut, lw=1, label="posterior circular mean")
    if y is not None:
        ax.plot(t, y, ".", ms=3, color="k", label="observed")
    if truth is not None:
        ax.plot(t, truth, "x", ms=3, color="C3", label="truth")
    ax.set(xlabel="time step", ylabel="angle (rad, wraps at +-pi)", ylim=(-np.pi - 1, np.pi + 1))
    ax.legend(loc="upper right", fontsize=7)
    return fig

"""Plots of orientation maps: cyclic colour for orientation, pinwheels marked.

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

__all__ = [
    "orientation_colorbar",
    "plot_orientation_map",
    "plot_reconstruction",
    "plot_smoothness_trace",
    "plot_uncertainty_map",
]


def plot_orientation_map(ax, theta, *, mark_pinwheels: bool = True, title: str | None = None):
    """Show orientations ``theta`` in ``[0, pi)`` with a cyclic colour map on ``ax``.

    ``+1/2`` pinwheels are marked with white circles, ``-1/2`` with black crosses.
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
        for sign, style in (
            (0.5, dict(marker="o", facecolors="none", edgecolors="white")),
            (-0.5, dict(marker="x", color="black")),
        ):
            rows, cols = np.nonzero(charges == sign)
            ax.scatter(cols + 0.5, rows + 0.5, s=18, linewidths=1.0, **style)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return image


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

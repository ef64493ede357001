"""Plots of latent-cause filtering results: V_t across phases and the posterior over causes.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from pmctx.conditioning import particle_filter, shipped_design
>>> from pmctx.conditioning.plots import plot_V
>>> d = shipped_design("renewal_aba", n_acquisition=4, n_extinction=4)
>>> ax = plot_V({"ABA": particle_filter(d, n_particles=20, random_seed=0)}, design=d)
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_V", "plot_cause_posterior"]


def _phase_lines(ax, design):
    if design is None:
        return
    for name, sl in design.phase_slices().items():
        ax.axvline(sl.start - 0.5, color="0.8", lw=0.8)
        ax.text(sl.start, 1.02, name, fontsize=8, transform=ax.get_xaxis_transform())


def _integer_ticks(ax, *, y=True):
    # Trials and causes are whole numbers: no ticks at 2.5, 7.5.
    from matplotlib.ticker import MaxNLocator

    for axis in (ax.xaxis, ax.yaxis) if y else (ax.xaxis,):
        axis.set_major_locator(MaxNLocator(integer=True))


def plot_V(results, *, design=None, ax=None):
    """Plot ``V_t`` of one or several results (a dict label -> result) against trial.

    Parameters
    ----------
    results : CRPFilterResult or dict
        One filter result, or ``{label: result}``.
    design : Design, optional
        Draws the phase boundaries.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    if not isinstance(results, dict):
        results = {"V": results}
    for label, res in results.items():
        ax.plot(np.arange(len(res.V)), res.V, marker=".", label=str(label))
    ax.axhline(0.5, color="0.5", ls=":", lw=0.8)
    _phase_lines(ax, design)
    ax.set(xlabel="trial", ylabel="V (predicted P(US))", ylim=(0, 1))
    _integer_ticks(ax, y=False)
    ax.legend(fontsize=8, loc="lower left")
    return ax


def plot_cause_posterior(result, *, design=None, ax=None):
    """Heat map of the filtering posterior over causes (cause x trial).

    Parameters
    ----------
    result : CRPFilterResult
        A filter result.
    design : Design, optional
        Draws the phase boundaries.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on (with a colour bar).
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 2.5))
    post = result.cause_posterior
    im = ax.imshow(post.T, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=1)
    _phase_lines(ax, design)
    ax.set(xlabel="trial", ylabel="cause")
    _integer_ticks(ax)
    ax.figure.colorbar(im, ax=ax, label="P(cause | data)")
    return ax

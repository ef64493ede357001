"""The files an IBP fit writes and its plots: traces, the number of features, the bases.

:func:`write_outputs` writes the standard outputs of a fit (posterior, summary, diagnostics)
and three figures: the traces of the label-invariant quantities
(:func:`pmctx.io.plot_traces`), the posterior probability of each number of active features
(:func:`plot_n_active`) and the posterior mean of every feature's cue image and force vector
(:func:`plot_bases`).

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from pmctx.ibp.data import bar_images
>>> fig = plot_bases(bar_images(6), A=np.eye(4, 2))
>>> fig.axes[4].get_xlabel()
'force dim 0'
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_bases", "plot_n_active", "write_outputs"]


def plot_bases(Y, A=None, *, side=None, titles=None, force_labels=None, suptitle=None):
    """Images of visual basis rows (and force vectors) side by side; returns the figure.

    Parameters
    ----------
    Y : array_like
        Visual bases (feature, pixel), drawn as square images when the pixel count is a square
        (else as bars).
    A : array_like, optional
        Force vectors (feature, force_dim), drawn as arrows under the images (the first two
        force dims).
    side : int, optional
        Image side; default: the square root of the pixel count.
    titles : list of str, optional
        One title per feature.
    force_labels : list of str, optional
        Names of the first two force dims, for the arrow axes (default ``"force dim 0"``,
        ``"force dim 1"``).
    suptitle : str, optional
        A title over the figure, e.g. saying whether it shows a posterior mean or the truth.

    Returns
    -------
    matplotlib.figure.Figure
        One column per feature.

    Examples
    --------
    >>> from pmctx.ibp.data import bar_images
    >>> fig = plot_bases(bar_images(6), A=np.eye(4, 2), suptitle="true features")
    >>> len(fig.axes) >= 4
    True
    """
    import matplotlib.pyplot as plt

    Y = np.asarray(Y, dtype=float)
    k = Y.shape[0]
    side = side or round(float(np.sqrt(Y.shape[1])))
    labels = list(force_labels or ["force dim 0", "force dim 1"])
    fig, axes = plt.subplots(2 if A is not None else 1, k, figsize=(2.0 * k, 4.3), squeeze=False)
    for j in range(k):
        ax = axes[0, j]
        if side * side == Y.shape[1]:
            ax.imshow(Y[j].reshape(side, side), cmap="gray_r", vmin=0, vmax=1)
        else:
            ax.bar(np.arange(Y.shape[1]), Y[j])
        ax.set_title(titles[j] if titles else f"feature {j}")
        ax.set_xticks([])
        ax.set_yticks([])
        if A is not None:
            A = np.asarray(A, dtype=float)
            a, fa = A[j], axes[1, j]
            fa.quiver(0, 0, a[0], a[1] if a.size > 1 else 0, angles="xy", scale_units="xy",
                      scale=1)  # fmt: skip
            lim = max(2.0, float(np.abs(A).max()) * 1.2)
            fa.set_xlim(-lim, lim)
            fa.set_ylim(-lim, lim)
            fa.set_aspect("equal")
            fa.set_xlabel(labels[0], fontsize=8)
            if A.shape[1] > 1:
                fa.set_ylabel(labels[1], fontsize=8)
            fa.tick_params(labelsize=7)
    axes[0, 0].set_ylabel("cue image")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def plot_n_active(n_active, *, ax=None):
    """Bar chart of the posterior probability of each number of active features.

    Parameters
    ----------
    n_active : array_like of int
        Draws of the number of active features (any shape; pooled).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> ax = plot_n_active([3, 4, 4, 5])
    >>> [float(bar.get_height()) for bar in ax.patches]
    [0.25, 0.5, 0.25]
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    values, counts = np.unique(np.asarray(n_active).astype(np.int64).ravel(), return_counts=True)
    ax.bar(values, counts / counts.sum(), width=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("number of active features K+")
    ax.set_ylabel("posterior probability")
    return ax


def _force_labels(posterior):
    if "A" not in posterior or "force_dim" not in posterior["A"].coords:
        return None
    names = posterior["A"]["force_dim"].values
    return [f"force dim {v}" if names.dtype.kind in "iu" else str(v) for v in names]


def write_outputs(idata, out_dir, prefix="ibp", *, reference=None, side=None, data=None) -> list:
    """Write the standard outputs (posterior, summary, diagnostics) and the IBP plots.

    ``<prefix>_posterior.nc``, ``<prefix>_summary.csv`` (label-invariant quantities),
    ``<prefix>_diagnostics.csv`` (convergence report), ``<prefix>_trace.png``,
    ``<prefix>_n_active.png`` and ``<prefix>_bases.png`` (the posterior mean of every
    feature, aligned to ``reference`` if given).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`pmctx.models.ibp.sample`.
    out_dir : path-like
        Output folder.
    prefix : str, default "ibp"
        File name prefix.
    reference : array_like, optional
        A true ``Z`` to align the plotted features to (Hungarian matching).
    side : int, optional
        Image side of the bases.
    data : dict, optional
        The loaded data (:meth:`pmctx.registry.ModelSpec.fit_file` passes it); unused (the
        plots read the posterior).

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = write_outputs(idata, "pmctx-out")  # doctest: +SKIP
    """
    from pmctx.ibp.diagnostics import LABEL_INVARIANT, align_features
    from pmctx.io import plot_traces, save_figure, write_standard_outputs

    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    fig = plot_traces(idata, list(LABEL_INVARIANT))
    paths.append(save_figure(fig, out_dir / f"{prefix}_trace.png"))
    ax = plot_n_active(idata.posterior["n_active"].values)
    paths.append(save_figure(ax.figure, out_dir / f"{prefix}_n_active.png"))
    aligned = align_features(idata, reference=reference)
    if "Y" in aligned:
        A = aligned["A"].mean(axis=(0, 1)) if "A" in aligned else None
        fig = plot_bases(
            aligned["Y"].mean(axis=(0, 1)),
            A,
            side=side,
            force_labels=_force_labels(idata.posterior),
            suptitle="Posterior mean of each feature (labels aligned across draws): "
            + ("cue image (top), force vector (bottom)" if A is not None else "cue image"),
        )
        paths.append(save_figure(fig, out_dir / f"{prefix}_bases.png"))
    return paths

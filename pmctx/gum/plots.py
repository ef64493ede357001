"""Figures of a GUM fit: each function's posterior mean and band, optionally against the truth.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> len(plot_functions(g, g.laplace(draws=20)).axes)
1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pmctx.gum.model import GumModel

__all__ = ["INFERENCE_LABELS", "inference_label", "plot_functions"]


#: Figure labels of the GUM's inference routes (``posterior.attrs["inference"]``).
INFERENCE_LABELS = {
    "laplace": "Laplace approximation",
    "advi": "mean-field ADVI",
    "fullrank_advi": "full-rank ADVI",
}


def inference_label(idata) -> str:
    """How a GUM fit was made, in words: Laplace, ADVI or NUTS (empty when unknown).

    Parameters
    ----------
    idata : xarray.DataTree
        A GUM fit.

    Returns
    -------
    str
        Such as ``"Laplace approximation"`` or ``"NUTS"``.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict({"posterior": {"f_x": np.zeros((1, 2, 3))}})
    >>> idata.posterior.attrs["inference"] = "laplace"
    >>> inference_label(idata)
    'Laplace approximation'
    """
    method = idata.posterior.attrs.get("inference")
    if method in INFERENCE_LABELS:
        return INFERENCE_LABELS[method]
    stats = idata.sample_stats if "sample_stats" in idata.children else {}
    return "NUTS" if "diverging" in stats or "tree_depth" in stats or "depth" in stats else ""


def plot_functions(gum_model: GumModel, idata, *, truth: dict | None = None, title: str = ""):
    """One panel per function: posterior mean and 94% band, optionally against the truth.

    Parameters
    ----------
    gum_model : pmctx.gum.GumModel
        The model (its function grids and names).
    idata : xarray.DataTree
        A fit of it (NUTS or Laplace).
    truth : dict, optional
        Function name -> true values on the grid, drawn dashed.
    title : str, default ""
        Appended to every panel's title.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per function.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)

    >>> fig = plot_functions(g, idata)
    >>> len(fig.axes)
    1
    """
    import matplotlib.pyplot as plt

    names = gum_model.function_names
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.4), squeeze=False)
    method = inference_label(idata)
    if method:
        fig.suptitle(f"Posterior functions, {method}", fontsize=10)
    for ax, name in zip(axes[0], names):
        summary = gum_model.function_summary(idata, name)
        x = np.arange(len(summary)) if summary["x"].dtype == object else summary["x"]
        ax.fill_between(x, summary["lower"], summary["upper"], alpha=0.3, label="94% band")
        ax.plot(x, summary["mean"], "k-", label="posterior mean")
        if truth is not None and name in truth:
            ax.plot(x, truth[name], "r--", label="truth (constraints matched)")
        ax.set_title(f"{name} {title}".strip())
        ax.set_xlabel(name.split("_", 1)[-1])
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig

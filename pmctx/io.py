"""Results trees: construction, log-likelihood groups and files on disk.

One conversion path for every pmctx inference routine that does not go through
``pm.sample`` (particle filters, Laplace approximations, custom samplers): arrays with leading
``(chain, draw)`` axes in, an :class:`xarray.DataTree` with ArviZ's group names and named dims
out (the results object of ArviZ 1 and PyMC 6).

Examples
--------
>>> import numpy as np
>>> from pmctx.io import to_inference_data
>>> idata = to_inference_data(
...     {"mu": np.zeros((2, 10))},
...     log_likelihood={"y": np.full((2, 10, 3), -1.0)},
...     observed_data={"y": np.array([0.1, 0.2, 0.3])},
...     dims={"y": ["obs"]},
... )
>>> sorted(idata.children)
['log_likelihood', 'observed_data', 'posterior']
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr

from pmctx.trees import as_datatree

__all__ = [
    "LOG_LIKELIHOOD_GROUPS",
    "add_log_likelihood",
    "load_idata",
    "log_likelihood_view",
    "output_names",
    "plot_traces",
    "save_figure",
    "save_idata",
    "set_log_likelihood_groups",
    "to_inference_data",
    "write_standard_outputs",
    "write_summary",
]


#: Where pmctx keeps pointwise log-likelihoods. ``log_likelihood`` holds the one variable
#: LOO should use, so ``az.loo(idata)`` and ``az.compare`` need no argument;
#: ``log_likelihood_parts`` holds per-unit densities of one part of the data given another
#: (the IBP's forces given cues), for conditional questions; ``conditional_log_likelihood``
#: holds densities given sampled per-unit latents (diagnostics only: PSIS fails on them).
LOG_LIKELIHOOD_GROUPS = ("log_likelihood", "log_likelihood_parts", "conditional_log_likelihood")


def set_log_likelihood_groups(idata, main, *, parts=None, conditional=None):
    """Put pointwise log-likelihoods in their groups (:data:`LOG_LIKELIHOOD_GROUPS`), in place.

    Parameters
    ----------
    idata : xarray.DataTree
        The fit; its groups of these names are replaced.
    main : xarray.Dataset
        One variable: what LOO should use.
    parts, conditional : xarray.Dataset, optional
        ``log_likelihood_parts`` and ``conditional_log_likelihood`` (left out when None or
        empty).

    Returns
    -------
    xarray.DataTree
        ``idata``.

    Examples
    --------
    >>> import xarray as xr
    >>> ll = xr.Dataset({"joint": (("chain", "draw", "trial"), np.zeros((1, 2, 3)))})
    >>> idata = az.from_dict({"posterior": {"mu": np.zeros((1, 2))}})
    >>> idata = set_log_likelihood_groups(idata, ll, parts=ll.rename(joint="F"))
    >>> sorted(idata.children), list(idata.log_likelihood.data_vars)
    (['log_likelihood', 'log_likelihood_parts', 'posterior'], ['joint'])
    """
    idata = as_datatree(idata)
    if len(main.data_vars) != 1:
        raise ValueError(
            f"The log_likelihood group must hold one variable (what LOO uses), got "
            f"{list(main.data_vars)}; put the others in parts= or conditional=."
        )
    for name, group in zip(LOG_LIKELIHOOD_GROUPS, (main, parts, conditional), strict=True):
        if name in idata.children:
            del idata[name]
        if group is not None and len(group.data_vars):
            idata[name] = group
    return idata


def log_likelihood_view(idata, var_name: str):
    """``idata`` with ``var_name``, from whichever log-likelihood group holds it, as its only
    ``log_likelihood`` variable (for ``az.loo`` on a conditional question).

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        A fit.
    var_name : str
        A variable of one of :data:`LOG_LIKELIHOOD_GROUPS`.

    Returns
    -------
    xarray.DataTree
        Posterior and that one log-likelihood variable (shared, not copied).

    Raises
    ------
    ValueError
        When no log-likelihood group holds ``var_name`` (the message lists what there is).

    Examples
    --------
    >>> idata = az.from_dict({"posterior": {"mu": np.zeros((1, 2))},
    ...                      "log_likelihood": {"joint": np.zeros((1, 2, 3))}})
    >>> list(log_likelihood_view(idata, "joint").log_likelihood.data_vars)
    ['joint']
    """
    idata = as_datatree(idata)
    found = {}
    for group in LOG_LIKELIHOOD_GROUPS:
        if group in idata.children:
            found[group] = list(idata[group].data_vars)
            if var_name in idata[group].data_vars:
                return xr.DataTree.from_dict(
                    {
                        "posterior": idata["posterior"].to_dataset(),
                        "log_likelihood": idata[group].to_dataset()[[var_name]],
                    }
                )
    raise ValueError(f"No log-likelihood variable {var_name!r}; the fit has {found}.")


def _check_sample_axes(group: str, arrays: Mapping[str, np.ndarray]) -> None:
    for name, values in arrays.items():
        if np.ndim(values) < 2:
            raise ValueError(
                f"{group}[{name!r}] must have leading (chain, draw) axes, got shape "
                f"{np.shape(values)}. Add them, e.g. values[None, :] for a single chain."
            )


def to_inference_data(
    posterior: Mapping[str, np.ndarray],
    *,
    sample_stats: Mapping[str, np.ndarray] | None = None,
    log_likelihood: Mapping[str, np.ndarray] | None = None,
    observed_data: Mapping[str, np.ndarray] | None = None,
    constant_data: Mapping[str, np.ndarray] | None = None,
    coords: Mapping[str, np.ndarray] | None = None,
    dims: Mapping[str, list[str]] | None = None,
    attrs: Mapping[str, object] | None = None,
) -> xr.DataTree:
    """Build a results tree from dictionaries of arrays.

    Parameters
    ----------
    posterior : dict of str to ndarray
        Draws with leading ``(chain, draw)`` axes.
    sample_stats, log_likelihood : dict of str to ndarray, optional
        Same leading axes as ``posterior``. ``log_likelihood`` holds pointwise log
        likelihoods named after the observed variable, which ``az.loo`` needs.
    observed_data, constant_data : dict of str to ndarray, optional
        Arrays without sample axes.
    coords : dict, optional
        Coordinate values of named dims.
    dims : dict of str to list of str, optional
        Dim names of each variable (excluding ``chain`` and ``draw``); shared by all groups.
    attrs : dict, optional
        Attributes stored on every group (e.g. the inference method).

    Returns
    -------
    xarray.DataTree
        One child per group given, named as ArviZ names them.
    """
    for group, arrays in (
        ("posterior", posterior),
        ("sample_stats", sample_stats or {}),
        ("log_likelihood", log_likelihood or {}),
    ):
        _check_sample_axes(group, arrays)
    groups = {
        "posterior": dict(posterior),
        "sample_stats": dict(sample_stats) if sample_stats else None,
        "log_likelihood": dict(log_likelihood) if log_likelihood else None,
        "observed_data": dict(observed_data) if observed_data else None,
        "constant_data": dict(constant_data) if constant_data else None,
    }
    idata = az.from_dict(
        {k: v for k, v in groups.items() if v is not None},
        coords=dict(coords) if coords else None,
        dims=dict(dims) if dims else None,
    )
    # Every group carries ``attrs`` (az.from_dict would put them on the root only).
    for group in idata.children:
        idata[group].attrs.update(dict(attrs or {}))
    return idata


def add_log_likelihood(idata: xr.DataTree, model=None, var_names=None) -> xr.DataTree:
    """Add the pointwise ``log_likelihood`` group of ``model`` to ``idata`` (in place).

    A thin wrapper around :func:`pymc.compute_log_likelihood` that does nothing when the
    group already holds every requested variable.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        A fit of ``model``; extended in place (an ArviZ 0.x InferenceData is converted
        first, so use the returned tree).
    model : pm.Model, optional
        The model; default: the one of the enclosing ``with`` block.
    var_names : list of str, optional
        Observed variables to score; default: all of them.

    Returns
    -------
    xarray.DataTree
        ``idata`` with a ``log_likelihood`` group holding ``var_names``.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    ...     y = pm.Normal("y", mu, 1, observed=[0.1, -0.3])
    ...     idata = pm.sample(50, tune=50, chains=1, progressbar=False, random_seed=0)
    >>> "y" in add_log_likelihood(idata, model).log_likelihood
    True
    """
    idata = as_datatree(idata)
    model = pm.modelcontext(model)
    wanted = var_names or [rv.name for rv in model.observed_RVs]
    if "log_likelihood" in idata.children and all(v in idata.log_likelihood for v in wanted):
        return idata
    return pm.compute_log_likelihood(
        idata, var_names=wanted, model=model, extend_inferencedata=True, progressbar=False
    )


def save_idata(idata: xr.DataTree, path) -> Path:
    """Write ``idata`` to a NetCDF file and return its path (parent folders are created).

    One netCDF4 group per ArviZ group, the layout ArviZ 0.x wrote too.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        The fit to write.
    path : str or path-like
        The ``.nc`` file.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile, arviz as az, numpy as np
    >>> idata = az.from_dict({"posterior": {"mu": np.zeros((1, 3))}})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = save_idata(idata, f"{folder}/fits/mu.nc")
    ...     load_idata(path).posterior["mu"].shape
    (1, 3)
    """
    idata = as_datatree(idata)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    idata.to_netcdf(str(path), engine="netcdf4")
    return path


def load_idata(path) -> xr.DataTree:
    """Read a fit's NetCDF file written by :func:`save_idata`, or by pmctx versions before
    the ArviZ 1 port (an ArviZ 0.x ``InferenceData`` file: the same one group per ArviZ group).

    The groups are loaded into memory, so the file can be moved or deleted afterwards.

    Parameters
    ----------
    path : str or path-like
        The ``.nc`` file.

    Returns
    -------
    xarray.DataTree
        The fit.

    Raises
    ------
    FileNotFoundError
        When there is no file at ``path``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No InferenceData file at {path}.")
    # The netCDF4 library (a dependency) reads these files several times faster than
    # h5netcdf, ArviZ's default (the same datasets): a batch reads every unit's fit.
    idata = az.from_netcdf(str(path), engine="netcdf4")
    # from_netcdf is lazy: load so that the file can be moved or deleted afterwards.
    idata.load()
    idata.close()
    return idata


def write_summary(idata: xr.DataTree, path, *, var_names=None, **kwargs) -> Path:
    """Write ``az.summary`` of ``idata`` as CSV and return the path.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        The fit.
    path : str or path-like
        The ``.csv`` file (parent folders are created).
    var_names : list of str, optional
        Variables to summarise; default: all.
    **kwargs
        Passed to ``az.summary``.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    az.summary(as_datatree(idata), var_names=var_names, **kwargs).to_csv(path)
    return path


def save_figure(fig, path, *, dpi: int = 110) -> Path:
    """Save a matplotlib figure (or what ArviZ's plots return) as PNG and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure, matplotlib.axes.Axes, numpy.ndarray or arviz.PlotCollection
        What to save; for axes (or an array of them), their figure; for an ArviZ 1
        ``PlotCollection`` (what ``az.plot_*`` return), its Matplotlib figure.
    path : str or path-like
        The ``.png`` file (parent folders are created).
    dpi : int, default 110
        Resolution.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import matplotlib.pyplot as plt

    viz = getattr(fig, "viz", None)  # an ArviZ 1 PlotCollection keeps its figure there
    if viz is not None and "figure" in viz:
        fig = viz["figure"].item()
    if isinstance(fig, np.ndarray):
        fig = fig.ravel()[0].figure
    elif hasattr(fig, "figure") and not hasattr(fig, "savefig"):
        fig = fig.figure
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_traces(idata, var_names, *, dataset=None):
    """Trace (one line per chain) and pooled distribution of scalar quantities, one row each.

    A plain Matplotlib figure: ArviZ 0.2x's ``plot_trace`` calls a Matplotlib helper that
    Matplotlib 3.11 deprecates, which would print a warning on every fit.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        The fit (its ``posterior`` is plotted unless ``dataset`` is given).
    var_names : list of str
        Quantities to plot; names missing from the source are skipped. For a quantity with
        more dims its first element is drawn.
    dataset : xarray.Dataset, optional
        Plot from this dataset (with ``chain``, ``draw`` dims) instead, such as a model's
        invariants.

    Returns
    -------
    matplotlib.figure.Figure
        One row per quantity: traces (left) and, right, a bar chart of the posterior
        probability of each value for an integer-valued quantity (a count such as the number
        of features), else a density histogram.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    source = as_datatree(idata)["posterior"].to_dataset() if dataset is None else dataset
    names = [v for v in var_names if v in source]
    fig, axes = plt.subplots(len(names), 2, figsize=(8, 2.2 * len(names)), squeeze=False)
    for row, name in zip(axes, names):
        values = np.asarray(source[name].transpose("chain", "draw", ...).values, dtype=float)
        values = values.reshape(values.shape[0], values.shape[1], -1)[:, :, 0]
        for chain, trace in enumerate(values):
            row[0].plot(trace, lw=0.7, label=f"chain {chain}")
        row[0].set_ylabel(name)
        pooled = values.ravel()
        if np.all(pooled == np.round(pooled)) and np.unique(pooled).size <= 50:
            levels, counts = np.unique(pooled, return_counts=True)
            row[1].bar(levels, counts / pooled.size, width=0.8)
            row[1].xaxis.set_major_locator(MaxNLocator(integer=True))
            row[1].set_ylabel("posterior probability")
        else:
            row[1].hist(pooled, bins=30, density=True)
            row[1].set_ylabel("density")
        row[1].set_xlabel(name)
    axes[-1][0].set_xlabel("draw")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def output_names(model: str) -> dict[str, str]:
    """The file names every model writes: posterior, summary and diagnostics.

    Parameters
    ----------
    model : str
        The model's CLI name.

    Returns
    -------
    dict of str to str
        Keys ``posterior``, ``summary``, ``diagnostics``.

    Examples
    --------
    >>> output_names("crp")["diagnostics"]
    'crp_diagnostics.csv'
    """
    return {
        "posterior": f"{model}_posterior.nc",
        "summary": f"{model}_summary.csv",
        "diagnostics": f"{model}_diagnostics.csv",
    }


def write_standard_outputs(idata: xr.DataTree, out_dir, model: str, *, report=None):
    """Write ``<model>_posterior.nc``, ``<model>_summary.csv`` and ``<model>_diagnostics.csv``.

    The summary is :func:`pmctx.summary` (label-invariant quantities, circular statistics for
    angles); the diagnostics are :func:`pmctx.convergence.convergence_report` (one row per
    quantity).

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        The fit.
    out_dir : str or path-like
        Output folder (created if missing).
    model : str
        The model's CLI name (the files' prefix).
    report : pandas.DataFrame, optional
        A convergence report already computed (saves recomputing it).

    Returns
    -------
    list of pathlib.Path
        The three files, in the order above.
    """
    from pmctx.convergence import convergence_report
    from pmctx.summarize import summary

    idata = as_datatree(idata)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = output_names(model)
    paths = [save_idata(idata, out_dir / names["posterior"])]
    path = out_dir / names["summary"]
    summary(idata).to_csv(path, index_label="quantity")
    paths.append(path)
    path = out_dir / names["diagnostics"]
    (convergence_report(idata) if report is None else report).to_csv(path, index_label="quantity")
    paths.append(path)
    return paths

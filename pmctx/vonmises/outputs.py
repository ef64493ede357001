"""The files a von Mises fit writes, and the posterior summaries they draw.

:func:`write_map_outputs` (the orientation map, :mod:`pmctx.models.vonmises_map`) and
:func:`write_chain_outputs` (the chain smoother, :mod:`pmctx.models.vonmises_chain`) write
the standard outputs of a fit (posterior, circular summary, diagnostics,
:func:`pmctx.io.write_standard_outputs`) and the model's figures (:mod:`pmctx.vonmises.plots`);
:func:`posterior_orientation` is the posterior mean orientation map and its circular sd;
:func:`pooled_map_tree` is the results tree of draws pooled over a cross-validated grid.

Examples
--------
>>> import arviz as az
>>> import numpy as np
>>> idata = az.from_dict({"posterior": {"x": np.zeros((2, 10, 5))}})
>>> paths = write_chain_outputs(idata, "pmctx-out")  # doctest: +SKIP
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pmctx.io import save_figure, write_standard_outputs
from pmctx.memory import check_output_memory, nbytes
from pmctx.sampling import variable_shape
from pmctx.validation import as_angle_array
from pmctx.vonmises.maps import circular_moments
from pmctx.vonmises.plots import plot_angle_series, plot_reconstruction, plot_smoothness_trace
from pmctx.vonmises.select import observation_log_density

__all__ = [
    "check_map_memory",
    "pooled_map_tree",
    "posterior_orientation",
    "write_chain_outputs",
    "write_map_outputs",
]


def posterior_orientation(idata):
    """Posterior mean orientation and circular standard deviation, each ``(M, N)``.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit with posterior ``theta`` (chain, draw, M, N), e.g. from
        :func:`pmctx.models.vonmises_map.reconstruct`.

    Returns
    -------
    mean : numpy.ndarray, shape (M, N)
        Circular posterior mean orientation in ``[0, pi)``.
    sd : numpy.ndarray, shape (M, N)
        Circular standard deviation of the orientation (radians).

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict({"posterior": {"theta": np.full((2, 10, 2, 3), 0.5)}})
    >>> mean, sd = posterior_orientation(idata)
    >>> mean.shape, float(mean[0, 0].round(6))
    ((2, 3), 0.5)
    """
    theta = idata.posterior["theta"].values
    return circular_moments(theta.reshape(-1, *theta.shape[2:]), axis=0)


def pooled_map_tree(o, kappa_obs, z, observed, signal=None, **posterior):
    """Results tree of orientation-map draws pooled over a grid of fits, as one chain.

    :func:`pmctx.models.vonmises_select.reconstruct_cv` and
    :func:`pmctx.models.vonmises_spectral.reconstruct_spectral` both return this shape, so
    summaries, convergence and ``az.loo`` read them alike.

    Parameters
    ----------
    o : numpy.ndarray (S, M, N)
        Pooled draws of the doubled angles.
    kappa_obs : numpy.ndarray (S,)
        The observation concentration of each draw.
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Which pixels were observed.
    signal : numpy.ndarray (M, N), optional
        Relative signal strength, scaling ``kappa_obs`` per pixel.
    **posterior : numpy.ndarray (S,)
        Further per-draw values (the grid point each draw came from), stored after ``o``,
        ``theta`` and ``kappa_obs``.

    Returns
    -------
    xarray.DataTree
        ``posterior``: ``o``, ``theta = o / 2`` (``attrs["period"] = pi``), ``kappa_obs`` and
        ``posterior``'s values; ``log_likelihood``: ``z``, the von Mises log density of every
        observed pixel per draw (``obs_pixel``); ``constant_data``: ``obs_mask``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> observed = rng.random((3, 4)) < 0.5
    >>> tree = pooled_map_tree(rng.uniform(0, 2 * np.pi, (5, 3, 4)), np.full(5, 2.0),
    ...                        np.zeros((3, 4)), observed, rank=np.arange(5))
    >>> list(tree.posterior.data_vars)
    ['o', 'theta', 'kappa_obs', 'rank']
    >>> bool(tree.log_likelihood["z"].sizes["obs_pixel"] == observed.sum())
    True
    """
    import arviz as az

    strength = None if signal is None else signal[observed]
    loglik = observation_log_density(z[observed], o[:, observed], kappa_obs, strength)
    draws = {"o": o, "theta": np.mod(o, 2.0 * np.pi) / 2.0, "kappa_obs": kappa_obs, **posterior}
    idata = az.from_dict(
        {
            "posterior": {name: np.asarray(value)[None] for name, value in draws.items()},
            "log_likelihood": {"z": loglik[None]},
            "constant_data": {"obs_mask": observed.astype(np.int64)},
        },
        dims={
            "o": ["row", "col"],
            "theta": ["row", "col"],
            "z": ["obs_pixel"],
            "obs_mask": ["row", "col"],
        },
    )
    idata["posterior"]["theta"].attrs["period"] = np.pi
    return idata


def write_map_outputs(
    idata, out_dir: Path, prefix: str = "vonmises", *, theta_obs=None, truth=None, data=None
) -> list[Path]:
    """Standard outputs (posterior, circular summary, diagnostics) and the reconstruction
    (when ``theta_obs`` is given) and smoothness-trace figures.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit from :func:`pmctx.models.vonmises_map.reconstruct`.
    out_dir : path-like
        Output folder (created if needed).
    prefix : str, default "vonmises"
        File name prefix.
    theta_obs : array_like, shape (M, N), optional
        Observed orientations (NaN where missing), for the reconstruction figure.
    truth : array_like, shape (M, N), optional
        True orientations, drawn in the reconstruction figure when given.
    data : dict, optional
        The loaded data (:meth:`pmctx.registry.ModelSpec.fit_file` passes it); its ``theta``
        (masked by ``mask``) is the observed map when ``theta_obs`` is not given.

    Returns
    -------
    list of pathlib.Path
        The standard outputs, then ``<prefix>_reconstruction.png`` (with ``theta_obs``) and
        ``<prefix>_trace.png``.

    Examples
    --------
    >>> theta = np.full((3, 3), 0.5)
    >>> idata = reconstruct(theta, rank=3, draws=10, tune=5, chains=1)  # doctest: +SKIP
    >>> paths = write_map_outputs(idata, "pmctx-out", theta_obs=theta)  # doctest: +SKIP
    """
    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    if theta_obs is None and data is not None:
        theta_obs = as_angle_array(data["theta"], "theta", low=0.0, high=np.pi, allow_nan=True)
        if data.get("mask") is not None:
            theta_obs = np.where(np.asarray(data["mask"]) == 1, theta_obs, np.nan)
    if theta_obs is not None:
        mean, sd = posterior_orientation(idata)
        fig = plot_reconstruction(theta_obs, mean, sd, truth=truth)
        paths.append(save_figure(fig, out_dir / f"{prefix}_reconstruction.png"))
    fig = plot_smoothness_trace(idata.sample_stats["smoothness"].values)
    paths.append(save_figure(fig, out_dir / f"{prefix}_trace.png"))
    return paths


def write_chain_outputs(
    idata, out_dir, prefix: str = "vonmises-chain", *, y=None, truth=None, data=None
) -> list[Path]:
    """Standard outputs (posterior, circular summary, diagnostics) and a smoothing figure:
    posterior circular mean of ``x`` with a 90% band, the observations and (if given) the
    true angles (:func:`pmctx.vonmises.plots.plot_angle_series`: line and band break where
    the angle wraps at +-pi).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit from :func:`pmctx.models.vonmises_chain.smooth`.
    out_dir, prefix
        As in :func:`write_map_outputs` (the prefix defaults to ``"vonmises-chain"``).
    y : array_like, shape (T,), optional
        Observed angles, drawn in the smoothing figure.
    truth : array_like, shape (T,), optional
        True angles, drawn in the smoothing figure.
    data : dict, optional
        The loaded data (:meth:`pmctx.registry.ModelSpec.fit_file` passes it); its ``y`` is
        drawn when ``y`` is not given.

    Returns
    -------
    list of pathlib.Path
        The standard outputs, then ``<prefix>_smoothing.png``.

    Examples
    --------
    >>> idata = smooth(y, rank=3, draws=10, tune=5, chains=1)  # doctest: +SKIP
    >>> paths = write_chain_outputs(idata, "pmctx-out", y=y)  # doctest: +SKIP
    """
    if y is None and data is not None:
        y = data.get("y")
    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    fig = plot_angle_series(idata.posterior["x"].values, y=y, truth=truth)
    paths.append(save_figure(fig, out_dir / f"{prefix}_smoothing.png"))
    return paths


def check_map_memory(
    model,
    *,
    draws: int,
    tune: int,
    chains: int,
    log_likelihood=True,
    posterior_predictive=True,
    thin: int | None = None,
) -> int:
    """Warn :class:`pmctx.exceptions.MemoryWarning` before a map reconstruction whose outputs
    would pass half the available memory (:func:`pmctx.memory.check_output_memory`).

    ``pm.sample`` keeps ``o`` and ``theta`` (float64, every node) for the tuning and the kept
    draws, or with ``thin`` (:mod:`pmctx.vonmises.storage`) every ``thin``-th kept draw in
    float32; the log-likelihood and the posterior predictive of ``z`` take one value per
    observed node and kept draw.

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.vonmises_map.build_model`.
    draws, tune, chains : int
        As passed to ``pm.sample``.
    log_likelihood, posterior_predictive : bool, default True
        Whether those groups are kept.
    thin : int, optional
        Every ``thin``-th draw kept (:func:`pmctx.vonmises.storage.map_thin`); ``None``: as
        ``pm.sample`` keeps them.

    Returns
    -------
    int
        Bytes of the outputs.

    Examples
    --------
    >>> from pmctx.models.vonmises_map import build_model
    >>> model = build_model(np.zeros((512, 512)), kappa=2.0, kappa_obs=3.0, rank=3)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     size = check_map_memory(model, draws=1000, tune=1000, chains=4)
    ...     thinned = check_map_memory(model, draws=1000, tune=1000, chains=4, thin=32)
    >>> round(size / 1e9, 1), round(thinned / 1e9, 2)
    (50.3, 0.81)
    """
    nodes = math.prod(variable_shape(model, "o"))
    n_obs = math.prod(variable_shape(model, "z")) if "z" in model.named_vars else 0
    if thin is None:
        maps = {
            "posterior o and theta (tuning included)": 2 * nbytes((chains, draws + tune, nodes))
        }
    else:
        kept = -(-draws // thin)
        maps = {"posterior o and theta": 2 * nbytes((chains, kept, nodes), "float32")}
        draws = kept
    outputs = {
        **maps,
        "log_likelihood": nbytes((chains, draws, n_obs)) * bool(log_likelihood),
        "posterior_predictive": nbytes((chains, draws, n_obs)) * bool(posterior_predictive),
    }
    return check_output_memory(
        outputs,
        what=f"map reconstruction ({nodes} nodes, {chains} x {draws} draws)",
        advice="Keep less: fewer draws and tuning sweeps (every draw keeps the whole map), "
        "posterior_predictive=False, idata_kwargs={'log_likelihood': False}, reconstruct "
        "a crop of the map, or stream every draw to disk with store='fit.zarr'.",
        stacklevel=4,
    )

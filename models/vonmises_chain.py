"""Low-rank von Mises chain smoother for angular time series (seed 003 §2 and §3.2).

Angles ``x_0 .. x_{T-1}`` in radians (2 pi periodic: head direction, joint angles; double
orientations first) follow the chain prior ``p(x) ∝ prod_t psi(x_t, x_{t+1})`` with the
rank-R von Mises potential ``psi(a, b) = sum_{k=0}^{R} exp(kappa cos(a - phi_k) + kappa
cos(b - phi_k))``; each observed sample has ``y_t ~ VonMises(x_t, s_t kappa_obs)`` (``s_t`` a
known relative signal strength, 1 by default) and missing samples are NaN. The chain is a
tree, so inference is exact: :func:`smoothing_marginals` (forward-backward),
:func:`pmctx.vonmises.chain.sample_chain` (forward-filter backward-sample), and the prior
normaliser ``Z_T(kappa)`` in closed form, so ``kappa`` and ``kappa_obs`` can be learned
(``"prior"``) inside ``pm.sample``: by default with the angles summed out (the collapsed
step :class:`~pmctx.steps.vonmises_chain_collapsed.ChainCollapsedGibbs`), or, with
``hyper_update="conditional"``, by exact slice updates given the angles.

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_chain import simulate, smoothing_marginals
>>> x, y = simulate(40, kappa=4.0, kappa_obs=3.0, rank=6, missing=0.3, random_seed=0)
>>> angles, density = smoothing_marginals(y, kappa=4.0, kappa_obs=3.0, rank=6)
>>> density.shape
(40, 128)
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions import transforms

from pmctx.convergence import report_after_fit
from pmctx.sampling import SAMPLE_DEFAULTS, check_sample_kwargs, run_sampler
from pmctx.steps.registration import block_tag, tag_block
from pmctx.steps.vonmises import ChainFFBSVonMises, ChainKappaSlice, KappaObsSlice
from pmctx.steps.vonmises_chain_collapsed import ChainCollapsedGibbs
from pmctx.validation import as_angle_array, as_rng, check_int, check_nonempty, check_positive
from pmctx.vonmises.chain import CHAIN_KAPPA_PRIOR, chain_marginals, sample_chain
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR
from pmctx.vonmises.maps import circular_moments
from pmctx.vonmises.potentials import natural_field, wrap_angle

__all__ = [
    "build_model",
    "default_steps",
    "demo",
    "fit",
    "fit_data",
    "invariants",
    "posterior_marginals",
    "sbc_quantities",
    "sbc_simulate",
    "simulate",
    "simulate_data",
    "smooth",
    "smoothing_marginals",
    "write_outputs",
]


def _concentration(value, name):
    if isinstance(value, str):
        if value != "prior":
            raise ValueError(f"{name} must be a positive number or 'prior'; got {value!r}.")
        return value
    return check_positive(value, name)


def _series(y, mask, signal):
    y = as_angle_array(y, "y", low=-2 * np.pi, high=2 * np.pi, ndim=1, allow_nan=True)
    check_nonempty(y, "y", minimum=2, unit="sample")
    observed = ~np.isnan(y) if mask is None else np.asarray(mask).astype(bool)
    if observed.shape != y.shape or np.isnan(y[observed]).any():
        raise ValueError(
            f"mask must have the shape of y {y.shape} and be 0 wherever y is NaN; got shape "
            f"{observed.shape}. Omit mask to treat NaN samples as missing."
        )
    signal = np.ones(y.shape) if signal is None else np.asarray(signal, dtype=np.float64)
    if signal.shape != y.shape or not np.all(np.isfinite(signal) & (signal > 0)):
        raise ValueError(
            f"signal must be a finite positive array of shape {y.shape} (relative concentration "
            f"per sample); got shape {signal.shape}. Omit it for uniform noise."
        )
    return wrap_angle(np.where(observed, y, 0.0)), observed.astype(np.int64), signal


HYPER_UPDATES = ("collapsed", "conditional")


def _hyper_update(value):
    if value not in HYPER_UPDATES:
        raise ValueError(
            f"hyper_update must be one of {HYPER_UPDATES} (how learned concentrations are "
            f"sampled); got {value!r}. Use 'collapsed', the default, unless comparing samplers."
        )
    return value


def _log_i0(x):
    return pt.log(pt.ive(0, x)) + x


def _pt_log_normaliser(kappa, rank: int, length: int):
    """Symbolic ``log Z_T(kappa)`` (see :func:`pmctx.vonmises.chain.chain_log_normaliser`)."""
    log_2pi = np.log(2.0 * np.pi)
    lags = np.abs(np.cos(np.pi * np.arange(rank + 1) / (rank + 1)))
    log_lambda0 = pm.math.logsumexp(log_2pi + _log_i0(2.0 * kappa * lags))
    return 2.0 * (log_2pi + _log_i0(kappa)) + np.log(rank + 1) + (length - 2) * log_lambda0


def build_model(
    y,
    *,
    mask=None,
    kappa=5.0,
    kappa_obs=2.0,
    rank: int = 5,
    signal=None,
    hyper_update: str = "collapsed",
) -> pm.Model:
    """Declare the chain smoother as a ``pm.Model``.

    Parameters
    ----------
    y : array_like, shape (T,)
        Observed angles in radians (within ``[-2 pi, 2 pi]``, wrapped); NaN = missing.
    mask : array_like of 0/1, optional
        1 where observed (default: not NaN).
    kappa : float or "prior", default 5.0
        Smoothing concentration; ``"prior"``: ``Gamma(2, 0.25)``
        (:data:`~pmctx.vonmises.chain.CHAIN_KAPPA_PRIOR`), learned exactly.
    kappa_obs : float or "prior", default 2.0
        Observation concentration; ``"prior"``: ``Gamma(2, 0.25)``
        (:data:`~pmctx.vonmises.hyper.KAPPA_OBS_PRIOR`).
    rank : int, default 5
        Rank ``R`` >= 1 (``R + 1`` modes).
    signal : array_like, shape (T,), optional
        Known relative signal strength per sample (> 0).
    hyper_update : {"collapsed", "conditional"}, default "collapsed"
        Which steps plain ``pm.sample()`` assigns when a concentration is learned:
        ``"collapsed"``, one :class:`~pmctx.steps.vonmises_chain_collapsed.ChainCollapsedGibbs`
        block (concentrations with ``x`` summed out, then ``x`` by FFBS; mixes far better);
        ``"conditional"``, FFBS for ``x`` and slice updates of the concentrations given ``x``.

    Returns
    -------
    pm.Model
        Free ``x`` (dim time, circular transform), potential ``chain`` (the normalised chain
        prior), observed ``y`` (dim obs).

    Examples
    --------
    >>> model = build_model(np.array([0.1, np.nan, 0.3]), kappa="prior", rank=3)
    >>> sorted(rv.name for rv in model.free_RVs)
    ['kappa', 'x']
    """
    z_filled, mask, signal = _series(y, mask, signal)
    kappa = _concentration(kappa, "kappa")
    kappa_obs = _concentration(kappa_obs, "kappa_obs")
    rank = check_int(rank, "rank", minimum=1)
    hyper_update = _hyper_update(hyper_update)
    length = z_filled.size
    (obs,) = np.nonzero(mask)
    phases = 2.0 * np.pi * np.arange(rank + 1) / (rank + 1)
    coords = {"time": np.arange(length), "obs": obs}
    with pm.Model(coords=coords) as model:
        k = pm.Gamma("kappa", *CHAIN_KAPPA_PRIOR) if kappa == "prior" else pm.Data("kappa", kappa)
        if kappa_obs == "prior":
            k_obs = pm.Gamma("kappa_obs", *KAPPA_OBS_PRIOR)
        else:
            k_obs = pm.Data("kappa_obs", kappa_obs)
        pm.Data("rank", rank)
        pm.Data("z_filled", z_filled, dims="time")
        pm.Data("obs_mask", mask, dims="time")
        signal_d = pm.Data("signal", signal, dims="time")
        x = pm.Uniform("x", -np.pi, np.pi, dims="time", default_transform=transforms.circular)
        terms = k * (pt.cos(x[:-1, None] - phases) + pt.cos(x[1:, None] - phases))
        log_psi = pm.math.logsumexp(terms, axis=-1).sum()
        pm.Potential("chain", log_psi - _pt_log_normaliser(k, rank, length))
        if obs.size:
            pm.VonMises(
                "y", mu=x[obs], kappa=k_obs * signal_d[obs], observed=z_filled[obs], dims="obs"
            )
    # Plain pm.sample() gives x and the learned concentrations (Gamma priors as declared here)
    # to pmctx's exact steps, not to NUTS: one collapsed block by default, or FFBS for x and
    # slice updates of the concentrations given x.
    learned = {
        name: rv for name, rv in (("kappa", k), ("kappa_obs", k_obs)) if rv in model.free_RVs
    }
    if hyper_update == "collapsed" and learned:
        tag_block(ChainCollapsedGibbs.owns_block, x=x, **learned)
        return model
    tag_block(ChainFFBSVonMises.owns_block, x=x)
    if kappa == "prior":
        tag_block(ChainKappaSlice.owns_block, kappa=k)
    if kappa_obs == "prior":
        tag_block(KappaObsSlice.owns_block, kappa_obs=k_obs)
    return model


def default_steps(model) -> list:
    """Exact steps for a :func:`build_model` model, as plain ``pm.sample()`` assigns them.

    With learned concentrations and ``hyper_update="collapsed"`` (the default): one
    :class:`~pmctx.steps.vonmises_chain_collapsed.ChainCollapsedGibbs`; otherwise FFBS for
    ``x`` and slice updates for the concentrations that have priors. Call inside the model
    context.

    Parameters
    ----------
    model : pymc.Model
        A model returned by :func:`build_model`.

    Returns
    -------
    list of pymc.step_methods.BlockedStep
        ``[ChainCollapsedGibbs]`` for the collapsed block; otherwise ``ChainFFBSVonMises``
        for ``x``, then ``ChainKappaSlice`` and ``KappaObsSlice`` for the concentrations
        that are random variables.

    Examples
    --------
    >>> x, y = simulate(10, kappa=4.0, kappa_obs=3.0, rank=3, random_seed=0)
    >>> model = build_model(y, kappa=4.0, kappa_obs=3.0, rank=3)
    >>> with model:
    ...     steps = default_steps(model)
    >>> [type(step).__name__ for step in steps]
    ['ChainFFBSVonMises']
    """
    tag = block_tag(model["x"])
    if tag is not None and tag.block == ChainCollapsedGibbs.owns_block:
        return [ChainCollapsedGibbs()]
    steps = [ChainFFBSVonMises()]
    if model["kappa"] in model.free_RVs:
        steps.append(ChainKappaSlice())
    if model["kappa_obs"] in model.free_RVs:
        steps.append(KappaObsSlice(angles="x"))
    return steps


def smooth(
    y,
    *,
    mask=None,
    kappa="prior",
    kappa_obs="prior",
    rank: int = 5,
    signal=None,
    hyper_update: str = "collapsed",
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    check_convergence: bool = True,
):
    """Posterior of a smooth angular time series (hyperparameters learned by default).

    Parameters
    ----------
    y, mask, kappa, kappa_obs, rank, signal, hyper_update
        As in :func:`build_model`.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in ``pm.sample``, with its defaults.
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when ``x`` (circular), ``smoothness`` or a
        learned concentration has not converged.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).

    Returns
    -------
    arviz.InferenceData
        Posterior ``x`` (and ``kappa``, ``kappa_obs`` when learned), ``log_likelihood`` of
        ``y`` and the steps' stats. Each draw of ``x`` is an exact joint draw given the
        concentrations, so chains mix in a few iterations.

    Examples
    --------
    >>> x, y = simulate(30, kappa=4.0, kappa_obs=3.0, rank=5, random_seed=1)
    >>> idata = smooth(y, rank=5, draws=30, tune=10, chains=1, check_convergence=False)
    >>> sorted(idata.posterior.data_vars)
    ['kappa', 'kappa_obs', 'x']
    """
    check_sample_kwargs(draws=draws, tune=tune, chains=chains, cores=cores)
    model = build_model(
        y,
        mask=mask,
        kappa=kappa,
        kappa_obs=kappa_obs,
        rank=rank,
        signal=signal,
        hyper_update=hyper_update,
    )
    with model:
        steps = default_steps(model)
    idata = run_sampler(
        model,
        step=steps,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        idata_kwargs={"log_likelihood": "y" in model.named_vars, **(idata_kwargs or {})},
    )
    report_after_fit(idata, SPEC, check=check_convergence)
    return idata


def smoothing_marginals(
    y, *, kappa: float, kappa_obs: float, rank: int, mask=None, signal=None, n_angles: int = 128
):
    """Exact ``p(x_t | y)`` for fixed concentrations: ``(angles, density (T, n_angles))``.

    Parameters
    ----------
    y : array_like, shape (T,)
        Observed angles in radians; NaN marks a missing sample.
    kappa : float
        Smoothing concentration of the chain potential (> 0).
    kappa_obs : float
        Observation concentration (> 0).
    rank : int
        Rank ``R`` of the potential (>= 1).
    mask : array_like of 0/1, shape (T,), optional
        1 where observed (default: where ``y`` is not NaN).
    signal : array_like, shape (T,), optional
        Relative signal strength per sample (> 0; default 1).
    n_angles : int, default 128
        Number of grid angles on which the densities are evaluated.

    Returns
    -------
    angles : numpy.ndarray, shape (n_angles,)
        Grid of angles in ``[-pi, pi)``.
    density : numpy.ndarray, shape (T, n_angles)
        ``p(x_t | y)`` on the grid, per time step.

    Examples
    --------
    >>> y = np.array([0.5, np.nan, 0.7, 0.6])
    >>> angles, density = smoothing_marginals(y, kappa=4.0, kappa_obs=3.0, rank=3, n_angles=64)
    >>> density.shape, bool(np.allclose(density.sum(axis=1) * (angles[1] - angles[0]), 1.0))
    ((4, 64), True)
    """
    z_filled, mask, signal = _series(y, mask, signal)
    kappa = check_positive(kappa, "kappa")
    field = natural_field(z_filled, mask, check_positive(kappa_obs, "kappa_obs"), signal=signal)
    angles, density, _ = chain_marginals(
        field, kappa, check_int(rank, "rank", minimum=1), n_angles=n_angles
    )
    return angles, density


def posterior_marginals(idata, y, *, rank: int, mask=None, signal=None, n_angles=128, n_draws=50):
    """Smoothing densities averaged over posterior draws of the learned concentrations.

    Rao-Blackwellised: each of ``n_draws`` evenly spaced draws of ``(kappa, kappa_obs)``
    gives exact marginals, which are averaged. Returns ``(angles, density, mean, sd)`` with
    the circular mean and circular sd of ``x_t`` from the posterior draws.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit from :func:`smooth` with learned ``kappa`` and ``kappa_obs`` (``"prior"``).
    y : array_like, shape (T,)
        The observed angles the model was fitted to (NaN where missing).
    rank : int
        Rank ``R`` of the fitted model.
    mask, signal : array_like, optional
        As in :func:`build_model`.
    n_angles : int, default 128
        Number of grid angles.
    n_draws : int, default 50
        Number of evenly spaced posterior draws averaged over.

    Returns
    -------
    angles : numpy.ndarray, shape (n_angles,)
        Grid of angles in ``[-pi, pi)``.
    density : numpy.ndarray, shape (T, n_angles)
        Rao-Blackwellised posterior density of ``x_t`` on the grid.
    mean : numpy.ndarray, shape (T,)
        Circular posterior mean of ``x_t``.
    sd : numpy.ndarray, shape (T,)
        Circular posterior standard deviation of ``x_t``.

    Examples
    --------
    >>> import arviz as az
    >>> x, y = simulate(20, kappa=4.0, kappa_obs=3.0, rank=3, random_seed=0)
    >>> idata = az.from_dict(posterior={"x": np.tile(x, (1, 4, 1)),
    ...                                 "kappa": np.full((1, 4), 4.0),
    ...                                 "kappa_obs": np.full((1, 4), 3.0)})
    >>> angles, density, mean, sd = posterior_marginals(idata, y, rank=3, n_angles=64)
    >>> density.shape, mean.shape
    ((20, 64), (20,))
    """
    post = idata.posterior
    kappas = post["kappa"].values.ravel() if "kappa" in post else None
    kappa_obs = post["kappa_obs"].values.ravel() if "kappa_obs" in post else None
    if kappas is None or kappa_obs is None:
        raise ValueError("posterior_marginals needs draws of kappa and kappa_obs (use 'prior').")
    pick = np.linspace(0, kappas.size - 1, min(n_draws, kappas.size)).astype(int)
    total = 0.0
    for i in pick:
        angles, density = smoothing_marginals(
            y,
            kappa=kappas[i],
            kappa_obs=kappa_obs[i],
            rank=rank,
            mask=mask,
            signal=signal,
            n_angles=n_angles,
        )
        total = total + density
    x = post["x"].values.reshape(-1, post["x"].shape[-1])
    resultant = np.mean(np.exp(1j * x), axis=0)
    mean = np.angle(resultant)
    _, sd = circular_moments(x / 2.0, axis=0)
    return angles, total / pick.size, mean, 2.0 * sd


def simulate(
    length: int, *, kappa: float, kappa_obs: float, rank: int, missing=0.0, random_seed=None
):
    """Exact draw from the chain prior and noisy observations: ``(x, y)``, NaN where missing.

    Parameters
    ----------
    length : int
        Number of time steps ``T`` (>= 2).
    kappa : float
        Smoothing concentration of the chain prior (> 0).
    kappa_obs : float
        Observation concentration (> 0).
    rank : int
        Rank ``R`` of the potential (>= 1).
    missing : float, default 0.0
        Probability that an observation is missing (NaN).
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    x : numpy.ndarray, shape (T,)
        True angles in ``[-pi, pi)``.
    y : numpy.ndarray, shape (T,)
        Noisy observations in ``[-pi, pi)``, NaN where missing.

    Examples
    --------
    >>> x, y = simulate(50, kappa=4.0, kappa_obs=3.0, rank=5, missing=0.5, random_seed=0)
    >>> x.shape, 0 < int(np.isnan(y).sum()) < 50
    ((50,), True)
    """
    rng = as_rng(random_seed)
    length = check_int(length, "length", minimum=2)
    x, _ = sample_chain(np.zeros((length, 2)), check_positive(kappa, "kappa"), rank, rng)
    y = wrap_angle(rng.vonmises(x, check_positive(kappa_obs, "kappa_obs")))
    y[rng.random(length) < missing] = np.nan
    return x, y


def simulate_data(
    random_seed=None, *, length: int = 100, kappa=4.0, kappa_obs=3.0, rank=5, missing=0.2
):
    """A prior draw and its data for the registry (SBC, posterior predictive checks).

    Returns ``(data, truth)``: ``data`` holds ``y`` (NaN where missing) and the options
    ``kappa``, ``kappa_obs``, ``rank``; ``truth`` the angles ``x`` and their ``smoothness``
    (mean cosine of successive differences).

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    length : int, default 100
        Number of time steps.
    kappa, kappa_obs : float, default 4.0 and 3.0
        Smoothing and observation concentrations.
    rank : int, default 5
        Rank of the potential.
    missing : float, default 0.2
        Probability that an observation is missing.

    Returns
    -------
    data : dict
        ``y`` and the options ``kappa``, ``kappa_obs``, ``rank``.
    truth : dict
        ``x`` and ``smoothness``.

    Examples
    --------
    >>> data, truth = simulate_data(np.random.default_rng(0), length=12)
    >>> data["y"].shape, sorted(truth)
    ((12,), ['smoothness', 'x'])
    """
    x, y = simulate(
        length,
        kappa=kappa,
        kappa_obs=kappa_obs,
        rank=rank,
        missing=missing,
        random_seed=random_seed,
    )
    data = {"y": y, "kappa": kappa, "kappa_obs": kappa_obs, "rank": rank}
    return data, {"x": x, "smoothness": float(np.mean(np.cos(np.diff(x))))}


def invariants(idata):
    """Circular ``x`` (period 2 pi), ``smoothness`` and the learned concentrations per draw.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit from :func:`smooth` (posterior ``x``).

    Returns
    -------
    xarray.Dataset
        ``x`` (with ``attrs["period"] = 2 pi``), ``smoothness`` (mean cosine of successive
        differences) and ``kappa``/``kappa_obs`` when they were learned, per chain and draw.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"x": np.zeros((1, 3, 5))})
    >>> inv = invariants(idata)
    >>> sorted(inv.data_vars), float(inv["smoothness"].mean())
    (['smoothness', 'x'], 1.0)
    """
    import xarray as xr

    post = idata.posterior
    x = post["x"]
    out = xr.Dataset(
        {
            "x": x.assign_attrs(period=2.0 * np.pi),
            "smoothness": (("chain", "draw"), np.cos(np.diff(x.values, axis=-1)).mean(-1)),
        }
    )
    for name in ("kappa", "kappa_obs"):
        if name in post:
            out[name] = post[name]
    return out


def fit_data(
    data: dict,
    *,
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    **options,
):
    """:func:`smooth` on ``{"y": ..., "mask": ..., "signal": ...}`` (mask, signal optional).

    Parameters
    ----------
    data : dict
        ``"y"`` (angles in radians, NaN where missing) and optionally ``"mask"`` and
        ``"signal"``, as loaded by :func:`pmctx.schema.load_vonmises_chain`.

    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).

    **options
        Further :func:`smooth` options (``kappa``, ``kappa_obs``, ``rank``, ...).

    Returns
    -------
    arviz.InferenceData
        As returned by :func:`smooth`.

    Examples
    --------
    >>> x, y = simulate(20, kappa=4.0, kappa_obs=3.0, rank=3, random_seed=2)
    >>> idata = fit_data({"y": y}, rank=3, draws=10, tune=5, chains=1,
    ...                  random_seed=1, check_convergence=False, progressbar=False)
    >>> idata.posterior["x"].shape
    (1, 10, 20)
    """
    return smooth(
        data["y"],
        mask=data.get("mask"),
        signal=data.get("signal"),
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        idata_kwargs=idata_kwargs,
        **options,
    )


def write_outputs(idata, out_dir, prefix: str = "vonmises-chain", *, y=None, truth=None, data=None):
    """Standard outputs (posterior, circular summary, diagnostics) and a smoothing figure:
    posterior circular mean of ``x`` with a 90% band, the observations and (if given) the
    true angles.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit from :func:`smooth`.
    out_dir : path-like
        Output folder (created if needed).
    prefix : str, default "vonmises-chain"
        File name prefix.
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
        The files written.

    Examples
    --------
    >>> paths = write_outputs(idata, "pmctx-out", y=y)  # doctest: +SKIP
    """
    from pathlib import Path

    import matplotlib.pyplot as plt

    from pmctx.io import save_figure, write_standard_outputs

    if y is None and data is not None:
        y = data.get("y")
    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    x = idata.posterior["x"].values.reshape(-1, idata.posterior["x"].shape[-1])
    mean = np.angle(np.mean(np.exp(1j * x), axis=0))
    half = np.quantile(np.abs(wrap_angle(x - mean)), 0.9, axis=0)
    t = np.arange(x.shape[1])
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.fill_between(t, mean - half, mean + half, alpha=0.3, label="90% band")
    ax.plot(t, mean, lw=1, label="posterior circular mean")
    if y is not None:
        ax.plot(t, y, ".", ms=3, color="k", label="observed")
    if truth is not None:
        ax.plot(t, truth, "x", ms=3, color="C3", label="truth")
    ax.set(xlabel="time step", ylabel="angle (rad)", ylim=(-np.pi - 1, np.pi + 1))
    ax.legend(loc="upper right", fontsize=7)
    paths.append(save_figure(fig, out_dir / f"{prefix}_smoothing.png"))
    return paths


def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None):
    """Smooth a simulated head-direction trace with 30% missing samples (``quick``: short).

    Parameters
    ----------
    out_dir : path-like
        Output folder.
    quick : bool, default False
        A short trace and short chains (seconds), for a first look and the tests.
    random_seed : int, default 0
        Seed of the simulated trace and the sampler.
    cores : int, optional
        Parallel chains, as in :func:`pymc.sample`.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = demo("pmctx-demo", quick=True)  # doctest: +SKIP
    """
    length = 60 if quick else 300
    x, y = simulate(length, kappa=4.0, kappa_obs=3.0, rank=5, missing=0.3, random_seed=random_seed)
    idata = smooth(
        y,
        # x is drawn jointly and kappa, kappa_obs with x summed out (ChainCollapsedGibbs), yet
        # the two concentrations trade off: at 4 x 300 draws their R-hat reached 1.015.
        draws=100 if quick else 600,
        tune=20 if quick else 300,
        chains=2 if quick else SAMPLE_DEFAULTS["chains"],
        cores=cores,
        random_seed=random_seed,
        check_convergence=not quick,
    )
    return write_outputs(idata, out_dir, y=y, truth=x)


def _middle(x) -> np.ndarray:
    return x[..., x.shape[-1] // 2]


def sbc_simulate(random_seed=None, **options):
    """:func:`simulate_data` with scalar truths for SBC: the middle angle's cosine and sine
    (circular, so not ranked as an angle) and the smoothness.

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    **options
        Options of :func:`simulate_data`.

    Returns
    -------
    data : dict
        As :func:`simulate_data` returns it.
    truth : dict
        ``cos_x``, ``sin_x`` and ``smoothness``.

    Examples
    --------
    >>> data, truth = sbc_simulate(0, length=12)
    >>> sorted(truth)
    ['cos_x', 'sin_x', 'smoothness']
    """
    data, truth = simulate_data(random_seed, **options)
    middle = _middle(truth["x"])
    return data, {"cos_x": float(np.cos(middle)), "sin_x": float(np.sin(middle)),
                  "smoothness": truth["smoothness"]}  # fmt: skip


def sbc_quantities(idata) -> dict:
    """Posterior draws (flattened over chains) of the truths :func:`sbc_simulate` ranks.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit with posterior ``x``.

    Returns
    -------
    dict
        ``cos_x``, ``sin_x`` and ``smoothness`` draws.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"x": np.zeros((2, 3, 5))})
    >>> draws = sbc_quantities(idata)
    >>> draws["cos_x"].shape, float(draws["smoothness"].mean())
    ((6,), 1.0)
    """
    x = idata.posterior["x"].values
    x = x.reshape(-1, x.shape[-1])
    middle = _middle(x)
    smoothness = np.cos(np.diff(x, axis=-1)).mean(-1)
    return {"cos_x": np.cos(middle), "sin_x": np.sin(middle), "smoothness": smoothness}


def _spec():
    from pmctx.registry import ModelSpec
    from pmctx.schema import load_vonmises_chain

    return ModelSpec(
        name="vonmises-chain",
        summary="von Mises chain smoother: a time series of angles, exact forward-backward",
        module=__name__,
        load=load_vonmises_chain,
        fit=fit_data,
        invariants=invariants,
        write_outputs=write_outputs,
        demo=demo,
        simulate=sbc_simulate,
        sbc_quantities=sbc_quantities,
        population=("kappa", "kappa_obs"),
        options={
            "kappa": "smoothing concentration (number or 'prior', default 'prior')",
            "kappa_obs": "observation concentration (number or 'prior', default 'prior')",
            "rank": "rank R of the transition potential (default 5)",
        },
        advice="Run longer (draws=2000, tune=1000); x is drawn exactly given the "
        "concentrations, so slow mixing points to kappa and kappa_obs trading off: fix one",
        demo_seconds=(13, 4),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file

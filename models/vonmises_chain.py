"""Low-rank von Mises chain smoother for angular time series (seed 003 §2 and §3.2).

Angles ``x_0 .. x_{T-1}`` in radians (2 pi periodic: head direction, joint angles; double
orientations first) follow the chain prior ``p(x) ∝ prod_t psi(x_t, x_{t+1})`` with the
rank-R von Mises potential ``psi(a, b) = sum_{k=0}^{R} exp(kappa cos(a - phi_k) + kappa
cos(b - phi_k))``; each observed sample has ``y_t ~ VonMises(x_t, s_t kappa_obs)`` (``s_t`` a
known relative signal strength, 1 by default) and missing samples are NaN. The chain is a
tree, so inference is exact: :func:`smoothing_marginals` (forward-backward),
:func:`pmctx.vonmises.chain.sample_chain` (forward-filter backward-sample), and the prior
normaliser ``Z_T(kappa)`` in closed form, so ``kappa`` and ``kappa_obs`` can be learned
(``"prior"``) inside ``pm.sample`` with the angles summed out (the collapsed step
:class:`~pmctx.steps.vonmises_chain_collapsed.ChainCollapsedGibbs`).

This module declares the model and its registry entry (:data:`SPEC`); the series' checks,
exact marginals, simulation, demo and output files live in :mod:`pmctx.vonmises`
(:mod:`~pmctx.vonmises.inputs`, :mod:`~pmctx.vonmises.series`, :mod:`~pmctx.vonmises.demo`,
:mod:`~pmctx.vonmises.outputs`) and are re-exported here.

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

from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions import transforms

from pmctx.convergence import convergence_judge, report_after_fit
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    check_sample_kwargs,
    demo_sections,
    fit_with_sampler,
    run_sampler,
)
from pmctx.steps.registration import block_tag, tag_block
from pmctx.steps.vonmises import ChainFFBSVonMises
from pmctx.steps.vonmises_chain_collapsed import ChainCollapsedGibbs
from pmctx.validation import check_int
from pmctx.vonmises.chain import CHAIN_KAPPA_PRIOR
from pmctx.vonmises.demo import chain_demo
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR
from pmctx.vonmises.inputs import (
    check_concentration,
    check_series,
)
from pmctx.vonmises.outputs import write_chain_outputs as write_outputs
from pmctx.vonmises.predictive import predict_series as predict
from pmctx.vonmises.series import (
    posterior_marginals,
    sbc_quantities,
    sbc_simulate,
    simulate,
    simulate_data,
    smoothing_marginals,
)

__all__ = [
    "build_model", "default_steps", "demo", "fit", "fit_data", "invariants",
    "posterior_marginals", "predict", "sbc_quantities", "sbc_simulate", "simulate", "simulate_data",
    "smooth", "smoothing_marginals", "write_outputs",
]  # fmt: skip


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
    z_filled, mask, signal = check_series(y, mask, signal)
    kappa = check_concentration(kappa, "kappa")
    kappa_obs = check_concentration(kappa_obs, "kappa_obs")
    rank = check_int(rank, "rank", minimum=1)
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
    # to pmctx's exact steps, not to NUTS: one collapsed block, or FFBS for x alone.
    learned = {
        name: rv for name, rv in (("kappa", k), ("kappa_obs", k_obs)) if rv in model.free_RVs
    }
    if learned:
        tag_block(ChainCollapsedGibbs.owns_block, x=x, **learned)
    else:
        tag_block(ChainFFBSVonMises.owns_block, x=x)
    return model


def default_steps(model) -> list:
    """Exact steps for a :func:`build_model` model, as plain ``pm.sample()`` assigns them.

    With learned concentrations: one
    :class:`~pmctx.steps.vonmises_chain_collapsed.ChainCollapsedGibbs`; otherwise FFBS for
    ``x``. Call inside the model context.

    Parameters
    ----------
    model : pymc.Model
        A model returned by :func:`build_model`.

    Returns
    -------
    list of pymc.step_methods.BlockedStep
        ``[ChainCollapsedGibbs]`` for the collapsed block; otherwise
        ``[ChainFFBSVonMises]``.

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
    return [ChainFFBSVonMises()]


def smooth(
    y,
    *,
    mask=None,
    kappa="prior",
    kappa_obs="prior",
    rank: int = 5,
    signal=None,
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    until_converged: bool = SAMPLE_DEFAULTS["until_converged"],
    max_draws: int | None = SAMPLE_DEFAULTS["max_draws"],
    max_time: float | None = SAMPLE_DEFAULTS["max_time"],
    check_convergence: bool = True,
):
    """Posterior of a smooth angular time series (hyperparameters learned by default).

    Parameters
    ----------
    y, mask, kappa, kappa_obs, rank, signal
        As in :func:`build_model`.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in ``pm.sample``, with its defaults.
    until_converged, max_draws, max_time
        Continue the same chains while the convergence check fails, up to ``max_draws``
        per chain (default ``3 * draws``) or ``max_time`` seconds (:mod:`pmctx.continuation`;
        needs ``check_convergence``); ``until_converged=False``: exactly ``draws``.
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when ``x`` (circular), ``smoothness`` or a
        learned concentration has not converged.

    Returns
    -------
    xarray.DataTree
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
        until_converged=until_converged,
        max_draws=max_draws,
        max_time=max_time,
        judge=convergence_judge(SPEC, check=check_convergence),
    )
    report_after_fit(idata, SPEC, check=check_convergence)
    return idata


def invariants(idata):
    """Circular ``x`` (period 2 pi), ``smoothness`` and the learned concentrations per draw.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit from :func:`smooth` (posterior ``x``).

    Returns
    -------
    xarray.Dataset
        ``x`` (with ``attrs["period"] = 2 pi``), ``smoothness`` (mean cosine of successive
        differences) and ``kappa``/``kappa_obs`` when they were learned, per chain and draw.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict({"posterior": {"x": np.zeros((1, 3, 5))}})
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


@fit_with_sampler
def fit_data(data: dict, sample_kwargs: dict, **options):
    """:func:`smooth` on ``{"y": ..., "mask": ..., "signal": ...}`` (mask, signal optional).

    Parameters
    ----------
    data : dict
        ``"y"`` (angles in radians, NaN where missing) and optionally ``"mask"`` and
        ``"signal"``, as loaded by :func:`pmctx.vonmises.inputs.load_vonmises_chain`.

    **options
        Further :func:`smooth` options (``kappa``, ``kappa_obs``, ``rank``, ...).

    Returns
    -------
    xarray.DataTree
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
        **sample_kwargs,
        **options,
    )


@demo_sections
def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list[Path]:
    """Smooth a simulated head-direction trace with 30% missing samples:
    :func:`pmctx.vonmises.demo.chain_demo` with :func:`smooth`.
    """
    return chain_demo(smooth, out_dir, quick=quick, random_seed=random_seed, cores=cores)


def _spec():
    from pmctx.registry import ModelSpec
    from pmctx.vonmises.inputs import load_vonmises_chain

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
        predict=predict,
        population=("kappa", "kappa_obs"),
        options={
            "kappa": "smoothing concentration (number or 'prior', default 'prior')",
            "kappa_obs": "observation concentration (number or 'prior', default 'prior')",
            "rank": "rank R of the transition potential (default 5)",
        },
        advice="Run longer; x is drawn exactly given the "
        "concentrations, so slow mixing points to kappa and kappa_obs trading off: fix one",
        demo_seconds=(14, 4),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file

"""CRP latent-cause model of classical conditioning (Gershman & Niv; seed 004).

Two ways to run it:

* **Online** (what the animal computes trial by trial):
  :func:`pmctx.conditioning.particle_filter` on a :class:`~pmctx.conditioning.Design`;
  gives ``V_t``, the predicted US probability, and the posterior over causes.
* **Offline** (the batch posterior over partitions): :func:`build_model` declares a truncated
  version of the model as a ``pm.Model`` — Dirichlet(alpha/K) cause weights over ``K`` causes,
  Categorical assignments ``z`` (trial), Beta(eta, eta) feature probabilities ``theta``
  (cause, feature) and Bernoulli observed features, one entry per observed (trial, feature)
  pair — and :func:`sample_posterior` samples it with the collapsed Gibbs step
  :class:`~pmctx.steps.crp_gibbs.CRPCollapsedGibbs`, adding a ``log_likelihood`` group.

Examples
--------
>>> from pmctx.conditioning import shipped_design
>>> from pmctx.models.crp_conditioning import sample_posterior
>>> idata = sample_posterior(shipped_design("renewal_aba", n_acquisition=3, n_extinction=3),
...                          max_causes=4, draws=50, tune=20, chains=1, random_seed=0,
...                          check_convergence=False)
>>> sorted(idata.posterior.data_vars)
['theta', 'weights', 'z']
"""

# Long because the public entry points carry full numpydoc docstrings with runnable examples
# (about 260 of its lines); demo, plots, outputs and input checks live in the family package.

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from pmctx.conditioning.demo import RENEWAL_DESIGNS, phenomena_table, run_demo
from pmctx.conditioning.design import as_feature_matrix
from pmctx.conditioning.exact import log_marginal_assignments
from pmctx.conditioning.marginal import add_integrated_log_likelihood
from pmctx.conditioning.outputs import write_outputs
from pmctx.convergence import convergence_judge, report_after_fit
from pmctx.io import add_log_likelihood
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    add_posterior_predictive,
    check_sample_kwargs,
    demo_sections,
    fit_with_sampler,
    run_sampler,
)
from pmctx.steps.crp_gibbs import CRPCollapsedGibbs
from pmctx.steps.registration import tag_block
from pmctx.validation import check_int, check_positive

__all__ = [
    "RENEWAL_DESIGNS",
    "build_model",
    "coassignment",
    "demo",
    "fit",
    "fit_data",
    "fit_unit",
    "invariants",
    "log_marginal_assignments",
    "phenomena_table",
    "predict",
    "sample_posterior",
    "write_outputs",
]


def build_model(features, *, alpha=1.0, max_causes=10, concentration=1.0) -> pm.Model:
    """Declare the truncated latent-cause mixture as a ``pm.Model``.

    Parameters
    ----------
    features : Design, xarray.DataArray or array_like (n_trials, n_features)
        Binary features, US first; NaN entries (probe trials' US) are left out.
    alpha : float, default 1.0
        Total concentration; each of the ``max_causes`` causes gets ``alpha / max_causes``
        (the finite approximation of the CRP).
    max_causes : int, default 10
        Truncation K.
    concentration : float, default 1.0
        Beta(eta, eta) prior on each cause's feature probabilities.

    Returns
    -------
    pm.Model
        Free variables ``weights`` (cause), ``z`` (trial), ``theta`` (cause, feature);
        observed ``features`` (entry), with ``trial_index``/``feature_index`` data giving the
        (trial, feature) of every entry.

    Examples
    --------
    >>> m = build_model([[1, 1, 0], [0, 1, 1]], max_causes=3)
    >>> sorted(m.named_vars_to_dims["theta"])
    ['cause', 'feature']
    """
    F, names = as_feature_matrix(features)
    # A pytensor variable (e.g. a hyperprior declared in an enclosing model) is used as it is.
    if not isinstance(alpha, pt.Variable):
        alpha = check_positive(alpha, "alpha")
    K = check_int(max_causes, "max_causes", minimum=1)
    eta = concentration
    if not isinstance(eta, pt.Variable):
        eta = check_positive(concentration, "concentration")
    t_idx, i_idx = np.nonzero(F >= 0)
    coords = {
        "trial": np.arange(F.shape[0]),
        "feature": names,
        "cause": np.arange(K),
        "entry": np.arange(t_idx.size),
    }
    with pm.Model(coords=coords) as model:
        trial_index = pm.Data("trial_index", t_idx, dims="entry")
        feature_index = pm.Data("feature_index", i_idx, dims="entry")
        weights = pm.Dirichlet("weights", a=pt.ones(K) * alpha / K, dims="cause")
        theta = pm.Beta("theta", eta, eta, dims=("cause", "feature"))
        z = pm.Categorical("z", p=weights, dims="trial")
        observed = pm.Bernoulli(
            "features",
            p=theta[z[trial_index], feature_index],
            observed=F[t_idx, i_idx],
            dims="entry",
        )
    # Plain pm.sample() gives the tagged block to CRPCollapsedGibbs (it integrates weights
    # and theta out of z's update, so it must own all three).
    tag_block(CRPCollapsedGibbs.owns_block, z=z, weights=weights, theta=theta, features=observed)
    return model


def sample_posterior(
    features,
    *,
    alpha=1.0,
    max_causes=10,
    concentration=1.0,
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
    posterior_predictive: bool = True,
    check_convergence: bool = True,
):
    """Sample the batch posterior with the collapsed Gibbs step; returns ``DataTree``.

    The result has ``posterior`` (z, weights, theta), ``sample_stats.n_occupied`` (the number
    of occupied causes) and a ``log_likelihood`` group: ``features`` per observed entry
    (given the sampled causes) and ``trial_features`` per trial with its cause summed out
    (:mod:`pmctx.conditioning.marginal`; the one to use for LOO over trials).
    Cause labels switch between chains: diagnose label-free quantities such as
    ``n_occupied``, co-assignment or V (see :func:`invariants`), not raw ``z``. Predictions
    for a new design: :func:`predict`.

    Parameters
    ----------
    features : Design, xarray.DataArray or array_like (trial, feature)
        The experiment: 0/1 features with the US first (or named ``US``), NaN where a US is
        not observed.
    alpha : float, default 1.0
        CRP concentration (the finite-K Dirichlet weight is ``alpha / max_causes``).
    max_causes : int, default 10
        Truncation: the number of latent causes.
    concentration : float, default 1.0
        Beta(eta, eta) prior of the feature probabilities.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).
    until_converged, max_draws, max_time
        Continue the same chains while the convergence check fails, up to ``max_draws``
        per chain (default ``3 * draws``) or ``max_time`` seconds (:mod:`pmctx.continuation`;
        needs ``check_convergence``); ``until_converged=False``: exactly ``draws``.
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (observed entries redrawn per draw), for
        ``az.plot_ppc``.
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` on unconverged invariants.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (``z``, ``weights``, ``theta``), ``sample_stats`` (with
        ``n_occupied``), ``log_likelihood`` (``features``, ``trial_features``),
        ``posterior_predictive`` and ``observed_data``.

    Examples
    --------
    >>> from pmctx.conditioning import shipped_design
    >>> design = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2)
    >>> idata = sample_posterior(design, max_causes=3, draws=20, tune=5, chains=1,
    ...                          random_seed=0, check_convergence=False, progressbar=False)
    >>> idata.posterior["z"].shape
    (1, 20, 5)
    """
    check_sample_kwargs(draws=draws, tune=tune, chains=chains, cores=cores)
    F, _ = as_feature_matrix(features)
    if (F[:, 0] < 0).all():  # as_feature_matrix codes a missing entry as -1
        raise ValueError(
            f"features: the US (first column) is missing (NaN) on all {F.shape[0]} trials, so "
            "the posterior would be the prior. Give observed US outcomes (NaN only on probe "
            "trials); for responses to a new design use predict."
        )
    model = build_model(features, alpha=alpha, max_causes=max_causes, concentration=concentration)
    with model:
        step = CRPCollapsedGibbs(
            [model["z"], model["weights"], model["theta"]],
            features=F,
            alpha=alpha,
            concentration=concentration,
        )
    idata = run_sampler(
        model,
        step=[step],
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        # PyMC 6 deprecates idata_kwargs["log_likelihood"]: the per-entry group is added below
        idata_kwargs={k: v for k, v in (idata_kwargs or {}).items() if k != "log_likelihood"},
        until_converged=until_converged,
        max_draws=max_draws,
        max_time=max_time,
        judge=convergence_judge(SPEC, check=check_convergence),
    )
    if (idata_kwargs or {}).get("log_likelihood", True):
        idata = add_log_likelihood(idata, model, var_names=["features"])
    add_integrated_log_likelihood(idata, F)  # per-trial, for LOO over trials
    if posterior_predictive:
        add_posterior_predictive(idata, model, random_seed=random_seed)
    idata.posterior.attrs["alpha"] = float(alpha)
    report_after_fit(idata, SPEC, check=check_convergence)
    return idata


def predict(idata, new_data, *, random_seed=None, alpha=None, n_particles=1000, slope=8.0,
            bias=0.0) -> xr.Dataset:  # fmt: skip
    """V and response probabilities for a new design.

    Runs the particle filter (the animal's online inference) on ``design`` with the fit's
    ``alpha`` (``idata.posterior.attrs["alpha"]``, or ``alpha=``) and maps V to the
    probability of a conditioned response with the logistic link of
    :func:`pmctx.conditioning.behaviour.simulate_responses`
    (``1 / (1 + exp(-(slope (V - 0.5) + bias)))``).

    Parameters
    ----------
    idata : xarray.DataTree or None
        A fit whose ``posterior.attrs["alpha"]`` gives the concentration (None with
        ``alpha=``).
    new_data : Design or array_like
        The new experiment (a Design, DataArray or trials x features array).
    random_seed : int or numpy.random.Generator, optional
        Seed of the filter.
    alpha : float, optional
        The concentration, instead of the fit's.
    n_particles : int, default 1000
        Particles of the filter.
    slope, bias : float, default 8.0, 0.0
        The logistic response link.

    Returns
    -------
    xarray.Dataset
        ``V`` and ``response_prob`` over ``trial``.

    Examples
    --------
    >>> from pmctx.conditioning import shipped_design
    >>> design = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2)
    >>> pred = predict(None, design, alpha=1.0, n_particles=50, random_seed=0)
    >>> sorted(pred.data_vars)
    ['V', 'response_prob']
    """
    from pmctx.conditioning import particle_filter

    if new_data is None:
        raise ValueError("Pass the new design (a Design, DataArray or trials x features array).")
    if alpha is None:
        if idata is None or "alpha" not in idata.posterior.attrs:
            raise ValueError("Pass alpha=, or a fit from sample_posterior (it stores alpha).")
        alpha = idata.posterior.attrs["alpha"]
    alpha = check_positive(alpha, "alpha")
    result = particle_filter(
        new_data, alpha=alpha, n_particles=n_particles, random_seed=random_seed
    )
    V = np.asarray(result.V, dtype=float)
    prob = 1.0 / (1.0 + np.exp(-(slope * (V - 0.5) + bias)))
    return xr.Dataset({"V": ("trial", V), "response_prob": ("trial", prob)})


#: Trials beyond which co-assignment is tracked for neighbours only (pairs grow as N^2).
COASSIGNMENT_ALL_PAIRS = 40


def invariants(idata):
    """Label-free quantities: occupied causes, co-assignment of trial pairs, and V.

    ``n_occupied`` counts causes with at least one trial; ``coassigned`` is 1 when two
    trials share a cause (all pairs up to ``COASSIGNMENT_ALL_PAIRS`` trials, trials one to
    three apart beyond); ``V`` is each trial's predicted US probability
    ``theta[z_t, US]`` (US = first feature).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`sample_posterior`.

    Returns
    -------
    xarray.Dataset
        ``n_occupied`` (chain, draw), ``coassigned`` (chain, draw, pair) and ``V``
        (chain, draw, trial).

    Examples
    --------
    >>> import arviz as az
    >>> z = np.array([[[0, 0, 1, 1], [0, 1, 1, 1]]])  # 1 chain, 2 draws, 4 trials
    >>> idata = az.from_dict({"posterior": {"z": z, "theta": np.full((1, 2, 2, 3), 0.5)},
    ...                      "sample_stats": {"n_occupied": np.array([[2, 2]])}},
    ...                      dims={"z": ["trial"], "theta": ["cause", "feature"]})

    >>> inv = invariants(idata)
    >>> sorted(inv.data_vars), inv["n_occupied"].values.tolist()
    (['V', 'coassigned', 'n_occupied'], [[2.0, 2.0]])
    """
    post = idata.posterior
    z = post["z"].values.astype(np.int64)
    n = z.shape[-1]
    if n <= COASSIGNMENT_ALL_PAIRS:
        i, j = np.triu_indices(n, k=1)
    else:
        i = np.concatenate([np.arange(n - lag) for lag in (1, 2, 3)])
        j = np.concatenate([np.arange(lag, n) for lag in (1, 2, 3)])
    pairs = [f"{a}-{b}" for a, b in zip(i, j)]
    features = [str(f) for f in post["feature"].values] if "feature" in post.coords else []
    us = features.index("US") if "US" in features else 0
    theta_us = post["theta"].values[..., us]  # (chain, draw, cause)
    V = np.take_along_axis(theta_us, z, axis=-1)
    n_occupied = (
        idata.sample_stats["n_occupied"].values
        if "n_occupied" in idata.sample_stats
        else np.array([[np.unique(row).size for row in chain] for chain in z])
    )
    return xr.Dataset(
        {
            "n_occupied": (("chain", "draw"), n_occupied.astype(np.float64)),
            "coassigned": (("chain", "draw", "pair"), (z[..., i] == z[..., j]).astype(float)),
            "V": (("chain", "draw", "trial"), V),
        },
        coords={
            "chain": post["chain"].values,
            "draw": post["draw"].values,
            "pair": pairs,
            "trial": post["trial"].values,
        },
    )


def coassignment(idata) -> np.ndarray:
    """Posterior probability that two trials share a cause (label-free), (trial, trial).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`sample_posterior`.

    Returns
    -------
    numpy.ndarray
        Symmetric (trial, trial) matrix of probabilities, ones on the diagonal.

    Examples
    --------
    >>> import arviz as az
    >>> z = np.array([[[0, 0, 1, 1], [0, 1, 1, 1]]])  # 1 chain, 2 draws, 4 trials
    >>> idata = az.from_dict({"posterior": {"z": z, "theta": np.full((1, 2, 2, 3), 0.5)},
    ...                      "sample_stats": {"n_occupied": np.array([[2, 2]])}},
    ...                      dims={"z": ["trial"], "theta": ["cause", "feature"]})

    >>> coassignment(idata)[0].tolist()
    [1.0, 0.5, 0.0, 0.0]
    """
    z = idata.posterior["z"].values.reshape(-1, idata.posterior["z"].shape[-1])
    return (z[:, :, None] == z[:, None, :]).mean(axis=0)


@demo_sections
def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list:
    """Renewal: particle filter on ABA, ABC and AAB, the batch posterior of ABA, plots.

    Writes ``crp_V.png`` (V_t per design), ``crp_causes.png`` (ABA cause posterior),
    ``crp_filter.nc``, ``crp_posterior.nc`` (collapsed Gibbs, with ``log_likelihood``),
    ``crp_summary.csv``, ``crp_diagnostics.csv`` and ``phenomena.csv``; see
    :func:`pmctx.conditioning.demo.run_demo`.
    """
    return run_demo(sample_posterior, out_dir, quick=quick, random_seed=random_seed, cores=cores)


@fit_with_sampler
def fit_data(data: dict, sample_kwargs: dict, **options):
    """:func:`sample_posterior` on ``{"features": ...}`` (options: alpha, max_causes, ...).

    Parameters
    ----------
    data : dict
        ``{"features": ...}``, as :func:`pmctx.conditioning.inputs.load_crp` loads it.
    **options
        Model options (see ``SPEC.options``).

    Returns
    -------
    xarray.DataTree
        The fit, as :func:`sample_posterior` returns it.

    Examples
    --------
    >>> from pmctx.conditioning import shipped_design
    >>> features = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2).to_array()
    >>> idata = fit_data({"features": features}, max_causes=3, draws=20, tune=5, chains=1,
    ...                  random_seed=0, check_convergence=False, progressbar=False)
    >>> idata.posterior["z"].shape
    (1, 20, 5)
    """
    return sample_posterior(
        data["features"],
        **sample_kwargs,
        **options,
    )


#: Scalars a CRP unit may store with its features (the batch posterior's options).
UNIT_SETTINGS = ("alpha", "max_causes", "concentration")


def fit_unit(data: dict, *, random_seed=None, **options):
    """One batch unit of the latent-cause model.

    With a ``CR`` column in ``data`` (a study table: US and CS columns, the conditioned
    response, NaN on trials without one): every LCM variant fitted by maximum likelihood
    (:func:`pmctx.conditioning.study.fit_variants`; options such as ``method``,
    ``n_particles``, ``n_starts``, ``variants`` go to it), with each variant's parameters and
    log evidence in the attributes, which ``pmctx batch crp`` turns into a per-subject table
    and random-effects Bayesian model selection. With ``responses`` in ``data``: the
    subject's alpha from conditioned responses
    (:func:`pmctx.conditioning.simulate.fit_alpha_posterior`: posterior over an alpha grid,
    draws of ``alpha``, log evidence in ``attrs``). Otherwise the batch posterior over causes
    (:func:`fit_data`). The trial features are ``features`` (trials x features, US first) or,
    in a table, every other column in order.

    Parameters
    ----------
    data : dict
        One unit's data: ``features`` (or feature columns), optional ``responses``,
        ``alphas`` and filter settings.
    random_seed : int, optional
        Seed of the fit.
    **options
        Options of the fit used.

    Returns
    -------
    xarray.DataTree
        The unit's fit.

    Examples
    --------
    >>> from pmctx.conditioning import shipped_design
    >>> features = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2).to_array()
    >>> idata = fit_unit({"features": features}, random_seed=0, max_causes=3, draws=20,
    ...                  tune=5, chains=1, check_convergence=False, progressbar=False)
    >>> idata.posterior["z"].shape
    (1, 20, 5)
    """
    from pmctx.validation import stored_scalar

    data = dict(data)
    if "CR" in data:
        from pmctx.conditioning.study import fit_variants

        return fit_variants(data, random_seed=random_seed, **options)
    responses = data.pop("responses", None)
    grid = data.pop("alphas", None)
    settings = {k: stored_scalar(data.pop(k)) for k in UNIT_SETTINGS if k in data}
    features = data.pop("features", None)
    if features is None:
        features = np.column_stack([np.asarray(v, float) for v in data.values()])
    if responses is not None:
        from pmctx.conditioning.simulate import fit_alpha_posterior

        unit = {"features": features, "responses": responses}
        if grid is not None:
            unit["alphas"] = grid
        return fit_alpha_posterior(unit, random_seed=random_seed, **options)
    return fit_data({"features": features}, random_seed=random_seed, **(settings | options))


def _spec():
    from pmctx.conditioning.inputs import load_crp
    from pmctx.conditioning.simulate import invariants as sbc_quantities
    from pmctx.conditioning.simulate import simulate
    from pmctx.registry import ModelSpec

    return ModelSpec(
        name="crp",
        summary="CRP latent-cause model of classical conditioning (particle filter, Gibbs)",
        module=__name__,
        load=load_crp,
        fit=fit_data,
        invariants=invariants,
        write_outputs=write_outputs,
        demo=demo,
        fit_unit=fit_unit,
        simulate=simulate,
        sbc_quantities=sbc_quantities,
        predict=predict,
        comparisons={
            "responses": "each conditioned response given the latent-cause model's US "
            "expectation (subject fits, fit_alpha_posterior): comparing alpha values and "
            "response models; pmctx.refit.crp_response_refitter refits it exactly",
            "trial_features": "each trial's features with its latent cause summed out: "
            "LOO over trials, for comparing cause structures (alpha, truncation, priors)",
            "features": "each observed feature entry given the sampled causes (conditional "
            "on the latents; PSIS over it is unreliable, not for model comparison)",
        },
        population=("alpha", "n_occupied"),
        options={
            "alpha": "CRP concentration (default 1.0)",
            "max_causes": "truncation, number of latent causes (default 10)",
            "concentration": "Beta(eta, eta) prior on feature probabilities (default 1.0)",
        },
        advice="Run longer or with more chains",
        demo_seconds=(3, 5),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file

"""IBP visuo-motor factorisation (seed 000): shared binary causes of forces and visual cues.

N trials, forces ``F`` (N x D) and binary cues ``X`` (N x T) share a binary ownership matrix
``Z`` (N x K_max). Forces are linear-Gaussian, ``F = Z A + N(0, sigma_n^2)`` with rows of ``A``
``~ N(0, sigma_A^2 I)``; cues follow a noisy-OR of the visual basis ``Y`` (entries
``~ Bernoulli(phi)``), ``P(x_it = 1) = 1 - (1 - lambda)^{z_i . y_t} (1 - eps)``, computed in
log space. The IBP prior is truncated at ``K_max`` columns: ``pi_k ~ Beta(alpha/K_max, 1)``,
``z_ik ~ Bernoulli(pi_k)``. Either likelihood may be left out.

:func:`build_model` declares it as a ``pm.Model`` with dims (trial, feature, force_dim,
pixel) and label-invariant deterministics (``n_active``, ``loglik``, ``F_hat = Z A``,
``X_prob = P(X)``); :func:`sample` runs :class:`pmctx.steps.ibp_gibbs.IBPGibbs` (finite-K
collapsed prior ``(m_-ik + alpha/K_max)/(N + alpha/K_max)``, new features from eq. 10-14 on
the free columns) inside ``pm.sample`` and adds the ``log_likelihood`` group.

Examples
--------
>>> from pmctx.ibp.data import visuomotor_data
>>> from pmctx.models.ibp import sample
>>> data = visuomotor_data(n_trials=20, random_seed=0)
>>> idata = sample(data.F, data.X, K_max=10, draws=30, tune=30, chains=1, random_seed=0,
...                check_convergence=False)
>>> int(idata.posterior["n_active"].max()) <= 10
True
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pmctx.convergence import report_after_fit
from pmctx.exceptions import PmctxWarning, TruncationWarning
from pmctx.ibp.hyper import HYPER_PRIORS
from pmctx.ibp.marginal import add_integrated_log_likelihood
from pmctx.ibp.start import subsample_start
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    add_posterior_predictive,
    check_sample_kwargs,
    run_sampler,
)
from pmctx.steps.ibp_gibbs import HYPER_NAMES, LEARNED_HYPER, IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs
from pmctx.steps.registration import tag_block
from pmctx.validation import (
    as_binary_array,
    as_float_array,
    check_int,
    check_nonempty,
    check_positive,
    check_probability,
    check_same_length,
)

__all__ = [
    "build_model",
    "demo",
    "fit",
    "fit_data",
    "invariants",
    "kfold_functions",
    "plot_bases",
    "predict",
    "sample",
    "subsample_initvals",
    "write_outputs",
]

# Every hyperparameter is learned unless the user passes a number; the priors and why they
# were chosen are documented in pmctx.ibp.hyper (HYPER_PRIORS).
DEFAULT_HYPER = dict(
    alpha="prior", sigma_n="prior", sigma_A="prior", phi="prior", lam="prior", eps="prior"
)

# start="auto" starts every chain from pmctx.ibp.start.subsample_start from this many trials
# on: from Z = 0, N = 10,000 was stuck at 16-19 shared features (4 true) for hundreds of
# sweeps, N = 1,000 took 250-400 sweeps to find the 4 features; N <= 150 converges from Z = 0
# well within pm.sample's tuning (docs/guides/ibp_defaults.md).
SUBSAMPLE_START_MIN_TRIALS = 500
# From this many trials on, IBPGibbs runs this many birth/death proposals for small shared
# features per sweep (pmctx.ibp.birth_death): at N = 1,000 they raised the ESS per CPU second
# of n_shared 1.06-3.25x on six data sets (docs/guides/ibp_defaults.md); not measured below.
BIRTH_DEATH_MIN_TRIALS = 500
BIRTH_DEATH_PER_SWEEP = 5
START_CHOICES = ("auto", "subsample", "zero")
#: Stored draws larger than this (bytes) get a warning before sampling starts: at N=10,000 the
#: per-draw Z, X_prob and posterior predictive of 4 x 1000 draws need about 25 GB.
STORED_BYTES_WARN = 4 * 2**30


def _stored_bytes(model, draws: int, chains: int, *, log_likelihood, posterior_predictive):
    # every per-trial quantity kept per draw (8-byte values): Z, the reconstructions, the
    # log-likelihood and the redrawn observations
    dims = {name: int(length.eval()) for name, length in model.dim_lengths.items()}
    per_trial = dims["feature"]
    for name in ("F_hat", "X_prob", "F_offset"):
        if name in model.named_vars:
            per_trial += dims[model.named_vars_to_dims[name][1]]
    observed = [dims[model.named_vars_to_dims[v.name][1]] for v in model.observed_RVs]
    per_trial += len(observed) * bool(log_likelihood) + sum(observed) * bool(posterior_predictive)
    return 8 * dims["trial"] * per_trial * draws * chains


UNUSED_PLACEHOLDERS = {"F": dict(sigma_n=0.5, sigma_A=1.0), "X": dict(phi=0.5, lam=0.9, eps=0.05)}


def _hyper_prior(name):
    # Priors with exact (conjugate) or slice-sampled updates: IBPAlphaGibbs, IBPHyperGibbs.
    if name == "alpha":
        shape, rate = HYPER_PRIORS["alpha"]
        return pm.Gamma(name, alpha=shape, beta=rate)
    if name in ("sigma_n", "sigma_A"):
        # The conjugate prior is on the variance; the standard deviation is derived from it.
        shape, scale = HYPER_PRIORS[name + "2"]
        var = pm.InverseGamma(name + "2", alpha=shape, beta=scale)
        return pm.Deterministic(name, pt.sqrt(var))
    a, b = HYPER_PRIORS[name]
    return pm.Beta(name, a, b)


def _hyper_variable(name, value):
    if isinstance(value, pt.Variable):
        # IBPGibbs reads hyperparameters by name from the current point.
        return value if value.name == name else pm.Deterministic(name, value)
    return _hyper_prior(name) if value == "prior" else pm.Data(name, value)


def _chain_rngs(random_seed, chains):
    if isinstance(random_seed, (list, tuple, np.ndarray)):
        return [np.random.default_rng(s) for s in random_seed]
    return np.random.default_rng(random_seed).spawn(chains)


def subsample_initvals(model, F, X, *, chains, random_seed=None) -> list | None:
    """Per-chain ``initvals`` from :func:`pmctx.ibp.start.subsample_start`, or None.

    Every chain gets its own subsample and random stream.

    Parameters
    ----------
    model : pm.Model
        From :func:`build_model`.
    F, X : ndarray or None
        The forces and cues the model was built with.
    chains : int
        Number of chains (one start each).
    random_seed : int, sequence of int, Generator or None
        As ``pm.sample``'s; a sequence gives one seed per chain.

    Returns
    -------
    list of dict or None
        ``pm.sample``'s ``initvals`` (``Z, pi, A, Y`` and the learned hyperparameters, in
        their constrained space); None when a hyperparameter is neither learned with
        build_model's prior nor a fixed number (a user's own variable), since the start
        could not follow it.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(30, random_seed=0)
    >>> model = build_model(data.F, data.X, K_max=6)
    >>> points = subsample_initvals(model, data.F, data.X, chains=2, random_seed=0)
    >>> len(points), points[0]["Z"].shape
    (2, (30, 6))
    """
    free = set(model.free_RVs)
    learned, fixed = [], {}
    for name in HYPER_NAMES:
        rv_name = name + "2" if name in ("sigma_n", "sigma_A") else name
        if rv_name in model.named_vars and model[rv_name] in free:
            learned.append(name)
        elif name in model.named_vars and model[name] in model.data_vars:
            fixed[name] = float(model[name].get_value())
        else:
            return None
    k_max = int(model.dim_lengths["feature"].eval())
    n = int(model.dim_lengths["trial"].eval())
    F = np.zeros((n, 0)) if F is None else np.asarray(F, dtype=np.float64)
    X = np.zeros((n, 0), np.int64) if X is None else np.asarray(X, dtype=np.int64)
    points = []
    for rng in _chain_rngs(random_seed, chains):
        state = subsample_start(F, X, k_max, learned=learned, fixed=fixed, rng=rng)
        point = {"Z": state["Z"], "pi": np.clip(state["pi"], 1e-9, 1.0 - 1e-9)}
        if F.shape[1]:
            point["A"] = state["A"]
        if X.shape[1]:
            point["Y"] = state["Y"]
        for name in learned:
            value = state[name] ** 2 if name in ("sigma_n", "sigma_A") else state[name]
            point[name + "2" if name in ("sigma_n", "sigma_A") else name] = value
        points.append(point)
    return points


def validate_inputs(F, X, K_max, hyper):
    """Check data and hyperparameters at the public boundary; returns cleaned copies.

    Parameters
    ----------
    F : array_like or None
        Forces (trial, force_dim).
    X : array_like or None
        Binary cues (trial, pixel).
    K_max : int
        Truncation level.
    hyper : dict
        Hyperparameters by name (numbers, or ``"prior"`` to learn one).

    Returns
    -------
    tuple
        ``(F, X, K_max, hyper)`` validated: float64/int64 arrays, an int, checked numbers.

    Examples
    --------
    >>> F, X, K_max, hyper = validate_inputs(np.zeros((3, 2)), None, 4, {"alpha": 1.0})
    >>> F.dtype, X, K_max
    (dtype('float64'), None, 4)
    """
    if F is None and X is None:
        raise ValueError("Pass forces F, visual cues X, or both; got neither.")
    F = None if F is None else check_nonempty(as_float_array(F, "F", ndim=2), "F", unit="trial")
    X = None if X is None else check_nonempty(as_binary_array(X, "X", ndim=2), "X", unit="trial")
    if F is not None and X is not None:
        check_same_length(F=F, X=X)
    K_max = check_int(K_max, "K_max", minimum=1)
    clean = {}
    for name, value in hyper.items():
        if isinstance(value, pt.Variable):  # a user's own prior or expression: used as is
            clean[name] = value
        elif isinstance(value, str):
            if value != "prior":
                raise ValueError(f"{name} must be a number or 'prior'; got {value!r}.")
            clean[name] = value
        elif name in ("phi", "lam", "eps"):
            clean[name] = check_probability(value, name)
        else:
            clean[name] = check_positive(value, name)
    return F, X, K_max, clean


def build_model(
    F=None, X=None, *, K_max: int = 10, reconstructions: bool = True, F_offset=None, **hyper
):
    """Declare the truncated IBP visuo-motor model as a ``pm.Model``.

    Parameters
    ----------
    F : array_like (N, D), optional
        Forces (finite floats).
    X : array_like (N, T), optional
        Binary visual cues (0/1).
    K_max : int, default 10
        Truncation level (number of feature columns).
    reconstructions : bool, default True
        Add ``F_hat = Z A`` and ``X_prob = P(X = 1)`` deterministics (N x D, N x T per draw).
    F_offset : tensor broadcastable to (N, D), optional
        A term added to the force mean, ``F ~ Normal(Z A + F_offset, sigma_n)``: e.g. a
        regression of the forces on covariates whose coefficients the user declared in an
        enclosing ``pm.Model`` (PyMC's steps sample them). Stored as the deterministic
        ``F_offset``; ``IBPGibbs`` and ``IBPHyperGibbs`` read its current value from the point
        and update the IBP latents given ``F - F_offset``. ``F_hat`` stays ``Z A``.
    **hyper
        ``alpha, sigma_n, sigma_A, phi, lam, eps``: a number fixes the hyperparameter
        (defaults in ``DEFAULT_HYPER``), ``"prior"`` gives it a weakly informative prior,
        a pytensor variable (e.g. a prior the user declared in an enclosing ``pm.Model``)
        is used as it is; PyMC's own steps sample such variables and ``IBPGibbs`` reads
        their current values.

    Returns
    -------
    pm.Model

    Examples
    --------
    >>> import numpy as np
    >>> model = build_model(F=np.zeros((4, 2)), X=np.zeros((4, 3)), K_max=2)
    >>> sorted(model.coords)
    ['feature', 'force_dim', 'pixel', 'trial']
    """
    unknown = set(hyper) - set(HYPER_NAMES)
    if unknown:
        raise TypeError(f"Unknown hyperparameters {sorted(unknown)}; expected {HYPER_NAMES}.")
    defaults = dict(DEFAULT_HYPER)
    # Hyperparameters of an absent likelihood stay fixed placeholders unless asked for: a
    # prior on them would only add free variables that the data cannot inform.
    if F is None:
        defaults.update(UNUSED_PLACEHOLDERS["F"])
    if X is None:
        defaults.update(UNUSED_PLACEHOLDERS["X"])
    F, X, K_max, hyper = validate_inputs(F, X, K_max, {**defaults, **hyper})
    if F_offset is not None and F is None:
        raise ValueError("F_offset shifts the force mean; pass the forces F with it.")
    n = F.shape[0] if F is not None else X.shape[0]
    coords = {"trial": np.arange(n), "feature": np.arange(K_max)}
    if F is not None:
        coords["force_dim"] = np.arange(F.shape[1])
    if X is not None:
        coords["pixel"] = np.arange(X.shape[1])
    with pm.Model(coords=coords) as model:
        h = {name: _hyper_variable(name, value) for name, value in hyper.items()}
        pi = pm.Beta("pi", alpha=h["alpha"] / K_max, beta=1.0, dims="feature")
        Z = pm.Bernoulli("Z", p=pi, dims=("trial", "feature"))
        pm.Deterministic("n_active", pt.sum(pt.max(Z, axis=0)))
        loglik = pt.constant(0.0)
        if F is not None:
            A = pm.Normal("A", 0.0, h["sigma_A"], dims=("feature", "force_dim"))
            features = mean = pt.dot(Z, A)
            if F_offset is not None:
                offset = pt.broadcast_to(pt.as_tensor(F_offset, dtype="float64"), F.shape)
                mean = mean + pm.Deterministic("F_offset", offset, dims=("trial", "force_dim"))
            pm.Normal("F", mu=mean, sigma=h["sigma_n"], observed=F, dims=("trial", "force_dim"))
            sn = h["sigma_n"]
            loglik += pt.sum(-0.5 * pt.log(2 * np.pi * sn**2) - 0.5 * ((F - mean) / sn) ** 2)
            if reconstructions:
                pm.Deterministic("F_hat", features, dims=("trial", "force_dim"))
        if X is not None:
            Y = pm.Bernoulli("Y", p=h["phi"], dims=("feature", "pixel"))
            # log P(x = 0) = (z.y) log(1 - lam) + log(1 - eps); no underflow for many causes.
            log_q = pt.dot(Z, Y) * pt.log1p(-h["lam"]) + pt.log1p(-h["eps"])
            log_p1 = pt.log1mexp(log_q)
            pm.Bernoulli("X", logit_p=log_p1 - log_q, observed=X, dims=("trial", "pixel"))
            loglik += pt.sum(pt.where(X == 1, log_p1, log_q))
            if reconstructions:
                pm.Deterministic("X_prob", pt.exp(log_p1), dims=("trial", "pixel"))
        pm.Deterministic("loglik", loglik)
    # Plain pm.sample() hands the tagged latents to IBPGibbs, alpha to IBPAlphaGibbs and the
    # other hyperparameters with build_model's priors to IBPHyperGibbs (whose updates assume
    # those priors); fixed numbers and a user's own variables carry no tag.
    latents = {name: model[name] for name in ("Z", "pi", "A", "Y") if name in model.named_vars}
    tag_block(IBPGibbs.owns_block, **latents)
    with_prior = {name for name, value in hyper.items() if isinstance(value, str)}
    if "alpha" in with_prior:
        tag_block(IBPAlphaGibbs.owns_block, alpha=h["alpha"])
    learned = {
        name: model[name]
        for name in LEARNED_HYPER
        if name.removesuffix("2") in with_prior and model[name] in model.free_RVs
    }
    if learned:
        tag_block(IBPHyperGibbs.owns_block, **learned)
    return model


def sample(
    F=None,
    X=None,
    *,
    K_max: int = 10,
    draws: int = SAMPLE_DEFAULTS["draws"],
    tune: int = SAMPLE_DEFAULTS["tune"],
    chains: int = SAMPLE_DEFAULTS["chains"],
    cores: int | None = SAMPLE_DEFAULTS["cores"],
    random_seed=SAMPLE_DEFAULTS["random_seed"],
    progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
    idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
    log_likelihood: bool = True,
    reconstructions: bool = True,
    posterior_predictive: bool = True,
    check_convergence: bool = True,
    start: str = "auto",
    **hyper,
):
    """Sample the IBP visuo-motor posterior with the specialised Gibbs step.

    :class:`~pmctx.steps.ibp_gibbs.IBPGibbs` updates ``Z, pi, A, Y``. Hyperparameters are
    learned unless passed as numbers: ``alpha`` by its conjugate Gamma update
    (:class:`~pmctx.steps.ibp_gibbs.IBPAlphaGibbs`), ``sigma_n^2, sigma_A^2, phi`` by
    conjugate draws and ``lam, eps`` by slice sampling
    (:class:`~pmctx.steps.ibp_gibbs.IBPHyperGibbs`); priors in
    :data:`pmctx.ibp.hyper.HYPER_PRIORS`.

    Parameters
    ----------
    F, X : array_like, optional
        Forces (N x D) and/or binary cues (N x T); see :func:`build_model`.
    K_max : int, default 10
        Truncation; a :class:`pmctx.TruncationWarning` says when it was too small.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in ``pm.sample``, with its defaults (see :mod:`pmctx.sampling`).
    log_likelihood : bool, default True
        Add the per-trial ``log_likelihood`` group with each trial's ``z_i`` summed out
        (``trial``, ``F`` given cues, ``X`` given forces; see :mod:`pmctx.ibp.marginal`),
        the one ``az.loo`` needs; the likelihood given the sampled ``z_i`` is kept in the
        ``conditional_log_likelihood`` group (not for LOO).
    reconstructions : bool, default True
        Store ``F_hat`` and ``X_prob`` per draw.
    posterior_predictive : bool, default True
        Add the ``posterior_predictive`` group (``F``, ``X`` redrawn per draw) for
        ``az.plot_ppc``/``az.loo_pit``. Predictions for new trials: :func:`predict`.
    check_convergence : bool, default True
        Warn :class:`pmctx.ConvergenceWarning` when ``n_active``, ``loglik`` or the
        reconstructions have R-hat > 1.01 or ESS < 100 per chain.
    start : {"auto", "subsample", "zero"}, default "auto"
        Where the chains start. ``"subsample"``: each chain from its own fit to a random
        subsample of 500 trials, extended to every trial
        (:func:`pmctx.ibp.start.subsample_start`; about 1-2 CPU s per chain); ``"zero"``:
        pm.sample's start, ``Z = 0``; ``"auto"``: ``"subsample"`` from
        ``SUBSAMPLE_START_MIN_TRIALS`` (500) trials on, else ``"zero"``. Only the start
        changes; the sampler is the same exact kernel (from ``BIRTH_DEATH_MIN_TRIALS``
        (500) trials on, with ``BIRTH_DEATH_PER_SWEEP`` (5) birth/death proposals for small
        shared features per sweep, whatever the start). From ``Z = 0``, large data sets
        (N = 10,000) are stuck for hundreds of sweeps on many partial copies of the true
        features.
    **hyper
        Hyperparameters, as in :func:`build_model`.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` with ``Z, pi, A, Y`` and label-invariant ``n_active, loglik, F_hat,
        X_prob``; ``sample_stats`` with ``n_active, n_singletons, n_new_features,
        truncation_hit``.

    Notes
    -----
    At the default priors the posterior often holds one more feature than the data were
    generated with, owned by a single trial (a noisy trial it explains; the IBP expects about
    ``alpha`` of them). ``n_active - n_singletons`` counts the features two or more trials
    share. See the guide "IBP defaults" (docs/guides/ibp_defaults.md).

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=8, random_seed=1)
    >>> idata = sample(X=data.X, K_max=8, draws=20, tune=10, chains=1, random_seed=1,
    ...                check_convergence=False)
    >>> idata.posterior["Z"].shape
    (1, 20, 8, 8)
    """
    check_sample_kwargs(draws=draws, tune=tune, chains=chains, cores=cores)
    if start not in START_CHOICES:
        raise ValueError(f"start must be one of {START_CHOICES}; got {start!r}.")
    model = build_model(F, X, K_max=K_max, reconstructions=reconstructions, **hyper)
    n_trials = int(model.dim_lengths["trial"].eval())
    stored = _stored_bytes(
        model,
        draws,
        chains,
        log_likelihood=log_likelihood,
        posterior_predictive=posterior_predictive,
    )
    if stored > STORED_BYTES_WARN:
        warnings.warn(
            f"Keeping {chains} x {draws} draws of this fit needs about {stored / 2**30:.1f} GiB "
            f"({n_trials} trials: Z, the reconstructions and the per-trial groups are stored per "
            "draw). Pass reconstructions=False, posterior_predictive=False and "
            "log_likelihood=False, or fewer draws, to keep it smaller.",
            PmctxWarning,
            stacklevel=2,
        )
    initvals = None
    if start == "subsample" or (start == "auto" and n_trials >= SUBSAMPLE_START_MIN_TRIALS):
        initvals = subsample_initvals(model, F, X, chains=chains, random_seed=random_seed)
    with model:
        large = n_trials >= BIRTH_DEATH_MIN_TRIALS
        steps = [IBPGibbs(birth_death=BIRTH_DEATH_PER_SWEEP if large else 0)]
        if model["alpha"] in model.free_RVs:
            steps.append(IBPAlphaGibbs())
        if any(n in model.named_vars and model[n] in model.free_RVs for n in LEARNED_HYPER):
            steps.append(IBPHyperGibbs())
    idata = run_sampler(
        model,
        step=steps,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        idata_kwargs={"log_likelihood": log_likelihood, **(idata_kwargs or {})},
        initvals=initvals,
    )
    if log_likelihood:  # per-trial likelihood with z_i summed out: the one LOO needs
        add_integrated_log_likelihood(idata, model, random_seed=random_seed)
    hit = idata.sample_stats["truncation_hit"].values
    if hit.mean() > 0.01:
        warnings.warn(
            f"The truncation at K_max={model.dim_lengths['feature'].eval()} was full after "
            f"{hit.mean():.0%} of the sweeps, so the sampler could not add the features the "
            "posterior asked for; rerun with a larger K_max (pmctx fit: --set K_max=20).",
            TruncationWarning,
            stacklevel=2,
        )
    if posterior_predictive:
        add_posterior_predictive(idata, model, random_seed=random_seed)
    report_after_fit(idata, SPEC, check=check_convergence)
    return idata


def predict(idata, *, X=None, F=None, max_draws: int = 500):
    """Forces of new trials from their cues ``X`` and/or cues from forces ``F``.

    See :func:`pmctx.ibp.predict.predict` (exact enumeration of each new trial's features).

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit of :func:`sample`.
    X : array_like, optional
        Cues of new trials (trial, pixel), to predict their forces.
    F : array_like, optional
        Forces of new trials (trial, force_dim), to predict their cues.
    max_draws : int, default 500
        Posterior draws used (thinned evenly).

    Returns
    -------
    xarray.Dataset
        Predictions per new trial (see :func:`pmctx.ibp.predict.predict`).

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=12, random_seed=0)
    >>> idata = sample(data.F[:10], data.X[:10], K_max=6, draws=20, tune=10, chains=1,
    ...                check_convergence=False, progressbar=False)  # doctest: +SKIP
    >>> predict(idata, X=data.X[10:])["F"].dims  # doctest: +SKIP
    """
    from pmctx.ibp.predict import predict as _predict

    return _predict(idata, X=X, F=F, max_draws=max_draws)


def invariants(idata):
    """Label-invariant quantities: ``n_active``, ``loglik`` and the reconstructions.

    Feature labels switch between chains, so ``Z``, ``A``, ``Y`` and ``pi`` are left out;
    ``F_hat = Z A`` and ``X_prob`` do not depend on the labels.

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit of :func:`sample`.

    Returns
    -------
    xarray.Dataset
        The quantities present among ``n_active``, ``loglik``, ``F_hat``, ``X_prob``.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"n_active": np.array([[2, 3]]),
    ...                                 "Z": np.zeros((1, 2, 4, 3))})
    >>> sorted(invariants(idata).data_vars)
    ['n_active']
    """
    names = [v for v in ("n_active", "loglik", "F_hat", "X_prob") if v in idata.posterior]
    return idata.posterior[names]


# ---------------------------------------------------------------- outputs, demo and fit


def plot_bases(Y, A=None, *, side=None, titles=None):
    """Images of visual basis rows (and force vectors) side by side; returns the figure.

    Parameters
    ----------
    Y : array_like
        Visual bases (feature, pixel), drawn as square images when the pixel count is a square
        (else as bars).
    A : array_like, optional
        Force vectors (feature, force_dim), drawn as arrows under the images.
    side : int, optional
        Image side; default: the square root of the pixel count.
    titles : list of str, optional
        One title per feature.

    Returns
    -------
    matplotlib.figure.Figure
        One column per feature.

    Examples
    --------
    >>> from pmctx.ibp.data import bar_images
    >>> fig = plot_bases(bar_images(6), A=np.eye(4, 2))
    >>> len(fig.axes) >= 4
    True
    """
    import matplotlib.pyplot as plt

    Y = np.asarray(Y, dtype=float)
    k = Y.shape[0]
    side = side or round(float(np.sqrt(Y.shape[1])))
    fig, axes = plt.subplots(2 if A is not None else 1, k, figsize=(2.0 * k, 4.0), squeeze=False)
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
            a = np.asarray(A)[j]
            axes[1, j].quiver(0, 0, a[0], a[1] if a.size > 1 else 0, angles="xy",
                              scale_units="xy", scale=1)  # fmt: skip
            lim = max(2.0, float(np.abs(A).max()) * 1.2)
            axes[1, j].set_xlim(-lim, lim)
            axes[1, j].set_ylim(-lim, lim)
            axes[1, j].set_aspect("equal")
    fig.tight_layout()
    return fig


def write_outputs(idata, out_dir, prefix="ibp", *, reference=None, side=None, data=None) -> list:
    """Write the standard outputs (posterior, summary, diagnostics) and the IBP plots.

    ``<prefix>_posterior.nc``, ``<prefix>_summary.csv`` (label-invariant quantities),
    ``<prefix>_diagnostics.csv`` (convergence report), ``<prefix>_trace.png``,
    ``<prefix>_n_active.png`` and ``<prefix>_bases.png`` (aligned to ``reference`` if given).

    Parameters
    ----------
    idata : arviz.InferenceData
        A fit of :func:`sample`.
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
    import matplotlib.pyplot as plt

    from pmctx.ibp.diagnostics import LABEL_INVARIANT, align_features
    from pmctx.io import plot_traces, save_figure, write_standard_outputs

    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    fig = plot_traces(idata, list(LABEL_INVARIANT))
    paths.append(save_figure(fig, out_dir / f"{prefix}_trace.png"))
    fig, ax = plt.subplots(figsize=(4, 3))
    n_active = idata.posterior["n_active"].values.ravel()
    ax.hist(n_active, bins=np.arange(n_active.max() + 2) - 0.5, density=True)
    ax.set_xlabel("number of active features K+")
    ax.set_ylabel("posterior probability")
    paths.append(save_figure(fig, out_dir / f"{prefix}_n_active.png"))
    aligned = align_features(idata, reference=reference)
    if "Y" in aligned:
        A = aligned["A"].mean(axis=(0, 1)) if "A" in aligned else None
        fig = plot_bases(aligned["Y"].mean(axis=(0, 1)), A, side=side)
        paths.append(save_figure(fig, out_dir / f"{prefix}_bases.png"))
    return paths


def demo(out_dir: Path, *, quick: bool = False, random_seed: int = 0, cores=None) -> list[Path]:
    """Fit the model to synthetic 6 x 6 bar cues with 2-D forces (four true contexts).

    Writes ``ibp_posterior.nc`` (with ``log_likelihood``), ``ibp_summary.csv`` (label-
    invariant quantities), ``ibp_diagnostics.csv``, ``ibp_trace.png``, ``ibp_n_active.png``
    and ``ibp_bases.png`` (posterior Y images and A vectors aligned to the true features).

    Parameters
    ----------
    out_dir : path-like
        Output folder.
    quick : bool, default False
        Small sizes (seconds to a minute), for a first look and the tests.
    random_seed : int, default 0
        Seed of the data and the sampler.
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
    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(60 if quick else 100, random_seed=random_seed)
    idata = sample(
        data.F,
        data.X,
        K_max=8 if quick else 12,
        # 100 trials and 4 x 1200 draws: the worst F_hat entry's tail ESS is the slowest
        # quantity (about 250 per 2400 draws on seed 0, where the check asks for 400).
        draws=150 if quick else 1200,
        tune=150 if quick else 300,
        chains=2 if quick else 4,
        cores=cores,
        random_seed=random_seed,
        sigma_n=0.3,
        check_convergence=not quick,
    )
    return write_outputs(idata, out_dir, reference=data.Z, side=data.side)


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
    """:func:`sample` on a data dict ``{"F": ..., "X": ...}`` (either may be absent).

    Parameters
    ----------
    data : dict
        Validated data as :mod:`pmctx.schema` loads it, ``{"F": ..., "X": ...}``.
    draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
        As in :func:`pymc.sample` (same defaults).
    **options
        Model options (see ``SPEC.options``).

    Returns
    -------
    arviz.InferenceData
        The fit, as :func:`sample` returns it.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=8, random_seed=1)
    >>> idata = fit_data({"X": data.X}, K_max=10, draws=20, tune=10, chains=1,
    ...                  random_seed=1, check_convergence=False, progressbar=False)
    >>> idata.posterior["Z"].shape
    (1, 20, 8, 10)
    """
    return sample(
        data.get("F"),
        data.get("X"),
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
        idata_kwargs=idata_kwargs,
        **options,
    )


class _KfoldFit:
    def __init__(self, options):
        self.options = options

    def __call__(self, train):
        return sample(train.get("F"), train.get("X"), log_likelihood=False, **self.options)


class _KfoldPredictive:
    def __init__(self, var_name, options, hyper):
        self.var_name, self.options, self.hyper = var_name, options, hyper

    def __call__(self, idata, test):
        from pmctx.ibp.marginal import integrated_log_likelihood

        hyper = {}
        for name in ("sigma_n", "lam", "eps"):
            if name not in idata.posterior:
                hyper[name] = float(np.asarray(idata.constant_data[name]).reshape(-1)[0])
        ds = integrated_log_likelihood(
            idata.posterior, test.get("F"), test.get("X"), hyper=hyper, **self.options
        )
        return ds[self.var_name].values


def kfold_functions(*, var_name: str = "joint", marginal_options=None, **sample_options):
    """``fit`` and ``log_predictive`` for the IBP visuo-motor model.

    ``fit`` runs :func:`sample` on the training trials with
    ``sample_options`` (``K_max``, ``draws``, ``tune``, hyperparameters, ...);
    ``log_predictive`` scores held-out trials with the integrated likelihood: ``joint``
    (the whole trial), ``F`` (forces given the trial's cues: the visuo-motor question) or
    ``X`` (cues given forces). Data: ``{"F": ..., "X": ...}`` (either may be left out).

    Parameters
    ----------
    var_name : {"joint", "F", "X"}, default "joint"
        What a held-out trial is scored on.
    marginal_options : dict, optional
        Options of the integrated likelihood (:mod:`pmctx.ibp.marginal`).
    **sample_options
        Passed to :func:`sample` for every refit.

    Returns
    -------
    tuple of callable
        ``(fit, log_predictive)`` for :func:`pmctx.kfold.kfold` and :func:`pmctx.kfold.reloo`
        (picklable, so refits can run on Dask workers).

    Examples
    --------
    >>> fit, log_predictive = kfold_functions(var_name="F", K_max=8, draws=200)
    >>> callable(fit) and callable(log_predictive)
    True
    """
    if var_name not in ("joint", "F", "X"):
        raise ValueError(f"var_name must be 'joint', 'F' or 'X'; got {var_name!r}.")
    return _KfoldFit(sample_options), _KfoldPredictive(var_name, marginal_options or {}, None)


def _spec():
    from pmctx.ibp.simulate import invariants as sbc_quantities
    from pmctx.ibp.simulate import simulate
    from pmctx.registry import ModelSpec
    from pmctx.schema import load_ibp

    return ModelSpec(
        name="ibp",
        summary="truncated IBP visuo-motor factorisation: forces F = ZA + noise, cues X by "
        "noisy-OR of ZY",
        module=__name__,
        load=load_ibp,
        fit=fit_data,
        invariants=invariants,
        write_outputs=write_outputs,
        demo=demo,
        simulate=simulate,
        sbc_quantities=sbc_quantities,
        predict=predict,
        kfold=kfold_functions,
        comparisons={
            "joint": "each trial's forces and cues together, features integrated out: "
            "structure questions (which features, how many)",
            "F": "each trial's forces given its cues: the visuo-motor question (which model "
            "predicts the forces a context calls for)",
            "X": "each trial's cues given its forces",
        },
        population=("n_active", "alpha", "sigma_n", "sigma_A"),
        options={
            "K_max": "truncation level, number of feature columns (int, default 10)",
            "alpha": "IBP concentration (number, or 'prior': learned, the default)",
            "sigma_n": "force noise sd (number, or 'prior': learned, the default)",
            "sigma_A": "force-vector prior sd (number, or 'prior': learned, the default)",
            "phi": "prior probability of a basis pixel (number, or 'prior': the default)",
            "lam": "noisy-OR link strength (number, or 'prior': learned, the default)",
            "eps": "noisy-OR leak probability (number, or 'prior': learned, the default)",
            "start": "chain start: 'auto' (default: subsample fit from 500 trials on), "
            "'subsample', 'zero'",
        },
        advice="Run longer (draws=2000, tune=2000) or more chains; if chains disagree on "
        "n_active, they sit in different modes: fix sigma_n to the force noise or raise K_max",
        demo_seconds=(77, 6),
    )


#: The model's entry in the registry (:mod:`pmctx.registry`).
SPEC = _spec()

#: ``fit(data_path, *, out_dir="pmctx-fit", **kwargs)``: load a data file, fit, write the
#: files (:meth:`pmctx.registry.ModelSpec.fit_file`, what ``pmctx fit`` runs).
fit = SPEC.fit_file

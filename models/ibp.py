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
>>> data = visuomotor_data(n_trials=20, seed=0)
>>> idata = sample(data.F, data.X, K_max=6, draws=30, tune=30, chains=1, random_seed=0)
>>> int(idata.posterior["n_active"].max()) <= 6
True
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pmctx import TruncationWarning
from pmctx.steps.ibp_gibbs import ALPHA_PRIOR, HYPER_NAMES, IBPAlphaGibbs, IBPGibbs
from pmctx.steps.registration import tag_block
from pmctx.validation import (
    as_binary_array,
    as_float_array,
    check_int,
    check_positive,
    check_probability,
    check_same_length,
)

__all__ = ["build_model", "demo", "fit", "plot_bases", "sample", "write_outputs"]

DEFAULT_HYPER = dict(alpha=1.0, sigma_n=0.5, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)


def _hyper_prior(name):
    # Weakly informative priors for hyperparameters the user asks to learn.
    if name == "alpha":  # conjugate: IBPAlphaGibbs samples it exactly
        return pm.Gamma(name, alpha=ALPHA_PRIOR[0], beta=ALPHA_PRIOR[1])
    if name in ("sigma_n", "sigma_A"):
        return pm.HalfNormal(name, sigma=1.0)
    if name == "phi":
        return pm.Beta(name, 1.0, 1.0)
    if name == "lam":
        return pm.Beta(name, 5.0, 1.0)
    return pm.Beta(name, 1.0, 20.0)  # eps


def _hyper_variable(name, value):
    if isinstance(value, pt.Variable):
        # IBPGibbs reads hyperparameters by name from the current point.
        return value if value.name == name else pm.Deterministic(name, value)
    return _hyper_prior(name) if value == "prior" else pm.Data(name, value)


def validate_inputs(F, X, K_max, hyper):
    """Check data and hyperparameters at the public boundary; returns cleaned copies."""
    if F is None and X is None:
        raise ValueError("Pass forces F, visual cues X, or both; got neither.")
    F = None if F is None else as_float_array(F, "F", ndim=2)
    X = None if X is None else as_binary_array(X, "X", ndim=2)
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


def build_model(F=None, X=None, *, K_max: int = 10, reconstructions: bool = True, **hyper):
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
    F, X, K_max, hyper = validate_inputs(F, X, K_max, {**DEFAULT_HYPER, **hyper})
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
            mean = pt.dot(Z, A)
            pm.Normal("F", mu=mean, sigma=h["sigma_n"], observed=F, dims=("trial", "force_dim"))
            sn = h["sigma_n"]
            loglik += pt.sum(-0.5 * pt.log(2 * np.pi * sn**2) - 0.5 * ((F - mean) / sn) ** 2)
            if reconstructions:
                pm.Deterministic("F_hat", mean, dims=("trial", "force_dim"))
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
    # Plain pm.sample() hands the tagged latents to IBPGibbs (and alpha to IBPAlphaGibbs).
    latents = {name: model[name] for name in ("Z", "pi", "A", "Y") if name in model.named_vars}
    tag_block(IBPGibbs.owns_block, **latents)
    if hyper["alpha"] == "prior":
        tag_block(IBPAlphaGibbs.owns_block, alpha=h["alpha"])
    return model


def sample(
    F=None,
    X=None,
    *,
    K_max: int = 10,
    draws: int = 1000,
    tune: int = 200,
    chains: int = 4,
    cores: int = 1,
    random_seed=0,
    log_likelihood: bool = True,
    reconstructions: bool = True,
    progressbar: bool = False,
    **hyper,
):
    """Sample the IBP visuo-motor posterior with the specialised Gibbs step.

    Fixed hyperparameters use :class:`~pmctx.steps.ibp_gibbs.IBPGibbs` alone. Given
    ``"prior"``, ``alpha`` gets its conjugate Gamma update
    (:class:`~pmctx.steps.ibp_gibbs.IBPAlphaGibbs`) and the others are sampled by PyMC's own
    step (NUTS) in the same ``pm.sample`` call.

    Parameters
    ----------
    F, X : array_like, optional
        Forces (N x D) and/or binary cues (N x T); see :func:`build_model`.
    K_max : int, default 10
        Truncation; a :class:`pmctx.TruncationWarning` says when it was too small.
    draws, tune, chains, cores, random_seed, progressbar
        As in ``pm.sample``.
    log_likelihood : bool, default True
        Add the pointwise ``log_likelihood`` group for ``F`` and ``X`` (for ``az.loo``).
    reconstructions : bool, default True
        Store ``F_hat`` and ``X_prob`` per draw.
    **hyper
        Hyperparameters, as in :func:`build_model`.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` with ``Z, pi, A, Y`` and label-invariant ``n_active, loglik, F_hat,
        X_prob``; ``sample_stats`` with ``n_active, n_new_features, truncation_hit``.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(n_trials=8, seed=1)
    >>> idata = sample(X=data.X, K_max=8, draws=20, tune=10, chains=1)
    >>> idata.posterior["Z"].shape
    (1, 20, 8, 8)
    """
    draws = check_int(draws, "draws", minimum=1)
    tune = check_int(tune, "tune", minimum=0)
    chains = check_int(chains, "chains", minimum=1)
    model = build_model(F, X, K_max=K_max, reconstructions=reconstructions, **hyper)
    with model:
        steps = [IBPGibbs()]
        if hyper.get("alpha") == "prior":
            steps.append(IBPAlphaGibbs())
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            step=steps,
            random_seed=random_seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": log_likelihood},
        )
    hit = idata.sample_stats["truncation_hit"].values
    if hit.mean() > 0.01:
        warnings.warn(
            f"The truncation at K_max={model.dim_lengths['feature'].eval()} was full after "
            f"{hit.mean():.0%} of the sweeps, so the sampler could not add the features the "
            "posterior asked for; rerun with a larger K_max.",
            TruncationWarning,
            stacklevel=2,
        )
    return idata


# ---------------------------------------------------------------- outputs, demo and fit


def plot_bases(Y, A=None, *, side=None, titles=None):
    """Images of visual basis rows (and force vectors) side by side; returns the figure."""
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


def write_outputs(idata, out_dir, prefix="ibp", *, reference=None, side=None) -> list:
    """Save the InferenceData, a label-invariant summary and diagnostic plots."""
    import arviz as az
    import matplotlib.pyplot as plt

    from pmctx.ibp.diagnostics import LABEL_INVARIANT, align_features
    from pmctx.io import save_figure, save_idata, write_summary

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [save_idata(idata, out_dir / f"{prefix}_posterior.nc")]
    paths.append(
        write_summary(idata, out_dir / f"{prefix}_summary.csv", var_names=list(LABEL_INVARIANT))
    )
    axes = az.plot_trace(idata, var_names=list(LABEL_INVARIANT))
    paths.append(save_figure(axes.ravel()[0].figure, out_dir / f"{prefix}_trace.png"))
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


def demo(out_dir: Path, *, quick: bool = False, seed: int = 0) -> list[Path]:
    """Fit the model to synthetic 6 x 6 bar cues with 2-D forces (four true contexts).

    Writes ``ibp_posterior.nc`` (with ``log_likelihood``), ``ibp_summary.csv`` (label-
    invariant quantities), ``ibp_trace.png``, ``ibp_n_active.png`` and ``ibp_bases.png``
    (posterior Y images and A vectors aligned to the true features).
    """
    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(60 if quick else 150, seed=seed)
    idata = sample(
        data.F,
        data.X,
        K_max=8 if quick else 12,
        draws=150 if quick else 1000,
        tune=150 if quick else 500,
        chains=2 if quick else 4,
        random_seed=seed,
        sigma_n=0.3,
    )
    return write_outputs(idata, out_dir, reference=data.Z, side=data.side)


def _load(data_path: Path):
    if data_path.suffix == ".npz":
        with np.load(data_path, allow_pickle=False) as data:
            if "F" not in data and "X" not in data:
                raise ValueError(
                    f"{data_path} has keys {sorted(data.files)}; it needs 'F' (forces, "
                    "n_trials x D) and/or 'X' (binary cues, n_trials x T)."
                )
            arrays = {k: np.asarray(data[k]) for k in ("F", "X") if k in data}
            options = {k: data[k].item() for k in ("K_max", *HYPER_NAMES) if k in data}
        return arrays.get("F"), arrays.get("X"), options
    if data_path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(data_path)
        f_cols = [c for c in frame.columns if str(c).lower().startswith("f")]
        x_cols = [c for c in frame.columns if str(c).lower().startswith("x")]
        if not f_cols and not x_cols:
            raise ValueError(
                f"{data_path.name} has columns {list(frame.columns)}; name force columns "
                "f0, f1, ... and binary cue columns x0, x1, ..."
            )
        F = frame[f_cols].to_numpy(dtype=float) if f_cols else None
        X = frame[x_cols].to_numpy() if x_cols else None
        return F, X, {}
    raise ValueError(f"Expected a .npz or .csv file, got {data_path.name}.")


def fit(
    data_path: Path, *, draws: int, tune: int, chains: int, seed: int, out_dir: Path
) -> list[Path]:
    """Fit the model to user data and write the same outputs as :func:`demo`.

    ``data_path`` is an ``.npz`` with ``F`` (forces, n_trials x D, float) and/or ``X``
    (binary cues, n_trials x T), optionally scalars ``K_max`` and any of ``alpha, sigma_n,
    sigma_A, phi, lam, eps``; or a ``.csv`` with one row per trial, force columns named
    ``f*`` and cue columns named ``x*``.
    """
    F, X, options = _load(Path(data_path))
    idata = sample(F, X, draws=draws, tune=tune, chains=chains, random_seed=seed, **options)
    return write_outputs(idata, out_dir)

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
...                          max_causes=4, draws=50, tune=20, chains=1, seed=0)
>>> sorted(idata.posterior.data_vars)
['theta', 'weights', 'z']
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymc as pm
from scipy.special import betaln, gammaln

from pmctx.conditioning.design import as_feature_matrix
from pmctx.conditioning.marginal import add_integrated_log_likelihood
from pmctx.steps.crp_gibbs import CRPCollapsedGibbs
from pmctx.validation import check_int, check_positive

__all__ = [
    "build_model",
    "coassignment",
    "demo",
    "fit",
    "log_marginal_assignments",
    "phenomena_table",
    "sample_posterior",
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
    alpha = check_positive(alpha, "alpha")
    K = check_int(max_causes, "max_causes", minimum=1)
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
        weights = pm.Dirichlet("weights", a=np.full(K, alpha / K), dims="cause")
        theta = pm.Beta("theta", eta, eta, dims=("cause", "feature"))
        z = pm.Categorical("z", p=weights, dims="trial")
        pm.Bernoulli(
            "features",
            p=theta[z[trial_index], feature_index],
            observed=F[t_idx, i_idx],
            dims="entry",
        )
    return model


def log_marginal_assignments(z, features, *, alpha, max_causes, concentration=1.0) -> float:
    """log P(z) + log P(F | z) with weights and theta integrated out (exact, for checks).

    Examples
    --------
    >>> round(log_marginal_assignments([0, 0], [[1, 1], [1, 1]], alpha=1.0, max_causes=2), 4)
    -3.1781
    """
    F, _ = as_feature_matrix(features)
    z = np.asarray(z, dtype=np.int64)
    K = int(max_causes)
    a = alpha / K
    n_k = np.bincount(z, minlength=K)
    log_prior = gammaln(alpha) - gammaln(alpha + z.size) + np.sum(gammaln(n_k + a) - gammaln(a))
    onehot = (z[:, None] == np.arange(K)).astype(float)
    ones = onehot.T @ (F == 1).astype(float)
    zeros = onehot.T @ (F == 0).astype(float)
    eta = concentration
    log_lik = np.sum(betaln(ones + eta, zeros + eta) - betaln(eta, eta))
    return float(log_prior + log_lik)


def sample_posterior(
    features,
    *,
    alpha=1.0,
    max_causes=10,
    concentration=1.0,
    draws=1000,
    tune=500,
    chains=2,
    seed=0,
    cores=1,
    progressbar=False,
):
    """Sample the batch posterior with the collapsed Gibbs step; returns ``InferenceData``.

    The result has ``posterior`` (z, weights, theta), ``sample_stats.n_occupied`` (the number
    of occupied causes) and a ``log_likelihood`` group: ``features`` per observed entry
    (given the sampled causes) and ``trial_features`` per trial with its cause summed out
    (:mod:`pmctx.conditioning.marginal`; the one to use for LOO over trials).
    Cause labels switch between chains: diagnose label-free quantities such as
    ``n_occupied`` or co-assignment probabilities, not raw ``z``.
    """
    F, _ = as_feature_matrix(features)
    model = build_model(features, alpha=alpha, max_causes=max_causes, concentration=concentration)
    with model:
        step = CRPCollapsedGibbs(
            [model["z"], model["weights"], model["theta"]],
            features=F,
            alpha=alpha,
            concentration=concentration,
        )
        idata = pm.sample(
            draws=check_int(draws, "draws", minimum=1),
            tune=check_int(tune, "tune", minimum=0),
            chains=check_int(chains, "chains", minimum=1),
            cores=cores,
            step=[step],
            random_seed=seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
        )
    return add_integrated_log_likelihood(idata, F)  # per-trial, for LOO over trials


def coassignment(idata) -> np.ndarray:
    """Posterior probability that two trials share a cause (label-free), (trial, trial)."""
    z = idata.posterior["z"].values.reshape(-1, idata.posterior["z"].shape[-1])
    return (z[:, :, None] == z[:, None, :]).mean(axis=0)


RENEWAL_DESIGNS = ("renewal_aba", "renewal_abc", "renewal_aab")


def phenomena_table(*, alpha=0.1, n_particles=500, n_seeds=5, seed=0, **sizes):
    """V at the end of extinction and at test on every renewal/extinction design.

    Returns a ``pandas.DataFrame`` indexed by design, averaged over ``n_seeds`` filter runs.
    """
    import pandas as pd

    from pmctx.conditioning import particle_filter, shipped_design

    rows = {}
    for name in (*RENEWAL_DESIGNS, "renewal_aaa", "reinstatement", "partial_reinforcement"):
        design = shipped_design(name, **sizes)
        V = np.mean(
            [
                particle_filter(design, alpha=alpha, n_particles=n_particles, rng=seed + s).V
                for s in range(n_seeds)
            ],
            axis=0,
        )
        sl = design.phase_slices()
        rows[name] = {
            "V_end_acquisition": V[sl["acquisition"]][-1],
            "V_end_extinction": V[sl["extinction"]][-1],
            "V_test": V[sl["test"]].mean(),
        }
    return pd.DataFrame(rows).T


def _write_outputs(out_dir, design, results, idata, stem):
    from pmctx.conditioning.plots import plot_cause_posterior, plot_V
    from pmctx.io import save_figure, save_idata, write_summary

    first = next(iter(results.values()))
    idata.posterior["n_occupied"] = idata.sample_stats["n_occupied"]
    paths = [
        save_idata(idata, out_dir / f"{stem}_posterior.nc"),
        write_summary(idata, out_dir / f"{stem}_summary.csv", var_names=["n_occupied"]),
        save_idata(first.to_inference_data(), out_dir / f"{stem}_filter.nc"),
        save_figure(plot_V(results, design=design), out_dir / f"{stem}_V.png"),
        save_figure(plot_cause_posterior(first, design=design), out_dir / f"{stem}_causes.png"),
    ]
    return paths


def demo(out_dir: Path, *, quick: bool = False, seed: int = 0) -> list[Path]:
    """Renewal: particle filter on ABA, ABC and AAB, the batch posterior of ABA, plots.

    Writes ``renewal_V.png`` (V_t per design), ``renewal_causes.png`` (ABA cause posterior),
    ``renewal_filter.nc``, ``renewal_posterior.nc`` (collapsed Gibbs, with
    ``log_likelihood``), ``renewal_summary.csv`` and ``phenomena.csv``.
    """
    from pmctx.conditioning import particle_filter, shipped_design

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = dict(n_acquisition=10, n_extinction=10, n_test=2)
    n_particles = 200 if quick else 1000
    results = {
        name.split("_")[1].upper(): particle_filter(
            shipped_design(name, **sizes), alpha=0.1, n_particles=n_particles, rng=seed
        )
        for name in RENEWAL_DESIGNS
    }
    design = shipped_design("renewal_aba", **sizes)
    idata = sample_posterior(
        design,
        alpha=1.0,
        max_causes=6,
        draws=200 if quick else 2000,
        tune=100 if quick else 500,
        chains=2,
        seed=seed,
    )
    paths = _write_outputs(out_dir, design, results, idata, "renewal")
    table = phenomena_table(n_particles=n_particles, n_seeds=2 if quick else 5, seed=seed, **sizes)
    table.to_csv(out_dir / "phenomena.csv")
    return [*paths, out_dir / "phenomena.csv"]


def _load_features(data_path: Path):
    if data_path.suffix == ".npz":
        with np.load(data_path, allow_pickle=False) as data:
            if "features" not in data:
                raise ValueError(
                    f"{data_path} has keys {sorted(data.files)}; it needs 'features' "
                    "(n_trials, n_features), US in column 0."
                )
            F = np.asarray(data["features"], dtype=float)
            names = [str(n) for n in data["feature_names"]] if "feature_names" in data else None
            alpha = float(data["alpha"]) if "alpha" in data else 1.0
            max_causes = int(data["max_causes"]) if "max_causes" in data else 10
    elif data_path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(data_path)
        F, names, alpha, max_causes = frame.to_numpy(dtype=float), list(frame.columns), 1.0, 10
    else:
        raise ValueError(f"Expected a .npz or .csv file, got {data_path.name}.")
    if names is not None and len(names) != np.shape(F)[-1]:
        raise ValueError(f"feature_names has {len(names)} names for {np.shape(F)[-1]} columns.")
    import xarray as xr

    as_feature_matrix(F)  # validate before labelling
    features = xr.DataArray(
        F, dims=("trial", "feature"), coords={"feature": names} if names else None
    )
    return features, alpha, max_causes


def fit(
    data_path: Path, *, draws: int, tune: int, chains: int, seed: int, out_dir: Path
) -> list[Path]:
    """Fit the model to a subject's trial features.

    ``data_path`` is a ``.npz`` with key ``features`` (n_trials, n_features; 0/1, NaN for a
    missing US; US in column 0) and optional ``feature_names``, ``alpha`` (default 1.0) and
    ``max_causes`` (default 10); or a ``.csv`` with a header whose first column is the US
    and the others CS/context features (empty cells are missing). Writes the particle-filter
    result (``fit_filter.nc``, ``fit_V.png``, ``fit_causes.png``) and the batch posterior
    (``fit_posterior.nc`` with ``log_likelihood``, ``fit_summary.csv``) into ``out_dir``.
    """
    from pmctx.conditioning import particle_filter

    features, alpha, max_causes = _load_features(Path(data_path))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = particle_filter(features, alpha=alpha, n_particles=1000, rng=seed)
    idata = sample_posterior(
        features,
        alpha=alpha,
        max_causes=max_causes,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
    )
    return _write_outputs(out_dir, None, {"V": result}, idata, "fit")

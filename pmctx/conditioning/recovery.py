"""Parameter and variant recovery studies for the per-subject latent-cause fits.

* :func:`parameter_recovery`: simulate subjects with known parameters (alpha, a, stickiness,
  gain, sd), fit them, and tabulate true vs fitted values.
* :func:`variant_confusion`: simulate subjects from each LCM variant, fit every variant, and
  count which variant has the best BIC (rows: generating variant, columns: winner).
* :func:`posterior_coverage` / :func:`coverage_table`: calibration of the per-subject
  posterior (:func:`~pmctx.conditioning.posterior.sample_subject`) on subjects drawn from the
  fit's own priors (:func:`draw_from_prior`).
* :func:`spontaneous_recovery_curve`: test-trial ``V`` by retention interval under the
  temporal prior.

Examples
--------
>>> from pmctx.conditioning.recovery import draw_truth
>>> sorted(draw_truth("lcm_sticky", rng=0))
['a', 'alpha', 'gain', 'sd', 'stickiness']
"""

from __future__ import annotations

import numpy as np

from pmctx.conditioning.fitting import (
    LCM_VARIANTS,
    fit_subject,
    recovery_design,
    simulate_subject,
)
from pmctx.validation import as_rng, check_int

__all__ = [
    "COVERAGE_PRIORS",
    "coverage_table",
    "draw_from_prior",
    "draw_truth",
    "parameter_recovery",
    "posterior_coverage",
    "spontaneous_recovery_curve",
    "variant_confusion",
]


def draw_truth(variant: str, rng=None) -> dict:
    """Generating parameters of one simulated subject for a variant.

    alpha log-uniform on [0.05, 5], a uniform on [0.6, 1.4], stickiness uniform on [0.5, 4]
    (variants that have them), gain uniform on [0.5, 1.5], sd uniform on [0.05, 0.15].

    Parameters
    ----------
    variant : str
        One of :data:`~pmctx.conditioning.fitting.LCM_VARIANTS`.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    dict
        Filter and response parameters by name.

    Examples
    --------
    >>> sorted(draw_truth("lcm_sticky", rng=0))
    ['a', 'alpha', 'gain', 'sd', 'stickiness']
    """
    gen = as_rng(rng)
    free = LCM_VARIANTS[variant][0]
    truth = {}
    if "alpha" in free:
        truth["alpha"] = float(np.exp(gen.uniform(np.log(0.05), np.log(5.0))))
    truth["a"] = float(gen.uniform(0.6, 1.4))
    if "stickiness" in free:
        truth["stickiness"] = float(gen.uniform(0.5, 4.0))
    truth["gain"] = float(gen.uniform(0.5, 1.5))
    truth["sd"] = float(gen.uniform(0.05, 0.15))
    return truth


def parameter_recovery(n_subjects=10, *, n_trials=100, variant="lcm", rng=None, **fit_options):
    """True vs fitted parameters of ``n_subjects`` simulated subjects (a ``DataFrame``).

    Columns ``true_<p>`` and ``fit_<p>`` for every generating parameter; ``fit_options`` go
    to :func:`~pmctx.conditioning.fitting.fit_subject` (and ``n_particles`` also to the
    simulation).

    Parameters
    ----------
    n_subjects : int, default 10
        Simulated subjects.
    n_trials : int, default 100
        Trials per subject (>= 20).
    variant : str, default "lcm"
        The generating and fitted variant.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.
    **fit_options
        Passed to :func:`~pmctx.conditioning.fitting.fit_subject`.

    Returns
    -------
    pandas.DataFrame
        One row per subject; ``true_<p>``, ``fit_<p>`` and ``seconds``.
    """
    import pandas as pd

    gen = as_rng(rng)
    design = recovery_design(check_int(n_trials, "n_trials", minimum=20))
    n_particles = fit_options.get("n_particles", 100)
    rows = []
    for _ in range(check_int(n_subjects, "n_subjects", minimum=1)):
        truth = draw_truth(variant, gen)
        data = simulate_subject(design, truth, variant=variant, n_particles=n_particles, rng=gen)
        fit = fit_subject(
            data["responses"], design, variant=variant, random_seed=gen, **fit_options
        )
        row = {f"true_{k}": v for k, v in truth.items()}
        row.update({f"fit_{k}": fit.params[k] for k in truth})
        row["seconds"] = fit.seconds
        rows.append(row)
    return pd.DataFrame(rows)


def variant_confusion(
    n_subjects=5, *, n_trials=100, variants=tuple(LCM_VARIANTS), rng=None, **fit_options
):
    """Confusion matrix of variant recovery by BIC (rows: true variant, columns: best fit).

    Parameters
    ----------
    n_subjects : int, default 5
        Simulated subjects per true variant.
    n_trials : int, default 100
        Trials per subject (>= 20).
    variants : sequence of str, default all variants
        The variants simulated and fitted.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.
    **fit_options
        Passed to :func:`~pmctx.conditioning.fitting.fit_subject`.

    Returns
    -------
    pandas.DataFrame
        Counts, rows ``true`` variant, columns ``best_bic`` variant.
    """
    import pandas as pd

    gen = as_rng(rng)
    design = recovery_design(check_int(n_trials, "n_trials", minimum=20))
    n_particles = fit_options.get("n_particles", 100)
    counts = pd.DataFrame(0, index=list(variants), columns=list(variants))
    counts.index.name, counts.columns.name = "true", "best_bic"
    for true in variants:
        for _ in range(check_int(n_subjects, "n_subjects", minimum=1)):
            truth = draw_truth(true, gen)
            data = simulate_subject(design, truth, variant=true, n_particles=n_particles, rng=gen)
            seed = int(gen.integers(2**63 - 1))  # the same CRN for every candidate
            bics = {
                v: fit_subject(
                    data["responses"], design, variant=v, random_seed=seed, **fit_options
                ).bic
                for v in variants
            }
            counts.loc[true, min(bics, key=bics.get)] += 1
    return counts


#: Fixed priors of the response parameters in the coverage study (``build_subject_model``'s
#: ``priors=``); the true values are drawn from them.
COVERAGE_PRIORS = {
    "gain": ("uniform", 0.5, 1.5),
    "level": ("uniform", 0.2, 0.8),
    "sd": ("uniform", 0.05, 0.2),
}


def draw_from_prior(variant: str, priors=None, bounds=None, rng=None) -> dict:
    """True parameters drawn from the priors a posterior fit uses (for calibration studies).

    Filter parameters uniform on ``bounds`` (default :data:`~.fitting.LCM_BOUNDS`), response
    parameters from ``priors`` (default :data:`COVERAGE_PRIORS`, uniform boxes); the returned
    dict also holds ``intercept = level - gain / 2`` for the simulation.

    Parameters
    ----------
    variant : str
        One of :data:`~pmctx.conditioning.fitting.LCM_VARIANTS`.
    priors : dict, optional
        Uniform priors of the response parameters, ``{name: ("uniform", low, high)}``.
    bounds : dict, optional
        Boxes of the filter parameters.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    dict
        Parameters by name, with ``intercept``.

    Examples
    --------
    >>> sorted(draw_from_prior("lcm", rng=0))
    ['a', 'alpha', 'gain', 'intercept', 'level', 'sd']
    """
    from pmctx.conditioning.fitting import LCM_BOUNDS

    gen = as_rng(rng)
    bounds = {**LCM_BOUNDS, **(bounds or {})}
    priors = COVERAGE_PRIORS if priors is None else priors
    truth = {p: float(gen.uniform(*bounds[p])) for p in LCM_VARIANTS[variant][0]}
    for name, spec in priors.items():
        if spec[0] != "uniform":
            raise ValueError(f"draw_from_prior draws uniform priors only; {name} has {spec[0]!r}.")
        truth[name] = float(gen.uniform(spec[1], spec[2]))
    truth["intercept"] = truth["level"] - 0.5 * truth["gain"]
    return truth


def posterior_coverage(
    n_subjects=6,
    *,
    n_trials=60,
    variant="lcm",
    probs=(0.5, 0.8, 0.95),
    rng=None,
    n_particles=30,
    method="particle",
    draws=500,
    tune=500,
    chains=2,
    priors=None,
    bounds=None,
):
    """Posterior intervals of simulated subjects drawn from the fit's own priors.

    Each subject's parameters come from :func:`draw_from_prior` (the priors the fit uses, so
    central ``prob`` intervals should cover the truth in a fraction ``prob`` of subjects),
    its ``V`` from one run of the ``n_particles``-particle filter (or the local MAP), and it
    is fitted by :func:`~pmctx.conditioning.posterior.sample_subject`. ``n_trials`` is an int
    or a ``(low, high)`` range to draw from.

    Parameters
    ----------
    n_subjects : int, default 6
        Simulated subjects.
    n_trials : int or tuple of int, default 60
        Trials per subject, or a ``(low, high)`` range.
    variant : str, default "lcm"
        The generating and fitted variant.
    probs : tuple of float, default (0.5, 0.8, 0.95)
        Central interval probabilities.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.
    n_particles : int, default 30
        Particles of the filter.
    method : {"particle", "local_map"}, default "particle"
        Filter method.
    draws, tune, chains : int
        As in :func:`pymc.sample` (defaults 500, 500, 2).
    priors : dict, optional
        Response-parameter priors (default :data:`COVERAGE_PRIORS`).
    bounds : dict, optional
        Filter-parameter boxes.

    Returns
    -------
    pandas.DataFrame
        One row per subject: ``true_<p>``, ``mean_<p>``, ``covered<prob>_<p>`` (e.g.
        ``covered80_alpha``), ``ess_per_1000_<p>`` (bulk ESS per 1,000 draws), ``rhat_<p>``,
        plus ``n_trials``, ``accept``, ``loglik_sd`` (one filter run's, at the posterior mean),
        ``seconds`` and, for PMMH, ``n_filter_runs`` (max over chains) and ``estimate_sd``
        (the sd of the averaged estimate, measured when tuning ends; max over chains).
    """
    import time

    import arviz as az
    import pandas as pd

    from pmctx.conditioning.posterior import sample_subject

    gen = as_rng(rng)
    priors = COVERAGE_PRIORS if priors is None else priors
    rows = []
    for _ in range(check_int(n_subjects, "n_subjects", minimum=1)):
        T = int(gen.integers(n_trials[0], n_trials[1] + 1)) if np.ndim(n_trials) else n_trials
        design = recovery_design(check_int(T, "n_trials", minimum=20))
        truth = draw_from_prior(variant, priors, bounds, gen)
        data = simulate_subject(
            design, truth, variant=variant, n_particles=n_particles, method=method, rng=gen
        )
        start = time.perf_counter()
        idata = sample_subject(
            data["responses"],
            design,
            variant=variant,
            draws=draws,
            tune=tune,
            chains=chains,
            n_particles=n_particles,
            method=method,
            priors=priors,
            bounds=bounds,
            random_seed=gen,
        )
        row = {"n_trials": T, "seconds": time.perf_counter() - start}
        stats = idata.sample_stats
        row["accept"] = float(stats["accept"].mean()) if "accept" in stats else np.nan
        row["loglik_sd"] = idata.posterior.attrs["particle_loglik_sd"]
        if "n_filter_runs" in stats:  # PMMH: filter runs averaged per estimate, and its sd
            row["n_filter_runs"] = int(stats["n_filter_runs"].max())
            row["estimate_sd"] = float(stats["loglik_sd"].max())
        names = [p for p in truth if p != "intercept"]
        ess = az.ess(idata, var_names=names)
        rhat = az.rhat(idata, var_names=names) if chains > 1 else None
        n_draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
        for p in names:
            x = idata.posterior[p].values.ravel()
            row[f"true_{p}"] = truth[p]
            row[f"mean_{p}"] = float(x.mean())
            for prob in probs:
                lo, hi = np.quantile(x, [(1 - prob) / 2, (1 + prob) / 2])
                row[f"covered{round(100 * prob)}_{p}"] = bool(lo <= truth[p] <= hi)
            row[f"ess_per_1000_{p}"] = float(ess[p]) * 1000 / n_draws
            row[f"rhat_{p}"] = float(rhat[p]) if rhat is not None else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def coverage_table(df, probs=(0.5, 0.8, 0.95)):
    """Per parameter: coverage of each interval, its binomial SE, and median ESS / 1,000 draws.

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`posterior_coverage`.
    probs : tuple of float, default (0.5, 0.8, 0.95)
        The interval probabilities used there.

    Returns
    -------
    pandas.DataFrame
        One row per parameter and ``all``: ``cover<p>``, ``se<p>``, ``median_ess_per_1000``,
        ``max_rhat``.
    """
    import pandas as pd

    names = [c[len("true_") :] for c in df.columns if c.startswith("true_")]
    rows = {}
    for p in [*names, "all"]:
        cols = names if p == "all" else [p]
        row = {}
        for prob in probs:
            hits = df[[f"covered{round(100 * prob)}_{c}" for c in cols]].to_numpy().ravel()
            row[f"cover{round(100 * prob)}"] = float(hits.mean())
            row[f"se{round(100 * prob)}"] = float(np.sqrt(prob * (1 - prob) / hits.size))
        row["median_ess_per_1000"] = float(
            np.median(df[[f"ess_per_1000_{c}" for c in cols]].to_numpy())
        )
        row["max_rhat"] = float(np.nanmax(df[[f"rhat_{c}" for c in cols]].to_numpy()))
        rows[p] = row
    return pd.DataFrame(rows).T


def spontaneous_recovery_curve(
    intervals=(1, 10, 100, 1000),
    *,
    alpha=0.1,
    temporal_kernel="power",
    n_particles=300,
    n_seeds=5,
):
    """V on the non-reinforced test trial after each retention interval (a ``DataFrame``).

    The shipped ``spontaneous_recovery`` design (acquisition and extinction in A, then a test
    in A after ``retention_interval`` time units), filtered with the temporal prior and,
    for comparison, with the CRP prior (which ignores time). Columns: ``retention_interval``,
    ``V_test`` (mean over ``n_seeds`` filter runs), ``se``, ``V_test_crp``.

    Parameters
    ----------
    intervals : sequence of float, default (1, 10, 100, 1000)
        Retention intervals.
    alpha : float, default 0.1
        CRP concentration.
    temporal_kernel : {"power", "exponential"}, default "power"
        The temporal prior.
    n_particles : int, default 300
        Particles of the filter.
    n_seeds : int, default 5
        Filter runs averaged per interval.

    Returns
    -------
    pandas.DataFrame
        One row per interval.
    """
    import pandas as pd

    from pmctx.conditioning.design import shipped_design
    from pmctx.conditioning.particle_filter import particle_filter

    rows = []
    for R in intervals:
        design = shipped_design("spontaneous_recovery", retention_interval=R)
        V = [
            particle_filter(
                design,
                alpha=alpha,
                temporal_kernel=temporal_kernel,
                n_particles=n_particles,
                random_seed=s,
            ).V[-1]
            for s in range(n_seeds)
        ]
        crp = [
            particle_filter(design, alpha=alpha, n_particles=n_particles, random_seed=s).V[-1]
            for s in range(n_seeds)
        ]
        rows.append(
            {
                "retention_interval": R,
                "V_test": float(np.mean(V)),
                "se": float(np.std(V, ddof=1) / np.sqrt(n_seeds)),
                "V_test_crp": float(np.mean(crp)),
            }
        )
    return pd.DataFrame(rows)

"""Study-level latent-cause fits: every LCM variant per subject, and simulated studies.

What ``LCM_fit`` + ``mfit_bms`` do for a study, as one batch unit per subject:
:func:`fit_variants` fits each variant of :data:`~pmctx.conditioning.fitting.LCM_VARIANTS` to
one subject's conditioned responses by maximum likelihood (the same common random numbers
for every variant, so their differences are not filter noise) and returns an
``DataTree`` whose ``posterior`` holds each parameter's estimate per variant and whose
attributes hold each variant's log evidence (``log_evidence_<variant>``, the BIC
approximation), log likelihood and parameters (``<variant>.<parameter>``).
``pmctx batch crp`` runs it for every subject of a table with a ``CR`` column, then
:func:`pmctx.batch.bms.write_model_selection` tabulates the subjects and runs random-effects
Bayesian model selection over the variants. :func:`simulate_study` makes such a table (US and
CS columns, CR with missing trials) with known generating variants and parameters.

Examples
--------
>>> table, truth = simulate_study(2, n_trials=20, n_particles=10, rng=0)
>>> list(table.columns)[:3], sorted(truth.columns)[:2]
(['unit', 'US', 'tone'], ['a', 'alpha'])
>>> idata = fit_variants(table[table["unit"] == "s00"].drop(columns="unit").to_dict("list"),
...                      random_seed=0, method="local_map", n_starts=1, max_evals=10)
>>> sorted(k for k in idata.posterior.attrs if k.startswith("log_evidence_"))
['log_evidence_lcm', 'log_evidence_lcm_one_cause', 'log_evidence_lcm_sticky']
"""

from __future__ import annotations

import numpy as np

from pmctx.conditioning.fitting import LCM_VARIANTS, compare_variants, recovery_design
from pmctx.conditioning.likelihood import simulate_subject
from pmctx.validation import as_float_array, as_rng, check_int

__all__ = ["fit_variants", "simulate_study"]


def _unit_arrays(data: dict):
    """(responses, features, feature names) of one unit's columns: ``CR`` (or ``responses``)
    and every other column, in order, as trial features with the US first."""
    data = dict(data)
    key = "CR" if "CR" in data else "responses"
    if key not in data:
        raise ValueError(
            f"A subject needs its conditioned responses in a 'CR' column, got columns "
            f"{sorted(data)}. Name the response column CR (NaN on trials without a response)."
        )
    responses = as_float_array(data.pop(key), key, ndim=1, allow_nan=True)
    if "features" in data:
        features = as_float_array(data.pop("features"), "features", ndim=2, allow_nan=True)
        names = None
    else:
        names = list(data)
        if not names:
            raise ValueError("A subject needs trial features: a US column and CS columns.")
        features = np.column_stack(
            [as_float_array(data[n], n, ndim=1, allow_nan=True) for n in names]
        )
    return responses, features, names


def fit_variants(data: dict, *, random_seed=None, variants=None, **options):
    """Fit every LCM variant to one subject; their estimates and log evidences as a DataTree.

    Parameters
    ----------
    data : dict
        One subject's columns: ``CR`` (conditioned responses, NaN where missing; or
        ``responses``) and the trial features, either as ``features`` (trial, feature) or as
        the remaining columns in order, the US first (NaN for an unknown US).
    random_seed : int or numpy.random.Generator, optional
        Seed of the common random numbers (shared by the variants) and the fits.
    variants : sequence of str, optional
        Variants fitted (default all of :data:`~pmctx.conditioning.fitting.LCM_VARIANTS`).
    **options
        Passed to :func:`~pmctx.conditioning.fitting.fit_subject` (``method``,
        ``n_particles``, ``n_starts``, ``response``, ``feature_prior``, ...).

    Returns
    -------
    xarray.DataTree
        ``posterior`` (one chain, one draw: the ML estimates): each parameter under the
        subject's best variant (``alpha``, ``a``, ..., ``sd``) and under every variant
        (``<variant>.<parameter>``); ``posterior.attrs``: ``log_evidence_<variant>`` (BIC
        approximation, ``-BIC / 2``), ``log_likelihood_<variant>``, ``n_params_<variant>``,
        ``<variant>.<parameter>``, ``best_variant`` (largest log evidence) and
        ``inference``; ``observed_data``: the responses.

    Examples
    --------
    >>> design = recovery_design(20)
    >>> sim = simulate_subject(design, {"alpha": 1.0, "a": 1.0, "gain": 1.0, "sd": 0.1},
    ...                        variant="lcm", n_particles=10, rng=0)
    >>> idata = fit_variants({"CR": sim["responses"], "features": design.to_array()},
    ...                      random_seed=1, variants=("lcm", "lcm_one_cause"),
    ...                      method="local_map", n_starts=1, max_evals=10)
    >>> idata.posterior["lcm_one_cause.alpha"].item()
    0.0
    """
    from pmctx.io import to_inference_data

    responses, features, _ = _unit_arrays(data)
    variants = tuple(LCM_VARIANTS) if variants is None else tuple(variants)
    if not variants:
        raise ValueError(f"variants must name at least one of {list(LCM_VARIANTS)}, got none.")
    table = compare_variants(
        responses, features, variants=variants, random_seed=random_seed, **options
    )
    fits = table.attrs["fits"]
    best = max(fits, key=lambda v: fits[v].log_evidence_bic)
    # Scalars only (one chain, one draw), so that batch summaries gather them per unit.
    posterior = {k: np.array([[float(x)]]) for k, x in fits[best].params.items()}
    attrs = {"inference": "maximum likelihood per LCM variant (log evidence: -BIC/2)"}
    for v, fit in fits.items():
        attrs[f"log_evidence_{v}"] = fit.log_evidence_bic
        attrs[f"log_likelihood_{v}"] = fit.log_likelihood
        attrs[f"n_params_{v}"] = fit.n_params
        attrs.update({f"{v}.{k}": float(x) for k, x in fit.params.items()})
        posterior.update({f"{v}.{k}": np.array([[float(x)]]) for k, x in fit.params.items()})
    attrs["best_variant"] = best
    return to_inference_data(
        posterior,
        observed_data={"responses": responses},
        dims={"responses": ["trial"]},
        attrs=attrs,
    )


def simulate_study(
    n_subjects: int = 50,
    *,
    variants=None,
    n_trials: int = 100,
    missing: float = 0.1,
    n_particles: int = 100,
    rng=None,
    feature_prior: str = "lcm",
):
    """A simulated conditioning study: one table of subjects and their generating truth.

    Subjects are split as evenly as possible over ``variants``; each draws its parameters with
    :func:`~pmctx.conditioning.recovery.draw_truth`, runs the ``recovery_design(n_trials)``
    design and responds under the linear-Gaussian CR model; a fraction ``missing`` of the
    responses (chosen at random) is NaN.

    Parameters
    ----------
    n_subjects : int, default 50
        Subjects, named ``s00``, ``s01``, ...
    variants : sequence of str, optional
        Generating variants (default all of :data:`~pmctx.conditioning.fitting.LCM_VARIANTS`).
    n_trials : int, default 100
        Trials per subject (>= 20).
    missing : float, default 0.1
        Fraction of trials without a response (in [0, 1)).
    n_particles : int, default 100
        Particles of each subject's filter.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.
    feature_prior : {"lcm", "beta"}, default "lcm"
        Feature likelihood of the simulation.

    Returns
    -------
    table : pandas.DataFrame
        Columns ``unit``, the design's features (``US`` first) and ``CR``; one row per trial.
    truth : pandas.DataFrame
        Index ``unit``: ``variant`` and the generating parameters.

    Examples
    --------
    >>> table, truth = simulate_study(3, n_trials=20, n_particles=10, rng=1)
    >>> table.shape, truth["variant"].tolist()
    ((60, 8), ['lcm_sticky', 'lcm', 'lcm_one_cause'])
    """
    import pandas as pd

    from pmctx.conditioning.recovery import draw_truth

    gen = as_rng(rng)
    n = check_int(n_subjects, "n_subjects", minimum=1)
    variants = tuple(LCM_VARIANTS) if variants is None else tuple(variants)
    for v in variants:
        if v not in LCM_VARIANTS:
            raise ValueError(f"variants must be among {list(LCM_VARIANTS)}, got {v!r}.")
    if not 0.0 <= missing < 1.0:
        raise ValueError(f"missing must be a fraction in [0, 1), got {missing}.")
    design = recovery_design(check_int(n_trials, "n_trials", minimum=20))
    F = design.to_array()
    frames, truth = [], {}
    for i in range(n):
        variant = variants[i % len(variants)]
        unit = f"s{i:0{max(2, len(str(n - 1)))}d}"
        params = draw_truth(variant, gen)
        sim = simulate_subject(design, params, variant=variant, n_particles=n_particles,
                               rng=gen, feature_prior=feature_prior)  # fmt: skip
        cr = sim["responses"].copy()
        cr[gen.random(cr.size) < missing] = np.nan
        frame = pd.DataFrame(F, columns=design.feature_names)
        frame.insert(0, "unit", unit)
        frame["CR"] = cr
        frames.append(frame)
        truth[unit] = {"variant": variant, **params}
    truth = pd.DataFrame.from_dict(truth, orient="index").rename_axis("unit")
    return pd.concat(frames, ignore_index=True), truth

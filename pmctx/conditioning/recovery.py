"""Parameter and variant recovery studies for the per-subject latent-cause fits.

* :func:`parameter_recovery`: simulate subjects with known parameters (alpha, a, stickiness,
  gain, sd), fit them, and tabulate true vs fitted values.
* :func:`variant_confusion`: simulate subjects from each LCM variant, fit every variant, and
  count which variant has the best BIC (rows: generating variant, columns: winner).

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

__all__ = ["draw_truth", "parameter_recovery", "posterior_coverage", "variant_confusion"]


def draw_truth(variant: str, rng=None) -> dict:
    """Generating parameters of one simulated subject for a variant.

    alpha log-uniform on [0.05, 5], a uniform on [0.6, 1.4], stickiness uniform on [0.5, 4]
    (variants that have them), gain uniform on [0.5, 1.5], sd uniform on [0.05, 0.15].
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
    """
    import pandas as pd

    gen = as_rng(rng)
    design = recovery_design(check_int(n_trials, "n_trials", minimum=20))
    n_particles = fit_options.get("n_particles", 100)
    rows = []
    for _ in range(check_int(n_subjects, "n_subjects", minimum=1)):
        truth = draw_truth(variant, gen)
        data = simulate_subject(design, truth, variant=variant, n_particles=n_particles, rng=gen)
        fit = fit_subject(data["responses"], design, variant=variant, rng=gen, **fit_options)
        row = {f"true_{k}": v for k, v in truth.items()}
        row.update({f"fit_{k}": fit.params[k] for k in truth})
        row["seconds"] = fit.seconds
        rows.append(row)
    return pd.DataFrame(rows)


def variant_confusion(
    n_subjects=5, *, n_trials=100, variants=tuple(LCM_VARIANTS), rng=None, **fit_options
):
    """Confusion matrix of variant recovery by BIC (rows: true variant, columns: best fit)."""
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
                v: fit_subject(data["responses"], design, variant=v, rng=seed, **fit_options).bic
                for v in variants
            }
            counts.loc[true, min(bics, key=bics.get)] += 1
    return counts


def posterior_coverage(
    n_subjects=6,
    *,
    n_trials=60,
    variant="lcm",
    prob=0.8,
    rng=None,
    n_particles=50,
    draws=300,
    tune=300,
    chains=1,
):
    """Central ``prob`` posterior intervals of simulated subjects and whether they cover.

    Returns a ``DataFrame`` with ``true_<p>``, ``mean_<p>``, ``lo_<p>``, ``hi_<p>`` and
    ``covered_<p>`` for every generating parameter (the intercept is 0 in the simulation).
    """
    import pandas as pd

    from pmctx.conditioning.posterior import sample_subject

    gen = as_rng(rng)
    design = recovery_design(check_int(n_trials, "n_trials", minimum=20))
    q = [(1 - prob) / 2, (1 + prob) / 2]
    rows = []
    for _ in range(check_int(n_subjects, "n_subjects", minimum=1)):
        truth = draw_truth(variant, gen)
        data = simulate_subject(design, truth, variant=variant, n_particles=n_particles, rng=gen)
        idata = sample_subject(
            data["responses"],
            design,
            variant=variant,
            draws=draws,
            tune=tune,
            chains=chains,
            n_particles=n_particles,
            random_seed=gen,
        )
        row = {}
        for p, value in truth.items():
            x = idata.posterior[p].values.ravel()
            lo, hi = np.quantile(x, q)
            row.update(
                {
                    f"true_{p}": value,
                    f"mean_{p}": float(x.mean()),
                    f"lo_{p}": lo,
                    f"hi_{p}": hi,
                    f"covered_{p}": bool(lo <= value <= hi),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)

"""Which use of held-out-pixel CV gives calibrated orientation maps? (issue #17, item 2)

Truths: draws from the von Mises map prior (kappa 5, rank 5, 1200 augmented sweeps from
uniform angles, :func:`benchmarks.bench_vonmises_gp.vonmises_prior_map`), observed with von
Mises noise ``kappa_obs`` on doubled angles, a fraction ``missing`` of pixels removed. For
each data set one cross-validation (3 folds, 60 sweeps per fit, rank 5, ``kappa`` in
:data:`GRID`, Rao-Blackwellised held-out densities; ``best-draws`` repeats it with the plain
draw-averaged density) gives the rules:

* ``best`` / ``best-draws``: the single best ``kappa``;
* ``one_se``: the smallest ``kappa`` within one paired SE of the best; ``elbow``;
* ``stacking`` and ``pseudo_bma``: posterior draws pooled over the grid by weight;
* ``true``: the generating ``kappa`` (5), the reference.

Every grid point of positive weight is fitted once (300 sweeps, 100 burn-in, ``kappa_obs``
learned) and shared by the rules. Scores at the missing pixels: coverage of the 90%
circular interval (:func:`benchmarks.bench_vonmises_gp._interval_stats`) and mean absolute
orientation error in degrees.

Run: ``python -m benchmarks.study_vonmises_kappa [--size 16] [--maps 3] [out.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from pmctx.models.vonmises_select import grid_posterior, grid_weights

from benchmarks.bench_vonmises_gp import _interval_stats, vonmises_prior_map
from pmctx.vonmises.average import cv_average
from pmctx.vonmises.potentials import wrap_angle
from pmctx.vonmises.select import cross_validate

GRID = (1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
RANK = 5
TRUE_KAPPA = 5.0
RULES = ("best-draws", "best", "one_se", "elbow", "stacking", "pseudo_bma", "true")
MISSING = (0.1, 0.3, 0.5, 0.7)
NOISE = (1.0, 4.0)


def one_dataset(size, missing, kappa_obs, rep, *, draws=200, tune=100, cv_sweeps=60):
    """Scores of every rule on one simulated data set."""
    rng = np.random.default_rng(10_000 * rep + int(100 * missing) + int(10 * kappa_obs))
    truth = vonmises_prior_map(size, rng)
    z = wrap_angle(rng.vonmises(truth, kappa_obs))
    observed = rng.random(truth.shape) >= missing
    z_nan = np.where(observed, z, np.nan)
    begin = time.process_time()
    cv = cross_validate(
        z_nan,
        kappas=GRID,
        ranks=[RANK],
        n_sweeps=cv_sweeps,
        heldout="rao_blackwell",
        random_seed=rep,
    )
    cv_plain = cross_validate(z_nan, kappas=GRID, ranks=[RANK], n_sweeps=cv_sweeps, random_seed=rep)
    cv_seconds = time.process_time() - begin
    weights = {rule: grid_weights(cv, rule, random_seed=rep) for rule in RULES[1:-1]}
    weights["best-draws"] = grid_weights(cv_plain, "best")
    weights["true"] = (np.asarray(GRID) == TRUE_KAPPA).astype(float)
    weights = {r: np.where(w >= min(0.01, w.max()), w, 0.0) for r, w in weights.items()}
    needed = np.flatnonzero(sum(w > 0 for w in weights.values()))
    fits = {}
    begin = time.process_time()
    for k in needed:
        o, _ = grid_posterior(
            z, observed, GRID[k], RANK, draws=draws, tune=tune, random_seed=rep + k
        )
        fits[int(k)] = o[:, ~observed]
    fit_seconds = time.process_time() - begin
    out = {
        "missing": missing,
        "kappa_obs": kappa_obs,
        "rep": rep,
        "n_missing": int((~observed).sum()),
        "cv_cpu_s": cv_seconds,
        "fit_cpu_s": fit_seconds,
        "cv_score": cv.curve["score"].round(5).tolist(),
        "rules": {},
    }
    for rule in RULES:
        pooled, _ = cv_average(
            [fits.get(k) for k in range(len(GRID))], weights[rule], draws, random_seed=rep
        )
        mean, covered = _interval_stats(pooled, truth[~observed])
        error = 0.5 * np.degrees(np.abs(wrap_angle(mean - truth[~observed])))
        out["rules"][rule] = {
            "coverage90": float(covered.mean()),
            "error_deg": float(error.mean()),
            "kappa": float(np.dot(weights[rule], GRID)),
            "weights": np.round(weights[rule], 3).tolist(),
        }
    return out


def summarise(results) -> dict:
    """Per rule: mean coverage and error over all data sets, and by (missing, kappa_obs)."""
    summary = {}
    for rule in RULES:
        cov = np.array([r["rules"][rule]["coverage90"] for r in results])
        err = np.array([r["rules"][rule]["error_deg"] for r in results])
        pixels = np.array([r["n_missing"] for r in results])
        pooled = float(np.sum(cov * pixels) / pixels.sum())
        by = {}
        for missing in sorted({r["missing"] for r in results}):
            for kobs in sorted({r["kappa_obs"] for r in results}):
                sel = [
                    i
                    for i, r in enumerate(results)
                    if r["missing"] == missing and r["kappa_obs"] == kobs
                ]
                if sel:
                    by[f"missing {missing:g}, kappa_obs {kobs:g}"] = (
                        round(float(cov[sel].mean()), 3),
                        round(float(err[sel].mean()), 2),
                    )
        summary[rule] = {
            "coverage90_pixel_pooled": round(pooled, 4),
            "coverage90_map_mean": round(float(cov.mean()), 4),
            "coverage90_map_se": round(float(cov.std(ddof=1) / np.sqrt(len(cov))), 4),
            "binomial_se_if_independent": round(float(np.sqrt(0.09 / pixels.sum())), 4),
            "error_deg_mean": round(float(err.mean()), 3),
            "by_condition (coverage, error_deg)": by,
        }
    return summary


def main(argv=None):  # pragma: no cover
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--maps", type=int, default=3)
    parser.add_argument("out", nargs="?")
    args = parser.parse_args(argv)
    results = []
    for rep in range(args.maps):
        for kobs in NOISE:
            for missing in MISSING:
                row = one_dataset(args.size, missing, kobs, rep)
                results.append(row)
                print(
                    f"rep {rep} kobs {kobs:g} miss {missing:.1f} cpu "
                    f"{row['cv_cpu_s']:.1f}+{row['fit_cpu_s']:.1f}s: "
                    + ", ".join(
                        f"{r} {v['coverage90']:.2f}/{v['error_deg']:.1f}/{v['kappa']:.1f}"
                        for r, v in row["rules"].items()
                    ),
                    flush=True,
                )
                if args.out:
                    with open(args.out, "w") as handle:
                        json.dump(
                            {
                                "study": "vonmises_kappa",
                                "size": args.size,
                                "grid": GRID,
                                "summary": summarise(results) if len(results) > 1 else None,
                                "datasets": results,
                            },
                            handle,
                            indent=1,
                        )
    summary = summarise(results)
    for rule, s in summary.items():
        print(
            rule,
            s["coverage90_pixel_pooled"],
            s["coverage90_map_mean"],
            s["coverage90_map_se"],
            s["error_deg_mean"],
        )


if __name__ == "__main__":  # pragma: no cover
    main()

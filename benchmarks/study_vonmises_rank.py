"""Does held-out-pixel CV pick the rank (and the joint ``(kappa, rank)``)? (issue #17, item 2)

Truths: draws from the von Mises map prior at ``kappa`` 5 and rank ``R_true`` in
:data:`R_TRUE` (1200 augmented sweeps from uniform angles,
:func:`benchmarks.bench_vonmises_gp.vonmises_prior_map`), observed with von Mises noise
``kappa_obs`` 2 on doubled angles, 30% of the pixels removed. For each data set one
cross-validation (:func:`pmctx.vonmises.select.cross_validate` as
:func:`pmctx.models.vonmises_select.reconstruct_cv` runs it: 3 folds, 60 sweeps per fit,
Rao-Blackwellised held-out densities, ``kappa_obs`` learned) over ``kappa`` in
:data:`SHORT_KAPPAS` (``--kappas``; reconstruct_cv's default is :data:`KAPPAS`) x rank in
:data:`RANKS` records

* the CV-best pair and the pair of the ``one_se`` rule (lowest rank, then highest ``kappa``,
  within one paired SE of the best);
* the stacking weights and their sum per rank (the rank's share of the average);
* per rank, its best score over ``kappa`` minus the overall best, with the paired SE of
  that difference over the held-out pixels (is the rank distinguishable at all?);
* at the generating ``kappa`` (5), each rank's score minus the generating rank's, with its
  paired SE, from this CV and from a second CV (other seed: other folds and Monte Carlo)
  over the ranks at ``kappa`` 5 alone, to show how reproducible a rank difference is.

Run: ``python -m benchmarks.study_vonmises_rank [--size 16] [--maps 4] [--kappas 3 5 8]
[out.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from pmctx.models.vonmises_select import KAPPAS, grid_weights

from benchmarks.bench_vonmises_gp import vonmises_prior_map
from pmctx.vonmises.potentials import wrap_angle
from pmctx.vonmises.select import cross_validate

R_TRUE = (3, 5, 10)
RANKS = (3, 5, 10)
TRUE_KAPPA = 5.0
KAPPA_OBS = 2.0
MISSING = 0.3
SHORT_KAPPAS = (3.0, 5.0, 8.0)


def simulate(size, r_true, seed, *, kappa_obs=KAPPA_OBS, missing=MISSING):
    """A prior map at rank ``r_true`` and its noisy, partly missing doubled-angle data."""
    rng = np.random.default_rng(seed)
    truth = vonmises_prior_map(size, rng, kappa=TRUE_KAPPA, rank=r_true)
    z = wrap_angle(rng.vonmises(truth, kappa_obs))
    observed = rng.random(truth.shape) >= missing
    return truth, np.where(observed, z, np.nan)


def _paired(pointwise, a, b):
    """Mean of ``pointwise[a] - pointwise[b]`` and its paired SE over pixels."""
    diff = pointwise[a] - pointwise[b]
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(diff.size))


def rank_summary(cv, ranks, r_true, true_kappa=TRUE_KAPPA):
    """Rank-level numbers of one cross-validation over a ``(kappa, rank)`` grid."""
    curve = cv.curve
    ranks = [int(r) for r in ranks]
    best = int(np.argmax(curve["score"].to_numpy()))
    weights = grid_weights(cv, "stacking")
    rank_col = curve["rank"].to_numpy()
    rank_weight = {r: float(weights[rank_col == r].sum()) for r in ranks}
    profile = {}
    for r in ranks:
        rows = np.flatnonzero(rank_col == r)
        top = int(rows[np.argmax(curve["score"].to_numpy()[rows])])
        delta, se = _paired(cv.pointwise, top, best)
        profile[r] = {"kappa": float(curve["kappa"][top]), "delta": delta, "se": se}
    at_true = {}
    kap = curve["kappa"].to_numpy()
    if np.any(np.isclose(kap, true_kappa)) and r_true in ranks:
        ref = int(np.flatnonzero(np.isclose(kap, true_kappa) & (rank_col == r_true))[0])
        for r in ranks:
            row = int(np.flatnonzero(np.isclose(kap, true_kappa) & (rank_col == r))[0])
            delta, se = _paired(cv.pointwise, row, ref)
            at_true[r] = {"delta": delta, "se": se}
    ok = curve[curve["delta"] >= -curve["se_diff"]]
    one_se = ok.sort_values(["rank", "kappa"], ascending=[True, False]).index[0]
    best_rank = int(curve["rank"][best])
    return {
        "best_kappa": float(curve["kappa"][best]),
        "best_rank": best_rank,
        "rank_steps_off": ranks.index(best_rank) - ranks.index(r_true) if r_true in ranks else None,
        "one_se_kappa": float(curve["kappa"][one_se]),
        "one_se_rank": int(curve["rank"][one_se]),
        "stacking_rank_weight": rank_weight,
        "stacking_mean_rank": float(np.dot(weights, rank_col)),
        "stacking_kappa": float(np.dot(weights, kap)),
        "profile": profile,
        "at_true_kappa": at_true,
    }


def one_dataset(
    size, r_true, rep, *, kappas=KAPPAS, ranks=RANKS, cv_sweeps=60, repeat=True, seed=None
):
    """CV over the ``(kappa, rank)`` grid on one simulated map; the rank numbers of it."""
    seed = 1000 * rep + r_true if seed is None else seed
    begin = time.process_time()
    _, z_nan = simulate(size, r_true, seed)
    sim_s = time.process_time() - begin
    begin = time.process_time()
    cv = cross_validate(
        z_nan,
        kappas=kappas,
        ranks=ranks,
        n_sweeps=cv_sweeps,
        heldout="rao_blackwell",
        random_seed=rep,
    )
    cv_s = time.process_time() - begin
    out = {
        "r_true": r_true,
        "rep": rep,
        "seed": seed,
        "sim_cpu_s": sim_s,
        "cv_cpu_s": cv_s,
        "curve": cv.curve.round(5).to_dict(orient="list"),
        **rank_summary(cv, ranks, r_true),
    }
    if repeat and TRUE_KAPPA in [float(k) for k in kappas]:
        cv2 = cross_validate(
            z_nan,
            kappas=[TRUE_KAPPA],
            ranks=ranks,
            n_sweeps=cv_sweeps,
            heldout="rao_blackwell",
            random_seed=rep + 500,
        )
        out["at_true_kappa_repeat"] = rank_summary(cv2, ranks, r_true)["at_true_kappa"]
    return out


def summarise(results, ranks=RANKS) -> dict:
    """Confusion tables of the picked rank, mean rank weights and rank separations."""
    summary = {}
    for r_true in sorted({r["r_true"] for r in results}):
        sel = [r for r in results if r["r_true"] == r_true]
        n = len(sel)
        worst = [min(p["delta"] / max(p["se"], 1e-12) for p in s["profile"].values()) for s in sel]
        summary[f"R_true {r_true}"] = {
            "n_maps": n,
            "best_rank_counts": {str(q): sum(s["best_rank"] == q for s in sel) for q in ranks},
            "one_se_rank_counts": {str(q): sum(s["one_se_rank"] == q for s in sel) for q in ranks},
            "best_kappa_counts": {
                f"{k:g}": sum(s["best_kappa"] == k for s in sel)
                for k in sorted({s["best_kappa"] for s in sel})
            },
            "exact_rank_rate": sum(s["rank_steps_off"] == 0 for s in sel) / n,
            "within_one_grid_step_rate": sum(abs(s["rank_steps_off"]) <= 1 for s in sel) / n,
            "mean_stacking_rank_weight": {
                str(q): round(float(np.mean([s["stacking_rank_weight"][q] for s in sel])), 3)
                for q in ranks
            },
            "mean_stacking_kappa": round(float(np.mean([s["stacking_kappa"] for s in sel])), 3),
            "profile_delta_mean (rank best over kappa minus overall best)": {
                str(q): round(float(np.mean([s["profile"][q]["delta"] for s in sel])), 5)
                for q in ranks
            },
            "profile_se_mean": {
                str(q): round(float(np.mean([s["profile"][q]["se"] for s in sel])), 5)
                for q in ranks
            },
            "worst_rank_delta_in_se (per map)": [round(w, 2) for w in worst],
            "maps_with_a_rank_2se_worse": sum(w < -2 for w in worst),
            "at_true_kappa_delta_vs_true_rank (mean, mean se)": {
                str(q): [
                    round(float(np.mean([s["at_true_kappa"][q]["delta"] for s in sel])), 5),
                    round(float(np.mean([s["at_true_kappa"][q]["se"] for s in sel])), 5),
                ]
                for q in ranks
                if all(q in s["at_true_kappa"] for s in sel)
            },
            "cv_cpu_s_mean": round(float(np.mean([s["cv_cpu_s"] for s in sel])), 2),
        }
    return summary


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def main(argv=None):  # pragma: no cover
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--maps", type=int, default=4)
    parser.add_argument("--cv-sweeps", type=int, default=60)
    parser.add_argument("--kappas", type=float, nargs="+", default=list(SHORT_KAPPAS))
    parser.add_argument("out", nargs="?")
    args = parser.parse_args(argv)
    results = []
    for rep in range(args.maps):
        for r_true in R_TRUE:
            row = one_dataset(args.size, r_true, rep, kappas=args.kappas, cv_sweeps=args.cv_sweeps)
            results.append(row)
            prof = ", ".join(
                f"R{q} {p['delta']:+.4f}+-{p['se']:.4f}" for q, p in row["profile"].items()
            )
            print(
                f"rep {rep} R_true {r_true} cpu {row['sim_cpu_s']:.1f}+{row['cv_cpu_s']:.1f}s: "
                f"best ({row['best_kappa']:g}, {row['best_rank']}) one_se "
                f"({row['one_se_kappa']:g}, {row['one_se_rank']}) rank weights "
                f"{ {q: round(w, 2) for q, w in row['stacking_rank_weight'].items()} } | {prof}",
                flush=True,
            )
            if args.out:
                with open(args.out, "w") as handle:
                    json.dump(
                        _jsonable(
                            {
                                "study": "vonmises_rank",
                                "size": args.size,
                                "true_kappa": TRUE_KAPPA,
                                "kappa_obs": KAPPA_OBS,
                                "missing": MISSING,
                                "kappas": args.kappas,
                                "ranks": RANKS,
                                "cv_sweeps": args.cv_sweeps,
                                "summary": summarise(results),
                                "datasets": results,
                            }
                        ),
                        handle,
                        indent=1,
                    )
    print(json.dumps(_jsonable(summarise(results)), indent=1))


if __name__ == "__main__":  # pragma: no cover
    main()

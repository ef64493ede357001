"""Orientation maps like real ones: pmctx against a GP and normalized convolution.

Truths are band-pass orientation maps (complex white noise filtered to a ring in spatial
frequency at one over the column spacing, the doubled angle its argument:
:func:`benchmarks.bench_vonmises_gp.bandpass_map`), 64 x 64 by default, column spacing from
8 to 20 pixels (the maps of a condition spread evenly over that range), observed with von
Mises noise of concentration ``kappa_obs`` on doubled angles and a random fraction missing.

Methods, every one on the same maps in one run:

* ``pmctx``: :func:`pmctx.models.vonmises_select.reconstruct_cv` at its defaults (kappa by
  held-out pixels over :data:`~pmctx.models.vonmises_select.KAPPAS`, rank 5, stacking,
  ``kappa_obs`` learned, and the band-pass prior weighed against that grid:
  ``spacings="auto"``, the same call as ``pmctx-both``).
* ``pmctx-spectral``: :func:`pmctx.models.vonmises_spectral.reconstruct_spectral` at its
  defaults (band-pass prior with a column spacing, exact von Mises observations, spacing
  weighed by held-out pixels around the data's estimate, ``kappa_obs`` learned).
* ``pmctx-both``: ``reconstruct_cv(spacings="cv")``: the kappa grid and the band-pass
  prior weighed by the same held-out pixels (spacing and ring width searched by
  :func:`pmctx.vonmises.spectral_cv.cross_validate_spacing`, the prior chosen by
  :func:`pmctx.vonmises.average.choose_prior`, then stacked within it); 'chosen' is the
  band-pass prior's total weight, the band-pass mixture's held-out lead per pixel and its
  paired SE.
* ``pmctx-mrf``: ``reconstruct_cv(spacings=None)``, the nearest-neighbour grid alone (the
  default before the band-pass prior was weighed by default).
* ``gp``: the Macke-style complex GP of :func:`benchmarks.bench_vonmises_gp.gp_reconstruct`
  (squared-exponential kernel; hyperparameters by the marginal likelihood of a compact
  patch of :data:`GP_FIT_PIXELS` observed pixels, prediction from all of them).
* ``normconv``: normalized convolution: the observed unit vectors ``exp(i z)`` and the
  observation mask convolved with a Gaussian, divided, the angle taken; the width is the
  one of :data:`NC_WIDTHS` whose prediction of held-out observed pixels (3 folds) has the
  largest mean ``cos(z - prediction)``. It gives no intervals (coverage blank).

Scores at the missing pixels: mean absolute orientation error in degrees (circular, on the
180-degree orientation) of the posterior circular mean, the coverage of 90% intervals
(:func:`benchmarks.bench_vonmises_gp._interval_stats`), and CPU seconds per map
(``time.process_time``, all threads). ``python benchmarks/bench_vonmises_realistic.py
[--size 64] [--maps 2] [out.json]`` runs the table (64 x 64, 10/30/70% missing,
``kappa_obs`` 1 and 4); ``run(quick=True)`` two conditions on 32 x 32 maps.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.ndimage import gaussian_filter

from benchmarks.bench_vonmises_gp import _interval_stats, bandpass_map, gp_reconstruct
from pmctx.vonmises.potentials import wrap_angle

SIZE = 64
SPACINGS = (8.0, 20.0)
MISSING = (0.1, 0.3, 0.7)
KAPPA_OBS = (1.0, 4.0)
TABLE = [(m, k) for m in (0.3, 0.7, 0.1) for k in KAPPA_OBS]
GP_FIT_PIXELS = 600
NC_WIDTHS = tuple(np.round(np.geomspace(0.5, 8.0, 13), 3))


def _convolve(z, observed, sigma):
    unit = np.where(observed, np.exp(1j * np.where(observed, z, 0.0)), 0.0)
    smooth = gaussian_filter(unit.real, sigma, mode="constant") + 1j * gaussian_filter(
        unit.imag, sigma, mode="constant"
    )
    weight = gaussian_filter(observed.astype(np.float64), sigma, mode="constant")
    return np.angle(smooth / np.maximum(weight, 1e-300))


def normconv_reconstruct(z, observed, rng, n_folds: int = 3):
    """Normalized convolution, width by held-out observed pixels; one 'draw' (no interval)."""
    index = np.flatnonzero(observed)
    fold_of = rng.permutation(index.size) % n_folds
    scores = []
    for sigma in NC_WIDTHS:
        total = 0.0
        for fold in range(n_folds):
            test = np.zeros(z.shape, dtype=bool)
            test.flat[index[fold_of == fold]] = True
            estimate = _convolve(z, observed & ~test, sigma)
            total += np.sum(np.cos(z[test] - estimate[test]))
        scores.append(total / index.size)
    sigma = NC_WIDTHS[int(np.argmax(scores))]
    return _convolve(z, observed, sigma)[~observed][None], {"kappa": float(sigma)}


def pmctx_reconstruct(z, observed, rng):
    """``reconstruct_cv`` at its defaults."""
    from pmctx.models.vonmises_select import reconstruct_cv

    theta = np.where(observed, np.mod(z, 2 * np.pi) / 2, np.nan)
    idata = reconstruct_cv(theta, random_seed=rng)
    o = idata.posterior["o"].values[0]
    if "spectral_weight" in idata.cv.attrs:
        return o[:, ~observed], {"kappa": _prior_choice(idata)}
    chosen = round(float(idata.cv.attrs["weighted_kappa"]), 2)
    return o[:, ~observed], {"kappa": chosen}


def spectral_reconstruct(z, observed, rng):
    """``reconstruct_spectral`` at its defaults; 'chosen' is the weighted spacing."""
    from pmctx.models.vonmises_spectral import reconstruct_spectral

    theta = np.where(observed, np.mod(z, 2 * np.pi) / 2, np.nan)
    idata = reconstruct_spectral(theta, random_seed=rng)
    o = idata.posterior["o"].values[0]
    chosen = round(float(idata.cv.attrs["weighted_spacing"]), 2) if "cv" in idata else None
    return o[:, ~observed], {"kappa": chosen}


def _prior_choice(idata):
    """'chosen' of a run weighing both priors: the band-pass weight, and the lead of the
    band-pass mixture's held-out score per pixel with its paired SE (when stacking)."""
    attrs = idata.cv.attrs
    chosen = [round(float(attrs["spectral_weight"]), 3)]
    if "prior_diff" in attrs:
        chosen += [round(float(attrs["prior_diff"]), 4), round(float(attrs["prior_se"]), 4)]
    return chosen


def both_reconstruct(z, observed, rng, spacings="cv"):
    """``reconstruct_cv(spacings=...)``; 'chosen' as :func:`_prior_choice` (or the kappa)."""
    from pmctx.models.vonmises_select import reconstruct_cv

    theta = np.where(observed, np.mod(z, 2 * np.pi) / 2, np.nan)
    idata = reconstruct_cv(theta, spacings=spacings, random_seed=rng)
    o = idata.posterior["o"].values[0]
    if spacings is None:
        return o[:, ~observed], {"kappa": round(float(idata.cv.attrs["weighted_kappa"]), 2)}
    return o[:, ~observed], {"kappa": _prior_choice(idata)}


METHODS = {
    "pmctx": pmctx_reconstruct,
    "pmctx-both": both_reconstruct,
    "pmctx-mrf": lambda z, observed, rng: both_reconstruct(z, observed, rng, spacings=None),
    "pmctx-spectral": spectral_reconstruct,
    "gp": lambda z, observed, rng: gp_reconstruct(z, observed, rng, fit_pixels=GP_FIT_PIXELS),
    "normconv": normconv_reconstruct,
}


def condition(size, missing, kappa_obs, spacings=SPACINGS, methods=tuple(METHODS), verbose=True):
    """Rows (one per method) of one ``(missing, kappa_obs)`` condition over the maps."""
    scores = {m: [] for m in methods}
    seconds = dict.fromkeys(methods, 0.0)
    chosen = {m: [] for m in methods}
    for rep, spacing in enumerate(spacings):
        rng = np.random.default_rng(7000 + 1000 * rep + int(100 * missing) + int(kappa_obs))
        truth = bandpass_map(size, rng, wavelength=spacing)
        z = wrap_angle(rng.vonmises(truth, kappa_obs))
        observed = rng.random(truth.shape) >= missing
        for method in methods:
            begin = time.process_time()
            draws, info = METHODS[method](z, observed, np.random.default_rng(rep))
            seconds[method] += time.process_time() - begin
            chosen[method].append(info.get("kappa"))
            mean, covered = _interval_stats(draws, truth[~observed])
            error = 0.5 * np.degrees(np.abs(wrap_angle(mean - truth[~observed])))
            coverage = float(covered.mean()) if len(draws) > 1 else None
            scores[method].append((float(error.mean()), coverage, int(error.size)))
    rows = []
    for method in methods:
        errors = np.array([e for e, _, _ in scores[method]])
        coverages = [c for _, c, _ in scores[method]]
        coverage = None if coverages[0] is None else float(np.mean(coverages))
        rows.append(
            {
                "benchmark": "vonmises_realistic",
                "variant": method,
                "size": f"{size}x{size} bandpass",
                "missing": missing,
                "kappa_obs": kappa_obs,
                "spacings": list(spacings),
                "error_deg": float(errors.mean()),
                "error_deg_maps": [round(float(e), 2) for e in errors],
                "coverage90": coverage,
                "coverage90_maps": coverages
                if coverage is None
                else [round(c, 3) for c in coverages],
                "n_missing_pixels": int(sum(n for _, _, n in scores[method])),
                "chosen_maps": chosen[method],
                "cpu_seconds_per_map": seconds[method] / len(spacings),
                "baseline": "gp",
            }
        )
        if verbose:
            _print_row(rows[-1])
    return rows


def _notes(row):
    cov = "no interval" if row["coverage90"] is None else f"90% coverage {row['coverage90']:.3f}"
    return (
        f"missing {row['missing']:.0%}, kappa_obs {row['kappa_obs']:g}: error "
        f"{row['error_deg']:.2f} deg (maps {row['error_deg_maps']}), {cov}, "
        f"{row['cpu_seconds_per_map']:.1f} CPU s/map; chosen {row['chosen_maps']}"
    )


def payload(rows, *, note: str = "") -> dict:
    """The JSON of a run: rows with ``notes`` and ``ratio_vs_baseline`` (error / GP error)."""
    import platform
    import sys

    gp = {(r["missing"], r["kappa_obs"]): r["error_deg"] for r in rows if r["variant"] == "gp"}
    for row in rows:
        row["notes"] = _notes(row)
        base = gp.get((row["missing"], row["kappa_obs"]))
        row["ratio_vs_baseline"] = None if base is None else row["error_deg"] / base
    return {
        "benchmark": "vonmises_realistic",
        "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
        "note": note,
        "rows": rows,
    }


def _print_row(row):
    cov = "  -  " if row["coverage90"] is None else f"{row['coverage90']:.3f}"
    print(
        f"{row['size']:>14} miss={row['missing']:.1f} kobs={row['kappa_obs']:.0f} "
        f"{row['variant']:>13}: err {row['error_deg']:5.2f} deg {row['error_deg_maps']}, "
        f"cov90 {cov}, {row['cpu_seconds_per_map']:6.1f} CPU s/map; chosen {row['chosen_maps']}",
        flush=True,
    )


def run(quick: bool = False, *, size=None, n_maps: int = 2, verbose=True) -> list[dict]:
    """The table (or, ``quick``, two conditions on 32 x 32 maps)."""
    if quick:
        plan = [(0.3, 1.0), (0.7, 4.0)]
        size = size or 32
    else:
        plan = TABLE
        size = size or SIZE
    spacings = tuple(np.linspace(SPACINGS[0], SPACINGS[-1], n_maps))
    rows = [row for m, k in plan for row in condition(size, m, k, spacings, verbose=verbose)]
    return payload(rows)["rows"]


if __name__ == "__main__":  # pragma: no cover
    import argparse
    import json

    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--maps", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--conditions", help="missing:kappa_obs pairs, e.g. 0.3:1,0.3:4")
    parser.add_argument("out", nargs="?")
    args = parser.parse_args()
    methods = tuple(args.methods.split(","))
    spacings = tuple(float(s) for s in np.linspace(SPACINGS[0], SPACINGS[-1], args.maps))
    # The cheaper conditions first (10% missing leaves the most held-out pixels to score).
    plan = [(0.3, 1.0), (0.7, 4.0)] if args.quick else TABLE
    if args.conditions:
        plan = [tuple(float(v) for v in c.split(":")) for c in args.conditions.split(",")]
    rows = []
    for missing, kappa_obs in plan:  # written after every condition
        rows += condition(args.size, missing, kappa_obs, spacings, methods)
        if args.out:
            with open(args.out, "w") as handle:
                json.dump(payload(rows), handle, indent=1)

"""Orientation maps from generators other than the band-pass prior's own family.

``bench_vonmises_realistic`` draws its truths as complex white noise filtered to a Gaussian
ring on a torus of the map's size: the family pmctx's band-pass prior assumes. A prior can
win there by matching the generator, so this script scores the same methods on maps made
another way (each a model of orientation maps in its own right):

* ``dog``: complex white noise filtered by a difference of Gaussians (a Mexican hat in
  space: a broad, skewed ring in spatial frequency, not a Gaussian one) on a torus twice the
  map's size, then cropped, so the map is not periodic.
* ``waves``: a superposition of 12 plane waves of the doubled angle,
  ``sum_j exp(i (k_j . x + phase_j))`` with directions spread over the circle, random phases
  and wavelengths drawn within +-15% of the column spacing (the random-superposition model
  of Wolf and Geisel; a thin ring, a few Fourier modes).
* ``anisotropic``: the band-pass ring of ``bench_vonmises_realistic`` drawn on a torus twice
  the map's size with the second axis stretched by 1.4 (columns elongated along it, as in
  cat and ferret V1), then cropped.

Column spacings spread evenly over 8-20 pixels across a condition's maps; observations are
von Mises on doubled angles with ``kappa_obs`` and a random fraction missing, the scores
those of ``bench_vonmises_realistic`` (error at missing pixels in degrees, 90% coverage, CPU
seconds per map). ``python -m benchmarks.bench_vonmises_generators [--maps 2] [--generators
dog,waves,anisotropic] [--methods pmctx-both,gp,normconv] [out.json]``.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.bench_vonmises_gp import _interval_stats
from benchmarks.bench_vonmises_realistic import METHODS, SPACINGS
from pmctx.vonmises.potentials import wrap_angle

SIZE = 64
PLAN = ((0.3, 1.0), (0.3, 4.0), (0.7, 1.0), (0.7, 4.0))
N_WAVES = 12
STRETCH = 1.4


def _crop(field: np.ndarray, size: int) -> np.ndarray:
    return np.angle(field[:size, :size])


def dog_map(size: int, rng, spacing: float) -> np.ndarray:
    """Doubled angles of white noise under a difference-of-Gaussians filter, cropped."""
    big = 2 * size
    noise = rng.normal(size=(big, big)) + 1j * rng.normal(size=(big, big))
    f = np.fft.fftfreq(big)
    radius2 = f[:, None] ** 2 + f[None, :] ** 2
    # Centre and surround widths in space: spacing / 5 and spacing / 3 (ratio 5/3).
    centre, surround = spacing / 5.0, spacing / 3.0
    gain = np.exp(-2 * (np.pi * centre) ** 2 * radius2) - np.exp(
        -2 * (np.pi * surround) ** 2 * radius2
    )
    return _crop(np.fft.ifft2(np.fft.fft2(noise) * gain), size)


def waves_map(size: int, rng, spacing: float) -> np.ndarray:
    """Doubled angles of a superposition of plane waves near one wavelength."""
    rows, cols = np.indices((size, size), dtype=np.float64)
    field = np.zeros((size, size), dtype=np.complex128)
    directions = np.pi * (np.arange(N_WAVES) + rng.random(N_WAVES)) / N_WAVES * 2
    for direction in directions:
        k = 2 * np.pi / (spacing * rng.uniform(0.85, 1.15))
        phase = rng.uniform(0, 2 * np.pi)
        field += np.exp(1j * (k * (np.cos(direction) * rows + np.sin(direction) * cols) + phase))
    return np.angle(field)


def anisotropic_map(size: int, rng, spacing: float) -> np.ndarray:
    """Doubled angles of the band-pass ring with the second axis stretched, cropped."""
    big = 2 * size
    noise = rng.normal(size=(big, big)) + 1j * rng.normal(size=(big, big))
    f = np.fft.fftfreq(big)
    radius = np.hypot(f[:, None], STRETCH * f[None, :])
    ring = np.exp(-((radius - 1.0 / spacing) ** 2) / (2 * (0.25 / spacing) ** 2))
    return _crop(np.fft.ifft2(np.fft.fft2(noise) * ring), size)


GENERATORS = {"dog": dog_map, "waves": waves_map, "anisotropic": anisotropic_map}


def condition(generator, size, missing, kappa_obs, spacings, methods, verbose=True):
    """Rows (one per method) of one generator and ``(missing, kappa_obs)`` over the maps."""
    results = {m: {"error": [], "coverage": [], "cpu": 0.0, "n": 0} for m in methods}
    for rep, spacing in enumerate(spacings):
        rng = np.random.default_rng(9100 + 1000 * rep + int(100 * missing) + int(kappa_obs))
        truth = GENERATORS[generator](size, rng, spacing)
        z = wrap_angle(rng.vonmises(truth, kappa_obs))
        observed = rng.random(truth.shape) >= missing
        for method in methods:
            begin = time.process_time()
            draws, _ = METHODS[method](z, observed, np.random.default_rng(rep))
            results[method]["cpu"] += time.process_time() - begin
            mean, covered = _interval_stats(draws, truth[~observed])
            error = 0.5 * np.degrees(np.abs(wrap_angle(mean - truth[~observed])))
            results[method]["error"].append(float(error.mean()))
            results[method]["coverage"].append(float(covered.mean()) if len(draws) > 1 else None)
            results[method]["n"] += int(error.size)
    rows = []
    for method, r in results.items():
        coverage = None if r["coverage"][0] is None else float(np.mean(r["coverage"]))
        row = {
            "benchmark": "vonmises_generators",
            "variant": method,
            "generator": generator,
            "size": f"{size}x{size} {generator}",
            "missing": missing,
            "kappa_obs": kappa_obs,
            "spacings": [float(s) for s in spacings],
            "error_deg": float(np.mean(r["error"])),
            "error_deg_maps": [round(e, 2) for e in r["error"]],
            "coverage90": coverage,
            "n_missing_pixels": r["n"],
            "cpu_seconds_per_map": r["cpu"] / len(spacings),
            "baseline": "gp",
        }
        cov_note = "no interval" if coverage is None else f"90% coverage {coverage:.3f}"
        row["notes"] = f"error {row['error_deg']:.2f} deg, {cov_note}"
        rows.append(row)
        if verbose:
            cov = "  -  " if coverage is None else f"{coverage:.3f}"
            print(
                f"{generator:>11} miss={missing:.1f} kobs={kappa_obs:.0f} {method:>14}: "
                f"err {row['error_deg']:5.2f} deg {row['error_deg_maps']}, cov90 {cov}, "
                f"{row['cpu_seconds_per_map']:6.1f} CPU s/map",
                flush=True,
            )
    gp = next((r["error_deg"] for r in rows if r["variant"] == "gp"), None)
    for row in rows:
        row["ratio_vs_baseline"] = None if gp is None else row["error_deg"] / gp
    return rows


def run(quick: bool = False, *, n_maps: int = 2, verbose=True) -> list[dict]:
    """Every generator x condition (``quick``: one condition, 32 x 32, one map each)."""
    size, plan = (32, PLAN[:1]) if quick else (SIZE, PLAN)
    spacings = tuple(np.linspace(SPACINGS[0], SPACINGS[-1], 1 if quick else n_maps))
    methods = ("pmctx-both", "gp", "normconv")
    return [
        row
        for generator in GENERATORS
        for missing, kappa_obs in plan
        for row in condition(generator, size, missing, kappa_obs, spacings, methods, verbose)
    ]


if __name__ == "__main__":  # pragma: no cover
    import argparse
    import json
    import platform
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=SIZE)
    parser.add_argument("--maps", type=int, default=2)
    parser.add_argument("--generators", default=",".join(GENERATORS))
    parser.add_argument("--methods", default="pmctx-both,gp,normconv")
    parser.add_argument("--conditions", help="missing:kappa_obs pairs, e.g. 0.3:1,0.7:4")
    parser.add_argument("out", nargs="?")
    args = parser.parse_args()
    plan = PLAN
    if args.conditions:
        plan = [tuple(float(v) for v in c.split(":")) for c in args.conditions.split(",")]
    spacings = tuple(np.linspace(SPACINGS[0], SPACINGS[-1], args.maps))
    rows = []
    for generator in args.generators.split(","):
        for missing, kappa_obs in plan:
            rows += condition(
                generator, args.size, missing, kappa_obs, spacings, args.methods.split(",")
            )
            if args.out:
                with open(args.out, "w") as handle:
                    meta = {"python": sys.version.split()[0], "platform": platform.platform()}
                    json.dump({"benchmark": "vonmises_generators", "machine": meta,
                               "rows": rows}, handle, indent=1)  # fmt: skip

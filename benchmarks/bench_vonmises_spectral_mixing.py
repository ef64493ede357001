"""Mixing of the band-pass prior's samplers per CPU second, on what users read.

One 64 x 64 band-pass map (spacing 12 pixels, :func:`benchmarks.bench_vonmises_gp.
bandpass_map`), 30% missing, ``kappa_obs`` 4 (learned), sampled at the true spacing by
:func:`pmctx.vonmises.spectral.spectral_posterior` with two chains per setting. Quantities:
the circular mean at missing pixels (bulk ESS of ``cos o`` and ``sin o`` at 40 missing
pixels, the median reported), and the pinwheel count of each draw
(:func:`pmctx.vonmises.maps.pinwheel_counts`). Settings: HMC with 1 and 2 moves per stored
draw (elliptical slice sampling, 10 updates per draw, gave 0.67 pinwheel ESS per CPU second
against 2.79 and left the package: docs/guides/choosing_a_sampler.md). ``python
benchmarks/bench_vonmises_spectral_mixing.py [out.json]``.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np

from benchmarks.bench_vonmises_gp import bandpass_map
from pmctx.vonmises.maps import pinwheel_counts
from pmctx.vonmises.potentials import wrap_angle
from pmctx.vonmises.spectral import padded_shape, ring_spectrum, spectral_posterior

SETTINGS = [("hmc", 1, 300), ("hmc", 2, 150)]


def run(draws_scale: float = 1.0, verbose: bool = True) -> list[dict]:
    """One row per setting: ESS per CPU second of the circular mean and the pinwheel count."""
    rng = np.random.default_rng(12)
    truth = bandpass_map(64, rng, wavelength=12.0)
    z = wrap_angle(rng.vonmises(truth, 4.0))
    observed = rng.random(truth.shape) >= 0.3
    spectrum = ring_spectrum(padded_shape(z.shape, 24), 12.0)
    pixels = np.flatnonzero(~observed)[::40][:40]
    rows = []
    for sampler, moves, draws in SETTINGS:
        draws = int(draws * draws_scale)
        chains, seconds = [], 0.0
        for chain in range(2):
            begin = time.process_time()
            o, _ = spectral_posterior(
                z,
                observed,
                spectrum,
                draws=draws,
                tune=100,
                moves_per_draw=moves,
                random_seed=chain,
            )
            seconds += time.process_time() - begin
            chains.append(o)
        o = np.stack(chains)
        flat = o.reshape(2, draws, -1)[:, :, pixels]
        ess_mean = [
            min(az.ess(np.cos(flat[:, :, j])), az.ess(np.sin(flat[:, :, j])))
            for j in range(len(pixels))
        ]
        counts = pinwheel_counts(np.mod(o, 2 * np.pi) / 2)
        row = {
            "benchmark": "vonmises_spectral_mixing",
            "variant": f"{sampler} x{moves}",
            "draws_per_chain": draws,
            "chains": 2,
            "cpu_seconds": seconds,
            "ess_circular_mean_median": float(np.median(ess_mean)),
            "ess_pinwheels": float(az.ess(counts)),
            "pinwheels_mean": float(counts.mean()),
        }
        row["ess_per_cpu_second_circular_mean"] = row["ess_circular_mean_median"] / seconds
        row["ess_per_cpu_second_pinwheels"] = row["ess_pinwheels"] / seconds
        rows.append(row)
        if verbose:
            mean_rate = row["ess_per_cpu_second_circular_mean"]
            pin_rate = row["ess_per_cpu_second_pinwheels"]
            print(
                f"{row['variant']:>8}: {seconds:6.1f} CPU s, ESS circular mean "
                f"{row['ess_circular_mean_median']:6.1f} ({mean_rate:.2f}/s), pinwheels "
                f"{row['ess_pinwheels']:6.1f} ({pin_rate:.2f}/s), "
                f"mean count {row['pinwheels_mean']:.1f}",
                flush=True,
            )
    return rows


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    result = run()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as handle:
            json.dump({"benchmark": "vonmises_spectral_mixing", "rows": result}, handle, indent=1)

"""Pinwheel mixing on the demo map: integrated autocorrelation times and escape times.

Data: the demo's (50 x 50 prior map by a 30-sweep quench, R = 5, kappa = 5, seed 0; noisy
observations kappa_obs = 2 with 25 % missing, seed 1), fitted at the generating kappa = 5
(the demo fits the kappa = 3 that held-out pixels choose: there the posterior holds the
true 12 pinwheels and its default run converges, pinwheel-count R-hat 1.000). The kernels
run directly (no PyMC), so ``time.process_time`` measures the sweeps alone.

1. ``tau``: 4 chains started as ``reconstruct`` starts them (data, uniform random angles at
   the missing nodes), ``tune`` + ``draws`` stored draws of ``n_sweeps`` sweeps each; the
   integrated autocorrelation time ``4 draws / ESS`` of the pinwheel count (bulk) and of
   ``cos/sin 2 theta[17, 5]`` (bulk and tail, the worse of the two), in stored draws and in
   CPU seconds.
2. ``escape``: the slow mode of this posterior is a pinwheel pair that appears when the patch
   around rows 16-18, columns 4-6 takes the mirror image of its orientations (11 instead of 9
   pinwheels; theta[17, 5] about 160 deg instead of 40 deg). Starting from such maps (taken
   from an augmented chain), the number of sweeps until the chain is back to 9 pinwheels
   measures the mode's lifetime (the relaxation time when the pair is rare), in sweeps and
   CPU seconds, at a small fraction of the cost of estimating ``tau``.

Usage: ``python -m benchmarks.vonmises_pinwheel_mixing tau augmented 8 400 150`` or
``python -m benchmarks.vonmises_pinwheel_mixing escape augmented 300 12``; samplers are the
keys of :data:`pmctx.vonmises.SWEEPS`.
"""

from __future__ import annotations

import sys
import time

import numpy as np

NODE = (17, 5)


def demo_problem(seed: int = 0):
    """Observations (doubled angles, NaN missing) and natural field of the demo map."""
    from pmctx.models.vonmises_map import noisy_observations, o_to_theta, sample_prior, theta_to_o

    from pmctx.vonmises.potentials import natural_field

    truth = o_to_theta(sample_prior((50, 50), kappa=5.0, rank=5, n_sweeps=30, random_seed=seed))
    data = theta_to_o(noisy_observations(truth, kappa_obs=2.0, missing=0.25, random_seed=seed + 1))
    missing = np.isnan(data)
    field = natural_field(np.where(missing, 0.0, data), (~missing).astype(np.int64), 2.0)
    return data, field


def _sweep(name):
    from pmctx.vonmises import SWEEPS

    return SWEEPS[name]


def _pinwheels(o):
    from pmctx.vonmises.maps import o_to_theta, pinwheel_counts

    return float(pinwheel_counts(o_to_theta(o)))


def run_chains(name, n_sweeps, draws, tune, chains=4, seed=0):
    """Pinwheel count and ``o[NODE]`` per stored draw ``(chains, draws)``, and sweep CPU s."""
    data, field = demo_problem()
    sweep = _sweep(name)
    start_rng = np.random.default_rng(seed)
    pins, angles = np.zeros((chains, draws)), np.zeros((chains, draws))
    cpu = 0.0
    for chain in range(chains):
        rng = np.random.default_rng([seed, chain])
        o = np.where(np.isnan(data), start_rng.uniform(-np.pi, np.pi, data.shape), data)
        for t in range(tune + draws):
            t0 = time.process_time()
            for _ in range(n_sweeps):
                o = sweep(o, field, 5.0, 5, rng)
            if t >= tune:
                cpu += time.process_time() - t0
                pins[chain, t - tune], angles[chain, t - tune] = _pinwheels(o), o[NODE]
    return pins, angles, cpu


def tau_table(name, n_sweeps, draws, tune):
    """One row: CPU s per 1000 draws and autocorrelation times (draws and CPU s)."""
    import arviz as az

    pins, angles, cpu = run_chains(name, n_sweeps, draws, tune)
    n = pins.size
    per_draw = cpu / n
    tau_pin = n / float(az.ess(pins, method="bulk"))
    tau_theta = max(n / float(az.ess(f(angles), method="bulk")) for f in (np.cos, np.sin))
    tail_theta = max(n / float(az.ess(f(angles), method="tail")) for f in (np.cos, np.sin))
    return {
        "sampler": name,
        "n_sweeps": n_sweeps,
        "cpu_s_per_1000_draws": 1000 * per_draw,
        "tau_pinwheels_draws": tau_pin,
        "tau_pinwheels_cpu_s": tau_pin * per_draw,
        "tau_theta_draws": tau_theta,
        "tail_tau_theta_draws": tail_theta,
        "rhat_pinwheels": float(az.rhat(pins)),
    }


def pair_states(n_draws=400, tune=150):
    """Maps with the extra pinwheel pair, from the demo's third augmented chain."""
    data, field = demo_problem()
    start_rng = np.random.default_rng(0)
    for _ in range(3):
        o = np.where(np.isnan(data), start_rng.uniform(-np.pi, np.pi, data.shape), data)
    rng = np.random.default_rng([0, 2])
    sweep = _sweep("augmented")
    states = []
    for t in range(tune + n_draws):
        for _ in range(8):
            o = sweep(o, field, 5.0, 5, rng)
        if t >= tune and _pinwheels(o) == 11:
            states.append(o.copy())
    return np.array(states)


def escape_times(name, states, max_sweeps, n_starts, seed=7):
    """Sweeps until 9 pinwheels and theta[NODE] back near 40 deg, from ``n_starts`` states."""
    _, field = demo_problem()
    sweep = _sweep(name)
    rng = np.random.default_rng(seed)
    times, cpu, n_done = [], 0.0, 0
    for i in np.linspace(0, len(states) - 1, n_starts).astype(int):
        o, exit_at = states[i], max_sweeps
        for t in range(max_sweeps):
            t0 = time.process_time()
            o = sweep(o, field, 5.0, 5, rng)
            cpu += time.process_time() - t0
            n_done += 1
            if _pinwheels(o) == 9 and 0.5 < np.angle(np.exp(1j * o[NODE])) < 2.6:
                exit_at = t + 1
                break
        times.append(exit_at)
    return np.array(times), cpu / n_done


def main(argv):
    if argv[0] == "tau":
        print(tau_table(argv[1], *(int(a) for a in argv[2:5])))
    else:
        times, cpu = escape_times(argv[1], pair_states(), int(argv[2]), int(argv[3]))
        print(f"{argv[1]}: exit sweeps {sorted(times.tolist())} (censored at {argv[2]}); "
              f"CPU {1000 * cpu:.2f} ms per sweep")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])

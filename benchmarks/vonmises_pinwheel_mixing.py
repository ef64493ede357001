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
   CPU seconds, at a small fraction of the cost of estimating ``tau``. Each run adds its row
   (exits, CPU s per exit at the exponential rate: sweeps of all starts times CPU per sweep
   over the number of exits) to ``benchmarks/results/vonmises_pinwheel_escape.json``. Its
   ``window:w,J,kmin,n`` rows measured windowed tempered transitions (Neal 1996: an
   augmented sweep then ``n`` transitions on a random ``w x w`` window, ``J`` rungs from 5
   down to ``kmin``; exact, tested, commit 4aafd5b): at best a tie with the augmented sweep
   per CPU second (1.30 against 1.32 CPU s per exit, 48 starts), so the move was removed.
   Window reflections (commit 14ff801: mirror a random 3-5 x 3-5 window's angles about an
   axis drawn around the one its border favours, exact MH, 5.6 us per proposal) shortened the
   escape from the pair mode from 347 to 74 sweeps (600 proposals per sweep; 24 starts, 0.85
   against 0.37 CPU s per exit), but in equilibrium (4 chains x 1000 + 1000 draws) the
   pinwheel count's ESS per CPU second was 0.9-1.4 (4 sweeps per draw) and 1.4-1.5 inside
   the 8-rung ladder against 1.0-2.3 for the ladder alone, so the move was removed.
   Other ladders, same harness: 4 rungs from 4.5, 2 steps per draw: ESS 69 / 564 (seeds
   0 / 1), swap rate 0.17; 8 rungs from 3: swap rate 0.00-0.02, ESS 139 / 8. Escape from the
   pair mode with augmented sweeps at kappa 4 and 3 (same starts, exit to 9 pinwheels): 353
   and 448 sweeps on average against 347 at kappa 5, so a lower rung does not dissolve the
   pair faster.
   Window reflections again (2026-11-30, prototype, not committed), with windows drawn
   from a fixed distribution learnt in the second half of tuning (weights
   ``(1 - |mean exp(i o)|)**3`` summed over the window, plus 1 % of their mean: the patch
   that flips, rows 15-18, columns 4-6, has circular variance 0.4-0.65 against a map median
   of 0.06), so the move is exact during the stored draws: with windows of 3-5 nodes a
   side, 30 such proposals per sweep left the pair mode after 77-85 sweeps (300: 37-41)
   against 347. In equilibrium, with windows of 3-10 nodes a side,
   chain seeds 0 / 1 / 2 / 3 / 4, 4 x (1000 + 1000) draws, pinwheel-count R-hat (bulk ESS):
   augmented, 8 sweeps per draw: 1.041 (60) / 1.103 (40) / 1.016 (166) at 115 CPU s;
   plus 60 targeted reflections per sweep: 1.013 (440) / 1.031 (101) / 1.089 (40) /
   1.010 (248) / 1.020 (122) at 140-150 CPU s; 8-rung ladder plus 60 reflections at the
   target rung per step: 1.010 (480) / 1.025 (204) / 1.014 (311) at 161-163 CPU s (ladder
   alone 1.012 (358) / 1.032 (151)); the same with 200 + 1000 draws of 2 steps (198 CPU s,
   1.72 times augmented): 1.028 (230) / 1.024 (341) / 1.010 (371). About a third more ESS
   than the ladder alone, far from R-hat 1.01 on every seed within twice the CPU, so not
   shipped.

3. ``defaults``: ``reconstruct(theta_obs)`` at kappa 5, 1000 + 1000 draws: the augmented
   sampler without pinwheel-pair jumps (``n_jumps=0``: the default when issue 29 was filed,
   8 sweeps per draw), and the default (augmented with the jumps it learns in tuning,
   :mod:`pmctx.steps.vonmises_jumps`), fit seeds 0-4, one fit at a time through ``pm.sample`` (its
   default cores): CPU seconds of the whole call (this process and its chain processes),
   wall seconds, and the pinwheel row of pmctx's own convergence report
   (:func:`pmctx.convergence.convergence_report`). Writes
   ``benchmarks/results/vonmises_pinwheel_defaults.json``.

Usage: ``python -m benchmarks.vonmises_pinwheel_mixing tau augmented 8 400 150``,
``python -m benchmarks.vonmises_pinwheel_mixing escape augmented 300 12`` or
``python -m benchmarks.vonmises_pinwheel_mixing defaults [seeds]``; samplers are
the keys of :data:`pmctx.vonmises.SWEEPS`.
"""

from __future__ import annotations

import platform
import sys
import time

import numpy as np

NODE = (17, 5)
#: ``reconstruct``'s default run: 1000 tuning and 1000 stored draws of 8 sweeps, per chain.
DEFAULT_TUNE, DEFAULT_DRAWS = 1000, 1000


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


def escape_times(name, states, max_sweeps, n_starts, seed=7, sweep=None):
    """Sweeps until 9 pinwheels and theta[NODE] back near 40 deg, from ``n_starts`` states."""
    _, field = demo_problem()
    sweep = _sweep(name) if sweep is None else sweep
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


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished child processes."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


#: ``defaults``' fits: name -> ``reconstruct`` options (the first is the CPU baseline).
DEFAULT_VARIANTS = {
    "augmented, no jumps": {"sampler": "augmented", "n_jumps": 0},
    "default (jumps)": {},
}


def defaults(seeds=(0, 1, 2, 3, 4), out=None, variants=None):
    """``reconstruct`` variants (default :data:`DEFAULT_VARIANTS`) against the first; JSON."""
    import json
    import os
    import warnings
    from pathlib import Path

    from pmctx.models.vonmises_map import o_to_theta, reconstruct

    from pmctx.convergence import convergence_report

    data, _ = demo_problem()  # the demo's observations, as demo_data(50, random_seed=0) makes
    theta_obs = o_to_theta(data)
    reconstruct(theta_obs, kappa=5.0, draws=5, tune=5, chains=1, progressbar=False,
                check_convergence=False)  # compile caches outside the timings  # fmt: skip
    variants = variants or DEFAULT_VARIANTS
    rows, loads = [], [list(os.getloadavg())]
    for seed in seeds:
        for name, options in variants.items():
            cpu, wall = _cpu_s(), time.time()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                idata = reconstruct(theta_obs, random_seed=seed, progressbar=False,
                                    **{"kappa": 5.0, **options})  # fmt: skip
            cpu, wall = _cpu_s() - cpu, time.time() - wall
            report = convergence_report(idata)
            pins = report.loc["pinwheels"]
            stats = idata.sample_stats
            rows.append({
                "variant": name,
                "seed": seed,
                "step": str(stats.attrs.get("sampling_step", "")) or "vonmises_augmented",
                "tune": idata.posterior.attrs.get("tuning_steps", None),
                "draws": int(idata.posterior.sizes["draw"]),
                "cpu_s": cpu,
                "wall_s": wall,
                "rhat_pinwheels": float(pins["r_hat"]),
                "ess_bulk_pinwheels": float(pins["ess_bulk"]),
                "pinwheels_converged": bool(pins["converged"]),
                "all_converged": bool(report["converged"].all()),
                "warned": sorted({type(w.message).__name__ for w in caught}),
            })  # fmt: skip
            loads.append(list(os.getloadavg()))
            r = rows[-1]
            print(f"seed {seed} {name:>24}: CPU {r['cpu_s']:7.1f} s wall {r['wall_s']:6.1f} s "
                  f"pinwheel R-hat {r['rhat_pinwheels']:.4f} ESS {r['ess_bulk_pinwheels']:6.0f} "
                  f"load {loads[-1][0]:.1f}", flush=True)  # fmt: skip
    base = next(iter(variants))  # CPU ratios against the first variant of each seed
    for row in rows:
        old = next(r for r in rows if r["seed"] == row["seed"] and r["variant"] == base)
        row["cpu_ratio_vs_augmented"] = row["cpu_s"] / old["cpu_s"]
    print(f"{'variant':>24} {'seed':>4} {'CPU s':>7} {'x aug':>6} {'R-hat pins':>10} {'ESS':>6}")
    for r in rows:
        print(f"{r['variant']:>24} {r['seed']:4d} {r['cpu_s']:7.1f} "
              f"{r['cpu_ratio_vs_augmented']:6.2f} "
              f"{r['rhat_pinwheels']:10.4f} {r['ess_bulk_pinwheels']:6.0f}")  # fmt: skip
    result = {
        "benchmark": "vonmises_pinwheel_defaults",
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "problem": "demo map 50x50 R=5 (demo_data(50, random_seed=0)), reconstruct at every "
        "default (kappa 5, kappa_obs 2, 4 chains; augmented 1000 + 1000 draws of 8 sweeps)",
        "load_average_before_and_after_each_fit": loads,
        "rows": rows,
    }
    path = Path(out or Path(__file__).parent / "results" / "vonmises_pinwheel_defaults.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    return result


def main(argv):
    if argv[0] == "defaults":
        defaults(tuple(int(a) for a in argv[1:]) or (0, 1, 2, 3, 4))
    elif argv[0] == "tau":
        print(tau_table(argv[1], *(int(a) for a in argv[2:5])))
    else:
        escape_row(argv[1], int(argv[2]), int(argv[3]))


def escape_row(name, max_sweeps, n_starts, out=None):
    """Escape times of ``name``; prints them and adds the row to the escape JSON."""
    import json
    import os
    from pathlib import Path

    sweep = _sweep(name)
    times, cpu = escape_times(name, pair_states(), max_sweeps, n_starts, sweep=sweep)
    exits = int(np.sum(times < max_sweeps))
    row = {
        "sampler": name,
        "max_sweeps": max_sweeps,
        "n_starts": n_starts,
        "exit_sweeps": sorted(times.tolist()),
        "exits": exits,
        "cpu_ms_per_sweep": 1000 * cpu,
        "cpu_s_per_exit": float(times.sum() * cpu / exits) if exits else None,
        "load_average": list(os.getloadavg()),
    }  # fmt: skip
    print(f"{name}: exit sweeps {row['exit_sweeps']} (censored at {max_sweeps}); CPU "
          f"{row['cpu_ms_per_sweep']:.2f} ms per sweep; {exits} exits, CPU s per exit "
          f"{row['cpu_s_per_exit']}")  # fmt: skip
    path = Path(out or Path(__file__).parent / "results" / "vonmises_pinwheel_escape.json")
    result = json.loads(path.read_text()) if path.exists() else {
        "benchmark": "vonmises_pinwheel_escape",
        "problem": "demo map 50x50 R=5 fitted at kappa 5 (kappa_obs 2, 25% missing): sweeps "
        "from 11-pinwheel states until 9 pinwheels with theta[17, 5] back near 40 deg",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "rows": [],
    }  # fmt: skip
    key = (name, max_sweeps, n_starts)
    result["rows"] = [r for r in result["rows"]
                      if (r["sampler"], r["max_sweeps"], r["n_starts"]) != key] + [row]  # fmt: skip
    path.write_text(json.dumps(result, indent=1) + "\n")
    return row


if __name__ == "__main__":
    main(sys.argv[1:])

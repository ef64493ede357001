"""Batch engine: wall time of many fits with 1 and 2 Dask workers, and its overhead.

* ``crp_alpha``: 200 simulated subjects (renewal ABA, 20 trials, alpha on a 4-point grid,
  logistic responses); each fit is :func:`pmctx.conditioning.simulate.fit_alpha_posterior`.
* ``gum_laplace``: 200 simulated neurons (seed section 3.1 Poisson GUM, 150 observations,
  16-point grids); each fit is the GUM Laplace approximation (:func:`fit_gum`).

Rows: the plain loop (``fit`` on every unit, nothing written: the baseline), the engine in
the same process (``local=True``: adds seeds, NetCDF + JSON per unit, summary table), and the
engine on a ``LocalCluster`` with 1 and 2 worker processes (client and workers started and
warmed before timing; start-up is reported separately). ``seconds_per_sweep`` is seconds per
unit; ``ratio_vs_baseline`` is the speed-up over the plain loop (1 worker: below 1 by the
overhead). Target: 2 workers >= 1.7x over 1 worker, 1-worker overhead < 10% (these are
measured on whatever the shared 2-core machine has free: other jobs lower the 2-worker gain).
With ``--quick`` 40 units. SBC wall times are in ``notes`` of the ``sbc`` rows when run with
``PMCTX_BENCH_SBC=<reps>``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from pmctx.batch import connect, run_batch, unit_seed
from pmctx.batch.adapters import fit_gum, resolve_fit, resolve_invariants, resolve_simulate
from pmctx.conditioning.simulate import fit_alpha_posterior
from pmctx.conditioning.simulate import simulate as simulate_crp
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def _row(benchmark, variant, size, per_unit, *, base=None, notes=""):
    return {
        "benchmark": benchmark,
        "variant": variant,
        "size": size,
        "seconds_per_sweep": per_unit,
        "sweeps_per_s": 1.0 / per_unit,
        "ess_per_s": None,
        "baseline": None if base is None else "plain loop",
        "ratio_vs_baseline": None if base is None else base / per_unit,
        "notes": notes,
    }


def crp_units(n):
    return {f"s{i:03d}": simulate_crp(np.random.default_rng(i), target="alpha",
                                      n_particles=200)[0] for i in range(n)}  # fmt: skip


def gum_units(n):
    formula = section_3_1_formula(max_points=16)
    return {
        f"n{i:03d}": {**seed_section_3_1(150, seed=i), "formula": formula, "family": "poisson"}
        for i in range(n)
    }


CASES = {
    "crp_alpha": (crp_units, fit_alpha_posterior, {"n_particles": 200, "n_draws": 500}),
    "gum_laplace": (gum_units, fit_gum, {"draws": 200}),
}


def _plain_loop(fit, units, options):
    start = time.perf_counter()
    for name, data in units.items():
        fit(dict(data), random_seed=unit_seed(0, name), **options)
    return time.perf_counter() - start


def _engine(fit, units, options, **kwargs):
    out = Path(tempfile.mkdtemp(prefix="pmctx-bench-"))
    try:
        start = time.perf_counter()
        table = run_batch(fit, units, out, options=options, progressbar=False, **kwargs)
        seconds = time.perf_counter() - start
        assert (table["status"] == "ok").all(), table[table["status"] != "ok"]
        return seconds
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _warm(client, fit, units, options):
    # Import the model code and compile numba kernels on every worker before timing.
    first = dict(next(iter(units.values())))
    client.run(lambda: fit(dict(first), random_seed=0, **options))


def bench_case(name, n_units):
    make_units, fit, options = CASES[name]
    units = make_units(n_units)
    fit(dict(next(iter(units.values()))), random_seed=0, **options)  # warm this process
    size = f"{n_units} units"
    rows = []
    loop = _plain_loop(fit, units, options)
    rows.append(_row(name, "plain loop (no files)", size, loop / n_units, base=loop / n_units))
    local = _engine(fit, units, options, local=True)
    rows.append(_row(name, "engine in-process (files)", size, local / n_units,
                     base=loop / n_units,
                     notes=f"overhead {100 * (local / loop - 1):.1f}%"))  # fmt: skip
    walls = {}
    for workers in (1, 2):
        start = time.perf_counter()
        client = connect(workers=workers)
        startup = time.perf_counter() - start
        try:
            _warm(client, fit, units, options)
            walls[workers] = _engine(fit, units, options, client=client)
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
        notes = f"cluster start {startup:.1f} s"
        if workers == 1:
            notes += f"; overhead vs plain loop {100 * (walls[1] / loop - 1):.1f}%"
        else:
            notes += f"; speed-up over 1 worker {walls[1] / walls[2]:.2f}x"
        rows.append(_row(name, f"dask {workers} worker(s)", size, walls[workers] / n_units,
                         base=loop / n_units, notes=notes))  # fmt: skip
    return rows


SBC_SETTINGS = {
    "gum": ({}, {"draws": 300}),
    "crp": ({}, {"draws": 300, "tune": 100, "chains": 2}),
    "crp_alpha": ({"target": "alpha", "n_particles": 200}, {"n_particles": 200}),
    "vonmises": ({}, {"draws": 300, "tune": 100, "chains": 2}),
    "ibp": ({"sigma_n": 0.5}, {"draws": 300, "tune": 200, "chains": 2}),
}


def bench_sbc(reps):
    from pmctx.batch.sbc import run_sbc

    rows = []
    for label, (sim_options, fit_options) in SBC_SETTINGS.items():
        model = "crp" if label.startswith("crp") else label
        out = Path(tempfile.mkdtemp(prefix=f"pmctx-sbc-{label}-"))
        start = time.perf_counter()
        result = run_sbc(resolve_simulate(model), resolve_fit(model), reps, out,
                         simulate_options=sim_options, fit_options=fit_options,
                         invariants=resolve_invariants(model), workers=2,
                         progressbar=False)  # fmt: skip
        wall = time.perf_counter() - start
        result.write(Path(__file__).parent / "results" / f"sbc_{label}")
        pvalues = ", ".join(f"{q}: chi2 p={r.chi2_p:.3g}, KS p={r.ks_p:.3g}"
                            for q, r in result.tests.iterrows())  # fmt: skip
        failed = int((result.summary["status"] != "ok").sum())
        rows.append(_row(f"sbc_{label}", "2 workers", f"{reps} reps", wall / reps,
                         notes=f"wall {wall:.0f} s; {failed} failed; {pvalues}"))  # fmt: skip
        shutil.rmtree(out, ignore_errors=True)
    return rows


def run(quick: bool = False) -> list[dict]:
    os.environ.setdefault("PMCTX_NO_PROGRESS", "1")
    n_units = 40 if quick else 200
    rows = bench_case("crp_alpha", n_units) + bench_case("gum_laplace", n_units)
    reps = int(os.environ.get("PMCTX_BENCH_SBC", "0"))
    if reps:
        rows += bench_sbc(reps)
    return rows

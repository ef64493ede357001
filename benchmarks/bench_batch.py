"""Batch engine: wall time of many fits with 1 and 2 Dask workers, and its overhead.

* ``crp_alpha``: 200 simulated subjects (renewal ABA, 20 trials, alpha on a 4-point grid,
  logistic responses); each fit is :func:`pmctx.conditioning.simulate.fit_alpha_posterior`.
* ``gum_laplace``: 200 simulated neurons (seed section 3.1 Poisson GUM, 150 observations,
  16-point grids); each fit is the GUM Laplace approximation (:func:`fit_gum`).

Rows: the plain loop (``fit`` on every unit, nothing written: the baseline), the plain loop
that also saves each fit (``idata.to_netcdf``: what a hand-written loop that keeps its
results costs), the engine in the same process (``local=True``: seeds, one NetCDF + JSON
record per unit, summary rows), and the engine on a ``LocalCluster`` with 1 and 2 worker
processes (client and workers started and warmed before timing; start-up is reported
separately). ``seconds_per_sweep`` is wall seconds per unit; ``ratio_vs_baseline`` the
wall-time speed-up over the plain loop. The machine these run on may be shared, so every row
also has ``cpu_s_per_unit``: process CPU time per unit (for Dask rows, the workers' CPU plus
the client's, whose process also runs the scheduler), ``cpu_overhead`` against the plain
loop's CPU time, and the 1-minute load average before and after the row (``load``).
Targets: engine overhead < 10% (CPU time; wall time on a quiet machine), 2 workers >= 1.7x
over 1 worker in wall time (which needs two free cores). With ``--quick`` 40 units. SBC wall
times are in ``notes`` of the ``sbc`` rows when run with ``PMCTX_BENCH_SBC=<reps>``.
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


def _row(benchmark, variant, size, per_unit, *, base=None, cpu=None, base_cpu=None, load=(),
         notes=""):  # fmt: skip
    overhead = None if cpu is None or base_cpu is None else cpu / base_cpu - 1.0
    parts = [] if cpu is None else [f"CPU {1000 * cpu:.1f} ms/unit"]
    if overhead is not None and cpu is not base_cpu:
        parts.append(f"CPU overhead {100 * overhead:+.1f}%")
    if load:
        parts.append("load " + "->".join(f"{x:.1f}" for x in load))
    return {
        "benchmark": benchmark,
        "variant": variant,
        "size": size,
        "seconds_per_sweep": per_unit,
        "sweeps_per_s": 1.0 / per_unit,
        "ess_per_s": None,
        "baseline": None if base is None else "plain loop",
        "ratio_vs_baseline": None if base is None else base / per_unit,
        "cpu_s_per_unit": cpu,
        "cpu_overhead": overhead,
        "load": list(load),
        "notes": "; ".join(parts + ([notes] if notes else [])),
    }


def _load() -> float:
    return os.getloadavg()[0]


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


def _plain_loop(fit, units, options, save_to=None):
    """Wall and CPU seconds of fitting every unit in a loop (saving each fit to ``save_to``)."""
    start, cpu = time.perf_counter(), time.process_time()
    for name, data in units.items():
        idata = fit(dict(data), random_seed=unit_seed(0, name), **options)
        if save_to is not None:
            idata.to_netcdf(str(Path(save_to) / f"{name}.nc"))
    return time.perf_counter() - start, time.process_time() - cpu


def _engine(fit, units, options, client=None, **kwargs):
    """Wall seconds and CPU seconds (this process, plus the workers' when on a cluster)."""
    out = Path(tempfile.mkdtemp(prefix="pmctx-bench-"))
    try:
        workers = client.run(time.process_time) if client is not None else {}
        start, cpu = time.perf_counter(), time.process_time()
        table = run_batch(fit, units, out, options=options, progressbar=False, client=client,
                          **kwargs)  # fmt: skip
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        if client is not None:
            after = client.run(time.process_time)
            cpu += sum(after[w] - workers[w] for w in workers)
        assert (table["status"] == "ok").all(), table[table["status"] != "ok"]
        return seconds, cpu
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _warm(client, fit, units, options):
    # Import the model code and the writer, compile numba kernels on every worker before timing.
    first = dict(list(units.items())[:1])

    def warm():
        folder = tempfile.mkdtemp(prefix="pmctx-warm-")
        try:
            run_batch(fit, first, folder, options=options, local=True, progressbar=False)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    client.run(warm)


def bench_case(name, n_units):
    make_units, fit, options = CASES[name]
    units = make_units(n_units)
    with tempfile.TemporaryDirectory() as folder:  # warm this process: fit, writers
        run_batch(fit, dict(list(units.items())[:1]), folder, options=options, local=True,
                  progressbar=False)  # fmt: skip
    size = f"{n_units} units"
    load = _load()
    loop, loop_cpu = (x / n_units for x in _plain_loop(fit, units, options))
    rows = [_row(name, "plain loop (no files)", size, loop, base=loop, cpu=loop_cpu,
                 base_cpu=loop_cpu, load=(load, load := _load()))]  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        wall, cpu = (x / n_units for x in _plain_loop(fit, units, options, save_to=folder))
    rows.append(_row(name, "plain loop + to_netcdf", size, wall, base=loop, cpu=cpu,
                     base_cpu=loop_cpu, load=(load, load := _load())))  # fmt: skip
    wall, cpu = (x / n_units for x in _engine(fit, units, options, local=True))
    rows.append(_row(name, "engine in-process (files)", size, wall, base=loop, cpu=cpu,
                     base_cpu=loop_cpu, load=(load, load := _load()),
                     notes=f"wall overhead {100 * (wall / loop - 1):+.1f}%"))  # fmt: skip
    walls = {}
    for workers in (1, 2):
        start = time.perf_counter()
        client = connect(workers=workers)
        startup = time.perf_counter() - start
        try:
            _warm(client, fit, units, options)
            load = _load()
            wall, cpu = (x / n_units for x in _engine(fit, units, options, client=client))
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
        walls[workers] = wall
        notes = f"cluster start {startup:.1f} s"
        if workers == 1:
            notes += f"; wall overhead vs plain loop {100 * (wall / loop - 1):+.1f}%"
        else:
            notes += f"; speed-up over 1 worker {walls[1] / walls[2]:.2f}x"
        rows.append(_row(name, f"dask {workers} worker(s)", size, wall, base=loop, cpu=cpu,
                         base_cpu=loop_cpu, load=(load, _load()), notes=notes))  # fmt: skip
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

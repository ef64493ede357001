"""Batch engine: wall time of many fits with 1 and 2 Dask workers, and its overhead.

* ``crp_alpha``: 200 simulated subjects (renewal ABA, 20 trials, alpha on a 4-point grid,
  logistic responses); each fit is :func:`pmctx.conditioning.simulate.fit_alpha_posterior`.
* ``gum_laplace``: 200 simulated neurons (seed section 3.1 Poisson GUM, 150 observations,
  16-point grids); each fit is the GUM Laplace approximation (:func:`pmctx.models.gum.fit_unit`).

Baselines, all in this process, one unit after another, same fits and seeds:

* ``plain loop (no files)``: ``fit`` on every unit, nothing kept (run before and after the
  engine rows; the baseline is their mean, the load drifts on a shared machine);
* ``plain loop + same files``: the loop also writes each unit's NetCDF with the engine's own
  writer (:func:`pmctx.batch.engine.write_idata`, the same groups): a loop that keeps what
  the engine keeps;
* ``plain loop + to_netcdf``: the loop saves each fit with ``idata.to_netcdf`` (what a
  hand-written loop that keeps its results costs).

Engine rows: in the same process (``local=True``: seeds, one NetCDF + JSON record per unit,
summary rows; each unit's files written between fits, and, for comparison, ``background
writes``: by a background thread while the next unit fits, ``background_writes=True``) and on a
``LocalCluster`` with 1 and 2 worker processes started by :func:`pmctx.batch.connect` (its
tuned worker settings, :mod:`pmctx.batch.cluster`), and 1 worker with Dask's default settings
(``connect(tuned=False)``) for comparison (client and workers started and warmed before
timing; start-up reported separately; units in chunks, see :mod:`pmctx.batch.scheduling`).
BLAS: Dask's nanny gives each worker one BLAS thread; the loops and in-process rows here run
with one BLAS thread too (``threadpoolctl``), so every row times the same computation.
``seconds_per_sweep`` is wall seconds per unit and ``ratio_vs_baseline`` the wall-time
speed-up over the plain loop without files.

Overhead, per unit, relative to the plain loop without files ``t0``:
``overhead = (t_engine - t0) / t0`` (everything the engine adds, writing the unit files
included) and ``engine_only = (t_engine - t_files) / t0`` (what the engine adds to a loop
that writes the same files: seeds, records, summary, scheduling). Both in wall time
(``wall_overhead*``) and in CPU time (``cpu_overhead*``: process CPU per unit; for Dask rows
the workers' CPU plus the client's, whose process also runs the scheduler; and
``worker_cpu_overhead``: the workers' CPU alone over the loop's, what the engine costs inside
the process that fits). The machine may be shared: each row has the 1-minute load average
before and after it (``load``); under load trust the CPU columns. Targets: engine overhead
< 10% (in-process and 1 worker), 2 workers >= 1.7x over 1 worker in wall time (which needs
two free cores). With ``--quick`` 40 units.
SBC wall times are in ``notes`` of the ``sbc`` rows when run with ``PMCTX_BENCH_SBC=<reps>``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from pmctx.models.gum import fit_unit as fit_gum
from threadpoolctl import threadpool_limits

from pmctx.batch import connect, run_batch, unit_seed
from pmctx.batch.adapters import resolve_fit, resolve_invariants, resolve_simulate
from pmctx.batch.engine import write_idata
from pmctx.conditioning.simulate import fit_alpha_posterior
from pmctx.conditioning.simulate import simulate as simulate_crp
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1


def _row(benchmark, variant, size, per_unit, *, base=None, cpu=None, base_cpu=None, files=None,
         load=(), notes=""):  # fmt: skip
    """One table row; ``base``/``base_cpu`` the plain loop without files, ``files`` the (wall,
    CPU) seconds per unit of the plain loop writing the same files (for engine rows)."""
    overhead = None if cpu is None or base_cpu is None else cpu / base_cpu - 1.0
    row = {
        "benchmark": benchmark,
        "variant": variant,
        "size": size,
        "seconds_per_sweep": per_unit,
        "sweeps_per_s": 1.0 / per_unit,
        "ess_per_s": None,
        "baseline": None if base is None else "plain loop (no files)",
        "ratio_vs_baseline": None if base is None else base / per_unit,
        "cpu_s_per_unit": cpu,
        "wall_overhead": None if base is None else per_unit / base - 1.0,
        "cpu_overhead": overhead,
        "load": list(load),
    }
    parts = [] if cpu is None else [f"CPU {1000 * cpu:.1f} ms/unit"]
    if files is not None:
        row["wall_overhead_engine_only"] = (per_unit - files[0]) / base
        row["cpu_overhead_engine_only"] = (cpu - files[1]) / base_cpu
        parts.append(
            f"overhead wall {100 * row['wall_overhead']:+.1f}% / CPU {100 * overhead:+.1f}% "
            f"(engine only, vs loop + same files: wall "
            f"{100 * row['wall_overhead_engine_only']:+.1f}% / CPU "
            f"{100 * row['cpu_overhead_engine_only']:+.1f}%)"
        )
    elif overhead is not None and cpu is not base_cpu:
        parts.append(f"CPU overhead {100 * overhead:+.1f}%")
    if load:
        parts.append("load " + "->".join(f"{x:.1f}" for x in load))
    row["notes"] = "; ".join(parts + ([notes] if notes else []))
    return row


def _load() -> float:
    return os.getloadavg()[0]


def crp_units(n):
    return {f"s{i:03d}": simulate_crp(np.random.default_rng(i), target="alpha",
                                      n_particles=200)[0] for i in range(n)}  # fmt: skip


def gum_units(n):
    formula = section_3_1_formula(max_points=16)
    return {
        f"n{i:03d}": {
            **seed_section_3_1(150, random_seed=i),
            "formula": formula,
            "family": "poisson",
        }
        for i in range(n)
    }


CASES = {
    "crp_alpha": (crp_units, fit_alpha_posterior, {"n_particles": 200, "n_draws": 500}),
    "gum_laplace": (gum_units, fit_gum, {"draws": 200}),
}


def _plain_loop(fit, units, options, save_to=None, writer=None):
    """Wall and CPU seconds of fitting every unit in a loop (each fit saved to ``save_to`` by
    ``writer(idata, path)`` when given)."""
    start, cpu = time.perf_counter(), time.process_time()
    for name, data in units.items():
        idata = fit(dict(data), random_seed=unit_seed(0, name), **options)
        if save_to is not None:
            writer(idata, Path(save_to) / f"{name}.nc")
    return time.perf_counter() - start, time.process_time() - cpu


def _to_netcdf(idata, path):
    idata.to_netcdf(str(path))


def _engine(fit, units, options, client=None, **kwargs):
    """Wall seconds, CPU seconds (this process, plus the workers' when on a cluster) and this
    process's CPU seconds (on a cluster: the client and the local cluster's scheduler)."""
    out = Path(tempfile.mkdtemp(prefix="pmctx-bench-"))
    try:
        workers = client.run(time.process_time) if client is not None else {}
        start, cpu = time.perf_counter(), time.process_time()
        table = run_batch(fit, units, out, options=options, progressbar=False, client=client,
                          **kwargs)  # fmt: skip
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        here, on_workers = cpu, 0.0
        if client is not None:
            after = client.run(time.process_time)
            on_workers = sum(after[w] - workers[w] for w in workers)
            cpu += on_workers
        assert (table["status"] == "ok").all(), table[table["status"] != "ok"]
        return seconds, cpu, here, on_workers
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
        _plain_loop(fit, dict(list(units.items())[:1]), options, folder, _to_netcdf)
    size = f"{n_units} units"

    def per_unit(seconds):
        return tuple(x / n_units for x in seconds)

    load = [_load()]
    first = per_unit(_plain_loop(fit, units, options))
    load.append(_load())
    measured = {}
    for label, writer in (("same files", write_idata), ("to_netcdf", _to_netcdf)):
        with tempfile.TemporaryDirectory() as folder:
            measured[label] = per_unit(_plain_loop(fit, units, options, folder, writer))
        load.append(_load())
    measured["in-process"] = per_unit(_engine(fit, units, options, local=True))
    load.append(_load())
    measured["background"] = per_unit(_engine(fit, units, options, local=True,
                                              background_writes=True))  # fmt: skip
    load.append(_load())
    notes = {}
    for workers, tuned in ((1, True), (2, True), (1, False)):
        key = workers if tuned else "1 default"
        start = time.perf_counter()
        client = connect(workers=workers, tuned=tuned)
        startup = time.perf_counter() - start
        try:
            _warm(client, fit, units, options)
            load.append(_load())
            measured[key] = per_unit(_engine(fit, units, options, client=client))
            load.append(_load())
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()
        notes[key] = f"cluster start {startup:.1f} s"
    notes[2] += f"; speed-up over 1 worker {measured[1][0] / measured[2][0]:.2f}x"
    last = per_unit(_plain_loop(fit, units, options))
    load.append(_load())
    loop, loop_cpu = ((a + b) / 2 for a, b in zip(first, last, strict=True))
    spread = (
        f"loop before/after engine rows {1000 * first[0]:.1f}/{1000 * last[0]:.1f} ms wall; "
        "1 BLAS thread here and in every worker"
    )
    files = measured["same files"]

    def row(variant, wall_cpu, notes="", **kwargs):
        out = _row(name, variant, size, wall_cpu[0], cpu=wall_cpu[1], base=loop,
                   base_cpu=loop_cpu, notes=notes, **kwargs)  # fmt: skip
        if len(wall_cpu) > 2 and variant.startswith("dask"):
            out["client_cpu_s_per_unit"] = wall_cpu[2]
            out["worker_cpu_s_per_unit"] = wall_cpu[3]
            out["worker_cpu_overhead"] = wall_cpu[3] / loop_cpu - 1.0
            out["notes"] += (
                f"; of the CPU, client + scheduler {1000 * wall_cpu[2]:.1f} ms/unit, workers "
                f"{1000 * wall_cpu[3]:.1f} ms/unit ({100 * out['worker_cpu_overhead']:+.1f}% "
                "over the loop's CPU)"
            )
        return out

    return [
        row("plain loop (no files)", (loop, loop_cpu), load=(load[0], load[-1]), notes=spread),
        row("plain loop + same files", files, load=load[1:3]),
        row("plain loop + to_netcdf", measured["to_netcdf"], load=load[2:4]),
        row("engine in-process (files)", measured["in-process"], files=files, load=load[3:5]),
        row(
            "engine in-process, background writes",
            measured["background"],
            files=files,
            load=load[4:6],
        ),
        row("dask 1 worker(s)", measured[1], files=files, load=load[6:8], notes=notes[1]),
        row("dask 2 worker(s)", measured[2], load=load[8:10], notes=notes[2]),
        row(
            "dask 1 worker(s), Dask's default settings",
            measured["1 default"],
            files=files,
            load=load[10:12],
            notes=notes["1 default"],
        ),
    ]


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
    # Dask's nanny gives each worker one BLAS thread (OMP/MKL/OPENBLAS_NUM_THREADS=1): this
    # process's loops and in-process engine rows run with one too, so that every row compares
    # the same fits.
    with threadpool_limits(limits=1, user_api="blas"):
        rows = bench_case("crp_alpha", n_units) + bench_case("gum_laplace", n_units)
    reps = int(os.environ.get("PMCTX_BENCH_SBC", "0"))
    if reps:
        rows += bench_sbc(reps)
    return rows

"""NUTS back ends on the GUM of seed 002 section 3.1: PyMC's NUTS vs nutpie vs numpyro (CPU).

Every back end gets a *plain default call* on ``g.model`` -- ``pm.sample()``,
``pm.sample(nuts_sampler="nutpie")``, ``pm.sample(nuts_sampler="numpyro")`` with 4 chains,
no ``initvals`` -- so the table also checks that the model's own start (the Laplace mode,
:mod:`pmctx.gum.init`) lets each of them converge. Per row:

- ``laplace_s``: the Newton search of that start (timed once before sampling; shared by all
  rows of one size, each of which then reuses it);
- ``wall_s`` / ``cpu_s``: wall and CPU seconds of the sampling call (CPU summed over this
  process and the worker processes it waited for; the machine may be shared, so CPU seconds
  are the fairer cost);
- ``sampling_s``: the back end's own ``sampling_time`` (its draw loop), and ``compile_s``:
  ``wall_s - sampling_s``, i.e. compilation, initialisation and conversion outside the loop.
  numpyro compiles with JAX inside its loop: its ``compile_s`` also adds JAX's own backend
  compile durations (``jax.monitoring``), which are then taken out of ``sampling_s``;
- ``ess_per_s``: the smallest bulk ESS over function values and intercept per wall second
  of the sampling call; ``max_rhat``: the largest R-hat over the same quantities.

- ``load_1min`` / ``loaded``: the larger 1-minute load average before and after the row, and
  whether it exceeded :data:`LOADED` (such rows say "(LOADED)" in their notes).

The ``g.sample()`` rows (``gum_auto``: first call, nutpie compile included; ``gum_auto_repeat``:
a second call on the same ``GumModel``, compiled model reused; ``gum_hsgp``: first call with
``approximation="hsgp"``; ``gum_fresh``: the first ``g.sample()`` of a new Python process,
timed in a subprocess, :func:`fresh_process_row`) run 4 x (1000 + 1000) at every size (the
targets: NUTS 4 x 1000 at N=500 under 5 s, HSGP NUTS at N=10,000 under 60 s). In one
process, ``gum_auto`` also pays compiles that a later process reads from disk
(:mod:`pmctx.gum.cached`); ``gum_fresh`` is what a user's new session pays.

The baseline is PyMC's NUTS measured in the same run. N=10,000 uses 100 tuning + 100 draws
per chain (N=500: PyMC's defaults, 1000 + 1000). ``PMCTX_BENCH_GUM_SIZES=10000`` runs one size
and ``PMCTX_BENCH_GUM_SAMPLERS=nutpie,numpyro`` some back ends; such a narrowed run keeps the
rows of ``results/gum_samplers.json`` it does not redo. Every finished row is written to that
file at once, in case a long run is cut short. A back end that is not installed
(``pip install pmctx[nutpie]`` / ``pmctx[jax]``) is reported as skipped. Set
``PMCTX_BENCH_JAX_PLATFORM=gpu`` to run the numpyro row on a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

from pmctx.gum import gum
from pmctx.gum.init import laplace_initvals
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

SAMPLERS = (
    "pymc",
    "pymc_numba",
    "nutpie",
    "numpyro",
    "gum_auto",
    "gum_auto_repeat",
    "gum_hsgp",
    "gum_fresh",
)
#: Rows of ``g.sample()``: 4 x (1000 + 1000) at every size (they are fast enough), the issue's
#: targets being NUTS 4 x 1000 at N=500 under 5 s and HSGP NUTS at N=10,000 under 60 s.
GUM_ROWS = ("gum_auto", "gum_auto_repeat", "gum_hsgp")
#: ``gum_fresh``: the first ``g.sample()`` of a new Python process (the issue's target),
#: timed inside a subprocess (:func:`fresh_process_row`); disk caches as the machine has them.
FRESH_SCRIPT = """
import json, os, resource, sys, time, warnings
warnings.simplefilter("ignore")
from pmctx.gum import gum
from pmctx.gum.init import laplace_initvals
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
n, steps = int(sys.argv[1]), int(sys.argv[2])
g = gum(section_3_1_formula(), seed_section_3_1(n, random_seed=0), family="poisson")
laplace_initvals(g)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
load, cpu0, wall0 = os.getloadavg()[0], cpu(), time.perf_counter()
idata = g.sample(draws=steps, tune=steps, chains=4, random_seed=0, progressbar=False,
                 posterior_predictive=False, check_convergence=False)
wall, used = time.perf_counter() - wall0, cpu() - cpu0
print(json.dumps({"wall_s": wall, "cpu_s": used, "load_1min": max(load, os.getloadavg()[0]),
                  "sampling_s": float(idata.posterior.attrs.get("sampling_time", "nan"))}))
"""
#: A 1-minute load average above this marks a row as measured on a loaded machine.
LOADED = 1.5
RESULTS = Path(__file__).resolve().parent / "results"
_JAX_COMPILE_SECONDS: list[float] = []


def quantities(g) -> list[str]:
    """Label-invariant quantities of a GUM: the function values and the intercept."""
    return [*g.function_names, "intercept"]


def convergence(idata, names) -> tuple[float, float]:
    """(largest R-hat, smallest bulk ESS) over ``names``."""
    rhat = az.rhat(idata, var_names=names)
    ess = az.ess(idata, var_names=names, method="bulk")
    return (
        max(float(np.nanmax(rhat[v].values)) for v in names),
        min(float(np.nanmin(ess[v].values)) for v in names),
    )


def fresh_process_row(n: int, steps: int) -> dict:
    """``g.sample()`` (4 x (steps + steps)) as the first call of a new Python process: wall and
    CPU seconds of that call (imports, data and Laplace fit excluded), and of the process."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", FRESH_SCRIPT, str(n), str(steps)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    process_s = time.perf_counter() - start
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "benchmark": "gum_samplers",
        "variant": "gum_fresh",
        "size": n,
        **row,
        "process_wall_s": process_s,
        "draws": steps,
        "tune": steps,
        "loaded": row["load_1min"] > LOADED,
        "notes": (
            f"first g.sample() of a fresh process: wall {row['wall_s']:.1f} s, CPU "
            f"{row['cpu_s']:.1f} s (process {process_s:.1f} s), load {row['load_1min']:.1f}"
            + (" (LOADED)" if row["load_1min"] > LOADED else "")
        ),
    }


def available(sampler: str) -> bool:
    if sampler in ("pymc", "pymc_numba", "gum_fresh") or sampler in GUM_ROWS:
        return True
    if sampler == "numpyro":
        return all(importlib.util.find_spec(m) is not None for m in ("numpyro", "jax"))
    return importlib.util.find_spec(sampler) is not None


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _listen_to_jax_compiles() -> None:
    if _JAX_COMPILE_SECONDS or not available("numpyro"):
        return
    import jax.monitoring

    def listener(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            _JAX_COMPILE_SECONDS.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    _JAX_COMPILE_SECONDS.append(0.0)


def sample_default(g, sampler: str, *, draws=1000, tune=1000, chains=4, seed=0, **kwargs):
    """A plain ``pm.sample`` call with the back end's defaults (no initvals, no step).

    ``pymc_numba`` is PyMC's NUTS with the log density compiled in PyTensor's NUMBA mode;
    ``gum_auto`` is what a GUM user gets: ``g.sample()`` (``backend="auto"``, Laplace start and,
    on the PyMC path, the Laplace dense metric). ``kwargs`` go to ``pm.sample`` (for example
    ``nuts_sampler_kwargs={"chain_method": "vectorized"}`` for numpyro on one GPU)."""
    if sampler in GUM_ROWS:
        # gum_auto: first call (Laplace fit done, nutpie compile included); gum_auto_repeat:
        # a second call on the same GumModel (compiled model reused); gum_hsgp: first call on
        # the model with approximation="hsgp"
        return g.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=False,
                        posterior_predictive=False, check_convergence=False)  # fmt: skip
    if sampler == "pymc_numba":
        with g.model:
            return pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed,
                             progressbar=False, compile_kwargs={"mode": "NUMBA"})  # fmt: skip
    with g.model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            nuts_sampler=sampler,
            random_seed=seed,
            progressbar=False,
            **kwargs,
        )


def timed_row(g, sampler, n, *, draws, tune, laplace_s, baseline=None, **kwargs) -> dict:
    load_before = os.getloadavg()[0]
    jax_before = sum(_JAX_COMPILE_SECONDS)
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    idata = sample_default(g, sampler, draws=draws, tune=tune, **kwargs)
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    load = max(load_before, os.getloadavg()[0])
    sampling = float(idata.posterior.attrs.get("sampling_time", np.nan))
    jax_compile = sum(_JAX_COMPILE_SECONDS) - jax_before if sampler == "numpyro" else 0.0
    sampling -= jax_compile
    rhat, ess = convergence(idata, quantities(g))
    iterations = 4 * (draws + tune)
    return {
        "benchmark": "gum_samplers",
        "variant": sampler,
        "size": n,
        "seconds_per_sweep": wall / iterations,
        "sweeps_per_s": iterations / wall,
        "ess_per_s": ess / wall,
        "ess_per_cpu_s": ess / cpu,
        "baseline": "pymc" if baseline or sampler == "pymc" else None,
        "ratio_vs_baseline": (
            (ess / wall) / baseline["ess_per_s"] if baseline else 1.0 if sampler == "pymc" else None
        ),
        "wall_s": wall,
        "cpu_s": cpu,
        "sampling_s": sampling,
        "compile_s": wall - sampling,
        "laplace_s": laplace_s,
        "max_rhat": rhat,
        "min_ess_bulk": ess,
        "draws": draws,
        "tune": tune,
        "load_1min": load,
        "loaded": load > LOADED,
        "notes": (
            f"R-hat {rhat:.3f}, ESS {ess:.0f}, wall {wall:.1f} s, CPU {cpu:.1f} s, "
            f"compile {wall - sampling:.1f} s, {tune}+{draws}/chain, load {load:.1f}"
            + (" (LOADED)" if load > LOADED else "")
        ),
    }


def run(quick: bool = False) -> list[dict]:
    warnings.simplefilter("ignore")
    if os.environ.get("PMCTX_BENCH_JAX_PLATFORM"):
        os.environ.setdefault("JAX_PLATFORMS", os.environ["PMCTX_BENCH_JAX_PLATFORM"])
    _listen_to_jax_compiles()
    plan = [(500, 300), (2000, 150)] if quick else [(500, 1000), (10_000, 100)]
    if os.environ.get("PMCTX_BENCH_GUM_SIZES"):  # e.g. "10000" to run one size on its own
        keep = {int(v) for v in os.environ["PMCTX_BENCH_GUM_SIZES"].split(",")}
        plan = [(n, draws) for n, draws in plan if n in keep]
    narrowed = not quick and bool(
        os.environ.get("PMCTX_BENCH_GUM_SIZES") or os.environ.get("PMCTX_BENCH_GUM_SAMPLERS")
    )
    rows = []
    for n, draws in plan:
        data = seed_section_3_1(n, random_seed=0)
        g = gum(section_3_1_formula(), data, family="poisson")
        start = time.perf_counter()
        laplace_initvals(g)  # the model's start, cached on g for every row below
        laplace_s = time.perf_counter() - start
        baseline = None
        chosen = os.environ.get("PMCTX_BENCH_GUM_SAMPLERS")  # e.g. "nutpie,numpyro"
        for sampler in chosen.split(",") if chosen else SAMPLERS:
            if not available(sampler):
                rows.append({"benchmark": "gum_samplers", "variant": sampler, "size": n,
                             "notes": "skipped: not installed"})  # fmt: skip
                continue
            if sampler == "gum_fresh":
                rows.append(fresh_process_row(n, 300 if quick else 1000))
                print(json.dumps(rows[-1]), flush=True)
                continue
            model, steps = g, draws
            if sampler in GUM_ROWS:
                steps = 300 if quick else 1000
            if sampler == "gum_hsgp":
                model = gum(section_3_1_formula(), data, family="poisson", approximation="hsgp")
                laplace_initvals(model)  # Laplace fit outside the timed call, as for g
            row = timed_row(model, sampler, n, draws=steps, tune=steps, laplace_s=laplace_s,
                            baseline=baseline)  # fmt: skip
            baseline = row if sampler == "pymc" else baseline
            rows.append(row)
            print(json.dumps(row), flush=True)
            # rows so far, in case a long run is cut short (the runner writes the full table)
            (RESULTS / "gum_samplers.json").write_text(
                json.dumps(_partial_payload(_merged(rows, narrowed), quick), indent=2)
            )
    return _merged(rows, narrowed)


def _merged(rows: list, narrowed: bool) -> list:
    """``rows`` and, for a narrowed run, the rows of ``results/gum_samplers.json`` it did not
    redo (same back end and size), ordered by size."""
    path = RESULTS / "gum_samplers.json"
    if not narrowed or not path.exists():
        return list(rows)
    redone = {(r["variant"], r["size"]) for r in rows}
    kept = [
        r
        for r in json.loads(path.read_text()).get("rows", [])
        if (r["variant"], r["size"]) not in redone
    ]
    return sorted(kept + rows, key=lambda r: r["size"])


def _partial_payload(rows: list, quick: bool) -> dict:
    """The rows so far in the runner's format."""
    return {
        "benchmark": "gum_samplers",
        "quick": quick,
        "partial": True,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
        "rows": rows,
    }

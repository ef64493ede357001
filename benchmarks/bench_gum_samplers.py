"""NUTS back ends on the GUM of seed 002 section 3.1: PyMC's NUTS vs nutpie vs numpyro (CPU).

Each sampler runs with its default settings on ``g.model`` (4 chains), started at the
Laplace mode (:func:`pmctx.gum.init.laplace_initvals`).
``seconds_per_sweep`` is the wall time per iteration (tuning and draws of all chains;
compilation and the Laplace start included: what a user waits for); ``ess_per_s`` is the
smallest bulk ESS over the function values and intercept per second of that wall time;
``notes`` has the largest R-hat. The baseline is PyMC's NUTS measured in the same run. A
back end that is not installed (``pip install pmctx[nutpie]`` / ``pmctx[jax]``) is reported
as skipped. Set ``PMCTX_BENCH_JAX_PLATFORM=gpu`` to run the numpyro row on a GPU.
"""

from __future__ import annotations

import importlib.util
import os
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

from pmctx.gum import gum
from pmctx.gum.init import laplace_initvals
from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

SAMPLERS = ("pymc", "nutpie", "numpyro")


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


def available(sampler: str) -> bool:
    if sampler == "pymc":
        return True
    if sampler == "numpyro":
        return all(importlib.util.find_spec(m) is not None for m in ("numpyro", "jax"))
    return importlib.util.find_spec(sampler) is not None


def sample_default(g, sampler: str, *, draws=1000, tune=1000, chains=4, seed=0):
    """Default settings of each back end, started at the Laplace mode (4 chains)."""
    start = laplace_initvals(g)
    if sampler == "nutpie":  # pm.sample does not pass initvals on to nutpie
        import nutpie

        compiled = nutpie.compile_pymc_model(g.model, initial_points=start)
        return nutpie.sample(
            compiled, draws=draws, tune=tune, chains=chains, seed=seed, progress_bar=False
        )
    with g.model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            nuts_sampler=sampler,
            initvals=start,
            random_seed=seed,
            progressbar=False,
        )


def _row(sampler, n, seconds, draws, rhat, ess, baseline_seconds, note=""):
    per_draw = seconds / draws
    return {
        "benchmark": "gum_samplers",
        "variant": sampler,
        "size": n,
        "seconds_per_sweep": per_draw,
        "sweeps_per_s": 1.0 / per_draw,
        "ess_per_s": ess / seconds,
        "baseline": "pymc",
        "ratio_vs_baseline": baseline_seconds / seconds if baseline_seconds else None,
        "notes": f"max R-hat {rhat:.3f}, min bulk ESS {ess:.0f}, wall {seconds:.1f} s {note}",
    }


def run(quick: bool = False) -> list[dict]:
    warnings.simplefilter("ignore")
    if os.environ.get("PMCTX_BENCH_JAX_PLATFORM"):
        os.environ.setdefault("JAX_PLATFORMS", os.environ["PMCTX_BENCH_JAX_PLATFORM"])
    sizes = (500, 2000) if quick else (500, 10_000)
    draws = tune = 300 if quick else 1000
    rows = []
    for n in sizes:
        baseline_seconds = None
        for sampler in SAMPLERS:
            if not available(sampler):
                rows.append({"benchmark": "gum_samplers", "variant": sampler, "size": n,
                             "notes": "skipped: not installed"})  # fmt: skip
                continue
            g = gum(section_3_1_formula(), seed_section_3_1(n, seed=0), family="poisson")
            start = time.perf_counter()
            idata = sample_default(g, sampler, draws=draws, tune=tune)
            seconds = time.perf_counter() - start
            rhat, ess = convergence(idata, quantities(g))
            baseline_seconds = seconds if sampler == "pymc" else baseline_seconds
            rows.append(_row(sampler, n, seconds, 4 * (draws + tune), rhat, ess, baseline_seconds))
    return rows

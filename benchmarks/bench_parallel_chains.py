"""Wall time of each model's default fit (4 chains x (1000 + 1000)) with chains in parallel
(pmctx's default ``cores=None``: one process per chain up to the usable CPUs) against chains
one after another (``cores=1``, what PyMC's own default gave on a 2-core machine), measured in
the same run on the same data. Writes ``benchmarks/results/parallel_chains.json``.

Run: ``python -m benchmarks.bench_parallel_chains [--quick] [MODEL ...]`` or ``python -m
benchmarks parallel_chains``; naming models reruns only their rows.
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "parallel_chains.json"


def _ibp(**kw):
    from pmctx.models.ibp import sample

    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(150, random_seed=0)
    return sample(data.F, data.X, K_max=12, sigma_n=0.3, **kw)


def _crp(**kw):
    from pmctx.models.crp_conditioning import sample_posterior

    from pmctx.conditioning import shipped_design

    design = shipped_design("renewal_aba", n_acquisition=10, n_extinction=10, n_test=2)
    return sample_posterior(design, alpha=1.0, max_causes=6, **kw)


def _vonmises(**kw):
    from pmctx.models.vonmises_map import demo_data, reconstruct

    data = demo_data(50, random_seed=0)
    return reconstruct(
        data["theta_obs"],
        kappa=data["kappa"],
        kappa_obs=data["kappa_obs"],
        rank=data["rank"],
        **kw,
    )


def _vonmises_chain(**kw):
    from pmctx.models.vonmises_chain import simulate, smooth

    _, y = simulate(300, kappa=4.0, kappa_obs=3.0, rank=5, missing=0.3, random_seed=0)
    return smooth(y, **kw)


def _gum(**kw):
    from pmctx.gum import gum
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

    g = gum(section_3_1_formula(), seed_section_3_1(500, random_seed=0), family="poisson")
    return g.sample(**kw)


FITS = {
    "ibp": _ibp,
    "crp": _crp,
    "vonmises": _vonmises,
    "vonmises-chain": _vonmises_chain,
    "gum": _gum,
}


def _timed(fit, cores, **short) -> tuple[float, bool]:
    from pmctx.convergence import convergence_report
    from pmctx.registry import invariants_of

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = {"random_seed": 1, "progressbar": False, "check_convergence": False, **short}
        idata = fit(cores=cores, **kwargs)
    seconds = time.perf_counter() - start
    # Judged as the fits' own check does: on each model's label-invariant quantities (raw
    # IBP features switch labels between chains, so their R-hat says nothing).
    return seconds, bool(convergence_report(invariants_of(idata))["converged"].all())


def run(quick: bool = False) -> list[dict]:
    """One row per model: sequential and parallel wall seconds, and their ratio.

    Parameters
    ----------
    quick : bool, default False
        Only the CRP and von Mises chain models (the fastest fits).

    Returns
    -------
    list of dict
        Rows in the benchmark runner's columns.
    """
    import sys

    from pmctx.sampling import usable_cores

    names = [n for n in sys.argv[1:] if n in FITS] or (
        ["crp", "vonmises-chain"] if quick else list(FITS)
    )
    rows = []
    for name in names:
        # A short run first, so that compiles and first-call work count in neither timed run.
        _timed(FITS[name], 1, draws=10, tune=10, chains=1)
        sequential, ok_seq = _timed(FITS[name], 1)
        parallel, ok_par = _timed(FITS[name], None)
        rows.append(
            {
                "benchmark": "parallel_chains",
                "variant": name,
                "size": "4 chains x (1000 + 1000)",
                "seconds_per_sweep": None,
                "sweeps_per_s": None,
                "ess_per_s": None,
                "baseline": f"cores=1: {sequential:.1f} s",
                "ratio_vs_baseline": sequential / parallel,
                "notes": f"cores=None ({min(4, usable_cores())} processes): {parallel:.1f} s; "
                f"converged {ok_seq}/{ok_par}",
                "sequential_s": sequential,
                "parallel_s": parallel,
            }
        )
        print(rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    previous = json.loads(RESULTS.read_text())["rows"] if RESULTS.exists() else []
    kept = [row for row in previous if row["variant"] not in names]
    RESULTS.write_text(
        json.dumps(
            {
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                "usable_cores": usable_cores(),
                "load_average": os.getloadavg(),
                "rows": kept + rows,
            },
            indent=1,
        )
        + "\n"
    )
    return rows


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)

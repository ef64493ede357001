"""Plain ``pm.sample(chains=4)`` (otherwise default arguments: 1000 tune + 1000 draws) on
each model's demo data; prints the assigned steps, wall time and R-hat / bulk ESS of label-invariant
quantities with pmctx's convergence report (``pmctx.convergence``: R-hat limit for the largest
of many elements, ESS >= 100 per chain), and writes
``benchmarks/results/plain_sample_convergence.json``. Run:
``python -m benchmarks.plain_sample_convergence [ibp crp vonmises gum]``.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import xarray as xr

from pmctx.convergence import convergence_report
from pmctx.steps.registration import assigned_steps

RESULTS = Path(__file__).parent / "results" / "plain_sample_convergence.json"


def _ibp():
    from pmctx.models.ibp import build_model

    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(150, random_seed=0)
    return build_model(data.F, data.X, K_max=12, sigma_n=0.3), None


def _crp():
    from pmctx.models.crp_conditioning import build_model

    from pmctx.conditioning import shipped_design

    design = shipped_design("renewal_aba", n_acquisition=10, n_extinction=10, n_test=2)
    return build_model(design, alpha=1.0, max_causes=6), None


def _vonmises():
    from pmctx.models.vonmises_map import build_model, demo_data, theta_to_o

    # The demo's 50 x 50 map, at the kappa its held-out pixels choose (as `pmctx demo` fits it).
    data = demo_data(50, random_seed=0)
    model = build_model(
        theta_to_o(data["theta_obs"]),
        kappa=data["kappa"],
        kappa_obs=data["kappa_obs"],
        rank=data["rank"],
    )
    return model, None


def _gum():
    from pmctx.gum import gum
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

    g = gum(section_3_1_formula(), seed_section_3_1(500, random_seed=0), family="poisson")
    return g.model, [*g.function_names, "intercept"]


def invariants(name, idata) -> xr.Dataset:
    """Label-invariant scalar (or per-site) quantities per chain and draw."""
    post, stats = idata.posterior, idata.sample_stats
    if name == "ibp":
        return xr.Dataset({"n_active": post["n_active"], "loglik": post["loglik"]})
    if name == "crp":
        z = post["z"].values
        same = (z[..., :, None] == z[..., None, :]).astype(float)  # co-assignment matrix
        iu = np.triu_indices(z.shape[-1], 1)
        co = xr.DataArray(same[..., iu[0], iu[1]], dims=("chain", "draw", "pair"))
        return xr.Dataset({"n_occupied": stats["n_occupied"], "coassignment": co})
    if name == "vonmises":
        from pmctx.models.vonmises_map import invariants as map_invariants

        # theta (circular: R-hat/ESS on cos and sin of 2 theta), smoothness, pinwheel count.
        return map_invariants(idata).assign(log_joint=stats["log_joint"])
    raise ValueError(name)


def main(names):
    warnings.simplefilter("ignore")
    builders = {"ibp": _ibp, "crp": _crp, "vonmises": _vonmises, "gum": _gum}
    results = {}
    for name in names:
        model, var_names = builders[name]()
        table = assigned_steps(model)
        start = time.perf_counter()
        with model:
            # chains=4: pm.sample defaults to max(2, cores) chains, 2 on a 2-core machine.
            idata = pm.sample(chains=4, progressbar=False, compute_convergence_checks=False)
        seconds = time.perf_counter() - start
        data = idata.posterior[var_names] if var_names else invariants(name, idata)
        report = convergence_report(data)
        cells = [f"{v}: R-hat {row.r_hat:.4f} (limit {row.r_hat_limit:.4f}; largest "
                 f"{row.r_hat_largest:.4f}), "
                 f"ESS bulk/tail min {row.ess_bulk:.0f}/{row.ess_tail:.0f}"
                 for v, row in report.iterrows()]  # fmt: skip
        converged = bool(report["converged"].all())
        print(f"{name}: steps {table}; {seconds:.0f} s; converged {converged}; "
              + "; ".join(cells), flush=True)  # fmt: skip
        results[name] = {
            "steps": str(table),
            "seconds": seconds,
            "converged": converged,
            "report": report.reset_index(names="quantity").to_dict(orient="records"),
        }
    RESULTS.parent.mkdir(exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.write_text(json.dumps({**previous, **results}, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or ["crp", "vonmises", "ibp", "gum"])

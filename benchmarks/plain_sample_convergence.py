"""Plain ``pm.sample(chains=4)`` (otherwise default arguments: 1000 tune + 1000 draws) on
each model's demo data; prints the assigned steps, wall time and R-hat / bulk ESS of label-invariant
quantities. Run: ``python -m benchmarks.plain_sample_convergence [ibp crp vonmises gum]``.
"""

from __future__ import annotations

import sys
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr

from pmctx.steps.registration import assigned_steps


def _ibp():
    from pmctx.models.ibp import build_model

    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(150, seed=0)
    return build_model(data.F, data.X, K_max=12, sigma_n=0.3), None


def _crp():
    from pmctx.models.crp_conditioning import build_model

    from pmctx.conditioning import shipped_design

    design = shipped_design("renewal_aba", n_acquisition=10, n_extinction=10, n_test=2)
    return build_model(design, alpha=1.0, max_causes=6), None


def _vonmises():
    from pmctx.models.vonmises_map import (
        build_model,
        noisy_observations,
        o_to_theta,
        sample_prior,
        theta_to_o,
    )

    truth = o_to_theta(sample_prior((24, 24), kappa=5.0, rank=5, n_sweeps=30, seed=0))
    theta_obs = noisy_observations(truth, kappa_obs=2.0, missing=0.25, seed=1)
    return build_model(theta_to_o(theta_obs), kappa=5.0, kappa_obs=2.0, rank=5), None


def _gum():
    from pmctx.gum import gum
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

    g = gum(section_3_1_formula(), seed_section_3_1(500, seed=0), family="poisson")
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
        o = post["o"]
        return xr.Dataset({"smoothness": stats["smoothness"], "log_joint": stats["log_joint"],
                           "cos_o": np.cos(o), "sin_o": np.sin(o)})  # fmt: skip
    raise ValueError(name)


def main(names):
    warnings.simplefilter("ignore")
    builders = {"ibp": _ibp, "crp": _crp, "vonmises": _vonmises, "gum": _gum}
    for name in names:
        model, var_names = builders[name]()
        table = assigned_steps(model)
        start = time.perf_counter()
        with model:
            # chains=4: pm.sample defaults to max(2, cores) chains, 2 on a 2-core machine.
            idata = pm.sample(chains=4, progressbar=False, compute_convergence_checks=False)
        seconds = time.perf_counter() - start
        data = idata.posterior[var_names] if var_names else invariants(name, idata)
        rhat, ess = az.rhat(data), az.ess(data, method="bulk")
        cells = [f"{v}: R-hat max {float(rhat[v].max()):.4f}, ESS min {float(ess[v].min()):.0f}"
                 for v in data.data_vars]  # fmt: skip
        print(f"{name}: steps {table}; {seconds:.0f} s; " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["crp", "vonmises", "ibp", "gum"])

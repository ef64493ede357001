"""Ordinal responses with the frozen-noise ``demz`` samplers get a log_likelihood group.

PyMC's ``compute_log_likelihood`` cannot convert the ordinal subject model (its cutpoints
carry an initial value), so ``sample_subject(response="ordinal", sampler="demz")`` used to
raise ``NotImplementedError`` after sampling. The group now comes from each draw's recorded
``V`` for every sampler; here it is checked against two independent computations of the
exact per-trial log likelihood: PyMC's ``OrderedLogistic`` logp and pmctx's own
``OrdinalRating.pointwise`` (the response model of the maximum-likelihood fits).
"""

import numpy as np
import pymc as pm
import pytest

from pmctx.conditioning.fitting import recovery_design, simulate_subject
from pmctx.conditioning.posterior import sample_subject
from pmctx.conditioning.response import OrdinalRating

DESIGN = recovery_design(24)


@pytest.mark.parametrize(
    "sampler",
    ["demz", pytest.param("demz+nuts", marks=pytest.mark.slow)],  # NUTS compile: ~10 s more
)
def test_ordinal_demz_log_likelihood_is_the_exact_per_trial_likelihood(sampler):
    truth = {"alpha": 1.0, "a": 1.0, "slope": 4.0, "cut_0": 0.5, "cut_1": 2.5}
    data = simulate_subject(
        DESIGN, truth, variant="lcm", response="ordinal", n_particles=10, rng=0,
        response_options={"n_levels": 3},
    )  # fmt: skip
    y = data["responses"].copy()
    y[[2, 9]] = np.nan  # skipped trials stay out of the group
    idata = sample_subject(
        y, DESIGN, variant="lcm", response="ordinal", response_options={"n_levels": 3},
        sampler=sampler, draws=8, tune=8, chains=2, n_particles=10, random_seed=2,
        check_convergence=False,  # 8 + 8 draws: the group's contents, not a converged fit
    )  # fmt: skip
    seen = np.flatnonzero(~np.isnan(y))
    ll = idata.log_likelihood["cr"]
    assert ll.dims == ("chain", "draw", "response")
    assert ll.shape == (2, 8, seen.size)
    np.testing.assert_array_equal(ll["response"].values, seen)
    post = idata.posterior
    rating = OrdinalRating(3)
    for c in range(2):
        for d in range(8):
            V = post["V"].values[c, d]
            slope = float(post["slope"].values[c, d])
            cuts = post["cutpoints"].values[c, d]
            dist = pm.OrderedLogistic.dist(eta=slope * V[seen], cutpoints=cuts)
            expected = pm.logp(dist, y[seen].astype(int)).eval()
            np.testing.assert_allclose(ll.values[c, d], expected, rtol=1e-9, atol=1e-12)
            params = {"slope": slope, "cut_0": cuts[0], "cut_1": cuts[1]}
            np.testing.assert_allclose(
                ll.values[c, d], rating.pointwise(V, y, params), rtol=1e-9, atol=1e-12
            )


def test_ordinal_model_converts_to_a_graph_and_starts_ordered():
    """No stored initial value: PyMC's model-to-graph conversion (compute_log_likelihood,
    pm.do) works, and the default start is a valid ordered point."""
    from pymc.model.fgraph import fgraph_from_model

    from pmctx.conditioning.posterior import build_subject_model

    y = np.array([0, 1, 2, 1, 0, 2] * 4, dtype=float)
    model = build_subject_model(
        y, DESIGN, variant="lcm", response="ordinal", response_options={"n_levels": 3},
        n_particles=5, rng=0,
    )  # fmt: skip
    fgraph_from_model(model)  # raised NotImplementedError with the cutpoints' initval
    start = model.initial_point()
    # cut points -1, 1 on the ordered transform's scale: (first, log of the increment)
    np.testing.assert_allclose(start["cutpoints_ordered__"], [-1.0, np.log(2.0)])
    assert np.isfinite(model.point_logps(start)["cutpoints"])

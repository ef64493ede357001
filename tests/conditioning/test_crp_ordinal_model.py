"""The ordinal subject model converts to a graph and starts at a valid ordered point.

(Its pointwise log likelihood against PyMC's logp: tests/conditioning/test_crp_posterior.py.)
"""

import numpy as np

from pmctx.conditioning.fitting import recovery_design

DESIGN = recovery_design(24)


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

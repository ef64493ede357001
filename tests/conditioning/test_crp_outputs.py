"""The latent-cause plots put ticks on whole trials and causes; SubjectFit prints a short repr;
the demo, output and check functions stay reachable from the model module."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from pmctx.models import crp_conditioning as crp

from pmctx.conditioning import particle_filter, shipped_design
from pmctx.conditioning.fitting import SubjectFit
from pmctx.conditioning.plots import plot_cause_posterior, plot_V


@pytest.fixture(scope="module")
def renewal():
    # the demo's sizes: 22 trials, where the default ticks fell at 2.5, 7.5, ...
    design = shipped_design("renewal_aba", n_acquisition=10, n_extinction=10, n_test=2)
    return design, particle_filter(design, alpha=0.5, n_particles=50, random_seed=0)


def _whole(ticks):
    return len(ticks) > 1 and np.allclose(ticks, np.round(ticks))


def test_cause_posterior_ticks_are_whole_trials_and_causes(renewal):
    design, result = renewal
    ax = plot_cause_posterior(result, design=design)
    ax.figure.canvas.draw()
    assert _whole(ax.get_xticks()) and _whole(ax.get_yticks())
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("trial", "cause")


def test_V_plot_ticks_are_whole_trials(renewal):
    design, result = renewal
    ax = plot_V({"ABA": result}, design=design)
    ax.figure.canvas.draw()
    assert _whole(ax.get_xticks())


def test_subject_fit_repr_is_short_and_readable():
    fit = SubjectFit(
        variant="lcm", params={"alpha": np.float64(2.4688476562500017), "b": 1.0},
        free=("alpha",), log_likelihood=np.float64(-10.123456), pointwise=np.zeros(200),
        n_params=3, n_observed=200, V=np.zeros(200), starts=[{"alpha": np.float64(1.0)}] * 5,
        n_evals=61, seconds=0.25,
    )  # fmt: skip
    text = repr(fit)
    assert "np.float64" not in text and "array" not in text
    assert len(text) < 200
    assert "alpha=2.469" in text and "log_likelihood=-10.12" in text and "5 starts" in text


def test_moved_functions_stay_reachable_from_the_model_module():
    from pmctx.conditioning import demo, exact, outputs

    assert crp.write_outputs is outputs.write_outputs
    assert crp.phenomena_table is demo.phenomena_table
    assert crp.RENEWAL_DESIGNS is demo.RENEWAL_DESIGNS
    assert crp.log_marginal_assignments is exact.log_marginal_assignments
    assert crp.SPEC.write_outputs is outputs.write_outputs
    assert crp.SPEC.demo is crp.demo

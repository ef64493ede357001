"""The replica-exchange map step inside pm.sample: stationary law, restarts, errors, pickling.

The stationary test samples a 2x2 model (observed and missing nodes) through ``pm.sample``
with two chains in one process, so the step's rungs restart at the second chain's start,
and compares the stored (target-rung) draws with the exact bin probabilities (quadrature
of the joint) at the measured effective sample size, with the total-variation tolerance
derived from it (:func:`pmctx.testing.assert_chains_match_exact`).
"""

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_map import build_model

from pmctx.steps.vonmises_tempering import TemperedVonMisesGibbs, default_n_replicas
from pmctx.testing import assert_chains_match_exact
from pmctx.vonmises.potentials import natural_field
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK, KAPPA_OBS, N_BINS = 2.2, 2, 1.2, 3
Z = np.array([[0.3, np.nan], [np.nan, 0.0]])


@pytest.fixture(scope="module")
def model():
    return build_model(Z, kappa=KAPPA, kappa_obs=KAPPA_OBS, rank=RANK)


def test_pm_sample_stores_draws_from_the_target_rung(model):
    probs, _ = binned_joint(
        natural_field(np.nan_to_num(Z), ~np.isnan(Z), KAPPA_OBS), KAPPA, RANK, n_bins=N_BINS
    )
    with model:
        idata = pm.sample(
            draws=1200,
            tune=20,
            chains=2,
            cores=1,
            step=[TemperedVonMisesGibbs(n_replicas=3, kappa_min=0.4, n_sweeps=1)],
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    o = idata.posterior["o"].values  # (chain, draw, 2, 2)
    codes = np.stack([bin_index(chain, N_BINS) for chain in o])
    # About 2,000 effective draws: a derived total-variation tolerance near 0.08.
    assert_chains_match_exact(codes, probs.ravel(), max_tv_tol=0.1)
    swap_rate = idata.sample_stats["swap_rate"].values
    assert 0.1 < np.mean(swap_rate) < 0.95
    assert {"smoothness", "log_joint"} <= set(idata.sample_stats.data_vars)


def test_rungs_restart_from_a_new_start_and_continue_otherwise(model, monkeypatch):
    import pmctx.steps.vonmises_tempering as module

    seen, original = [], module.tempered_sweep

    def recording_sweep(states, *args, **kwargs):
        seen.append(np.array(states))
        return original(states, *args, **kwargs)

    monkeypatch.setattr(module, "tempered_sweep", recording_sweep)
    with model:
        step = TemperedVonMisesGibbs(n_replicas=3, kappa_min=1.0, rng=1, n_sweeps=1)
    start = {"o_circular__": np.full((2, 2), 0.5)}
    point, _ = step.step(start)
    np.testing.assert_array_equal(seen[0], np.full((3, 2, 2), 0.5))  # every rung at the start
    after_first = step._states.copy()
    step.step(point)  # the map it returned: the rungs go on from where they were
    np.testing.assert_array_equal(seen[1], after_first)
    step.step({"o_circular__": np.full((2, 2), -1.0)})  # another map: every rung restarts
    np.testing.assert_array_equal(seen[2], np.full((3, 2, 2), -1.0))


def test_step_pickles_and_keeps_working(model):
    with model:
        step = TemperedVonMisesGibbs(n_replicas=2, kappa_min=1.0, rng=3)
    step.step(model.initial_point())
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    new_point, (stats,) = clone.step(model.initial_point())
    assert new_point["o_circular__"].shape == (2, 2)
    assert np.isfinite(stats["log_joint"]) and 0.0 <= stats["swap_rate"] <= 1.0


def test_default_ladder_and_option_errors(model):
    assert default_n_replicas((50, 50), 5.0, 4.0) == 8
    assert default_n_replicas((100, 100), 5.0, 4.0) > 8
    with model:
        step = TemperedVonMisesGibbs()
        ladder = step.ladder(KAPPA)
        assert ladder[-1] == KAPPA and ladder[0] == pytest.approx(0.8 * KAPPA)
        for bad in (1, 2.5, True):
            with pytest.raises(ValueError, match="n_replicas must be an integer >= 2"):
                TemperedVonMisesGibbs(n_replicas=bad)
        for bad in (0.0, -1.0, float("nan"), "1"):
            with pytest.raises(ValueError, match="kappa_min must be a positive number"):
                TemperedVonMisesGibbs(kappa_min=bad)
        for bad in (0, 1.5, True):
            with pytest.raises(ValueError, match="n_swap_passes must be an integer >= 1"):
                TemperedVonMisesGibbs(n_swap_passes=bad)
        with pytest.raises(ValueError, match="sweep must be one of"):
            TemperedVonMisesGibbs(sweep="nuts")
        with pytest.raises(ValueError, match="exceeds the model's kappa"):
            TemperedVonMisesGibbs(kappa_min=10.0).step(model.initial_point())
    with build_model(Z, kappa=KAPPA, kappa_obs="prior", rank=RANK):
        with pytest.raises(ValueError, match="needs a fixed kappa_obs"):
            TemperedVonMisesGibbs()


def test_reconstruct_with_the_tempered_sampler():
    from pmctx.models.vonmises_map import reconstruct

    theta = np.full((4, 5), 0.5)
    theta[1, 2] = np.nan
    idata = reconstruct(
        theta, kappa=2.0, kappa_obs=4.0, rank=3, sampler="tempered", draws=15, tune=5,
        chains=1, random_seed=0, progressbar=False, check_convergence=False,
    )  # fmt: skip
    assert idata.posterior["theta"].shape == (1, 15, 4, 5)
    assert "swap_rate" in idata.sample_stats
    with pytest.raises(ValueError, match="needs a fixed kappa_obs"):
        reconstruct(theta, kappa_obs="prior", sampler="tempered", draws=5, tune=5, chains=1)


def test_reconstruct_defaults_to_augmented_with_jumps_and_keeps_an_explicit_sampler():
    from pmctx.models.vonmises_map import reconstruct

    theta = np.full((4, 5), 0.5)
    theta[1, 2] = np.nan
    options = {"kappa": 2.0, "rank": 3, "draws": 5, "tune": 2, "chains": 1, "random_seed": 0,
               "progressbar": False, "check_convergence": False,
               "posterior_predictive": False}  # fmt: skip
    default = reconstruct(theta, kappa_obs=4.0, **options).sample_stats
    assert "jumps" in default and "swap_rate" not in default
    explicit = reconstruct(theta, kappa_obs=4.0, sampler="tempered", **options)
    assert "swap_rate" in explicit.sample_stats
    learned = reconstruct(theta, kappa_obs="prior", **options)
    assert "jumps" in learned.sample_stats
    with pytest.raises(ValueError, match="sampler.*auto"):
        reconstruct(theta, kappa_obs=4.0, sampler="automatic", **options)
    with pytest.raises(ValueError, match="n_jumps applies to sampler='augmented'"):
        reconstruct(theta, kappa_obs=4.0, sampler="tempered", n_jumps=3, **options)

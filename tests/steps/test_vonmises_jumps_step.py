"""Pinwheel-pair jumps inside the augmented map step: learning in tuning, exact draws after.

The learner is replaced by one that returns a fixed move (a 2x2 grid has no pinwheel pair
to learn), so the test can check inside ``pm.sample`` that the step learns during tuning,
keeps its moves fixed for the stored draws, accepts jumps there, and still draws from the
exact posterior (quadrature bins, as ``test_vonmises_steps.py``).
"""

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_map import build_model

import pmctx.steps.vonmises_jumps as step_jumps
from pmctx.steps.vonmises import AugmentedVonMisesGibbs
from pmctx.testing import assert_matches_exact
from pmctx.vonmises.jumps import JumpMove
from pmctx.vonmises.potentials import natural_field
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK, KAPPA_OBS, N_BINS = 1.5, 2, 1.2, 3
Z = np.array([[0.3, np.nan], [np.nan, 0.0]])
MOVE = JumpMove.from_field(np.array([[1.9, 0.0], [-2.4, 0.7]]))


@pytest.fixture
def model():
    return build_model(Z, kappa=KAPPA, kappa_obs=KAPPA_OBS, rank=RANK)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_n_jumps_must_be_a_non_negative_integer(model, bad):
    with model, pytest.raises(ValueError, match="n_jumps must be an integer >= 0"):
        AugmentedVonMisesGibbs(n_jumps=bad)


def test_n_jumps_takes_a_numpy_integer(model):
    with model:
        step = AugmentedVonMisesGibbs(n_jumps=np.int64(3))
    assert step.n_jumps == 3 and type(step.n_jumps) is int


def test_step_learns_in_tuning_and_samples_the_exact_posterior_with_fixed_moves(model, monkeypatch):
    calls = []

    def learner(states):
        calls.append(len(states))
        return [MOVE]

    monkeypatch.setattr(step_jumps, "learn_jumps", learner)
    n, tune = 4000, 100
    with model:
        step = AugmentedVonMisesGibbs(n_sweeps=2, n_jumps=3)
        idata = pm.sample(draws=n, tune=tune, chains=1, step=[step], random_seed=3,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
    # 2 sweeps per draw: learnt at tuning sweeps 100 and 200, then once when tuning ended.
    assert len(calls) == 3 and calls[-1] > 0
    assert step.jump_moves == [MOVE] and not step.tune
    jumps = idata.sample_stats["jumps"].values[0]
    assert jumps.sum() > 0.1 * 3 * 2 * n  # 3 proposals after each of 2 sweeps per draw (0.19)
    probs, _ = binned_joint(
        natural_field(np.nan_to_num(Z), ~np.isnan(Z), KAPPA_OBS), KAPPA, RANK, n_bins=N_BINS
    )
    draws = idata.posterior["o"].values[0]
    assert_matches_exact(bin_index(draws, N_BINS), probs.ravel(), tv_tol=0.07, ess=n / 2)


def test_a_new_chain_forgets_the_moves_and_no_tuning_learns_none(model, monkeypatch):
    monkeypatch.setattr(step_jumps, "learn_jumps", lambda states: [MOVE] if len(states) else [])
    with model:
        step = AugmentedVonMisesGibbs()
        step.jump_moves = [MOVE]
        step.reset_tuning()
        assert step.jump_moves == [] and step.tune
        idata = pm.sample(draws=20, tune=0, chains=1, step=[step], random_seed=0,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
    assert step.jump_moves == []
    assert int(idata.sample_stats["jumps"].sum()) == 0


def test_jumps_off_keeps_no_tuning_states(model):
    with model:
        step = AugmentedVonMisesGibbs(n_jumps=0)
        pm.sample(draws=5, tune=20, chains=1, step=[step], random_seed=0, progressbar=False,
                  compute_convergence_checks=False)  # fmt: skip
    assert step._tuning_states.seen == 0 and step.jump_moves == []


def test_step_with_moves_pickles(model):
    with model:
        step = AugmentedVonMisesGibbs(n_jumps=4)
    step.jump_moves = [MOVE]
    copy = cloudpickle.loads(cloudpickle.dumps(step))
    assert copy.n_jumps == 4
    np.testing.assert_array_equal(copy.jump_moves[0].shift, MOVE.shift)

"""Conditioning phenomena as relative orderings on the shipped designs, averaged over seeds.

A brand-new cause predicts P(US) = 0.5, so the assertions compare designs, not absolutes.
"""

import numpy as np
import pytest

from pmctx.conditioning import particle_filter, shipped_design

SEEDS = range(4)


def _mean_V(name, alpha, **sizes):
    design = shipped_design(name, **sizes)
    V = np.mean(
        [particle_filter(design, alpha=alpha, n_particles=200, random_seed=s).V for s in SEEDS],
        axis=0,
    )
    return V, design.phase_slices()


@pytest.fixture(scope="module")
def renewal():
    return {
        c: _mean_V(f"renewal_{c}", 0.1, n_acquisition=10, n_extinction=10)
        for c in ("aba", "abc", "aab")
    }


def test_renewal_aba_above_abc_and_aab(renewal):
    test = {c: V[-1] for c, (V, _) in renewal.items()}
    assert test["aba"] > test["abc"] + 0.2
    assert test["aba"] > test["aab"] + 0.2


def test_aab_test_stays_near_end_of_extinction(renewal):
    V, slices = renewal["aab"]
    end_ext = V[slices["extinction"]][-1]
    assert abs(V[-1] - end_ext) < 0.1


def test_extinction_lowers_V(renewal):
    V, slices = renewal["aba"]
    assert V[slices["extinction"]][-1] < V[slices["acquisition"]][-1] - 0.3


def test_one_cause_removes_renewal():
    test = {
        c: _mean_V(f"renewal_{c}", 1e-8, n_acquisition=10, n_extinction=10)[0][-1]
        for c in ("aba", "abc", "aab")
    }
    assert max(test.values()) - min(test.values()) < 0.02


def test_latent_inhibition_same_context_slows_acquisition():
    acq = {}
    for cond in ("none", "same", "different"):
        V, slices = _mean_V(f"latent_inhibition_{cond}", 0.1, n_acquisition=10, n_preexposure=10)
        acq[cond] = V[slices["acquisition"]].mean()
    assert acq["same"] < acq["none"] - 0.2
    assert acq["same"] < acq["different"] - 0.2


def test_aab_renewal_above_aaa_with_literature_phase_lengths():
    """15 acquisition / 25 extinction trials, all contexts coded, non-reinforced test trial."""
    test = {c: _mean_V(f"renewal_{c}", 0.1)[0][-1] for c in ("aaa", "aab")}
    assert test["aab"] > test["aaa"] + 0.015, test

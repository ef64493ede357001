"""The JAX augmented step inside pm.sample (optional extra ``pmctx[jax]``): exact law, seeds,
not picked by plain ``pm.sample()``, ``reconstruct(sampler="augmented_jax")``, and a clear
error without JAX."""

import sys

import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_map import build_model, reconstruct

from pmctx.steps.registration import assigned_steps
from pmctx.steps.vonmises_jax import JaxAugmentedVonMisesGibbs
from pmctx.testing import assert_matches_exact
from pmctx.vonmises.potentials import natural_field
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK, KAPPA_OBS, N_BINS = 1.5, 2, 1.2, 3
Z = np.array([[0.3, np.nan], [np.nan, 0.0]])


@pytest.fixture(scope="module")
def model():
    return build_model(Z, kappa=KAPPA, kappa_obs=KAPPA_OBS, rank=RANK)


def _sample(model, n, seed, **step_kwargs):
    with model:
        step = JaxAugmentedVonMisesGibbs(**step_kwargs)
        return pm.sample(draws=n, tune=20, chains=1, step=[step], random_seed=seed,
                         progressbar=False, compute_convergence_checks=False)  # fmt: skip


def test_pm_sample_matches_exact_bins_and_is_reproducible(model):
    pytest.importorskip("jax")
    pytest.importorskip("numpyro")
    probs, _ = binned_joint(natural_field(np.nan_to_num(Z), ~np.isnan(Z), KAPPA_OBS), KAPPA, RANK,
                            n_bins=N_BINS)  # fmt: skip
    n = 4000  # the CPU steps' test: tolerance 0.07, ess n / 2
    idata = _sample(model, n, seed=1, n_sweeps=1)
    draws = idata.posterior["o"].values[0]
    assert_matches_exact(bin_index(draws, N_BINS), probs.ravel(), tv_tol=0.07, ess=n / 2)
    assert {"smoothness", "log_joint"} <= set(idata.sample_stats.data_vars)
    again = _sample(model, 50, seed=1, n_sweeps=1).posterior["o"].values
    np.testing.assert_array_equal(again, idata.posterior["o"].values[:, :50])


def test_plain_pm_sample_keeps_the_cpu_step(model):
    assert assigned_steps(model) == {"AugmentedVonMisesGibbs": ["o"]}


def test_reconstruct_runs_it_with_chains_in_one_process(monkeypatch):
    pytest.importorskip("jax")
    pytest.importorskip("numpyro")
    calls = []
    real = JaxAugmentedVonMisesGibbs._run_sweeps

    def counted(self, *args):
        calls.append(1)  # seen here only if the chains run in this process
        return real(self, *args)

    monkeypatch.setattr(JaxAugmentedVonMisesGibbs, "_run_sweeps", counted)
    theta = np.full((5, 4), 0.5)
    theta[1, 2] = np.nan
    idata = reconstruct(theta, kappa=2.0, kappa_obs=4.0, rank=3, sampler="augmented_jax",
                        draws=10, tune=5, chains=2, cores=2, check_convergence=False,
                        random_seed=0)  # fmt: skip
    assert idata.posterior["theta"].shape == (2, 10, 5, 4)
    assert len(calls) == 2 * (10 + 5)


def test_without_jax_the_error_says_what_to_install(model, monkeypatch):
    import pmctx.vonmises

    monkeypatch.setitem(sys.modules, "pmctx.vonmises.jax_series", None)
    monkeypatch.delattr(pmctx.vonmises, "jax_series", raising=False)
    with model, pytest.raises(ImportError, match=r"pip install 'pmctx\[jax\]'"):
        JaxAugmentedVonMisesGibbs()

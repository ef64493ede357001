"""The orientation-map step methods inside pm.sample: target, stationary law, stats, pickling.

The stationary test samples a 2x2 model through ``pm.sample`` with each step method and
compares binned draws with the exact bin probabilities (quadrature of the joint).
"""

import arviz as az
import cloudpickle
import numpy as np
import pymc as pm
import pytest
from pmctx.models.vonmises_map import build_model

from pmctx.steps.vonmises import AugmentedVonMisesGibbs, ClusterVonMisesGibbs
from pmctx.testing import assert_matches_exact, compare_to_exact, reference_compile_kwargs
from pmctx.vonmises.potentials import log_joint, natural_field
from tests.oracles.vonmises_exact import bin_index, binned_joint

KAPPA, RANK, KAPPA_OBS, N_BINS = 1.5, 2, 1.2, 3
Z = np.array([[0.3, np.nan], [np.nan, 0.0]])
STEPS = [AugmentedVonMisesGibbs, ClusterVonMisesGibbs]


@pytest.fixture(scope="module")
def model():
    return build_model(Z, kappa=KAPPA, kappa_obs=KAPPA_OBS, rank=RANK)


@pytest.fixture(scope="module")
def field():
    return natural_field(np.nan_to_num(Z), ~np.isnan(Z), KAPPA_OBS)


def test_model_logp_is_the_kernels_target_up_to_a_constant(model, field):
    logp = model.compile_logp()
    rng = np.random.default_rng(0)
    gaps = []
    for _ in range(5):
        o = rng.uniform(-np.pi, np.pi, size=(2, 2))
        gaps.append(logp({"o_circular__": o}) - log_joint(o, field, KAPPA, RANK))
    np.testing.assert_allclose(gaps, gaps[0], atol=1e-9)


def _exact_bins(model, step):
    probs, _ = binned_joint(
        field=natural_field(np.nan_to_num(Z), ~np.isnan(Z), KAPPA_OBS),
        kappa=KAPPA,
        rank=RANK,
        n_bins=N_BINS,
    )
    n = 4000
    with model:
        idata = pm.sample(
            draws=n,
            tune=50,
            chains=1,
            step=[step],
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    draws = idata.posterior["o"].values[0]
    return compare_to_exact(bin_index(draws, N_BINS), probs.ravel(), tv_tol=0.07, ess=n / 2)


class _HalfKappaAugmented(AugmentedVonMisesGibbs):
    """Deliberately broken: sweeps at half the smoothing concentration."""

    @staticmethod
    def sweep(o, field, kappa, rank, rng):
        return AugmentedVonMisesGibbs.sweep(o, field, 0.5 * kappa, rank, rng)


def test_a_broken_step_fails_the_exact_bins(model):
    with model:
        result = _exact_bins(model, _HalfKappaAugmented())
    assert not result.passed, str(result)


def test_default_sweeps_per_stored_draw():
    model = build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2)
    with model:
        assert AugmentedVonMisesGibbs().n_sweeps == 8
        assert ClusterVonMisesGibbs().n_sweeps == 8
        assert AugmentedVonMisesGibbs(n_sweeps=1).n_sweeps == 1
        for bad in (0, 1.5, True):
            with pytest.raises(ValueError, match="n_sweeps"):
                AugmentedVonMisesGibbs(n_sweeps=bad)


def test_stored_log_joint_is_the_reference_log_joint():
    rng = np.random.default_rng(4)
    z = rng.uniform(-np.pi, np.pi, (6, 7))
    z[rng.random(z.shape) < 0.3] = np.nan
    model = build_model(z, kappa=3.0, kappa_obs=1.5, rank=4)
    field = natural_field(np.nan_to_num(z), ~np.isnan(z), 1.5)
    with model:
        step = AugmentedVonMisesGibbs(rng=5, n_sweeps=2)
    point = model.initial_point()
    for _ in range(3):
        point, (stats,) = step.step(point)
        o = np.mod(point["o_circular__"] + np.pi, 2 * np.pi) - np.pi
        reference = log_joint(o, field, 3.0, 4)
        assert abs(stats["log_joint"] - reference) <= 1e-11 * max(1.0, abs(reference))


def test_reconstruct_starts_every_chain_at_its_own_random_missing_pixels(monkeypatch):
    import pmctx.models.vonmises_map as vm

    captured = {}

    def fake_run_sampler(model, **kwargs):
        captured.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr(vm, "run_sampler", fake_run_sampler)
    theta = np.full((5, 6), 0.4)
    theta[1:3, 2:5] = np.nan
    with pytest.raises(RuntimeError, match="stop"):
        vm.reconstruct(theta, chains=3, random_seed=0)
    starts = [init["o"] for init in captured["initvals"]]
    assert len(starts) == 3
    seen = ~np.isnan(theta)
    for start in starts:
        np.testing.assert_allclose(start[seen], 0.8)
    assert len({tuple(np.round(start[~seen], 12)) for start in starts}) == 3


@pytest.mark.parametrize("step_cls", STEPS, ids=lambda c: c.name)
def test_pm_sample_matches_exact_bins(model, step_cls):
    probs, _ = binned_joint(
        field=natural_field(np.nan_to_num(Z), ~np.isnan(Z), KAPPA_OBS),
        kappa=KAPPA,
        rank=RANK,
        n_bins=N_BINS,
    )
    n = 4000
    with model:
        idata = pm.sample(
            draws=n,
            tune=50,
            chains=1,
            step=[step_cls()],
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
        )
    draws = idata.posterior["o"].values[0]
    assert_matches_exact(bin_index(draws, N_BINS), probs.ravel(), tv_tol=0.07, ess=n / 2)
    assert "z" in idata.log_likelihood
    stats = idata.sample_stats
    assert {"smoothness", "log_joint"} <= set(stats.data_vars)
    theta = idata.posterior["theta"].values
    assert np.all((theta >= 0) & (theta < np.pi))


def test_steps_pickle_and_keep_working(model):
    with model:
        step = AugmentedVonMisesGibbs(rng=3)
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    point = model.initial_point()
    new_point, stats = clone.step(point)
    assert len(stats) == 1 and np.isfinite(stats[0]["log_joint"])
    assert new_point["o_circular__"].shape == (2, 2)


def test_step_rejects_foreign_models():
    with pm.Model():
        x = pm.Normal("x")
        with pytest.raises(ValueError, match="build_model"):
            AugmentedVonMisesGibbs([x])


@pytest.mark.slow
def test_nuts_agrees_on_edge_statistics(model, field):
    """PyMC's own NUTS on the same model (circular transform) gives the same edge moments."""
    _, (joint, angles) = binned_joint(field, KAPPA, RANK, n_bins=N_BINS)
    exact = float((joint * np.cos(angles[:, None, None, None] - angles[None, :, None, None])).sum())
    with model:
        # The circular transform makes the density periodic on R^4, where the U-turn criterion
        # rarely fires; a capped tree depth keeps NUTS valid and affordable.
        idata = pm.sample(
            draws=2000,
            tune=1000,
            chains=2,
            cores=1,
            step=pm.NUTS(
                max_treedepth=6, target_accept=0.9, compile_kwargs=reference_compile_kwargs()
            ),
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    o = idata.posterior["o"].values
    edge_cos = np.cos(o[:, :, 0, 0] - o[:, :, 0, 1])  # (chain, draw)
    se = edge_cos.std() / np.sqrt(float(az.ess(edge_cos)))
    assert abs(edge_cos.mean() - exact) < 4 * se, (edge_cos.mean(), exact, se)

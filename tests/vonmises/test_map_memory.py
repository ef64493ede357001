"""A map reconstruction says, before sampling, when its outputs would not fit in memory."""

import numpy as np
import pytest
from pmctx.models import vonmises_map

from pmctx.exceptions import MemoryWarning


def test_reconstruct_warns_before_sampling_when_outputs_pass_the_memory(monkeypatch):
    monkeypatch.setenv("PMCTX_MEMORY_BYTES", "100000")  # 100 kB available

    def no_sampling(*args, **kwargs):
        raise RuntimeError("sampling started")

    monkeypatch.setattr(vonmises_map, "run_sampler", no_sampling)
    theta = np.full((8, 8), 0.5)
    with (
        pytest.warns(
            MemoryWarning,
            match=r"map reconstruction \(64 nodes, 2 x 100 draws\) "
            r"need about 614 kB .*posterior_predictive=False",
        ),  # fmt: skip
        pytest.raises(RuntimeError, match="sampling started"),
    ):
        vonmises_map.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=100, tune=100,
                                 chains=2, until_converged=False)  # fmt: skip
    # Sampling until converged sizes the check for its budget, 3 x 100 draws per chain.
    with (
        pytest.warns(MemoryWarning, match=r"\(64 nodes, 2 x 300 draws\)"),
        pytest.raises(RuntimeError, match="sampling started"),
    ):
        vonmises_map.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=100, tune=100,
                                 chains=2)  # fmt: skip


def test_big_maps_keep_every_kth_draw_in_float32_with_matching_groups(monkeypatch):
    import arviz as az

    import pmctx
    from pmctx.vonmises import storage

    # 2 x 60 draws of a 12 x 12 map: o and theta in float32 take 138 kB; allow 40 kB (thin 4:
    # 2 x 15 kept draws, as ArviZ 1's PSIS needs at least 25 for its 5 tail draws).
    monkeypatch.setattr(storage, "PER_DRAW_BYTES", 40_000)
    rng = np.random.default_rng(0)
    theta = np.mod(0.3 * np.add.outer(np.arange(12), np.arange(12)) / 4, np.pi)
    theta = np.mod(theta + rng.vonmises(0, 8, theta.shape) / 2, np.pi)
    theta[2:4, 5:9] = np.nan
    idata = vonmises_map.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=60,
                                     tune=20, chains=2, cores=1, random_seed=1,
                                     check_convergence=False)  # fmt: skip
    post = idata.posterior
    assert post.attrs["thin"] == 4 and post.sizes["draw"] == 15
    assert post["o"].dtype == np.float32 and post["theta"].shape == (2, 15, 12, 12)
    assert post["draw"].values.tolist() == list(range(0, 60, 4))
    assert idata.sample_stats.sizes["draw"] == 60  # the sampler's statistics keep every draw
    assert idata.log_likelihood["z"].dtype == np.float32
    assert idata.log_likelihood["z"].shape == (2, 15, 144 - 8)
    assert idata.posterior_predictive["z"].shape == (2, 15, 144 - 8)
    np.testing.assert_allclose(post["theta"], np.mod(post["o"], 2 * np.pi) / 2, atol=1e-5)
    assert np.isfinite(az.loo(idata).elpd)
    assert {"theta", "smoothness", "pinwheels"} <= set(
        pmctx.summary(idata).index.str.split("[").str[0]
    )
    # The same fit keeping every draw: the kept draws are its draws 0, 4, 8, ...
    full = vonmises_map.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=60, tune=20,
                                    chains=2, cores=1, random_seed=1, check_convergence=False,
                                    store="all")  # fmt: skip
    np.testing.assert_allclose(post["o"], full.posterior["o"].values[:, ::4], atol=1e-6)


def test_maps_that_fit_in_float32_keep_every_draw_after_tuning(monkeypatch):
    from pmctx.vonmises import storage

    # o and theta of 1 x 30 draws of a 10 x 10 map: 48 kB in float64, 24 kB in float32.
    monkeypatch.setattr(storage, "PER_DRAW_BYTES", 30_000)
    theta = np.full((10, 10), 0.7)
    theta[0, :3] = np.nan
    idata = vonmises_map.reconstruct(theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=30, tune=10,
                                     chains=1, random_seed=0, check_convergence=False)  # fmt: skip
    post = idata.posterior
    assert post.attrs["thin"] == 1 and post.sizes["draw"] == 30
    assert post["o"].dtype == post["theta"].dtype == np.float32
    assert idata.log_likelihood["z"].shape == (1, 30, 97)

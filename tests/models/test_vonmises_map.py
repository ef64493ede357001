"""The orientation-map model: helpers, declaration, bad input, prior maps, reconstruction."""

import numpy as np
import pytest
from pmctx.models.vonmises_map import (
    build_model,
    default_steps,
    demo_data,
    fit,
    invariants,
    noisy_observations,
    o_to_theta,
    posterior_orientation,
    reconstruct,
    sample_prior,
    theta_to_o,
)

from pmctx.vonmises.maps import count_pinwheels, orientation_error, pinwheel_charges, smoothness


def test_theta_o_round_trip_and_pi_periodicity():
    theta = np.array([0.0, 0.4, np.pi / 2, 3.0])
    np.testing.assert_allclose(o_to_theta(theta_to_o(theta)), theta, atol=1e-12)
    # theta and theta + pi are the same orientation, hence the same doubled angle.
    np.testing.assert_allclose(theta_to_o(theta + np.pi), theta_to_o(theta), atol=1e-12)
    assert np.all(theta_to_o(theta) < np.pi)


def test_model_declaration():
    z = np.array([[0.1, np.nan, 2.0], [np.nan, -1.0, 0.5]])
    model = build_model(z, kappa=3.0, kappa_obs=2.0, rank=4)
    assert model.coords["row"] == (0, 1) and len(model.coords["col"]) == 3
    assert len(model.coords["obs"]) == 4
    assert [v.name for v in model.free_RVs] == ["o"]
    assert model.named_vars_to_dims["o"] == ("row", "col")
    assert {"mrf", "z", "theta"} <= set(model.named_vars)
    prior = build_model(shape=(3, 4), kappa=1.0, kappa_obs=1.0, rank=2)
    assert "z" not in prior.named_vars


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"z": [[0.0, np.inf]]}, "finite"),
        ({"z": [[0.0, 7.0]]}, "angles"),
        ({"z": np.zeros(3)}, "dimension"),
        ({"z": np.zeros((2, 2)), "mask": np.ones((2, 3))}, "mask must have the shape"),
        ({"z": np.zeros((2, 2)), "mask": np.full((2, 2), 2)}, "mask"),
        ({"z": [[np.nan, 0.0]], "mask": [[1, 1]]}, "NaN at nodes"),
        ({"z": np.zeros((2, 2)), "rank": 0}, "rank"),
        ({"z": np.zeros((2, 2)), "kappa": 0.0}, "kappa"),
        ({"z": np.zeros((2, 2)), "kappa": -1.0}, "kappa"),
        ({"z": np.zeros((2, 2)), "kappa_obs": 0.0}, "kappa_obs"),
        ({}, "shape"),
    ],
)
def test_bad_input_is_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_model(**kwargs)


def test_bad_input_of_the_convenience_api():
    with pytest.raises(ValueError, match="theta_obs"):
        reconstruct(np.full((2, 2), 4.0))
    with pytest.raises(ValueError, match="sampler"):
        reconstruct(np.zeros((2, 2)), sampler="nuts")
    with pytest.raises(ValueError, match="rank"):
        sample_prior((5, 5), rank=0)
    with pytest.raises(ValueError, match="kappa"):
        sample_prior((5, 5), kappa=-2.0)


def test_prior_maps_are_smooth_with_pinwheels():
    """Prior at R = 5, kappa = 5 on 50 x 50 (the seed's figure 6 setting)."""
    maps = sample_prior((50, 50), kappa=5.0, rank=5, n_sweeps=60, n_maps=3, random_seed=0)
    for o in maps:
        assert 0.8 < smoothness(o) < 0.97
        n_pos, n_neg = count_pinwheels(o_to_theta(o))
        assert 1 <= n_pos + n_neg <= 60
    rough = sample_prior((50, 50), kappa=1.0, rank=5, n_sweeps=20, random_seed=1)
    assert smoothness(rough) < smoothness(maps[0]) - 0.3


@pytest.fixture(scope="module")
def truth():
    return o_to_theta(sample_prior((16, 16), kappa=5.0, rank=5, n_sweeps=40, random_seed=3))


def test_reconstruction_error_falls_with_kappa_obs_and_beats_raw_data(truth):
    errors, raw = [], []
    for i, kappa_obs in enumerate([1.0, 4.0, 16.0]):
        observed = noisy_observations(truth, kappa_obs=kappa_obs, missing=0.3, random_seed=10 + i)
        idata = reconstruct(
            observed, kappa=5.0, kappa_obs=kappa_obs, rank=5, draws=60, tune=20, chains=1,
            random_seed=i, check_convergence=False,  # error vs kappa_obs, not convergence
        )  # fmt: skip
        mean, sd = posterior_orientation(idata)
        seen = ~np.isnan(observed)
        errors.append(orientation_error(mean, truth).mean())
        raw.append(orientation_error(observed[seen], truth[seen]).mean())
        assert errors[-1] < raw[-1]
        if kappa_obs >= 4.0:  # informative data: missing nodes are less certain
            assert sd[~seen].mean() > sd[seen].mean()
    assert errors[0] > errors[1] > errors[2]


def test_fit_reads_npz_and_writes_outputs(tmp_path, truth):
    observed = noisy_observations(truth[:6, :6], kappa_obs=4.0, missing=0.2, random_seed=0)
    path = tmp_path / "map.npz"
    np.savez(path, theta=observed, kappa=4.0, kappa_obs=4.0, rank=3)
    written = fit(path, draws=500, tune=100, chains=2, cores=1, random_seed=0,
                  out_dir=tmp_path / "out")  # fmt: skip
    names = {p.name for p in written}
    assert {"vonmises_posterior.nc", "vonmises_summary.csv", "vonmises_diagnostics.csv"} <= names
    assert all(p.exists() for p in written)
    bad = tmp_path / "bad.npz"
    np.savez(bad, angles=observed)
    with pytest.raises(ValueError, match="'theta'"):
        fit(bad, draws=5, tune=5, chains=1, random_seed=0, out_dir=tmp_path)


def test_reconstruction_is_reproducible_from_its_seed():
    theta = np.random.default_rng(0).uniform(0, np.pi, size=(4, 4))
    runs = [
        reconstruct(
            theta,
            kappa=2.0,
            kappa_obs=2.0,
            rank=3,
            draws=10,
            tune=5,
            chains=1,
            random_seed=7,
            check_convergence=False,
        )
        for _ in range(2)
    ]
    np.testing.assert_array_equal(runs[0].posterior["o"].values, runs[1].posterior["o"].values)


def test_default_steps_take_sweeps_per_draw_and_the_cluster_sampler():
    model = build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2)
    with model:
        (step,) = default_steps(model, "cluster", n_sweeps=3)
        assert type(step).__name__ == "ClusterVonMisesGibbs" and step.n_sweeps == 3
        with pytest.raises(ValueError, match="n_sweeps"):
            default_steps(model, n_sweeps=0)


@pytest.mark.parametrize(
    ("theta", "mask"),
    [(np.full((3, 3), np.nan), None), (np.full((3, 3), 0.5), np.zeros((3, 3), dtype=int))],
    ids=["all NaN", "mask all 0"],
)
def test_reconstruct_rejects_a_map_with_no_observed_node(theta, mask):
    with pytest.raises(ValueError, match="every one of its 9 nodes is missing.*sample_prior"):
        reconstruct(theta, mask=mask, draws=5, tune=5, chains=1)


@pytest.mark.slow
def test_plain_pm_sample_converges_on_the_quick_demo_data():
    """`with model: pm.sample(chains=4)` (1000 + 1000 draws) at the demo's CV kappa."""
    import pymc as pm
    from pmctx.models.vonmises_map import invariants

    from pmctx.convergence import convergence_report

    data = demo_data(24, random_seed=0)
    model = build_model(theta_to_o(data["theta_obs"]), kappa=data["kappa"], kappa_obs=2.0, rank=5)
    with model:
        idata = pm.sample(chains=4, random_seed=0, progressbar=False,
                          compute_convergence_checks=False)  # fmt: skip
    assert set(idata.sample_stats) >= {"smoothness", "log_joint"}  # the augmented step ran
    report = convergence_report(invariants(idata))
    assert report["converged"].all(), report


def test_invariants_count_pinwheels_and_smoothness_as_the_maps_module_does():
    """invariants() uses pmctx.vonmises.maps (no second pinwheel counter): the per-draw
    counts are count_pinwheels' two signs summed, and the count a plaquette-by-plaquette
    winding sum gives (the re-implementation invariants used to carry)."""
    import arviz as az

    rng = np.random.default_rng(5)
    o = np.concatenate(
        [rng.uniform(-np.pi, np.pi, (1, 6, 7, 8)),
         sample_prior((7, 8), kappa=3.0, rank=3, n_sweeps=10, n_maps=6, random_seed=1)[None]]
    )  # fmt: skip
    theta = o_to_theta(o)
    inv = invariants(az.from_dict({"posterior": {"o": o, "theta": theta}}))
    maps = theta.reshape(-1, 7, 8)
    expected = [sum(count_pinwheels(m)) for m in maps]
    assert inv["pinwheels"].values.ravel().tolist() == expected
    assert len(set(expected)) > 3 and max(expected) > 10  # maps with few and many pinwheels
    corners = [2 * theta[..., :-1, :-1], 2 * theta[..., :-1, 1:], 2 * theta[..., 1:, 1:],
               2 * theta[..., 1:, :-1]]  # fmt: skip
    wrap = lambda x: np.mod(x + np.pi, 2 * np.pi) - np.pi  # noqa: E731
    winding = sum(wrap(corners[(k + 1) % 4] - corners[k]) for k in range(4)) / (2 * np.pi)
    np.testing.assert_array_equal(pinwheel_charges(theta), np.round(winding) / 2)
    by_hand = (np.abs(np.round(winding)) > 0).sum(axis=(-2, -1))
    np.testing.assert_array_equal(inv["pinwheels"].values, by_hand)
    np.testing.assert_allclose(
        inv["smoothness"].values.ravel(), [smoothness(m) for m in o.reshape(-1, 7, 8)], rtol=1e-14
    )


def test_a_map_with_threaded_sweeps_samples_its_chains_in_parallel_processes():
    """200 x 200 nodes (threaded sweeps from 181 x 181): reconstruct sweeps the map in its own
    process before pm.sample forks the chains, which aborted every chain under GNU OpenMP
    (pmctx._numba_threads); two chains in two processes now finish."""
    rng = np.random.default_rng(3)
    theta = rng.uniform(0.0, np.pi, (200, 200))
    idata = reconstruct(
        theta, kappa=2.0, kappa_obs=3.0, rank=3, draws=2, tune=1, chains=2, cores=2,
        random_seed=1, progressbar=False, check_convergence=False,  # 2 draws: not converged
    )  # fmt: skip
    assert idata.posterior.sizes["chain"] == 2
    assert np.isfinite(idata.sample_stats["log_joint"]).all()


def test_kappa_is_a_number_or_auto_and_the_fit_records_it():
    with pytest.raises(ValueError, match='kappa must be a positive number or "auto"'):
        reconstruct(np.zeros((3, 3)), kappa="smooth")
    small = np.full((4, 4), 0.5)
    kw = dict(draws=5, tune=5, chains=1, random_seed=0, check_convergence=False,
              progressbar=False, posterior_predictive=False)  # fmt: skip
    auto = reconstruct(small, **kw)
    assert auto.posterior.attrs["kappa"] == 5.0
    assert auto.posterior.attrs["kappa_choice"].startswith("too few observed pixels")
    given = reconstruct(small, kappa=2.5, **kw)
    assert (given.posterior.attrs["kappa"], given.posterior.attrs["kappa_choice"]) == (2.5, "given")


def test_auto_kappa_scores_held_out_pixels_without_moving_the_chains_seed(monkeypatch):
    """On a map with enough pixels kappa="auto" cross-validates (its own random stream: the
    chains start where they would at the chosen kappa given by hand)."""
    import pmctx.vonmises.select as select

    calls = []
    real = select.cross_validate

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **{**kwargs, "n_sweeps": 12})

    monkeypatch.setattr(select, "cross_validate", spy)
    theta = np.random.default_rng(1).uniform(0, np.pi, (10, 10))
    kw = dict(draws=5, tune=5, chains=2, random_seed=3, check_convergence=False,
              progressbar=False, posterior_predictive=False)  # fmt: skip
    auto = reconstruct(theta, **kw)
    assert len(calls) == 1 and calls[0]["kappas"] == select.AUTO_KAPPAS
    chosen = auto.posterior.attrs["kappa"]
    assert chosen in select.AUTO_KAPPAS
    assert auto.posterior.attrs["kappa_choice"].startswith("held-out pixels")
    by_hand = reconstruct(theta, kappa=chosen, **kw)
    np.testing.assert_array_equal(auto.posterior["o"].values, by_hand.posterior["o"].values)


def test_auto_kappa_validates_before_scoring():
    theta = np.full((10, 10), 0.5)
    with pytest.raises(ValueError, match="kappa_obs"):
        reconstruct(theta, kappa_obs=-1.0, draws=5, tune=5, chains=1)
    with pytest.raises(ValueError, match="mask"):
        reconstruct(theta, mask=np.ones((3, 3)), draws=5, tune=5, chains=1)

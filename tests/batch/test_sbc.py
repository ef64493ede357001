"""Simulation-based calibration: the right posterior passes, a deliberately wrong one fails."""

from __future__ import annotations

import numpy as np
import pytest

from pmctx.batch.adapters import resolve_fit, resolve_invariants, resolve_simulate
from pmctx.batch.sbc import rank_of, run_sbc, uniformity_tests
from pmctx.batch.toy import normal_mean_fit, normal_mean_simulate


def test_rank_of_breaks_ties_uniformly():
    rng = np.random.default_rng(0)
    ranks = [rank_of(2, np.array([1, 2, 2, 2, 3]), rng) for _ in range(4000)]
    assert set(ranks) == {1, 2, 3, 4}
    np.testing.assert_allclose(np.bincount(ranks)[1:] / 4000, 0.25, atol=0.03)


def test_uniformity_tests_reject_a_peak():
    import pandas as pd

    rng = np.random.default_rng(1)
    flat = pd.DataFrame({"q": rng.integers(0, 100, 500)})
    peaked = pd.DataFrame({"q": np.clip(rng.normal(50, 10, 500), 0, 99).astype(int)})
    assert uniformity_tests(flat, 99).loc["q", "chi2_p"] > 0.01
    assert uniformity_tests(peaked, 99).loc["q", "chi2_p"] < 1e-6
    with pytest.raises(ValueError, match="divide"):
        uniformity_tests(flat, 99, bins=7)


def test_toy_sbc_passes_and_biased_sampler_fails(tmp_path):
    right = run_sbc(normal_mean_simulate, normal_mean_fit, 100, tmp_path / "right",
                    local=True, progressbar=False)  # fmt: skip
    wrong = run_sbc(normal_mean_simulate, normal_mean_fit, 100, tmp_path / "wrong",
                    fit_options={"bias": 0.3}, local=True, progressbar=False)  # fmt: skip
    assert right.tests.loc["mu", "chi2_p"] > 0.01 and right.tests.loc["mu", "ks_p"] > 0.01
    assert wrong.tests.loc["mu", "chi2_p"] < 0.001
    assert len(right.ranks) == 100
    paths = right.write(tmp_path / "right")
    assert all(p.exists() for p in paths)


def _overconfident_gum(data, *, random_seed=None, **options):
    """Laplace draws with the posterior spread halved: a wrong sampler SBC must catch."""
    idata = resolve_fit("gum")(data, random_seed=random_seed, **options)
    post = idata.posterior
    for name in list(post.data_vars):
        post[name] = post[name].mean("draw") + 0.5 * (post[name] - post[name].mean("draw"))
    return idata


@pytest.mark.slow
def test_gum_laplace_sbc_passes_and_overconfident_fails(tmp_path):
    simulate, invariants = resolve_simulate("gum"), resolve_invariants("gum")
    kwargs = dict(invariants=invariants, simulate_options={"n": 40}, local=True,
                  progressbar=False, fit_options={"draws": 200})  # fmt: skip
    right = run_sbc(simulate, resolve_fit("gum"), 100, tmp_path / "right", **kwargs)
    wrong = run_sbc(simulate, _overconfident_gum, 100, tmp_path / "wrong", **kwargs)
    # Several quantities are tested: Bonferroni over them for the passing run.
    assert right.tests["chi2_p"].min() > 0.01 / len(right.tests), right.tests
    assert wrong.tests["chi2_p"].min() < 1e-4, wrong.tests

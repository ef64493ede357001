"""Convergence report: warns on unconverged label-invariant quantities, never on converged."""

import re
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from pmctx.models import crp_conditioning as crp
from pmctx.models import ibp

import pmctx
from pmctx import ConvergenceWarning
from pmctx.conditioning import shipped_design
from pmctx.convergence import (
    check_convergence,
    convergence_report,
    draws_advice,
    element_diagnostics,
    rhat_limit,
)
from pmctx.ibp.data import visuomotor_data


def _ds(values, **attrs):
    return xr.Dataset({"q": (("chain", "draw", "e")[: np.ndim(values)], values, attrs)})


def test_diagnostics_match_arviz():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 400, 4))
    for t in range(1, 400):
        x[:, t] = 0.8 * x[:, t - 1] + 0.6 * x[:, t]
    x[:, :, 0] = np.round(x[:, :, 0])  # ties
    ds = xr.Dataset({"a": (("chain", "draw", "e"), x)})
    diag = element_diagnostics(x)
    np.testing.assert_allclose(diag["r_hat"], az.rhat(ds)["a"].values, rtol=1e-10)
    np.testing.assert_allclose(diag["ess_bulk"], az.ess(ds)["a"].values, rtol=0.01)
    # tail ESS at the 5% and 95% quantiles (Vehtari et al. 2021); ArviZ 1's default prob is
    # its stats.ci_prob (0.89), so name the quantiles
    tail = az.ess(ds, method="tail", prob=(0.05, 0.95))["a"].values
    np.testing.assert_allclose(diag["ess_tail"], tail, rtol=0.01)


def test_constant_quantities_give_no_nan_and_no_numpy_warning():
    x = np.zeros((2, 1000, 3))
    x[:, :, 1] = np.random.default_rng(0).normal(size=(2, 1000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = convergence_report(_ds(x))
        summary = pmctx.summary(_ds(x))
    assert bool(report.loc["q", "converged"]) and report.loc["q", "constant"] == 2
    assert np.isfinite(summary[["r_hat", "ess_bulk", "ess_tail"]].to_numpy()).all()


def test_chains_stuck_at_different_constants_fail():
    x = np.zeros((2, 100))
    x[1] = 1.0
    report = convergence_report(_ds(x))
    assert not report.loc["q", "converged"] and report.loc["q", "r_hat"] > 1.01


def test_circular_quantities_use_cos_and_sin_not_linear_statistics():
    rng = np.random.default_rng(1)
    # Concentrated around 0 = 2 pi: linear statistics see two far-apart clusters.
    angle = np.mod(0.2 * rng.normal(size=(4, 500)), 2 * np.pi)
    ds = _ds(angle, period=2 * np.pi)
    row = pmctx.summary(ds).loc["q"]
    assert row["kind"] == "circular"
    assert min(row["mean"], 2 * np.pi - row["mean"]) < 0.05 and row["sd"] < 0.3
    assert bool(convergence_report(ds).loc["q", "converged"])
    assert np.std(angle) > 2.0  # what a linear sd would have said


def test_warning_names_quantity_figure_and_what_to_do():
    x = np.cumsum(np.random.default_rng(2).normal(size=(2, 200)), axis=1)  # random walk
    with pytest.warns(ConvergenceWarning, match=r"q: R-hat [\d.]+ > 1.01.*Run longer"):
        check_convergence(_ds(x))


def test_short_ibp_run_warns():
    data = visuomotor_data(30, random_seed=0)
    # K_max=12 leaves room (the chains use up to 8 features with learned hyperparameters, so
    # K_max=6 would fill the truncation): only the shortness of the run is at fault here.
    with pytest.warns(ConvergenceWarning, match="n_active"):
        ibp.sample(data.F, data.X, K_max=12, draws=20, tune=5, chains=2, cores=1, random_seed=0)


def test_converged_fit_does_not_warn():
    design = shipped_design("renewal_aba", n_acquisition=3, n_extinction=3, n_test=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        idata = crp.sample_posterior(
            design, max_causes=4, draws=1000, tune=200, chains=2, cores=1, random_seed=1
        )
    assert idata.posterior.attrs["pmctx_model"] == "crp"
    summary = pmctx.summary(idata)
    assert {"n_occupied", "V[0]", "coassigned[0-1]"} <= set(summary.index)
    assert (summary["r_hat"] <= 1.01).all()


def _ar1(rng, phi, shape):
    noise = rng.normal(size=shape)
    x = noise.copy()
    for t in range(1, shape[1]):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * noise[:, t]
    return x


def test_many_stationary_elements_do_not_warn():
    # Four stationary AR(1) chains, 1000 elements with bulk ESS ~1300: the largest of 1000
    # R-hats passes 1.01 in 4 of 6 seeds, so a per-element 1.01 rule would warn on a
    # converged fit; the multiplicity-aware limit must not.
    exceeded = 0
    for seed in range(3):
        x = _ar1(np.random.default_rng(seed), 0.5, (4, 1000, 1000))
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            row = check_convergence(_ds(x)).loc["q"]
        assert row["converged"] and row["r_hat"] <= row["r_hat_limit"] < 1.03
        assert row["r_hat"] <= row["r_hat_largest"]
        exceeded += row["r_hat_largest"] > 1.01  # the largest of the 1000 R-hats
    assert exceeded >= 1  # the case the limit is for does occur


def test_one_stuck_element_among_many_still_warns():
    x = _ar1(np.random.default_rng(7), 0.5, (4, 1000, 1000))
    x[0, :, 17] += 1.0  # one chain off by one sd at one element
    with pytest.warns(ConvergenceWarning, match=r"q \(worst at \[17\]\): R-hat [\d.]+ > 1.0"):
        report = check_convergence(_ds(x))
    assert not report.loc["q", "converged"]


def test_report_r_hat_is_the_figure_the_warning_quotes():
    x = _ar1(np.random.default_rng(7), 0.5, (4, 1000, 300))
    x[0, :, 17] += 1.0
    with pytest.warns(ConvergenceWarning) as caught:
        report = check_convergence(_ds(x))
    row = report.loc["q"]
    quoted = re.search(r"R-hat ([\d.]+) > ([\d.]+)", str(caught[0].message))
    assert quoted.groups() == (f"{row['r_hat']:.4g}", f"{row['r_hat_limit']:.4g}")
    assert row["worst_element"] == "[17]" and row["r_hat"] <= row["r_hat_largest"]
    assert "r_hat_worst" not in report.columns
    scalar = convergence_report(_ds(x[:, :, 17])).loc["q"]
    assert scalar["r_hat"] == scalar["r_hat_largest"] and scalar["r_hat_limit"] == 1.01


def test_rhat_limit_is_r_hat_max_for_a_scalar_and_grows_with_elements():
    ess = np.array([400.0, 1000.0, 4000.0])
    np.testing.assert_array_equal(rhat_limit(ess, chains=4, draws=1000), 1.01)
    many = rhat_limit(ess, chains=4, draws=1000, elements=1000)
    assert np.all(many >= 1.01) and many[0] > many[1] > many[2]
    # Calibration: the scalar rule's false-alarm rate at ESS 400, and the rate at which the
    # largest of 200 stationary elements exceeds its limit, agree (chi-square law draws).
    rng = np.random.default_rng(3)
    halves, n_eff, n = 8, 400.0 / 8, 500
    x = rng.chisquare(halves - 1, size=(4000, 200))
    r = np.sqrt(1 - 1 / n + x / (halves - 1) / n_eff)
    one = np.mean(r[:, 0] > 1.01)
    limit = rhat_limit(400.0, chains=4, draws=1000, elements=200)[0]
    family = np.mean((r > limit).any(axis=1))
    assert 0.3 < one < 0.42 and abs(family - one) < 0.03  # the 1.01 rule is strict at ESS 400


def test_a_fits_report_is_computed_once_and_reused(monkeypatch):
    import arviz as az

    from pmctx import convergence

    rng = np.random.default_rng(0)
    idata = az.from_dict({"posterior": {"mu": rng.normal(size=(4, 300))}})
    check = convergence.ModelCheck("toy", invariants=lambda fit: fit.posterior)
    report = convergence.report_after_fit(idata, check)
    calls = []
    monkeypatch.setattr(convergence, "element_diagnostics", lambda *a: calls.append(a))
    assert convergence.convergence_report(idata) is report  # no recomputation
    assert convergence.convergence_report(idata, ["mu"]).equals(report.loc[["mu"]])
    assert not calls
    other = az.from_dict({"posterior": {"mu": rng.normal(size=(4, 300))}})  # not checked: computed
    with pytest.raises(TypeError):
        convergence.convergence_report(other)
    assert len(calls) == 1


def test_warning_names_the_draws_that_would_reach_the_ess_minimum():
    """AR(1) chains with phi = 0.8 have ESS about draws * (1 - phi) / (1 + phi) = draws / 9:
    4 x 400 draws give about 180 of the 400 asked, so the warning asks for about 2.2 x 1.25
    times the draws, rounded up to 500: the figure follows from the report, not a constant."""
    ds = _ds(_ar1(np.random.default_rng(5), 0.8, (4, 400)))
    report = convergence_report(ds)
    ess = float(report.loc["q", ["ess_bulk", "ess_tail"]].min())
    assert 100 < ess < 300, ess
    expected = int(np.ceil(400 * 400 / ess * 1.25 / 500) * 500)
    with pytest.warns(ConvergenceWarning, match=rf"smallest ESS \(q, {ess:.0f} of 400\).*"
                      rf"draws={expected} \(tune as many\)\. Run longer"):  # fmt: skip
        check_convergence(ds)


def test_warning_says_when_more_draws_are_not_the_remedy():
    stuck = np.repeat(np.array([[0.0], [5.0]]), 200, axis=1) + 0.01 * _ar1(
        np.random.default_rng(6), 0.99, (2, 200)
    )
    with pytest.warns(ConvergenceWarning, match=r"more than 10 times the 200 draws per chain"):
        check_convergence(_ds(stuck))
    assert (
        draws_advice(convergence_report(_ds(np.random.default_rng(7).normal(size=(4, 500))))) == ""
    )


def test_divergences_after_tuning_are_counted_and_warned_about():
    # pm.sample's own divergence message is off in pmctx's fits (compute_convergence_checks
    # is False) and nutpie prints none: the fit's report must say so, with what to do.
    from pmctx import DivergenceWarning, convergence

    rng = np.random.default_rng(0)
    diverging = np.zeros((4, 300), dtype=bool)
    idata = az.from_dict(
        {"posterior": {"mu": rng.normal(size=(4, 300))}, "sample_stats": {"diverging": diverging}}
    )
    check = convergence.ModelCheck("toy", invariants=lambda fit: fit.posterior)
    assert convergence.count_divergences(idata) == (0, 1200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        convergence.report_after_fit(idata, check)  # converged, no divergence: silent
    idata.sample_stats["diverging"][2, [5, 17, 40]] = True
    assert convergence.count_divergences(idata) == (3, 1200)
    with pytest.warns(DivergenceWarning, match=r"3 of 1200 draws .* \(0\.25 %\).*target_accept"):
        report = convergence.report_after_fit(idata, check)
    assert bool(report["converged"].all())  # R-hat and ESS alone would have passed it
    assert issubclass(DivergenceWarning, ConvergenceWarning)
    no_stats = az.from_dict({"posterior": {"mu": rng.normal(size=(4, 300))}})
    assert convergence.count_divergences(no_stats) == (0, 0)
    for wrong in (idata.posterior, {"diverging": np.zeros(3)}):
        with pytest.raises(TypeError, match="expects a fit .*, got"):
            convergence.check_divergences(wrong)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        convergence.report_after_fit(idata, check, check=False)  # no check, no warning


def test_sample_subject_warns_on_divergences(monkeypatch):
    # The CRP subject fit has no convergence report; its NUTS divergences are still reported.
    from pmctx import DivergenceWarning
    from pmctx.conditioning import posterior
    from pmctx.conditioning.recovery import recovery_design, simulate_subject

    design = recovery_design(30)
    truth = {"alpha": 1.0, "a": 0.5, "gain": 2.0, "level": 1.0, "sd": 0.5}
    data = simulate_subject(design, truth, variant="lcm", n_particles=10, rng=0)
    kwargs = dict(variant="lcm", draws=30, tune=30, chains=1, n_particles=10, random_seed=1)
    real = posterior.check_divergences
    seen = []

    def with_divergences(n):
        def check(fit, **kw):
            # The fit's own count (usually none) replaced by n: the result, not the sampler.
            fit.sample_stats["diverging"][:] = False
            fit.sample_stats["diverging"][0, :n] = True
            seen.append(n)
            return real(fit, **kw)

        return check

    monkeypatch.setattr(posterior, "check_divergences", with_divergences(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        posterior.sample_subject(data["responses"], design, **kwargs)
    monkeypatch.setattr(posterior, "check_divergences", with_divergences(2))
    with pytest.warns(DivergenceWarning, match="2 of 30 draws"):
        posterior.sample_subject(data["responses"], design, **kwargs)
    assert seen == [0, 2]

import numpy as np
import pytest

import pmctx.conditioning.behaviour as behaviour
from pmctx import PmctxWarning
from pmctx.conditioning import particle_filter, shipped_design
from pmctx.conditioning.behaviour import fit_alpha, response_evidence, simulate_responses

DESIGN = shipped_design("renewal_aba", n_acquisition=15, n_extinction=15, n_test=5)


def test_response_evidence_matches_quadrature():
    """The importance-sampled evidence agrees with brute-force 2-D quadrature."""
    V = particle_filter(DESIGN, alpha=1.0, n_particles=200, random_seed=0).V
    y = simulate_responses(V, slope=6.0, rng=1)
    log_ml, draws, pointwise = response_evidence(y, V, n_draws=4000, rng=2)
    b = np.linspace(-8, 8, 401)
    s = np.linspace(-40, 40, 801)
    B, S = np.meshgrid(b, s, indexing="ij")
    eta = B[..., None] + S[..., None] * (V - 0.5)
    ll = (y * -np.logaddexp(0, -eta) + (1 - y) * -np.logaddexp(0, eta)).sum(-1)
    lp = -0.5 * (B / 2.0) ** 2 - np.log(2.0 * np.sqrt(2 * np.pi))
    lp += -0.5 * (S / 10.0) ** 2 - np.log(10.0 * np.sqrt(2 * np.pi))
    quad = np.log(np.sum(np.exp(ll + lp)) * (b[1] - b[0]) * (s[1] - s[0]))
    assert log_ml == pytest.approx(quad, abs=0.05)
    assert pointwise.shape == (4000, len(V)) and draws.shape == (4000, 2)


def test_logistic_beats_constant_and_graded_responses_recover_alpha():
    for true_alpha in (0.01, 10.0):
        V = particle_filter(DESIGN, alpha=true_alpha, n_particles=500, random_seed=0).V
        rng = np.random.default_rng(4)
        graded = np.clip(V + rng.normal(0, 0.03, V.shape), 0, 1)
        fit = fit_alpha(
            graded,
            DESIGN,
            alphas=[0.01, 10.0],
            response_models=("logistic", "constant"),
            phi=50.0,
            n_particles=300,
            n_draws=400,
            rng=1,
        )
        assert fit.best_alpha == true_alpha
        assert (fit.log_marginal_likelihood[:, 0] > fit.log_marginal_likelihood[:, 1] + 5).all()
    table = fit.compare()
    assert table.index[0].startswith("logistic")


def test_interrupted_fit_keeps_finished_alphas(monkeypatch):
    calls = {"n": 0}
    real = behaviour.particle_filter

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(behaviour, "particle_filter", flaky)
    y = np.zeros(DESIGN.n_trials)
    with pytest.warns(PmctxWarning, match="interrupted"):
        fit = fit_alpha(y, DESIGN, alphas=[0.1, 1.0, 10.0], n_particles=20, n_draws=50, rng=0)
    assert fit.alphas.tolist() == [0.1]


@pytest.mark.parametrize(
    ("responses", "kwargs", "match"),
    [
        (np.zeros(3), {}, "one entry per trial"),
        (np.full(DESIGN.n_trials, 1.5), {}, r"\[0, 1\]"),
        (np.full(DESIGN.n_trials, np.nan), {}, "all NaN"),
        (np.full(DESIGN.n_trials, 0.5), {"kind": "binary"}, "0/1"),
        (np.zeros(DESIGN.n_trials), {"alphas": [-1.0]}, "alphas"),
        (np.zeros(DESIGN.n_trials), {"response_models": ("probit",)}, "response model"),
    ],
)
def test_bad_input(responses, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_alpha(responses, DESIGN, n_particles=10, n_draws=20, **kwargs)

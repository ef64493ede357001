"""Tests of the generic row-parallel binary-matrix Gibbs step.

The reference model is a tiny IBP-like model (N=3 trials, K=2 features, D=1 force dim, T=2
pixels): Gaussian forces F = Z A + noise and noisy-OR cues X from Z Y. Its 2**(6+4) = 1024
binary states (Z, Y) are enumerated exactly, with a hand-written numpy joint that does not go
through PyMC, so the step's conditionals and its stationary distribution under ``pm.sample``
are checked against exact probabilities, next to ``pm.BinaryGibbsMetropolis``.
"""

import arviz as az
import cloudpickle
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import logsumexp

from pmctx.steps._logp_terms import (
    ExactIntegerDot,
    TabulatedElemwise,
    exact_integer_dots,
    tabulate_discrete_elemwise,
)
from pmctx.steps.binary_gibbs import (
    TABULATE_MIN_ENTRIES,
    BinaryMatrixGibbs,
    gibbs_line_sweep,
    sample_from_log_odds,
)
from pmctx.testing import (
    assert_matches_exact,
    compare_to_exact,
    enumerate_binary_states,
)

N, K, D, T = 3, 2, 1, 2
PI = np.array([0.4, 0.3])
PHI, LAM, EPS = 0.5, 0.8, 0.1
SIGMA_N, SIGMA_A = 0.6, 1.0
A_FIXED = np.array([[1.0], [-0.7]])
F_OBS = np.array([[1.1], [0.2], [-0.6]])
X_OBS = np.array([[1, 0], [1, 1], [0, 1]])
COORDS = {"trial": range(N), "feature": range(K), "force_dim": range(D), "pixel": range(T)}
STATES = enumerate_binary_states((N * K + K * T,))


def _split(state):
    return state[: N * K].reshape(N, K), state[N * K :].reshape(K, T)


def numpy_log_joint(z, y, *, forces="fixed", cues=True):
    """log p(Z, Y, F, X) written directly in numpy (A fixed, or integrated out)."""
    logp = stats.bernoulli.logpmf(z, PI).sum() + stats.bernoulli.logpmf(y, PHI).sum()
    if forces == "fixed":
        logp += stats.norm.logpdf(F_OBS, z @ A_FIXED, SIGMA_N).sum()
    elif forces == "integrated":
        cov = SIGMA_A**2 * z @ z.T + SIGMA_N**2 * np.eye(N)
        logp += stats.multivariate_normal.logpdf(F_OBS[:, 0], np.zeros(N), cov)
    if cues:
        log_p_off = (z @ y) * np.log1p(-LAM) + np.log1p(-EPS)
        logp += np.where(X_OBS == 1, np.log(-np.expm1(log_p_off)), log_p_off).sum()
    return logp


def exact_probs(**kwargs):
    logp = np.array([numpy_log_joint(*_split(s), **kwargs) for s in STATES])
    return np.exp(logp - logsumexp(logp))


def ibp_model(*, free_a=False, cues=True, dims=True):
    """The tiny model; A fixed (default) or free with a Normal(0, SIGMA_A) prior."""

    def d(*names):
        return names if dims else None

    with pm.Model(coords=COORDS if dims else None) as model:
        z = pm.Bernoulli("Z", PI, shape=(N, K), dims=d("trial", "feature"))
        y = pm.Bernoulli("Y", PHI, shape=(K, T), dims=d("feature", "pixel"))
        a = A_FIXED
        if free_a:
            a = pm.Normal("A", 0.0, SIGMA_A, shape=(K, D), dims=d("feature", "force_dim"))
        pm.Normal("F", pt.dot(z, a), SIGMA_N, observed=F_OBS, dims=d("trial", "force_dim"))
        if cues:
            log_p_off = pt.dot(z, y) * np.log1p(-LAM) + np.log1p(-EPS)
            pm.Bernoulli("X", p=-pt.expm1(log_p_off), observed=X_OBS, dims=d("trial", "pixel"))
    return model


@pytest.fixture(scope="module")
def fixed_model():
    model = ibp_model()
    z_step = BinaryMatrixGibbs([model["Z"]], independent_axis=0, model=model, rng=1)
    y_step = BinaryMatrixGibbs([model["Y"]], independent_axis=1, model=model, rng=2)
    return model, z_step, y_step


@pytest.fixture(scope="module")
def exact_fixed():
    return exact_probs(forces="fixed", cues=True)


def _state_indices(idata):
    z = idata.posterior["Z"].values.reshape(-1, N * K)
    y = idata.posterior["Y"].values.reshape(-1, K * T)
    bits = np.concatenate([z, y], axis=1)
    return bits @ (2 ** np.arange(bits.shape[1])[::-1])  # same order as STATES


def _min_ess(idata):
    return float(az.ess(idata, var_names=["Z", "Y"]).to_dataset().to_dataarray().min())


def _assert_entry_marginals(idata, probs, *, z_score=4.5):
    # Posterior P(entry = 1) for each of the 10 binaries; standard errors from the ESS.
    exact = probs @ STATES
    idx = _state_indices(idata)
    observed = STATES[idx].mean(axis=0)
    ess = _min_ess(idata)
    se = np.sqrt(exact * (1 - exact) / ess)
    assert np.all(np.abs(observed - exact) <= z_score * se + 1e-12), (observed, exact, se)


# --- kernel ----------------------------------------------------------------------------------


def test_sample_from_log_odds_frequencies():
    rng = np.random.default_rng(0)
    log_odds = np.array([-2.0, 0.0, 1.5, 40.0, -40.0])
    draws = np.array([sample_from_log_odds(log_odds, np.log(rng.random(5))) for _ in range(20000)])
    expected = 1 / (1 + np.exp(-log_odds))
    se = np.sqrt(expected * (1 - expected) / 20000) + 1e-9
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 4.5 * se)


def test_sample_from_log_odds_rejects_nan():
    with pytest.raises(FloatingPointError, match="zero probability"):
        sample_from_log_odds(np.array([np.nan]), np.array([-1.0]))


def test_gibbs_line_sweep_counts_flips_and_updates_in_place():
    values = np.zeros((4, 3), dtype=np.int64)
    calls = []

    def ones_certain(v):  # log-odds +1000 for every entry
        calls.append(v.copy())
        return 1000.0 * v.sum(axis=1)

    n_flips = gibbs_line_sweep(values, ones_certain, np.array([2, 0]), np.full((2, 4), -1e-9))
    assert n_flips == 8 and len(calls) == 3  # one evaluation per line plus the start
    np.testing.assert_array_equal(values, [[1, 0, 1]] * 4)


def test_gibbs_line_sweep_draws_exact_conditionals():
    # Two independent units, two lines, an arbitrary joint per unit; sweeps of the kernel
    # must leave the exact distribution of each unit's pair invariant.
    table = np.log(np.array([[0.1, 0.2], [0.3, 0.4]]))  # p(v0, v1) for each unit
    per_unit = lambda v: table[v[:, 0], v[:, 1]]  # noqa: E731
    rng = np.random.default_rng(4)
    values = np.zeros((2000, 2), dtype=np.int64)
    for _ in range(30):
        order = rng.permutation(2)
        gibbs_line_sweep(values, per_unit, order, np.log(rng.random((2, 2000))))
    freq = np.bincount(values[:, 0] * 2 + values[:, 1], minlength=4) / 2000
    assert_matches_exact(values[:, 0] * 2 + values[:, 1], np.exp(table).ravel(), tv_tol=0.04)
    assert freq[0] < 0.15  # and not the uniform distribution


# --- conditionals against brute force ---------------------------------------------------------


def test_numpy_joint_equals_pymc_logp(fixed_model):
    # The hand-written joint is the reference below; it must be the model PyMC builds.
    model, _, _ = fixed_model
    logp = model.compile_logp()
    for state in STATES[::37]:
        z, y = _split(state)
        np.testing.assert_allclose(logp({"Z": z, "Y": y}), numpy_log_joint(z, y), atol=1e-7)


@pytest.mark.parametrize("which", ["Z", "Y"])
def test_conditional_log_odds_match_enumeration(fixed_model, which):
    _, z_step, y_step = fixed_model
    step = z_step if which == "Z" else y_step
    rng = np.random.default_rng(3)
    for state in STATES[rng.choice(len(STATES), size=6, replace=False)]:
        z, y = _split(state)
        point = {"Z": z, "Y": y}
        values = point[which]
        for line in range(step.n_lines):
            got = step.log_odds(point, line)
            assert got.shape == (step.n_units,)
            for unit in range(step.n_units):
                index = (unit, line) if step.independent_axis == 0 else (line, unit)
                one, zero = values.copy(), values.copy()
                one[index], zero[index] = 1, 0
                joint = [
                    numpy_log_joint(*(v if which == "Z" else z, y if which == "Z" else v))
                    for v in (one, zero)
                ]
                assert got[unit] == pytest.approx(joint[0] - joint[1], abs=1e-7)


def test_terms_and_axes_are_derived_from_dims(fixed_model):
    _, z_step, y_step = fixed_model
    assert z_step.term_axes == {"Z": 0, "F": 0, "X": 0}
    assert y_step.term_axes == {"Y": 1, "X": 1}


def test_independent_axis_is_found_automatically(fixed_model):
    model, _, _ = fixed_model
    assert BinaryMatrixGibbs([model["Z"]], model=model).independent_axis == 0
    assert BinaryMatrixGibbs([model["Y"]], model=model).independent_axis == 1


def test_axes_inferred_from_shapes_without_dims():
    model = ibp_model(dims=False)
    z_step = BinaryMatrixGibbs([model["Z"]], model=model)
    y_step = BinaryMatrixGibbs([model["Y"]], independent_axis=1, model=model)
    assert z_step.term_axes == {"Z": 0, "F": 0, "X": 0}
    assert y_step.term_axes == {"Y": 1, "X": 1}


# --- stationary distribution -------------------------------------------------------------------


def _sample(model, step, *, draws, seed, chains=1, cores=1, tune=200):
    with model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


def test_pm_sample_with_generic_steps_matches_exact(fixed_model, exact_fixed):
    # 10,000 draws (ESS about 5,000): the 99.9% quantile of the TV of 5,000 iid draws from this
    # target is 0.088, so tolerance 0.1; dropping the X likelihood moves the TV by 0.74.
    model, z_step, y_step = fixed_model
    idata = _sample(model, [z_step, y_step], draws=10_000, seed=11)
    assert_matches_exact(_state_indices(idata), exact_fixed, tv_tol=0.1, ess=_min_ess(idata))
    _assert_entry_marginals(idata, exact_fixed)
    stats_ = idata.sample_stats
    assert {"n_ones", "n_flips"} <= set(stats_.data_vars)


def test_binary_gibbs_metropolis_matches_exact_too(fixed_model, exact_fixed):
    model, _, _ = fixed_model
    step = pm.BinaryGibbsMetropolis([model["Z"], model["Y"]], model=model)
    idata = _sample(model, [step], draws=10_000, seed=12)
    assert_matches_exact(_state_indices(idata), exact_fixed, tv_tol=0.1, ess=_min_ess(idata))
    _assert_entry_marginals(idata, exact_fixed)


def test_step_without_a_likelihood_term_fails_the_comparison(fixed_model, exact_fixed):
    # A deliberately wrong sampler: its conditionals ignore the noisy-OR term for X.
    model, _, _ = fixed_model
    wrong = ibp_model(cues=False)
    z_step = BinaryMatrixGibbs([wrong["Z"]], model=wrong, rng=5)
    y_step = BinaryMatrixGibbs([wrong["Y"]], independent_axis=1, model=wrong, rng=6)
    point = model.initial_point()
    visited = []
    for _ in range(3000):
        point, _ = z_step.step(point)
        point, _ = y_step.step(point)
        visited.append(np.concatenate([point["Z"].ravel(), point["Y"].ravel()]))
    idx = np.array(visited) @ (2 ** np.arange(N * K + K * T)[::-1])
    result = compare_to_exact(idx, exact_fixed, tv_tol=0.1, ess=1500)
    assert not result.passed and result.tv > 0.5


def test_alongside_nuts_matches_exact_with_a_integrated():
    # A ~ Normal is sampled by NUTS; the binaries' exact marginal integrates A analytically.
    model = ibp_model(free_a=True)
    z_step = BinaryMatrixGibbs([model["Z"]], model=model)
    y_step = BinaryMatrixGibbs([model["Y"]], independent_axis=1, model=model)
    with model:
        nuts = pm.NUTS([model["A"]])  # C backend: its modules are shared with the tests above
    idata = _sample(model, [z_step, y_step, nuts], draws=4000, chains=2, seed=13, tune=300)
    probs = exact_probs(forces="integrated", cues=True)
    assert idata.posterior.sizes["chain"] == 2
    assert "diverging" in idata.sample_stats and "n_flips" in idata.sample_stats
    # 8,000 draws, ESS in the thousands; wrong (A-fixed) target is at TV 0.33 from this one.
    assert_matches_exact(_state_indices(idata), probs, tv_tol=0.12, ess=_min_ess(idata))
    _assert_entry_marginals(idata, probs)


def test_multiprocess_sampling_with_two_cores(fixed_model, exact_fixed):
    model, z_step, y_step = fixed_model
    restored = cloudpickle.loads(cloudpickle.dumps(z_step))
    point = model.initial_point()
    np.testing.assert_allclose(restored.log_odds(point, 1), z_step.log_odds(point, 1))
    idata = _sample(model, [z_step, y_step], draws=1500, chains=2, cores=2, seed=14, tune=50)
    assert (idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]) == (2, 1500)
    # The two chains were seeded differently by pm.sample, so they differ.
    assert not np.array_equal(idata.posterior["Z"][0], idata.posterior["Z"][1])
    result = compare_to_exact(_state_indices(idata), exact_fixed, tv_tol=0.2)
    assert result.tv < 0.2


def test_fixed_order_and_reproducibility(fixed_model):
    model, _, _ = fixed_model
    point = model.initial_point()
    runs = []
    for _ in range(2):
        step = BinaryMatrixGibbs([model["Z"]], model=model, order="fixed", rng=7)
        new_point, stats_ = step.step(point)
        runs.append(new_point["Z"])
        assert stats_[0]["n_ones"] == new_point["Z"].sum()
    np.testing.assert_array_equal(runs[0], runs[1])


# --- bad input --------------------------------------------------------------------------------


def test_rejects_non_bernoulli_variable():
    with pm.Model() as model:
        counts = pm.Poisson("counts", 2.0, shape=(3, 2))
    with pytest.raises(ValueError, match="needs a pm.Bernoulli variable"):
        BinaryMatrixGibbs([counts], model=model)


def test_rejects_variable_not_in_model(fixed_model):
    model, _, _ = fixed_model
    with pm.Model():
        other = pm.Bernoulli("other", 0.5, shape=(2, 2))
    with pytest.raises(ValueError, match="can only update free variables"):
        BinaryMatrixGibbs([other], model=model)


def test_rejects_observed_vector_and_several_variables(fixed_model):
    model, _, _ = fixed_model
    with pytest.raises(ValueError, match="exactly one matrix variable"):
        BinaryMatrixGibbs([model["Z"], model["Y"]], model=model)
    with pm.Model() as vector_model:
        v = pm.Bernoulli("v", 0.5, shape=3)
    with pytest.raises(ValueError, match="2-D matrix variable"):
        BinaryMatrixGibbs([v], model=vector_model)


def test_rejects_bad_axis_and_order(fixed_model):
    model, _, _ = fixed_model
    with pytest.raises(ValueError, match="independent_axis"):
        BinaryMatrixGibbs([model["Z"]], independent_axis=2, model=model)
    with pytest.raises(ValueError, match="order"):
        BinaryMatrixGibbs([model["Z"]], order="backwards", model=model)


def test_wrong_axis_is_detected_from_dims(fixed_model):
    # Columns of Z are not independent given Y: X's log density has no "feature" axis.
    model, _, _ = fixed_model
    with pytest.raises(ValueError, match="no 'feature' dim"):
        BinaryMatrixGibbs([model["Z"]], independent_axis=1, model=model)


def test_wrong_axis_is_detected_by_the_conditional_check():
    # Without dims and with K == T, Y's rows seem mappable by shape, but they interact in X.
    with pm.Model() as model:
        z = pm.Bernoulli("Z", 0.5, shape=(3, 2))
        y = pm.Bernoulli("Y", 0.5, shape=(2, 2))
        pm.Bernoulli("X", p=-pt.expm1(pt.dot(z, y) * np.log1p(-LAM) - 0.1), observed=X_OBS)
    with pytest.raises(ValueError, match="not conditionally independent"):
        BinaryMatrixGibbs([y], independent_axis=0, term_axes={"X": 1}, model=model, rng=0)


def test_unmappable_terms_get_clear_errors():
    with pm.Model() as model:
        z = pm.Bernoulli("Z", 0.5, shape=(3, 3))
        pm.Normal("F", z, 1.0, observed=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="Cannot tell which axis"):
        BinaryMatrixGibbs([z], model=model)
    with pytest.raises(ValueError, match="term_axes names"):
        BinaryMatrixGibbs([z], term_axes={"G": 0}, model=model)
    with pytest.raises(ValueError, match="out of range"):
        BinaryMatrixGibbs([z], term_axes={"F": 2}, model=model)
    with pm.Model() as scalar_model:
        w = pm.Bernoulli("W", 0.5, shape=(3, 2))
        pm.Potential("total", -(w.sum() ** 2))
    with pytest.raises(ValueError, match="Neither axis of 'W'.*is a scalar"):
        BinaryMatrixGibbs([w], model=scalar_model)


def test_explicit_term_axes_resolve_ambiguous_shapes():
    with pm.Model() as model:
        z = pm.Bernoulli("Z", 0.5, shape=(3, 3))
        pm.Normal("F", z.sum(axis=1), 1.0, observed=np.zeros(3))
        pm.Normal("G", z.sum(axis=1)[None, :], 1.0, observed=np.zeros((3, 3)))
    step = BinaryMatrixGibbs([z], term_axes={"G": 1}, model=model)
    assert step.term_axes == {"Z": 0, "F": 0, "G": 1}


def test_rejects_point_of_the_wrong_shape(fixed_model):
    model, z_step, _ = fixed_model
    with pytest.raises(ValueError, match=r"must have shape \(3, 2\)"):
        z_step.step({**model.initial_point(), "Z": np.zeros((2, 2), dtype=np.int64)})


@pytest.mark.parametrize("name", ["pmctx.steps.binary_gibbs"])
def test_docstring_examples_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.slow
def test_long_run_matches_exact_with_tight_tolerance(fixed_model, exact_fixed):
    # 4 chains x 25,000 draws: the 99.9% quantile of the TV of 50,000 iid draws is about 0.03.
    model, z_step, y_step = fixed_model
    idata = _sample(model, [z_step, y_step], draws=25_000, chains=4, seed=21)
    assert_matches_exact(_state_indices(idata), exact_fixed, tv_tol=0.035, ess=_min_ess(idata))
    _assert_entry_marginals(idata, exact_fixed, z_score=4.0)


def test_other_models_potentials_and_column_units():
    # Not the IBP: Poisson counts per (trial, neuron) driven by a binary mask whose columns
    # (neurons) are independent, plus a per-neuron Potential; checked against full logp.
    rng = np.random.default_rng(8)
    coords = {"state": range(3), "neuron": range(4), "trial": range(5)}
    with pm.Model(coords=coords) as model:
        mask = pm.Bernoulli("mask", 0.3, dims=("state", "neuron"))
        rate = pt.exp(0.2 + pt.dot(np.eye(3)[rng.integers(3, size=5)], mask))
        pm.Poisson("counts", rate, observed=rng.poisson(2.0, (5, 4)), dims=("trial", "neuron"))
        pm.Potential("sparsity", -0.7 * mask.sum(axis=0) ** 2, dims="neuron")
    step = BinaryMatrixGibbs([mask], model=model, rng=0)
    assert step.independent_axis == 1
    assert step.term_axes == {"mask": 1, "counts": 1, "sparsity": 0}
    logp = model.compile_logp()
    values = rng.integers(0, 2, (3, 4))
    for line in range(3):
        got = step.log_odds({"mask": values}, line)
        for unit in range(4):
            one, zero = values.copy(), values.copy()
            one[line, unit], zero[line, unit] = 1, 0
            expected = logp({"mask": one}) - logp({"mask": zero})
            assert got[unit] == pytest.approx(expected, abs=1e-9)


# --- tabulated elementwise terms ---------------------------------------------------------------


def _tabulated_nodes(fn):
    return [n for n in fn.maker.fgraph.toposort() if isinstance(n.op, TabulatedElemwise)]


def test_tabulation_gives_the_direct_values():
    # Discrete leaves of several dtypes, a scalar parameter, a float matrix that blocks
    # tabulation; small ranges use the tables, a huge range falls back to direct evaluation.
    # The two subgraphs of w (one broadcast against a constant) share one node.
    rng = np.random.default_rng(0)
    z = pt.matrix("z", dtype="int64")
    b = pt.matrix("b", dtype="bool")
    u = pt.matrix("u", dtype="uint8")
    w = pt.tensor("w", dtype="int32", shape=(None, 1))
    f = pt.matrix("f")
    s = pt.scalar("s")
    data = pt.constant(rng.integers(0, 3, (40, 30)))
    out = (
        pt.log1p(pt.exp(-0.7 * z)) * s
        + pt.switch(b, pt.log(2.0 + u), pt.expm1(-0.1 * u))
        + pt.exp(s * pt.sqrt(z + 1.0))
        + pt.sin(f * z)
    ).sum(axis=1)
    out = out + pt.exp(0.1 * w).sum(axis=1) + pt.log1p(w + data).max(axis=1)
    direct = pytensor.function([z, b, u, w, f, s], out)
    tabulated = pytensor.function([z, b, u, w, f, s], tabulate_discrete_elemwise(out))
    assert len(_tabulated_nodes(tabulated)) == 2  # (z, b, u) and (w, data)
    for high in (2, 5, 2, 10**6):
        for scale in (0.3, -1.2, 0.3):
            args = (
                rng.integers(0, high, (40, 30)),
                rng.random((40, 30)) < 0.5,
                rng.integers(3, 7, (40, 30)).astype(np.uint8),
                rng.integers(-2, high, (40, 1)).astype(np.int32),
                rng.normal(size=(40, 30)),
                np.array(scale),
            )
            np.testing.assert_allclose(tabulated(*args), direct(*args), rtol=1e-13)


def test_tabulated_step_matches_full_logp_on_a_larger_model():
    # Large enough (60 x 12 noisy-OR) for the tables to be used, unlike the 3 x 2 model.
    rng = np.random.default_rng(9)
    n, k, t = 60, 3, 12
    with pm.Model() as model:
        z = pm.Bernoulli("Z", 0.4, shape=(n, k))
        y = pm.Bernoulli("Y", PHI, shape=(k, t))
        log_p_off = pt.dot(z, y) * np.log1p(-LAM) + np.log1p(-EPS)
        pm.Bernoulli("X", logit_p=pt.log(-pt.expm1(log_p_off)) - log_p_off,
                     observed=rng.integers(0, 2, (n, t)))  # fmt: skip
    step = BinaryMatrixGibbs([z], model=model, rng=0)
    assert n * t >= TABULATE_MIN_ENTRIES and step.tabulated
    assert _tabulated_nodes(step._per_unit_fn)
    logp = model.compile_logp()
    point = {"Z": rng.integers(0, 2, (n, k)), "Y": rng.integers(0, 2, (k, t))}
    for line in range(k):
        got = step.log_odds(point, line)
        for unit in range(0, n, 3):
            one, zero = point["Z"].copy(), point["Z"].copy()
            one[unit, line], zero[unit, line] = 1, 0
            expected = logp({**point, "Z": one}) - logp({**point, "Z": zero})
            assert got[unit] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("axis", [0, 1])
def test_small_models_use_the_direct_graph_with_the_same_log_odds(monkeypatch, axis):
    # Below TABULATE_MIN_ENTRIES the table ops cost more than they save (bench_binary_gibbs):
    # the 3 x 2 model compiles the direct graph, whose log-odds equal the tabulated graph's.
    model = ibp_model(free_a=True)
    name = ("Z", "Y")[axis]
    direct = BinaryMatrixGibbs([model[name]], independent_axis=axis, model=model, rng=0)
    assert not direct.tabulated and not _tabulated_nodes(direct._per_unit_fn)
    assert not any(
        isinstance(n.op, ExactIntegerDot) for n in direct._per_unit_fn.maker.fgraph.toposort()
    )
    monkeypatch.setattr("pmctx.steps.binary_gibbs.TABULATE_MIN_ENTRIES", 0)
    tables = BinaryMatrixGibbs([model[name]], independent_axis=axis, model=model, rng=0)
    assert tables.tabulated and _tabulated_nodes(tables._per_unit_fn)
    rng = np.random.default_rng(4)
    for _ in range(5):
        point = {"Z": rng.integers(0, 2, (N, K)), "Y": rng.integers(0, 2, (K, T)),
                 "A": rng.normal(size=(K, D))}  # fmt: skip
        for line in range(direct.n_lines):
            np.testing.assert_allclose(
                direct.log_odds(point, line), tables.log_odds(point, line), rtol=1e-12, atol=1e-12
            )


def test_exact_integer_dot_is_exact_and_falls_back_for_huge_values():
    a, b = pt.matrix("a", dtype="int64"), pt.matrix("b", dtype="int64")
    fn = pytensor.function([a, b], exact_integer_dots(pt.dot(a, b)))
    assert any(isinstance(n.op, ExactIntegerDot) for n in fn.maker.fgraph.toposort())
    rng = np.random.default_rng(1)
    small = rng.integers(-5, 6, (7, 4)), rng.integers(0, 2, (4, 9))
    np.testing.assert_array_equal(fn(*small), np.dot(*small))
    # Products near 2**62 are not exact in float64: the integer product must be used.
    huge = np.full((2, 4), 2**30 + 1), np.full((4, 3), 2**30 + 3)
    np.testing.assert_array_equal(fn(*huge), np.dot(*huge))
    assert fn(*huge).dtype == np.int64

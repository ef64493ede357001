"""The sampling contract: one set of keyword arguments and defaults for every model."""

import inspect
import os

import numpy as np
import pymc as pm
import pytest
from pmctx.models import crp_conditioning, gum, ibp, vonmises_chain, vonmises_map

from pmctx.gum.api import GumModel
from pmctx.sampling import (
    SAMPLE_DEFAULTS,
    SAMPLE_KWARGS,
    check_sample_kwargs,
    dim_length,
    run_sampler,
    usable_cores,
    variable_shape,
)

ENTRY_POINTS = {
    "ibp.sample": ibp.sample,
    "ibp.fit_data": ibp.fit_data,
    "crp.sample_posterior": crp_conditioning.sample_posterior,
    "crp.fit_data": crp_conditioning.fit_data,
    "vonmises.reconstruct": vonmises_map.reconstruct,
    "vonmises.fit_data": vonmises_map.fit_data,
    "vonmises-chain.smooth": vonmises_chain.smooth,
    "vonmises-chain.fit_data": vonmises_chain.fit_data,
    "gum.GumModel.sample": GumModel.sample,
    "gum.fit_data": gum.fit_data,
}


def _contract(func):
    params = inspect.signature(func).parameters
    return {
        name: (params[name].kind, params[name].default) for name in SAMPLE_KWARGS if name in params
    }


def test_every_sample_and_fit_has_pm_sample_keywords_and_defaults():
    from pymc.sampling.mcmc import get_default_tune_steps

    pm_params = inspect.signature(pm.sample).parameters
    for name in ("draws", "cores", "random_seed", "idata_kwargs"):
        assert SAMPLE_DEFAULTS[name] == pm_params[name].default, name
    # PyMC 6: tune=None asks the step methods (default_tune_steps), none of PyMC's or pmctx's
    # sets one, so it resolves to get_default_tune_steps' fallback, pmctx's explicit default
    fallback = inspect.signature(get_default_tune_steps).parameters["default_tune_steps"].default
    assert pm_params["tune"].default in (None, SAMPLE_DEFAULTS["tune"])
    assert SAMPLE_DEFAULTS["tune"] == fallback
    expected = {name: (inspect.Parameter.KEYWORD_ONLY, d) for name, d in SAMPLE_DEFAULTS.items()}
    contracts = {label: _contract(func) for label, func in ENTRY_POINTS.items()}
    for label, contract in contracts.items():
        assert contract == expected, label
    # and against each other, in the same order
    orders = {
        label: [p for p in inspect.signature(f).parameters if p in expected]
        for label, f in ENTRY_POINTS.items()
    }
    assert len({tuple(o) for o in orders.values()}) == 1, orders


@pytest.mark.parametrize("module", [crp_conditioning, gum, ibp, vonmises_chain, vonmises_map])
def test_each_models_fit_of_a_file_is_its_specs_fit_file(module):
    """fit(path, **kwargs) forwards the sampler keywords to fit_data (checked above)."""
    assert module.fit.__self__ is module.SPEC and module.fit.__func__.__name__ == "fit_file"
    assert module.SPEC.fit is module.fit_data


@pytest.mark.parametrize("module", [crp_conditioning, gum, ibp, vonmises_chain, vonmises_map])
def test_a_model_option_never_collides_with_fit_datas_sample_kwargs(module):
    """fit_with_sampler passes the pm.sample keywords as fit_data's second argument, by
    position; an option of the same name (the map's ``sampler``) would bind to it twice."""
    inner = list(inspect.signature(module.fit_data.__wrapped__).parameters)[1]
    assert inner not in module.SPEC.options, inner


def test_the_map_sampler_option_reaches_reconstruct():
    data = {"theta": np.array([[0.2, np.nan, 0.5], [0.3, 0.4, 0.6]])}
    idata = vonmises_map.fit_data(data, sampler="cluster", rank=2, draws=4, tune=2, chains=1,
                                  progressbar=False, check_convergence=False)  # fmt: skip
    assert "jumps" not in idata.sample_stats  # the default (augmented) step records its jumps


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"chains": 0}, ValueError, "chains must be >= 1"),
        ({"draws": 0}, ValueError, "draws must be >= 1"),
        ({"tune": -1}, ValueError, "tune must be >= 0"),
        ({"cores": 0}, ValueError, "cores must be >= 1"),
        ({"draws": 2.5}, TypeError, "draws must be an integer"),
    ],
)
def test_bad_sampling_arguments_are_rejected_before_sampling(kwargs, error, match):
    with pm.Model() as model:
        pm.Normal("mu")
    with pytest.raises(error, match=match):
        run_sampler(model, **{"draws": 5, "tune": 5, "chains": 1, **kwargs})


def test_run_sampler_is_reproducible_and_quiet_off_a_terminal(capsys):
    with pm.Model() as model:
        pm.Normal("mu")
    runs = [run_sampler(model, draws=10, tune=10, chains=1, random_seed=3) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].posterior["mu"], runs[1].posterior["mu"])
    assert "━" not in capsys.readouterr().err  # no rich progress bar when not a terminal


def test_vonmises_rejects_zero_chains_with_a_clear_message():
    with pytest.raises(ValueError, match="chains must be >= 1"):
        vonmises_map.reconstruct(np.full((3, 3), 0.5), chains=0, draws=5, tune=5)


def test_default_cores_run_chains_in_parallel_on_usable_cpus(monkeypatch):
    monkeypatch.delenv("PMCTX_CORES", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert usable_cores() == 3
    assert check_sample_kwargs(draws=5, tune=0, chains=4)["cores"] == 3
    assert check_sample_kwargs(draws=5, tune=0, chains=2)["cores"] == 2
    assert check_sample_kwargs(draws=5, tune=0, chains=4, cores=1)["cores"] == 1
    monkeypatch.setenv("PMCTX_CORES", "1")
    assert check_sample_kwargs(draws=5, tune=0, chains=4)["cores"] == 1
    monkeypatch.setenv("PMCTX_CORES", "two")
    with pytest.raises(ValueError, match="PMCTX_CORES must be a positive integer.*'two'"):
        usable_cores()


def test_parallel_chains_of_a_custom_step_equal_sequential_ones():
    """cores=2 forks the chains (custom steps pickle); each chain's draws are unchanged."""
    data = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1]], dtype=float)
    kwargs = {"draws": 30, "tune": 10, "chains": 2, "random_seed": 4, "check_convergence": False}
    parallel = crp_conditioning.sample_posterior(data, cores=2, **kwargs)
    sequential = crp_conditioning.sample_posterior(data, cores=1, **kwargs)
    np.testing.assert_array_equal(parallel.posterior["z"], sequential.posterior["z"])


def test_pmctx_steps_compile_their_kernels_once_before_chains_fork(monkeypatch):
    """One throwaway step on a copy in the parent when chains fork; the step itself and its
    generator are untouched, and nothing runs for one process or one chain."""
    from pmctx.sampling import _compile_kernels_before_forking
    from pmctx.steps.vonmises import AugmentedVonMisesGibbs

    model = vonmises_map.build_model(np.full((3, 3), 0.4), kappa=1.0, rank=2)
    with model:
        step = vonmises_map.default_steps(model)
    ours = [s for s in step if isinstance(s, AugmentedVonMisesGibbs)]
    assert ours
    calls = []
    real = AugmentedVonMisesGibbs.step
    monkeypatch.setattr(
        AugmentedVonMisesGibbs, "step", lambda self, point: calls.append(self) or real(self, point)
    )
    state = ours[0].rng.bit_generator.state
    _compile_kernels_before_forking(model, step, chains=2, cores=1)
    _compile_kernels_before_forking(model, step, chains=1, cores=2)
    assert calls == []
    _compile_kernels_before_forking(model, step, chains=2, cores=2)
    assert len(calls) == 1 and calls[0] is not ours[0]
    assert ours[0].rng.bit_generator.state == state


def test_fit_with_sampler_documents_the_sampler_keywords_after_data():
    from pmctx.sampling import SAMPLER_PARAMETERS, _with_sampler_parameters, fit_with_sampler

    @fit_with_sampler
    def fit(data, sampler, formula=None, **options):
        """Fit.

        Parameters
        ----------
        data : dict
            The data.

        formula : str, optional
            A formula.
        **options
            More.

        Returns
        -------
        int
            Nothing.
        """

    lines = fit.__doc__.splitlines()
    at = lines.index(SAMPLER_PARAMETERS[0])
    assert lines[at - 2 : at] == ["data : dict", "    The data."]
    end = at + len(SAMPLER_PARAMETERS)
    assert lines[at:end] == list(SAMPLER_PARAMETERS)
    assert lines[end] == "" and lines[end + 1].startswith("formula")
    assert _with_sampler_parameters(fit.__doc__) == fit.__doc__  # entered once


def test_variable_shape_and_dim_length_agree_with_compiled_shapes():
    model = vonmises_map.build_model(np.zeros((3, 4)), kappa=2.0, kappa_obs=3.0, rank=2)
    for name in ("o", "z"):
        assert variable_shape(model, name) == tuple(int(s) for s in model[name].shape.eval())
    assert [dim_length(model, d) for d in ("row", "col")] == [3, 4]
    with pm.Model() as free:  # no dims: static type shape, then the compiled fallback
        pm.Normal("fixed", shape=(2, 5))
        n = pm.Data("n", np.zeros(3))
        pm.Normal("dynamic", shape=n.shape)
    assert variable_shape(free, "fixed") == (2, 5)
    assert variable_shape(free, "dynamic") == (3,)

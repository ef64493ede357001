"""Plain ``pm.sample()`` on pmctx models assigns pmctx's steps to the latents they own."""

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from pmctx.models import crp_conditioning, ibp, vonmises_map
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import Competence, CompoundStep

from pmctx.steps.base import PmctxStep
from pmctx.steps.crp_gibbs import CRPCollapsedGibbs
from pmctx.steps.ibp_gibbs import IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs
from pmctx.steps.registration import assigned_steps, block_tag, block_variables, register_step
from pmctx.steps.vonmises import AugmentedVonMisesGibbs, KappaObsSlice

RNG = np.random.default_rng(0)
F_IBP = RNG.normal(size=(6, 2))
X_IBP = RNG.integers(0, 2, (6, 4))
F_CRP = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 1], [np.nan, 0, 1]])  # NaN: unknown US
# Every IBP hyperparameter fixed by a number (by default all are learned, issue 10).
FIXED_HYPER = dict(alpha=1.0, sigma_n=0.5, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)
IBP_LATENTS = ["A", "Y", "Z", "pi"]
IBP_HYPER = ["eps", "lam", "phi", "sigma_A2", "sigma_n2"]


def _ibp(**kw):
    return ibp.build_model(F=F_IBP, X=X_IBP, K_max=3, **kw)


def _crp(**kw):
    return crp_conditioning.build_model(F_CRP, max_causes=3, **kw)


def _ibp_user_sigma_n():
    """A user's own prior on sigma_n (an enclosing model's variable): PyMC samples it."""
    with pm.Model() as model:
        sigma_n = pm.HalfNormal("sigma_n", 1.0)
        ibp.build_model(F=F_IBP, X=X_IBP, K_max=3, sigma_n=sigma_n)
    return model


class _OtherMapStep(AugmentedVonMisesGibbs):
    """A map sampler that is not the block's registered default (no ``owns_block``)."""

    owns_block = None


def _vonmises(kappa_obs=1.0):
    z = np.array([[0.1, np.nan, 0.4], [0.2, 0.3, np.nan]])
    return vonmises_map.build_model(z, kappa=2.0, kappa_obs=kappa_obs, rank=2)


def _sorted(table):
    return {k: sorted(v) for k, v in table.items()}


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (
            _ibp,  # defaults: every hyperparameter learned by its pmctx step, none by NUTS
            {"IBPGibbs": IBP_LATENTS, "IBPAlphaGibbs": ["alpha"], "IBPHyperGibbs": IBP_HYPER},
        ),
        (lambda: _ibp(**FIXED_HYPER), {"IBPGibbs": IBP_LATENTS}),
        (
            lambda: _ibp(alpha=2.0, sigma_n=0.3, lam=0.8),  # some fixed, the others learned
            {"IBPGibbs": IBP_LATENTS, "IBPHyperGibbs": ["eps", "phi", "sigma_A2"]},
        ),
        (
            _ibp_user_sigma_n,
            {
                "IBPGibbs": IBP_LATENTS,
                "IBPAlphaGibbs": ["alpha"],
                "IBPHyperGibbs": ["eps", "lam", "phi", "sigma_A2"],
                "NUTS": ["sigma_n"],
            },
        ),
        (
            lambda: ibp.build_model(X=X_IBP, K_max=3),  # force hyperparameters: placeholders
            {
                "IBPGibbs": ["Y", "Z", "pi"],
                "IBPAlphaGibbs": ["alpha"],
                "IBPHyperGibbs": ["eps", "lam", "phi"],
            },
        ),
        (_crp, {"CRPCollapsedGibbs": ["theta", "weights", "z"]}),
        (_vonmises, {"AugmentedVonMisesGibbs": ["o"]}),
        (
            lambda: _vonmises(kappa_obs="prior"),
            {"AugmentedVonMisesGibbs": ["o"], "KappaObsSlice": ["kappa_obs"]},
        ),
    ],
    ids=[
        "ibp",
        "ibp-fixed-hyper",
        "ibp-some-fixed",
        "ibp-user-prior",
        "ibp-cues-only",
        "crp",
        "vonmises",
        "vonmises-kappa-obs-prior",
    ],
)
def test_plain_sample_assigns_pmctx_steps(build, expected):
    assert _sorted(assigned_steps(build())) == _sorted(expected)


def test_gum_stays_with_nuts():
    from pmctx.models.gum import gum, section_3_1_formula, seed_section_3_1

    g = gum(section_3_1_formula(max_points=8), seed_section_3_1(40), family="poisson")
    assert list(assigned_steps(g.model)) == ["NUTS"]


def test_tags_mark_blocks_not_names():
    model = _ibp(alpha="prior", sigma_A=1.0)
    assert sorted(block_variables(model, "ibp")) == ["A", "Y", "Z", "pi"]
    assert block_tag(model["alpha"]).block == "ibp_alpha"
    assert sorted(block_variables(model, "ibp_hyper")) == ["eps", "lam", "phi", "sigma_n2"]
    assert block_tag(model["sigma_n"]) is None  # a deterministic of sigma_n2
    assert block_tag(model["sigma_A"]) is None  # fixed by a number: data, not a variable
    # A variable merely *named* like a pmctx latent is not claimed.
    with pm.Model() as plain:
        z = pm.Bernoulli("Z", 0.5, shape=3)
    assert IBPGibbs.competence(z, False) == Competence.INCOMPATIBLE
    assert IBPGibbs.competence(model["Z"], False) == Competence.IDEAL
    assert assigned_steps(plain) == {"BinaryGibbsMetropolis": ["Z"]}
    # Only the default sampler of a block registers; the alternatives stay explicit.
    assert _OtherMapStep.competence(_vonmises()["o"], True) == Competence.INCOMPATIBLE


@pytest.mark.slow
@pytest.mark.parametrize(
    "build",
    [_ibp, _crp, _vonmises, lambda: _vonmises(kappa_obs="prior")],
    ids=["ibp", "crp", "vonmises", "vonmises-kappa-obs-prior"],
)
def test_plain_sample_runs_and_pickles(build):
    model = build()
    with model:
        provided, selected = assign_step_methods(model, methods=STEP_METHODS)
        step = instantiate_steppers(model, provided, selected, initial_point=model.initial_point())
        if isinstance(step, list):  # several step classes: pm.sample composes them the same way
            step = CompoundStep(step)
        clone = cloudpickle.loads(cloudpickle.dumps(step))
        point = model.initial_point()
        step.setup_chain(1, tune=0, draws=1)  # what pm.sample calls before each chain
        clone.setup_chain(1, tune=0, draws=1)
        new, _ = step.step(point)
        new_clone, _ = clone.step(point)
        for key in new:
            np.testing.assert_array_equal(new[key], new_clone[key])
        idata = pm.sample(draws=5, tune=5, chains=1, progressbar=False, random_seed=0,
                          compute_convergence_checks=False)  # fmt: skip
    expected = {"ibp": "n_active", "crp": "n_occupied", "vonmises": "smoothness"}
    assert any(name in idata.sample_stats for name in expected.values())


@pytest.mark.slow
def test_explicit_steps_keep_their_variables():
    model = _ibp()
    with model:
        # new_features applies to the legacy moves only (the joint row move draws singletons)
        mine = IBPGibbs(new_features=False, moves="legacy", rng=0)
        table = assigned_steps(model, step=[mine])
        assert _sorted(table) == {
            "IBPGibbs": IBP_LATENTS,
            "IBPAlphaGibbs": ["alpha"],
            "IBPHyperGibbs": IBP_HYPER,
        }
        idata = pm.sample(draws=5, tune=5, chains=1, step=[mine], progressbar=False,
                          random_seed=0, compute_convergence_checks=False)  # fmt: skip
    assert int(idata.sample_stats["n_new_features"].sum()) == 0
    # A user may still pick the other von Mises samplers explicitly.
    model = _vonmises()
    with model:
        table = assigned_steps(model, step=[_OtherMapStep()])
    assert table == {"_OtherMapStep": ["o"]}


def test_crp_step_reads_features_and_priors_from_the_model():
    model = _crp(alpha=2.0, concentration=0.5)
    with model:
        auto = CRPCollapsedGibbs()
    np.testing.assert_array_equal(auto.features, np.nan_to_num(F_CRP, nan=-1))
    assert auto.alpha == pytest.approx(2.0)
    assert auto.eta == pytest.approx(0.5)
    assert auto.value_names[0] == "z"


def test_new_step_classes_register_by_declaring_a_block():
    try:

        class Flip(PmctxStep):
            name = "flip"
            owns_block = "test_flip_block"
            stats_dtypes_shapes = {}

            def step(self, point):
                return point, [{}]

        assert STEP_METHODS[0] is Flip
        register_step(Flip)  # idempotent
        assert sum(m is Flip for m in STEP_METHODS) == 1
        from pmctx.steps.registration import tag_block

        with pm.Model() as model:
            b = pm.Bernoulli("b", 0.5)
            pm.Normal("x")
        tag_block("test_flip_block", b=b)
        assert _sorted(assigned_steps(model)) == {"Flip": ["b"], "NUTS": ["x"]}
        with model:
            step = Flip(vars=[model.rvs_to_values[b]], initial_point={}, compile_kwargs=None)
        assert step.value_names == ["b"]
    finally:
        STEP_METHODS[:] = [m for m in STEP_METHODS if m.__name__ != "Flip"]


@pytest.mark.slow
def test_plain_sample_with_several_cores():
    model = _crp()
    with model:
        idata = pm.sample(draws=20, tune=10, chains=2, cores=2, progressbar=False,
                          random_seed=0, compute_convergence_checks=False)  # fmt: skip
    assert idata.sample_stats["n_occupied"].shape == (2, 20)


def test_alpha_step_is_assigned_only_with_its_prior():
    assert "IBPAlphaGibbs" not in assigned_steps(_ibp(alpha=1.0))
    assert IBPAlphaGibbs.competence(_ibp(alpha="prior")["alpha"], True) == Competence.IDEAL
    assert AugmentedVonMisesGibbs.competence(_ibp()["Z"], False) == Competence.INCOMPATIBLE


def test_hyper_steps_are_assigned_only_with_their_priors():
    assert "IBPHyperGibbs" not in assigned_steps(_ibp(**FIXED_HYPER))
    model = _ibp(sigma_n=0.5)
    assert IBPHyperGibbs.competence(model["sigma_A2"], True) == Competence.IDEAL
    assert IBPHyperGibbs.competence(model["alpha"], True) == Competence.INCOMPATIBLE
    assert "sigma_n2" not in model.named_vars  # a fixed sigma_n has no variance variable
    assert "KappaObsSlice" not in assigned_steps(_vonmises(kappa_obs=1.0))
    prior = _vonmises(kappa_obs="prior")
    assert KappaObsSlice.competence(prior["kappa_obs"], True) == Competence.IDEAL
    assert KappaObsSlice.competence(prior["o"], True) == Competence.INCOMPATIBLE


def test_partial_block_left_by_an_explicit_step_goes_to_pymc():
    """A user who samples part of a block (here pi) with their own step gets PyMC's own steps
    for the rest of it: the pmctx step cannot update an incomplete block."""
    model = _ibp(**FIXED_HYPER)
    with model:
        mine = pm.Slice([model["pi"]])
        provided, selected = assign_step_methods(model, [mine], methods=STEP_METHODS)
        assert [cls.__name__ for cls in selected] == ["IBPGibbs"]
        steps = instantiate_steppers(model, provided, selected, initial_point=model.initial_point())
    inner = steps[1]
    assert isinstance(inner, CompoundStep)
    names = {type(m).__name__: sorted(v.name for v in m.vars) for m in inner.methods}
    assert names == {"BinaryGibbsMetropolis": ["Y", "Z"], "NUTS": ["A"]}


@pytest.mark.parametrize("name", ["pmctx.steps.registration", "pmctx.gum.init"])
def test_docstring_examples(name):
    from pmctx.testing import assert_docstring_examples

    assert_docstring_examples(name)


def test_hyper_block_left_partial_by_an_explicit_step_stays_with_its_step():
    """IBPHyperGibbs updates each hyperparameter exactly on its own, so a user who samples one
    of them with their own step keeps IBPHyperGibbs for the others (not NUTS)."""
    model = _ibp(alpha=1.0)
    with model:
        mine = pm.Slice([model["sigma_n2"]])
        provided, selected = assign_step_methods(model, [mine], methods=STEP_METHODS)
        steps = instantiate_steppers(model, provided, selected, initial_point=model.initial_point())
    names = {type(s).__name__: sorted(v.name for v in s.vars) for s in steps}
    assert names == {
        "Slice": ["sigma_n2_log__"],
        "IBPGibbs": ["A", "Y", "Z", "pi_logodds__"],
        "IBPHyperGibbs": ["eps_logodds__", "lam_logodds__", "phi_logodds__", "sigma_A2_log__"],
    }

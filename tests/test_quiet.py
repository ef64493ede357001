"""Demo (quick) and fit print no warning: every warning is an error on these paths."""

import warnings

import numpy as np
import pytest
from pmctx.models import crp_conditioning, gum, ibp, vonmises_map

from pmctx.conditioning import shipped_design

pytestmark = pytest.mark.slow

#: Warnings raised inside third-party code that pmctx cannot remove at the cause; each says why.
THIRD_PARTY = [
    # ArviZ 0.2x's plotting calls a Matplotlib helper deprecated in Matplotlib 3.11.
    ("ignore", "Passing a dict or None as alias_mapping", DeprecationWarning),
]


def _strict():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    for action, message, category in THIRD_PARTY:
        warnings.filterwarnings(action, message=message, category=category)
    return ctx


@pytest.mark.parametrize(
    "module", [ibp, crp_conditioning, vonmises_map, gum], ids=lambda m: m.__name__
)
def test_quick_demo_is_quiet(tmp_path, module):
    ctx = _strict()
    try:
        paths = module.demo(tmp_path, quick=True, random_seed=0, cores=1)
    finally:
        ctx.__exit__(None, None, None)
    assert all(p.exists() for p in paths)
    if module is vonmises_map:  # the demo's inputs refit by `pmctx fit vonmises --data`
        from pmctx.vonmises.inputs import load_vonmises

        loaded = load_vonmises(tmp_path / "vonmises_data.npz")
        assert loaded["theta"].shape == (24, 24)
        assert loaded["options"]["kappa"] in vonmises_map.DEMO_KAPPAS


def _ibp_file(path):
    from pmctx.ibp.data import visuomotor_data

    data = visuomotor_data(40, random_seed=0)
    # K_max=10: with learned hyperparameters 40 trials can ask for more than 6 features.
    np.savez(path, F=data.F, X=data.X, K_max=10, sigma_n=0.3)


def _crp_file(path):
    design = shipped_design("renewal_aba", n_acquisition=3, n_extinction=3, n_test=1)
    np.savez(path, features=design.to_array(), feature_names=design.feature_names, max_causes=4)


def _vonmises_file(path):
    rng = np.random.default_rng(0)
    theta = np.mod(1.0 + 0.1 * rng.normal(size=(4, 4)), np.pi)
    theta[0, 0] = np.nan
    np.savez(path, theta=theta, kappa=3.0, kappa_obs=4.0, rank=3)


def _gum_file(path):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2, 60)
    np.savez(path, formula="y ~ f(x, max_points=8)", family="poisson", x=x,
             y=rng.poisson(np.exp(np.sin(x))))  # fmt: skip


@pytest.mark.parametrize(
    ("module", "write"),
    [
        (ibp, _ibp_file),
        (crp_conditioning, _crp_file),
        (vonmises_map, _vonmises_file),
        (gum, _gum_file),
    ],
    ids=["ibp", "crp", "vonmises", "gum"],
)
def test_fit_is_quiet_and_converges(tmp_path, module, write):
    path = tmp_path / "data.npz"
    write(path)
    ctx = _strict()
    try:
        paths = module.fit(path, draws=1000, tune=500, chains=2, cores=1, random_seed=0,
                           out_dir=tmp_path / "out")  # fmt: skip
    finally:
        ctx.__exit__(None, None, None)
    names = {p.name for p in paths}
    assert {n for n in names if n.endswith((".nc", "_summary.csv", "_diagnostics.csv"))}

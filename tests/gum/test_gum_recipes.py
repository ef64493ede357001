"""The whitened GUM's nutpie model stored on disk (pmctx.gum.recipes): read back, it computes
exactly what a fresh compile computes; its key follows the data and the model; a damaged file
or missing Numba code means compiling anew, never a wrong model."""

import os

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

import pmctx.gum.cached as cached
import pmctx.gum.recipes as recipes
from pmctx.gum import gum
from pmctx.gum.nuts import nutpie_model
from tests.gum.test_gum_cached import _call_expand, _call_logp


def _gum(seed=3, lengthscale=0.5):
    """conftest's ``product_gum(120)`` (its Numba code is shared with test_gum_cached)."""
    rng = np.random.default_rng(seed)
    data = {"x": rng.uniform(0, 2, 120), "z": rng.uniform(0, 2, 120)}
    data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"]) * (1 + 0.5 * data["z"])))
    formula = (
        f"y ~ f(x, lengthscale={lengthscale}, max_points=10) * f(z, lengthscale=1.0, max_points=6)"
    )
    return gum(formula, data, family="poisson")


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A GUM, its freshly compiled whitened nutpie model, and the file it was stored in."""
    directory = tmp_path_factory.mktemp("recipes")
    mp = pytest.MonkeyPatch()
    mp.setattr(recipes, "cache_dir", lambda: directory)
    g = _gum()
    key = recipes.white_key(g)
    fresh = cached.compile_cached_nutpie(g.whitened_model)
    path = recipes.store_white(key, fresh.recipe)
    yield g, key, fresh, path
    mp.undo()


def test_stored_model_computes_what_the_fresh_compile_computes(stored):
    _, key, fresh, path = stored
    assert path is not None and path.exists()
    loaded = recipes.load_white(key)
    assert loaded is not None and loaded.recipe.inners is None  # no graph was compiled
    assert loaded.cache_keys == fresh.cache_keys
    rng = np.random.default_rng(0)
    for _ in range(3):
        z = 2 * rng.normal(size=fresh.n_dim)
        (code, logp, grad), (_, want_logp, want_grad) = _call_logp(loaded, z), _call_logp(fresh, z)
        assert code == 0 and logp == want_logp
        np.testing.assert_array_equal(grad, want_grad)
        got, want = _call_expand(loaded, z)[1], _call_expand(fresh, z)[1]
        assert got.keys() == want.keys()
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
    assert loaded.dims == {k: tuple(v) for k, v in fresh.dims.items()}
    assert loaded.shape_info[0] == fresh.shape_info[0]
    assert {k: list(v) for k, v in loaded.coords.items()} == {
        k: list(v) for k, v in fresh.coords.items()
    }


def test_key_follows_data_and_model_not_the_object(stored):
    key = stored[1]
    assert recipes.white_key(_gum()) == key  # same formula and data, another GumModel
    assert recipes.white_key(_gum(seed=4)) != key
    assert recipes.white_key(_gum(lengthscale=0.6)) != key


def test_nutpie_model_reads_the_stored_model_without_building_it(stored):
    fresh = stored[2]
    g = _gum()
    target, compiled, white = nutpie_model(g, whiten=True, init_at_map=True)
    assert white and target is None and g._white is None  # the whitened model was not built
    assert compiled.cache_keys == fresh.cache_keys


def test_damaged_file_or_missing_numba_code_gives_none(stored, tmp_path, monkeypatch):
    _, key, fresh, path = stored
    monkeypatch.setattr(recipes, "cache_dir", lambda: tmp_path)
    (tmp_path / path.name).write_bytes(path.read_bytes()[:100])
    assert recipes.load_white(key) is None
    recipe = fresh.recipe
    sources = {kind: (*src[:2], src[2] + "_evicted") for kind, src in recipe.sources.items()}
    evicted = cached.Recipe(**{**vars(recipe), "sources": sources, "inners": None})
    assert recipes.store_white("evicted", evicted) is not None
    assert recipes.load_white("evicted") is None  # Numba cannot type the missing graph


def test_only_recent_and_small_recipes_are_kept(stored, tmp_path, monkeypatch):
    recipe = stored[2].recipe
    monkeypatch.setattr(recipes, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(recipes, "MAX_FILES", 2)
    for i, key in enumerate(["a", "b", "c"]):
        path = recipes.store_white(key, recipe)
        os.utime(path, (1000 + i, 1000 + i))  # stored in this order
    assert sorted(f.name for f in tmp_path.glob("white_*.npz")) == ["white_b.npz", "white_c.npz"]
    recipes.load_white("b")  # used now: "c" is the oldest
    recipes.store_white("d", recipe)
    assert sorted(f.name for f in tmp_path.glob("white_*.npz")) == ["white_b.npz", "white_d.npz"]
    monkeypatch.setattr(recipes, "MAX_BYTES", 1000)
    assert recipes.store_white("e", recipe) is None


class _NoProps(Op):
    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0]


def test_ops_without_declared_parameters_get_no_fingerprint():
    with pm.Model() as model:
        x = pm.Normal("x", shape=2)
        pm.Deterministic("y", _NoProps()(pt.as_tensor(x)))
    assert recipes.model_fingerprint(model) is None
    with pm.Model() as model:
        pm.Normal("x", shape=2)
    assert len(recipes.model_fingerprint(model)) == 64

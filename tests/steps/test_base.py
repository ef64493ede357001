import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pmctx.steps.base import PmctxStep


class FairCoin(PmctxStep):
    """Draw every entry of a Bernoulli(0.5) vector afresh: its exact conditional."""

    name = "fair_coin"
    stats_dtypes_shapes = {"n_ones": (np.int64, [])}

    def step(self, point):
        point = dict(point)
        key = self.value_names[0]
        point[key] = self.rng.integers(2, size=point[key].shape).astype(point[key].dtype)
        return point, [{"n_ones": int(point[key].sum())}]


@pytest.fixture(scope="module")
def model():
    with pm.Model() as m:
        pm.Bernoulli("b", 0.5, shape=4)
        pm.Normal("x")
    return m


def test_step_runs_beside_nuts_and_records_stats(model):
    with model:
        step = FairCoin([model["b"]])
        idata = pm.sample(
            200, tune=50, step=[step], chains=2, cores=1, random_seed=3, progressbar=False
        )
    assert "n_ones" in idata.sample_stats and "diverging" in idata.sample_stats
    np.testing.assert_array_equal(idata.sample_stats["n_ones"], idata.posterior["b"].sum("b_dim_0"))
    assert abs(float(idata.posterior["b"].mean()) - 0.5) < 0.05
    # Per-chain RNGs come from pm.sample: the two chains differ.
    assert not np.array_equal(idata.posterior["b"][0], idata.posterior["b"][1])


def test_step_pickles_and_rejects_unknown_vars(model):
    with model:
        step = FairCoin([model["b"]], rng=1)
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    assert clone.value_names == ["b"]
    point = model.initial_point()
    assert clone.step(point)[1][0]["n_ones"] == step.step(point)[1][0]["n_ones"]
    with pm.Model() as other:
        pm.Normal("z")
    with pytest.raises(ValueError, match="can only update free variables of the model"):
        FairCoin([other["z"]], model=model)
    assert FairCoin.competence(model["b"]) == 0

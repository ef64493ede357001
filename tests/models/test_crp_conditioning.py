import numpy as np
import pytest
from pmctx.models import crp_conditioning as crp

from pmctx.conditioning import shipped_design
from pmctx.conditioning.inputs import load_crp
from pmctx.io import load_idata


def test_build_model_declares_dims_and_skips_missing_entries():
    design = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2, n_test=1, probe=True)
    model = crp.build_model(design, alpha=1.0, max_causes=4)
    assert {v.name for v in model.free_RVs} == {"weights", "z", "theta"}
    assert model.named_vars_to_dims["theta"] == ("cause", "feature")
    assert list(model.coords["feature"]) == ["US", "tone", "A", "B", "C"]
    # 5 trials x 5 features, minus the probe's unknown US.
    assert len(model.coords["entry"]) == 24


@pytest.mark.parametrize(
    ("features", "kwargs", "match"),
    [
        ([[1, 0.5]], {}, "binary"),
        ([[1, np.inf]], {}, "finite"),
        ([[1, 0]], {"alpha": -1.0}, "alpha"),
        ([[1, 0]], {"max_causes": 0}, "max_causes"),
        ([[1, 0]], {"concentration": 0.0}, "concentration"),
    ],
)
def test_build_model_rejects_bad_input(features, kwargs, match):
    with pytest.raises(ValueError, match=match):
        crp.build_model(features, **kwargs)


@pytest.fixture(scope="module")
def demo_paths(tmp_path_factory):
    return crp.demo(tmp_path_factory.mktemp("crp_demo"), quick=True, random_seed=0)


def test_demo_writes_outputs(demo_paths):
    assert all(p.exists() for p in demo_paths)
    suffixes = {p.suffix for p in demo_paths}
    assert {".nc", ".csv", ".png"} <= suffixes
    idata = load_idata(next(p for p in demo_paths if p.name == "crp_posterior.nc"))
    assert list(idata.log_likelihood.data_vars) == ["trial_features"]
    assert "features" in idata.conditional_log_likelihood
    import pandas as pd

    table = pd.read_csv(next(p for p in demo_paths if p.name == "phenomena.csv"), index_col=0)
    assert table.loc["renewal_aba", "V_test"] > table.loc["renewal_abc", "V_test"] + 0.2


def test_batch_posterior_groups_aba_test_with_acquisition():
    design = shipped_design("renewal_aba", n_acquisition=4, n_extinction=4, n_test=1, probe=True)
    idata = crp.sample_posterior(
        design, alpha=1.0, max_causes=5, draws=1000, tune=200, chains=2, cores=1, random_seed=0
    )
    co = crp.coassignment(idata)
    # The probe in context A shares a cause with acquisition far more than with extinction.
    assert co[-1, :4].mean() > co[-1, 4:8].mean() + 0.5


def test_fit_reads_npz_and_csv(tmp_path):
    F = shipped_design("renewal_aab", n_acquisition=3, n_extinction=3).to_array()
    np.savez(tmp_path / "subject.npz", features=F, alpha=0.5, max_causes=4)
    paths = crp.fit(
        tmp_path / "subject.npz", draws=500, tune=100, chains=2, cores=1, random_seed=1,
        out_dir=tmp_path / "o1",
    )  # fmt: skip
    assert all(p.exists() for p in paths)
    (tmp_path / "subject.csv").write_text("US,tone,A,B\n1,1,1,0\n1,1,1,0\n0,1,1,0\n,1,0,1\n")
    loaded = load_crp(tmp_path / "subject.csv")
    features = loaded["features"]
    assert list(features["feature"].values) == ["US", "tone", "A", "B"]
    assert np.isnan(features.values[3, 0]) and loaded["options"] == {}


def test_fit_rejects_bad_files(tmp_path):
    np.savez(tmp_path / "bad.npz", X=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="features"):
        crp.fit(tmp_path / "bad.npz", draws=5, tune=5, chains=1, random_seed=0, out_dir=tmp_path)
    np.savez(tmp_path / "nonbinary.npz", features=np.full((3, 2), 0.3))
    with pytest.raises(ValueError, match="binary"):
        crp.fit(
            tmp_path / "nonbinary.npz", draws=5, tune=5, chains=1, random_seed=0, out_dir=tmp_path
        )
    (tmp_path / "x.txt").write_text("1")
    with pytest.raises(ValueError, match=r"reads .npz, .csv files"):
        crp.fit(tmp_path / "x.txt", draws=5, tune=5, chains=1, random_seed=0, out_dir=tmp_path)


def test_sample_posterior_rejects_a_us_missing_on_every_trial():
    features = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2, n_test=1).to_array()
    features = features.astype(float)
    features[:, 0] = np.nan
    with pytest.raises(ValueError, match="US .* missing .* on all 5 trials.*predict"):
        crp.sample_posterior(features, draws=5, tune=5, chains=1)


def test_empty_features_are_rejected_before_sampling():
    with pytest.raises(ValueError, match=r"features must have at least 1 trial .*check that some"):
        crp.sample_posterior(np.empty((0, 3)), draws=5, tune=5, chains=1)
    with pytest.raises(ValueError, match=r"features must have .*dimension 1 is empty"):
        crp.build_model(np.empty((4, 0)))

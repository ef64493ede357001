import numpy as np
import pytest

from pmctx.conditioning.design import (
    SHIPPED_DESIGNS,
    Design,
    Phase,
    as_feature_matrix,
    shipped_design,
)


def test_design_compiles_us_first_then_cs_then_contexts():
    design = Design(
        [
            Phase("acq", n=2, cs=["tone", "light"], us=True, context="A"),
            Phase("us_alone", n=1, cs=[], us=True, context="B"),
            Phase("probe", n=1, cs="light", us=None, context="A"),
        ]
    )
    assert design.feature_names == ["US", "tone", "light", "A", "B"]
    expected = np.array(
        [
            [1, 1, 1, 1, 0],
            [1, 1, 1, 1, 0],
            [1, 0, 0, 0, 1],
            [np.nan, 0, 1, 1, 0],
        ]
    )
    np.testing.assert_array_equal(design.to_array(), expected)
    da = design.to_dataarray()
    assert da.dims == ("trial", "feature")
    assert list(da["phase"].values) == ["acq", "acq", "us_alone", "probe"]
    assert design.phase_slices()["probe"] == slice(3, 4)


def test_partial_reinforcement_fraction_and_pattern():
    assert Phase("p", n=10, cs=["t"], us=0.3).us_values().sum() == 3
    assert Phase("p", n=4, cs=["t"], us=0.5).us_values().tolist() == [0, 1, 0, 1]
    pattern = Phase("p", n=3, cs=["t"], us=[1, None, 0]).us_values()
    np.testing.assert_array_equal(pattern, [1, np.nan, 0])


@pytest.mark.parametrize("name", SHIPPED_DESIGNS)
def test_every_shipped_design_builds(name):
    sizes = dict(n_acquisition=3, n_extinction=2, n_test=2, n_preexposure=2)
    design = shipped_design(name, **sizes)
    F, names = as_feature_matrix(design)
    assert names[0] == "US" and F.shape == (design.n_trials, len(names))
    # Test trials are non-reinforced by default: the US is observed absent ...
    test = design.phase_slices()["test"]
    assert (F[test, 0] == 0).all()
    # ... and missing data only when a probe is asked for.
    F_probe, _ = as_feature_matrix(shipped_design(name, probe=True, **sizes))
    assert (F_probe[test, 0] == -1).all()
    np.testing.assert_array_equal(F_probe[: test.start], F[: test.start])


def test_renewal_defaults_follow_the_literature_and_share_contexts():
    designs = {c: shipped_design(f"renewal_{c}") for c in ("aaa", "aab", "aba", "abc")}
    for d in designs.values():
        assert d.feature_names == ["US", "tone", "A", "B", "C"]
        assert [p.n for p in d.phases] == [15, 25, 1]
    assert shipped_design("extinction").feature_names == ["US", "tone", "A", "B", "C"]


def test_trial_times_follow_itis_and_intervals():
    design = Design(
        [
            Phase("acq", n=3, cs=["t"], context="A", iti=2.0),
            Phase("ext", n=2, cs=["t"], us=False, context="A"),
            Phase("test", n=1, cs=["t"], us=False, context="A", interval_before=50.0),
        ]
    )
    np.testing.assert_array_equal(design.trial_times(), [0, 2, 4, 5, 6, 56])
    sr = shipped_design("spontaneous_recovery", retention_interval=100.0)
    assert np.diff(sr.trial_times())[-1] == 100.0


def test_renewal_contexts():
    aba = shipped_design("renewal_aba", n_acquisition=2, n_extinction=2)
    F = aba.to_dataarray()
    assert F.sel(feature="A").values.tolist() == [1, 1, 0, 0, 1]
    abc = shipped_design("renewal_abc", n_acquisition=2, n_extinction=2)
    assert abc.feature_names == ["US", "tone", "A", "B", "C"]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Phase("x", n=-1, cs=["t"]), "at least 1"),
        (lambda: Phase("x", n=0, cs=["t"]), "at least 1"),
        (lambda: Phase("x", n=2, cs=["t"], us=1.5), r"\[0, 1\]"),
        (lambda: Phase("x", n=2, cs=["t"], us=[1]), "one entry per trial"),
        (lambda: Phase("x", n=2, cs=["t"], us=[1, 2]), "1, 0 or None"),
        (lambda: Phase("x", n=2, cs=["t", "t"]), "repeat"),
        (lambda: Phase("x", n=2, cs=["US"]), "reserved"),
        (lambda: Phase.from_dict({"name": "x", "n": 2, "contxt": "A"}), "Unknown phase field"),
        (lambda: Design([]), "at least one phase"),
        (lambda: Design([Phase("a", n=1), Phase("a", n=1)]), "unique"),
        (lambda: Design([Phase("a", n=1, cs=["A"]), Phase("b", n=1, context="A")]), "both"),
        (lambda: shipped_design("renewal_xyz"), "must be one of"),
        (lambda: Phase("x", n=2, iti=-1.0), "time interval"),
        (lambda: Phase("x", n=2, interval_before=np.inf), "time interval"),
        (lambda: shipped_design("spontaneous_recovery", retention_interval=0), "retention"),
    ],
)
def test_bad_designs_raise_clear_errors(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_phase_type_errors():
    with pytest.raises(TypeError, match="integer"):
        Phase("x", n=2.5)
    with pytest.raises(TypeError, match="CS names"):
        Phase("x", n=1, cs=[3])


@pytest.mark.parametrize(
    ("features", "match"),
    [
        ([[1, 2]], "binary"),
        ([[1, np.inf]], "finite"),
        ([[1, np.nan]], "only in the US column"),
        ([1, 0], "2-dimensional"),
        (np.zeros((0, 2)), r"at least 1 trial \(one per row\), got no rows"),
        (np.zeros((3, 0)), "dimension 1 is empty"),
    ],
)
def test_bad_feature_matrices(features, match):
    with pytest.raises(ValueError, match=match):
        as_feature_matrix(features)

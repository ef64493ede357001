import numpy as np
import pytest

from pmctx import validation as v


def test_float_array_accepts_lists_and_checks_shape():
    out = v.as_float_array([[1, 2], [3, 4]], "F", ndim=2, shape=(None, 2))
    assert out.dtype == np.float64
    with pytest.raises(ValueError, match=r"F must be 2-dimensional, got 1 dimensions"):
        v.as_float_array([1, 2], "F", ndim=2)
    with pytest.raises(ValueError, match=r"F must have shape \(any, 3\), got shape \(2, 2\)"):
        v.as_float_array([[1, 2], [3, 4]], "F", shape=(None, 3))


def test_float_array_rejects_nan_and_inf_with_location():
    with pytest.raises(ValueError, match=r"F must be finite, got 1 NaN or infinite .*index \(1,\)"):
        v.as_float_array([0.0, np.nan], "F")
    assert np.isnan(v.as_float_array([0.0, np.nan], "F", allow_nan=True)[1])
    with pytest.raises(ValueError, match="infinite"):
        v.as_float_array([0.0, np.inf], "F", allow_nan=True)


def test_non_numeric_input_is_a_type_error():
    with pytest.raises(TypeError, match="must hold real numbers, got dtype <U1"):
        v.as_float_array(["a", "b"], "F")
    with pytest.raises(TypeError, match="got a string"):
        v.as_float_array("abc", "F")
    with pytest.raises(ValueError, match="rectangular"):
        v.as_float_array([[1, 2], [3]], "F")


def test_binary_array():
    assert v.as_binary_array([True, False], "X").tolist() == [1, 0]
    with pytest.raises(
        ValueError, match=r"X must be binary \(0/1\), got 1 other value\(s\) such as \[2\]"
    ):
        v.as_binary_array([0, 1, 2], "X")
    with pytest.raises(ValueError, match="X must be finite"):
        v.as_binary_array([0, np.nan], "X")


def test_count_array():
    assert v.as_count_array([0, 2.0], "y").tolist() == [0, 2]
    with pytest.raises(ValueError, match="non-negative counts, got minimum -1"):
        v.as_count_array([0, -1], "y")
    with pytest.raises(ValueError, match="integer counts"):
        v.as_count_array([0.5], "y")


def test_angle_array():
    assert v.as_angle_array([0, 1], "o").shape == (2,)
    with pytest.raises(
        ValueError, match=r"theta must hold angles in radians within \[0, 3.14159\]"
    ):
        v.as_angle_array([0, 4], "theta", low=0, high=np.pi)


def test_scalars():
    assert v.check_positive(2, "sigma") == 2.0
    with pytest.raises(ValueError, match=r"sigma must be positive \(> 0\), got -1.0"):
        v.check_positive(-1, "sigma")
    assert v.check_positive(0, "alpha", allow_zero=True) == 0.0
    with pytest.raises(TypeError, match="sigma must be a real number"):
        v.check_positive("1", "sigma")
    with pytest.raises(ValueError, match="must be finite"):
        v.check_positive(np.nan, "sigma")
    assert v.check_probability(0.3, "eps") == 0.3
    with pytest.raises(
        ValueError, match=r"eps must be a probability in the open interval \(0, 1\), got 1.0"
    ):
        v.check_probability(1, "eps")
    assert v.check_probability(1, "eps", closed=True) == 1.0
    assert v.check_int(3.0, "K") == 3
    with pytest.raises(ValueError, match="K must be >= 1, got 0"):
        v.check_int(0, "K", minimum=1)
    with pytest.raises(TypeError, match="K must be an integer"):
        v.check_int(2.5, "K")
    with pytest.raises(TypeError, match="K must be an integer"):
        v.check_int(True, "K")
    assert v.check_int_or_auto("auto", "K", minimum=1) is None
    assert v.check_int_or_auto(3, "K", minimum=1) == 3
    with pytest.raises(ValueError, match="K must be 'auto' or an integer >= 1, got 'many'"):
        v.check_int_or_auto("many", "K", minimum=1)
    with pytest.raises(ValueError, match="K must be >= 1, got 0"):
        v.check_int_or_auto(0, "K", minimum=1)


def test_same_length_choice_and_rng():
    assert v.check_same_length(F=np.zeros((3, 2)), X=np.zeros((3, 1))) == 3
    with pytest.raises(ValueError, match="same number of rows.*F has 3, X has 4"):
        v.check_same_length(F=np.zeros((3, 2)), X=np.zeros((4, 1)))
    with pytest.raises(ValueError, match=r"family must be one of \['a', 'b'\], got 'c'"):
        v.check_choice("c", "family", ["a", "b"])
    assert v.as_rng(1).integers(1000) == v.as_rng(1).integers(1000)
    rng = np.random.default_rng(0)
    assert v.as_rng(rng) is rng
    with pytest.raises(TypeError, match="seed must be None"):
        v.as_rng("x")
    with pytest.raises(ValueError, match="non-negative"):
        v.as_rng(-1)


def test_nonempty_rejects_empty_data_with_what_arrived_and_a_fix():
    assert v.check_nonempty(np.zeros((3, 2)), "F", unit="trial").shape == (3, 2)
    with pytest.raises(
        ValueError,
        match=r"F must have at least 1 trial \(one per row\), got no rows \(it is empty\): an "
        r"array of shape \(0, 2\).*check that some rows are left",
    ):
        v.check_nonempty(np.empty((0, 2)), "F", unit="trial")
    with pytest.raises(
        ValueError, match=r"y must have at least 2 samples \(one per entry\), got 1: .*Pass 2 or"
    ):
        v.check_nonempty([0.5], "y", minimum=2, unit="sample")
    with pytest.raises(ValueError, match=r"shape \(4, 0\).*dimension 1 is empty, e.g. no columns"):
        v.check_nonempty(np.zeros((4, 0)), "X")
    with pytest.raises(ValueError, match="y must be an array with one entry per sample, got a "):
        v.check_nonempty(3.0, "y", unit="sample")


def test_text_says_numbers_were_expected():
    with pytest.raises(
        TypeError,
        match=r"responses must hold real numbers, got dtype <U1 with text such as 'a'; numeric "
        r"values were expected\. Convert the values to numbers first \(e\.g\. pandas\.to_numeric",
    ):
        v.as_float_array(["a"] * 6, "responses")
    with pytest.raises(TypeError, match="got dtype object with text such as 'b'"):
        v.as_float_array(np.array([1.0, "b"], dtype=object), "x")


def test_messages_read_as_sentences():
    with pytest.raises(ValueError, match=r"got -1.0\. Pass a positive number\.$"):
        v.check_positive(-1, "sigma")
    with pytest.raises(ValueError, match=r"non-negative \(>= 0\), got -1.0\. Pass a non-negative"):
        v.check_positive(-1, "alpha", allow_zero=True)
    with pytest.raises(ValueError, match=r"e\.g\. np\.mod\(theta_obs, np\.pi\); degrees"):
        v.as_angle_array([4.0], "theta_obs", low=0.0, high=np.pi)
    with pytest.raises(ValueError, match=r"np\.mod\(z \+ np\.pi, 2 \* np\.pi\) - np\.pi;"):
        v.as_angle_array([4.0], "z")
    with pytest.raises(ValueError, match=r"np\.mod\(a - 1, 2\) \+ 1;"):
        v.as_angle_array([4.0], "a", low=1.0, high=3.0)

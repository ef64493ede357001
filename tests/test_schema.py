"""Bad input for every model, through the Python API and the CLI: a clear error, exit 2."""

import numpy as np
import pytest

from pmctx import cli
from pmctx.registry import get_spec

GOOD_F = "F0,F1,X0\n0.1,0.2,1\n0.3,0.1,0\n0.2,0.2,1\n"


def _npz(**arrays):
    def write(path):
        np.savez(path, **arrays)

    return write


def _text(content):
    def write(path):
        path.write_text(content)

    return write


def _bytes(content):
    def write(path):
        path.write_bytes(content)

    return write


FORMULA = "y ~ f(x, max_points=8)"
X = np.linspace(0, 1, 10)

#: (model, file name, writer, error type, message pattern): the bad-input table.
CASES = [
    # ibp
    (
        "ibp",
        "d.csv",
        _text("F0,feedback\n1,2\n3,4\n"),
        ValueError,
        r"unknown column\(s\) \['feedback'\]",
    ),
    ("ibp", "d.csv", _text("f0,f1\n1,2\n3,4\n"), ValueError, "unknown column.*F0, F1"),
    ("ibp", "d.csv", _text("F0,F0\n1,2\n3,4\n"), ValueError, r"duplicated column\(s\) \['F0'\]"),
    ("ibp", "d.csv", _text("F0,F2\n1,2\n3,4\n"), ValueError, "numbered F0..F1 without gaps"),
    ("ibp", "d.csv", _text("F0,F1\n"), ValueError, "has 0 trials"),
    ("ibp", "d.csv", _text("F0,F1\n1,2\n"), ValueError, "has 1 trials; at least 2"),
    ("ibp", "d.csv", _text("F0,F1\n1,abc\n3,4\n"), TypeError, "'F1' must hold numbers.*'abc'"),
    ("ibp", "d.csv", _text("F0,F1\n1,inf\n3,4\n"), ValueError, "must be finite"),
    ("ibp", "d.csv", _text("F0,X0\n1,\n3,\n"), ValueError, "must be finite"),
    ("ibp", "d.csv", _text("F0,X0\n1,0.5\n3,1\n"), ValueError, "binary"),
    ("ibp", "d.csv", _text(""), ValueError, "is empty"),
    ("ibp", "d.npz", _bytes(b""), ValueError, "is empty"),
    ("ibp", "d.npz", _text("F0\n1\n"), ValueError, "not a NumPy .npz archive"),
    ("ibp", "d.npz", _npz(forces=np.ones((3, 2))), ValueError, r"unknown array\(s\) \['forces'\]"),
    ("ibp", "d.npz", _npz(x=np.ones((3, 2))), ValueError, "'x' -> 'X'"),
    ("ibp", "d.npz", _npz(F=np.array([["a", "b"], ["c", "d"]])), TypeError, "'F' must be numeric"),
    ("ibp", "d.npz", _npz(F=np.full((3, 2), np.nan)), ValueError, "NaN or infinite"),
    ("ibp", "d.npz", _npz(F=np.ones((0, 2))), ValueError, "has 0 trials"),
    (
        "ibp",
        "d.npz",
        _npz(F=np.ones((3, 2)), K_max=np.ones(2)),
        ValueError,
        "'K_max' must be a single",
    ),
    ("ibp", "d.npz", _npz(K_max=5), ValueError, "holds no 'F' or 'X'"),
    ("ibp", "d.txt", _text("1,2\n"), ValueError, r"reads .npz, .csv, .nc files, got 'd.txt'"),
    ("ibp", "d.nc", _text("not netcdf"), ValueError, "not an InferenceData NetCDF"),
    # crp
    ("crp", "d.csv", _text("tone,A\n1,1\n0,1\n"), ValueError, "no 'US' column.*by name"),
    ("crp", "d.csv", _text("US,tone,tone\n1,1,1\n0,1,1\n"), ValueError, "duplicated column"),
    ("crp", "d.csv", _text("US,tone\n"), ValueError, "has 0 trials"),
    ("crp", "d.csv", _text("US,tone\n1,1\n"), ValueError, "has 1 trials"),
    ("crp", "d.csv", _text("US,tone\n1,yes\n0,1\n"), TypeError, "'tone' must hold numbers"),
    ("crp", "d.csv", _text("US,tone\n1,inf\n0,1\n"), ValueError, "finite"),
    ("crp", "d.csv", _text("US,tone\n,1\n,1\n"), ValueError, "US is missing on every trial"),
    ("crp", "d.csv", _text("US,tone\n1,0.5\n0,1\n"), ValueError, "binary"),
    ("crp", "d.csv", _text("US\n1\n0\n"), ValueError, "only the US"),
    ("crp", "d.npz", _npz(feature=np.ones((3, 2))), ValueError, "'feature' -> 'features'"),
    (
        "crp",
        "d.npz",
        _npz(features=np.ones((3, 2)), feature_names=np.array(["a", "b"])),
        ValueError,
        "no 'US' column",
    ),
    ("crp", "d.nc", _text("x"), ValueError, r"reads .npz, .csv files"),
    # vonmises
    (
        "vonmises",
        "d.csv",
        _text("a,b,c\n0.1,0.2,0.3\n0.4,0.5,0.6\n"),
        ValueError,
        "line 1 holds a header row",
    ),
    ("vonmises", "d.csv", _text("0.1,0.2\n0.4\n"), ValueError, "rows of different lengths"),
    ("vonmises", "d.csv", _text(",\n,\n"), ValueError, "every node is missing"),
    ("vonmises", "d.csv", _text("0.1,0.2,0.3\n"), ValueError, "at least 2 x 2"),
    ("vonmises", "d.csv", _text("0.1,0.2\n0.3,inf\n"), ValueError, "finite"),
    ("vonmises", "d.csv", _text("0.1,0.2\n0.3,abc\n"), ValueError, "line 2 holds text"),
    ("vonmises", "d.csv", _text("0.1,0.2\n0.3,5\n"), ValueError, r"within \[0, 3.14159\]"),
    ("vonmises", "d.csv", _bytes(b""), ValueError, "is empty"),
    ("vonmises", "d.npz", _npz(thetas=np.ones((3, 3))), ValueError, "'thetas' -> 'theta'"),
    ("vonmises", "d.npz", _npz(theta=np.array([["a"]])), TypeError, "'theta' must be numeric"),
    ("vonmises", "d.npz", _npz(theta=np.full((3, 3), np.nan)), ValueError, "every node is missing"),
    # gum
    ("gum", "d.npz", _npz(x=X, y=X), ValueError, "without a formula.*--set formula"),
    (
        "gum",
        "d.npz",
        _npz(formula=FORMULA, x=X, y=X, z=X),
        ValueError,
        r"not in the formula \['z'\]",
    ),
    ("gum", "d.npz", _npz(formula=FORMULA, y=X), ValueError, r"lacks column\(s\) \['x'\]"),
    ("gum", "d.npz", _npz(formula=FORMULA, x=X[:0], y=X[:0]), ValueError, "has 0 observations"),
    ("gum", "d.npz", _npz(formula=FORMULA, x=X[:1], y=X[:1]), ValueError, "has 1 observations"),
    ("gum", "d.npz", _npz(formula=FORMULA, x=X, y=X.astype(str)), TypeError, "'y' must be numeric"),
    (
        "gum",
        "d.npz",
        _npz(formula=FORMULA, x=X, y=np.full(10, np.nan)),
        ValueError,
        "missing everywhere",
    ),
    ("gum", "d.npz", _npz(formula=FORMULA, x=X, y=np.r_[np.inf, X[1:]]), ValueError, "finite"),
    ("gum", "d.csv", _text("x,y\n0.1,abc\n0.2,1\n"), TypeError, "'y' must hold numbers"),
    ("gum", "d.csv", _text("x,y,y\n0.1,1,1\n0.2,1,1\n"), ValueError, "duplicated column"),
]


def _case_id(case):
    return f"{case[0]}-{case[1]}-{case[4][:30]}"


def _make(tmp_path, case):
    model, name, write, *_ = case
    path = tmp_path / name
    write(path)
    if model == "gum" and name.endswith(".csv"):
        path.with_suffix(".formula").write_text(FORMULA + "\ngaussian\n")
    return path


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_api_rejects_bad_input(tmp_path, case):
    model, _, _, error, match = case
    path = _make(tmp_path, case)
    with pytest.raises(error, match=match):
        data = get_spec(model).load(path)
        # Some values are checked by the model itself, at the same boundary.
        options = data.pop("options")
        get_spec(model).fit(data, draws=5, tune=5, chains=1, **options)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_cli_prints_one_line_and_exits_2_writing_nothing(tmp_path, capsys, case):
    model = case[0]
    path = _make(tmp_path, case)
    out = tmp_path / "out"
    assert cli.main(["fit", model, "--data", str(path), "--out", str(out), "--draws", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("pmctx fit: ")
    assert not out.exists()


def test_out_naming_a_file_is_rejected_before_any_work(tmp_path, capsys):
    out = tmp_path / "taken"
    out.write_text("")
    data = tmp_path / "d.csv"
    data.write_text(GOOD_F)
    assert cli.main(["fit", "ibp", "--data", str(data), "--out", str(out)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_unknown_model_option_is_rejected(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text(GOOD_F)
    assert cli.main(["fit", "ibp", "--data", str(data), "--set", "Kmax=20"]) == 2
    assert "Unknown option(s) ['Kmax']" in capsys.readouterr().err


def test_good_files_load_by_name(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("tone,US,A\n1,1,1\n1,,1\n0,0,1\n")
    features = get_spec("crp").load(path)["features"]
    assert list(features["feature"].values) == ["US", "tone", "A"]
    assert np.isnan(features.values[1, 0]) and features.values[0, 0] == 1
    path.write_text(GOOD_F)
    data = get_spec("ibp").load(path)
    assert data["F"].shape == (3, 2) and data["X"].shape == (3, 1)
    path.write_text("0.1,,0.3\n0.4,0.5,0.6\n")
    theta = get_spec("vonmises").load(path)["theta"]
    assert theta.shape == (2, 3) and np.isnan(theta[0, 1])


def test_nc_input_reads_observed_data(tmp_path):
    from pmctx.io import to_inference_data

    F = np.random.default_rng(0).normal(size=(4, 2))
    idata = to_inference_data(
        {"mu": np.zeros((1, 3))}, observed_data={"F": F}, dims={"F": ["trial", "force_dim"]}
    )
    idata.to_netcdf(str(tmp_path / "d.nc"))
    np.testing.assert_array_equal(get_spec("ibp").load(tmp_path / "d.nc")["F"], F)

import subprocess
import sys

import pytest
from pmctx.models import MODEL_MODULES

from pmctx import cli


def test_help_lists_models_and_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in MODEL_MODULES:
        assert name in out
    for sub in (["demo", "--help"], ["fit", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(sub)
        text = capsys.readouterr().out
        assert "--out" in text and "ibp" in text
    assert "--draws" in text and "--data" in text


def test_available_models_reports_each_model():
    status = cli.available_models()
    assert set(status) == set(MODEL_MODULES)
    assert all(set(s) == {"demo", "fit"} for s in status.values())


def test_demo_reports_unknown_model(capsys):
    assert cli.main(["demo", "nope"]) == 2
    assert "Unknown model" in capsys.readouterr().err


def test_fit_rejects_missing_file_and_bad_options(tmp_path, capsys):
    name = next(iter(MODEL_MODULES))
    if not cli.available_models()[name]["fit"]:
        pytest.skip(f"{name} has no fit yet")
    assert cli.main(["fit", name, "--data", str(tmp_path / "missing.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    data = tmp_path / "d.npz"
    data.write_bytes(b"")
    assert cli.main(["fit", name, "--data", str(data), "--draws", "0"]) == 2
    assert "--draws must be at least 1" in capsys.readouterr().err


def test_console_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "pmctx", "--help"], capture_output=True, text=True, check=True
    )
    assert "demo" in result.stdout and "fit" in result.stdout

"""``models/`` must be importable as ``pmctx.models`` from a regular (non-editable) wheel."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
        ],
        check=True,
        cwd=out,
    )
    (path,) = out.glob("pmctx-*.whl")
    return path


def test_wheel_contains_models_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "pmctx/models/__init__.py" in names
    expected = {f"pmctx/models/{p.name}" for p in (ROOT / "models").glob("*.py")}
    assert expected <= set(names)
    assert not any(n.startswith("models/") for n in names)


def test_wheel_ships_the_license(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    licenses = [n for n in names if ".dist-info/" in n and Path(n).name == "LICENSE"]
    assert licenses, f"no LICENSE in the wheel's dist-info: {names}"
    text = zipfile.ZipFile(wheel).read(licenses[0]).decode()
    assert text.startswith("MIT License")


def test_pmctx_models_imports_from_installed_wheel(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import pmctx, pmctx.models, pmctx.cli, pmctx.registry; "
        "print(pmctx.__file__); print(pmctx.models.__file__); "
        "print(pmctx.registry.model_names()); "
        "print(pmctx.registry.get_spec('ibp').module)"
    )
    # A path entry on PYTHONPATH is searched before the editable install's finder.
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith(str(site)) and lines[1].startswith(str(site / "pmctx" / "models"))
    assert lines[2] == str(["crp", "gum", "ibp", "vonmises", "vonmises-chain"])
    assert lines[3] == "pmctx.models.ibp"

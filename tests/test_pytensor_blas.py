"""PyTensor links SciPy's bundled OpenBLAS when it finds no BLAS (pmctx._pytensor_blas)."""

import os
import subprocess
import sys
import warnings

import pytest

from pmctx import _pytensor_blas

NO_BLAS_WARNING = "could not link to a BLAS"

# A fresh process (compile dir of its own): pmctx first or PyTensor first, then a matrix-vector
# product compiled by the C backend. Prints the flags PyTensor settled on and the BLAS op used.
CHECK = """
import warnings
warnings.simplefilter("always")
{imports}
import numpy as np
import pytensor
import pytensor.tensor as pt

a, x = pt.dmatrix("a"), pt.dvector("x")
fn = pytensor.function([a, x], pt.dot(a, x), mode="FAST_RUN")
rng = np.random.default_rng(0)
A, v = rng.normal(size=(7, 5)), rng.normal(size=5)
np.testing.assert_allclose(fn(A, v), A @ v, rtol=1e-13)
print("FLAGS", pytensor.config.blas__ldflags)
print("OPS", [type(node.op).__name__ for node in fn.maker.fgraph.toposort()])
"""


def _run(compiledir, imports="import pmctx", **env_extra):
    env = {
        **os.environ,
        "PYTENSOR_FLAGS": f"base_compiledir={compiledir}",
        "PMCTX_SCIPY_BLAS": "1",
        **env_extra,
    }
    code = CHECK.format(imports=imports)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    flags = next(line for line in result.stdout.splitlines() if line.startswith("FLAGS"))
    ops = next(line for line in result.stdout.splitlines() if line.startswith("OPS"))
    return flags[len("FLAGS ") :], ops, result.stderr


@pytest.fixture(scope="module")
def compiledir(tmp_path_factory):
    """One fresh PyTensor compile dir for the module (each new one compiles PyTensor's own
    C helpers first, a few seconds)."""
    return tmp_path_factory.mktemp("pytensor")


needs_scipy_openblas = pytest.mark.skipif(
    _pytensor_blas.scipy_openblas_library() is None,
    reason="SciPy's wheel ships OpenBLAS on Linux only",
)


@needs_scipy_openblas
@pytest.mark.parametrize("imports", ["import pmctx", "import pytensor\nimport pmctx"])
def test_c_backend_links_scipys_openblas_without_a_warning(compiledir, imports):
    flags, ops, stderr = _run(compiledir, imports)
    if "scipy_openblas" not in flags:  # the machine has a BLAS of its own: PyTensor keeps it
        assert flags, stderr
        return
    assert "-Ddgemm_=scipy_dgemm_" in flags and "-Ddgemv_=scipy_dgemv_" in flags
    assert "CGemv" in ops, ops  # the product runs in C through BLAS, not a Python call
    assert NO_BLAS_WARNING not in stderr
    assert list(compiledir.glob(f"compiledir_*/{_pytensor_blas._VERIFIED_NAME}"))  # probed once
    again, _, stderr = _run(compiledir, imports)  # the next process reads the verified flags
    assert again == flags and NO_BLAS_WARNING not in stderr


@needs_scipy_openblas
def test_a_value_the_user_set_and_the_switch_are_respected(compiledir):
    flags, ops, _ = _run(compiledir, PYTENSOR_FLAGS=f"base_compiledir={compiledir},blas__ldflags=")
    assert flags == "" and "CGemv" not in ops
    flags, _, stderr = _run(compiledir, PMCTX_SCIPY_BLAS="0")
    assert "scipy_openblas" not in flags
    if not flags:  # PyTensor found nothing either: its own warning is shown, as without pmctx
        assert NO_BLAS_WARNING in stderr


def test_a_failing_probe_keeps_pytensors_empty_default_and_its_warning(monkeypatch):
    def pytensor_default():
        warnings.warn("PyTensor could not link to a BLAS installation.", UserWarning, stacklevel=2)
        return ""

    monkeypatch.setattr(_pytensor_blas, "scipy_openblas_flags", lambda: "-lpmctx_no_such_blas")
    with pytest.warns(UserWarning, match=NO_BLAS_WARNING):
        assert _pytensor_blas._with_fallback(pytensor_default)() == ""


def test_a_blas_pytensor_found_itself_is_kept(monkeypatch):
    monkeypatch.setattr(_pytensor_blas, "scipy_openblas_flags", lambda: pytest.fail("asked"))
    assert _pytensor_blas._with_fallback(lambda: "-lmkl_rt")() == "-lmkl_rt"

"""PyTensor's C modules compile with a precompiled Python.h (pmctx._pytensor_pch)."""

import os
import subprocess
import sys

import pytest

from pmctx import _pytensor_pch

# A fresh process and compile dir: three elemwise graphs (three modules of one flag set), then
# a module that compiles only where the precompiled header was used.
CHECK = """
import pmctx
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.link.c.cmodule import GCC_compiler

x, v = pt.dvector("x"), np.arange(3.0)
for k in range(1, 4):
    fn = pytensor.function([x], pt.exp(x) * k + pt.log1p(x**{power}), mode="FAST_RUN")
    np.testing.assert_allclose(fn(v), np.exp(v) * k + np.log1p(v**{power}))
print("WRAPPED", getattr(GCC_compiler.compile_str, "pmctx_header", False))
from pytensor.link.c.basic import CLinker

preargs = CLinker().accept(fn.maker.fgraph).compile_args()  # the elemwise modules' flags
src = '''#include <Python.h>
#ifndef PMCTX_PCH_PRECOMPILED
#error "the precompiled header was not used"
#endif
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "probe", NULL, -1, NULL}};
PyMODINIT_FUNC PyInit_probe(void) {{ return PyModule_Create(&def); }}
'''
import tempfile
try:
    GCC_compiler.compile_str("probe", src, location=tempfile.mkdtemp(), preargs=preargs)
    print("PROBE compiled")
except Exception as error:
    print("PROBE failed", type(error).__name__)
"""


def _run(compiledir, power=2, **env_extra):
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={compiledir}", **env_extra}
    env.pop(_pytensor_pch.ENV_SWITCH, None)
    env.update(env_extra)
    result = subprocess.run(
        [sys.executable, "-c", CHECK.format(power=power)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)


needs_gcc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _pytensor_pch._is_gcc("g++"),
    reason="the precompiled header is built for GCC on Linux only",
)


@needs_gcc
def test_modules_compile_with_the_precompiled_header_and_the_switch_turns_it_off(tmp_path):
    out = _run(tmp_path / "on")
    assert out["WRAPPED"] == "True"
    assert out["PROBE"] == "compiled"  # PMCTX_PCH_PRECOMPILED comes only from the .gch
    headers = list((tmp_path / "on").glob("compiledir_*/pmctx-python-pch/*/Python.h.gch"))
    assert len(headers) == 1, headers  # the elemwise modules and the probe share one flag set
    off = _run(tmp_path / "off", power=3, **{_pytensor_pch.ENV_SWITCH: "0"})
    assert off["WRAPPED"] == "False" and off["PROBE"] == "failed CompileError"
    assert not list((tmp_path / "off").glob("compiledir_*/pmctx-python-pch"))


@pytest.fixture
def with_header(tmp_path, monkeypatch):
    """``_with_header`` around a recording stand-in for ``compile_str`` that raises where
    ``fails(src_code, include_dirs)``; the header's folder is given, the process state fresh."""
    folder = tmp_path / "pmctx-python-pch" / "x"
    monkeypatch.setattr(_pytensor_pch, "precompiled_header", lambda *a: folder)
    monkeypatch.setattr(_pytensor_pch, "_FAILED", set())
    monkeypatch.setattr(_pytensor_pch, "_SEEN", {})

    def wrap(fails):
        calls = []

        def compile_str(module_name, src_code, include_dirs=None, **kwargs):
            calls.append(list(include_dirs))
            if fails(src_code, include_dirs):
                raise RuntimeError(f"compile error in {src_code}")
            return "module"

        return _pytensor_pch._with_header(compile_str), calls, str(folder)

    return wrap


def test_a_module_that_fails_with_the_header_is_compiled_plainly(with_header):
    wrapped, calls, folder = with_header(lambda code, dirs: dirs and "pmctx-python-pch" in dirs[0])
    for _ in range(3):
        assert wrapped("m", "code", include_dirs=["/op"], preargs=["-O3"]) == "module"
    # first module: plain (a flag set's first compile builds nothing); second: with the
    # header, rejected, then plain; third: plain without trying again
    assert calls == [["/op"], [folder, "/op"], ["/op"], ["/op"]]


def test_an_error_in_the_module_itself_is_raised_and_keeps_the_header(with_header):
    wrapped, calls, folder = with_header(lambda code, dirs: code == "broken")
    assert wrapped("m", "code", include_dirs=[], preargs=["-O3"]) == "module"
    with pytest.raises(RuntimeError, match="compile error in broken"):
        wrapped("m", "broken", include_dirs=[], preargs=["-O3"])
    assert wrapped("m", "code", include_dirs=[], preargs=["-O3"]) == "module"
    assert calls == [[], [folder], [], [folder]]  # the header is kept after the error
    assert not _pytensor_pch._FAILED


def test_no_header_where_the_compiler_is_not_gcc(tmp_path):
    assert _pytensor_pch.precompiled_header("false", ["-g"], tmp_path) is None
    assert _pytensor_pch.precompiled_header("", ["-g"], tmp_path) is None
    assert not (tmp_path / "pmctx-python-pch").exists()

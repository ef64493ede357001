"""A precompiled ``Python.h`` for PyTensor's C modules, built once per compile directory.

Every C module PyTensor compiles (one per new operation signature: a fused elemwise, a
reduction, an indexing op...) starts with ``#include <Python.h>``, and g++ spends about a third
of each compile parsing that header again: 0.36 -> 0.24 s per module on 40 modules sampled
from a clean clone's test run (2-CPU benchmark machine). A fresh machine compiles several
hundred modules before its first fits and tests are warm.

:func:`install` wraps PyTensor's ``GCC_compiler.compile_str``: before a module compiles, a
folder is put first on its include path holding two files, a ``Python.h`` that is only
``#include_next <Python.h>`` behind a guard, and its precompiled form ``Python.h.gch``, built
with the module's compiler and code-generation flags (:func:`header_flags`). g++ looks for
``Python.h.gch`` before ``Python.h`` in each include directory, uses it when its own checks
find it valid for the command and otherwise reads the wrapper, which includes the real
header; so a module's code and its cache key are the same either way, only the parsing is
skipped. Each flag set gets its own header (a hash names its folder in the compile
directory), built at the set's second module and reused by every later process. Where the
header cannot be built, or a module fails to compile with it, the module is compiled exactly
as PyTensor would (and that flag set is not tried again in the process). Only GCC on Linux;
``PMCTX_PYTENSOR_PCH=0`` turns this off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ENV_SWITCH = "PMCTX_PYTENSOR_PCH"
_FOLDER = "pmctx-python-pch"
_GUARD = "PMCTX_PCH_PYTHON_H"
#: Defined only where the precompiled header was used (it is built from the wrapper as the
#: main file, include level 0), so a module can tell the two paths apart.
USED_MACRO = "PMCTX_PCH_PRECOMPILED"
_WRAPPER = f"""#ifndef {_GUARD}
#define {_GUARD}
#if __INCLUDE_LEVEL__ == 0
#define {USED_MACRO} 1
#endif
#include_next <Python.h>
#endif
"""
# Flag sets that failed in this process: compiled without a header from then on.
_FAILED: set[str] = set()
# Modules compiled per flag set in this process.
_SEEN: dict[str, int] = {}


@functools.lru_cache(maxsize=4)
def _is_gcc(compiler: str) -> bool:
    """Whether ``compiler`` is GCC itself (its predefined macros: ``__GNUC__``, no clang)."""
    try:
        macros = subprocess.run(
            [compiler, "-E", "-dM", "-x", "c++", os.devnull],
            capture_output=True, text=True, timeout=30,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return "#define __GNUC__ " in macros and "__clang__" not in macros


def header_flags(preargs, hide_symbols: bool) -> list[str]:
    """The flags of ``compile_str``'s g++ command that a precompiled ``Python.h`` depends on.

    Include directories and ``-D`` macros are left out: a module's own include directories
    come after the standard ones that hold ``Python.h``, and g++ accepts a header built
    without a macro that the header never reads (PyTensor's BLAS renames, NumPy's API level),
    so one header serves modules that differ only in those.

    Parameters
    ----------
    preargs : list of str
        As PyTensor passes them to ``compile_str``.
    hide_symbols : bool
        Whether the module is compiled with ``-fvisibility=hidden``.

    Returns
    -------
    list of str
        Compiler flags in ``compile_str``'s order, then the standard include directories.
    """
    import pytensor
    from pytensor.link.c.cmodule import std_include_dirs

    if pytensor.config.cmodule__remove_gxx_opt:
        preargs = [flag for flag in preargs if not flag.startswith("-O")]
    flags = ["-g", *(flag for flag in preargs if not flag.startswith(("-I", "-D")))]
    if hide_symbols:
        flags.append("-fvisibility=hidden")
    return flags + [f"-I{d}" for d in std_include_dirs() if d]


def precompiled_header(compiler: str, flags: list[str], compiledir: Path) -> Path | None:
    """Folder holding ``Python.h.gch`` built by ``compiler`` with ``flags``, or None.

    Parameters
    ----------
    compiler : str
        The C++ compiler (PyTensor's ``config.cxx``).
    flags : list of str
        From :func:`header_flags`.
    compiledir : Path
        PyTensor's compile directory; the header lives in a subfolder named by a hash of the
        compiler and the flags.

    Returns
    -------
    Path or None
        The folder to put first on the include path, or None where the compiler is not GCC
        or the header could not be built.
    """
    if not compiler or not sys.platform.startswith("linux") or not _is_gcc(compiler):
        return None
    folder = _folder(compiler, flags, compiledir)
    if _built(compiler, flags, compiledir):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        # Built from a copy outside the include path, so #include_next finds the real header.
        source = Path(scratch) / "Python.h"
        source.write_text(_WRAPPER)
        built = Path(scratch) / "Python.h.gch"
        command = [compiler, *flags, "-x", "c++-header", str(source), "-o", str(built)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0 or not built.exists():
            return None
        # Atomic renames: a process building the same header at the same time writes equal
        # files, and a reader sees either none or a whole one. The wrapper goes last, as
        # the sign that both are there.
        os.replace(built, folder / "Python.h.gch")
        os.replace(source, folder / "Python.h")
    return folder


def _folder(compiler: str, flags: list[str], compiledir) -> Path:
    digest = hashlib.sha256("\0".join([compiler, *flags]).encode()).hexdigest()[:16]
    return Path(compiledir) / _FOLDER / digest


def _built(compiler: str, flags: list[str], compiledir) -> bool:
    # The wrapper is renamed into place last, so its presence means both files are whole.
    return (_folder(compiler, flags, compiledir) / "Python.h").exists()


def _with_header(compile_str):
    def compile_str_with_header(
        module_name,
        src_code,
        location=None,
        include_dirs=None,
        lib_dirs=None,
        libs=None,
        preargs=None,
        py_module=True,
        hide_symbols=True,
    ):
        import pytensor

        arguments = dict(
            location=location, lib_dirs=lib_dirs, libs=libs, preargs=preargs,
            py_module=py_module, hide_symbols=hide_symbols,
        )  # fmt: skip
        include_dirs = list(include_dirs or [])
        compiler = pytensor.config.cxx
        flags = header_flags(preargs or [], hide_symbols)
        key = "\0".join([compiler, *flags])
        _SEEN[key] = _SEEN.get(key, 0) + 1
        folder = None
        # A flag set's first module in a process compiles plainly unless its header is
        # already built: one-off compiles (PyTensor's own helpers) would not repay it.
        wanted = _SEEN[key] > 1 or _built(compiler, flags, pytensor.config.compiledir)
        if wanted and key not in _FAILED and os.environ.get(ENV_SWITCH, "1") != "0":
            try:
                folder = precompiled_header(compiler, flags, Path(pytensor.config.compiledir))
            except (OSError, subprocess.SubprocessError):
                folder = None
            if folder is None:
                _FAILED.add(key)
        if folder is not None:
            try:
                return compile_str(
                    module_name, src_code, include_dirs=[str(folder), *include_dirs], **arguments
                )
            except Exception:  # PyTensor's CompileError and kin: compile it plainly instead
                # An error in the module's own code is raised again here, and the header is
                # kept; only a module the header broke turns it off for this flag set.
                module = compile_str(module_name, src_code, include_dirs=include_dirs, **arguments)
                _FAILED.add(key)
                return module
        return compile_str(module_name, src_code, include_dirs=include_dirs, **arguments)

    compile_str_with_header.pmctx_header = True
    return compile_str_with_header


def patch_pytensor() -> bool:
    """Wrap ``GCC_compiler.compile_str`` with the precompiled header, once.

    Returns
    -------
    bool
        Whether it was wrapped now.
    """
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return False
    try:
        from pytensor.link.c.cmodule import GCC_compiler
    except ImportError:
        return False
    compile_str = GCC_compiler.__dict__.get("compile_str")
    if not isinstance(compile_str, staticmethod):  # another PyTensor: leave it as it is
        return False
    if getattr(compile_str.__func__, "pmctx_header", False):
        return False
    GCC_compiler.compile_str = staticmethod(_with_header(compile_str.__func__))
    return True

"""Link PyTensor's C backend to the OpenBLAS that SciPy's wheel ships, when it finds no BLAS.

On a pip install PyTensor's C backend looks for a system BLAS (MKL, Accelerate, ``-lblas``,
``-lopenblas``). When it finds none it warns ("PyTensor could not link to a BLAS
installation") and runs every matrix product through a Python call: PyMC's own NUTS on a GUM
(seed 002 section 3.1, N = 500, 4 x (400 + 400) draws) took 64.1 s that way against 48.0 s
linked (log density and gradient 191 -> 113 us; minimum bulk ESS per second 19.8 -> 29.1),
on the 2-CPU benchmark machine (``benchmarks/bench_pytensor_blas.py``).

SciPy's Linux wheels carry OpenBLAS (``scipy.libs/libscipy_openblas-*.so``, LP64 integers like
PyTensor's headers) with every routine renamed ``scipy_<name>_``. When PyTensor's own search
finds nothing, :func:`install` offers it that library: ``-L``/``-l``/``-rpath`` for the linker
and one ``-D<name>_=scipy_<name>_`` macro per BLAS routine PyTensor's C code names, which is
how NumPy and SciPy themselves build against it. The flags are checked once per PyTensor
compile directory by compiling and running PyTensor's own BLAS probe (``try_blas_flag``);
if the probe fails, or the library is missing (macOS, Windows, another SciPy build), PyTensor
keeps its empty default and its warning.

Nothing is imported early: the hook replaces the default of ``config.blas__ldflags``, which
PyTensor evaluates lazily, the first time an operation needs it. A value the user set
(``PYTENSOR_FLAGS``, ``.pytensorrc``) is never touched; ``PMCTX_SCIPY_BLAS=0`` turns the
fallback off.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shlex
import sys
import warnings
from pathlib import Path

PREFIX = "scipy_"
ENV_SWITCH = "PMCTX_SCIPY_BLAS"
# PyTensor's C code names its BLAS routines in these modules (declarations and calls).
_PYTENSOR_BLAS_SOURCES = (
    "pytensor.tensor.blas_headers",
    "pytensor.tensor.blas",
    "pytensor.tensor.blas_c",
)
_VERIFIED_NAME = "pmctx-scipy-openblas.ok"


def scipy_openblas_library() -> Path | None:
    """Path of SciPy's bundled LP64 OpenBLAS, or None where the wheel has none."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or spec.origin is None or not sys.platform.startswith("linux"):
        return None
    libs = Path(spec.origin).parent.parent / "scipy.libs"
    found = sorted(p for p in libs.glob("libscipy_openblas-*.so") if "64_" not in p.name)
    return found[0] if found else None


def _routine_names(library: Path) -> list[str]:
    """BLAS routines PyTensor's C code names that the library exports with SciPy's prefix."""
    names = set()
    for module in _PYTENSOR_BLAS_SOURCES:
        origin = importlib.util.find_spec(module).origin
        names.update(re.findall(r"\b([a-z][a-z0-9]*)_\s*\(", Path(origin).read_text()))
    handle = ctypes.CDLL(str(library))
    return sorted(name for name in names if hasattr(handle, f"{PREFIX}{name}_"))


def scipy_openblas_flags() -> str:
    """``blas__ldflags`` that link SciPy's OpenBLAS under PyTensor's routine names ("" if none).

    Returns
    -------
    str
        Linker flags and renaming macros, or an empty string.

    Examples
    --------
    >>> flags = scipy_openblas_flags()
    >>> flags == "" or "-Ddgemm_=scipy_dgemm_" in flags
    True
    """
    library = scipy_openblas_library()
    if library is None:
        return ""
    try:
        names = _routine_names(library)
    except (OSError, AttributeError, TypeError):
        return ""
    if "dgemm" not in names:
        return ""
    folder = library.parent
    link = f"-L{folder} -l{library.stem[3:]} -Wl,-rpath,{folder}"
    return " ".join([link, *(f"-D{name}_={PREFIX}{name}_" for name in names)])


def _verified(flags: str) -> bool:
    """PyTensor's BLAS probe compiles and runs with ``flags``; remembered per compile dir."""
    import pytensor
    from pytensor.link.c.cmodule import try_blas_flag

    marker = Path(pytensor.config.compiledir) / _VERIFIED_NAME
    try:
        if marker.read_text() == flags:
            return True
    except OSError:
        pass
    if not try_blas_flag(shlex.split(flags)):
        return False
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(flags)
    except OSError:  # a read-only compile dir: probe again next time
        pass
    return True


def _with_fallback(pytensor_default):
    def default_blas_ldflags() -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found = pytensor_default() if callable(pytensor_default) else pytensor_default
        if not found and os.environ.get(ENV_SWITCH, "1") != "0":
            flags = scipy_openblas_flags()
            if flags and _verified(flags):
                return flags
        for warning in caught:  # PyTensor's own warning, when nothing was linked after all
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
        return found

    default_blas_ldflags.pmctx_fallback = True
    return default_blas_ldflags


def patch_pytensor_config() -> bool:
    """Give PyTensor's ``blas__ldflags`` the SciPy fallback, unless already evaluated or set.

    Returns
    -------
    bool
        Whether the default was replaced.
    """
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return False
    import pytensor

    try:
        param = pytensor.config._config_var_dict["blas__ldflags"]
    except (AttributeError, KeyError):  # another PyTensor: leave it as it is
        return False
    if hasattr(param, "val") or not hasattr(param, "_default"):  # evaluated, or another API
        return False
    if getattr(param._default, "pmctx_fallback", False):
        return False
    param._default = _with_fallback(param._default)  # read lazily through param.default
    return True

"""What ``import pmctx`` changes in PyTensor, applied right after PyTensor is imported.

Two build-time aids, each documented in its module and each with an environment switch:
SciPy's OpenBLAS for PyTensor's C backend where it finds no BLAS
(:mod:`pmctx._pytensor_blas`, ``PMCTX_SCIPY_BLAS=0``) and a precompiled ``Python.h`` for
its C modules (:mod:`pmctx._pytensor_pch`, ``PMCTX_PYTENSOR_PCH=0``). Neither imports
PyTensor early: :func:`install` applies them now if PyTensor is already imported, else from
an import hook when it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

from pmctx import _pytensor_blas, _pytensor_pch
from pmctx._arviz_kernels import _WrappedLoader

PACKAGE = "pytensor"


def patch_pytensor() -> None:
    """Apply both patches (each checks its own switch and applies itself at most once)."""
    _pytensor_blas.patch_pytensor_config()
    _pytensor_pch.patch_pytensor()


class _PatchingLoader(_WrappedLoader):
    def exec_module(self, module):
        self._loader.exec_module(module)
        patch_pytensor()


class _PytensorFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != PACKAGE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


def install() -> None:
    """Patch PyTensor now if it is imported, else right after its import."""
    if PACKAGE in sys.modules:
        patch_pytensor()
    elif not any(isinstance(f, _PytensorFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PytensorFinder())

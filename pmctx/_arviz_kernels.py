"""Cache the one Numba kernel ArviZ compiles on import, so every process stops paying for it.

ArviZ 0.2x (``arviz.stats.ecdf_utils``) declares ``_binom_pmf`` with ``numba.vectorize`` and
an explicit signature. Numba compiles such a ufunc eagerly, when the module is imported, and
without ``cache=True`` it compiles it again in every process: ``import pmctx, pymc`` took
3.66-3.72 s with the kernel cached against 4.00-4.21 s for ``import pymc`` (PyMC imports ArviZ)
on the 2-CPU benchmark machine, out of a 6-7 s GUM fit process. Numba's own remedy is
``cache=True``, which ArviZ does not pass.

:func:`install` puts a finder on ``sys.meta_path`` that waits for that one module: while it
executes, ``numba.vectorize`` adds ``cache=True`` to its keyword arguments, and afterwards the
original is back. Nothing else is touched and nothing is imported early (``import pmctx`` stays
light); when ArviZ drops the kernel or numba is missing, the import proceeds unchanged.
"""

import functools
import importlib.abc
import importlib.machinery
import sys

TARGET = "arviz.stats.ecdf_utils"


class _CachingLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            import numba
        except ImportError:  # ArviZ falls back to plain Python: nothing to cache
            return self._loader.exec_module(module)
        original = numba.vectorize

        @functools.wraps(original)
        def vectorize_with_cache(*args, **kwargs):
            kwargs.setdefault("cache", True)
            return original(*args, **kwargs)

        numba.vectorize = vectorize_with_cache
        try:
            self._loader.exec_module(module)
        finally:
            numba.vectorize = original

    def __getattr__(self, name):  # get_code, get_source... for tracebacks and inspect
        return getattr(self._loader, name)


class _CachingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _CachingLoader(spec.loader)
        return spec


def install() -> None:
    """Add the finder once, unless ArviZ's kernel module is already imported."""
    if TARGET in sys.modules or any(isinstance(f, _CachingFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _CachingFinder())

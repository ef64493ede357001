"""Two fixes to how ArviZ 0.2x imports: cache its one import-time Numba kernel; survive its race.

ArviZ 0.2x (``arviz.stats.ecdf_utils``) declares ``_binom_pmf`` with ``numba.vectorize`` and
an explicit signature. Numba compiles such a ufunc eagerly, when the module is imported, and
without ``cache=True`` it compiles it again in every process: ``import pmctx, pymc`` took
3.66-3.72 s with the kernel cached against 4.00-4.21 s for ``import pymc`` (PyMC imports ArviZ)
on the 2-CPU benchmark machine, out of a 6-7 s GUM fit process. Numba's own remedy is
``cache=True``, which ArviZ does not pass.

:func:`install` puts a finder on ``sys.meta_path`` that waits for that one module: while it
executes, ``numba.vectorize`` adds ``cache=True`` to its keyword arguments, and afterwards the
original is back. Nothing is imported early (``import pmctx`` stays light); when ArviZ drops
the kernel or numba is missing, the import proceeds unchanged.

The same finder wraps ``arviz`` itself. ArviZ 0.23's first import of the day writes a stamp
file through one shared temporary name (``~/.cache/arviz/daily_warning.tmp``); when several
processes import it at once (pytest-xdist workers, Dask workers, chain processes after
midnight) one renames the file away under another, whose import then fails with
``FileNotFoundError`` (arviz-devs/arviz#2530, #2583; a clean clone's ``make test`` failed at
collection this way). By then the other process has written today's stamp, so the import is
run once more and passes.
"""

import functools
import importlib.abc
import importlib.machinery
import sys

TARGET = "arviz.stats.ecdf_utils"
PACKAGE = "arviz"
STAMP_NAME = "daily_warning"


class _WrappedLoader(importlib.abc.Loader):
    """Delegates to the loader it wraps; subclasses change ``exec_module`` only."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def __getattr__(self, name):  # get_code, get_source... for tracebacks and inspect
        return getattr(self._loader, name)


class _CachingLoader(_WrappedLoader):
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


class _StampRaceLoader(_WrappedLoader):
    """Runs ``arviz/__init__`` again when it lost the race for its daily stamp file."""

    def exec_module(self, module):
        try:
            self._loader.exec_module(module)
        except FileNotFoundError as err:
            if STAMP_NAME not in str(err):
                raise
            self._loader.exec_module(module)  # the winner's stamp is on disk now


class _ArvizFinder(importlib.abc.MetaPathFinder):
    _LOADERS = {TARGET: _CachingLoader, PACKAGE: _StampRaceLoader}

    def find_spec(self, fullname, path, target=None):
        if fullname not in self._LOADERS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = self._LOADERS[fullname](spec.loader)
        return spec


def install() -> None:
    """Add the finder once, unless ArviZ is already imported."""
    if PACKAGE in sys.modules or any(isinstance(f, _ArvizFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _ArvizFinder())

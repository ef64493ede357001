"""PyTensor's internal names that pmctx uses, in one place, feature-detected.

Why pmctx needs them: :mod:`pmctx.gum.cached` compiles a GUM's log density with PyTensor's
Numba backend and wraps it in ``numba.cfunc`` s for nutpie that live on Numba's disk cache.
PyTensor documents ``mode="NUMBA"`` but not how to reach the Numba function behind a
compiled function, nor its disk cache of generated source, so pmctx reads:

- ``pytensor.link.numba.cache.compile_numba_function_src`` and ``CACHED_SRC_FUNCTIONS``: make
  a function from generated source that Numba caches on disk under a given key, and read the
  key PyTensor gave a compiled graph (undocumented internal module);
- ``pytensor.link.numba.linker.NumbaLinker.jit_compile`` (its ``(fn, cache_key)`` argument)
  and ``pytensor.link.numba.dispatch.basic.numba_njit``: a linker that compiles with
  ``nogil=True`` and without PyTensor's own disk cache (:func:`numba_nogil_mode`);
- ``fn.vm.jit_fn``: the Numba function of a function compiled with the Numba linker
  (:func:`jitted`).

:func:`missing` lists what the installed PyTensor lacks; every accessor raises
:class:`UpstreamChanged` (an ImportError) naming it. The fallback is nutpie's public
:func:`nutpie.compile_pymc_model`, run by :func:`pmctx.gum.backends.compile_nutpie` with one
:class:`pmctx.gum.backends.CompileFallbackWarning`. ``tests/test_upstream_pytensor.py``
imports each name, so a PyTensor release that drops one fails there first.
"""

from __future__ import annotations

import inspect

__all__ = [
    "PRIVATE_NAMES",
    "UpstreamChanged",
    "cache_key_of",
    "compile_numba_function_src",
    "jitted",
    "missing",
    "numba_nogil_mode",
]

#: ``(module, name)`` of each internal name this module reads.
PRIVATE_NAMES = (
    ("pytensor.link.numba.cache", "compile_numba_function_src"),
    ("pytensor.link.numba.cache", "CACHED_SRC_FUNCTIONS"),
    ("pytensor.link.numba.linker", "NumbaLinker"),
    ("pytensor.link.numba.dispatch.basic", "numba_njit"),
)


class UpstreamChanged(ImportError):
    """The installed PyTensor lacks an internal name pmctx's cached compile reads."""


def _get(module: str, name: str):
    import importlib

    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise UpstreamChanged(f"{module}.{name} is gone: {err}") from err
    return value


def missing() -> list[str]:
    """Internal names of PyTensor this module reads that the installed PyTensor lacks.

    Returns
    -------
    list of str
        ``"module.name"`` entries; empty when all are there.
    """
    gone = []
    for module, name in PRIVATE_NAMES:
        try:
            _get(module, name)
        except UpstreamChanged:
            gone.append(f"{module}.{name}")
    if not gone:
        linker = _get("pytensor.link.numba.linker", "NumbaLinker")
        if list(inspect.signature(linker.jit_compile).parameters) != ["self", "fn_and_cache"]:
            gone.append("pytensor.link.numba.linker.NumbaLinker.jit_compile(fn_and_cache)")
    return gone


def compile_numba_function_src(src: str, name: str, *, global_env: dict, cache_key: str):
    """Python function ``name`` of ``src`` that Numba caches on disk under ``cache_key``.

    Parameters
    ----------
    src : str
        Source code defining ``name``.
    name : str
        The function's name.
    global_env : dict
        Its globals.
    cache_key : str
        Key of its Numba disk cache entry.

    Returns
    -------
    function
        To decorate with ``numba.njit``/``numba.cfunc(cache=True)``.
    """
    compile_src = _get("pytensor.link.numba.cache", "compile_numba_function_src")
    return compile_src(src, name, global_env=global_env, cache_key=cache_key)


def cache_key_of(jitted_function) -> str:
    """PyTensor's disk-cache key of a function compiled by its Numba linker.

    Parameters
    ----------
    jitted_function : numba dispatcher
        From :func:`jitted`.

    Returns
    -------
    str
        The key (it covers the graph, not its inputs' static shapes).
    """
    keys = _get("pytensor.link.numba.cache", "CACHED_SRC_FUNCTIONS")
    try:
        return keys[jitted_function.py_func]
    except (KeyError, AttributeError, TypeError) as err:
        raise UpstreamChanged(f"PyTensor gave the compiled graph no cache key: {err!r}") from err


def jitted(fn):
    """The Numba function behind ``fn``, compiled with :func:`numba_nogil_mode`.

    Parameters
    ----------
    fn : pytensor.compile.function.types.Function
        A function compiled with a Numba linker.

    Returns
    -------
    numba dispatcher
        Called with the inputs, returns the outputs.
    """
    jit_fn = getattr(getattr(fn, "vm", None), "jit_fn", None)
    if jit_fn is None:
        raise UpstreamChanged("a Numba-linked PyTensor function has no vm.jit_fn")
    return jit_fn


def numba_nogil_mode():
    """PyTensor's NUMBA mode whose compiled function releases the GIL while it runs and is
    not disk-cached by itself (its callers are).

    Returns
    -------
    pytensor.compile.mode.Mode
        NUMBA rewrites with a linker that adds ``nogil=True`` and no disk cache.
    """
    from pytensor.compile.mode import Mode, get_mode

    gone = missing()
    if gone:
        raise UpstreamChanged(f"PyTensor lacks {gone}")
    numba_linker = _get("pytensor.link.numba.linker", "NumbaLinker")
    numba_njit = _get("pytensor.link.numba.dispatch.basic", "numba_njit")

    class NogilNumbaLinker(numba_linker):
        def jit_compile(self, fn_and_cache):
            fn, _key = fn_and_cache
            # not cached on its own: PyTensor's key of a whole graph leaves out the inputs'
            # static shapes; the cfunc that calls it is cached under a key that has them
            return numba_njit(fn.py_func, final_function=True, cache=False, nogil=True)

    return Mode(linker=NogilNumbaLinker(), optimizer=get_mode("NUMBA").optimizer)

"""Skip the interpreter's last garbage-collection passes when a pmctx process exits.

A process that has imported PyMC holds millions of objects (PyMC, PyTensor, ArviZ, SciPy,
Matplotlib, xarray), and CPython's shutdown runs the cyclic garbage collector over all of
them after the ``atexit`` handlers, a sizeable part of a short script's time (figures:
``docs/benchmarks.md``). :func:`install` registers :func:`gc.freeze` as an ``atexit``
handler, so that those passes skip every object alive at exit. Memory is returned to the
system by the process's end either way.

What changes: an object that is part of a reference cycle at exit is no longer collected,
so its ``__del__`` does not run. CPython does not promise that ``__del__`` runs at exit for
objects still alive then; close files and other resources explicitly (``with`` blocks), as
pmctx's own writers do. ``PMCTX_FAST_EXIT=0`` turns this off.
"""

from __future__ import annotations

import atexit
import gc
import os

SWITCH = "PMCTX_FAST_EXIT"
_installed = False


def install() -> bool:
    """Register :func:`gc.freeze` to run at exit (once per process), unless switched off.

    Returns
    -------
    bool
        Whether the handler is registered (``False`` when ``PMCTX_FAST_EXIT=0``).
    """
    global _installed
    if os.environ.get(SWITCH, "1") == "0":
        return False
    if not _installed:
        atexit.register(gc.freeze)
        _installed = True
    return True

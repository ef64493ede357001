"""A fork-safe Numba threading layer, so that PyMC can fork chain processes after a threaded sweep.

On Linux PyMC starts its chain processes by ``fork``. Numba's default threading layer there
(without Intel TBB) is GNU OpenMP, which is not fork-safe: once a process has run one
``parallel=True`` kernel, every process it forks aborts with "fork() called from a process
already using GNU OpenMP, this is unsafe". The orientation map's sweeps are threaded from
2**15 nodes (181 x 181, :data:`pmctx.vonmises._numba_vector.PARALLEL_MIN_NODES`) and
``reconstruct`` runs one in its own process before ``pm.sample`` forks the chains, so every
such fit with chains in parallel would die that way (``cores > 1``, the default on a
multi-core machine), as would ``with model: pm.sample()`` after any threaded sweep in the
same process.

:func:`install` asks Numba for its ``"forksafe"`` layer unless the user chose one: TBB where
the ``tbb`` package is installed, otherwise Numba's own ``workqueue`` on Linux. A threaded
sweep in one process is a little slower with ``workqueue`` than with OpenMP; a fit whose
chains run in processes takes the same time (figures: ``docs/benchmarks.md``).
``workqueue`` does not allow two Python threads to run threaded
kernels at once; pmctx runs chains and batch fits in processes.

To choose a layer yourself, set ``NUMBA_THREADING_LAYER`` before importing pmctx (``omp``
restores the faster OpenMP layer for fits whose chains run in one process, ``cores=1``).
"""

from __future__ import annotations

import os
import sys

VARIABLE = "NUMBA_THREADING_LAYER"
LAYER = "forksafe"


def install() -> str | None:
    """Select Numba's fork-safe threading layer unless one was chosen or is already running.

    Returns
    -------
    str or None
        The layer requested (``"forksafe"``), or ``None`` when ``NUMBA_THREADING_LAYER`` is
        set or a Numba threading layer has already started in this process (it cannot
        change then).
    """
    if os.environ.get(VARIABLE):
        return None
    numba = sys.modules.get("numba")
    if numba is None:
        # Numba reads the variable when it is imported; chain processes inherit it.
        os.environ[VARIABLE] = LAYER
        return LAYER
    from numba.np.ufunc import parallel

    if parallel._is_initialized:
        return None
    numba.config.THREADING_LAYER = LAYER
    os.environ[VARIABLE] = LAYER
    return LAYER

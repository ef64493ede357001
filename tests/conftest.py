"""Shared test configuration: headless plots, quiet progress bars, the ``slow`` marker."""

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("PMCTX_NO_PROGRESS", "1")

# pytest-xdist's controller loads this file before it starts the workers, so ArviZ's first
# import of the day (which writes a stamp file through one shared temporary name) happens here,
# in one process, and the workers read the stamp instead of racing to write it: a clean clone's
# `make test` once failed at collection that way (arviz-devs/arviz#2530). pmctx first, so its
# import finder (pmctx._arviz_kernels) also guards the workers' own imports.
import pmctx  # noqa: F401, I001
import arviz  # noqa: F401

"""Shared test configuration: headless plots, quiet progress bars, the ``slow`` marker."""

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("PMCTX_NO_PROGRESS", "1")

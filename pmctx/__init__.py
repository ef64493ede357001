"""pmctx: PyMC/ArviZ models and Gibbs step methods for cognitive science and neuroscience.

The library lives in ``pmctx`` (step methods, kernels, validation, I/O, testing tools, CLI);
model declarations live in ``pmctx.models``, one module per model.
"""

from importlib.metadata import PackageNotFoundError, version

from pmctx import _fast_exit, _numba_threads

# The interpreter's shutdown skips its garbage-collection passes over the imported stack
# (0.6 s of a 5 s GUM script; see pmctx._fast_exit, PMCTX_FAST_EXIT=0 to keep them).
_fast_exit.install()
# Numba's fork-safe threading layer, so that PyMC can fork chain processes after a threaded
# orientation-map sweep (GNU OpenMP aborts them; see pmctx._numba_threads).
_numba_threads.install()

try:
    __version__ = version("pmctx")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"


from pmctx.exceptions import (  # noqa: E402  (after the version)
    ConvergenceWarning,
    DivergenceWarning,
    LooReliabilityWarning,
    PmctxWarning,
    TruncationWarning,
)


def summary(idata, var_names=None, **kwargs):
    """Posterior summary of a fit's label-invariant quantities (see :mod:`pmctx.summarize`).

    Circular quantities get circular mean/sd and R-hat/ESS on (cos, sin); their mean lies in
    ``[0, period)`` and their interval ends on the mean's branch (``lower <= mean <= upper``,
    an end possibly outside ``[0, period)``: read the interval modulo ``period``).

    Parameters
    ----------
    idata : xarray.DataTree, arviz.InferenceData or xarray.Dataset
        A pmctx fit (its model's label-invariant quantities are summarised) or a dataset
        with ``chain`` and ``draw`` dims.
    var_names : list of str, optional
        Quantities to include; default: all of them.
    **kwargs
        Passed to :func:`pmctx.summarize.summary` (``prob``, the interval's mass).

    Returns
    -------
    pandas.DataFrame
        One row per quantity element; columns ``kind, mean, sd, lower, upper, r_hat,
        ess_bulk, ess_tail, period`` (``period`` NaN for linear quantities).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> import pmctx
    >>> draws = np.random.default_rng(1).normal(3.0, 0.5, size=(2, 400))
    >>> table = pmctx.summary(xr.Dataset({"n_active": (("chain", "draw"), draws)}))
    >>> list(table.columns)
    ['kind', 'mean', 'sd', 'lower', 'upper', 'r_hat', 'ess_bulk', 'ess_tail', 'period']
    """
    from pmctx.summarize import summary as _summary

    return _summary(idata, var_names, **kwargs)


from pmctx.compare import compare  # noqa: E402  (after the warnings)


def __getattr__(name: str):
    """``pmctx.<module>`` (``pmctx.streaming.loo``, ``pmctx.convergence``...) after a bare
    ``import pmctx``: a public submodule is imported when first read, so that ``import pmctx``
    stays light."""
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"pmctx.{name}") is not None:
        return importlib.import_module(f"pmctx.{name}")
    raise AttributeError(f"module 'pmctx' has no attribute {name!r}")


__all__ = [
    "ConvergenceWarning",
    "DivergenceWarning",
    "LooReliabilityWarning",
    "PmctxWarning",
    "TruncationWarning",
    "__version__",
    "compare",
    "summary",
]

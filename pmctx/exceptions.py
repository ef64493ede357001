"""Warning classes of pmctx, in one module that imports nothing, so every layer can use them.

Examples
--------
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     warnings.warn("not converged", ConvergenceWarning)
>>> issubclass(caught[0].category, PmctxWarning)
True
"""

__all__ = [
    "ConvergenceWarning",
    "DivergenceWarning",
    "LooReliabilityWarning",
    "MemoryWarning",
    "PmctxWarning",
    "TruncationWarning",
]


class PmctxWarning(UserWarning):
    """Base class of every warning pmctx emits (turned into errors in pmctx's own tests)."""


class TruncationWarning(PmctxWarning):
    """A truncated nonparametric model ran out of inactive components."""


class ConvergenceWarning(PmctxWarning):
    """An optimiser or sampler did not converge as requested."""


class DivergenceWarning(ConvergenceWarning):
    """NUTS had divergent transitions after tuning: its draws may be biased."""


class LooReliabilityWarning(PmctxWarning):
    """PSIS-LOO is unreliable (too many Pareto k > 0.7): refit exactly (pmctx.kfold)."""


class MemoryWarning(PmctxWarning):
    """A fit's outputs would take a large share of the memory available (pmctx.memory)."""

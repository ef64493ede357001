"""Latent-cause (Chinese restaurant process) models of classical conditioning.

* :mod:`~pmctx.conditioning.design`: experiments as phases, compiled to trial x feature data.
* :mod:`~pmctx.conditioning.particle_filter`: the sequential particle filter and local MAP.
* :mod:`~pmctx.conditioning.exact`: exact filtering by enumerating partitions (short runs).
* :mod:`~pmctx.conditioning.behaviour`: fitting alpha to conditioned responses.
* :mod:`~pmctx.conditioning.plots`: V_t across phases and the posterior over causes.
"""

from pmctx.conditioning.design import (
    SHIPPED_DESIGNS,
    Design,
    Phase,
    as_feature_matrix,
    shipped_design,
)
from pmctx.conditioning.exact import exact_filter
from pmctx.conditioning.particle_filter import CRPFilterResult, particle_filter

__all__ = [
    "SHIPPED_DESIGNS",
    "CRPFilterResult",
    "Design",
    "Phase",
    "as_feature_matrix",
    "exact_filter",
    "particle_filter",
    "shipped_design",
]

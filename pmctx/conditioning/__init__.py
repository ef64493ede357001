"""Latent-cause (Chinese restaurant process) models of classical conditioning.

* :mod:`~pmctx.conditioning.design`: experiments as phases, compiled to trial x feature data.
* :mod:`~pmctx.conditioning.particle_filter`: the sequential particle filter and local MAP,
  with the CRP or the time-sensitive (temporal-kernel) prior; its settings
  (:mod:`~pmctx.conditioning.filter_settings`) and result
  (:mod:`~pmctx.conditioning.filter_result`) are shared with the exact filter; the compiled
  kernel (one state per distinct particle history) is :mod:`~pmctx.conditioning.filter_kernel`.
* :mod:`~pmctx.conditioning.inputs`: the CRP model's data file (``pmctx fit crp``).
* :mod:`~pmctx.conditioning.exact`: exact filtering by enumerating partitions (short runs).
* :mod:`~pmctx.conditioning.response`: response models (LCM linear-Gaussian CR, logistic /
  probit, ordinal ratings).
* :mod:`~pmctx.conditioning.likelihood`: the per-subject likelihood (the filter as a function
  of its parameters), the LCM variants and simulated subjects.
* :mod:`~pmctx.conditioning.fitting`: per-subject ML fits of the LCM variants (common random
  numbers, several starts), BIC evidence; :mod:`~pmctx.conditioning.recovery`: recovery and
  calibration studies.
* :mod:`~pmctx.conditioning.posterior`: the per-subject PyMC posterior (filter as an Op),
  sampled by :mod:`~pmctx.conditioning.pmmh` (pseudo-marginal MH) and NUTS.
* :mod:`~pmctx.conditioning.behaviour`: comparing alpha values on a grid by marginal likelihood.
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
from pmctx.conditioning.fitting import LCM_VARIANTS, compare_variants, fit_subject
from pmctx.conditioning.particle_filter import CRPFilterResult, common_uniforms, particle_filter

__all__ = [
    "LCM_VARIANTS",
    "SHIPPED_DESIGNS",
    "CRPFilterResult",
    "Design",
    "Phase",
    "as_feature_matrix",
    "common_uniforms",
    "compare_variants",
    "exact_filter",
    "fit_subject",
    "particle_filter",
    "shipped_design",
]

"""Settings the CRP filters share: checked concentrations, feature priors, trial times, kernels.

The particle filter (:func:`pmctx.conditioning.particle_filter.particle_filter`), the exact
filter (:mod:`pmctx.conditioning.exact`) and the likelihoods (:mod:`pmctx.conditioning.likelihood`)
read the same options: :func:`absent_pseudo_count` (how an absent feature is scored,
:data:`FEATURE_PRIORS`), :func:`trial_times` (the trials' time stamps) and
:func:`temporal_settings` (the temporal prior, :data:`TEMPORAL_KERNELS`) check them and turn
them into what the numba kernels take.

Examples
--------
>>> temporal_settings("power", 2.0, 1.0)
(2, 2.0, 1.0)
"""

from __future__ import annotations

import numpy as np

from pmctx.validation import check_choice, check_int, check_positive

__all__ = [
    "FEATURE_PRIORS",
    "TEMPORAL_KERNELS",
    "absent_pseudo_count",
    "temporal_settings",
    "trial_times",
]


def _common_checks(alpha, concentration, max_causes, stickiness, n_trials, a=None, b=None):
    """Validate the shared settings; returns (alpha, a, b, n_slots, stickiness)."""
    alpha = check_positive(alpha, "alpha", allow_zero=True)
    eta = check_positive(concentration, "concentration")
    a = eta if a is None else check_positive(a, "a")
    b = eta if b is None else check_positive(b, "b")
    if max_causes is None:
        n_slots = n_trials
    else:
        n_slots = min(check_int(max_causes, "max_causes", minimum=1), n_trials)
    stickiness = check_positive(stickiness, "stickiness", allow_zero=True)
    return alpha, a, b, n_slots, stickiness


#: Temporal priors (Gershman, Blei & Niv 2010); code 0 in the kernels is the plain CRP.
TEMPORAL_KERNELS = ("exponential", "power")


#: Feature likelihoods: ``"beta"``, the normalised Beta(a, b) predictive (an absent value
#: scores ``(n0 + b) / (n + a + b)``); ``"lcm"``, the convention of the authors' LCM code
#: (``LCM_infer.m``), which scores the observed value's count plus ``a`` for present *and*
#: absent values, ``(n_v + a) / (n + a + b)``: unnormalised when a != b, equal to "beta"
#: when a == b. Use "lcm" to reproduce ``LCM_fit`` estimates, which free ``a`` with b = 1.
FEATURE_PRIORS = ("beta", "lcm")


def absent_pseudo_count(a: float, b: float, feature_prior: str) -> float:
    """The pseudo-count added to an absent value's count under ``feature_prior``.

    Parameters
    ----------
    a, b : float
        Beta pseudo-counts of presence and absence.
    feature_prior : {"beta", "lcm"}
        See :data:`FEATURE_PRIORS`.

    Returns
    -------
    float
        ``b`` for ``"beta"``, ``a`` for ``"lcm"``.

    Examples
    --------
    >>> absent_pseudo_count(0.7, 1.0, "beta"), absent_pseudo_count(0.7, 1.0, "lcm")
    (1.0, 0.7)
    """
    check_choice(feature_prior, "feature_prior", FEATURE_PRIORS)
    return a if feature_prior == "lcm" else b


def trial_times(features, times, n_trials) -> np.ndarray:
    """Time stamps of the trials: ``times``, else the design's, else ``0, 1, 2, ...``.

    Parameters
    ----------
    features : Design or array_like
        The trials; a Design supplies its own time stamps.
    times : array_like (trial,) or None
        Explicit time stamps (non-decreasing).
    n_trials : int
        Number of trials.

    Returns
    -------
    numpy.ndarray (trial,)
        Float time stamps.

    Examples
    --------
    >>> trial_times(np.zeros((3, 2)), None, 3)
    array([0., 1., 2.])
    """
    from pmctx.conditioning.design import Design
    from pmctx.validation import as_float_array

    if times is None:
        if isinstance(features, Design):
            return features.trial_times()
        return np.arange(n_trials, dtype=float)
    times = as_float_array(times, "times", ndim=1)
    if times.shape[0] != n_trials:
        raise ValueError(
            f"times must have one time stamp per trial ({n_trials}), got {times.shape[0]}."
        )
    if (np.diff(times) < 0).any():
        raise ValueError(
            "times must be non-decreasing (trial time stamps in order), got a decrease at "
            f"trial {int(np.argmax(np.diff(times) < 0)) + 1}."
        )
    return times


def temporal_settings(temporal_kernel, timescale, decay):
    """Validate the temporal prior; returns (kernel code, timescale, decay) for the kernel.

    Parameters
    ----------
    temporal_kernel : {None, "power", "exponential"}
        The temporal prior; None is the exchangeable CRP.
    timescale : float
        Kernel timescale (> 0; ``inf`` is the CRP limit).
    decay : float
        Kernel decay (>= 0).

    Returns
    -------
    tuple
        ``(kernel code, timescale, decay)``; code 0 is the CRP.

    Examples
    --------
    >>> temporal_settings(None, 1.0, 1.0)
    (0, 1.0, 0.0)
    """
    if temporal_kernel is None:
        return 0, 1.0, 0.0
    check_choice(temporal_kernel, "temporal_kernel", TEMPORAL_KERNELS)
    if timescale != np.inf:  # an infinite timescale is the CRP limit
        timescale = check_positive(timescale, "timescale")
    decay = check_positive(decay, "decay", allow_zero=True)
    return TEMPORAL_KERNELS.index(temporal_kernel) + 1, timescale, decay

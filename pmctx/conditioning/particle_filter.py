"""Particle filter for the CRP latent-cause model of classical conditioning.

The model (Gershman & Niv; seed 004): trial ``t`` has a latent cause ``c_t`` drawn from a
Chinese restaurant process with concentration ``alpha`` (optionally capped at ``max_causes``
causes and with a ``stickiness`` bonus for the previous trial's cause); each cause emits
binary features independently with Beta(a, b) priors on their probabilities (``a = b =
concentration`` by default), integrated out, so the predictive probability of a present
feature is ``(N_i1k + a) / (N_ik + a + b)`` and of an absent one ``(N_i0k + b) / (N_ik + a + b)``
(eq. 4 with a = b = 1); ``feature_prior="lcm"`` scores an absent one by
``(N_i0k + a) / (N_ik + a + b)`` instead, as the authors' LCM code does. An optional
temporal kernel makes the prior time-sensitive (Gershman, Blei & Niv 2010): old causes lose
weight with the time since their trials.

The filter uses the optimal proposal with resampling on every trial: the ancestor of each new
particle is drawn in proportion to its predictive probability of the trial's features and the
trial's cause from its posterior given that ancestor (eqs. 2-3). ``V_t``, the predicted
probability of the US, is computed *before* the trial's update with the US treated as missing
(eqs. 6-7): a brand-new cause predicts 0.5. ``method="local_map"`` is the single-particle
greedy variant that assigns every trial to its most probable cause.

Examples
--------
>>> from pmctx.conditioning import particle_filter, shipped_design
>>> res = particle_filter(shipped_design("renewal_aba", n_acquisition=5, n_extinction=5),
...                       alpha=0.1, n_particles=200, random_seed=0)
>>> res.V.shape, bool(res.V[0] == 0.5)
((11,), True)
"""

from __future__ import annotations

import numpy as np

from pmctx.conditioning.design import as_feature_matrix
from pmctx.conditioning.filter_kernel import _filter_kernel, _filter_V_many  # noqa: F401
from pmctx.conditioning.filter_result import CRPFilterResult
from pmctx.conditioning.filter_settings import (
    FEATURE_PRIORS,
    _common_checks,
    absent_pseudo_count,
    temporal_settings,
    trial_times,
)
from pmctx.validation import as_rng, check_choice, check_int

__all__ = [
    "FEATURE_PRIORS",
    "CRPFilterResult",
    "absent_pseudo_count",
    "common_uniforms",
    "particle_filter",
]


def particle_filter(
    features,
    *,
    alpha: float = 0.1,
    n_particles: int | None = None,
    concentration: float = 1.0,
    a: float | None = None,
    b: float | None = None,
    max_causes: int | None = None,
    stickiness: float = 0.0,
    method: str = "particle",
    temporal_kernel: str | None = None,
    timescale: float = 1.0,
    decay: float = 1.0,
    times=None,
    random_seed=None,
    uniforms=None,
    feature_prior: str = "beta",
) -> CRPFilterResult:
    """Run the latent-cause particle filter over a conditioning experiment.

    Parameters
    ----------
    features : Design, xarray.DataArray or array_like (n_trials, n_features)
        Binary trial features with the US in column 0; NaN in the US column marks a probe
        trial's unknown US (left out of the update).
    alpha : float, default 0.1
        CRP concentration (>= 0; 0 puts every trial in one cause).
    n_particles : int, optional
        Number of particles M (default 100; ``local_map`` uses exactly 1).
    concentration : float, default 1.0
        Symmetric Beta concentration of each feature's probabilities (1: uniform); the
        default of ``a`` and ``b``.
    a, b : float, optional
        Beta(a, b) pseudo-counts of feature presence and absence (LCM's ``opts.a``,
        ``opts.b``): a cause that has seen ``n1`` presences and ``n0`` absences of a feature
        predicts presence with ``(n1 + a) / (n1 + n0 + a + b)``; a new cause predicts the US
        with ``a / (a + b)``.
    max_causes : int, optional
        Cap K on the number of causes (default: unbounded).
    stickiness : float, default 0.0
        Extra prior weight of the previous trial's cause.
    method : {"particle", "local_map"}
        ``local_map``: one particle, each trial hard-assigned to its most probable cause.
    temporal_kernel : {None, "exponential", "power"}
        Time-sensitive prior (Gershman, Blei & Niv 2010): an old cause's prior weight is
        ``sum over its trials s of K(time_t - time_s)`` instead of its count, with
        ``K(d) = exp(-d / timescale)`` or ``(1 + d / timescale) ** -decay``. ``None`` (or
        an infinite timescale / zero decay) is the CRP.
    timescale, decay : float
        Kernel parameters (in the units of ``times``).
    times : array_like (n_trials,), optional
        Trial time stamps (default: the design's :meth:`~Design.trial_times`, else 0, 1, ...).
    random_seed : int or numpy.random.Generator, optional
        Seed of the resampling and cause-choice uniforms (when ``uniforms`` is not given).
    uniforms : tuple of two arrays (n_trials, n_particles), optional
        The resampling and cause-choice uniforms. Passing the same ones at different
        parameter values gives common random numbers (used by the per-subject fits).
    feature_prior : {"beta", "lcm"}, default "beta"
        ``"beta"``: the normalised Beta(a, b) predictive. ``"lcm"``: the authors' LCM code's
        convention, which scores an absent value by ``(n0 + a) / (n + a + b)`` (unnormalised
        when a != b; the same as "beta" when a == b); use it to reproduce ``LCM_fit``
        estimates (:data:`~pmctx.conditioning.filter_settings.FEATURE_PRIORS`).

    Returns
    -------
    CRPFilterResult

    Examples
    --------
    >>> import numpy as np
    >>> F = np.array([[1, 1, 1], [1, 1, 1], [0, 1, 0], [np.nan, 1, 1]])
    >>> res = particle_filter(F, alpha=0.5, n_particles=50, random_seed=1)
    >>> res.cause_posterior.shape[0], round(float(res.V[0]), 2)
    (4, 0.5)
    """
    F, names = as_feature_matrix(features)
    T = F.shape[0]
    alpha, a, b, n_slots, stickiness = _common_checks(
        alpha, concentration, max_causes, stickiness, T, a, b
    )
    check_choice(method, "method", ["particle", "local_map"])
    b_absent = absent_pseudo_count(a, b, feature_prior)
    if method == "local_map":
        M = 1 if n_particles is None else check_int(n_particles, "n_particles", minimum=1)
        if M != 1:
            raise ValueError(f"method='local_map' uses one particle, got n_particles={M}.")
    elif uniforms is not None:
        M = np.shape(uniforms[0])[1] if n_particles is None else n_particles
        M = check_int(M, "n_particles", minimum=1)
    else:
        M = 100 if n_particles is None else check_int(n_particles, "n_particles", minimum=1)
    kind, timescale, decay = temporal_settings(temporal_kernel, timescale, decay)
    stamps = trial_times(features, times, T) if kind else np.zeros(1)
    if uniforms is None:
        gen = as_rng(random_seed)
        u_resample = gen.random((T, M))
        u_cause = gen.random((T, M))
    else:
        u_resample, u_cause = (np.ascontiguousarray(u, dtype=float) for u in uniforms)
        if u_resample.shape != (T, M) or u_cause.shape != (T, M):
            raise ValueError(
                f"uniforms must be two arrays of shape (n_trials, n_particles) = {(T, M)}, "
                f"got {u_resample.shape} and {u_cause.shape}. Draw them with "
                "common_uniforms(n_trials, n_particles, random_seed)."
            )
    V, V_weighted, log_pred, post, n_causes, assign = _filter_kernel(
        F,
        alpha,
        a,
        b,
        b_absent,
        stickiness,
        n_slots,
        method == "local_map",
        u_resample,
        u_cause,
        stamps,
        kind,
        timescale,
        decay,
    )
    used = max(int(n_causes.max()), 1)
    settings = dict(
        alpha=alpha,
        n_particles=M,
        a=a,
        b=b,
        feature_prior=feature_prior,
        max_causes=max_causes,
        stickiness=stickiness,
        method=method,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        decay=decay,
    )
    return CRPFilterResult(
        V, post[:, :used], n_causes, log_pred, assign, names, settings, V_weighted
    )


def common_uniforms(n_trials: int, n_particles: int, random_seed=None):
    """The two (n_trials, n_particles) uniform arrays the filter consumes (for CRN).

    Parameters
    ----------
    n_trials : int
        Number of trials.
    n_particles : int
        Number of particles.
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.

    Returns
    -------
    tuple of numpy.ndarray
        Two ``(n_trials, n_particles)`` arrays of Uniform(0, 1) numbers.

    Examples
    --------
    >>> u, v = common_uniforms(4, 10, random_seed=0)
    >>> u.shape, v.shape
    ((4, 10), (4, 10))
    """
    gen = as_rng(random_seed)
    return gen.random((n_trials, n_particles)), gen.random((n_trials, n_particles))

"""The per-subject likelihood of the latent-cause model: variants, the filter as a function of
its parameters, and simulated subjects.

:class:`SubjectLikelihood` maps filter parameters (alpha, a, b, stickiness, decay) to ``V_t``
by running the particle filter (or the deterministic local MAP) with stored random numbers,
and scores the responses under a response model. :func:`simulate_subject` is the generative
model the fits and the posterior invert: ``V`` from *one run* of the ``n_particles``-particle
filter with fresh random numbers (LCM's process model), then responses given ``V``.
:mod:`~pmctx.conditioning.fitting` (ML) and :mod:`~pmctx.conditioning.posterior` (PyMC)
build on it.

Examples
--------
>>> from pmctx.conditioning.likelihood import SubjectLikelihood, recovery_design
>>> design = recovery_design(20)
>>> lik = SubjectLikelihood([0.5] * 20, design, method="local_map")
>>> float(lik.V({"alpha": 1.0})[0])
0.5
"""

from __future__ import annotations

import numpy as np

from pmctx.conditioning.design import Design, Phase, as_feature_matrix
from pmctx.conditioning.filter_kernel import _filter_kernel, _filter_V_many
from pmctx.conditioning.filter_settings import (
    FEATURE_PRIORS,
    _common_checks,
    absent_pseudo_count,
    temporal_settings,
    trial_times,
)
from pmctx.conditioning.particle_filter import common_uniforms
from pmctx.conditioning.response import get_response_model
from pmctx.validation import as_float_array, as_rng, check_choice, check_int

__all__ = [
    "FILTER_PARAMETERS",
    "LCM_BOUNDS",
    "LCM_VARIANTS",
    "SubjectLikelihood",
    "recovery_design",
    "simulate_subject",
]

#: Parameters of the filter a fit may free, with their values when fixed.
FILTER_PARAMETERS = {"alpha": 0.1, "a": 1.0, "b": 1.0, "stickiness": 0.0, "decay": 1.0}
#: Parameter boxes (uniform priors) of LCM_fit, plus b and the temporal decay.
LCM_BOUNDS = {
    "alpha": (0.0, 10.0),
    "a": (0.5, 1.5),
    "b": (0.5, 1.5),
    "stickiness": (0.0, 5.0),
    "decay": (0.0, 3.0),
}
#: The three variants of LCM_fit: (free parameters, fixed values).
LCM_VARIANTS = {
    "lcm_sticky": (("alpha", "a", "stickiness"), {}),
    "lcm": (("alpha", "a"), {"stickiness": 0.0}),
    "lcm_one_cause": (("a",), {"alpha": 0.0, "stickiness": 0.0}),
}


def recovery_design(n_trials: int = 100, *, name: str = "recovery") -> Design:
    """A design on which alpha, a and stickiness all leave a trace in ``V``.

    Acquisition in A, extinction in B, a non-reinforced test in A, reacquisition in A, then
    a phase where the reinforced tone alternates with a non-reinforced light every trial (in
    context C), where stickiness matters; ``n_trials`` (>= 20) is split 25/25/5/15/30 %.

    Parameters
    ----------
    n_trials : int, default 100
        Number of trials (>= 20).
    name : str, default "recovery"
        Name of the design.

    Returns
    -------
    Design
        The design.

    Examples
    --------
    >>> recovery_design(100).n_trials
    100
    """
    T = check_int(n_trials, "n_trials", minimum=20)
    sizes = [round(T * f) for f in (0.25, 0.25, 0.05, 0.15)]
    sizes = [max(1, s) for s in sizes]
    rest = T - sum(sizes)
    pattern = [1, 0] * (rest // 2) + [1] * (rest % 2)
    phases = [
        Phase("acquisition", n=sizes[0], cs=["tone"], us=True, context="A"),
        Phase("extinction", n=sizes[1], cs=["tone"], us=False, context="B"),
        Phase("test", n=sizes[2], cs=["tone"], us=False, context="A"),
        Phase("reacquisition", n=sizes[3], cs=["tone"], us=True, context="A"),
    ]
    # Alternate tone+US and light-alone trials, written as single-trial phases.
    for j, reinforced in enumerate(pattern):
        cs = ["tone"] if reinforced else ["light"]
        phases.append(Phase(f"mixed_{j}", n=1, cs=cs, us=bool(reinforced), context="C"))
    return Design(phases, name=name)


def _variant(variant, free, fixed):
    check_choice(variant, "variant", list(LCM_VARIANTS))
    v_free, v_fixed = LCM_VARIANTS[variant]
    free = tuple(v_free if free is None else free)
    for p in free:
        check_choice(p, "free parameter", list(FILTER_PARAMETERS))
    values = {**FILTER_PARAMETERS, **v_fixed, **(fixed or {})}
    unknown = set(values) - set(FILTER_PARAMETERS)
    if unknown:
        raise ValueError(
            f"fixed names unknown parameter(s) {sorted(unknown)}; the filter's parameters "
            f"are {list(FILTER_PARAMETERS)}."
        )
    return free, values


class SubjectLikelihood:
    """Log likelihood of one subject's responses as a function of the filter parameters.

    The features are validated once and the filter kernel is called directly with fixed
    uniforms (common random numbers), so repeated evaluations are cheap and deterministic.

    Parameters
    ----------
    responses : array_like (trial,)
        Conditioned responses; NaN where missing.
    features : Design or array_like (trial, feature)
    response : str or response model, default "linear_gaussian"
    n_particles : int, default 100
        Particles M of the filter (part of the model: LCM's process model is the M-particle
        filter, so ``V`` is random given the parameters unless ``method="local_map"``).
    method : {"particle", "local_map"}, default "particle"
        ``"local_map"``: the deterministic single-particle greedy filter (then
        ``n_particles`` is ignored and the likelihood is exact, with no Monte Carlo noise).
    uniforms : tuple of arrays, optional
        Common random numbers (default: drawn from ``rng``).
    max_causes : int, optional
    temporal_kernel, timescale, times
        The temporal prior (see :func:`~pmctx.conditioning.particle_filter`); its
        ``decay`` is a filter parameter here.
    response_options : dict, optional
        E.g. ``{"n_levels": 5}`` for the ordinal model.
    rng : int or Generator
    feature_prior : {"lcm", "beta"}, default "lcm"
        The feature likelihood (:data:`~pmctx.conditioning.filter_settings.FEATURE_PRIORS`):
        the authors' LCM convention by default, since the variants reproduce ``LCM_fit``;
        the two agree when a == b.
    """

    def __init__(
        self,
        responses,
        features,
        *,
        response="linear_gaussian",
        n_particles=100,
        method="particle",
        uniforms=None,
        max_causes=None,
        temporal_kernel=None,
        timescale=1.0,
        times=None,
        response_options=None,
        rng=None,
        feature_prior="lcm",
    ):
        self.F, self.feature_names = as_feature_matrix(features)
        T = self.F.shape[0]
        self.response = get_response_model(response, **(response_options or {}))
        responses = as_float_array(responses, "responses", allow_nan=True)
        self.responses = self.response.check_responses(responses)
        if np.shape(self.responses) != (T,):
            raise ValueError(
                f"responses must have one entry per trial ({T}), got shape "
                f"{np.shape(self.responses)}. Use NaN for trials without a response."
            )
        if np.isnan(self.responses).all():
            raise ValueError("responses are all NaN; at least one trial needs a response.")
        check_choice(method, "method", ["particle", "local_map"])
        self.method = method
        self.n_particles = (
            1 if method == "local_map" else check_int(n_particles, "n_particles", minimum=1)
        )
        self.uniforms = common_uniforms(T, self.n_particles, rng) if uniforms is None else uniforms
        self.max_causes = max_causes
        self.kernel = temporal_settings(temporal_kernel, timescale, 1.0)
        self.times = trial_times(features, times, T) if self.kernel[0] else np.zeros(1)
        self.feature_prior = feature_prior
        check_choice(feature_prior, "feature_prior", FEATURE_PRIORS)
        self.n_evals = 0

    def _point(self, params: dict):
        # One parameter point as the kernels take it, checked: (alpha, a, b, b_absent,
        # stickiness, decay) and the number of cause slots.
        p = {**FILTER_PARAMETERS, **params}
        alpha, a, b, n_slots, stick = _common_checks(
            p["alpha"], 1.0, self.max_causes, p["stickiness"], self.F.shape[0], p["a"], p["b"]
        )
        b_absent = absent_pseudo_count(a, b, self.feature_prior)
        return (alpha, a, b, b_absent, stick, float(p["decay"])), n_slots

    def V(self, params: dict) -> np.ndarray:
        """The filter's V_t at ``params`` (alpha, a, b, stickiness, decay).

        Parameters
        ----------
        params : dict
            Filter parameters; missing ones take :data:`FILTER_PARAMETERS`.

        Returns
        -------
        numpy.ndarray (trial,)
            The US expectation per trial.
        """
        (alpha, a, b, b_absent, stick, decay), n_slots = self._point(params)
        kind, timescale, _ = self.kernel
        self.n_evals += 1
        return _filter_kernel(
            self.F,
            alpha,
            a,
            b,
            b_absent,
            stick,
            n_slots,
            self.method == "local_map",
            self.uniforms[0],
            self.uniforms[1],
            self.times,
            kind,
            timescale,
            decay,
        )[0]

    def V_many(self, points) -> np.ndarray:
        """``V`` at many parameter points in one compiled call (same uniforms for all).

        Row ``p`` equals ``self.V(points[p])`` bit for bit; the per-call overhead of the
        Python layer is paid once (the fits' grid uses it).

        Parameters
        ----------
        points : sequence of dict
            Filter parameters of each point; missing ones take :data:`FILTER_PARAMETERS`.

        Returns
        -------
        numpy.ndarray (point, trial)
            The US expectation per point and trial.

        Examples
        --------
        >>> lik = SubjectLikelihood([0.5] * 20, recovery_design(20), n_particles=10, rng=0)
        >>> Vs = lik.V_many([{"alpha": 0.5}, {"alpha": 2.0}])
        >>> Vs.shape, bool((Vs[1] == lik.V({"alpha": 2.0})).all())
        ((2, 20), True)
        """
        points = list(points)
        if not points:
            return np.empty((0, self.F.shape[0]))
        checked = [self._point(p) for p in points]
        kind, timescale, _ = self.kernel
        self.n_evals += len(points)
        return _filter_V_many(
            self.F,
            np.array([c[0] for c in checked], dtype=float),
            checked[0][1],  # n_slots depends on max_causes and the trials only
            self.method == "local_map",
            self.uniforms[0],
            self.uniforms[1],
            self.times,
            kind,
            timescale,
        )

    def log_likelihoods(self, points) -> np.ndarray:
        """Profile log likelihood at many parameter points (see :meth:`V_many`).

        Parameters
        ----------
        points : sequence of dict
            Filter parameters of each point.

        Returns
        -------
        numpy.ndarray (point,)
            ``self(points[p])`` for every point, with one compiled filter call for all.
        """
        return np.array(
            [self.response.fit(V, self.responses).log_likelihood for V in self.V_many(points)]
        )

    @property
    def deterministic(self) -> bool:
        """Whether ``V`` is a deterministic function of the parameters (the local MAP)."""
        return self.method == "local_map"

    def profile(self, params: dict):
        """(V, ResponseFit): the response parameters maximised at these filter parameters.

        Parameters
        ----------
        params : dict
            Filter parameters.

        Returns
        -------
        V : numpy.ndarray (trial,)
            The filter's ``V_t``.
        fit : ResponseFit
            The response model's best parameters and log likelihood given ``V``.
        """
        V = self.V(params)
        return V, self.response.fit(V, self.responses)

    def __call__(self, params: dict) -> float:
        return self.profile(params)[1].log_likelihood


def simulate_subject(
    features,
    params: dict,
    *,
    variant="lcm_sticky",
    response="linear_gaussian",
    n_particles=100,
    method="particle",
    max_causes=None,
    temporal_kernel=None,
    timescale=1.0,
    response_options=None,
    rng=None,
    feature_prior="lcm",
) -> dict:
    """Simulate one subject: V from the filter at ``params``, then responses.

    ``params`` holds filter parameters (missing ones take the variant's fixed values or
    :data:`FILTER_PARAMETERS`) and the response model's parameters (e.g. ``gain``, ``sd``
    and optionally ``intercept`` for ``linear_gaussian``). ``V`` is one run of the filter with
    fresh random numbers from ``rng`` (``method="local_map"``: the deterministic local MAP).
    Returns a dict with ``V``, ``responses`` and ``params`` (the full filter parameters used).

    Parameters
    ----------
    features : Design or array_like (trial, feature)
        The trials.
    params : dict
        Filter and response parameters.
    variant : {"lcm_sticky", "lcm", "lcm_one_cause"}, default "lcm_sticky"
        Model variant (its fixed values override ``params``).
    response : str or response model, default "linear_gaussian"
        The response model.
    n_particles : int, default 100
        Particles of the filter.
    method : {"particle", "local_map"}, default "particle"
        Filter method.
    max_causes : int, optional
        Largest number of causes.
    temporal_kernel : {None, "power", "exponential"}, optional
        Temporal prior.
    timescale : float, default 1.0
        Temporal-prior timescale.
    response_options : dict, optional
        Options of the response model.
    rng : int or numpy.random.Generator, optional
        Random seed or generator.
    feature_prior : {"lcm", "beta"}, default "lcm"
        Feature likelihood, as in :class:`SubjectLikelihood`.

    Returns
    -------
    dict
        ``V``, ``responses`` and ``params``.
    """
    gen = as_rng(rng)
    _, values = _variant(variant, None, None)
    model = get_response_model(response, **(response_options or {}))
    filt = {**values, **{k: v for k, v in params.items() if k in FILTER_PARAMETERS}}
    for k, v in LCM_VARIANTS[variant][1].items():
        filt[k] = v  # the variant's fixed values win
    lik = SubjectLikelihood(
        np.zeros(as_feature_matrix(features)[0].shape[0]),
        features,
        n_particles=n_particles,
        method=method,
        max_causes=max_causes,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        rng=gen,
        feature_prior=feature_prior,
    )
    V = lik.V(filt)
    resp_params = {k: v for k, v in params.items() if k not in FILTER_PARAMETERS}
    return {"V": V, "responses": model.simulate(V, resp_params, gen), "params": filt}

"""Per-subject maximum-likelihood fits of the latent-cause model to conditioned responses.

What the LCM code's ``LCM_fit`` does, as named variants with the same parameter boxes and
uniform priors (so ML = MAP):

============== ============================ =============================================
variant        free filter parameters       fixed
============== ============================ =============================================
lcm_sticky     alpha in [0, 10], a in       b = 1
               [0.5, 1.5], stickiness in
               [0, 5]
lcm            alpha, a                     stickiness = 0, b = 1
lcm_one_cause  a                            alpha = 0 (one cause), stickiness = 0, b = 1
============== ============================ =============================================

``free=`` / ``fixed=`` override a variant (e.g. ``free=("alpha", "a", "b")`` fits both
pseudo-counts, ``fixed={"decay": 1.0}`` with ``temporal_kernel="power"`` uses the temporal
prior). The response model's own parameters (e.g. gain, intercept and sd of the linear-Gaussian
CR model) are profiled out in closed form or by an inner optimisation, as ``LCM_lik`` does.

The particle filter is run with **common random numbers**: one set of uniforms per subject,
reused at every parameter value, so the likelihood surface is a deterministic function the
optimiser can compare across points (it is still piecewise smooth: a resampling choice can
flip between nearby values, so a derivative-free optimiser, Nelder-Mead with bounds, is used
from several starts). ``SubjectFit.log_evidence_bic`` (``loglik - k/2 log n``, the BIC
approximation to the log marginal likelihood, with ``k`` counting response parameters) and
the pointwise log likelihood at the optimum feed model selection across subjects.

Examples
--------
>>> import numpy as np
>>> from pmctx.conditioning.fitting import fit_subject, simulate_subject, recovery_design
>>> design = recovery_design(40)
>>> data = simulate_subject(design, {"alpha": 1.0, "a": 1.0, "gain": 1.0, "sd": 0.1},
...                         variant="lcm", n_particles=50, rng=0)
>>> fit = fit_subject(data["responses"], design, variant="lcm", n_particles=50,
...                   n_starts=2, max_evals=40, rng=1)
>>> sorted(fit.params)
['a', 'alpha', 'b', 'gain', 'intercept', 'sd', 'stickiness']
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from scipy import optimize

from pmctx.conditioning.design import Design, Phase, as_feature_matrix
from pmctx.conditioning.particle_filter import (
    _common_checks,
    _filter_kernel,
    common_uniforms,
    temporal_settings,
    trial_times,
)
from pmctx.conditioning.response import get_response_model
from pmctx.validation import as_rng, check_choice, check_int

__all__ = [
    "FILTER_PARAMETERS",
    "LCM_BOUNDS",
    "LCM_VARIANTS",
    "SubjectFit",
    "SubjectLikelihood",
    "compare_variants",
    "fit_subject",
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
    uniforms : tuple of arrays, optional
        Common random numbers (default: drawn from ``rng``).
    max_causes : int, optional
    temporal_kernel, timescale, times
        The temporal prior (see :func:`~pmctx.conditioning.particle_filter`); its
        ``decay`` is a filter parameter here.
    response_options : dict, optional
        E.g. ``{"n_levels": 5}`` for the ordinal model.
    rng : int or Generator
    """

    def __init__(
        self,
        responses,
        features,
        *,
        response="linear_gaussian",
        n_particles=100,
        uniforms=None,
        max_causes=None,
        temporal_kernel=None,
        timescale=1.0,
        times=None,
        response_options=None,
        rng=None,
    ):
        self.F, self.feature_names = as_feature_matrix(features)
        T = self.F.shape[0]
        self.response = get_response_model(response, **(response_options or {}))
        self.responses = self.response.check_responses(responses)
        if np.shape(self.responses) != (T,):
            raise ValueError(
                f"responses must have one entry per trial ({T}), got shape "
                f"{np.shape(self.responses)}. Use NaN for trials without a response."
            )
        if np.isnan(self.responses).all():
            raise ValueError("responses are all NaN; at least one trial needs a response.")
        self.n_particles = check_int(n_particles, "n_particles", minimum=1)
        self.uniforms = common_uniforms(T, self.n_particles, rng) if uniforms is None else uniforms
        self.max_causes = max_causes
        self.kernel = temporal_settings(temporal_kernel, timescale, 1.0)
        self.times = trial_times(features, times, T) if self.kernel[0] else np.zeros(1)
        self.n_evals = 0

    def V(self, params: dict) -> np.ndarray:
        """The filter's V_t at ``params`` (alpha, a, b, stickiness, decay)."""
        p = {**FILTER_PARAMETERS, **params}
        alpha, a, b, n_slots, stick = _common_checks(
            p["alpha"], 1.0, self.max_causes, p["stickiness"], self.F.shape[0], p["a"], p["b"]
        )
        kind, timescale, _ = self.kernel
        self.n_evals += 1
        return _filter_kernel(
            self.F,
            alpha,
            a,
            b,
            stick,
            n_slots,
            False,
            self.uniforms[0],
            self.uniforms[1],
            self.times,
            kind,
            timescale,
            float(p["decay"]),
        )[0]

    def profile(self, params: dict):
        """(V, ResponseFit): the response parameters maximised at these filter parameters."""
        V = self.V(params)
        return V, self.response.fit(V, self.responses)

    def __call__(self, params: dict) -> float:
        return self.profile(params)[1].log_likelihood


@dataclasses.dataclass(frozen=True)
class SubjectFit:
    """Result of :func:`fit_subject`.

    Attributes
    ----------
    variant : str
    params : dict
        Filter parameters (free and fixed) and response parameters at the optimum.
    free : tuple of str
        The fitted filter parameters.
    log_likelihood : float
    pointwise : ndarray (n_observed,)
        Log likelihood of each observed response at the optimum.
    n_params : int
        Free filter + response parameters.
    n_observed : int
    V : ndarray (trial,)
    starts : list of dict
        Every start's optimum (parameters and log likelihood), best first.
    n_evals : int
        Particle-filter runs used.
    seconds : float
    """

    variant: str
    params: dict
    free: tuple
    log_likelihood: float
    pointwise: np.ndarray
    n_params: int
    n_observed: int
    V: np.ndarray
    starts: list
    n_evals: int
    seconds: float

    @property
    def bic(self) -> float:
        return float(self.n_params * np.log(self.n_observed) - 2 * self.log_likelihood)

    @property
    def aic(self) -> float:
        return float(2 * self.n_params - 2 * self.log_likelihood)

    @property
    def log_evidence_bic(self) -> float:
        """BIC approximation of the log marginal likelihood, ``-BIC / 2``."""
        return -0.5 * self.bic


def _to_unit(name, value, bounds):
    lo, hi = bounds[name]
    u = (value - lo) / (hi - lo)
    # alpha acts mostly at small values: search it on a square-root scale.
    return np.sqrt(max(u, 0.0)) if name == "alpha" else u


def _from_unit(name, u, bounds):
    lo, hi = bounds[name]
    u = min(max(u, 0.0), 1.0)
    return lo + (hi - lo) * (u * u if name == "alpha" else u)


def fit_subject(
    responses,
    features,
    *,
    variant="lcm_sticky",
    response="linear_gaussian",
    free=None,
    fixed=None,
    bounds=None,
    n_particles=100,
    n_starts=5,
    max_evals=None,
    max_causes=None,
    temporal_kernel=None,
    timescale=1.0,
    times=None,
    response_options=None,
    rng=None,
) -> SubjectFit:
    """Maximum-likelihood fit of one subject's conditioned responses (LCM_fit's optimiser).

    Parameters
    ----------
    responses : array_like (trial,)
        Conditioned responses, NaN where missing (skipped).
    features : Design or array_like (trial, feature)
    variant : {"lcm_sticky", "lcm", "lcm_one_cause"}
    response : {"linear_gaussian", "logistic", "probit", "ordinal"} or a response model
    free, fixed : optional
        Override the variant's free parameters / fixed values.
    bounds : dict, optional
        Parameter boxes (default :data:`LCM_BOUNDS`); the prior is uniform on them.
    n_particles : int, default 100
        LCM's default M.
    n_starts : int, default 5
        Nelder-Mead starts: the first from the box's centre-ish default, the others uniform
        random in the box (as ``mfit_optimize`` draws them).
    max_evals : int, optional
        Filter runs per start (default ``80 * n_free``).
    max_causes, temporal_kernel, timescale, times, response_options
        See :class:`SubjectLikelihood`.
    rng : int or Generator
        Seeds the common random numbers and the starts.

    Returns
    -------
    SubjectFit
    """
    gen = as_rng(rng)
    free, values = _variant(variant, free, fixed)
    bounds = {**LCM_BOUNDS, **(bounds or {})}
    for p in free:
        lo, hi = bounds[p]
        if not lo < hi:
            raise ValueError(f"bounds[{p!r}] must be (low, high) with low < high, got {(lo, hi)}.")
    n_starts = check_int(n_starts, "n_starts", minimum=1)
    lik = SubjectLikelihood(
        responses,
        features,
        response=response,
        n_particles=n_particles,
        max_causes=max_causes,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        times=times,
        response_options=response_options,
        rng=gen,
    )
    start_time = time.perf_counter()

    def params_of(u):
        return {**values, **{p: _from_unit(p, ui, bounds) for p, ui in zip(free, u, strict=True)}}

    d = len(free)
    results = []
    if d == 0:
        results.append((lik(values), np.zeros(0)))
    max_evals = (
        80 * max(d, 1) if max_evals is None else check_int(max_evals, "max_evals", minimum=1)
    )
    for s in range(n_starts if d else 0):
        if s == 0:
            x0 = np.array(
                [_to_unit(p, min(max(values[p], bounds[p][0]), bounds[p][1]), bounds) for p in free]
            )
            x0 = np.clip(x0, 0.05, 0.95)
        else:
            x0 = gen.uniform(0.05, 0.95, d)
        simplex = np.vstack([x0, x0 + 0.2 * np.where(np.eye(d) > 0, np.sign(0.5 - x0), 0)])
        res = optimize.minimize(
            lambda u: -lik(params_of(u)),
            x0,
            method="Nelder-Mead",
            bounds=[(0.0, 1.0)] * d,
            options={"initial_simplex": simplex, "maxfev": max_evals, "xatol": 1e-3, "fatol": 1e-4},
        )
        results.append((-res.fun, res.x))
    results.sort(key=lambda r: -r[0])
    best = params_of(results[0][1])
    V, rfit = lik.profile(best)
    starts = [{**params_of(u), "log_likelihood": ll} for ll, u in results]
    return SubjectFit(
        variant=variant,
        # decay is a parameter only under the temporal prior.
        params={
            **{k: v for k, v in best.items() if k != "decay" or temporal_kernel is not None},
            **rfit.params,
        },
        free=free,
        log_likelihood=rfit.log_likelihood,
        pointwise=rfit.pointwise,
        n_params=d + rfit.n_params,
        n_observed=rfit.n_observed,
        V=V,
        starts=starts,
        n_evals=lik.n_evals,
        seconds=time.perf_counter() - start_time,
    )


def compare_variants(responses, features, *, variants=tuple(LCM_VARIANTS), rng=None, **options):
    """Fit every variant to one subject; a ``pandas.DataFrame`` with one row per variant.

    Columns: ``log_likelihood``, ``n_params``, ``bic``, ``aic``, ``log_evidence_bic`` and the
    fitted parameters; ``options`` go to :func:`fit_subject`. The same common random numbers
    (``rng``) are used for every variant, so differences are not filter noise.
    """
    import pandas as pd

    seed = int(as_rng(rng).integers(2**63 - 1))
    rows = {}
    fits = {}
    for v in variants:
        fit = fit_subject(responses, features, variant=v, rng=seed, **options)
        fits[v] = fit
        rows[v] = {
            "log_likelihood": fit.log_likelihood,
            "n_params": fit.n_params,
            "bic": fit.bic,
            "aic": fit.aic,
            "log_evidence_bic": fit.log_evidence_bic,
            **fit.params,
        }
    table = pd.DataFrame(rows).T
    table.attrs["fits"] = fits
    return table


def simulate_subject(
    features,
    params: dict,
    *,
    variant="lcm_sticky",
    response="linear_gaussian",
    n_particles=100,
    max_causes=None,
    temporal_kernel=None,
    timescale=1.0,
    response_options=None,
    rng=None,
) -> dict:
    """Simulate one subject: V from the filter at ``params``, then responses.

    ``params`` holds filter parameters (missing ones take the variant's fixed values or
    :data:`FILTER_PARAMETERS`) and the response model's parameters (e.g. ``gain``, ``sd``
    and optionally ``intercept`` for ``linear_gaussian``). Returns a dict with ``V``,
    ``responses`` and ``params`` (the full filter parameters used).
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
        max_causes=max_causes,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        rng=gen,
    )
    V = lik.V(filt)
    resp_params = {k: v for k, v in params.items() if k not in FILTER_PARAMETERS}
    return {"V": V, "responses": model.simulate(V, resp_params, gen), "params": filt}

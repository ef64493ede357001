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
...                   n_starts=2, max_evals=40, random_seed=1)
>>> sorted(fit.params)
['a', 'alpha', 'b', 'gain', 'intercept', 'sd', 'stickiness']
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from scipy import optimize

from pmctx.conditioning.likelihood import (
    FILTER_PARAMETERS,
    LCM_BOUNDS,
    LCM_VARIANTS,
    SubjectLikelihood,
    _variant,
    recovery_design,
    simulate_subject,
)
from pmctx.validation import as_rng, check_int

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
    on_bound : tuple of str
        Free parameters whose best value lies on a bound of its box (the maximum may lie
        beyond it: widen ``bounds`` if the box is not a hard limit).

    Examples
    --------
    >>> fit = SubjectFit(variant="lcm", params={}, free=("alpha", "a"), log_likelihood=-10.0,
    ...                  pointwise=np.zeros(20), n_params=4, n_observed=20, V=np.zeros(20),
    ...                  starts=[], n_evals=0, seconds=0.0)

    >>> round(fit.bic, 3), fit.aic, round(fit.log_evidence_bic, 3)
    (31.983, 28.0, -15.991)
    >>> fit  # doctest: +NORMALIZE_WHITESPACE
    SubjectFit(variant='lcm', log_likelihood=-10, bic=31.98, n_params=4, n_observed=20,
               params={}, 0 starts, 0 filter runs, 0.0 s)
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
    on_bound: tuple = ()

    def __repr__(self) -> str:
        # A short summary; the arrays (pointwise, V) and every start stay in the attributes.
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return (
            f"SubjectFit(variant={self.variant!r}, log_likelihood={self.log_likelihood:.4g}, "
            f"bic={self.bic:.4g}, n_params={self.n_params}, n_observed={self.n_observed}, "
            f"params={{{params}}}, {len(self.starts)} starts, {self.n_evals} filter runs, "
            f"{self.seconds:.1f} s"
            + (f", on bound: {', '.join(self.on_bound)}" if self.on_bound else "")
            + ")"
        )

    @property
    def bic(self) -> float:
        """Bayesian information criterion, ``n_params log(n_observed) - 2 log_likelihood``.

        Returns
        -------
        float
            The BIC (lower is better).

        Examples
        --------

        >>> fit = SubjectFit(variant="lcm", params={}, free=("alpha", "a"), log_likelihood=-10.0,
        ...                  pointwise=np.zeros(20), n_params=4, n_observed=20, V=np.zeros(20),
        ...                  starts=[], n_evals=0, seconds=0.0)

        >>> round(fit.bic, 3)
        31.983
        """
        return float(self.n_params * np.log(self.n_observed) - 2 * self.log_likelihood)

    @property
    def aic(self) -> float:
        """Akaike information criterion, ``2 n_params - 2 log_likelihood``.

        Returns
        -------
        float
            The AIC (lower is better).

        Examples
        --------

        >>> fit = SubjectFit(variant="lcm", params={}, free=("alpha", "a"), log_likelihood=-10.0,
        ...                  pointwise=np.zeros(20), n_params=4, n_observed=20, V=np.zeros(20),
        ...                  starts=[], n_evals=0, seconds=0.0)

        >>> fit.aic
        28.0
        """
        return float(2 * self.n_params - 2 * self.log_likelihood)

    @property
    def log_evidence_bic(self) -> float:
        """BIC approximation of the log marginal likelihood, ``-BIC / 2``.

        Returns
        -------
        float
            ``-bic / 2``.

        Examples
        --------
        >>> fit = SubjectFit(variant="lcm", params={}, free=("alpha", "a"), log_likelihood=-10.0,
        ...                  pointwise=np.zeros(20), n_params=4, n_observed=20, V=np.zeros(20),
        ...                  starts=[], n_evals=0, seconds=0.0)

        >>> round(fit.log_evidence_bic, 3)
        -15.991
        """
        return -0.5 * self.bic


def _short(value):
    # Numbers with 4 significant digits (no np.float64(...) wrapper), anything else as repr.
    if isinstance(value, (bool, np.bool_)) or not np.isscalar(value):
        return repr(value)
    return f"{value:.4g}" if isinstance(value, (int, float, np.number)) else repr(value)


def _to_unit(name, value, bounds):
    lo, hi = bounds[name]
    u = (value - lo) / (hi - lo)
    # alpha acts mostly at small values: search it on a square-root scale.
    return np.sqrt(max(u, 0.0)) if name == "alpha" else u


def _from_unit(name, u, bounds):
    lo, hi = bounds[name]
    u = min(max(u, 0.0), 1.0)
    return lo + (hi - lo) * (u * u if name == "alpha" else u)


#: Points per free parameter of the coarse grid that starts :func:`fit_subject`'s search,
#: by number of free filter parameters (about 30-350 filter runs).
GRID_POINTS = {1: 31, 2: 13, 3: 7}


def _grid_starts(objective, d: int, n_points: int, n_starts: int):
    """Evaluate ``objective`` (to maximise; it takes all points at once) on a grid over the
    unit cube, bounds included; return every grid point with its value, and the ``n_starts``
    best, best first."""
    axes = [np.linspace(0.0, 1.0, n_points)] * d
    points = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    values = np.asarray(objective(points), dtype=float)
    order = np.argsort(-values, kind="stable")
    return points, values, order[:n_starts]


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
    method="particle",
    n_starts=3,
    max_evals=None,
    grid_points=None,
    max_causes=None,
    temporal_kernel=None,
    timescale=1.0,
    times=None,
    response_options=None,
    random_seed=None,
    feature_prior="lcm",
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
    method : {"particle", "local_map"}, default "particle"
        ``"local_map"`` fits the deterministic local-MAP filter (see :class:`SubjectLikelihood`).
    n_starts : int, default 3
        Nelder-Mead refinements, started from the best points of a grid over the box.
    max_evals : int, optional
        Filter runs per refinement (default ``80 * n_free``).
    grid_points : int, optional
        Points per free parameter of that grid, bounds included (default
        :data:`GRID_POINTS`; ``alpha`` on a square-root scale). The likelihood is piecewise
        constant in the filter parameters under the local MAP (and noisy under particles),
        where a local optimiser alone stops on plateaus: the fit is never worse than the
        grid's best point, and ``on_bound`` says when the best sits on a bound.
    max_causes, temporal_kernel, timescale, times, response_options
        See :class:`SubjectLikelihood`.
    random_seed : int or numpy.random.Generator, optional
        Seeds the common random numbers and the starts.
    feature_prior : {"lcm", "beta"}, default "lcm"
        Feature likelihood: the authors' LCM convention (what ``LCM_fit`` estimates mean;
        default) or the normalised Beta predictive (see
        :data:`~pmctx.conditioning.filter_settings.FEATURE_PRIORS`).

    Returns
    -------
    SubjectFit

    Examples
    --------
    >>> design = recovery_design(20)
    >>> data = simulate_subject(design, {"alpha": 1.0, "a": 1.0, "gain": 1.0, "sd": 0.1},
    ...                         variant="lcm", n_particles=20, rng=0)
    >>> fit = fit_subject(data["responses"], design, variant="lcm", n_particles=20,
    ...                   n_starts=1, max_evals=10, random_seed=1)
    >>> fit.free, fit.n_observed
    (('alpha', 'a'), 20)
    """
    gen = as_rng(random_seed)
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
        method=method,
        max_causes=max_causes,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        times=times,
        response_options=response_options,
        rng=gen,
        feature_prior=feature_prior,
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
    if d:
        n_points = GRID_POINTS.get(d, 5) if grid_points is None else grid_points
        n_points = check_int(n_points, "grid_points", minimum=2)
        points, grid_values, best_points = _grid_starts(
            lambda us: lik.log_likelihoods([params_of(u) for u in us]), d, n_points, n_starts
        )
        results += [(float(grid_values[i]), points[i]) for i in best_points]
        step = 1.0 / (n_points - 1)
    for i in best_points if d else []:
        x0 = points[i]
        # A simplex one grid step wide, pointing into the box from a point on its edge.
        direction = np.where(x0 + step <= 1.0, 1.0, -1.0)
        simplex = np.vstack([x0, x0 + step * np.diag(direction)])
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
    on_bound = tuple(
        p for p, u in zip(free, results[0][1], strict=True) if u <= 1e-9 or u >= 1.0 - 1e-9
    )
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
        on_bound=on_bound,
    )


def compare_variants(
    responses, features, *, variants=tuple(LCM_VARIANTS), random_seed=None, **options
):
    """Fit every variant to one subject; a ``pandas.DataFrame`` with one row per variant.

    Columns: ``log_likelihood``, ``n_params``, ``bic``, ``aic``, ``log_evidence_bic`` and the
    fitted parameters; ``options`` go to :func:`fit_subject`. The same common random numbers
    (``random_seed``) are used for every variant, so differences are not filter noise.

    Parameters
    ----------
    responses : array_like (trial,)
        Conditioned responses, NaN where missing.
    features : Design or array_like (trial, feature)
        The trial design, as in :func:`fit_subject`.
    variants : sequence of str, default all of :data:`LCM_VARIANTS`
        The variants to fit.
    random_seed : int or numpy.random.Generator, optional
        Seeds the common random numbers shared by all variants.
    **options
        Passed to :func:`fit_subject` (``n_particles``, ``n_starts``, ``response``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per variant; ``attrs["fits"]`` holds the :class:`SubjectFit` of each.

    Examples
    --------
    >>> design = recovery_design(20)
    >>> data = simulate_subject(design, {"alpha": 1.0, "a": 1.0, "gain": 1.0, "sd": 0.1},
    ...                         variant="lcm", n_particles=20, rng=0)
    >>> table = compare_variants(data["responses"], design, variants=("lcm", "lcm_one_cause"),
    ...                          n_particles=20, n_starts=1, max_evals=10, random_seed=1)
    >>> list(table.index), "log_evidence_bic" in table.columns
    (['lcm', 'lcm_one_cause'], True)
    """
    import pandas as pd

    seed = int(as_rng(random_seed).integers(2**63 - 1))
    rows = {}
    fits = {}
    for v in variants:
        fit = fit_subject(responses, features, variant=v, random_seed=seed, **options)
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

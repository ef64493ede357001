"""Hyperparameter fitting for the Laplace GUM (seed 002, Appendix B.4).

* :func:`fit_evidence` maximises the Laplace log evidence over log hyperparameters with its
  gradient (L-BFGS-B; :mod:`pmctx.gum.evidence`);
* :func:`fit_cv` maximises the K-fold cross-validated log-likelihood of the MAP (B.4.1) with
  the derivative-free Nelder-Mead simplex.

Both search log-scale parameters after a coarse sweep and warm-start every inner Newton fit
from the previous MAP mapped into the new non-centred coordinates.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from pmctx.exceptions import ConvergenceWarning
from pmctx.gum.evidence import log_evidence_gradient
from pmctx.gum.families import DISPERSION
from pmctx.gum.laplace import laplace_fit
from pmctx.gum.streams import fixed_seed
from pmctx.gum.terms import GP
from pmctx.validation import as_rng, check_int

__all__ = ["HyperResult", "cv_score", "fit_cv", "fit_evidence", "free_hyperparameters"]


@dataclass
class HyperResult:
    """Fitted hyperparameters, the objective at the optimum and at the start.

    Attributes
    ----------
    hyperparameters : dict
        The model's hyperparameters after the fit (``GumModel.hyperparameters()``).
    objective : float
        The objective at the optimum: the Laplace log evidence (:func:`fit_evidence`) or the
        cross-validated log-likelihood (:func:`fit_cv`).
    initial_objective : float
        The objective at the declared hyperparameters, for comparison.
    n_evaluations : int
        Objective evaluations used.
    interrupted : bool, default False
        Whether the search was stopped with Ctrl-C (the best point so far is kept).
    """

    hyperparameters: dict
    objective: float
    initial_objective: float
    n_evaluations: int
    interrupted: bool = False


def free_hyperparameters(gum_model, which=None) -> list[tuple[str, str]]:
    """``(function, key)`` pairs to fit: GP lengthscales, the shared variance of grouped GPs
    (``f(x|g)``), the shared sd of random effects (``1|g``, ``x|g``), plus ``noise_sd`` for
    Gaussian data.

    Variances and periods stay at their declared values unless listed in ``which`` (e.g.
    ``[("f_x1", "lengthscale"), ("f_x1", "variance"), ("f_x2", "period")]``).

    Parameters
    ----------
    gum_model : GumModel
        The declared model.
    which : list of (str, str), optional
        ``(function, key)`` pairs to fit instead of the defaults.

    Returns
    -------
    list of (str, str)
        The pairs, ``("noise_sd", "noise_sd")`` standing for the dispersion.
    """
    if which is not None:
        return list(which)
    pairs = [
        (name, key)
        for name, fn in gum_model.design.functions.items()
        if isinstance(fn.leaf, GP)
        for key in ("lengthscale",)
    ]
    # the shared variance of a grouped GP f(x|g) is its pooling strength: fitted by default
    pairs += [
        (name, "variance")
        for name, fn in gum_model.design.functions.items()
        if getattr(fn, "levels", None) is not None
    ]
    pairs += [
        (name, "sd")
        for name, fn in gum_model.design.functions.items()
        if getattr(fn.leaf, "random", False)
    ]
    if gum_model.design.family in DISPERSION:
        pairs.append(("noise_sd", "noise_sd"))  # the dispersion (noise sd or NB alpha)
    return pairs


def _get(gum_model, pairs) -> np.ndarray:
    d = gum_model.design
    values = []
    for name, key in pairs:
        if name == "noise_sd":
            values.append(d.noise_sd if d.noise_sd is not None else float(np.std(d.y)) / 2 or 1.0)
        else:
            values.append(d.functions[name].hyper[key])
    return np.log(np.asarray(values, dtype=float))


def _set(gum_model, pairs, log_values) -> None:
    settings: dict = {}
    for (name, key), value in zip(pairs, np.exp(np.clip(log_values, -12, 12))):
        if name == "noise_sd":
            settings["noise_sd"] = float(value)
        else:
            settings.setdefault(name, {})[key] = float(value)
    gum_model.set_hyperparameters(settings)


class _WarmStart:
    """Map the last MAP into the current coordinates before the next Newton fit."""

    def __init__(self, design):
        self.design, self.u, self.thetas = design, None, None

    def start(self):
        if self.u is None:
            return None
        return self.design.warm_start(self.u, self.thetas)

    def remember(self, u):
        self.u, self.thetas = u.copy(), self.design.thetas(u)


def fit_evidence(
    gum_model, *, which=None, max_evaluations: int = 300, gradient: bool = True
) -> HyperResult:
    """Maximise the Laplace log evidence over (log) hyperparameters.

    A coarse joint sweep (x 1/8 ... x 8) picks the basin, then L-BFGS-B climbs with the
    evidence's gradient (:func:`pmctx.gum.evidence.log_evidence_gradient`: analytic kernel
    derivatives and implicit differentiation at the mode, no extra Newton search). Every
    Newton fit starts from the previous mode mapped into the new coordinates. The model keeps
    the fitted hyperparameters and the Laplace fit of the best evaluation, so a following
    ``g.laplace()`` reuses it instead of refitting.

    Parameters
    ----------
    gum_model : GumModel
    which : list of (function, key), optional
        Hyperparameters to fit (default :func:`free_hyperparameters`).
    max_evaluations : int, default 300
        Newton fits (evidence evaluations), the sweep's included.
    gradient : bool, default True
        False uses the derivative-free Nelder-Mead simplex instead of L-BFGS-B.

    Returns
    -------
    HyperResult
        The fitted hyperparameters (the model keeps them and its ``laplace_result``).
        A model with nothing to fit (a GLM without GP terms, random effects or a dispersion,
        such as a Poisson ``"y ~ x1 + x2"``) gets its Laplace fit and evidence unchanged
        (``objective == initial_objective``, one evaluation), so it can be compared with
        evidence-fitted GUMs.
    """
    pairs = free_hyperparameters(gum_model, which)
    warm = _WarmStart(gum_model.design)
    fits: dict = {}

    def fit_at(log_values):
        key = tuple(np.round(log_values, 12))
        if key not in fits:
            _set(gum_model, pairs, log_values)
            try:
                result = laplace_fit(gum_model.design, u0=warm.start(), max_iter=60, tol=1e-8)
            except np.linalg.LinAlgError:
                result = None
            if result is not None and np.isfinite(result.log_evidence):
                warm.remember(result.u_map)
            else:
                result = None
            fits.clear()  # keep only the latest fit: the gradient call follows its value call
            fits[key] = result
        return fits[key]

    def negative_evidence(log_values):
        result = fit_at(log_values)
        return np.inf if result is None else -result.log_evidence

    def negative_gradient(log_values):
        result = fit_at(log_values)
        if result is None:
            return np.zeros(len(pairs))
        _set_quiet(gum_model, pairs, log_values, result)
        return -log_evidence_gradient(gum_model.design, result, pairs)

    x0 = _get(gum_model, pairs)
    _set(gum_model, pairs, x0)
    warm.remember(gum_model.fit_laplace().u_map)  # multi-start: pick the best mode first
    initial = -negative_evidence(x0)
    best, best_value, n_eval, interrupted, best_fit = _optimise(
        negative_evidence,
        x0,
        max_evaluations,
        [key == "period" for _, key in pairs],
        jac=negative_gradient if gradient else None,
        fit_at=fit_at,
    )
    _set(gum_model, pairs, best)
    if best_fit is None:
        gum_model.fit_laplace(u0=warm.start())
    else:
        gum_model.laplace_result = best_fit  # the fit at these hyperparameters: reuse it
    return HyperResult(gum_model.hyperparameters(), -best_value, initial, n_eval, interrupted)


def _set_quiet(gum_model, pairs, log_values, result) -> None:
    """Make sure the design holds ``log_values`` (the fit ``result`` was made under them)."""
    current = _get(gum_model, pairs)
    if not np.allclose(current, np.clip(log_values, -12, 12), rtol=0, atol=1e-12):
        _set(gum_model, pairs, log_values)


def _optimise(
    objective, x0: np.ndarray, max_evaluations: int, periods=None, *, jac=None, fit_at=None
):
    """Coarse sweep + local search on ``objective``; Ctrl-C returns the best point so far.

    With ``jac`` (the objective's gradient) the local search is L-BFGS-B, otherwise the
    Nelder-Mead simplex. ``periods`` marks period hyperparameters: they are multimodal
    (multiples of the period) and diverge along the ridge where a periodic kernel becomes an
    SE kernel, so they are left out of the sweep and searched locally with small steps.
    Returns the best point, its value, the number of evaluations, whether the search was
    interrupted, and ``fit_at(best)``'s stored fit when it is still at hand (else None).
    """
    periods = np.zeros(len(x0), bool) if periods is None else np.asarray(periods, bool)
    record = {"x": np.array(x0, dtype=float), "f": np.inf, "n": 0, "fit": None}

    def tracked(x):
        value = objective(x)
        record["n"] += 1
        if value < record["f"]:
            record["x"], record["f"] = np.array(x, dtype=float), value
            record["fit"] = None if fit_at is None else fit_at(x)
        return value

    interrupted = False
    try:
        tracked(x0)
        if len(x0) == 0:  # nothing to fit (e.g. a GLM): the evidence at the model as it is
            return record["x"], float(record["f"]), record["n"], interrupted, record["fit"]
        start = _coarse_start(tracked, x0, ~periods)
        if jac is None:
            minimize(
                tracked,
                start,
                method="Nelder-Mead",
                options={
                    "maxfev": max_evaluations,
                    "xatol": 1e-2,
                    "fatol": 1e-2,
                    "initial_simplex": _simplex(start, np.where(periods, 0.1, 0.5)),
                },
            )
        else:
            # L-BFGS-B's first step has unit length: in coordinates scaled by 0.5 log
            # units (0.05 for periods) it stays inside the basin the sweep chose
            scale = np.where(periods, 0.05, 0.5)
            minimize(
                lambda y: tracked(start + scale * y),
                np.zeros(len(x0)),
                jac=lambda y: scale * jac(start + scale * y),
                method="L-BFGS-B",
                bounds=[((-12.0 - s) / c, (12.0 - s) / c) for s, c in zip(start, scale)],
                options={
                    "maxfun": max(max_evaluations - record["n"], 1),
                    "ftol": 1e-10,
                    "gtol": 1e-6,
                },
            )
    except KeyboardInterrupt:
        interrupted = True
        warnings.warn(
            f"Hyperparameter search interrupted after {record['n']} evaluations; "
            "keeping the best hyperparameters found so far.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return record["x"], float(record["f"]), record["n"], interrupted, record["fit"]


def _coarse_start(objective, x0: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Best of a joint log-scale sweep of all hyperparameters (x 1/8 ... x 8) around ``x0``.

    Evidence surfaces of GPs are often bimodal (short lengthscale + low noise against long
    lengthscale + high noise); one cheap sweep keeps the simplex out of the worse basin.
    """
    shifts = np.log([1.0, 0.5, 0.25, 0.125, 2.0, 4.0, 8.0])
    if not mask.any():
        return x0
    values = [objective(x0 + shift * mask) for shift in shifts]
    return x0 + shifts[int(np.argmin(values))] * mask


def _simplex(x0: np.ndarray, step) -> np.ndarray:
    """Initial simplex of half a log unit per hyperparameter (scipy's default is 0.00025 at
    log-value 0, i.e. at a hyperparameter of exactly 1)."""
    return np.vstack([x0, x0 + np.diag(np.broadcast_to(step, len(x0)))])


def _folds(n: int, k: int, random_seed) -> list[np.ndarray]:
    return np.array_split(as_rng(random_seed).permutation(n), k)


def cv_score(gum_model, *, k: int = 5, random_seed=0, warm=None) -> float:
    """K-fold cross-validated log-likelihood of the MAP at the current hyperparameters.

    Parameters
    ----------
    gum_model : GumModel
        The model, at the hyperparameters to score.
    k : int, default 5
        Number of folds (at least 2).
    random_seed : int or numpy.random.Generator, default 0
        Seed of the fold assignment (the same int seed gives the same folds, so scores at
        different hyperparameters are comparable; a Generator draws new folds).
    warm : list, optional
        One warm-start store per fold (used by :func:`fit_cv` to start each Newton fit at the
        previous optimum).

    Returns
    -------
    float
        Sum over held-out observations of their log-likelihood at the training MAP.
    """
    k = check_int(k, "k", minimum=2)
    d = gum_model.design
    total = 0.0
    for i, test in enumerate(_folds(d.n_obs, k, random_seed)):
        train = np.setdiff1d(np.arange(d.n_obs), test)
        start = None if warm is None else warm[i].start()
        result = laplace_fit(d.subset(train), u0=start, max_iter=60, tol=1e-6)
        if warm is not None:
            warm[i].remember(result.u_map)
        held = d.subset(test)
        total += held.loglik(held.predictor(result.u_map))[0].sum()
    return float(total)


def fit_cv(gum_model, *, k: int = 5, which=None, random_seed=0, max_evaluations: int = 200):
    """Maximise the K-fold cross-validated log-likelihood (seed 002, Appendix B.4.1).

    A coarse sweep then Nelder-Mead over the log hyperparameters; each evaluation fits the
    MAP on ``k - 1`` folds and scores the held-out one. The model keeps the fitted values and
    is refitted (``laplace_result``) at them. Use it where the Laplace evidence is a poor
    guide, such as a mapping function of a binary choice (the GUM tutorial does).

    Parameters
    ----------
    gum_model : GumModel
        The declared model; changed in place.
    k : int, default 5
        Number of folds.
    which : list of (str, str), optional
        ``(function, key)`` pairs to fit; default :func:`free_hyperparameters`.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the fold assignment (the folds stay the same over the whole fit).
    max_evaluations : int, default 200
        Budget of objective evaluations (each is ``k`` Newton fits).

    Returns
    -------
    HyperResult
        The fitted hyperparameters and the cross-validated log-likelihood before and after.
    """
    pairs = free_hyperparameters(gum_model, which)
    warm = [_WarmStart(gum_model.design) for _ in range(k)]
    random_seed = fixed_seed(random_seed)  # one fold assignment for every evaluation

    def negative_score(log_values):
        _set(gum_model, pairs, log_values)
        try:
            return -cv_score(gum_model, k=k, random_seed=random_seed, warm=warm)
        except np.linalg.LinAlgError:
            return np.inf

    x0 = _get(gum_model, pairs)
    initial = -negative_score(x0)
    best, best_value, n_eval, interrupted, _ = _optimise(
        negative_score, x0, max_evaluations, [key == "period" for _, key in pairs]
    )
    _set(gum_model, pairs, best)
    gum_model.fit_laplace()
    return HyperResult(gum_model.hyperparameters(), -best_value, initial, n_eval, interrupted)

"""Exact refits for :func:`pmctx.compare`, where PSIS-LOO cannot be trusted.

A :class:`Refitter` is what ArviZ's ``SamplingWrapper`` is to ``az.reloo``, as data: the
model's own ``fit(train_data) -> DataTree``, ``log_predictive(idata, test_data)`` (the
pointwise log density of held-out units per posterior draw), the ``data`` (units along the
first axis of its arrays) and a ``method`` label saying how a refit is made (``"laplace"``,
``"mcmc, warm start"``). :func:`refit_loos` takes the PSIS results of several models and
replaces what PSIS cannot estimate:

* few units with Pareto k above the threshold (at most ``max_loo_refits``, default ``k``):
  one exact leave-one-out refit per flagged unit; the other units keep their PSIS value;
* more than that: exact ``k``-fold cross-validation through the same fit, for every model
  that has a refitter and the same folds, so that differences between models stay paired
  (``k`` refits cost less than one per flagged unit);
* within ``time_budget`` seconds for all models together: units whose refit did not start
  in time keep their PSIS value and are reported (``how`` is ``"psis, out of time"``).

Each result says which units were refitted and how (:class:`RefitRecord`). Models enter
through a refitter passed to :func:`pmctx.compare` (``refit={"gum": gum_refitter(...)}``),
or through their spec's ``refit`` hook (:class:`pmctx.registry.ModelSpec`), which builds one
from a fit that stores its data (the IBP: short MCMC runs warm-started from the full fit).

Examples
--------
>>> import arviz as az, numpy as np
>>> from scipy.stats import norm
>>> y = np.random.default_rng(0).normal(size=8)
>>> def fit(train):  # exact posterior of a normal mean (prior N(0, 1), unit noise)
...     n = train["y"].size
...     rng = np.random.default_rng(n)
...     return az.from_dict({"posterior": {"mu": rng.normal(train["y"].sum() / (n + 1),
...                                                     (n + 1) ** -0.5, size=(1, 2000))}})
>>> def log_predictive(idata, test):
...     return norm.logpdf(test["y"], idata.posterior["mu"].values[..., None], 1.0)
>>> refitter = Refitter(fit, log_predictive, {"y": y}, method="conjugate")
>>> loo = elpd_data(np.full(8, -1.3), n_samples=2000, pareto_k=[0.1] * 7 + [0.9])
>>> results, records = refit_loos({"m": loo}, {"m": refitter})
>>> records["m"].how.tolist()[-2:], records["m"].refitted.tolist()
(['psis', 'loo'], [7])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from pmctx.kfold import _n_units, _Refit, elpd_data, fold_indices, gum_functions, split_rows
from pmctx.validation import check_int

__all__ = [
    "RefitRecord",
    "Refitter",
    "as_refitter",
    "crp_response_refitter",
    "gum_refitter",
    "refit_loos",
    "resolve_refitters",
]


@dataclass(frozen=True)
class Refitter:
    """How to refit one model exactly without some of its units.

    Attributes
    ----------
    fit : callable ``train_data -> DataTree``
        The model's own fit on the training units.
    log_predictive : callable ``(idata, test_data) -> array (..., n_test)``
        Log predictive density of each held-out unit per posterior draw of ``fit``'s result.
    data : dict
        The units, along the first axis of every array whose first axis has length ``n``.
    method : str, default "refit"
        How a refit is made (shown in the comparison table).
    n : int, optional
        Number of units (default: the common first-axis length of ``data``'s arrays).
    split : callable ``(data, train_idx, test_idx, n) -> (train_data, test_data)``
        Default :func:`pmctx.kfold.split_rows`; a time series can mask instead of drop.
    """

    fit: Callable
    log_predictive: Callable
    data: dict
    method: str = "refit"
    n: int | None = None
    split: Callable = split_rows

    def n_units(self) -> int:
        """The number of units (``n``, else read from ``data``).

        Returns
        -------
        int
            Units that can be held out.
        """
        return _n_units(self.data) if self.n is None else int(self.n)


@dataclass
class RefitRecord:
    """Which units of one model were refitted, and how.

    Attributes
    ----------
    how : numpy.ndarray of str
        Per unit: ``"psis"`` (PSIS kept), ``"loo"`` (exact leave-one-out refit),
        ``"kfold"`` (exact K-fold) or ``"psis, out of time"`` (flagged, not refitted).
    method : str
        The refitter's ``method`` (empty when none was run).
    n_fits : int
        Refits made.
    seconds : float
        Their wall time.
    folds : list of numpy.ndarray
        The held-out sets, in the order they were refitted.
    """

    how: np.ndarray
    method: str = ""
    n_fits: int = 0
    seconds: float = 0.0
    folds: list = field(default_factory=list)

    @property
    def refitted(self) -> np.ndarray:
        """Indices of the units scored by an exact refit."""
        return np.flatnonzero(np.isin(self.how, ("loo", "kfold")))

    def summary(self) -> str:
        """One line for the table, e.g. ``"kfold 10 fits (laplace)"``.

        Returns
        -------
        str
            Kinds of refit, number of fits, method and units out of time; empty when nothing
            was refitted or missed.
        """
        if not self.n_fits and not np.any(self.how == "psis, out of time"):
            return ""
        kinds = [k for k in ("loo", "kfold") if np.any(self.how == k)]
        text = f"{'+'.join(kinds) or 'none'} {self.n_fits} fits ({self.method})"
        missed = int(np.sum(self.how == "psis, out of time"))
        return text + (f", {missed} out of time" if missed else "")


def as_refitter(value, name: str = "model") -> Refitter | None:
    """A :class:`Refitter` from one, from a dict with its fields, or ``None``.

    Parameters
    ----------
    value : Refitter, dict or None
        A dict needs ``fit``, ``log_predictive`` and ``data`` (``method``, ``n`` and
        ``split`` are optional); spec hooks return such a dict.
    name : str
        The model's name, for messages.

    Returns
    -------
    Refitter or None

    Examples
    --------
    >>> as_refitter({"fit": len, "log_predictive": len, "data": {"y": [1, 2]}}).method
    'refit'
    """
    if value is None or isinstance(value, Refitter):
        return value
    if isinstance(value, Mapping) and {"fit", "log_predictive", "data"} <= set(value):
        return Refitter(**value)
    raise TypeError(
        f"refit for {name!r} must be a pmctx.refit.Refitter (or a dict with fit, "
        f"log_predictive and data), got {type(value).__name__}; build one with "
        "pmctx.refit.gum_refitter or Refitter(fit, log_predictive, data)."
    )


def resolve_refitters(refit, fits: Mapping, var_names: Mapping, names) -> dict:
    """name -> Refitter: those passed, else the model's spec hook on fits that hold their data.

    Parameters
    ----------
    refit : "auto" or mapping name -> Refitter, dict, "auto" or None
        What :func:`pmctx.compare` was given; ``"auto"`` (or a name left out) asks the
        model's ``ModelSpec.refit`` hook, ``None`` means no refit for that model.
    fits : mapping name -> DataTree
        The fits (models given as precomputed ``az.loo`` results have none).
    var_names : mapping name -> str
        The log-likelihood variable each fit is compared on.
    names : iterable of str
        Every model of the comparison.

    Returns
    -------
    dict
        name -> :class:`Refitter`, for the models that can be refitted.

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> fit = az.from_dict({"posterior": {"mu": np.zeros((1, 3))}})
    >>> resolve_refitters("auto", {"a": fit}, {"a": "y"}, ["a"])  # no model, no hook
    {}
    """
    from pmctx.registry import get_spec, model_name, model_names

    given = dict(refit) if isinstance(refit, Mapping) else {}
    out = {}
    for name in names:
        value = given.get(name, "auto")
        if isinstance(value, str) and value == "auto":
            model = model_name(fits[name]) if name in fits else None
            hook = get_spec(model).refit if model in model_names() else None
            value = None if hook is None else hook(fits[name], var_name=var_names[name])
        value = as_refitter(value, name)
        if value is not None:
            out[name] = value
    return out


def gum_refitter(build, data: dict, *, method: str = "laplace", fit_options=None, random_seed=0):
    """A :class:`Refitter` for a GUM: each refit through its own Laplace or NUTS fit.

    Parameters
    ----------
    build : callable ``train_data -> GumModel``
        Declares the GUM on training rows, e.g.
        ``lambda d: gum("y ~ f(x)", d, family="poisson")``.
    data : dict
        The GUM's columns (regressors and response), one row per observation.
    method : {"laplace", "nuts"}, default "laplace"
        Laplace refits (a Newton fit and Gaussian draws; cheap) or NUTS.
    fit_options : dict, optional
        Keywords of the refit (``draws``, ``chains``, ``random_seed``...).
    random_seed : int, default 0
        Seed of the GP-conditional draws at held-out inputs.

    Returns
    -------
    Refitter
        Scored by :func:`pmctx.gum.heldout.held_out_log_density`, see
        :func:`pmctx.kfold.gum_functions`.
    """
    fit, log_predictive = gum_functions(
        build, method=method, fit_options=fit_options, random_seed=random_seed
    )
    return Refitter(fit, log_predictive, dict(data), method=method)


class _ResponseFit:
    """Importance-sampling fit of the response model to the responses left in ``train``."""

    def __init__(self, response_model, kind, phi, n_draws, random_seed):
        self.response_model, self.kind, self.phi = response_model, kind, phi
        self.n_draws, self.random_seed = n_draws, random_seed

    def __call__(self, train):
        import arviz as az

        from pmctx.conditioning.behaviour import response_evidence

        _, draws, _ = response_evidence(
            train["responses"], train["V"], response_model=self.response_model,
            kind=self.kind, phi=self.phi, n_draws=self.n_draws, rng=self.random_seed,
        )  # fmt: skip
        return az.from_dict({"posterior": {"bias": draws[None, :, 0], "slope": draws[None, :, 1]}})

    def log_predictive(self, idata, test):
        from pmctx.conditioning.behaviour import _pointwise

        theta = np.column_stack([idata.posterior[v].values.reshape(-1) for v in ("bias", "slope")])
        return _pointwise(theta, test["V"], test["responses"], self.kind, self.phi,
                          self.response_model)  # fmt: skip


def _mask_responses(data, train, test, n):
    """Held-out trials keep their place in the sequence: their responses become NaN."""
    responses = np.asarray(data["responses"], dtype=np.float64).copy()
    held = {"responses": responses[test], "V": np.asarray(data["V"])[test]}
    responses[test] = np.nan
    return {"responses": responses, "V": data["V"]}, held


def crp_response_refitter(
    responses, V, *, response_model="logistic", kind="auto", phi=10.0, n_draws=2000,
    random_seed=0,
):  # fmt: skip
    """A :class:`Refitter` for a CRP variant's responses (leave-one-response-out).

    The latent-cause model's US expectation ``V`` comes from the features alone (the
    particle filter at the variant's alpha, ...), so held-out responses change only the
    response model's posterior: each refit is
    :func:`pmctx.conditioning.behaviour.response_evidence` with the held-out responses set
    to NaN (the trials keep their place in the sequence), and a held-out response is scored
    by its likelihood at each posterior draw of ``(bias, slope)``.

    Parameters
    ----------
    responses : array_like (trial,)
        The responses the variant was fitted to (all observed).
    V : array_like (trial,)
        The variant's US expectation per trial, e.g. ``particle_filter(features, alpha=a).V``.
    response_model : {"logistic", "constant"}, default "logistic"
    kind : {"auto", "binary", "probability"}, default "auto"
    phi : float, default 10.0
        Beta precision of graded responses.
    n_draws : int, default 2000
        Importance draws per refit.
    random_seed : int, default 0
        Seed of every refit's importance draws.

    Returns
    -------
    Refitter
    """
    from pmctx.conditioning.behaviour import _check_responses

    V = np.asarray(V, dtype=np.float64)
    y, seen, kind = _check_responses(responses, V.shape[0], kind)
    if not seen.all():
        raise ValueError(
            f"crp_response_refitter needs every response observed; {int((~seen).sum())} are "
            "NaN. Drop those trials' scores from the comparison or fill them."
        )
    job = _ResponseFit(response_model, kind, phi, n_draws, random_seed)
    return Refitter(job, job.log_predictive, {"responses": y, "V": V},
                    method=f"{response_model} response model, importance sampling",
                    split=_mask_responses)  # fmt: skip


def _plan(loos, refitters, threshold, max_loo_refits) -> str:
    high = {name: int(np.sum(np.asarray(loos[name].pareto_k) > threshold)) for name in refitters}
    return "kfold" if any(count > max_loo_refits for count in high.values()) else "loo"


def refit_loos(
    loos: Mapping,
    refitters: Mapping,
    *,
    threshold: float = 0.7,
    k: int = 10,
    max_loo_refits: int | None = None,
    time_budget: float = 600.0,
    random_seed=0,
):
    """Replace the PSIS values that cannot be trusted by exact refits, within a time budget.

    Parameters
    ----------
    loos : mapping name -> arviz.ELPDDataLOO
        Pointwise ``az.loo`` results on the log scale.
    refitters : mapping name -> Refitter
        Models that can be refitted (others keep their PSIS values).
    threshold : float, default 0.7
        Units with Pareto k above it are not trusted.
    k : int, default 10
        Folds of K-fold (capped at the number of units).
    max_loo_refits : int, optional
        Most flagged units of one model refitted one by one (default ``k``); if any model
        has more, every refittable model is scored by K-fold on the same folds.
    time_budget : float, default 600
        Seconds for all refits together; no refit starts after it.
    random_seed : int, default 0
        Seed of the fold partition.

    Returns
    -------
    tuple of dict
        ``(results, records)``: name -> ``arviz.ELPDDataLOO`` (refitted units with Pareto k 0)
        and name -> :class:`RefitRecord`, for every model in ``loos``.

    Raises
    ------
    ValueError
        When a refitter's number of units differs from its model's pointwise values, or a
        result is not on the log scale.
    """
    max_loo_refits = k if max_loo_refits is None else check_int(max_loo_refits, "max_loo_refits",
                                                                minimum=0)  # fmt: skip
    if time_budget < 0:
        raise ValueError(f"time_budget must be >= 0 seconds, got {time_budget}.")
    results = dict(loos)
    records = {name: RefitRecord(how=np.full(np.size(loo.elpd_i), "psis", dtype=object))
               for name, loo in loos.items()}  # fmt: skip
    for name, refitter in refitters.items():
        n = refitter.n_units()
        if np.size(loos[name].elpd_i) != n:
            raise ValueError(
                f"Model {name!r} scores {np.size(loos[name].elpd_i)} observations but its "
                f"refitter's data hold {n} units; pass the data the model was fitted to."
            )
        if loos[name].scale != "log":
            raise ValueError(
                f"Refits need az.loo results on the log scale, got {loos[name].scale!r}."
            )
    plan = _plan(loos, refitters, threshold, max_loo_refits)
    deadline = time.perf_counter() + float(time_budget)
    order = sorted(refitters, key=lambda m: -np.sum(np.asarray(loos[m].pareto_k) > threshold))
    for name in order:  # the budget goes first to the models with most flagged units
        refitter = refitters[name]
        loo, record = loos[name], records[name]
        n = refitter.n_units()
        flagged = np.ravel(loo.pareto_k) > threshold
        if plan == "kfold":
            tests = fold_indices(n, min(k, n), random_seed=random_seed)
        else:
            tests = [np.array([i]) for i in np.flatnonzero(flagged)]
        if not tests:
            continue
        loo_i = np.ravel(loo.elpd_i).astype(np.float64)
        pareto_k = np.ravel(loo.pareto_k).astype(np.float64)
        job = _Refit(refitter.fit, refitter.log_predictive, refitter.data, n, refitter.split)
        record.method, start = refitter.method, time.perf_counter()
        for test in tests:
            if time.perf_counter() > deadline:
                break
            elpd_i, _ = job(test)
            loo_i[test], pareto_k[test] = elpd_i, 0.0
            record.how[test] = plan
            record.folds.append(test)
            record.n_fits += 1
        record.seconds = time.perf_counter() - start
        record.how[flagged & (record.how == "psis")] = "psis, out of time"
        lppd = float(loo.elpd + loo.p)
        results[name] = elpd_data(
            loo_i, n_samples=int(loo.n_samples), p_loo=lppd - loo_i.sum(), pareto_k=pareto_k
        )
    return results, records

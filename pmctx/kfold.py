"""Exact refits where PSIS fails: K-fold cross-validation and reloo-style refits.

When :func:`pmctx.compare` warns that too many Pareto k exceed 0.7, the PSIS estimate of the
leave-one-out predictive density cannot be trusted; the fallback is to refit the model
without the held-out units, through the model's *own* sampler, and score them exactly:

* :func:`kfold`: split the units into ``k`` folds, refit ``k`` times, score each held-out
  unit by ``log mean_s p(y_i | theta_s)`` over the draws of the fit that did not see it.
* :func:`reloo`: keep the PSIS value where Pareto k is fine and refit once per high-k unit
  (what ``az.reloo`` does, without the ``SamplingWrapper`` ceremony).

A model enters through two functions: ``fit(train_data) -> DataTree`` and
``log_predictive(idata, test_data) -> array (chain, draw, n_test)`` (or ``(draws, n_test)``)
of pointwise log predictive densities given each draw. :func:`kfold_functions` takes
them from a registered model's spec (``ModelSpec.kfold``; the IBP's scores held-out trials
by its integrated likelihood) and :func:`gum_functions` builds them for a GUM formula.
Refits are independent, so they go through ``map_fn`` (default: the built-in ``map``); to
run them on a dask cluster (the batch engine, ``pmctx.batch``), pass e.g.
``map_fn=lambda f, jobs: client.gather(client.map(f, list(jobs)))``.

Both return an ``arviz.ELPDDataLOO`` with ``elpd``/``elpd_i`` fields (Pareto k set to 0
for exactly refitted units), so :func:`pmctx.compare` and ``az.compare`` rank them.

Examples
--------
>>> import arviz as az, numpy as np
>>> y = np.random.default_rng(0).normal(size=12)
>>> def fit(train):  # conjugate normal mean, exact posterior draws
...     rng = np.random.default_rng(len(train["y"]))
...     n = len(train["y"])
...     mu = rng.normal(train["y"].sum() / (n + 1), (n + 1) ** -0.5, size=(1, 500))
...     return az.from_dict({"posterior": {"mu": mu}})
>>> def log_predictive(idata, test):
...     mu = idata.posterior["mu"].values[..., None]
...     return -0.5 * np.log(2 * np.pi) - 0.5 * (test["y"] - mu) ** 2
>>> result = kfold(fit, log_predictive, {"y": y}, k=4)
>>> int(result.n_data_points), bool(np.isfinite(result.elpd))
(12, True)
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from pmctx.validation import as_rng, check_int

__all__ = [
    "elpd_data",
    "fold_indices",
    "gum_functions",
    "kfold",
    "kfold_functions",
    "reloo",
    "split_rows",
]


def fold_indices(n: int, k: int, *, random_seed=0) -> list[np.ndarray]:
    """Random partition of ``range(n)`` into ``k`` folds of (nearly) equal size.

    Parameters
    ----------
    n : int
        Number of units (at least 2).
    k : int
        Number of folds, between 2 and ``n``.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the permutation.

    Returns
    -------
    list of numpy.ndarray
        ``k`` sorted index arrays that together hold each unit once.

    Examples
    --------
    >>> [fold.tolist() for fold in fold_indices(5, 2, random_seed=0)]
    [[1, 2, 3], [0, 4]]
    """
    n = check_int(n, "n", minimum=2)
    k = check_int(k, "k", minimum=2, maximum=n)
    order = as_rng(random_seed).permutation(n)
    return [np.sort(order[i::k]) for i in range(k)]


def split_rows(data: dict, train: np.ndarray, test: np.ndarray, n: int):
    """Index every array of ``data`` whose first axis has length ``n``; keep the rest.

    Parameters
    ----------
    data : dict
        Arrays (one row per unit) and other values (scalars, options), by name.
    train, test : numpy.ndarray
        Unit indices of the two parts.
    n : int
        Number of units: arrays whose first axis has another length are kept whole.

    Returns
    -------
    tuple of dict
        ``(train_data, test_data)``.

    Examples
    --------
    >>> import numpy as np
    >>> train, test = split_rows({"y": np.arange(4), "K_max": 6}, [0, 1, 2], [3], 4)
    >>> train["y"].tolist(), test["y"].tolist(), test["K_max"]
    ([0, 1, 2], [3], 6)
    """

    def take(idx):
        return {
            key: (np.asarray(v)[idx] if np.ndim(v) >= 1 and np.shape(v)[0] == n else v)
            for key, v in data.items()
        }

    return take(train), take(test)


def _n_units(data: dict) -> int:
    sizes = {np.shape(v)[0] for v in data.values() if v is not None and np.ndim(v) >= 1}
    if len(sizes) != 1:
        raise ValueError(
            f"Cannot tell the number of units from arrays with first axes {sorted(sizes)}; "
            "pass n= explicitly."
        )
    return sizes.pop()


def _pointwise_elpd(log_pred) -> np.ndarray:
    """``log mean_s exp(log_pred[s, i])`` for a (chain, draw, n) or (draws, n) array."""
    log_pred = np.asarray(log_pred, dtype=np.float64)
    flat = log_pred.reshape(-1, log_pred.shape[-1])
    if not np.all(np.isfinite(flat) | (flat == -np.inf)):
        raise ValueError("log_predictive returned NaN or +inf values.")
    return logsumexp(flat, axis=0) - np.log(flat.shape[0])


def elpd_data(loo_i, *, n_samples: int, p_loo=np.nan, pareto_k=None, scale: str = "log"):
    """An ``arviz.ELPDDataLOO`` from pointwise elpd values, for ``az.compare``.

    Parameters
    ----------
    loo_i : array_like
        Pointwise expected log predictive densities, one per unit (on the log scale).
    n_samples : int
        Posterior draws behind each value.
    p_loo : float, default NaN
        Effective number of parameters, if known.
    pareto_k : array_like, optional
        Pareto k per unit; default: zeros (exact refits have none).
    scale : {"log", "negative_log", "deviance"}, default "log"
        Scale of the result (ArviZ 1's ``az.loo`` and ``az.compare`` work on the log scale;
        :func:`pmctx.compare` converts its table to the others).

    Returns
    -------
    arviz.ELPDDataLOO
        With ``elpd``, ``se`` (``sqrt(n var(elpd_i))``, ``ddof=1`` as ``az.loo``), ``p``,
        ``elpd_i`` and ``pareto_k``, usable by ``az.compare`` and :func:`pmctx.compare`.

    Examples
    --------
    >>> result = elpd_data([-1.0, -2.0, -1.5], n_samples=400)
    >>> float(result.elpd), int(result.n_data_points)
    (-4.5, 3)
    """
    import arviz as az
    import xarray as xr

    loo_i = np.asarray(loo_i, dtype=np.float64)
    n = loo_i.size
    pareto_k = np.zeros(n) if pareto_k is None else np.asarray(pareto_k, dtype=np.float64)
    factor = {"log": 1.0, "negative_log": -1.0, "deviance": -2.0}[scale]
    return az.ELPDDataLOO(
        elpd=float(factor * loo_i.sum()),
        se=float(abs(factor) * np.sqrt(n * np.var(loo_i, ddof=1))) if n > 1 else 0.0,
        p=float(p_loo),
        n_samples=int(n_samples),
        n_data_points=int(n),
        scale=scale,
        warning=bool(np.any(pareto_k > 0.7)),
        good_k=0.7,
        elpd_i=xr.DataArray(factor * loo_i, dims=["unit"]),
        pareto_k=xr.DataArray(pareto_k, dims=["unit"]),
    )


class _Refit:
    """One refit job (picklable for dask when ``fit`` and ``log_predictive`` are)."""

    def __init__(self, fit, log_predictive, data, n, split):
        self.fit, self.log_predictive = fit, log_predictive
        self.data, self.n, self.split = data, n, split

    def __call__(self, test):
        test = np.asarray(test)
        train = np.setdiff1d(np.arange(self.n), test)
        train_data, test_data = self.split(self.data, train, test, self.n)
        idata = self.fit(train_data)
        log_pred = np.asarray(self.log_predictive(idata, test_data))
        if log_pred.shape[-1] != test.size:
            raise ValueError(
                f"log_predictive returned {log_pred.shape[-1]} values per draw for "
                f"{test.size} held-out units."
            )
        n_samples = int(np.prod(log_pred.shape[:-1]))
        return _pointwise_elpd(log_pred), n_samples


def kfold(
    fit,
    log_predictive,
    data: dict,
    *,
    k: int = 10,
    n: int | None = None,
    folds=None,
    split=split_rows,
    random_seed=0,
    map_fn=None,
    full_log_predictive=None,
    scale: str = "log",
):
    """K-fold cross-validated elpd through the model's own sampler.

    Parameters
    ----------
    fit : callable ``train_data -> DataTree``
    log_predictive : callable ``(idata, test_data) -> array (..., n_test)``
        Pointwise log predictive density of held-out units per posterior draw.
    data : dict of arrays
        Units along the first axis of the arrays of length ``n``.
    k : int, default 10
        Number of folds (``k = n`` is exact leave-one-out).
    n : int, optional
        Number of units (default: the common first-axis length).
    folds : list of index arrays, optional
        Test sets to use instead of a random partition.
    split : callable ``(data, train_idx, test_idx, n) -> (train_data, test_data)``
    random_seed : int
        For the partition.
    map_fn : callable ``(function, iterable) -> iterable``, default ``map``
        Runs the refits (e.g. on dask).
    full_log_predictive : array (..., n), optional
        Pointwise log-likelihood of the full-data fit; gives ``p_loo = lppd - elpd``.
    scale : {"log", "negative_log", "deviance"}

    Returns
    -------
    arviz.ELPDDataLOO
    """
    n = _n_units(data) if n is None else check_int(n, "n", minimum=2)
    folds = fold_indices(n, k, random_seed=random_seed) if folds is None else list(folds)
    covered = np.sort(np.concatenate(folds))
    if not np.array_equal(covered, np.arange(n)):
        raise ValueError("folds must partition range(n): every unit held out exactly once.")
    job = _Refit(fit, log_predictive, data, n, split)
    results = list((map_fn or map)(job, folds))
    loo_i = np.empty(n)
    for test, (elpd_i, _) in zip(folds, results, strict=True):
        loo_i[test] = elpd_i
    p_loo = np.nan
    if full_log_predictive is not None:
        p_loo = float(_pointwise_elpd(full_log_predictive).sum() - loo_i.sum())
    n_samples = min(s for _, s in results)
    return elpd_data(loo_i, n_samples=n_samples, p_loo=p_loo, scale=scale)


def reloo(
    fit,
    log_predictive,
    data: dict,
    loo,
    *,
    threshold: float = 0.7,
    n: int | None = None,
    split=split_rows,
    map_fn=None,
):
    """Replace the PSIS values of high-k units by exact leave-one-out refits.

    Parameters
    ----------
    fit, log_predictive, data, n, split, map_fn
        As in :func:`kfold`.
    loo : arviz.ELPDDataLOO
        ``az.loo(..., pointwise=True)`` of the full-data fit (log scale).
    threshold : float, default 0.7
        Units with Pareto k above it are refitted.

    Returns
    -------
    arviz.ELPDDataLOO
        With the refitted units' ``elpd_i`` replaced and their Pareto k set to 0.
    """
    if loo.scale != "log":
        raise ValueError(f"reloo needs an az.loo result on the log scale, got {loo.scale!r}.")
    n = _n_units(data) if n is None else n
    loo_i = np.asarray(loo.elpd_i, dtype=np.float64).copy()
    pareto_k = np.asarray(loo.pareto_k, dtype=np.float64).copy()
    if loo_i.size != n:
        raise ValueError(f"loo has {loo_i.size} pointwise values but data has {n} units.")
    bad = np.flatnonzero(pareto_k > threshold)
    job = _Refit(fit, log_predictive, data, n, split)
    for i, (elpd_i, _) in zip(bad, (map_fn or map)(job, [np.array([i]) for i in bad]), strict=True):
        loo_i[i] = elpd_i[0]
        pareto_k[i] = 0.0
    lppd = float(loo.elpd + loo.p)
    return elpd_data(
        loo_i, n_samples=int(loo.n_samples), p_loo=lppd - loo_i.sum(), pareto_k=pareto_k
    )


# ---------------------------------------------------------------- model adapters


def kfold_functions(model: str, **options):
    """``(fit, log_predictive)`` of registered model ``model``, from its spec's ``kfold``.

    Parameters
    ----------
    model : str
        A registered model name (see :func:`pmctx.registry.model_names`).
    **options
        Options of the model's ``kfold`` (e.g. the IBP's ``var_name`` and sampler options).

    Returns
    -------
    tuple of callable
        ``(fit, log_predictive)`` for :func:`kfold` and :func:`reloo`.

    Raises
    ------
    ValueError
        For an unknown model, or one whose spec declares no ``kfold``.

    Examples
    --------
    >>> fit, log_predictive = kfold_functions("ibp", var_name="F", K_max=8, draws=200)
    >>> callable(fit) and callable(log_predictive)
    True
    """
    from pmctx.registry import get_spec

    spec = get_spec(model)
    if spec.kfold is None:
        raise ValueError(
            f"Model {model!r} declares no kfold in its ModelSpec: pass your own fit and "
            "log_predictive to pmctx.kfold.kfold, or add kfold to the spec."
        )
    return spec.kfold(**options)


def gum_functions(build, *, method: str = "nuts", fit_options=None, random_seed=0):
    """``fit`` and ``log_predictive`` for a GUM, scored by its exact held-out prediction.

    Parameters
    ----------
    build : callable ``train_data -> GumModel``
        Declares the GUM on the training rows, e.g.
        ``lambda train: gum("y ~ f(x)", train, family="poisson")``.
    method : {"nuts", "laplace"}
        The refit: ``GumModel.sample`` (NUTS, ``fit_options`` passed on) or
        ``GumModel.laplace`` (``draws`` Gaussian draws, default 2000).
    fit_options : dict, optional
        Keyword arguments of that fit (``draws``, ``tune``, ``chains``, ``random_seed``...).
    random_seed : int or numpy.random.Generator, default 0
        Seed of the GP-conditional draws at held-out inputs.

    Notes
    -----
    ``log_predictive`` is :func:`pmctx.gum.heldout.held_out_log_density`: for every posterior
    draw, the log density of the held-out responses given the predictor at the held-out
    inputs, with functions evaluated exactly there (``GumModel.predict``). Pass both to
    :func:`kfold` or :func:`reloo`; the data are the GUM's columns (regressors and response).

    Returns
    -------
    tuple of callable
        ``(fit, log_predictive)`` for :func:`kfold` and :func:`reloo`.
    """
    from pmctx.gum.heldout import refit_functions

    return refit_functions(build, method=method, fit_options=fit_options, random_seed=random_seed)

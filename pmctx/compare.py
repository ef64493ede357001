"""Model comparison by PSIS-LOO, with exact refits where PSIS cannot be trusted.

:func:`compare` wraps ``az.loo`` / ``az.compare``. Observations whose Pareto k exceeds
``threshold`` (0.7) are refitted exactly through the model's own fit (:mod:`pmctx.refit`):
one leave-one-out refit each when they are few, else exact K-fold for every refittable model
on the same folds, within ``time_budget`` seconds. Models are refitted through a
:class:`pmctx.refit.Refitter` passed as ``refit={name: ...}`` or their spec's ``refit`` hook
(the IBP's warm-started MCMC). The table says how each model was scored; a model whose
flagged observations were left to PSIS (no refitter, or out of time) beyond
``max_bad_share`` (2%) comes with a :class:`LooReliabilityWarning`, so a ranking is never
returned or printed without that warning when it rests on unreliable PSIS values.

Latent-variable models must store a log-likelihood with the per-unit latent integrated out
(pmctx's models do: the IBP's ``joint``, the CRP's ``trial_features``); the one given each
trial's sampled latent (kept in ``conditional_log_likelihood``) makes PSIS fail. A model's
spec declares which variable answers which question (``ModelSpec.comparisons``); the
default is the one in ``log_likelihood``, others are read from ``log_likelihood_parts``.

``pmctx compare A.nc B.nc ...`` is the command-line version (see :func:`add_parser`).

Examples
--------
>>> import arviz as az, numpy as np
>>> rng = np.random.default_rng(0)
>>> y = rng.normal(size=30)
>>> def fit(center):
...     mu = rng.normal(center, 0.2, size=(2, 200))
...     ll = -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu[..., None]) ** 2
...     return az.from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
>>> table = compare({"good": fit(y.mean()), "off": fit(1.0)})
>>> list(table.index), bool(table.loc["good", "k_share"] <= 0.02)
(['good', 'off'], True)
"""

# Long because compare, the PSIS-LOO that also scores the observations ArviZ 1 refuses
# (constant or tied log-likelihoods), the exact refits and the command line share one table
# and its warning; about 200 of its lines are docstrings with runnable examples.

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

from pmctx.exceptions import LooReliabilityWarning

__all__ = ["LooReliabilityWarning", "add_parser", "compare", "pareto_k_share", "run"]

#: Pareto k above which PSIS estimates are unreliable (Vehtari et al. 2024).
K_THRESHOLD = 0.7
#: Share of observations above the threshold beyond which a ranking comes with a warning.
MAX_BAD_SHARE = 0.02


def _load(value):
    import arviz as az

    from pmctx.io import load_idata
    from pmctx.trees import as_datatree

    if isinstance(value, str | Path):
        return load_idata(value)  # also the ArviZ 0.x files of earlier pmctx versions
    if isinstance(value, az.ELPDData):
        return value
    return as_datatree(value, name="each model")


def _declared_comparisons(idata) -> dict:
    """The fit's model's ``comparisons`` (its spec), empty for a fit pmctx did not make."""
    from pmctx.registry import get_spec, model_name, model_names

    name = model_name(idata)
    return dict(get_spec(name).comparisons) if name in model_names() else {}


def _default_var_name(idata) -> str | None:
    names = list(idata["log_likelihood"].data_vars)
    if len(names) == 1:  # pmctx fits keep one variable here: what LOO should use
        return names[0]
    declared = _declared_comparisons(idata)
    usable = [var for var in declared if var in names]
    if usable:
        return usable[0]
    if "joint" in names:  # integrated per-trial likelihood of all observations
        return "joint"
    raise ValueError(
        f"The log_likelihood group has several variables {names}; pass var_name= one of them "
        "(the one whose observations answer your question: each model's ModelSpec."
        "comparisons says what its variables compare)."
    )


def pareto_k_share(loo, threshold: float = K_THRESHOLD) -> float:
    """Share of observations whose Pareto k exceeds ``threshold`` in an ``az.loo`` result.

    Parameters
    ----------
    loo : arviz.ELPDDataLOO
        A pointwise ``az.loo`` result (it has a ``pareto_k`` array).
    threshold : float, default 0.7
        Pareto k above which PSIS is unreliable for an observation.

    Returns
    -------
    float
        The share in [0, 1].

    Examples
    --------
    >>> import arviz as az, numpy as np
    >>> rng = np.random.default_rng(1)
    >>> y = rng.normal(size=20)
    >>> mu = rng.normal(y.mean(), 0.2, size=(2, 300))
    >>> ll = -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu[..., None]) ** 2
    >>> fit = az.from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    >>> loo = az.loo(fit, pointwise=True)
    >>> pareto_k_share(loo)
    0.0
    """
    import numpy as np

    return float(np.mean(np.asarray(loo.pareto_k) > threshold))


def compare(
    models: Mapping,
    *,
    var_name=None,
    threshold: float = K_THRESHOLD,
    max_bad_share: float = MAX_BAD_SHARE,
    scale: str = "log",
    refit="auto",
    time_budget: float = 600.0,
    k: int = 10,
    max_loo_refits: int | None = None,
    random_seed=0,
):
    """Rank models by PSIS-LOO, refitting exactly what PSIS cannot estimate.

    Parameters
    ----------
    models : mapping name -> DataTree, NetCDF path or precomputed ``az.loo`` result
        (an ArviZ 0.x ``InferenceData`` is accepted too)
        Each with a ``log_likelihood`` group over the same observations.
    var_name : str or mapping name -> str, optional
        Log-likelihood variable; default: the only one, else the first of the model's
        declared ``comparisons`` (:class:`pmctx.registry.ModelSpec`; the IBP's ``joint``
        whole trial, the CRP's ``trial_features``), else ``joint``. The table's ``var_name``
        column says which was used.
    threshold : float, default 0.7
        Pareto k threshold.
    max_bad_share : float, default 0.02
        Above this share of k > threshold a :class:`LooReliabilityWarning` is emitted.
    scale : {"log", "negative_log", "deviance"}, default "log"
        Scale of the table's ``elpd``, ``se``, ``elpd_diff``, ``dse`` and ``elpd_psis``
        (``az.compare`` of ArviZ 1 ranks on the log scale; the ranking is the same on all).
    refit : "auto", mapping name -> Refitter, or None, default "auto"
        Exact refits of the observations with Pareto k above ``threshold``
        (:mod:`pmctx.refit`): a :class:`pmctx.refit.Refitter` per model (e.g.
        :func:`pmctx.refit.gum_refitter`, or a dict with ``fit``, ``log_predictive`` and
        ``data``); models without one use their spec's ``refit`` hook when the fit holds
        its data (``"auto"``: every model that way); ``None`` keeps PSIS everywhere.
    time_budget : float, default 600
        Seconds for all refits together; flagged observations not refitted in time keep
        their PSIS value and the model stays marked unreliable.
    k : int, default 10
        Folds when K-fold replaces leave-one-out refits.
    max_loo_refits : int, optional
        Most flagged observations of one model refitted one by one (default ``k``); when a
        model has more, every refittable model is scored by exact K-fold on the same folds.
    random_seed : int, default 0
        Seed of the fold partition.

    Returns
    -------
    pandas.DataFrame
        ``az.compare``'s table (ArviZ 1: ``rank, elpd_diff, dse, p_worse, diag_diff,
        diag_elpd, p, elpd, se, weight``, on the refitted values) plus ``var_name``,
        ``elpd_psis``
        (PSIS alone), ``k_share`` (share of Pareto k > threshold), ``n_high_k``,
        ``refit`` (how observations were refitted: ``"loo 3 fits (laplace)"``,
        ``"kfold 10 fits (mcmc, warm start)"``, or empty), ``n_refit`` (observations scored
        by exact refits), ``refit_s`` (seconds) and ``reliable`` (flagged observations left
        to PSIS are at most ``max_bad_share``). ``table.attrs["loo"]`` holds the pointwise
        results used, ``table.attrs["psis"]`` the PSIS ones and ``table.attrs["refits"]`` a
        :class:`pmctx.refit.RefitRecord` per model (``how`` per observation, ``refitted``).

    Examples
    --------
    Two fits of a normal mean, one centred on the data and one off; the ranking comes with
    the share of Pareto k above 0.7 per model (here 0, so no warning):

    >>> import arviz as az, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=30)
    >>> def fit(center):
    ...     mu = rng.normal(center, 0.2, size=(2, 200))
    ...     ll = -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu[..., None]) ** 2
    ...     return az.from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    >>> table = compare({"good": fit(y.mean()), "off": fit(1.0)})
    >>> table[["rank", "k_share", "reliable"]]
          rank  k_share  reliable
    good     0      0.0      True
    off      1      0.0      True
    """
    import arviz as az
    import numpy as np

    if len(models) < 2:
        raise ValueError(f"compare needs at least two models, got {len(models)}.")
    if not (refit is None or refit == "auto" or isinstance(refit, Mapping)):
        raise TypeError(f"refit must be 'auto', None or a mapping name -> Refitter, got {refit!r}.")
    unknown = sorted(set(refit) - set(models)) if isinstance(refit, Mapping) else []
    if unknown:
        raise ValueError(f"refit names models {unknown} not in models {sorted(models)}.")
    loos, used, fits = {}, {}, {}
    for name, value in models.items():
        value = _load(value)
        if isinstance(value, az.ELPDData):
            loos[name] = value
            continue
        if "log_likelihood" not in value.children:
            raise ValueError(f"Model {name!r} has no log_likelihood group.")
        var = var_name.get(name) if isinstance(var_name, Mapping) else var_name
        var = var or _default_var_name(value)
        used[name], fits[name] = var, value
        with warnings.catch_warnings():  # replaced by our own, more specific warning
            warnings.filterwarnings("ignore", message=".*Pareto.*")
            warnings.filterwarnings("ignore", message=".*pareto.*")
            if var in value["log_likelihood"].data_vars:
                loos[name] = _psis_loo(value, var)
            else:  # a conditional question: log_likelihood_parts (e.g. the IBP's F)
                from pmctx.io import log_likelihood_view

                loos[name] = _psis_loo(log_likelihood_view(value, var), var)
    sizes = {name: int(np.size(loo.elpd_i)) for name, loo in loos.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"The models score different numbers of observations: {sizes}.")
    psis = dict(loos)
    n_high = {n: int(np.sum(np.asarray(loo.pareto_k) > threshold)) for n, loo in psis.items()}
    records = {}
    refitters = {}
    if any(n_high.values()) and refit is not None:
        from pmctx.refit import refit_loos, resolve_refitters

        refitters = resolve_refitters(refit, fits, used, list(psis))
    if refitters:
        loos, records = refit_loos(
            psis, refitters, threshold=threshold, k=k, max_loo_refits=max_loo_refits,
            time_budget=time_budget, random_seed=random_seed,
        )  # fmt: skip
    if scale not in _FACTORS:
        raise ValueError(f"scale must be one of {sorted(_FACTORS)}, got {scale!r}.")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Pareto.*")
        table = az.compare({n: _rescale(loo, "log") for n, loo in loos.items()}, round_to="none")
    if scale != "log":
        factor = _FACTORS[scale]
        for column in ("elpd", "elpd_diff"):
            table[column] = factor * table[column]
        for column in ("se", "dse"):
            table[column] = abs(factor) * table[column]
        loos = {name: _rescale(loo, scale) for name, loo in loos.items()}
    table["var_name"] = [used.get(name, "") for name in table.index]
    table["elpd_psis"] = [_rescale(psis[name], scale).elpd for name in table.index]
    table["k_share"] = [pareto_k_share(psis[name], threshold) for name in table.index]
    table["n_high_k"] = [n_high[name] for name in table.index]
    left = {}
    for name in table.index:
        record = records.get(name)
        refitted = np.zeros(sizes[name], bool) if record is None else np.isin(
            np.arange(sizes[name]), record.refitted)  # fmt: skip
        left[name] = float(np.mean((np.ravel(psis[name].pareto_k) > threshold) & ~refitted))
    table["refit"] = [records[n].summary() if n in records else "" for n in table.index]
    table["n_refit"] = [int(records[n].refitted.size) if n in records else 0 for n in table.index]
    table["refit_s"] = [records[n].seconds if n in records else 0.0 for n in table.index]
    table["reliable"] = [left[name] <= max_bad_share for name in table.index]
    table.attrs.update(loo=loos, psis=psis, refits=records)
    bad = table.index[~table["reliable"]].tolist()
    if bad:
        shares = ", ".join(f"{n}: {left[n]:.0%}" for n in bad)
        warnings.warn(
            f"PSIS-LOO is unreliable for {bad} (share of Pareto k > {threshold} not refitted: "
            f"{shares}; more than {max_bad_share:.0%}), so this ranking is not trustworthy. "
            "Pass refit={name: pmctx.refit.Refitter(...)} (e.g. pmctx.refit.gum_refitter) "
            "so that compare refits them exactly, or raise time_budget; for latent-variable "
            "models use a log-likelihood with the per-unit latent integrated out.",
            LooReliabilityWarning,
            stacklevel=2,
        )
    return table


def _psis_loo(fit, var: str):
    """Pointwise ``az.loo`` of ``fit``'s ``log_likelihood[var]``, also where some
    observations' log-likelihood is the same at every draw. ArviZ 1's PSIS refuses those
    ("All tail values are the same"); ArviZ 0.x returned the constant as their elpd with
    Pareto k = inf, and so does this. The constant is exact for a model without parameters
    for them (a coin-flip baseline), but not where the posterior pins a per-observation
    latent (the IBP's conditional likelihood given each trial's own features), whose
    leave-one-out posterior would move it: k = inf sends them to an exact refit or a
    warning, as before."""
    import arviz as az
    import numpy as np
    import xarray as xr

    from pmctx.kfold import elpd_data

    ll = fit["log_likelihood"][var]
    obs_dims = [d for d in ll.dims if d not in ("chain", "draw")]
    values = np.asarray(ll.transpose("chain", "draw", *obs_dims).values)
    flat = values.reshape(values.shape[0] * values.shape[1], -1)
    constant = np.all(flat == flat[:1], axis=0)
    if not constant.any():
        return az.loo(fit, var_name=var, pointwise=True)
    elpd_i, pareto_k = flat[0].astype(np.float64), np.full(flat.shape[1], np.inf)
    p_loo = 0.0
    if not constant.all():
        moving = xr.DataArray(flat[:, ~constant].reshape(*values.shape[:2], -1),
                              dims=("chain", "draw", "observation"))  # fmt: skip
        tree = xr.DataTree.from_dict(
            {"posterior": fit["posterior"].to_dataset(),
             "log_likelihood": xr.Dataset({var: moving})}
        )  # fmt: skip
        try:
            part = az.loo(tree, var_name=var, pointwise=True)
        except ValueError as error:
            if "tail values are the same" not in str(error):
                raise
            return _loo_with_degenerate_tails(tree, flat, elpd_i, constant)
        elpd_i[~constant] = np.ravel(part.elpd_i)
        pareto_k[~constant] = np.ravel(part.pareto_k)
        p_loo = float(part.p)
    return elpd_data(elpd_i, n_samples=flat.shape[0], p_loo=p_loo, pareto_k=pareto_k)


def _loo_with_degenerate_tails(tree, flat, elpd_i, constant):
    """Observation by observation, where some log-likelihoods take so few values over the
    draws that the largest importance ratios are all equal (a discrete latent, such as the
    IBP's conditional likelihood given each trial's own features): ArviZ 1's PSIS refuses
    them, and no Pareto tail can be fitted. Their elpd is then plain importance sampling,
    ``-log mean exp(-log_lik)``, flagged with Pareto k = inf (unreliable: compare refits or
    warns); the others get PSIS as usual."""
    import arviz as az
    import numpy as np
    import xarray as xr
    from scipy.special import logsumexp

    from pmctx.kfold import elpd_data

    posterior = tree["posterior"].to_dataset()
    sample_shape = (posterior.sizes["chain"], posterior.sizes["draw"])
    pareto_k = np.full(flat.shape[1], np.inf)  # constant ones: see _psis_loo
    for i in np.flatnonzero(~constant):
        one = xr.DataArray(flat[:, i].reshape(*sample_shape, 1), dims=("chain", "draw", "obs"))
        single = {"posterior": posterior, "log_likelihood": xr.Dataset({"y": one})}
        try:
            part = az.loo(xr.DataTree.from_dict(single), var_name="y", pointwise=True)
            elpd_i[i], k = float(part.elpd), float(np.ravel(part.pareto_k)[0])
            pareto_k[i] = k if np.isfinite(k) else np.inf  # no tail fitted: unreliable
        except ValueError as error:
            if "tail values are the same" not in str(error):
                raise
            elpd_i[i] = -(logsumexp(-flat[:, i]) - np.log(flat.shape[0]))
            pareto_k[i] = np.inf
    return elpd_data(elpd_i, n_samples=flat.shape[0], pareto_k=pareto_k)


#: Each scale's multiple of the log-scale elpd.
_FACTORS = {"log": 1.0, "negative_log": -1.0, "deviance": -2.0}


def _rescale(loo, scale: str):
    """A pointwise result on ``scale`` (``az.compare`` ranks log-scale results)."""
    if scale == loo.scale:
        return loo
    import numpy as np

    from pmctx.kfold import elpd_data

    return elpd_data(np.ravel(loo.elpd_i) / _FACTORS[loo.scale], n_samples=int(loo.n_samples),
                     p_loo=loo.p, pareto_k=loo.pareto_k, scale=scale)  # fmt: skip


def format_table(table) -> str:
    """The comparison as text, with the reliability columns first.

    Parameters
    ----------
    table : pandas.DataFrame
        A table returned by :func:`compare`.

    Returns
    -------
    str
        The columns ``rank, elpd, se, elpd_diff, dse, p, var_name, elpd_psis,
        k_share, n_high_k, refit, n_refit, reliable`` (those present), two decimals.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"rank": [0], "elpd": [-41.234], "k_share": [0.0],
    ...                       "reliable": [True]}, index=["m"])
    >>> print(format_table(table))
       rank   elpd  k_share  reliable
    m     0 -41.23     0.00      True
    """
    cols = [
        "rank",
        "elpd",
        "se",
        "elpd_diff",
        "dse",
        "p",
        "var_name",
        "elpd_psis",
        "k_share",
        "n_high_k",
        "refit",
        "n_refit",
    ]
    cols = [c for c in cols if c in table.columns] + ["reliable"]
    return table[cols].to_string(float_format=lambda v: f"{v:.2f}")


# ---------------------------------------------------------------- command line


def add_parser(subparsers):
    """Register ``pmctx compare`` on an ``argparse`` subparsers object.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The object returned by ``ArgumentParser.add_subparsers()``.

    Returns
    -------
    argparse.ArgumentParser
        The ``compare`` parser; its ``func`` default is :func:`run`.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pmctx")
    >>> _ = add_parser(parser.add_subparsers())
    >>> args = parser.parse_args(["compare", "a.nc", "b.nc", "--threshold", "0.5"])
    >>> [str(f) for f in args.files], args.threshold, args.func is run
    (['a.nc', 'b.nc'], 0.5, True)
    """
    parser = subparsers.add_parser(
        "compare",
        help="rank fitted models by PSIS-LOO with Pareto-k reporting",
        description="Rank fits' NetCDF files by PSIS-LOO, refitting exactly the observations "
        "with Pareto k > THRESHOLD where the model can refit from its file (the IBP); prints "
        "how each was scored and a warning when PSIS stays unreliable.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE.nc")
    parser.add_argument("--names", nargs="+", help="model names (default: file stems)")
    parser.add_argument("--var-name", help="log_likelihood variable (default: only or joint)")
    parser.add_argument(
        "--threshold",
        type=float,
        default=K_THRESHOLD,
        help=f"Pareto k above which an observation's PSIS estimate is unreliable ({K_THRESHOLD})",
    )
    parser.add_argument(
        "--max-bad-share",
        type=float,
        default=MAX_BAD_SHARE,
        help=f"share of observations with k > THRESHOLD beyond which the ranking is flagged "
        f"unreliable ({MAX_BAD_SHARE:g}, i.e. {MAX_BAD_SHARE * 100:.0f}%%)",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=600.0,
        help="seconds for exact refits of the observations PSIS cannot estimate, through "
        "each model's own fit where its spec can refit from the file (600)",
    )
    parser.add_argument(
        "--no-refit", action="store_true", help="keep PSIS everywhere (no exact refits)"
    )
    parser.set_defaults(func=run)
    return parser


def run(args) -> int:
    """Run ``pmctx compare``: print the ranking, with a warning line when PSIS is unreliable.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of the parser :func:`add_parser` registers (``files``, ``names``,
        ``var_name``, ``threshold``, ``max_bad_share``, ``time_budget``, ``no_refit``).

    Returns
    -------
    int
        The exit status: 0, or 2 on bad input (message on standard error).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pmctx")
    >>> _ = add_parser(parser.add_subparsers())
    >>> run(parser.parse_args(["compare", "missing_a.nc", "missing_b.nc"]))
    2
    """
    import sys

    names = args.names or [p.stem for p in args.files]
    if len(names) != len(args.files) or len(set(names)) != len(names):
        print(f"Need one distinct name per file; got names {names}.", file=sys.stderr)
        return 2
    missing = [str(p) for p in args.files if not p.exists()]
    if missing:
        print(f"File(s) not found: {missing}.", file=sys.stderr)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LooReliabilityWarning)
        try:
            table = compare(
                dict(zip(names, args.files, strict=True)),
                var_name=args.var_name,
                threshold=args.threshold,
                max_bad_share=args.max_bad_share,
                refit=None if getattr(args, "no_refit", False) else "auto",
                time_budget=getattr(args, "time_budget", 600.0),
            )
        except (ValueError, TypeError, KeyError) as err:
            print(f"Cannot compare: {err}", file=sys.stderr)
            return 2
    for w in caught:
        if issubclass(w.category, LooReliabilityWarning):
            print(f"WARNING: {w.message}")
    print(format_table(table))
    return 0

"""Declaring a GUM from :func:`pmctx.gum.gum`'s arguments, and again on other rows.

:func:`declare` checks the arguments, builds the numeric design and the model, and records
what it was declared with (a :class:`Declaration`: the arguments and the raw data columns).
Exact refits (K-fold, and :func:`pmctx.compare`'s refits where PSIS-LOO is unreliable) fit
the same model to training rows: :func:`redeclare` builds the same GUM, with the fitted
model's current hyperparameters (those :func:`pmctx.gum.hyper.fit_evidence` chose, say), on
new rows. A fit remembers the model that made it (:func:`remember`, weakly: the model stays
as long as the user holds it), so the model's registry entry can refit it from the
``DataTree`` alone (:func:`fitted_model`).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> idata = g.laplace(draws=10)
>>> fitted_model(idata) is g
True
>>> rows = {name: values[:20] for name, values in refit_data(g).items()}
>>> redeclare(g, rows)
GumModel(y ~ f_x, family='poisson', n_obs=20, n_free=20)
"""

from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass, field

import numpy as np

from pmctx.gum.columns import data_columns, prepare_columns
from pmctx.gum.constraints import resolve_constraints
from pmctx.gum.coordinates import APPROXIMATIONS
from pmctx.gum.design import build_design
from pmctx.gum.families import FAMILIES
from pmctx.gum.formula import parse_formula
from pmctx.gum.terms import Term, normalize
from pmctx.validation import as_float_array, check_choice, check_positive

__all__ = ["Declaration", "declare", "fitted_model", "redeclare", "refit_data", "remember"]

#: The column that carries observation weights through row splits.
WEIGHTS = "__weights__"

#: Fits -> the model that made them, by the token in ``posterior.attrs``; weak, so a model
#: the user no longer holds is not kept alive by its fits.
_FITTED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


@dataclass(frozen=True)
class Declaration:
    """The arguments of one :func:`pmctx.gum.gum` call.

    Parameters
    ----------
    formula : str or pmctx.gum.terms.Term
        The formula or term expression.
    options : dict
        The keyword arguments other than ``weights`` (``response``, ``family``, ...).
    columns : dict
        The raw data columns, one row per observation.
    weights : numpy.ndarray or None
        Observation weights.

    Examples
    --------
    >>> Declaration("y ~ f(x)", {"family": "poisson"}, {"x": np.zeros(3), "y": np.zeros(3)})
    Declaration(formula='y ~ f(x)', n_rows=3)
    """

    formula: object
    options: dict
    columns: dict = field(repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        n_rows = len(next(iter(self.columns.values()))) if self.columns else 0
        return f"Declaration(formula={self.formula!r}, n_rows={n_rows})"


def declare(
    model_class,
    formula_or_terms,
    data,
    weights=None,
    *,
    response,
    family,
    link,
    intercept,
    intercept_sd,
    offset_sd,
    noise_sd,
    alpha,
    lengthscale_prior_sigma,
    approximation,
):
    """Check :func:`pmctx.gum.gum`'s arguments and build the model they declare.

    The model class is a parameter so that :func:`redeclare` builds the same kind of model
    without this module importing the API built on it.

    Parameters
    ----------
    model_class : type
        :class:`~pmctx.gum.model.GumModel` (or a subclass): called with the design, blocks,
        constraints, labels, lengthscale prior sd and prepared columns.
    formula_or_terms, data, weights
        As for :func:`pmctx.gum.gum` (one formula, no ``y|g ~`` split).
    response, family, link, intercept, intercept_sd, offset_sd, noise_sd, alpha, \
lengthscale_prior_sigma, approximation
        :func:`pmctx.gum.gum`'s keyword arguments, every one given.

    Returns
    -------
    GumModel
        The model, with its :class:`Declaration` in ``declaration``.

    Examples
    --------
    >>> from pmctx.gum.model import GumModel
    >>> options = dict(response=None, family="gaussian", link=None, intercept=None,
    ...                intercept_sd=10.0, offset_sd=10.0, noise_sd=None, alpha=None,
    ...                lengthscale_prior_sigma=None, approximation="auto")
    >>> declare(GumModel, "y ~ x", {"x": np.arange(4.0), "y": np.arange(4.0)}, **options)
    GumModel(y ~ b_x, family='gaussian', n_obs=4, n_free=2)
    """
    check_choice(family, "family", tuple(FAMILIES))
    check_choice(approximation, "approximation", APPROXIMATIONS)
    default_link, links = FAMILIES[family]
    link = default_link if link is None else link
    check_choice(link, "link", links)
    if isinstance(formula_or_terms, str):
        name, term, formula_intercept = parse_formula(formula_or_terms)
        if response is not None and response != name:
            raise ValueError(f"response={response!r} disagrees with the formula's {name!r}.")
        response = name
    elif isinstance(formula_or_terms, Term):
        if response is None:
            raise ValueError("Pass response='column' when giving terms instead of a formula.")
        term, formula_intercept = formula_or_terms, True
    else:
        raise TypeError(
            f"formula_or_terms must be a formula string or a Term, got "
            f"{type(formula_or_terms).__name__}."
        )
    intercept = formula_intercept if intercept is None else bool(intercept)
    intercept_sd = check_positive(intercept_sd, "intercept_sd")
    offset_sd = check_positive(offset_sd, "offset_sd")
    if noise_sd is not None:
        noise_sd = check_positive(noise_sd, "noise_sd")
    if alpha is not None:
        if family != "negative_binomial":
            raise ValueError(f"alpha is the negative-binomial dispersion; family is {family!r}.")
        noise_sd = check_positive(alpha, "alpha")
    blocks = normalize(term)
    columns = data_columns(data)
    y, prepared, labels = prepare_columns(blocks, columns, response, family)
    constraints, offsets = resolve_constraints(blocks, intercept)
    design = build_design(
        blocks,
        prepared,
        y,
        response=response,
        family=family,
        link=link,
        constraints=constraints,
        offsets=offsets,
        intercept=intercept,
        intercept_sd=intercept_sd,
        offset_sd=offset_sd,
        noise_sd=noise_sd,
    )
    for fn in design.functions.values():
        group_labels = labels.get(f"{getattr(fn.leaf, 'group', None)}|group")
        if fn.levels is not None and group_labels is not None:
            fn.level_names = group_labels[fn.levels.astype(int)]
    if weights is not None:
        weights = as_float_array(weights, "weights", shape=(len(y),))
        if np.any(weights < 0):
            raise ValueError("weights must be non-negative, got a negative weight.")
        design.weights = weights
    if lengthscale_prior_sigma is not None:
        lengthscale_prior_sigma = check_positive(lengthscale_prior_sigma, "lengthscale_prior_sigma")
    fitted = model_class(design, blocks, constraints, labels, lengthscale_prior_sigma, prepared)
    fitted.approximation = approximation
    options = {
        "response": response, "family": family, "link": link, "intercept": intercept,
        "intercept_sd": intercept_sd, "offset_sd": offset_sd,
        "noise_sd": None if alpha is not None else noise_sd, "alpha": alpha,
        "lengthscale_prior_sigma": lengthscale_prior_sigma, "approximation": approximation,
    }  # fmt: skip
    fitted.declaration = Declaration(formula_or_terms, options, columns, weights)
    return fitted


def refit_data(gum_model) -> dict | None:
    """The model's data as columns to split by rows (weights as one more column).

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    Returns
    -------
    dict or None
        Column name -> values, one row per observation; None for a model built otherwise.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> g = gum("y ~ x", {"x": np.arange(4.0), "y": np.arange(4.0)}, weights=np.ones(4))
    >>> sorted(refit_data(g))
    ['__weights__', 'x', 'y']
    """
    declaration = getattr(gum_model, "declaration", None)
    if declaration is None:
        return None
    columns = dict(declaration.columns)
    if declaration.weights is not None:
        columns[WEIGHTS] = declaration.weights
    return columns


def redeclare(gum_model, data):
    """The same GUM on other rows, with ``gum_model``'s current hyperparameters.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.
    data : dict
        Columns as :func:`refit_data` gives them, for the rows to fit.

    Returns
    -------
    GumModel
        A new model (not fitted).

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> g = gum("y ~ f(x, lengthscale=0.5)", {"x": np.arange(6.0), "y": np.arange(6.0)})
    >>> g.set_hyperparameters({"f_x": {"lengthscale": 2.0}})
    >>> redeclare(g, {"x": np.arange(4.0), "y": np.arange(4.0)}).hyperparameters()["f_x"]
    {'lengthscale': 2.0, 'variance': 1.0}
    """
    declaration = getattr(gum_model, "declaration", None)
    if declaration is None:
        raise ValueError(
            "This GumModel was not declared by pmctx.gum.gum, so it cannot be declared again "
            "on other rows; build the refits with pmctx.refit.gum_refitter(build, data)."
        )
    columns = dict(data)
    weights = columns.pop(WEIGHTS, None)
    model = declare(type(gum_model), declaration.formula, columns, weights, **declaration.options)
    settings = {k: v for k, v in gum_model.hyperparameters().items() if v is not None}
    model.set_hyperparameters(settings)
    return model


def remember(gum_model, idata):
    """Mark ``idata`` as a fit of ``gum_model`` (and of the registered model ``"gum"``).

    Parameters
    ----------
    gum_model : GumModel
        The model that made the fit.
    idata : xarray.DataTree
        The fit; its posterior attributes get ``pmctx_gum_fit`` (a token) and, unless set,
        ``pmctx_model = "gum"``.

    Returns
    -------
    xarray.DataTree
        ``idata``.

    Examples
    --------
    >>> import arviz as az
    >>> from pmctx.gum import gum
    >>> g = gum("y ~ x", {"x": np.arange(4.0), "y": np.arange(4.0)})
    >>> fitted_model(remember(g, az.from_dict({"posterior": {"a": np.zeros((1, 2))}}))) is g
    True
    """
    if idata is None or "posterior" not in idata.children:
        return idata
    token = uuid.uuid4().hex
    _FITTED[token] = gum_model
    idata.posterior.attrs["pmctx_gum_fit"] = token
    idata.posterior.attrs.setdefault("pmctx_model", "gum")
    return idata


def fitted_model(idata):
    """The GumModel that made ``idata``, while the user still holds it (else None).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit.

    Returns
    -------
    GumModel or None
        The model, or None for fits of other models, fits read from disk, or fits whose
        model is gone.

    Examples
    --------
    >>> import arviz as az
    >>> fitted_model(az.from_dict({"posterior": {"a": np.zeros((1, 2))}})) is None
    True
    """
    if "posterior" not in idata.children:
        return None
    token = idata.posterior.attrs.get("pmctx_gum_fit")
    return None if token is None else _FITTED.get(token)

"""``gum(...)``: declare a GUM from a formula or terms and data; fit it by NUTS, Laplace, ADVI.

:func:`gum` validates the data (:mod:`pmctx.gum.columns`), builds the numeric design
(:mod:`pmctx.gum.design`) and returns a :class:`~pmctx.gum.model.GumModel`, whose methods fit
and predict.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 40)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> sorted(g.model.named_vars)[:3]
['f_x', 'f_x_z', 'intercept']
>>> g.laplace(draws=10).posterior["f_x"].dims
('chain', 'draw', 'f_x_x')
"""

from __future__ import annotations

from pmctx.gum.columns import data_columns
from pmctx.gum.coordinates import APPROXIMATIONS
from pmctx.gum.declaration import declare
from pmctx.gum.many import GumCollection, split_rows
from pmctx.gum.model import GumModel
from pmctx.validation import as_float_array, check_nonempty

__all__ = ["APPROXIMATIONS", "GumModel", "gum"]


def _split_fits(formula: str, data, *, weights=None, response=None, **kwargs):
    """``y|g ~ rhs``: one GUM per level of ``g`` (see :mod:`pmctx.gum.many`); the formula
    names the response, so a ``response`` argument is not used."""
    lhs, rhs = formula.split("~", 1)
    response, _, by = (part.strip() for part in lhs.partition("|"))
    columns = data_columns(data)
    if response in columns:
        check_nonempty(columns[response], f"data[{response!r}]", unit="observation")
    if weights is not None:
        columns["__weights__"] = as_float_array(weights, "weights", ndim=1)
    models = {}
    for level, rows in split_rows(columns, by).items():
        level_weights = rows.pop("__weights__", None)
        models[level] = gum(f"{response} ~ {rhs}", rows, weights=level_weights, **kwargs)
    return GumCollection(models, by)


def gum(
    formula_or_terms,
    data,
    *,
    response: str | None = None,
    family: str = "gaussian",
    link: str | None = None,
    intercept: bool | None = None,
    intercept_sd: float = 10.0,
    offset_sd: float = 10.0,
    noise_sd: float | None = None,
    alpha: float | None = None,
    weights=None,
    lengthscale_prior_sigma: float | None = None,
    approximation: str = "auto",
) -> GumModel:
    """Declare a GUM.

    Parameters
    ----------
    formula_or_terms : str or Term
        A formula ``"y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3)"`` (see
        :mod:`pmctx.gum.formula`) or a term expression such as
        ``GP("x1") * GP("x2", kernel="periodic", period=np.pi) + GP("x3")`` (then pass
        ``response``).
    data : pandas.DataFrame or dict of arrays
        Named columns. 2-D regressors (trials x positions, NaN where absent) make their
        product block a sum over positions.
    response : str, optional
        Response column when terms are given.
    family : {"gaussian", "bernoulli", "poisson", "negative_binomial"}
    link : str, optional
        ``logit`` (default) or ``probit`` for Bernoulli; ``log`` for Poisson; ``identity``.
    intercept : bool, optional
        Overrides the formula's intercept (default: present).
    intercept_sd, offset_sd : float
        Prior standard deviations of the intercept ``c0`` and of free offsets ``c_ij``.
    noise_sd : float, optional
        Gaussian noise sd; None samples it (NUTS) or leaves it to hyperparameter fitting.
    alpha : float, optional
        Negative-binomial dispersion (variance ``mu + mu^2 / alpha``); None samples it (NUTS,
        ``HalfNormal(10)`` prior) or leaves it to hyperparameter fitting.
    weights : array of shape (N,), optional
        Observation weights: observation n's log-likelihood counts ``weights[n]`` times
        (non-negative; e.g. frequency weights of aggregated trials).
    lengthscale_prior_sigma : float, optional
        Sample GP lengthscales under NUTS/ADVI with priors
        ``LogNormal(log(declared), lengthscale_prior_sigma)``; Laplace keeps them fixed (fit
        them with :mod:`pmctx.gum.hyper` instead). Default: fixed lengthscales.
    approximation : {"auto", "exact", "hsgp"}, default "auto"
        GP prior of the ``pm.Model`` that NUTS and ADVI sample: the exact grid prior, or the
        HSGP basis (:mod:`pmctx.gum.hsgp`, PyMC's ``pm.gp.HSGP``); ``"auto"`` takes HSGP when
        lengthscales are sampled (``lengthscale_prior_sigma``) and from
        :data:`pmctx.gum.hsgp.HSGP_MIN_OBS` rows on. Laplace and evidence stay exact.

    Returns
    -------
    GumModel, or a :class:`~pmctx.gum.many.GumCollection` (one model per level) for a
    formula ``"y|g ~ ..."``.

    Examples
    --------
    Quantile binning, observation weights and a negative-binomial family:

    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> data = {"x": rng.normal(size=200), "g": rng.choice(["a", "b", "c"], 200)}
    >>> data["y"] = rng.poisson(np.exp(0.5 * data["x"]))
    >>> g = gum("y ~ f(x, binning=5) + cat(g)^cat(g2)", {**data, "g2": data["g"][::-1]},
    ...         family="negative_binomial", alpha=5.0, weights=np.ones(200))
    >>> g.design.functions["f_x"].support.size, sorted(g.function_names)
    (5, ['f_x', 'w_g', 'w_g2', 'w_g_g2'])
    """
    options = {
        "response": response, "family": family, "link": link, "intercept": intercept,
        "intercept_sd": intercept_sd, "offset_sd": offset_sd, "noise_sd": noise_sd,
        "alpha": alpha, "lengthscale_prior_sigma": lengthscale_prior_sigma,
        "approximation": approximation,
    }  # fmt: skip
    if isinstance(formula_or_terms, str) and "|" in formula_or_terms.split("~")[0]:
        return _split_fits(formula_or_terms, data, weights=weights, **options)
    return declare(GumModel, formula_or_terms, data, weights, **options)

"""GLM comparison models and model comparison by PSIS-LOO/WAIC.

A GLM is the special case of a GUM with only linear terms (or position weights times a fixed
normative mapping). These helpers build the psychophysics pair of seed 002 section 3.2:

* GLM: ``rho = sum_k w_k cos(x_k) + w0`` (normative mapping, free weights);
* GUM: ``rho = sum_k w_k f(x_k) + w0`` with ``mean(w) = 1`` and ``f`` a periodic GP.

Examples
--------
>>> from pmctx.gum.glm import psychophysics_glm
>>> from pmctx.gum.synthetic import psychophysics
>>> g = psychophysics_glm(psychophysics(50, random_seed=0))
>>> sorted(g.function_names)
['w_position']
"""

from __future__ import annotations

import arviz as az
import numpy as np

from pmctx.gum.api import GumModel, gum
from pmctx.gum.terms import GP, Categorical, Fixed, Linear, Sum

__all__ = ["compare", "glm", "psychophysics_glm", "psychophysics_gum"]


def glm(
    response: str, regressors, data, *, family: str = "gaussian", link=None, sd=10.0, **kwargs
) -> GumModel:
    """A plain GLM ``g(E y) = b0 + sum_r b_r x_r`` as a GUM of linear terms.

    Parameters
    ----------
    response : str
    regressors : list of str
    data : DataFrame or dict
    family, link : str
    sd : float
        Prior sd of the weights (Gaussian, as seed 002 Appendix B.1).
    **kwargs
        Further :func:`pmctx.gum.gum` options (``noise_sd``, ``weights``, ...).

    Returns
    -------
    GumModel
        The declared model.
    """
    regressors = list(regressors)
    if not regressors:
        raise ValueError("glm needs at least one regressor, got none.")
    terms = [Linear(name, sd=sd) for name in regressors]
    expr = terms[0] if len(terms) == 1 else Sum(terms)
    return gum(expr, data, response=response, family=family, link=link, **kwargs)


def psychophysics_glm(data, *, mapping=np.cos, response="choice", link=None) -> GumModel:
    """Normative GLM ``sum_k w_k mapping(angle_k) + w0`` (Bernoulli).

    Parameters
    ----------
    data : pandas.DataFrame or dict
        Columns ``angle`` and ``position`` (trials x positions) and the response.
    mapping : callable, default numpy.cos
        Fixed mapping of each angle.
    response : str, default "choice"
        Response column (binary).
    link : str, optional
        Bernoulli link (default logit).

    Returns
    -------
    GumModel
        The declared model.
    """
    expr = Categorical("position", constraint="free") * Fixed("angle", fn=mapping)
    return gum(expr, data, response=response, family="bernoulli", link=link)


def psychophysics_gum(
    data, *, response="choice", lengthscale=1.0, variance=1.0, max_points=24, link=None
) -> GumModel:
    """GUM ``sum_k w_k f(angle_k) + w0`` with ``mean(w) = 1`` and a periodic-GP mapping ``f``.

    Parameters
    ----------
    data : pandas.DataFrame or dict
        Columns ``angle`` and ``position`` (trials x positions) and the response.
    response : str, default "choice"
        Response column (binary).
    lengthscale, variance : float, default 1.0
        Periodic-GP hyperparameters of ``f``.
    max_points : int, default 24
        Support points of the GP.
    link : str, optional
        Bernoulli link (default logit).

    Returns
    -------
    GumModel
        The declared model.
    """
    expr = Categorical("position", constraint="mean-one") * GP(
        "angle",
        kernel="periodic",
        period=2 * np.pi,
        lengthscale=lengthscale,
        variance=variance,
        constraint="free",
        max_points=max_points,
    )
    return gum(expr, data, response=response, family="bernoulli", link=link)


def compare(idatas: dict, *, ic: str = "loo", **kwargs):
    """``az.compare`` of DataTree objects that carry a ``log_likelihood`` group.

    Parameters
    ----------
    idatas : dict
        ``{name: DataTree}`` with ``log_likelihood`` groups.
    ic : {"loo"}, default "loo"
        Information criterion: PSIS-LOO, the only one of ArviZ 1 (it has no WAIC).
    **kwargs
        Passed to :func:`arviz.compare`.

    Returns
    -------
    pandas.DataFrame
        The :func:`arviz.compare` table (``elpd``, ``elpd_diff``, ``dse``, ``weight``, ...).

    Raises
    ------
    ValueError
        When a fit has no ``log_likelihood`` group, or ``ic`` is not ``"loo"``.
    """
    if ic != "loo":
        raise ValueError(f"ic must be 'loo' (ArviZ 1 compares by PSIS-LOO only), got {ic!r}.")
    missing = [name for name, idata in idatas.items() if "log_likelihood" not in idata.children]
    if missing:
        raise ValueError(
            f"DataTree of {missing} has no log_likelihood group; sample with "
            "GumModel.sample/laplace/advi, which add it."
        )
    return az.compare(idatas, **kwargs)

"""Prior draws of a GUM and the responses they generate (for SBC).

The GUM's free vector ``u`` (non-centred function coordinates, offsets, intercept) has a
standard normal prior (see :mod:`pmctx.gum.laplace`), so a prior draw is ``u ~ N(0, I)``
mapped through the declared model: function values on their grids, the predictor at the
data, responses from the family. Regressors are drawn ``Uniform(0, 1)``. The truth holds
the function values at ``grid_points`` evenly spaced grid points per function (as
``"f_x1[3]"``) and the intercept; GP hyperparameters stay as declared (the Laplace fit keeps
them fixed, so they are not ranked).

Examples
--------
>>> data, truth = simulate(0, n=30)
>>> sorted(truth)[:2], data["y"].shape
(['f_x1[0]', 'f_x1[11]'], (30,))
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from pmctx.validation import check_choice, check_int, check_positive

__all__ = ["DEFAULT_FORMULA", "invariants", "simulate"]

DEFAULT_FORMULA = (
    "y ~ f(x1, lengthscale=0.3, max_points=12) + f(x2, lengthscale=0.5, max_points=12)"
)


def _columns(formula: str) -> tuple[str, list[str]]:
    from pmctx.gum.formula import parse_formula
    from pmctx.gum.terms import normalize

    response, term, _ = parse_formula(formula)
    columns = sorted({leaf.column for block in normalize(term) for f in block for leaf in f})
    return response, columns


def simulate(
    random_seed,
    *,
    n: int = 60,
    formula: str = DEFAULT_FORMULA,
    family: str = "gaussian",
    noise_sd: float = 0.5,
    grid_points: int = 3,
):
    """One prior draw of the functions and responses at random regressors: ``(data, truth)``.

    ``data`` holds the regressor columns, the response, ``formula``, ``family`` and (Gaussian)
    ``noise_sd``, so that ``resolve_fit("gum")(data)`` fits the generating model.

    Parameters
    ----------
    random_seed : int or numpy.random.Generator
        Random seed or generator.
    n : int, default 60
        Observations.
    formula : str, default DEFAULT_FORMULA
        The generating GUM.
    family : {"gaussian", "poisson", "bernoulli"}, default "gaussian"
        Response family.
    noise_sd : float, default 0.5
        Gaussian noise sd.
    grid_points : int, default 3
        Support points per function.

    Returns
    -------
    data : dict
        Regressors, response and the model options.
    truth : dict
        Function values on their grids and the intercept.
    """
    from pmctx.gum import gum

    rng = np.random.default_rng(random_seed)
    n = check_int(n, "n", minimum=2)
    family = check_choice(family, "family", ["gaussian", "poisson", "bernoulli"])
    response, columns = _columns(formula)
    data = {c: rng.uniform(0.0, 1.0, n) for c in columns}
    extra = {"noise_sd": check_positive(noise_sd, "noise_sd")} if family == "gaussian" else {}
    g = gum(formula, {**data, response: np.zeros(n)}, family=family, **extra)
    u = rng.standard_normal(g.design.n_free)
    rho = g.design.predictor(u)
    if family == "gaussian":
        y = rho + noise_sd * rng.standard_normal(n)
    elif family == "poisson":
        y = rng.poisson(np.exp(rho)).astype(float)
    else:
        y = (rng.random(n) < expit(rho)).astype(float)
    truth = {}
    thetas = g.design.thetas(u)
    k = check_int(grid_points, "grid_points", minimum=1)
    for name in g.function_names:
        values = np.asarray(thetas[name]).ravel()
        for i in np.unique(np.linspace(0, values.size - 1, k).round().astype(int)):
            truth[f"{name}[{i}]"] = float(values[i])
    scalars = g.design.scalars(u)
    if "intercept" in scalars:
        truth["intercept"] = float(scalars["intercept"])
    data.update({response: y, "formula": formula, "family": family, **extra})
    return data, truth


def invariants(idata) -> dict:
    """Posterior draws of every function value on its grid (``"f[i]"``) and the intercept.

    Parameters
    ----------
    idata : xarray.DataTree
        A GUM fit.

    Returns
    -------
    dict
        Draws by quantity name (``"f_x[0]"``, ..., ``"intercept"``).
    """
    post = idata.posterior
    out = {}
    for name, var in post.data_vars.items():
        if name.endswith("_z") or not (name.startswith("f_") or name == "intercept"):
            continue
        values = var.values.reshape(var.shape[0] * var.shape[1], -1)
        if name == "intercept":
            out[name] = values[:, 0]
        else:
            out.update({f"{name}[{i}]": values[:, i] for i in range(values.shape[1])})
    return out

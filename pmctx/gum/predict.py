"""Exact prediction of a fitted GUM at new inputs, from Laplace or NUTS draws.

Every function is evaluated at the new inputs through its own basis, never interpolated from
a plotting grid:

* a GP on an exact support (the unique training inputs) is extended to new inputs by the GP
  conditional of seed 002 eq. 14, drawn jointly for every posterior draw:
  ``f(x*) | theta ~ N(level + K*s Kss^-1 (theta - level), K** - K*s Kss^-1 Ks*)``, where
  ``theta`` are the function's values on its support and ``level`` its constraint's constant
  (1 for mean-one, 0 for the zero-type constraints); at a training input the prediction is
  that support value, so predictions at the training data reproduce the fitted model;
* a GP on an inducing grid uses the grid's linear-interpolation basis, which *is* that
  model's function (inputs beyond the grid take the end values, as in the fit);
* a grouped GP ``f(x|g)`` does the same for each level (the levels are independent given
  their values on the support) and each row takes its own level's function;
* linear terms multiply the input, categorical terms look up their level (an unseen level is
  an error), fixed terms apply their known function.

:func:`predict` and :func:`function_values` are :class:`pmctx.gum.GumModel`'s methods of the
same names (the class binds them; ``self`` is the model).

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> x = rng.integers(0, 5, 80).astype(float)
>>> g = gum("y ~ f(x)", {"x": x, "y": rng.poisson(np.exp(np.sin(x)))}, family="poisson")
>>> pred = g.predict({"x": np.array([0.5, 2.0])}, kind="mean", draws=200)
>>> pred.dims, pred.shape
(('chain', 'draw', 'obs'), (1, 200, 2))
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pmctx.gum.basis import basis_matrix
from pmctx.gum.columns import new_columns
from pmctx.gum.design import _JITTER, offset_name
from pmctx.gum.families import mean_response, response_draws
from pmctx.gum.grouped import grouped_basis, level_index
from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.streams import stream
from pmctx.gum.terms import Categorical, Fixed, Linear
from pmctx.validation import check_choice, check_int

__all__ = ["KINDS", "function_draws", "function_values", "predict", "predict_draws"]

#: What ``GumModel.predict`` returns: the predictor, the mean response, or response draws.
KINDS = ("rho", "mean", "response")

# Draws evaluated at once: bounds the (draws x N x positions) temporaries.
_CHUNK = 200


def _level(fn) -> float:
    """Prior mean of the function's values (the constraint's constant)."""
    return float(fn.theta0[0]) if fn.theta0.size and np.allclose(fn.theta0, fn.theta0[0]) else 0.0


class _Extension:
    """Values of one exact-support GP at new inputs, given its support values."""

    def __init__(self, fn, new_x: np.ndarray):
        self.fn = fn
        self.level = _level(fn)
        self.new = new_x
        kw = dict(
            lengthscale=fn.hyper["lengthscale"],
            variance=fn.hyper["variance"],
            period=fn.hyper.get("period"),
        )
        K_ss = fn.kernel_cov()  # one level's (every level's, for a grouped GP)
        self.n_levels = fn.n_levels
        K_xs = kernel_matrix(fn.leaf.kernel, new_x, fn.support, **kw)
        K_xx = kernel_matrix(fn.leaf.kernel, new_x, new_x, **kw)
        chol = np.linalg.cholesky(K_ss)
        # A = K_xs K_ss^-1 via two triangular solves
        half = np.linalg.solve(chol, K_xs.T)
        self.A = np.linalg.solve(chol.T, half).T
        cond = K_xx - half.T @ half
        cond = 0.5 * (cond + cond.T) + _JITTER * fn.hyper["variance"] * np.eye(len(new_x))
        self.L = np.linalg.cholesky(cond)

    def draw(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(S, G m) support values -> (S, G (m + n_new)) values on the extended support
        (level-major; G = 1 unless grouped: the levels are independent given theta)."""
        stacked = theta.reshape(theta.shape[0], self.n_levels, -1)
        mean = self.level + (stacked - self.level) @ self.A.T
        eps = rng.standard_normal((theta.shape[0], self.n_levels, len(self.new)))
        extended = np.concatenate([stacked, mean + eps @ self.L.T], axis=2)
        return extended.reshape(theta.shape[0], -1)


def _new_basis(leaf, fn, x: np.ndarray, labels, groups=None):
    """Basis of ``fn`` at new inputs ``x`` (N, P) (and group codes ``groups`` (N, P) of a
    grouped GP; without them, the basis of one level), and the GP extension it needs."""
    basis, extension = _x_basis(leaf, fn, x, labels)
    if fn.levels is None or groups is None:
        return basis, extension
    index = level_index(groups, fn.levels, leaf.name)
    return grouped_basis(basis, index, fn.n_levels), extension


def _x_basis(leaf, fn, x: np.ndarray, labels):
    if isinstance(leaf, Categorical):
        ok = np.isfinite(x)
        unseen = np.setdiff1d(np.unique(x[ok]), fn.support)
        if unseen.size:
            shown = unseen if labels is None else labels[unseen.astype(int)]
            raise ValueError(
                f"{leaf.name!r} has no weight for level(s) {list(shown)[:5]} that the training "
                "data did not contain. Predict only at levels seen in training."
            )
        return basis_matrix(leaf, fn, x), None
    if isinstance(leaf, Linear) or not fn.exact or fn.edges is not None:
        return basis_matrix(leaf, fn, x), None
    ok = np.isfinite(x)
    new = np.setdiff1d(np.unique(x[ok]), fn.support)
    if new.size == 0:
        return basis_matrix(leaf, fn, x), None
    extended = np.concatenate([fn.support, new])
    order = np.argsort(extended)  # sorted rank -> index on the extended support
    flat = x.reshape(-1)
    W = np.zeros((flat.size, extended.size))
    rows = np.flatnonzero(np.isfinite(flat))
    W[rows, order[np.searchsorted(extended[order], flat[rows])]] = 1.0
    return leaf.scale * W.reshape(*x.shape, -1), _Extension(fn, new)


def _posterior_arrays(gum_model, idata, draws, random_seed):
    """Function values, offsets and intercept per draw, flattened to (S, ...)."""
    if idata is None:
        result = gum_model.laplace_result or gum_model.fit_laplace()
        u = result.draws(draws, stream(random_seed))
        d = gum_model.design
        values = dict(d.thetas(u))
        values.update(d.scalars(u))
        if d.noise_sd is not None:
            values["noise_sd"] = np.full(len(u), d.noise_sd)
        return values, (1, len(u))
    post = idata.posterior
    shape = (post.sizes["chain"], post.sizes["draw"])
    values = {}
    for name in [*list(gum_model.design.functions), "intercept", "noise_sd", "alpha"]:
        if name in post:
            arr = post[name].values
            values[name] = arr.reshape(shape[0] * shape[1], *arr.shape[2:])
    if "alpha" in values:  # negative-binomial dispersion, carried as noise_sd here
        values["noise_sd"] = values.pop("alpha")
    for key, spec in gum_model.design.offsets.items():
        label = offset_name(key)
        values[label] = (
            post[label].values.reshape(-1) if spec == "free" else np.full(np.prod(shape), spec)
        )
    if "noise_sd" not in values and gum_model.design.noise_sd is not None:
        values["noise_sd"] = np.full(np.prod(shape), gum_model.design.noise_sd)
    for name in gum_model.design.functions:
        # (S,) scalars and (S, levels, m) grouped functions -> (S, values), level-major
        values[name] = values[name].reshape(len(values[name]), -1)
    return values, shape


def function_draws(gum_model, name: str, x, idata=None, *, draws=1000, random_seed=0) -> np.ndarray:
    """Draws (chain, draw, len(x)) of function ``name`` at inputs ``x`` (see module doc);
    (chain, draw, levels, len(x)) for a grouped GP ``f(x|g)``, every level's function.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    name : str
        A function name.
    x : array_like
        Inputs.
    idata : xarray.DataTree, optional
        Posterior draws (default: ``draws`` Laplace draws).
    draws : int, default 1000
        Laplace draws when ``idata`` is None.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the Laplace and GP-conditional draws.

    Returns
    -------
    numpy.ndarray (chain, draw, len(x)) or (chain, draw, levels, len(x))
        Function values.
    """
    fn = gum_model.design.functions[name]
    x = np.asarray(x, dtype=float).reshape(-1, 1)
    basis, extension = _new_basis(fn.leaf, fn, x, gum_model.labels.get(name))
    values, shape = _posterior_arrays(gum_model, idata, draws, random_seed)
    theta = values[name]
    if extension is not None:
        theta = extension.draw(theta, stream(random_seed))
    theta = theta.reshape(len(theta), fn.n_levels, -1)
    out = theta @ basis[:, 0, :].T / fn.leaf.scale
    return out.reshape(*shape, *out.shape[1 if fn.levels is not None else 2 :])


def predict_draws(gum_model, columns: dict, n: int, idata=None, *, draws=1000, random_seed=0):
    """Predictor draws (chain, draw, n) at the validated new ``columns``, and noise sds.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    columns : dict
        Validated 2-D regressor columns of the new data.
    n : int
        Number of new rows.
    idata : xarray.DataTree, optional
        Posterior draws (default: ``draws`` Laplace draws).
    draws : int, default 1000
        Laplace draws when ``idata`` is None.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the draws.

    Returns
    -------
    rho : numpy.ndarray (chain, draw, n)
        Predictor draws.
    noise : numpy.ndarray or float or None
        Dispersion per draw (fixed, sampled) or None.
    """
    d = gum_model.design
    rng = stream(random_seed)
    values, shape = _posterior_arrays(gum_model, idata, draws, random_seed)
    bases, extensions, masks = {}, {}, []
    for i, block in enumerate(gum_model.blocks):
        n_pos = max(columns[leaf.column].shape[1] for factor in block for leaf in factor)
        mask = np.ones((n, n_pos))
        for j, factor in enumerate(block):
            for l, leaf in enumerate(factor):
                x = np.broadcast_to(columns[leaf.column], (n, n_pos))
                mask = mask * np.isfinite(x)
                if isinstance(leaf, Fixed):
                    values_x = leaf.fn(np.where(np.isfinite(x), x, 0.0))
                    bases[(i, j, l)] = leaf.scale * np.asarray(values_x, float)
                    continue
                fn = d.functions[leaf.name]
                groups = None
                if fn.levels is not None:
                    groups = np.broadcast_to(columns[leaf.group], (n, n_pos))
                    mask = mask * np.isfinite(groups)
                basis, ext = _new_basis(leaf, fn, x, gum_model.labels.get(leaf.name), groups)
                bases[(i, j, l)] = basis
                if ext is not None:
                    extensions[(i, j, l)] = ext
        masks.append(mask)
    total = int(np.prod(shape))
    rho = np.zeros((total, n))
    for start in range(0, total, _CHUNK):
        rows = slice(start, min(start + _CHUNK, total))
        for i, block in enumerate(gum_model.blocks):
            product = masks[i][None]
            for j, factor in enumerate(block):
                acc = 0.0
                for l, leaf in enumerate(factor):
                    if isinstance(leaf, Fixed):
                        acc = acc + bases[(i, j, l)][None]
                        continue
                    theta = values[leaf.name][rows]
                    if (i, j, l) in extensions:
                        theta = extensions[(i, j, l)].draw(theta, rng)
                    acc = acc + np.einsum("npm,sm->snp", bases[(i, j, l)], theta)
                if (i, j) in d.offsets:
                    acc = acc + values[offset_name((i, j))][rows, None, None]
                product = product * acc
            rho[rows] += product.sum(axis=2)
        if d.intercept:
            rho[rows] += values["intercept"][rows, None]
    noise = values.get("noise_sd")
    return rho.reshape(*shape, n), None if noise is None else noise.reshape(shape)


def function_values(self, name, x, idata=None, *, draws=1000, random_seed=0) -> np.ndarray:
    """Draws (chain, draw, len(x)) of function ``name`` at inputs ``x`` (exact, not
    interpolated from the support grid).

    Parameters
    ----------
    name : str
        The function (one of :attr:`function_names`).
    x : array_like
        Inputs at which to evaluate it.
    idata : xarray.DataTree, optional
        Posterior draws; default ``draws`` Laplace draws.
    draws : int, default 1000
        Laplace draws when ``idata`` is None.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the Laplace and GP-conditional draws.

    Returns
    -------
    numpy.ndarray
        Draws of shape ``(chain, draw, len(x))``.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> g.function_values("f_x", np.array([0.5, 1.0]), draws=20).shape
    (1, 20, 2)
    """
    if name not in self.design.functions:
        raise ValueError(f"Unknown function {name!r}; have {self.function_names}.")
    return function_draws(self, name, x, idata, draws=draws, random_seed=random_seed)


def predict(self, data, idata=None, *, kind="rho", draws=1000, random_seed=0, name=None):
    """Posterior draws of the predictor, mean or response at new inputs.

    Functions are evaluated exactly at the new inputs (GP conditional of seed 002 eq. 14
    for exact-support GPs, the model's own basis otherwise; see :mod:`pmctx.gum.predict`).

    Parameters
    ----------
    data : DataFrame or dict
        The regressor columns of the formula (the response is not needed).
    idata : DataTree, optional
        Posterior draws (NUTS, ADVI or Laplace). Default: ``draws`` Laplace draws.
    kind : {"rho", "mean", "response"}
        The predictor ``rho``, the mean response ``g^-1(rho)``, or response draws.
    draws : int, default 1000
        Laplace draws when ``idata`` is None.
    random_seed : int or numpy.random.Generator, default 0
        Seed of the GP-conditional and response draws.
    name : str, optional
        Name of the returned DataArray (default: ``kind``, or the response's name).

    Returns
    -------
    xarray.DataArray with dims ``(chain, draw, obs)``.

    Examples
    --------
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> idata = g.laplace(draws=20)
    >>> g.predict({"x": np.array([0.5, 1.5])}, idata, kind="mean").shape
    (1, 20, 2)
    """
    check_choice(kind, "kind", KINDS)
    draws = check_int(draws, "draws", minimum=1)
    columns, n = new_columns(self.blocks, self.labels, data)
    rho, noise = predict_draws(self, columns, n, idata, draws=draws, random_seed=random_seed)
    d = self.design
    if kind == "mean":
        rho = mean_response(d.family, d.link, rho)
    elif kind == "response":
        if d.family == "gaussian" and noise is None:
            raise ValueError("Response draws of Gaussian data need noise_sd (fixed or sampled).")
        rho = response_draws(d.family, d.link, rho, stream(random_seed, 1), noise_sd=noise)
    return as_dataarray(rho, name or (d.response if kind == "response" else kind))


def as_dataarray(values: np.ndarray, name: str) -> xr.DataArray:
    """Wrap ``(chain, draw, obs)`` draws as a named DataArray.

    Parameters
    ----------
    values : numpy.ndarray (chain, draw, obs)
        The draws.
    name : str
        Name of the DataArray.

    Returns
    -------
    xarray.DataArray
        Dims ``chain``, ``draw``, ``obs`` with integer coordinates.
    """
    chains, draws, n = values.shape
    return xr.DataArray(
        values,
        dims=("chain", "draw", "obs"),
        coords={"chain": np.arange(chains), "draw": np.arange(draws), "obs": np.arange(n)},
        name=name,
    )

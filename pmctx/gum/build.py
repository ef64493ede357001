"""PyMC model of a GUM design: non-centred GP functions, named dims, observed response.

Each function ``k`` gets a standard-normal free vector ``{k}_z`` (dims ``{k}_free``) and a
``Deterministic`` ``{k}`` holding its values on its support grid (dims ``{k}_x``, coordinates
the grid inputs) or its weights (``{k}_level`` for categorical, scalar for linear terms).
Free offsets ``c_i_j`` and the intercept are ``sd * z`` of standard-normal ``*_z`` variables,
so that ``pm.sample``, ``pm.fit`` and :mod:`pmctx.gum.laplace` all target the same density.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pmctx.gum.design import _JITTER, GumDesign, offset_name
from pmctx.gum.hsgp import hsgp_factor
from pmctx.gum.init import start_normal
from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.terms import GP, Categorical, Linear

__all__ = ["build_pymc_model", "function_coords", "function_dim", "sparse_basis", "sparse_product"]


def function_dim(design: GumDesign, name: str) -> list[str]:
    """Dims of the Deterministic of function ``name``.

    Parameters
    ----------
    design : GumDesign
        The model's design.
    name : str
        A function name.

    Returns
    -------
    list of str
        ``[]`` (linear), ``[name + "_level"]`` (categorical), ``[name + "_x"]`` (GP), or
        both level and x dims for a grouped GP ``f(x|g)``.
    """
    fn = design.functions[name]
    if isinstance(fn.leaf, Linear):
        return []
    if fn.levels is not None:  # grouped GP f(x|g): (levels, support)
        return [f"{name}_level", f"{name}_x"]
    return [f"{name}_level" if isinstance(fn.leaf, Categorical) else f"{name}_x"]


def function_coords(design: GumDesign, name: str) -> dict:
    """Coordinates of the dims of function ``name``.

    Parameters
    ----------
    design : GumDesign
        The model's design.
    name : str
        A function name.

    Returns
    -------
    dict
        ``{dim: coordinate values}`` for the dims of :func:`function_dim`.
    """
    fn = design.functions[name]
    dims = function_dim(design, name)
    if fn.levels is not None:
        return {dims[0]: fn.level_names, dims[1]: fn.support}
    return {dim: fn.support for dim in dims}


def _sampled_lengthscale_factor(fn, name: str, sigma: float):
    """``Q = P^T chol(P K(l) P^T)`` with ``l ~ LogNormal(log l_declared, sigma)`` in the graph."""
    ell = pm.LogNormal(f"{name}_lengthscale", mu=np.log(fn.hyper["lengthscale"]), sigma=sigma)
    K = kernel_matrix(
        fn.leaf.kernel,
        fn.support,
        fn.support,
        lengthscale=ell,
        variance=fn.hyper["variance"],
        period=fn.hyper.get("period"),
        xp=pt,
    )
    P = pt.as_tensor(fn.P)
    m = len(fn.support)
    K = K + _JITTER * fn.hyper["variance"] * pt.eye(m)
    if fn.levels is not None:  # grouped GP: independent levels, shared lengthscale
        G = fn.n_levels
        K = (pt.eye(G)[:, None, :, None] * K[None, :, None, :]).reshape((G * m, G * m))
    K_free = P @ K @ P.T
    return P.T @ pt.linalg.cholesky(K_free)


def build_pymc_model(
    design: GumDesign,
    *,
    noise_prior_sd: float | None = None,
    lengthscale_prior_sigma: float | None = None,
    minibatch_size: int | None = None,
    start=None,
    hsgp: dict | None = None,
) -> pm.Model:
    """Build the ``pm.Model`` of ``design``.

    Parameters
    ----------
    design : GumDesign
    noise_prior_sd : float, optional
        Gaussian family with ``design.noise_sd is None`` only: scale of the HalfNormal prior
        of the noise standard deviation (default: the standard deviation of y).
    lengthscale_prior_sigma : float, optional
        When given, every GP lengthscale is sampled (by NUTS) with prior
        ``LogNormal(log(declared lengthscale), lengthscale_prior_sigma)`` as the variable
        ``{name}_lengthscale``; otherwise lengthscales are fixed at their current values.
    minibatch_size : int, optional
        Build a minibatch model for stochastic ADVI (``pm.Minibatch`` over the response and
        every data-sized array, likelihood scaled by ``total_size``). Such a model is for
        ``pm.fit`` only; the observed variable then has no ``obs`` dim.
    start : callable, optional
        ``start(value_name) -> array or None``: the default initial value of each
        standard-normal ``*_z`` (e.g. :func:`pmctx.gum.init.laplace_start`, which
        ``GumModel.model`` passes); None: PyMC's zero start.
    hsgp : dict, optional
        ``{function name: (basis size, boundary factor c)}``: these GP functions take the HSGP prior
        ``theta = theta0 + P^T P phi diag(sqrt_psd) z`` (:mod:`pmctx.gum.hsgp`, PyMC's
        ``pm.gp.HSGP``/``HSGPPeriodic``), ``z`` of dims ``{name}_basis``; with
        ``lengthscale_prior_sigma`` the spectral density follows the sampled lengthscale.

    Returns
    -------
    pymc.Model
        Standard-normal ``*_z`` free variables, the functions as Deterministics and the observed
        response.
    """
    tensors = _data_tensors(design, minibatch_size)
    coords = {"obs": np.arange(design.n_obs)}
    hsgp = dict(hsgp or {})
    factors = {name: hsgp_factor(design.functions[name], k, c=c) for name, (k, c) in hsgp.items()}
    for name, fn in design.functions.items():
        coords[f"{name}_free"] = np.arange(fn.n_free)
        if name in factors:
            coords[f"{name}_basis"] = np.arange(factors[name].shape[1])
        coords.update(function_coords(design, name))
    with pm.Model(coords=coords) as model:
        thetas = {}
        for name, fn in design.functions.items():
            if name in factors:
                n_coef = factors[name].shape[1]
                z = start_normal(f"{name}_z", dims=f"{name}_basis", shape=(n_coef,), start=start)
                Q = pt.as_tensor(factors[name])
                if lengthscale_prior_sigma is not None:
                    ell = pm.LogNormal(
                        f"{name}_lengthscale",
                        mu=np.log(fn.hyper["lengthscale"]),
                        sigma=lengthscale_prior_sigma,
                    )
                    Q = hsgp_factor(fn, hsgp[name][0], lengthscale=ell, c=hsgp[name][1])
                value = pt.as_tensor(fn.theta0) + pt.dot(Q, z)
            elif fn.n_free:
                z = start_normal(f"{name}_z", dims=f"{name}_free", shape=(fn.n_free,), start=start)
                if lengthscale_prior_sigma is not None and isinstance(fn.leaf, GP):
                    Q = _sampled_lengthscale_factor(fn, name, lengthscale_prior_sigma)
                elif isinstance(fn.leaf, Categorical) and fn.leaf.random:
                    # random effect: the levels share a sampled sd (partial pooling)
                    sd = pm.HalfNormal(f"{name}_sd", sigma=fn.leaf.sd)
                    Q = sd * pt.as_tensor(fn.Q / fn.hyper["sd"])
                else:
                    Q = pt.as_tensor(fn.Q)
                value = pt.as_tensor(fn.theta0) + pt.dot(Q, z)
            else:
                value = pt.as_tensor(fn.theta0)
            dims = function_dim(design, name)
            if fn.levels is not None:  # stored as (levels, support); used flat, level-major
                pm.Deterministic(name, pt.reshape(value, fn.value_shape), dims=dims)
                thetas[name] = value
                continue
            thetas[name] = pm.Deterministic(name, value if dims else value[0], dims=dims)
            if not dims:
                thetas[name] = pt.reshape(thetas[name], (1,))
        scalars = {}
        for key, spec in sorted(design.offsets.items()):
            label = offset_name(key)
            if spec == "free":
                z = start_normal(f"{label}_z", start=start)
                scalars[label] = pm.Deterministic(label, design.offset_sd * z)
            else:
                scalars[label] = pt.as_tensor(float(spec))
        rho = pt.zeros_like(tensors["y"], dtype="float64")
        for i, block in enumerate(design.blocks):
            product = tensors[("mask", i)]
            for j, factor in enumerate(block):
                total = 0.0
                for l, use in enumerate(factor):
                    data = tensors[("use", i, j, l)]
                    if use.basis is None:
                        total = total + data
                    elif isinstance(data, tuple):  # sparse basis: look up its non-zeros
                        total = total + sparse_product(thetas[use.name], *data)
                    else:
                        total = total + pt.tensordot(data, thetas[use.name], 1)
                if (i, j) in design.offsets:
                    total = total + scalars[offset_name((i, j))]
                product = product * total
            rho = rho + product.sum(axis=1)
        if design.intercept:
            z = start_normal("intercept_z", start=start)
            rho = rho + pm.Deterministic("intercept", design.intercept_sd * z)
        # a tuple: register_rv would read the string "obs" as the dims ("o", "b", "s")
        extra = {"dims": ("obs",)} if minibatch_size is None else {"total_size": design.n_obs}
        _observe(design, tensors["y"], rho, noise_prior_sd, extra)
    return model


def _data_tensors(design: GumDesign, minibatch_size: int | None) -> dict:
    """Data-sized arrays as tensors, minibatched together when ``minibatch_size`` is given."""
    arrays = {"y": design.y}
    for i, block in enumerate(design.blocks):
        arrays[("mask", i)] = design.masks[i]
        for j, factor in enumerate(block):
            for l, use in enumerate(factor):
                arrays[("use", i, j, l)] = use.fixed_values if use.basis is None else use.basis
    if minibatch_size is None:
        tensors = {}
        for key, value in arrays.items():
            sparse = sparse_basis(value) if key[0] == "use" else None
            tensors[key] = pt.as_tensor(value) if sparse is None else sparse
        return tensors
    batches = pm.Minibatch(*arrays.values(), batch_size=int(minibatch_size))
    batches = batches if isinstance(batches, tuple | list) else [batches]
    return dict(zip(arrays, batches))


def sparse_basis(basis: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(index, weight)`` of shape ``basis.shape[:-1] + (k,)`` holding the ``k`` non-zeros of
    each row of ``basis`` (padded with weight 0), or None when a dense product is as cheap.

    An interpolation basis has two non-zeros per row and a categorical one a single one, so
    ``(weight * theta[index]).sum(-1)`` costs O(N k) instead of the dense O(N m): at N=10,000
    on seed 002 section 3.1 (m=48) that makes the log-density gradient ~10x cheaper.

    Parameters
    ----------
    basis : numpy.ndarray (..., m)
        A basis matrix (rows: observations, last axis: support points).

    Returns
    -------
    tuple of numpy.ndarray, or None
        ``(index, weight)``, or None when the dense product is as cheap.
    """
    if basis.ndim < 2 or basis.shape[-1] < 4:
        return None
    nonzero = basis != 0
    k = max(int(nonzero.sum(axis=-1).max(initial=0)), 1)
    if 3 * k > basis.shape[-1]:
        return None
    # stable sort puts each row's non-zero columns first, in column order
    order = np.argsort(~nonzero, axis=-1, kind="stable")[..., :k]
    weight = np.take_along_axis(basis, order, axis=-1)
    return order.astype(np.int64), weight


def sparse_product(theta, index: np.ndarray, weight: np.ndarray):
    """``basis @ theta`` from the non-zeros ``(index, weight)`` of :func:`sparse_basis`: one
    flat lookup of ``theta`` per non-zero column, times its weight, summed elementwise.

    Unlike one lookup of all non-zeros followed by a reshape, a multiply and a sum over the
    last axis, the elementwise form fuses with the likelihood and its gradient, which makes
    the log density and its gradient cheaper, the more so the larger N (figures on the docs'
    benchmarks page).

    Parameters
    ----------
    theta : pytensor.tensor.TensorVariable
        The function values (length m).
    index, weight : numpy.ndarray (..., k)
        Column and weight of each row's ``k`` non-zeros.

    Returns
    -------
    pytensor.tensor.TensorVariable
        Shape ``index.shape[:-1]``.

    Examples
    --------
    >>> basis = np.zeros((2, 8))
    >>> basis[0, :2] = 0.25, 0.75
    >>> basis[1, 3:5] = 0.5
    >>> theta = np.arange(8.0)
    >>> sparse_product(pt.as_tensor(theta), *sparse_basis(basis)).eval().tolist()
    [0.75, 3.5]
    """
    total = 0.0
    for c in range(weight.shape[-1]):
        column = theta[pt.as_tensor(index[..., c].reshape(-1))].reshape(weight.shape[:-1])
        total = total + pt.as_tensor(weight[..., c]) * column
    return total


def _base_distribution(design: GumDesign, rho, noise_prior_sd):
    """``(factory, parameters)``: ``factory(*parameters)`` is the observation distribution."""
    if design.family in ("poisson", "negative_binomial"):
        if design.family == "poisson":
            return (lambda r: pm.Poisson.dist(mu=pt.exp(r))), [rho]
        alpha = design.noise_sd
        if alpha is None:
            alpha = pm.HalfNormal("alpha", 10.0)
        return (lambda r, a: pm.NegativeBinomial.dist(mu=pt.exp(r), alpha=a)), [rho, alpha]
    if design.family == "bernoulli" and design.link == "logit":
        return (lambda r: pm.Bernoulli.dist(logit_p=r)), [rho]
    if design.family == "bernoulli":
        return (lambda r: pm.Bernoulli.dist(p=pm.math.invprobit(r))), [rho]
    if design.noise_sd is None:
        scale = noise_prior_sd if noise_prior_sd is not None else float(np.std(design.y)) or 1.0
        sigma = pm.HalfNormal("noise_sd", scale)
    else:
        sigma = float(design.noise_sd)
    return (lambda r, s: pm.Normal.dist(mu=r, sigma=s)), [rho, sigma]


def _observe(design: GumDesign, y, rho, noise_prior_sd, extra) -> None:
    factory, params = _base_distribution(design, rho, noise_prior_sd)
    if design.weights is None:
        # the named PyMC distribution itself (pm.sample_posterior_predictive can draw it)
        dist = factory(*params)
        pm.Model.register_rv(
            pm.modelcontext(None),
            dist,
            design.response,
            observed=y,
            dims=extra.get("dims"),
            total_size=extra.get("total_size"),
        )
        return
    weights = pt.as_tensor(design.weights)

    def logp(value, *parameters):
        # observation weights: each observation's log-likelihood counts weights[n] times
        return weights * pm.logp(factory(*parameters), value)

    pm.CustomDist(design.response, *params, logp=logp, observed=y, **extra)

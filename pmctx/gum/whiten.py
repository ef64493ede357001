"""Laplace-whitened coordinates of a GUM's ``pm.Model`` for NUTS.

The Laplace fit gives the posterior mode ``m`` and covariance ``C = L L^T`` of the model's
free (standard-normal ``*_z``) variables ``x``. :func:`whitened_model` builds a second
``pm.Model`` whose only free variable is ``z`` (``gum_white_z``, flat prior) with

    x = m + L z,      log p(z) = log p_model(x) + log|det L|,

i.e. the same posterior in coordinates where it is close to standard normal, so a diagonal
mass matrix suffices and NUTS takes few leapfrog steps per draw. The user's variables (every
``*_z``, the functions on their grids, offsets, the intercept) are ``Deterministic`` s of
``z`` under their usual names and dims, so the ``DataTree`` looks like one of the plain
model; ``gum_white_z`` itself is dropped from it by :func:`pmctx.gum.backends.sample_nutpie`.

``benchmarks/bench_gum_samplers.py`` times ``g.sample()`` on the whitened model against the
plain model's back ends (``benchmarks/results/gum_samplers.json``).

It applies when every free variable of the model is in the Laplace vector (no sampled
lengthscales, dispersions or random-effect sds): :func:`whitened_model` returns None
otherwise.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 30)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> white = whitened_model(g)
>>> [v.name for v in white.free_RVs]
['gum_white_z']
>>> sorted(v.name for v in white.deterministics)
['f_x', 'f_x_z', 'intercept', 'intercept_z']
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace

__all__ = ["WHITE_NAME", "laplace_frame", "whitened_model"]

#: Name of the whitened free variable and of its dim.
WHITE_NAME = "gum_white_z"
WHITE_DIM = "gum_white_dim"


def laplace_frame(gum_model) -> tuple[np.ndarray, np.ndarray, list] | None:
    """Laplace mode, Cholesky factor of the Laplace covariance and value-variable layout, in
    the order of ``gum_model.model.value_vars``.

    Parameters
    ----------
    gum_model : pmctx.gum.api.GumModel
        A GUM (its Laplace fit is run when missing).

    Returns
    -------
    tuple or None
        ``(mode, L, layout)`` with ``layout`` a list of ``(value variable, slice)``; None when
        a free variable is outside the Laplace vector (sampled hyperparameters).
    """
    model = gum_model.model
    result = gum_model.laplace_result or gum_model.fit_laplace()
    mean, cov, slices = gum_model._model_coordinates(result.u_map, result.cov)
    order, layout, start = [], [], 0
    for var in model.value_vars:
        label = var.name.removesuffix("_z")
        if not var.name.endswith("_z") or label not in slices:
            return None
        width = slices[label].stop - slices[label].start
        order.extend(range(slices[label].start, slices[label].stop))
        layout.append((var, slice(start, start + width)))
        start += width
    if sorted(order) != list(range(cov.shape[0])):
        return None
    index = np.asarray(order)
    cov = cov[np.ix_(index, index)]
    cov = 0.5 * (cov + cov.T)
    jitter = 0.0
    for _ in range(8):
        try:
            L = np.linalg.cholesky(cov + jitter * np.eye(len(index)))
            break
        except np.linalg.LinAlgError:
            jitter = max(10 * jitter, 1e-10 * float(np.mean(np.diag(cov))))
    else:  # pragma: no cover - a Laplace covariance is positive definite
        return None
    return mean[index], L, layout


def whitened_model(gum_model) -> pm.Model | None:
    """The ``pm.Model`` of ``gum_model`` in Laplace-whitened coordinates (see module doc).

    Parameters
    ----------
    gum_model : pmctx.gum.api.GumModel
        A GUM.

    Returns
    -------
    pymc.Model or None
        Free variable ``gum_white_z``; the plain model's free variables and Deterministics
        as Deterministics of the same names and dims; the log density as a Potential. None
        when the model has free variables outside the Laplace vector.
    """
    frame = laplace_frame(gum_model)
    if frame is None:
        return None
    mode, L, layout = frame
    model = gum_model.model
    dims = model.named_vars_to_dims
    coords = {**model.coords, WHITE_DIM: np.arange(len(mode))}
    with pm.Model(coords=coords) as white:
        z = pm.Flat(WHITE_NAME, dims=WHITE_DIM, initval=np.zeros(len(mode)))
        x = pt.as_tensor(mode) + pt.dot(pt.as_tensor(L), z)
        replace = {var: x[cut].reshape(var.type.shape) for var, cut in layout}
        # an array, not a float: a scalar constant would tie pmctx.gum.cached's disk-cached
        # code to this data set
        logdet = pt.sum(pt.as_tensor(np.log(np.diag(L))))
        logp = graph_replace(model.logp(), replace, strict=False)
        pm.Potential("gum_white_logp", logp + logdet)
        for var, _ in layout:
            pm.Deterministic(var.name, replace[var], dims=dims.get(var.name))
        values = model.replace_rvs_by_values(model.deterministics)
        for det, value in zip(model.deterministics, values):
            value = graph_replace(value, replace, strict=False)
            pm.Deterministic(det.name, value, dims=dims.get(det.name))
    return white

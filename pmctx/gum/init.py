"""Initial values of a GUM's ``pm.Model`` at the Laplace mode, so default samplers converge.

Products of functions (``f1(x1) * f2(x2)``) have secondary modes: a sign-flipped or flat
factor whose offset the intercept absorbs. NUTS started at PyMC's default point (zeros, with
jitter) can settle in one of them for a whole run -- on seed 002 section 3.1 data one of
four chains stayed there (R-hat 1.5 on ``f_x1``), with PyMC's NUTS and nutpie alike. The
multi-start Newton search of :func:`pmctx.gum.laplace.laplace_fit` finds the main mode.

The model carries that start itself, so a plain call converges::

    with g.model:
        idata = pm.sample()            # or nuts_sampler="nutpie" / "numpyro"

Every standard-normal free vector ``*_z`` of ``GumModel.model`` is a :func:`start_normal`:
an ordinary ``Normal(0, 1)`` (same log density, same random draws, ``NormalRV`` subclass)
whose *support point* -- PyMC's default initial value, which every back end (``pm.sample``,
nutpie's ``compile_pymc_model``, ``pymc.sampling.jax``) starts from and jitters by
``U(-1, 1)`` -- is the Laplace mode. The mode is computed lazily, the first time an initial
point is evaluated, so building the model stays cheap. ``model.set_initval`` would do the
same, but PyMC cannot convert a model with stored initial values to a graph, so
``pm.compute_log_likelihood``, ``pm.do`` and nutpie's JAX back end would fail on it (see
:func:`set_laplace_initvals`). Models without a Laplace fit (Gaussian data with a sampled
noise sd) keep plain ``Normal``\\ s and PyMC's zero start.

Examples
--------
>>> from pmctx.gum import gum
>>> from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
>>> g = gum(section_3_1_formula(max_points=8), seed_section_3_1(60), family="poisson")
>>> start = laplace_initvals(g)
>>> sorted(start)
['f_x1_z', 'f_x2_z', 'f_x3_z', 'intercept_z']
>>> bool(np.allclose(g.model.initial_point()["f_x1_z"], start["f_x1_z"]))
True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.random.basic import NormalRV

from pmctx.exceptions import ConvergenceWarning

__all__ = ["laplace_initvals", "laplace_start", "set_laplace_initvals", "start_normal"]


def laplace_initvals(gum_model) -> dict | None:
    """``{value name: array}`` at the Laplace mode, or None when Laplace does not apply.

    Gaussian responses with a sampled noise sd have no fixed-noise Laplace fit, and a
    Newton search that fails leaves no usable mode; such models keep PyMC's default start.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    Returns
    -------
    dict or None
        ``{value variable name: array}``, or None.
    """
    design = gum_model.design
    if design.family in ("gaussian", "negative_binomial") and design.noise_sd is None:
        return None
    try:
        with warnings.catch_warnings():
            # a start needs no converged Newton search; the sampler's diagnostics judge the fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = gum_model.laplace_result or gum_model.fit_laplace()
    except (ValueError, np.linalg.LinAlgError, FloatingPointError):
        return None  # no usable mode: the sampler keeps PyMC's default start
    if not np.all(np.isfinite(result.u_map)):
        return None
    return gum_model.map_point(result.u_map)


def set_laplace_initvals(gum_model, model) -> None:
    """Set ``model``'s initial values to the Laplace mode of ``gum_model`` (in place).

    Not needed for ``GumModel.model``, which starts there already (:func:`start_normal`);
    for a model built another way. PyMC cannot convert a model with stored initial values to
    a graph (``pm.compute_log_likelihood``, ``pm.do`` fail on it afterwards).

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    model : pymc.Model
        A model with the same free variables; its initial values are set.
    """
    point = laplace_initvals(gum_model)
    if point is None:
        return
    for name, value in point.items():
        if name in model.named_vars:
            model.set_initval(model[name], np.asarray(value, dtype=np.float64))


def laplace_start(gum_model) -> Callable[[str], np.ndarray | None]:
    """``start(value_name)``: the Laplace-mode value of one free vector (None: no mode).

    The Laplace fit runs on the first call and is cached on ``gum_model``.

    Parameters
    ----------
    gum_model : GumModel
        A model declared by :func:`pmctx.gum.gum`.

    Returns
    -------
    callable
        ``start(value_name) -> numpy.ndarray or None``.
    """
    cache: dict = {}

    def start(name: str):
        if "point" not in cache:
            cache["point"] = laplace_initvals(gum_model)
        point = cache["point"]
        return None if point is None else point.get(name)

    return start


class _LazyStart(Op):
    """Zero-input Op whose value is ``start(name)`` (zeros when it is None), computed on use."""

    __props__ = ("name", "shape", "start")

    def __init__(self, name: str, shape: tuple, start: Callable):
        self.name, self.shape, self.start = name, tuple(shape), start

    def __str__(self):
        return f"start({self.name})"

    def make_node(self):
        return Apply(self, [], [pt.tensor(dtype="float64", shape=self.shape)])

    def perform(self, node, inputs, outputs):
        value = self.start(self.name)
        value = np.zeros(self.shape) if value is None else np.asarray(value, dtype=np.float64)
        outputs[0][0] = np.reshape(value, self.shape).astype(np.float64)


class StartNormalRV(NormalRV):
    """``NormalRV`` whose support point is a lazily computed start (log density unchanged).

    Parameters
    ----------
    start_op : Op
        Zero-input Op that computes the start value when first evaluated.
    **kwargs
        Passed to ``NormalRV``.
    """

    __props__ = (*NormalRV.__props__, "start_op")

    def __init__(self, *, start_op: _LazyStart, **kwargs):
        # keyword props, so PyTensor's rewrites can rebuild it (``type(op)(**op._props_dict())``)
        super().__init__(**kwargs)
        self.start_op = start_op


class _StartNormal(pm.Normal):
    """Gives :class:`StartNormalRV` its support point through PyMC's public ``Distribution``
    API: a subclass naming an ``rv_type`` and a ``support_point`` is registered for that op
    type. Each variable's op carries its own start, read from ``rv``; never instantiated."""

    rv_type = StartNormalRV

    @staticmethod
    def support_point(rv, *params):
        return rv.owner.op.start_op()


def start_normal(name: str, *, dims=None, shape=(), start: Callable | None = None):
    """``Normal(name, 0, 1)`` in the current model, starting at ``start(name)`` if given.

    Parameters
    ----------
    name : str
        Variable name.
    dims : str or sequence of str, optional
        Its dims (``shape`` must then match their lengths).
    shape : tuple
        Its shape.
    start : callable, optional
        ``start(name) -> array or None`` (e.g. :func:`laplace_start`); None: a plain
        ``pm.Normal``.

    Returns
    -------
    pytensor.tensor.TensorVariable
        The registered random variable.
    """
    if start is None:
        return pm.Normal(name, 0.0, 1.0, dims=dims, shape=shape or None)
    shape = tuple(int(s) for s in shape)
    op = StartNormalRV(start_op=_LazyStart(name, shape, start))
    # an explicit rng and the next-rng output, as PyMC's own Distribution.dist does (PyTensor 3
    # deprecates both defaults); register_rv gives the variable the model's rng handling
    _, rv = op(0.0, 1.0, size=tuple(shape) if shape else None,
               rng=pt.random.shared_rng(seed=None), return_next_rng=True)  # fmt: skip
    dims = (dims,) if isinstance(dims, str) else dims  # register_rv takes a sequence only
    return pm.modelcontext(None).register_rv(rv, name, dims=dims)

"""Common plumbing for pmctx's custom Gibbs step methods.

Subclasses only set ``name`` and ``stats_dtypes_shapes`` and implement ``step``; this base
resolves the model and value variables and keeps one ``numpy`` Generator in ``self.rng``,
which ``pm.sample`` replaces per chain through ``setup_chain(rng, tune, draws)``.

A subclass that sets ``owns_block`` is registered with PyMC's automatic step assignment when
it is defined and claims the variables its models tag with that block (see
:mod:`pmctx.steps.registration`), so plain ``pm.sample()`` uses it.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import pymc as pm
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import BlockedStep, Competence

from pmctx.steps.registration import block_tag, block_variables, register_step
from pmctx.validation import as_rng

# Keyword arguments pm.sample's instantiate_steppers passes to every automatically assigned
# step; pmctx steps compile their own functions and read the start from the point.
_SAMPLER_KWARGS = ("initial_point", "compile_kwargs")

__all__ = ["PmctxStep"]


class PmctxStep(BlockedStep):
    """Base class of pmctx's Gibbs step methods.

    Parameters
    ----------
    vars : list of pytensor variables
        Model variables (random or value variables) this step updates.
    model : pm.Model, optional
        Defaults to the model on the context stack.
    rng : int or numpy.random.Generator, optional
        Source of randomness when the step is used outside ``pm.sample``.
    blocked : bool, default True
        Accepted for PyMC's step interface; pmctx steps always update their variables as
        one block.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> class Flip(PmctxStep):
    ...     name = "flip"
    ...     stats_dtypes_shapes = {"value": (np.int64, [])}
    ...     def step(self, point):
    ...         point, key = dict(point), self.value_names[0]
    ...         point[key] = self.rng.integers(2, size=point[key].shape)
    ...         return point, [{"value": int(point[key].sum())}]
    >>> with pm.Model():
    ...     b = pm.Bernoulli("b", 0.5)
    ...     step = Flip([b], rng=0)
    >>> step.value_names
    ['b']
    """

    name = "pmctx_step"
    default_blocked = True
    #: Block of tagged variables this step claims in ``pm.sample``'s automatic assignment
    #: (None: the step is only used when passed explicitly).
    owns_block: ClassVar[str | None] = None
    #: Whether the step can update any subset of its block (e.g. independent conditional
    #: updates); if False, a block left incomplete by a user's explicit step goes to PyMC.
    updates_partial_block: ClassVar[bool] = False

    def __new__(cls, *args, **kwargs):
        # pm.sample's automatic assignment passes initial_point. If the user gave part of this
        # step's block to another step explicitly, the rest is not a block this step can
        # update: hand those variables to PyMC's own steps instead of failing.
        automatic = cls.owns_block is not None and "initial_point" in kwargs
        if automatic and not cls.updates_partial_block:
            model = pm.modelcontext(kwargs.get("model"))
            vars = kwargs["vars"] if "vars" in kwargs else (args[0] if args else None)
            if vars is not None and not _complete_block(model, cls.owns_block, vars):
                return _pymc_steps(model, vars, kwargs)
        return super().__new__(cls, *args, **kwargs)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = _accept_sampler_kwargs(init)
        if cls.__dict__.get("owns_block"):
            register_step(cls)

    def __init__(self, vars, *, model=None, rng=None, blocked=True):
        self.model = pm.modelcontext(model)
        self.vars = [self.model.rvs_to_values.get(v, v) for v in vars]
        known = set(self.model.value_vars)
        unknown = [v for v in self.vars if v not in known]
        if unknown:
            raise ValueError(
                f"{type(self).__name__} can only update free variables of the model; "
                f"{[getattr(v, 'name', v) for v in unknown]} are not among "
                f"{[v.name for v in self.model.value_vars]}."
            )
        self.value_names = [v.name for v in self.vars]
        self.rng = as_rng(rng)

    @classmethod
    def competence(cls, var, has_grad=None):
        """IDEAL for random variables tagged with this step's block, else INCOMPATIBLE.

        ``pm.sample``'s automatic assignment calls it for every free variable.

        Parameters
        ----------
        var : pytensor.tensor.TensorVariable
            A random variable of the model.
        has_grad : bool, optional
            Whether the variable has a gradient (PyMC passes it; not used).

        Returns
        -------
        pymc.step_methods.compound.Competence
            ``IDEAL`` or ``INCOMPATIBLE``.
        """
        tag = block_tag(var)
        if cls.owns_block is not None and tag is not None and tag.block == cls.owns_block:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def compile_fn(self, outputs, inputs=None):
        """Compile a function of the model's value variables returning ``outputs``.

        The compiled function takes a point dict and ignores unused inputs.

        Parameters
        ----------
        outputs : pytensor variable or list of them
            Expressions of the model's value variables, such as ``model.logp()``.
        inputs : list of pytensor variables, optional
            Inputs of the function; default: the model's value variables.

        Returns
        -------
        callable
            ``f(point) -> outputs`` evaluated at a point dict.
        """
        return self.model.compile_fn(
            outputs, inputs=inputs, on_unused_input="ignore", point_fn=True
        )


def _accept_sampler_kwargs(init):
    """Let ``__init__`` take (and ignore) the keyword arguments ``pm.sample`` adds."""
    if getattr(init, "_pmctx_sampler_kwargs", False):
        return init

    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        for key in _SAMPLER_KWARGS:
            kwargs.pop(key, None)
        init(self, *args, **kwargs)

    wrapped._pmctx_sampler_kwargs = True
    return wrapped


def _complete_block(model, block, vars) -> bool:
    """Whether ``vars`` hold every free variable of ``block``."""
    values = {model.rvs_to_values.get(v, v) for v in vars}
    free = set(model.free_RVs)
    needed = {
        model.rvs_to_values[rv] for rv in block_variables(model, block).values() if rv in free
    }
    return needed <= values


def _competence(method, rv, has_grad):
    """``method.competence(rv, has_grad)``; PyMC's older steps take ``competence(rv)`` only."""
    try:
        return method.competence(rv, has_grad)
    except TypeError:
        return method.competence(rv)


def _pymc_steps(model, vars, kwargs):
    """PyMC's own automatic choice of steps for ``vars`` (pmctx steps excluded)."""
    from pymc.sampling.mcmc import instantiate_steppers
    from pymc.step_methods.compound import CompoundStep
    from pymc.vartypes import discrete_types
    from pytensor.gradient import NullTypeGradError, grad

    methods = [m for m in STEP_METHODS if not issubclass(m, PmctxStep)]
    logp = model.logp()
    selected = {}
    for var in (model.rvs_to_values.get(v, v) for v in vars):
        has_grad = var.dtype not in discrete_types
        if has_grad:
            try:
                grad(logp, var)
            except (NotImplementedError, NullTypeGradError):  # as PyMC decides
                has_grad = False
        rv = model.values_to_rvs[var]
        best = max(methods, key=lambda m: _competence(m, rv, has_grad))
        selected.setdefault(best, []).append(var)
    steps = instantiate_steppers(
        model,
        [],
        selected,
        initial_point=kwargs.get("initial_point"),
        compile_kwargs=kwargs.get("compile_kwargs"),
    )
    return CompoundStep(steps) if isinstance(steps, list) else steps


PmctxStep.__init__ = _accept_sampler_kwargs(PmctxStep.__init__)

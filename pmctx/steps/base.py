"""Common plumbing for pmctx's custom Gibbs step methods.

Subclasses only set ``name`` and ``stats_dtypes_shapes`` and implement ``step``; this base
resolves the model and value variables and keeps one ``numpy`` Generator in ``self.rng``,
which ``pm.sample`` replaces per chain through :meth:`set_rng`.
"""

from __future__ import annotations

import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence

from pmctx.validation import as_rng

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

    @staticmethod
    def competence(var, has_grad=None):
        # pmctx steps are assigned explicitly; never let pm.sample pick them automatically.
        return Competence.INCOMPATIBLE

    def compile_fn(self, outputs, inputs=None):
        """Compile a function of the model's value variables returning ``outputs``.

        The compiled function takes a point dict and ignores unused inputs.
        """
        return self.model.compile_fn(
            outputs, inputs=inputs, on_unused_input="ignore", point_fn=True
        )

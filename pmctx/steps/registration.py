"""PyMC's automatic step assignment for pmctx models: plain ``pm.sample()`` picks pmctx's steps.

How it works
------------
``pm.sample`` (through :func:`pymc.sampling.mcmc.assign_step_methods`) asks every class in
``pymc.step_methods.STEP_METHODS`` for its ``competence`` on each free variable, gives each
variable to the most competent class, and builds *one* instance of every selected class with
all the variables it won. pmctx uses that mechanism as it is:

1. A model's ``build_model`` **tags** the variables that one pmctx step updates together
   (a *block*) with :func:`tag_block`, e.g. ``Z, pi, A, Y`` of the IBP with the block
   ``"ibp"``. The tag lives on the random variable (``rv.tag.pmctx_block``), so it travels
   with the variable and survives nesting the model inside a user's model; no names are
   matched.
2. A step class declares the block it owns in ``owns_block``. :class:`PmctxStep` registers
   such classes in ``pymc.step_methods.STEP_METHODS`` (the list PyMC documents for adding
   custom steps), in front of PyMC's own so they win ties, when the class is defined,
   i.e. as soon as a pmctx model module (which imports its steps) is
   imported, and its ``competence`` is ``IDEAL`` for variables tagged with that block and
   ``INCOMPATIBLE`` for everything else.
3. Because one class receives all its variables together, a blocked step that must own
   several variables (the IBP's ``Z, pi, A, Y``; the CRP's ``z, weights, theta``) gets
   them together. Variables a user adds (hyperpriors, regressions) carry no tag and go to
   PyMC's own steps (NUTS, slice, ...); pmctx steps read such values from the current point.

A step passed explicitly (``pm.sample(step=[...])``) still takes precedence for the
variables it was given; the remaining ones are assigned as above. :func:`assigned_steps`
shows the assignment without sampling.

Examples
--------
>>> import numpy as np
>>> from pmctx.models.crp_conditioning import build_model
>>> model = build_model([[1, 0], [1, 0], [0, 1]], max_causes=3)
>>> assigned_steps(model)
{'CRPCollapsedGibbs': ['weights', 'theta', 'z']}
"""

from __future__ import annotations

from dataclasses import dataclass

from pymc.step_methods import STEP_METHODS

__all__ = [
    "BlockTag",
    "assigned_steps",
    "block_tag",
    "block_variables",
    "register_step",
    "tag_block",
]


@dataclass(frozen=True)
class BlockTag:
    """Marks a random variable as part of a block owned by one pmctx step.

    Attributes
    ----------
    block : str
        Name of the block, matched against a step class's ``owns_block``.
    role : str
        The variable's role inside the block (e.g. ``"Z"``, ``"pi"``), for steps that need
        to tell their variables apart.
    """

    block: str
    role: str


_TAG_ATTRIBUTE = "pmctx_block"


def tag_block(block: str, **roles) -> None:
    """Tag random variables as the block ``block``: ``tag_block("ibp", Z=Z, pi=pi)``.

    Parameters
    ----------
    block : str
        Name of the block, the ``owns_block`` of the step that updates it.
    **roles : pytensor variables
        The random variables by their role in the block.
    """
    for role, rv in roles.items():
        setattr(rv.tag, _TAG_ATTRIBUTE, BlockTag(block, role))


def block_tag(var) -> BlockTag | None:
    """The :class:`BlockTag` of a random variable, or None.

    Parameters
    ----------
    var : pytensor variable
        A random variable.

    Returns
    -------
    BlockTag or None
        Its block and role, if :func:`tag_block` tagged it.
    """
    tag = getattr(var, "tag", None)
    return getattr(tag, _TAG_ATTRIBUTE, None)


def block_variables(model, block: str) -> dict:
    """``{role: random variable}`` of the variables of ``model`` tagged with ``block``.

    Parameters
    ----------
    model : pm.Model
        The model.
    block : str
        The block's name.

    Returns
    -------
    dict of str to pytensor variable
        Role -> random variable (empty when nothing carries the tag).
    """
    out = {}
    for rv in model.named_vars.values():
        tag = block_tag(rv)
        if tag is not None and tag.block == block:
            out[tag.role] = rv
    return out


def register_step(step_class) -> None:
    """Put ``step_class`` in front of ``STEP_METHODS`` (once), so ``pm.sample`` uses it.

    Parameters
    ----------
    step_class : type
        A :class:`~pmctx.steps.base.PmctxStep` subclass with ``owns_block`` set (subclasses
        call this themselves when they are defined).
    """
    methods = STEP_METHODS
    for i, method in enumerate(methods):  # a re-imported module defines a new class object
        if method.__module__ == step_class.__module__ and method.__name__ == step_class.__name__:
            methods[i] = step_class
            return
    methods.insert(0, step_class)


def assigned_steps(model, step=None) -> dict[str, list[str]]:
    """Step class name -> names of the variables it updates, as ``pm.sample`` would assign.

    Parameters
    ----------
    model : pm.Model
        The model.
    step : step or list of steps, optional
        Steps the user passes explicitly (they keep their variables).

    Returns
    -------
    dict of str to list of str
        Step class name -> names of its variables.
    """
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods.compound import CompoundStep

    provided, selected = assign_step_methods(model, step, methods=STEP_METHODS)
    rv_name = {value: rv.name for value, rv in model.values_to_rvs.items()}
    out = {}
    flat = []
    for s in provided:
        flat.extend(s.methods if isinstance(s, CompoundStep) else [s])
    for s in flat:
        out.setdefault(type(s).__name__, []).extend(rv_name[v] for v in s.vars)
    for cls, values in selected.items():
        out.setdefault(cls.__name__, []).extend(rv_name[v] for v in values)
    return out

"""Graph helpers: the per-unit log density of a model as a function of one discrete variable.

A "unit" is one slice of a matrix variable along the axis whose slices are conditionally
independent given everything else (rows of Z in the IBP, columns of Y). The helpers here find
every elementwise log-probability term of the model that depends on the variable, decide which
axis of each term indexes the units (user mapping, then named dims, then shapes), and sum the
terms into one vector with one entry per unit.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.traversal import ancestors

__all__ = ["UnitAxisError", "dependent_logp_terms", "per_unit_logp", "resolve_unit_axes"]


class UnitAxisError(ValueError):
    """The chosen axis does not split the model's log density into independent units."""


def dependent_logp_terms(model, value_var) -> dict[str, pt.TensorVariable]:
    """Elementwise logp tensors of every model term whose value depends on ``value_var``.

    Returns a dict from the term's name (random variable or potential) to its logp tensor,
    written in terms of the model's value variables.
    """
    variables = model.free_RVs + model.observed_RVs + model.potentials
    logps = model.logp(vars=variables, sum=False)
    terms = {}
    for var, logp in zip(variables, logps):
        if value_var in set(ancestors([logp])):
            terms[var.name] = logp
    return terms


def _axis_from_dims(model, term_name, term, unit_dim):
    dims = model.named_vars_to_dims.get(term_name)
    if not dims or unit_dim is None:
        return None
    if unit_dim not in dims:
        raise UnitAxisError(
            f"The log density of {term_name!r} (dims {tuple(dims)}) depends on the sampled "
            f"variable but has no {unit_dim!r} dim, so it cannot be split into independent "
            f"units along {unit_dim!r}. The units along that axis are probably not "
            "conditionally independent: choose another independent_axis, or pass term_axes."
        )
    axis = list(dims).index(unit_dim)
    if axis >= term.ndim:
        raise UnitAxisError(
            f"The {unit_dim!r} dim of {term_name!r} is a core (event) dimension of its "
            f"distribution, which its log density sums over (logp has {term.ndim} axes). "
            "Its units are not conditionally independent; choose another independent_axis."
        )
    return axis


def _axis_from_shape(term_name, shape, n_units):
    candidates = [axis for axis, size in enumerate(shape) if size == n_units]
    if len(candidates) == 1:
        return candidates[0]
    found = "no axis" if not candidates else f"axes {candidates}"
    raise UnitAxisError(
        f"Cannot tell which axis of the log density of {term_name!r} (shape {tuple(shape)}) "
        f"indexes the {n_units} independent units: {found} of that length. Declare the model "
        f"with dims, or pass term_axes={{{term_name!r}: axis}}."
    )


def resolve_unit_axes(
    model,
    terms: Mapping[str, pt.TensorVariable],
    *,
    var_name: str,
    independent_axis: int,
    n_units: int,
    term_axes: Mapping[str, int] | None = None,
    point=None,
) -> dict[str, int]:
    """Axis of each term's logp tensor that indexes the units of ``var_name``.

    Priority: the variable's own prior uses ``independent_axis``; then ``term_axes`` given by
    the user; then the model's named dims (the dim name of the variable's independent axis);
    then the unique axis whose length equals ``n_units`` at ``point``.
    """
    term_axes = dict(term_axes or {})
    unknown = set(term_axes) - set(terms)
    if unknown:
        raise ValueError(
            f"term_axes names {sorted(unknown)}, but the log densities that depend on "
            f"{var_name!r} are {sorted(terms)}. Remove the other names."
        )
    var_dims = model.named_vars_to_dims.get(var_name)
    unit_dim = var_dims[independent_axis] if var_dims else None
    axes, need_shapes = {}, []
    for name, term in terms.items():
        if term.ndim == 0:
            raise UnitAxisError(
                f"The log density of {name!r} is a scalar that depends on {var_name!r}; it "
                "cannot be split into independent units. Give it elementwise structure "
                "(e.g. a Potential with one entry per unit) or use another step method."
            )
        if name == var_name and name not in term_axes:
            axes[name] = independent_axis
        elif name in term_axes:
            axes[name] = int(term_axes[name])
        else:
            axis = _axis_from_dims(model, name, term, unit_dim)
            if axis is None:
                need_shapes.append(name)
            else:
                axes[name] = axis
    if need_shapes:
        point = model.initial_point() if point is None else point
        shape_fn = model.compile_fn(
            [terms[name].shape for name in need_shapes],
            inputs=model.value_vars,
            on_unused_input="ignore",
        )
        for name, shape in zip(need_shapes, shape_fn(point)):
            axes[name] = _axis_from_shape(name, np.asarray(shape), n_units)
    for name, axis in axes.items():
        if not -terms[name].ndim <= axis < terms[name].ndim:
            raise ValueError(
                f"term_axes[{name!r}] = {axis} is out of range for its log density with "
                f"{terms[name].ndim} axes."
            )
    return axes


def per_unit_logp(
    terms: Mapping[str, pt.TensorVariable], axes: Mapping[str, int]
) -> pt.TensorVariable:
    """Sum every term over all axes except its unit axis: a vector with one entry per unit."""
    total = None
    for name, term in terms.items():
        axis = axes[name] % term.ndim
        other = [a for a in range(term.ndim) if a != axis]
        reduced = term.sum(axis=other) if other else term
        total = reduced if total is None else total + reduced
    return total

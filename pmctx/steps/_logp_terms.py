"""Graph helpers: the per-unit log density of a model as a function of one discrete variable.

A "unit" is one slice of a matrix variable along the axis whose slices are conditionally
independent given everything else (rows of Z in the IBP, columns of Y). The helpers here find
every elementwise log-probability term of the model that depends on the variable, decide which
axis of each term indexes the units (user mapping, then named dims, then shapes), and sum the
terms into one vector with one entry per unit.

Two graph rewrites then make that vector cheaper to evaluate without changing its values:
elementwise subgraphs of discrete tensors (the noisy-OR of ``Z @ Y`` and binary data) are
evaluated once per distinct input value and gathered (:func:`tabulate_discrete_elemwise`), and
integer matrix products use float64 BLAS where that is exact (:func:`exact_integer_dots`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs, io_toposort
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.math import Dot

from pmctx.points import initial_point

__all__ = [
    "ExactIntegerDot",
    "TabulatedElemwise",
    "UnitAxisError",
    "dependent_logp_terms",
    "exact_integer_dots",
    "per_unit_logp",
    "resolve_unit_axes",
    "tabulate_discrete_elemwise",
]


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
        point = initial_point(model) if point is None else point
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


# --- tabulating elementwise functions of discrete values ----------------------------------------
#
# The log density of a binary matrix's dependents is dominated by elementwise transcendental
# functions (log1mexp, softplus, ...) of tensors that are themselves discrete: Z @ Y for binary
# Z and Y takes only K + 1 values, observed Bernoulli data two. Such a function takes at most
# prod(range of each discrete input) distinct values, so it is evaluated on that small grid and
# gathered, which gives the same numbers as the direct evaluation at a fraction of its cost.


def _is_discrete(var) -> bool:
    return var.dtype.startswith(("int", "uint", "bool"))


def _is_scalar_like(var) -> bool:
    return all(var.type.broadcastable)


# Scalar ops cheaper than a table lookup; a subgraph made only of these is left alone.
_CHEAP_SCALAR_OPS = (
    ps.LT, ps.GT, ps.LE, ps.GE, ps.EQ, ps.NEQ, ps.OR, ps.AND, ps.XOR, ps.Invert, ps.Switch,
    ps.Add, ps.Sub, ps.Mul, ps.Neg, ps.Identity, ps.Cast, ps.Abs, ps.Maximum, ps.Minimum,
)  # fmt: skip


class TabulatedElemwise(Op):
    """Elementwise functions of discrete (and size-1) inputs, evaluated on their value grid.

    ``inner`` computes the functions on flat vectors, one per input; output ``k`` depends on
    the inputs ``output_inputs[k]``. At run time ``inner`` is evaluated on every combination
    of the values in the discrete inputs' observed ranges (at most ``max_table_size``, and
    fewer than half the output's entries) and the tables are indexed by the inputs; otherwise
    it runs on the inputs directly. Tables are kept for reuse, keyed by the ranges and the
    size-1 inputs' values, so a call usually costs a few passes over the discrete inputs.
    Equality is identity (no ``__props__``), so rewrites never merge two different subgraphs.
    """

    max_cached_tables = 256

    def __init__(self, inner, discrete, output_types, *, output_inputs, max_table_size=4096):
        self.inner = inner
        self.discrete = tuple(discrete)
        self.output_types = tuple(output_types)
        self.output_inputs = tuple(tuple(i) for i in output_inputs)
        self.max_table_size = max_table_size
        self._tables = {}

    def make_node(self, *inputs):
        return Apply(self, list(inputs), [t() for t in self.output_types])

    def _table(self, inputs, lows, counts):
        key = (
            tuple(lows),
            tuple(counts),
            *(x.tobytes() for x, discrete in zip(inputs, self.discrete) if not discrete),
        )
        tables = self._tables.get(key)
        if tables is None:
            grids = []
            for axis, (x, discrete, low, count) in enumerate(
                zip(inputs, self.discrete, lows, counts)
            ):
                values = np.arange(low, low + count) if discrete else x.ravel()[:1]
                along_axis = [1] * len(counts)
                along_axis[axis] = count
                values = values.astype(x.dtype).reshape(along_axis)
                grids.append(np.broadcast_to(values, counts).ravel())
            tables = [
                np.asarray(table, dtype=output_type.dtype).copy()
                for table, output_type in zip(self.inner(*grids), self.output_types)
            ]
            if len(self._tables) >= self.max_cached_tables:
                self._tables.clear()
            self._tables[key] = tables
        return tables

    def perform(self, node, inputs, output_storage):
        shape = inputs[0].shape
        same_shapes = all(x.shape == shape for x in inputs)
        if not same_shapes:
            shape = np.broadcast_shapes(*(x.shape for x in inputs))
        lows, counts = [], []
        for x, discrete in zip(inputs, self.discrete):
            low = high = 0
            if discrete and x.size:
                low, high = int(x.min()), int(x.max())
            lows.append(low)
            counts.append(high - low + 1)
        if math.prod(counts) > min(self.max_table_size, math.prod(shape) // 2):
            results = self.inner(*(np.broadcast_to(x, shape).ravel() for x in inputs))
            results = [np.reshape(r, shape) for r in results]
        else:
            index, stride = None, 1
            for x, low, count in reversed(list(zip(inputs, lows, counts))):
                if count > 1:
                    term = x.astype(np.int64, copy=False)
                    term = term - low if low else term
                    term = term * stride if stride > 1 else term
                    index = term if index is None else index + term
                    stride *= count
            if index is None:
                index = np.zeros(shape, dtype=np.int64)
            elif index.shape != shape:
                index = np.broadcast_to(index, shape)
            results = [table[index] for table in self._table(inputs, lows, counts)]
        if not same_shapes:
            # An output does not vary along the axes that only other outputs' inputs span.
            for k, own in enumerate(self.output_inputs):
                own_shape = np.broadcast_shapes(*(inputs[i].shape for i in own))
                if own_shape != shape:
                    keep = tuple(
                        slice(None) if a == b else slice(0, 1) for a, b in zip(own_shape, shape)
                    )
                    results[k] = results[k][keep]
        for storage, result, output_type in zip(output_storage, results, self.output_types):
            storage[0] = np.asarray(result, dtype=output_type.dtype)


def _discrete_subgraphs(output):
    """Roots and leaves of the maximal elementwise subgraphs of discrete values in ``output``."""
    tabulable = {}

    def is_tabulable(var):
        if var not in tabulable:
            node = var.owner
            tabulable[var] = (
                node is not None
                and isinstance(node.op, Elemwise)
                and len(node.outputs) == 1
                and all(
                    is_tabulable(x) or _is_discrete(x) or _is_scalar_like(x) for x in node.inputs
                )
            )
        return tabulable[var]

    def walk(var, leaves, costly):
        # Leaves in first-seen order; costly: does a non-cheap op touch a non-size-1 input?
        for x in var.owner.inputs:
            if is_tabulable(x):
                costly = walk(x, leaves, costly)
            elif x not in leaves:
                leaves.append(x)
        scalar_op = var.owner.op.scalar_op
        return costly or not (_is_scalar_like(var) or isinstance(scalar_op, _CHEAP_SCALAR_OPS))

    roots = []  # tabulable results used outside a larger tabulable subgraph
    for node in io_toposort(graph_inputs([output]), [output]):
        if isinstance(node.op, Elemwise) and is_tabulable(node.outputs[0]):
            continue
        roots.extend(x for x in node.inputs if is_tabulable(x) and x not in roots)
    if is_tabulable(output):
        roots.append(output)
    for root in roots:
        leaves = []
        if walk(root, leaves, False):
            yield root, leaves


def _constant_scalar(var):
    """The value of a size-1 constant (possibly with broadcast dims added), else None."""
    if not _is_scalar_like(var):
        return None
    try:
        return get_underlying_scalar_constant_value(var)
    except NotScalarConstantError:
        return None


def _rebuild_flat(var, flat_of):
    """``var`` in terms of the flat vectors in ``flat_of`` (a leaf -> vector dict, extended)."""
    if var not in flat_of:
        value = _constant_scalar(var)
        if value is not None:  # a length-1 vector broadcasts against the grids
            flat_of[var] = pt.constant(np.reshape(value, 1), dtype=var.dtype)
        else:
            inputs = [_rebuild_flat(x, flat_of) for x in var.owner.inputs]
            flat_of[var] = var.owner.op.make_node(*inputs).outputs[0]
    return flat_of[var]


def tabulate_discrete_elemwise(output):
    """Replace the costly elementwise subgraphs of discrete tensors in ``output`` by tables.

    A subgraph qualifies when it is made of ``Elemwise`` nodes whose inputs are discrete
    tensors or size-1 tensors (constants, scalar parameters), has a discrete input that is not
    size-1 and an op costlier than a lookup (a log, an exp, ...). Subgraphs with the same
    non-constant discrete inputs share one :class:`TabulatedElemwise` node. The value of
    ``output`` is unchanged.
    """
    groups = {}
    for root, leaves in _discrete_subgraphs(output):
        leaves = [v for v in leaves if _constant_scalar(v) is None]
        if not any(_is_discrete(v) and not _is_scalar_like(v) for v in leaves):
            continue
        variable = (v for v in leaves if not isinstance(v, Constant) and not _is_scalar_like(v))
        roots, group_leaves = groups.setdefault((root.ndim, frozenset(variable)), ([], []))
        roots.append((root, leaves))
        group_leaves.extend(v for v in leaves if v not in group_leaves)
    replacements = {}
    for roots, leaves in groups.values():
        flat = [pt.vector(dtype=v.dtype) for v in leaves]
        flat_of = dict(zip(leaves, flat))
        inner = pytensor.function(flat, [_rebuild_flat(root, flat_of) for root, _ in roots])
        inner.trust_input = True
        op = TabulatedElemwise(
            inner,
            [_is_discrete(v) and not _is_scalar_like(v) for v in leaves],
            [root.type for root, _ in roots],
            output_inputs=[[leaves.index(v) for v in own] for _, own in roots],
        )
        outputs = op(*leaves)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        replacements.update(zip((root for root, _ in roots), outputs))
    if not replacements:
        return output
    return graph_replace(output, replacements, strict=False)


class ExactIntegerDot(Op):
    """``dot`` of two integer matrices through float64 BLAS when that is exact.

    NumPy has no BLAS for integers; when ``max|a| * max|b| * inner size < 2**53`` every
    partial sum is an integer that float64 represents exactly, so the float product rounded
    back is the integer product. Otherwise the integer ``dot`` runs.
    """

    __props__ = ()

    def make_node(self, a, b):
        a, b = pt.as_tensor_variable(a), pt.as_tensor_variable(b)
        return Apply(self, [a, b], [pt.dot(a, b).type()])

    def perform(self, node, inputs, output_storage):
        a, b = inputs
        out_dtype = node.outputs[0].dtype
        bound = a.shape[-1] * _max_abs(a) * _max_abs(b) if a.size and b.size else 0
        if bound < 2**53:
            result = np.dot(a.astype(np.float64), b.astype(np.float64)).astype(out_dtype)
        else:
            result = np.asarray(np.dot(a, b), dtype=out_dtype)
        output_storage[0][0] = result


def _max_abs(x) -> int:
    return max(abs(int(x.max())), abs(int(x.min())))


def exact_integer_dots(output):
    """Replace each int64 matrix ``dot`` of integer tensors in ``output`` by an exact float one."""
    replacements = {}
    for node in io_toposort(graph_inputs([output]), [output]):
        # int64 results only: the float product then converts back without wrapping around.
        if (
            isinstance(node.op, Dot)
            and node.outputs[0].dtype == "int64"
            and all(_is_discrete(x) and x.ndim == 2 for x in node.inputs)
        ):
            replacements[node.outputs[0]] = ExactIntegerDot()(*node.inputs)
    if not replacements:
        return output
    return graph_replace(output, replacements, strict=False)

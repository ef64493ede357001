"""nutpie on a GUM's whitened model without a per-process compile: disk-cached Numba code.

nutpie's own PyMC path (:func:`nutpie.compile_pymc_model`) wraps the model's Numba log
density in two ``numba.cfunc`` s whose code embeds the model's data and addresses, so Numba
cannot cache them and every new process compiles them again (most of a first
``g.sample()``: ``docs/benchmarks.md``). :func:`compile_cached_nutpie` builds the same
two callbacks for a model with one free vector (the Laplace-whitened model,
:mod:`pmctx.gum.whiten`):

1. the log density, its gradient and the Deterministics are PyTensor graphs rewritten by
   PyTensor's NUMBA mode, with every array constant then turned into an input
   (:func:`lift_constants`), so the code holds the model's structure and shapes, not its
   data;
2. two ``numba.cfunc`` s read those arrays from nutpie's user-data pointer (a table of
   addresses and shapes) and call the compiled graphs; they are written to PyTensor's Numba
   disk cache under a key of the graph, the arrays' dtypes and shapes.

A later process (or another data set with the same formula, family, support points and N)
loads both from disk in milliseconds. :func:`build_recipe` does the graph work once and
:func:`from_recipe` makes the callbacks; :mod:`pmctx.gum.recipes` stores the
:class:`Recipe` so that a later process with the same model skips the graph work as well.
nutpie then samples as through its own path (same Rust sampler, the same callbacks'
signature, no GIL), on the same log density: the functions are the model's own graph,
checked against it in ``tests/gum/test_gum_cached.py``.

Examples
--------
>>> import numpy as np
>>> import pytensor.tensor as pt
>>> x = pt.vector("x")
>>> outs, inputs, values = lift_constants([pt.sum((x - np.arange(3.0)) ** 2)])
>>> [v.tolist() for v in values]
[[0.0, 1.0, 2.0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.variable import TensorConstant

from pmctx import _upstream_nutpie, _upstream_pytensor
from pmctx.points import initial_point

__all__ = [
    "Recipe",
    "build_recipe",
    "compile_cached_nutpie",
    "from_recipe",
    "lift_constants",
    "numba_nogil_mode",
]


def _data(const: TensorConstant) -> bool:
    """Whether a constant may hold data: any array, and float scalars (folded sums of data);
    integer scalars (shapes, indices, axes) stay constants."""
    return const.ndim >= 1 or const.dtype.startswith("float")


def lift_constants(outputs: list) -> tuple[list, list, list]:
    """Replace every array and float scalar constant of ``outputs``' graph by an input of the
    same type (static shape included: rewrites and broadcasting read it), so the graph no
    longer holds the data's values.

    Parameters
    ----------
    outputs : list of pytensor.tensor.TensorVariable
        The graph's outputs.

    Returns
    -------
    tuple
        ``(outputs, inputs, values)``: the rewritten outputs, the new input variables and
        their values (C-contiguous, writeable copies of the constants), in matching order.
    """
    consts = [v for v in ancestors(outputs) if isinstance(v, TensorConstant) and _data(v)]
    inputs = [
        pt.tensor(name=f"gum_const_{i}", dtype=c.dtype, shape=c.data.shape)
        for i, c in enumerate(consts)
    ]
    values = [np.array(c.data, order="C", copy=True) for c in consts]
    if consts:
        outputs = graph_replace(outputs, dict(zip(consts, inputs)), strict=False)
    return list(outputs), inputs, values


def numba_nogil_mode():
    """PyTensor's NUMBA mode whose compiled function releases the GIL while it runs and is
    not disk-cached by itself (its callers are).

    Returns
    -------
    pytensor.compile.mode.Mode
        NUMBA rewrites with a linker that adds ``nogil=True`` and no disk cache (built on
        PyTensor internals: :func:`pmctx._upstream_pytensor.numba_nogil_mode`).
    """
    return _upstream_pytensor.numba_nogil_mode()


def _jitted(value, outputs: list, *, name: str):
    """Numba function of ``outputs`` (in ``value``) and the arguments that follow ``value``.

    Shared variables become constants; the graph is rewritten once with constants in place
    (so transposes of constant matrices are folded into contiguous arrays), then every array
    constant is lifted to an input and the result compiled: its cache key is the structure.
    """
    from pytensor.compile.mode import get_mode
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.fg import FunctionGraph
    from pytensor.tensor.elemwise import DimShuffle  # here, not at the top: the API docs
    # document a module's imported classes, and DimShuffle's docstring breaks numpydoc

    shared = [v for v in ancestors(outputs) if isinstance(v, SharedVariable)]
    if shared:
        fixed = {v: pt.constant(np.asarray(v.get_value())) for v in shared}
        outputs = graph_replace(outputs, fixed, strict=False)
    fgraph = FunctionGraph([value], outputs, clone=True)
    # rewrite with constants in place (folded data such as sum(gammaln(y + 1)) is computed
    # once) but unfused, fold transposes of constant matrices (so dots read contiguous
    # arrays), then lift every array and float scalar constant; PyTensor 3's Numba-only
    # FusedElemwise pass is fusion too (and writes its buffers in place)
    skip = ("inplace", "fusion", "fuse_indexed_into_elemwise")
    get_mode("NUMBA").excluding(*skip).optimizer.rewrite(fgraph)
    for node in list(fgraph.toposort()):
        (source, *rest) = node.inputs or (None,)
        if isinstance(node.op, DimShuffle) and isinstance(source, TensorConstant) and not rest:
            storage = [[None]]
            node.op.perform(node, [source.data], storage)
            # np.array, not np.ascontiguousarray: that one makes a 0-d result 1-d, which
            # PyTensor 3 no longer converts back to the scalar type it replaces
            folded = np.array(storage[0][0], order="C", copy=True)
            fgraph.replace(node.outputs[0], pt.constant(folded), import_missing=True)
    outs, consts, values = lift_constants(list(fgraph.outputs))
    fn = pytensor.function(
        [fgraph.inputs[0], *consts],
        outs,
        mode=numba_nogil_mode(),
        trust_input=True,
        on_unused_input="ignore",
        name=name,
    )
    return (
        _upstream_pytensor.jitted(fn),
        tuple(values),
        [o.type.shape for o in fn.maker.fgraph.outputs],
    )


def _header(values: list) -> tuple[np.ndarray, list]:
    """``uint64`` table of ``(address, *shape)`` per array and each array's position in it."""
    header, positions = [], []
    for v in values:
        positions.append(len(header))
        header.extend([v.ctypes.data, *v.shape])
    return np.asarray(header or [0], dtype=np.uint64), positions


def _reads(values: list, positions: list) -> str:
    """Source lines binding ``a0, a1, ...`` to the arrays of the user-data table ``ud``."""
    lines = []
    for i, (v, pos) in enumerate(zip(values, positions)):
        shape = "".join(f"np.intp(ud[{pos + 1 + k}]), " for k in range(v.ndim))
        lines.append(
            f"    a{i} = numba.carray(address_as_void_pointer(ud[{pos}]), ({shape}), "
            f"np.{v.dtype.name})"
        )
    return "\n".join(lines) or "    pass"


_LOGP_SRC = """
def gum_cached_logp_cfunc(dim, x_, out_, logp_, user_data_):
    ud = numba.carray(user_data_, ({n_header},), np.uint64)
{reads}
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    logp = numba.carray(logp_, ())
    value, grad = inner(x, {args})
    logp[()] = value
    out[...] = grad
    if not np.all(np.isfinite(out)):
        return 3
    if not np.isfinite(value):
        return 4
    return 0
"""

_EXPAND_SRC = """
def gum_cached_expand_cfunc(dim, expanded, x_, out_, user_data_):
    ud = numba.carray(user_data_, ({n_header},), np.uint64)
{reads}
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (expanded,))
    values = inner(x, {args})
{writes}
    return 0
"""


def _cfunc_source(template: str, inner, values: list, positions, n_header, writes=""):
    """Source, function name and disk-cache key of a ``numba.cfunc`` calling ``inner`` on
    arrays read from user data."""
    args = ", ".join(f"a{i}" for i in range(len(values)))
    reads = _reads(values, positions)
    src = template.format(n_header=n_header, reads=reads, args=args, writes=writes)
    name = src.split("def ", 1)[1].split("(", 1)[0]
    inner_key = _upstream_pytensor.cache_key_of(inner)
    # PyTensor's graph key leaves out the inputs' types (static shapes): they go in here
    layout = ",".join(f"{v.dtype.name}{v.shape}" for v in values)
    return src, name, f"gum_cached_v6_{inner_key}_{_hash_text(src + layout)}"


def _signatures():
    import numba

    i64, u64, f64p = numba.types.int64, numba.types.uint64, numba.types.CPointer(numba.float64)
    return {
        "logp": i64(u64, f64p, f64p, f64p, numba.types.voidptr),
        "expand": i64(u64, u64, f64p, f64p, numba.types.voidptr),
    }


def _make_cfunc(src: str, name: str, key: str, inner, signature):
    """``numba.cfunc`` of ``src`` on Numba's disk cache under ``key``.

    ``inner`` may be None when the cfunc is on disk already (a cache hit reads the linked
    machine code and never types ``inner``); a miss then fails to type and raises.
    """
    import numba

    env = {"__name__": __name__, "numba": numba, "np": np, "inner": inner}
    env["address_as_void_pointer"] = _upstream_nutpie.address_as_void_pointer()
    func = _upstream_pytensor.compile_numba_function_src(src, name, global_env=env, cache_key=key)
    return numba.cfunc(signature, cache=True)(func)


def _gradient(logp, value):
    return pytensor.grad(logp, value)


def _cached_model_class():
    @dataclass(frozen=True)
    class CachedModel(_upstream_nutpie.compiled_model_class()):
        keep: tuple = ()  # arrays the user data points to
        cache_keys: tuple = ()  # disk-cache keys of the log density and expand cfuncs
        recipe: object = None  # the Recipe it was made from (pmctx.gum.recipes stores it)

    return CachedModel


def _hash_text(text: str) -> str:
    """sha256 hex digest of ``text``."""
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class Recipe:
    """What :func:`from_recipe` needs to make nutpie's model without PyTensor: the two
    cfuncs' sources and disk-cache keys, the arrays their user data points to, and the
    layout of the draws. :mod:`pmctx.gum.recipes` stores it on disk.

    Parameters
    ----------
    start : numpy.ndarray
        The free vector's initial value.
    names : list of str
        Expanded variables: the free vector, then the Deterministics.
    shapes : list of tuple
        Their shapes.
    dims : dict
        Variable -> dim names (the model's ``named_vars_to_dims``).
    coords : dict
        Dim -> coordinate values (nutpie's, with ``"unconstrained_parameter"``).
    sources : dict
        ``"logp"``/``"expand"`` -> (source, function name, disk-cache key).
    values : tuple
        (log-density arrays, expand arrays): what the user data points to.
    inners : tuple, optional
        The compiled graphs the cfuncs call; None when read from disk (the cfuncs are then
        on Numba's disk cache, linked with them).
    """

    start: np.ndarray
    names: list
    shapes: list
    dims: dict
    coords: dict
    sources: dict
    values: tuple
    inners: tuple | None = None


def build_recipe(model) -> Recipe:
    """Rewrite and compile ``model``'s log density, gradient and Deterministics once.

    Parameters
    ----------
    model : pymc.Model
        A model with one free vector variable without a transform (the whitened GUM).

    Returns
    -------
    Recipe
        With ``inners`` set.

    Raises
    ------
    ValueError
        When ``model`` has several free variables, a transformed one, or one not a vector.
    """
    if len(model.value_vars) != 1 or model.rvs_to_transforms[model.free_RVs[0]] is not None:
        raise ValueError(
            "compile_cached_nutpie needs a model with one untransformed free vector, got "
            f"{[v.name for v in model.value_vars]}; use nutpie.compile_pymc_model instead."
        )
    (value,) = model.value_vars
    if value.ndim != 1:
        raise ValueError(f"the free variable must be a vector, got ndim={value.ndim}.")
    start = np.asarray(initial_point(model)[value.name], dtype=float)
    logp = model.logp()
    grad = _gradient(logp, value)
    logp_fn, logp_args, _ = _jitted(value, [logp, grad], name="gum_cached_logp")
    names = [value.name, *(d.name for d in model.deterministics)]
    dets = model.replace_rvs_by_values(model.deterministics)
    expand_fn, expand_args, shapes = _jitted(value, [value, *dets], name="gum_cached_expand")
    if any(n is None for shape in shapes for n in shape):
        # evaluated by PyTensor's Python linker: calling expand_fn would compile it (~1 s)
        # and a C-linked function would load the whole C module cache (~2 s)
        from pytensor.compile.mode import Mode

        shape_fn = pytensor.function(
            [value],
            [out.shape for out in [value, *dets]],
            mode=Mode(linker="py", optimizer="fast_compile"),
            on_unused_input="ignore",
        )
        shapes = shape_fn(start)
    shapes = [tuple(int(n) for n in shape) for shape in shapes]
    offsets = _offsets(shapes)
    writes = "\n".join(
        f"    out[{offsets[k]}:{offsets[k + 1]}] = np.asarray(values[{k}]).ravel()"
        for k in range(len(names))
    )
    header, positions = _header([*logp_args, *expand_args])
    n_logp = len(logp_args)
    dims, coords = _upstream_nutpie.dims_and_coords(model, (names, names, shapes))
    sources = {
        "logp": _cfunc_source(_LOGP_SRC, logp_fn, list(logp_args), positions[:n_logp], len(header)),
        "expand": _cfunc_source(
            _EXPAND_SRC, expand_fn, list(expand_args), positions[n_logp:], len(header), writes
        ),
    }
    return Recipe(
        start=start,
        names=names,
        shapes=shapes,
        dims=dict(dims),
        coords={k: np.asarray(v) for k, v in coords.items()},
        sources=sources,
        values=(logp_args, expand_args),
        inners=(logp_fn, expand_fn),
    )


def _offsets(shapes: list) -> np.ndarray:
    sizes = [int(np.prod(s)) for s in shapes]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(int)


def from_recipe(recipe: Recipe):
    """nutpie's model from a :class:`Recipe`: two cfuncs (from Numba's disk cache when
    there) over user data pointing to the recipe's arrays.

    Parameters
    ----------
    recipe : Recipe
        From :func:`build_recipe`, or read from disk (``inners`` None: the cfuncs must then
        be on Numba's disk cache, else Numba fails to type them and raises).

    Returns
    -------
    nutpie.compile_pymc.CompiledPyMCModel
        For :func:`nutpie.sample`.
    """
    import pandas as pd

    logp_args, expand_args = recipe.values
    header, _ = _header([*logp_args, *expand_args])
    inners = recipe.inners or (None, None)
    signatures = _signatures()
    logp_c, expand_c = (
        _make_cfunc(*recipe.sources[kind], inner, signatures[kind])
        for kind, inner in zip(("logp", "expand"), inners)
    )
    start = recipe.start

    def initial_point(seed):
        return start + np.random.default_rng(seed).uniform(-1.0, 1.0, start.shape)

    names, shapes = list(recipe.names), [tuple(s) for s in recipe.shapes]
    offsets = _offsets(shapes)
    slices = [slice(offsets[k], offsets[k + 1]) for k in range(len(names))]
    coords = {k: pd.Index(v) for k, v in recipe.coords.items()}
    fields = _upstream_nutpie.compiled_model_fields(
        _n_dim=len(start),
        dims=dict(recipe.dims),
        _coords=coords,
        _shapes=dict(zip(names, shapes)),
        compiled_logp_func=logp_c,
        compiled_expand_func=expand_c,
        initial_point_func=initial_point,
        shared_data={},
        user_data=header,
        n_expanded=int(offsets[-1]),
        shape_info=(names, slices, shapes),
        logp_func=None,
        expand_func=None,
    )
    return _cached_model_class()(
        **fields,
        keep=recipe.values,  # the arrays whose addresses ``header`` holds
        cache_keys=tuple(recipe.sources[kind][2] for kind in ("logp", "expand")),
        recipe=recipe,
    )


def compile_cached_nutpie(model):
    """nutpie's model of ``model`` (one free vector, no transform) from cached Numba code.

    Parameters
    ----------
    model : pymc.Model
        A model with one free vector variable without a transform (the whitened GUM).

    Returns
    -------
    nutpie.compile_pymc.CompiledPyMCModel
        For :func:`nutpie.sample`; its posterior has the free variable and every
        Deterministic of ``model`` under their names and dims. Chains start at a uniform
        jitter in ``[-1, 1]`` around the variable's initial value (nutpie's default).

    Raises
    ------
    ValueError
        When ``model`` has several free variables, a transformed one, or one not a vector.
    """
    return from_recipe(build_recipe(model))

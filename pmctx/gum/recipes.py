"""The whitened GUM's nutpie model from disk, without building or rewriting its graph.

:mod:`pmctx.gum.cached` keeps the Numba code of the whitened model's two nutpie callbacks
on disk, but a process still built the whitened model and ran PyTensor's rewrites (about
two seconds at N=500) to find that code and the arrays it reads. This module stores the
outcome, a :class:`pmctx.gum.cached.Recipe` (callback sources and keys, arrays, layout of
the draws), under a key computed from what determines it:

- a fingerprint of the plain ``pm.Model`` (:func:`model_fingerprint`: every node's op and
  its parameters, every constant's and shared value's bytes, variable types, names, dims,
  coordinates and transforms), so any change of formula, data, priors or options changes it;
- the Laplace frame the whitening uses (mode, Cholesky factor, layout);
- the source of the modules that turn those into the recipe (this one, ``whiten``,
  ``cached``) and the versions of PyTensor, PyMC, nutpie, Numba and NumPy.

A graph holding an op whose parameters PyTensor does not declare (no ``__props__``) gets no
fingerprint and is never stored. Files live in ``<PyTensor base_compiledir>/pmctx_gum``,
beside the Numba code they point to (emptying that directory empties both), the 32 most
recently used ones up to 16 MiB each (:data:`MAX_FILES`, :data:`MAX_BYTES`); a file that
cannot be read, or whose Numba code is gone, is ignored and the model compiled as before.

Examples
--------
>>> import pymc as pm
>>> with pm.Model() as model:
...     x = pm.Normal("x", shape=2)
>>> len(model_fingerprint(model))
64
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from types import BuiltinFunctionType, FunctionType

import numpy as np

__all__ = ["cache_dir", "load_white", "model_fingerprint", "store_white", "white_key"]

#: Bump when the stored format changes.
FORMAT = 1
#: Recipes kept (the most recently used; each holds its data set's arrays) ...
MAX_FILES = 32
#: ... and the largest one stored (bigger data sets are compiled in every process).
MAX_BYTES = 16 * 2**20

_END = b"\x1f"  # ends each printed value in a hash, so that "1", "23" differs from "12", "3"


def cache_dir() -> Path:
    """Directory of the stored recipes: ``pmctx_gum`` in PyTensor's ``base_compiledir``.

    Returns
    -------
    pathlib.Path
        The directory (not created here).
    """
    import pytensor

    return Path(pytensor.config.base_compiledir) / "pmctx_gum"


def _value_bytes(value) -> bytes:
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError("object array")
    return f"{array.dtype.str}{array.shape}".encode() + np.ascontiguousarray(array).tobytes()


def _param(h, value) -> None:
    """Feed an op parameter into hash ``h`` (ops by their own parameters, arrays by bytes)."""
    from pytensor.graph.op import Op

    if isinstance(value, np.ndarray | np.generic):
        h.update(_value_bytes(value))
    elif isinstance(value, Op) or hasattr(type(value), "__props__"):
        _op(h, value)  # ops and PyTensor's other parametrised objects, by their parameters
    elif isinstance(value, tuple | list | slice):
        value = (value.start, value.stop, value.step) if isinstance(value, slice) else value
        h.update(b"(")
        for item in value:
            _param(h, item)
        h.update(b")")
    elif value is None or isinstance(value, bool | int | float | str | bytes | type):
        h.update(repr(value).encode() + _END)
    elif isinstance(value, FunctionType | BuiltinFunctionType) and "<" not in value.__qualname__:
        h.update(f"{value.__module__}.{value.__qualname__}".encode() + _END)  # named functions
    else:  # types, dtypes and other plain values print what they are
        text = repr(value)
        if " at 0x" in text:
            raise TypeError(f"no stable description of {type(value).__name__} {text}")
        h.update(text.encode() + _END)


def _op(h, op) -> None:
    from pytensor.scalar.basic import ScalarOp

    from pmctx.gum.init import _LazyStart

    if isinstance(op, _LazyStart):
        # the plain model's start (the Laplace mode, by a callable): it sets no log density
        # and the whitened model starts at zero
        h.update(f"start{op.name}{op.shape}".encode())
        return
    props = getattr(type(op), "__props__", None)
    if props is None and isinstance(op, ScalarOp) and type(op).__eq__ is ScalarOp.__eq__:
        props = ("output_types_preference",)  # what a ScalarOp's equality compares
    if props is None:
        raise TypeError(f"{type(op).__name__} declares no __props__")
    h.update(f"{type(op).__module__}.{type(op).__qualname__}".encode() + _END)
    for name in props:
        h.update(name.encode() + _END)
        _param(h, getattr(op, name))


def _graph_hash(h, outputs: list) -> None:
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import graph_inputs, io_toposort
    from pytensor.tensor.random.type import RandomType

    index: dict = {}

    def ref(var):
        if var not in index:
            index[var] = len(index)
            h.update(f"v{index[var]}:{var.type}:{var.name}".encode() + _END)
            if isinstance(var, Constant):
                _param(h, var.data)  # arrays by their bytes, None and slices by repr
            elif isinstance(var, SharedVariable) and not isinstance(var.type, RandomType):
                h.update(_value_bytes(var.get_value(borrow=True)))
        return str(index[var])

    inputs = list(graph_inputs(outputs))
    for var in inputs:
        ref(var)
    for node in io_toposort(inputs, outputs):
        _op(h, node.op)
        h.update(",".join(ref(v) for v in node.inputs).encode() + b"->")
        h.update(",".join(ref(v) for v in node.outputs).encode() + _END)
    h.update(("out:" + ",".join(ref(v) for v in outputs)).encode())


def model_fingerprint(model) -> str | None:
    """sha256 of everything that defines ``model``'s log density and Deterministics.

    Parameters
    ----------
    model : pymc.Model
        The model.

    Returns
    -------
    str or None
        64 hex digits; None when an op, transform or value has no stable description (the
        model is then never stored).
    """
    h = hashlib.sha256()
    try:
        values = [model.rvs_to_values[rv] for rv in model.basic_RVs]
        outputs = [*model.basic_RVs, *values, *model.deterministics, *model.potentials]
        _graph_hash(h, outputs)
        for rv in model.basic_RVs:
            h.update(f"{rv.name}|{model.rvs_to_values[rv].name}".encode() + _END)
            _param(h, model.rvs_to_transforms.get(rv))
        h.update(json.dumps(model.named_vars_to_dims, sort_keys=True, default=list).encode())
        for name in sorted(model.coords):
            h.update(name.encode() + _END)
            coord = model.coords[name]
            if coord is not None:
                h.update(_value_bytes(np.asarray(coord)))
    except TypeError:
        return None
    return h.hexdigest()


def _versions() -> str:
    from importlib.metadata import version

    names = ("pytensor", "pymc", "nutpie", "numba", "numpy")
    here = Path(__file__).parent
    sources = "".join((here / f).read_text() for f in ("recipes.py", "whiten.py", "cached.py"))
    import pytensor

    code = hashlib.sha256(sources.encode()).hexdigest()
    return f"{FORMAT}|{[version(n) for n in names]}|{pytensor.config.floatX}|{code}"


def white_key(gum_model, frame=None) -> str | None:
    """Key of ``gum_model``'s whitened nutpie model on disk (module doc).

    Parameters
    ----------
    gum_model : pmctx.gum.GumModel
        A GUM (its Laplace fit is run when missing).
    frame : tuple, optional
        ``laplace_frame(gum_model)`` when already computed.

    Returns
    -------
    str or None
        None when the model has no whitened form or no fingerprint.
    """
    from pmctx.gum.whiten import laplace_frame

    frame = laplace_frame(gum_model) if frame is None else frame
    fingerprint = model_fingerprint(gum_model.model)
    if frame is None or fingerprint is None:
        return None
    try:
        versions = _versions()
    except (OSError, ImportError, ValueError):  # sources not on disk (a zipped install)
        return None
    mode, L, layout = frame
    h = hashlib.sha256(f"{fingerprint}|{versions}".encode())
    h.update(_value_bytes(mode) + _value_bytes(L))
    h.update(str([(var.name, cut.start, cut.stop) for var, cut in layout]).encode())
    return h.hexdigest()[:40]


def _plain(values) -> np.ndarray:
    """``values`` as an array NumPy stores without pickle (strings as unicode, not object)."""
    array = np.asarray(values)
    if array.dtype == object and all(isinstance(v, str) for v in array.ravel()):
        array = array.astype(str)
    return array


def _prune(directory: Path) -> None:
    """Keep the :data:`MAX_FILES` most recently used files of ``directory``."""
    files = sorted(directory.glob("white_*.npz"), key=lambda f: f.stat().st_mtime, reverse=True)
    for old in files[MAX_FILES:]:
        old.unlink(missing_ok=True)


def store_white(key: str, recipe) -> Path | None:
    """Write ``recipe`` (a :class:`pmctx.gum.cached.Recipe`) under ``key``.

    Parameters
    ----------
    key : str
        From :func:`white_key`.
    recipe : pmctx.gum.cached.Recipe
        Built by :func:`pmctx.gum.cached.build_recipe`.

    Returns
    -------
    pathlib.Path or None
        The file, or None when it is not written (read-only directory, object arrays,
        more than :data:`MAX_BYTES`): nothing is stored and nothing fails. Only the
        :data:`MAX_FILES` most recently used files are kept.
    """
    path = cache_dir() / f"white_{key}.npz"
    logp_args, expand_args = recipe.values
    arrays = {f"logp_{i}": a for i, a in enumerate(logp_args)}
    arrays.update({f"expand_{i}": a for i, a in enumerate(expand_args)})
    arrays.update({f"coord_{i}": _plain(v) for i, v in enumerate(recipe.coords.values())})
    arrays["start"] = recipe.start
    meta = {
        "names": list(recipe.names),
        "shapes": [list(s) for s in recipe.shapes],
        "dims": {k: list(v) for k, v in recipe.dims.items()},
        "coords": list(recipe.coords),
        "sources": {k: list(v) for k, v in recipe.sources.items()},
        "n_logp": len(logp_args),
        "n_expand": len(expand_args),
    }
    if any(a.dtype == object for a in arrays.values()):
        return None
    if sum(a.nbytes for a in arrays.values()) > MAX_BYTES:
        return None  # big data: the graph work is then small beside sampling
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(temporary, **arrays)
        os.replace(temporary, path)  # readers never see half a file
        _prune(path.parent)
    except OSError:
        return None
    return path


def load_white(key: str):
    """nutpie's model stored under ``key``, or None when absent, unreadable or when its
    Numba code is no longer on disk.

    Parameters
    ----------
    key : str
        From :func:`white_key`.

    Returns
    -------
    nutpie.compile_pymc.CompiledPyMCModel or None
        As :func:`pmctx.gum.cached.compile_cached_nutpie` returns.
    """
    from pmctx.gum.cached import Recipe, from_recipe

    path = cache_dir() / f"white_{key}.npz"
    if not path.exists():
        return None
    with contextlib.suppress(OSError):  # a read-only cache is still read
        os.utime(path)  # used now: pruned last
    try:
        with np.load(path, allow_pickle=False) as stored:
            meta = json.loads(stored["meta"].tobytes().decode())
            logp = tuple(stored[f"logp_{i}"] for i in range(meta["n_logp"]))
            expand = tuple(stored[f"expand_{i}"] for i in range(meta["n_expand"]))
            coords = {k: stored[f"coord_{i}"] for i, k in enumerate(meta["coords"])}
            start = stored["start"]
        recipe = Recipe(
            start=start,
            names=meta["names"],
            shapes=[tuple(s) for s in meta["shapes"]],
            dims={k: tuple(v) for k, v in meta["dims"].items()},
            coords=coords,
            sources={k: tuple(v) for k, v in meta["sources"].items()},
            values=(logp, expand),
        )
        return from_recipe(recipe)
    except Exception:  # a damaged file or evicted Numba code: compile anew
        return None

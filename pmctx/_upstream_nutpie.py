"""nutpie's private names that pmctx uses, in one place, feature-detected.

Why pmctx needs them: :mod:`pmctx.gum.cached` gives nutpie a model whose two Numba callbacks
(log density with gradient, Deterministics) are read from Numba's disk cache, so that a new
process samples a GUM without compiling them again (that compile is most of a first
``g.sample()``: ``docs/benchmarks.md``). nutpie's public path,
:func:`nutpie.compile_pymc_model`, compiles callbacks whose code embeds the data's addresses,
which Numba cannot cache, and nutpie 0.16 has no public way to take callbacks made elsewhere.
pmctx therefore builds nutpie's model object itself, from three undocumented names of
``nutpie.compile_pymc``:

- ``CompiledPyMCModel``: the dataclass :func:`nutpie.sample` takes; its fields (``_n_dim``,
  ``_coords``, ``_shapes``, ``user_data``, ``shared_var_keys`` since 0.16, ...) are nutpie's
  internals (:func:`compiled_model_fields` fills in those pmctx does not set);
- ``address_as_void_pointer``: the Numba intrinsic nutpie's own callbacks use to read an array
  from an address in their user data;
- ``_prepare_dims_and_coords``: the draws' dims and coordinates as nutpie names them (its
  third argument, ``reparameterized_names``, since 0.16: :func:`dims_and_coords`).

:func:`missing` lists those the installed nutpie lacks; every accessor raises
:class:`UpstreamChanged` (an ImportError) naming what is gone. The fallback is nutpie's
public :func:`nutpie.compile_pymc_model`, run by :func:`pmctx.gum.backends.compile_nutpie`
with one :class:`pmctx.gum.backends.CompileFallbackWarning`. ``tests/test_upstream_nutpie.py``
imports each name, so a nutpie release that drops one fails there first.
"""

from __future__ import annotations

import dataclasses
import inspect

__all__ = [
    "PRIVATE_NAMES",
    "UpstreamChanged",
    "address_as_void_pointer",
    "compiled_model_class",
    "compiled_model_fields",
    "dims_and_coords",
    "missing",
]

#: The names of ``nutpie.compile_pymc`` this module reads.
PRIVATE_NAMES = ("CompiledPyMCModel", "address_as_void_pointer", "_prepare_dims_and_coords")

#: Fields of ``CompiledPyMCModel`` pmctx sets itself (nutpie 0.16.11's, less ``shared_var_keys``,
#: ``reparameterized_names`` and ``_transform_adapt_args``, which get nutpie's "none" values).
_FIELDS = (
    "dims",
    "compiled_logp_func",
    "compiled_expand_func",
    "initial_point_func",
    "shared_data",
    "user_data",
    "n_expanded",
    "shape_info",
    "logp_func",
    "expand_func",
    "_n_dim",
    "_shapes",
    "_coords",
)


class UpstreamChanged(ImportError):
    """The installed nutpie lacks a private name pmctx's cached compile reads (module doc)."""


def _module():
    try:
        import nutpie.compile_pymc as module
    except ImportError as err:
        raise UpstreamChanged(f"nutpie.compile_pymc cannot be imported: {err}") from err
    return module


def _get(name: str):
    value = getattr(_module(), name, None)
    if value is None:
        raise UpstreamChanged(f"nutpie.compile_pymc has no attribute {name!r}")
    return value


def missing() -> list[str]:
    """Names of this module's nutpie internals the installed nutpie lacks or changed.

    Returns
    -------
    list of str
        Empty when :mod:`pmctx.gum.cached` can build nutpie's model.
    """
    gone = []
    for name in PRIVATE_NAMES:
        try:
            _get(name)
        except UpstreamChanged:
            gone.append(name)
    if "CompiledPyMCModel" not in gone:
        try:
            compiled_model_fields()
        except UpstreamChanged:
            gone.append("CompiledPyMCModel fields")
    return gone


def compiled_model_class():
    """nutpie's ``CompiledPyMCModel`` (a frozen dataclass, subclassed by pmctx.gum.cached).

    Returns
    -------
    type
        ``nutpie.compile_pymc.CompiledPyMCModel``.
    """
    return _get("CompiledPyMCModel")


def compiled_model_fields(**fields) -> dict:
    """``fields`` completed to the keyword arguments of the installed ``CompiledPyMCModel``.

    Fields nutpie added after 0.15 that pmctx does not use get their "none" value
    (``shared_var_keys={}``: pmctx's callbacks read no shared variables).

    Parameters
    ----------
    **fields
        Values of :data:`_FIELDS` (any subset, to check the class only).

    Returns
    -------
    dict
        Keyword arguments for the class.

    Raises
    ------
    UpstreamChanged
        When the class lacks a field pmctx sets or requires one pmctx cannot fill.
    """
    cls = compiled_model_class()
    if not dataclasses.is_dataclass(cls):
        raise UpstreamChanged("nutpie.compile_pymc.CompiledPyMCModel is no longer a dataclass")
    known = {f.name: f for f in dataclasses.fields(cls) if f.init}
    lacking = sorted(set(_FIELDS) - set(known))
    if lacking:
        raise UpstreamChanged(f"nutpie's CompiledPyMCModel has no fields {lacking}")
    out = dict(fields)
    if "shared_var_keys" in known:
        out.setdefault("shared_var_keys", {})
    unfilled = [
        name
        for name, f in known.items()
        if name not in out
        and name not in _FIELDS
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if unfilled:
        raise UpstreamChanged(f"nutpie's CompiledPyMCModel requires fields {unfilled}")
    return out


def address_as_void_pointer():
    """nutpie's Numba intrinsic: an integer address as a ``void*``.

    Returns
    -------
    numba intrinsic
        ``nutpie.compile_pymc.address_as_void_pointer``.
    """
    return _get("address_as_void_pointer")


def dims_and_coords(model, shape_info) -> tuple[dict, dict]:
    """Dims and coordinates of nutpie's draws of ``model``.

    Parameters
    ----------
    model : pymc.Model
        The model.
    shape_info : tuple
        ``(names, slices_or_names, shapes)`` of the expanded variables.

    Returns
    -------
    tuple
        ``(dims, coords)`` as ``nutpie.compile_pymc._prepare_dims_and_coords`` makes them.

    Raises
    ------
    UpstreamChanged
        When the function is gone or takes other arguments.
    """
    prepare = _get("_prepare_dims_and_coords")
    params = list(inspect.signature(prepare).parameters)
    if params == ["model", "shape_info", "reparameterized_names"]:  # nutpie >= 0.16
        return prepare(model, shape_info, [])  # pmctx's free vector is not reparameterized
    if params == ["model", "shape_info"]:  # nutpie 0.15
        return prepare(model, shape_info)
    raise UpstreamChanged(f"nutpie's _prepare_dims_and_coords takes {params}")

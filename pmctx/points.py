"""A model's initial point, computed once for each state of the model.

``pm.Model.initial_point()`` compiles a PyTensor function on every call (graph rewriting:
``docs/benchmarks.md``). A pmctx fit asks for it several times (each step's set-up, the
trace's shapes), so :func:`initial_point` keeps the last point per model and
computes it again only when something it depends on changed: the value variables, the
initial values set on the model, the transforms, or the value of a shared variable the free
variables depend on (``pm.Data``, mutable dims).
"""

from __future__ import annotations

import hashlib
import weakref

import numpy as np
import pymc as pm
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.traversal import ancestors

#: Initial-value strategies that give the same point on every call.
_DETERMINISTIC_STRATEGIES = (None, "support_point", "moment")

_POINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def initial_point(model) -> dict[str, np.ndarray]:
    """``model.initial_point()``, reused while the model is unchanged.

    Parameters
    ----------
    model : pm.Model

    Returns
    -------
    dict of str to numpy.ndarray
        The transformed initial point, as ``model.initial_point()`` gives it; the arrays are
        the caller's own copies.

    Raises
    ------
    TypeError
        When ``model`` is not a ``pm.Model``.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     x = pm.HalfNormal("x", initval=2.0)
    >>> point = initial_point(model)
    >>> round(float(point["x_log__"]), 4)
    0.6931
    >>> point["x_log__"] += 1.0  # the next caller gets an untouched copy
    >>> round(float(initial_point(model)["x_log__"]), 4)
    0.6931
    """
    if not isinstance(model, pm.Model):
        raise TypeError(
            f"initial_point expects a pm.Model, got {type(model).__name__}; pass the model "
            "itself (the one `with pm.Model() as model:` made)."
        )
    key = _fingerprint(model)
    cached = _POINTS.get(model)
    if key is None or cached is None or cached[0] != key:
        point = dict(model.initial_point())
        if key is not None:
            _POINTS[model] = (key, point)
    else:
        point = cached[1]
    return {name: np.array(value, copy=True) for name, value in point.items()}


def _fingerprint(model):
    """What the initial point depends on, or None when it is random (never reused)."""
    parts = [tuple(id(v) for v in model.value_vars)]
    for rv, init in model.rvs_to_initial_values.items():
        if isinstance(init, str) and init not in _DETERMINISTIC_STRATEGIES:
            return None
        parts.append((id(rv), _token(init)))
    parts.extend((id(rv), id(t)) for rv, t in model.rvs_to_transforms.items())
    inits = [v for v in model.rvs_to_initial_values.values() if hasattr(v, "owner")]
    for var in ancestors([*model.free_RVs, *inits]):
        if isinstance(var, SharedVariable):
            value = var.get_value(borrow=True)
            if isinstance(value, np.ndarray | np.generic | int | float):
                parts.append((id(var), _token(value)))
    return tuple(parts)


def _token(value):
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, np.ndarray | np.generic):
        array = np.ascontiguousarray(value)
        return (array.shape, array.dtype.str, hashlib.blake2b(array.tobytes()).digest())
    return ("id", id(value))

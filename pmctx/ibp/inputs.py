"""What the IBP visuo-motor model is built from: checked data, its coords, its hyperparameters.

:func:`load_ibp` reads a data file (``pmctx fit ibp``; layouts in :mod:`pmctx.datafiles`);
:func:`validate_inputs` checks forces, cues and hyperparameters at the public boundary;
:func:`data_coords` names the model's dims (a DataFrame's column names become the coords of
``force_dim`` and ``pixel``); :func:`hyper_variable` declares one hyperparameter inside a
``pm.Model``: a number is fixed, ``"prior"`` gets its default prior
(:data:`pmctx.ibp.hyper.HYPER_PRIORS`), a user's pytensor variable is used as it is.
:func:`pmctx.models.ibp.build_model` uses all three.

Examples
--------
>>> import pandas as pd
>>> F = pd.DataFrame({"fx": [0.1, -0.2], "fy": [0.3, 0.0]})
>>> [str(c) for c in data_coords(F, None, K_max=3)["force_dim"]]
['fx', 'fy']

A CSV names its force columns ``F0, F1, ...`` and its cue columns ``X0, X1, ...``:

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
>>> _ = path.write_text("F0,F1,X0\\n0.1,0.2,1\\n0.3,0.1,0\\n")
>>> data = load_ibp(path)
>>> data["F"].shape, data["X"].tolist()
((2, 2), [[1], [0]])
>>> _ = path.write_text("F0,feedback\\n0.1,0.2\\n0.3,0.1\\n")
>>> try:
...     load_ibp(path)
... except ValueError as err:
...     print(str(err)[:50])
d.csv has unknown column(s) ['feedback']; ibp expe
"""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pmctx.datafiles import (
    DataSchema,
    check_array_dtype,
    check_file,
    check_keys,
    check_rows,
    numeric_column,
    read_nc_observed,
    read_npz_arrays,
    read_table,
)
from pmctx.ibp.hyper import HYPER_PRIORS
from pmctx.validation import (
    as_binary_array,
    as_float_array,
    check_int,
    check_nonempty,
    check_positive,
    check_probability,
    check_same_length,
)

__all__ = [
    "DEFAULT_HYPER",
    "IBP_HYPER",
    "SCHEMA",
    "UNUSED_PLACEHOLDERS",
    "data_coords",
    "hyper_variable",
    "load_ibp",
    "validate_inputs",
]

# Every hyperparameter is learned unless the user passes a number; the priors and why they
# were chosen are documented in pmctx.ibp.hyper (HYPER_PRIORS).
DEFAULT_HYPER = dict(
    alpha="prior", sigma_n="prior", sigma_A="prior", phi="prior", lam="prior", eps="prior"
)

#: Fixed values of the hyperparameters of an absent likelihood (forces ``F`` or cues ``X``).
UNUSED_PLACEHOLDERS = {"F": dict(sigma_n=0.5, sigma_A=1.0), "X": dict(phi=0.5, lam=0.9, eps=0.05)}


def validate_inputs(F, X, K_max, hyper):
    """Check data and hyperparameters at the public boundary; returns cleaned copies.

    Parameters
    ----------
    F : array_like or None
        Forces (trial, force_dim).
    X : array_like or None
        Binary cues (trial, pixel).
    K_max : int
        Truncation level.
    hyper : dict
        Hyperparameters by name (numbers, or ``"prior"`` to learn one).

    Returns
    -------
    tuple
        ``(F, X, K_max, hyper)`` validated: float64/int64 arrays, an int, checked numbers.

    Examples
    --------
    >>> F, X, K_max, hyper = validate_inputs(np.zeros((3, 2)), None, 4, {"alpha": 1.0})
    >>> F.dtype, X, K_max
    (dtype('float64'), None, 4)
    """
    if F is None and X is None:
        raise ValueError("Pass forces F, visual cues X, or both; got neither.")
    F = None if F is None else check_nonempty(as_float_array(F, "F", ndim=2), "F", unit="trial")
    X = None if X is None else check_nonempty(as_binary_array(X, "X", ndim=2), "X", unit="trial")
    if F is not None and X is not None:
        check_same_length(F=F, X=X)
    K_max = check_int(K_max, "K_max", minimum=1)
    clean = {}
    for name, value in hyper.items():
        if isinstance(value, pt.Variable):  # a user's own prior or expression: used as is
            clean[name] = value
        elif isinstance(value, str):
            if value != "prior":
                raise ValueError(f"{name} must be a number or 'prior'; got {value!r}.")
            clean[name] = value
        elif name in ("phi", "lam", "eps"):
            clean[name] = check_probability(value, name)
        else:
            clean[name] = check_positive(value, name)
    return F, X, K_max, clean


def _columns(data, width):
    # A DataFrame's column names label its columns; anything else is numbered.
    columns = getattr(data, "columns", None)
    if columns is None or len(columns) != width:
        return np.arange(width)
    return np.asarray([str(c) for c in columns])


def data_coords(F, X, *, K_max: int) -> dict:
    """The model's coords: ``trial``, ``feature`` and, for the data given, ``force_dim``/``pixel``.

    Parameters
    ----------
    F, X : array_like or pandas.DataFrame or None
        Forces (trial, force_dim) and cues (trial, pixel), as the user passed them (checked
        by :func:`validate_inputs`); a DataFrame's column names become the coords of its
        second dim, other inputs get ``0, 1, ...``.
    K_max : int
        Truncation level (the ``feature`` coords are ``0 .. K_max - 1``).

    Returns
    -------
    dict
        Coords for ``pm.Model``.

    Examples
    --------
    >>> sorted(data_coords(np.zeros((4, 2)), np.zeros((4, 9)), K_max=3))
    ['feature', 'force_dim', 'pixel', 'trial']
    """
    n = np.shape(F)[0] if F is not None else np.shape(X)[0]
    coords = {"trial": np.arange(n), "feature": np.arange(K_max)}
    if F is not None:
        coords["force_dim"] = _columns(F, np.shape(F)[1])
    if X is not None:
        coords["pixel"] = _columns(X, np.shape(X)[1])
    return coords


def _hyper_prior(name):
    # Priors with exact (conjugate) or slice-sampled updates: IBPAlphaGibbs, IBPHyperGibbs.
    if name == "alpha":
        shape, rate = HYPER_PRIORS["alpha"]
        return pm.Gamma(name, alpha=shape, beta=rate)
    if name in ("sigma_n", "sigma_A"):
        # The conjugate prior is on the variance; the standard deviation is derived from it.
        shape, scale = HYPER_PRIORS[name + "2"]
        var = pm.InverseGamma(name + "2", alpha=shape, beta=scale)
        return pm.Deterministic(name, pt.sqrt(var))
    a, b = HYPER_PRIORS[name]
    return pm.Beta(name, a, b)


def hyper_variable(name: str, value):
    """Declare hyperparameter ``name`` in the enclosing ``pm.Model``.

    Parameters
    ----------
    name : str
        One of ``alpha, sigma_n, sigma_A, phi, lam, eps``.
    value : float, "prior" or pytensor variable
        A number is fixed (``pm.Data``); ``"prior"`` declares the default prior
        (``sigma_n``/``sigma_A`` through their variances ``sigma_n2``/``sigma_A2``); a
        variable is used as it is (wrapped in a deterministic of that name when its name
        differs: the steps read hyperparameters by name from the point).

    Returns
    -------
    pytensor.tensor.TensorVariable
        The hyperparameter.

    Examples
    --------
    >>> with pm.Model() as model:
    ...     lam = hyper_variable("lam", "prior")
    >>> [v.name for v in model.free_RVs]
    ['lam']
    """
    if isinstance(value, pt.Variable):
        return value if value.name == name else pm.Deterministic(name, value)
    return _hyper_prior(name) if value == "prior" else pm.Data(name, value)


# ---------------------------------------------------------------- data files

#: The option scalars an IBP ``.npz`` may hold.
IBP_HYPER = ("K_max", "alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")

#: What ``pmctx fit ibp`` reads (:class:`pmctx.datafiles.DataSchema`).
SCHEMA = DataSchema(
    "ibp",
    (".npz", ".csv", ".nc"),
    {"F": "trials x D forces", "X": "trials x T binary cues"},
    ("F", "X"),
    IBP_HYPER,
    "force columns F0, F1, ... and cue columns X0, X1, ...",
)

_IBP_COLUMN = re.compile(r"^([FX])(\d+)$")


def load_ibp(path, options=None) -> dict:
    """Forces ``F`` and/or cues ``X`` (layouts in :mod:`pmctx.datafiles`).

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``F``/``X`` (and optional scalars), a ``.csv`` with columns
        ``F0, F1, ...`` and ``X0, X1, ...``, or an ``.nc`` results file whose ``observed_data``
        holds them.
    options : dict, optional
        Not read (the IBP's options all come from the caller or the file's scalars); every
        loader takes it so that ``SPEC.load(path, options)`` is one call.

    Returns
    -------
    dict
        ``{"F": array or None, "X": array or None, "options": dict}``, validated; the options
        are the scalars stored in an ``.npz``.

    Raises
    ------
    ValueError
        When the file departs from :data:`SCHEMA` (unknown, missing or unnumbered columns, too
        few trials, non-binary cues, ...); the message names what arrived and the fix.
    """
    schema = SCHEMA
    path = check_file(path, schema)
    file_options = {}
    if path.suffix in (".npz", ".nc"):
        if path.suffix == ".npz":
            arrays, file_options = read_npz_arrays(path, schema, ("F", "X"))
        else:
            arrays = read_nc_observed(path)
            check_keys(arrays, ("F", "X"), path.name, schema)
        if not arrays:
            raise ValueError(f"{path.name} holds no 'F' or 'X'; {schema.expected()}.")
        F, X = arrays.get("F"), arrays.get("X")
        for key, value in (("F", F), ("X", X)):
            if value is not None:
                check_array_dtype(value, key, path.name)
    else:
        frame = read_table(path, schema)
        groups = {"F": [], "X": []}
        unknown = []
        for column in frame.columns:
            match = _IBP_COLUMN.match(column)
            if match:
                groups[match.group(1)].append((int(match.group(2)), column))
            else:
                unknown.append(column)
        if unknown:
            raise ValueError(
                f"{path.name} has unknown column(s) {unknown}; ibp expects {schema.columns} "
                "Rename or drop them."
            )
        for letter, cols in groups.items():
            numbers = sorted(n for n, _ in cols)
            if numbers and numbers != list(range(len(numbers))):
                raise ValueError(
                    f"{path.name}: {letter} columns must be numbered {letter}0..{letter}"
                    f"{len(numbers) - 1} without gaps, got {[c for _, c in sorted(cols)]}."
                )
        F, X = (
            np.column_stack([numeric_column(frame, c, path.name) for _, c in sorted(cols)])
            if cols
            else None
            for cols in (groups["F"], groups["X"])
        )
    n = (F if F is not None else X).shape[0] if np.ndim(F if F is not None else X) else 0
    check_rows(n, path.name, "trials")
    F = None if F is None else as_float_array(F, f"{path.name}: F", ndim=2)
    X = None if X is None else as_binary_array(X, f"{path.name}: X", ndim=2)
    if F is not None and X is not None and F.shape[0] != X.shape[0]:
        raise ValueError(f"{path.name}: F has {F.shape[0]} trials but X has {X.shape[0]}.")
    return {"F": F, "X": X, "options": file_options}

"""Checks at the public boundary of pmctx.

Every function here either returns a clean value (float64 arrays, Python scalars) or raises a
``ValueError``/``TypeError`` whose message says what was expected, what arrived and how to fix
it, in scikit-learn's style. Model modules call these instead of writing their own checks.

Examples
--------
>>> import numpy as np
>>> from pmctx.validation import as_binary_array, check_positive
>>> as_binary_array([[0, 1], [1, 0]], "X").dtype
dtype('int64')
>>> check_positive(2, "sigma_n")
2.0
"""

# Long because every public-boundary check of pmctx lives here, each with its message and
# examples; about 340 of its lines are docstrings.

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "as_angle_array",
    "as_binary_array",
    "as_count_array",
    "as_float_array",
    "as_rng",
    "check_choice",
    "check_int",
    "check_int_or_auto",
    "check_nonempty",
    "check_positive",
    "check_probability",
    "check_same_length",
    "stored_scalar",
]


def _describe(x) -> str:
    arr = np.asarray(x)
    return f"an array of shape {arr.shape} and dtype {arr.dtype}"


def _as_numeric(x, name: str) -> np.ndarray:
    if isinstance(x, str | bytes):
        raise TypeError(f"{name} must be numeric array-like, got a string {x!r}.")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged nested lists
        raise ValueError(
            f"{name} must be a rectangular numeric array; could not convert it ({err}). "
            "Make every row the same length."
        ) from err
    if arr.dtype == bool:
        return arr.astype(np.int64)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        if arr.dtype.kind in "OUS" and arr.size:
            texts = [v for v in arr.ravel()[:1000] if isinstance(v, str | bytes)]
            if texts:
                raise TypeError(
                    f"{name} must hold real numbers, got dtype {arr.dtype} with text such as "
                    f"{str(texts[0])!r}; numeric values were expected. Convert the values to "
                    "numbers first (e.g. pandas.to_numeric, or code categories as 0/1)."
                )
        raise TypeError(
            f"{name} must hold real numbers, got dtype {arr.dtype}. "
            f"Convert it with np.asarray({name}, dtype=float)."
        )
    return arr


def _check_shape(arr: np.ndarray, name: str, ndim: int | None, shape: Sequence | None) -> None:
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(
            f"{name} must be {ndim}-dimensional, got {arr.ndim} dimensions (shape {arr.shape}). "
            + ("Use np.atleast_2d or reshape it." if ndim == 2 else "Reshape it.")
        )
    if shape is not None:
        if len(shape) != arr.ndim or any(
            s is not None and s != a for s, a in zip(shape, arr.shape)
        ):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got shape {arr.shape}.")


def _check_finite(arr: np.ndarray, name: str, allow_nan: bool) -> None:
    if np.issubdtype(arr.dtype, np.integer):
        return
    bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "infinite" if allow_nan else "NaN or infinite"
        hint = (
            "Mark missing entries with NaN (allowed here) instead of inf."
            if allow_nan
            else "Remove or impute missing values before fitting."
        )
        raise ValueError(
            f"{name} must be finite, got {int(bad.sum())} {what} value(s), "
            f"the first at index {first}. {hint}"
        )


def as_float_array(x, name: str, *, ndim=None, shape=None, allow_nan=False) -> np.ndarray:
    """Return ``x`` as a finite float64 array, checking its shape.

    Parameters
    ----------
    x : array_like
        Input values.
    name : str
        Name used in error messages.
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries match any length.
    allow_nan : bool, default False
        Accept NaN (for example to mark missing observations); inf is always rejected.

    Returns
    -------
    numpy.ndarray
        ``x`` as float64 (a view when it already was).

    Raises
    ------
    ValueError, TypeError
        Non-numeric input, the wrong shape, inf, or NaN when ``allow_nan`` is False.

    Examples
    --------
    >>> as_float_array([1, 2], "F").dtype
    dtype('float64')
    """
    arr = _as_numeric(x, name).astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    _check_finite(arr, name, allow_nan)
    return arr


def as_binary_array(x, name: str, *, ndim=None, shape=None) -> np.ndarray:
    """Return ``x`` as an int64 array of zeros and ones.

    Parameters
    ----------
    x : array_like
        Input values.
    name : str
        Name used in error messages.
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries match any length.

    Returns
    -------
    numpy.ndarray
        int64 array of 0 and 1 (booleans become 0/1).

    Raises
    ------
    ValueError
        When any value is not 0 or 1 (the message suggests a threshold), NaN or inf.

    Examples
    --------
    >>> as_binary_array([True, False], "X")
    array([1, 0])
    """
    arr = _as_numeric(x, name)
    _check_shape(arr, name, ndim, shape)
    _check_finite(arr, name, allow_nan=False)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        values = np.unique(arr[bad])[:5]
        raise ValueError(
            f"{name} must be binary (0/1), got {int(bad.sum())} other value(s) such as "
            f"{values.tolist()}. Threshold it, e.g. ({name} > 0.5).astype(int)."
        )
    return arr.astype(np.int64)


def as_count_array(x, name: str, *, ndim=None, shape=None) -> np.ndarray:
    """Return ``x`` as an int64 array of non-negative integer counts.

    Parameters
    ----------
    x : array_like
        Input values.
    name : str
        Name used in error messages.
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries match any length.

    Returns
    -------
    numpy.ndarray
        int64 array of counts.

    Raises
    ------
    ValueError
        Negative, non-integer, NaN or infinite values.

    Examples
    --------
    >>> as_count_array([0, 3.0, 2], "y")
    array([0, 3, 2])
    """
    arr = _as_numeric(x, name)
    _check_shape(arr, name, ndim, shape)
    _check_finite(arr, name, allow_nan=False)
    if (arr < 0).any():
        raise ValueError(
            f"{name} must hold non-negative counts, got minimum {arr.min()}. "
            "Counts cannot be negative; check the data or use a Gaussian family."
        )
    if np.issubdtype(arr.dtype, np.floating) and (arr != np.round(arr)).any():
        frac = arr[arr != np.round(arr)][:3]
        raise ValueError(
            f"{name} must hold integer counts, got non-integer values such as {frac.tolist()}."
        )
    return arr.astype(np.int64)


def as_angle_array(
    x, name: str, *, low=-np.pi, high=np.pi, ndim=None, shape=None, allow_nan=False
) -> np.ndarray:
    """Return ``x`` as a float64 array of angles within ``[low, high]`` (radians).

    Parameters
    ----------
    x : array_like
        Input values.
    name : str
        Name used in error messages.
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries match any length.
    low, high : float, default -pi, pi
        The closed interval the angles must lie in.
    allow_nan : bool, default False
        Accept NaN (missing observations).

    Returns
    -------
    numpy.ndarray
        float64 angles in radians.

    Raises
    ------
    ValueError
        Angles outside ``[low, high]`` (the message shows how to wrap them, or that degrees
        need ``np.deg2rad``).

    Examples
    --------
    >>> as_angle_array([0.0, 3.0], "theta", low=0, high=np.pi)
    array([0., 3.])
    """
    arr = as_float_array(x, name, ndim=ndim, shape=shape, allow_nan=allow_nan)
    with np.errstate(invalid="ignore"):
        bad = (arr < low) | (arr > high)
    if bad.any():
        raise ValueError(
            f"{name} must hold angles in radians within [{low:.6g}, {high:.6g}], got values from "
            f"{np.nanmin(arr):.6g} to {np.nanmax(arr):.6g}. Wrap them first, e.g. "
            f"{_wrap_hint(name, low, high)}; degrees need np.deg2rad."
        )
    return arr


def _pi_text(value: float) -> str:
    """``value`` as code: a multiple of pi as ``np.pi``/``2 * np.pi``, else 6 digits."""
    multiple = value / np.pi
    for k in (1, 2, 4, 0.5):
        if np.isclose(abs(multiple), k, rtol=0, atol=1e-12):
            text = "np.pi" if k == 1 else (f"{k:g} * np.pi" if k > 1 else "np.pi / 2")
            return f"-{text}" if multiple < 0 else text
    return f"{value:.6g}"


def _wrap_hint(name: str, low: float, high: float) -> str:
    """The expression that wraps ``name`` into ``[low, low + (high - low))``."""
    period = _pi_text(high - low)
    if low == 0:
        return f"np.mod({name}, {period})"
    shift = _pi_text(abs(low))
    if low < 0:
        return f"np.mod({name} + {shift}, {period}) - {shift}"
    return f"np.mod({name} - {shift}, {period}) + {shift}"


def _scalar(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return _scalar(value.item(), name)
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    return value


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float after checking it is positive (or non-negative).

    Parameters
    ----------
    value : real number
        The hyperparameter or scale to check.
    name : str
        Name used in error messages.
    allow_zero : bool, default False
        Accept 0 as well.

    Returns
    -------
    float
        ``value`` as a Python float.

    Raises
    ------
    TypeError, ValueError
        Not a real number, not finite, or not positive.

    Examples
    --------
    >>> check_positive(0.5, "alpha")
    0.5
    """
    value = _scalar(value, name)
    if value < 0 or (value == 0 and not allow_zero):
        want = "non-negative (>= 0)" if allow_zero else "positive (> 0)"
        raise ValueError(f"{name} must be {want}, got {value}. Pass a {want.split()[0]} number.")
    return value


def check_probability(value, name: str, *, closed: bool = False) -> float:
    """Return ``value`` as a float after checking it is a probability.

    The interval is open, (0, 1), unless ``closed=True``.

    Parameters
    ----------
    value : real number
        The probability to check.
    name : str
        Name used in error messages.
    closed : bool, default False
        Accept the end points 0 and 1.

    Returns
    -------
    float
        ``value`` as a Python float.

    Raises
    ------
    TypeError, ValueError
        Not a real number, or outside the interval.

    Examples
    --------
    >>> check_probability(0.9, "lambda_")
    0.9
    """
    value = _scalar(value, name)
    inside = 0 <= value <= 1 if closed else 0 < value < 1
    if not inside:
        interval = "[0, 1]" if closed else "the open interval (0, 1)"
        raise ValueError(f"{name} must be a probability in {interval}, got {value}.")
    return value


def check_int(value, name: str, *, minimum=None, maximum=None) -> int:
    """Return ``value`` as an int after checking its type and range.

    Parameters
    ----------
    value : int or integral float
        The count to check (``3.0`` is accepted as 3, booleans are not).
    name : str
        Name used in error messages.
    minimum, maximum : int, optional
        Inclusive bounds.

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    TypeError, ValueError
        Not an integer, or out of range.

    Examples
    --------
    >>> check_int(5, "K_max", minimum=1)
    5
    """
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be an integer, got a boolean {value!r}.")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}.")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}.")
    return value


def check_int_or_auto(value, name: str, *, minimum=None) -> int | None:
    """Return ``None`` for ``"auto"``, else ``value`` checked by :func:`check_int`.

    Parameters
    ----------
    value : "auto" or int
        The option as the user passed it.
    name : str
        Name used in error messages.
    minimum : int, optional
        Inclusive lower bound of an integer.

    Returns
    -------
    int or None
        ``None`` when the caller should choose (``"auto"``).

    Raises
    ------
    TypeError, ValueError
        Another string, not an integer, or out of range.

    Examples
    --------
    >>> check_int_or_auto("auto", "sweeps") is None, check_int_or_auto(2, "sweeps", minimum=1)
    (True, 2)
    """
    if isinstance(value, str):
        if value != "auto":
            bound = "" if minimum is None else f" >= {minimum}"
            raise ValueError(f"{name} must be 'auto' or an integer{bound}, got {value!r}.")
        return None
    return check_int(value, name, minimum=minimum)


def check_same_length(**arrays) -> int:
    """Check that all arrays have the same first dimension and return it.

    Parameters
    ----------
    **arrays : array_like or None
        The arrays by name (the names appear in the error message); ``None`` entries are
        skipped.

    Returns
    -------
    int
        The common number of rows (0 when no array was given).

    Raises
    ------
    ValueError
        When the first dimensions differ.

    Examples
    --------
    >>> check_same_length(F=np.zeros((3, 2)), X=np.zeros((3, 5)))
    3
    """
    lengths = {name: np.shape(arr)[0] for name, arr in arrays.items() if arr is not None}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(
            f"All inputs must have the same number of rows (observations): {listed}. "
            "Pass matching arrays, one row per observation."
        )
    return next(iter(lengths.values()), 0)


def check_nonempty(x, name: str, *, minimum: int = 1, unit: str = "row") -> np.ndarray:
    """Check that data has at least ``minimum`` rows and no empty further dimension.

    Models call it at their public boundary, so that empty data (an empty file, a filter
    that matched nothing, ``df.iloc[:0]``) is rejected before a model is built or sampled.

    Parameters
    ----------
    x : array_like
        The data, one row per ``unit`` (trial, observation, sample, ...).
    name : str
        Name used in error messages.
    minimum : int, default 1
        Fewest rows accepted.
    unit : str, default "row"
        What a row is, for the message (e.g. ``"trial"``).

    Returns
    -------
    numpy.ndarray
        ``x`` as an array (unchanged).

    Raises
    ------
    ValueError
        Fewer than ``minimum`` rows, a scalar, or a zero-length further dimension (e.g. no
        columns).

    Examples
    --------
    >>> check_nonempty(np.zeros((3, 2)), "F", unit="trial").shape
    (3, 2)
    """
    arr = np.asarray(x)
    units = unit if minimum == 1 else f"{unit}s"
    if arr.ndim == 0:
        raise ValueError(
            f"{name} must be an array with one entry per {unit}, got a scalar {arr.item()!r}. "
            f"Pass at least {minimum} {units}, e.g. as a list or a 1-D array."
        )
    if arr.shape[0] < minimum:
        where = "row" if arr.ndim > 1 else "entry"
        if arr.shape[0] == 0:
            got, fix = (
                f"no {'rows' if where == 'row' else 'entries'} (it is empty)",
                "Pass the data to fit; if it was read from a file or filtered (e.g. "
                "df[df.x > 0] or df.iloc[:0]), check that some rows are left.",
            )
        else:
            got, fix = f"{arr.shape[0]}", f"Pass {minimum} or more {unit}s."
        raise ValueError(
            f"{name} must have at least {minimum} {units} (one per {where}), got {got}: "
            f"{_describe(arr)}. {fix}"
        )
    empty = [axis for axis in range(1, arr.ndim) if arr.shape[axis] == 0]
    if empty:
        raise ValueError(
            f"{name} must have at least one entry along every dimension, got {_describe(arr)} "
            f"(dimension {empty[0]} is empty, e.g. no columns). Pass one column per "
            "variable, or check how the array was selected or reshaped."
        )
    return arr


def check_choice(value, name: str, choices: Iterable):
    """Return ``value`` after checking it is one of ``choices``.

    Parameters
    ----------
    value : object
        The option given.
    name : str
        Name used in error messages.
    choices : iterable
        The accepted values.

    Returns
    -------
    object
        ``value`` itself.

    Raises
    ------
    ValueError
        When ``value`` is not among ``choices`` (the message lists them).

    Examples
    --------
    >>> check_choice("poisson", "family", ["bernoulli", "poisson", "gaussian"])
    'poisson'
    """
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def as_rng(random_seed=None) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from ``None``, an int seed or a Generator.

    Parameters
    ----------
    random_seed : None, int or numpy.random.Generator, optional
        ``None`` for fresh entropy, a non-negative int seed, or a Generator (returned as is).

    Returns
    -------
    numpy.random.Generator
        The generator.

    Raises
    ------
    ValueError, TypeError
        A negative seed or another type.

    Examples
    --------
    >>> bool(as_rng(0).integers(10) == as_rng(0).integers(10))
    True
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is None or (
        isinstance(random_seed, numbers.Integral) and not isinstance(random_seed, bool)
    ):
        if random_seed is not None and random_seed < 0:
            raise ValueError(f"random_seed must be a non-negative integer, got {random_seed}.")
        return np.random.default_rng(random_seed)
    if isinstance(random_seed, np.random.SeedSequence | np.random.BitGenerator):
        return np.random.default_rng(random_seed)
    raise TypeError(
        f"random_seed must be None, a non-negative int or a numpy.random.Generator, "
        f"got {type(random_seed).__name__}."
    )


def stored_scalar(value):
    """A scalar stored with a batch unit's data: a table column repeats it on every row, an
    ``.npz`` stores it as a 0-d array; plain values pass through.

    Parameters
    ----------
    value : object
        The stored value.

    Returns
    -------
    object
        The scalar.

    Examples
    --------
    >>> stored_scalar(np.array(3)), stored_scalar(np.array([0.5, 0.5])), stored_scalar("y ~ x")
    (3, 0.5, 'y ~ x')
    """
    if isinstance(value, np.ndarray):
        return value.item() if value.size == 1 or value.ndim == 0 else value.ravel()[0].item()
    return value

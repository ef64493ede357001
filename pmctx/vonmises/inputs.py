"""Checks of the von Mises models' inputs: observed maps and series, concentrations.

:func:`check_map_observations` (the orientation map, :mod:`pmctx.models.vonmises_map`) and
:func:`check_series` (the chain smoother, :mod:`pmctx.models.vonmises_chain`) turn observed
angles with NaN (or a mask) for missing values into the filled arrays and 0/1 masks the
models store; :func:`check_concentration` and :func:`check_hyper_update` check the chain's
options.

Examples
--------
>>> import numpy as np
>>> z, mask, signal = check_series([0.1, np.nan, 0.3])
>>> mask.tolist()
[1, 0, 1]
"""

from __future__ import annotations

import numpy as np

from pmctx.validation import (
    as_angle_array,
    as_binary_array,
    check_int,
    check_nonempty,
    check_positive,
)
from pmctx.vonmises.potentials import wrap_angle

__all__ = [
    "HYPER_UPDATES", "check_concentration", "check_hyper_update", "check_map_observations",
    "check_series",
]  # fmt: skip

#: How the chain smoother samples learned concentrations (``hyper_update``).
HYPER_UPDATES = ("collapsed", "conditional")


def check_map_observations(z, mask=None, shape=None):
    """Validate an orientation map's doubled-angle observations and their mask.

    Parameters
    ----------
    z : array_like, shape (M, N), optional
        Observed doubled angles in ``[-pi, pi]``; NaN marks a missing node. ``None`` with
        ``shape`` stands for a map without observations (the prior).
    mask : array_like of 0/1, shape (M, N), optional
        1 where observed (default: where ``z`` is not NaN).
    shape : tuple of int, optional
        Grid shape when ``z`` is ``None``.

    Returns
    -------
    z_filled : numpy.ndarray, shape (M, N)
        ``z`` with 0 at the unobserved nodes.
    mask : numpy.ndarray of int, shape (M, N)
        1 where observed.

    Examples
    --------
    >>> z, mask = check_map_observations(np.array([[0.1, np.nan], [0.3, 0.4]]))
    >>> z.tolist(), mask.tolist()
    ([[0.1, 0.0], [0.3, 0.4]], [[1, 0], [1, 1]])
    """
    if z is None:
        if shape is None:
            raise ValueError("Pass observations z (an M x N array) or the grid shape=(M, N).")
        shape = (
            check_int(shape[0], "shape[0]", minimum=1),
            check_int(shape[1], "shape[1]", minimum=1),
        )
        return np.zeros(shape), np.zeros(shape, dtype=np.int64)
    z = check_nonempty(as_angle_array(z, "z", ndim=2, allow_nan=True), "z", unit="grid row")
    if mask is None:
        mask = (~np.isnan(z)).astype(np.int64)
    else:
        mask = as_binary_array(mask, "mask", ndim=2)
        if mask.shape != z.shape:
            raise ValueError(
                f"mask must have the shape of z {z.shape}, got {mask.shape}. Pass one 0/1 entry "
                "per grid node (1 = observed)."
            )
        if np.isnan(z[mask == 1]).any():
            raise ValueError("z is NaN at nodes the mask marks as observed; set mask to 0 there.")
    return np.where(mask == 1, z, 0.0), mask


def check_series(y, mask=None, signal=None):
    """Validate an angular time series: ``(y wrapped, NaN as 0; mask 0/1; signal)``.

    Parameters
    ----------
    y : array_like, shape (T,)
        Observed angles in radians (within ``[-2 pi, 2 pi]``); NaN marks a missing sample.
    mask : array_like of 0/1, shape (T,), optional
        1 where observed (default: where ``y`` is not NaN).
    signal : array_like, shape (T,), optional
        Relative signal strength per sample (> 0; default 1).

    Returns
    -------
    z_filled : numpy.ndarray, shape (T,)
        ``y`` wrapped into ``[-pi, pi)``, 0 where missing.
    mask : numpy.ndarray of int64, shape (T,)
        1 where observed.
    signal : numpy.ndarray, shape (T,)
        The signal strengths (ones when omitted).

    Examples
    --------
    >>> z, mask, signal = check_series([0.5, np.nan, 6.0])
    >>> z.round(3).tolist(), mask.tolist(), signal.tolist()
    ([0.5, 0.0, -0.283], [1, 0, 1], [1.0, 1.0, 1.0])
    """
    y = as_angle_array(y, "y", low=-2 * np.pi, high=2 * np.pi, ndim=1, allow_nan=True)
    check_nonempty(y, "y", minimum=2, unit="sample")
    observed = ~np.isnan(y) if mask is None else np.asarray(mask).astype(bool)
    if observed.shape != y.shape or np.isnan(y[observed]).any():
        raise ValueError(
            f"mask must have the shape of y {y.shape} and be 0 wherever y is NaN; got shape "
            f"{observed.shape}. Omit mask to treat NaN samples as missing."
        )
    signal = np.ones(y.shape) if signal is None else np.asarray(signal, dtype=np.float64)
    if signal.shape != y.shape or not np.all(np.isfinite(signal) & (signal > 0)):
        raise ValueError(
            f"signal must be a finite positive array of shape {y.shape} (relative concentration "
            f"per sample); got shape {signal.shape}. Omit it for uniform noise."
        )
    return wrap_angle(np.where(observed, y, 0.0)), observed.astype(np.int64), signal


def check_concentration(value, name: str):
    """A concentration: a positive number, or ``"prior"`` (learned with its prior).

    Parameters
    ----------
    value : float or "prior"
        The value to check.
    name : str
        Its name, for the error message.

    Returns
    -------
    float or str
        The number as a float, or ``"prior"``.

    Examples
    --------
    >>> check_concentration(2, "kappa"), check_concentration("prior", "kappa")
    (2.0, 'prior')
    """
    if isinstance(value, str):
        if value != "prior":
            raise ValueError(f"{name} must be a positive number or 'prior'; got {value!r}.")
        return value
    return check_positive(value, name)


def check_hyper_update(value: str) -> str:
    """One of :data:`HYPER_UPDATES`: how the chain's learned concentrations are sampled.

    Parameters
    ----------
    value : str
        ``"collapsed"`` or ``"conditional"``.

    Returns
    -------
    str
        ``value``.

    Examples
    --------
    >>> check_hyper_update("collapsed")
    'collapsed'
    """
    if value not in HYPER_UPDATES:
        raise ValueError(
            f"hyper_update must be one of {HYPER_UPDATES} (how learned concentrations are "
            f"sampled); got {value!r}. Use 'collapsed', the default, unless comparing samplers."
        )
    return value

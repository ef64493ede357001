"""Summaries of orientation maps: pinwheels, smoothness, orientation error, circular moments.

Orientations ``theta`` are pi-periodic; the model works on doubled angles ``o = 2 theta``.
A pinwheel is a plaquette (2x2 cell) around which ``theta`` winds by ``+-pi``: its winding
number is ``+-1/2`` (``+-1`` in ``o``).

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.maps import pinwheel_charges
>>> # theta rotates by pi/4 per corner of the cell: one +1/2 pinwheel.
>>> theta = np.array([[0.0, np.pi / 4], [3 * np.pi / 4, np.pi / 2]])
>>> pinwheel_charges(theta)
array([[0.5]])
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "circular_moments",
    "count_pinwheels",
    "o_to_theta",
    "orientation_error",
    "pinwheel_charges",
    "pinwheel_counts",
    "smoothness",
    "theta_to_o",
]


def _wrap(x):
    return np.mod(x + np.pi, 2.0 * np.pi) - np.pi


def theta_to_o(theta):
    """Doubled angle ``o = 2 theta`` wrapped into ``[-pi, pi)`` (NaN stays NaN).

    Parameters
    ----------
    theta : array_like
        Orientations in radians (period pi); NaN allowed.

    Returns
    -------
    numpy.ndarray
        Doubled angles ``2 theta`` wrapped into ``[-pi, pi)``, float64, same shape.

    Examples
    --------
    >>> theta_to_o([0.0, np.pi / 4, np.pi / 2]).round(3).tolist()
    [0.0, 1.571, -3.142]
    """
    return _wrap(2.0 * np.asarray(theta, dtype=np.float64))


def o_to_theta(o):
    """Orientation ``theta = o / 2`` in ``[0, pi)`` from a doubled angle ``o``.

    Parameters
    ----------
    o : array_like
        Doubled angles in radians (any real values; period 2 pi).

    Returns
    -------
    numpy.ndarray
        Orientations ``(o mod 2 pi) / 2`` in ``[0, pi)``, float64, same shape.

    Examples
    --------
    >>> o_to_theta([-np.pi / 2, np.pi]).round(3).tolist()
    [2.356, 1.571]
    """
    return np.mod(np.asarray(o, dtype=np.float64), 2.0 * np.pi) / 2.0


def pinwheel_charges(theta) -> np.ndarray:
    """Winding number of ``theta`` around every plaquette, shape ``(..., M - 1, N - 1)``.

    Values are ``0``, ``+1/2`` (counter-clockwise around the cell corners
    (i, j) -> (i, j+1) -> (i+1, j+1) -> (i+1, j)) or ``-1/2``.

    Parameters
    ----------
    theta : array_like (..., M, N)
        Orientations: one map, or a stack of maps (e.g. posterior draws) on leading axes.

    Returns
    -------
    numpy.ndarray (..., M - 1, N - 1)
        Charge of each plaquette.
    """
    o = 2.0 * np.asarray(theta, dtype=np.float64)
    corners = [o[..., :-1, :-1], o[..., :-1, 1:], o[..., 1:, 1:], o[..., 1:, :-1]]
    total = sum(_wrap(corners[(k + 1) % 4] - corners[k]) for k in range(4))
    return np.round(total / (2.0 * np.pi)) / 2.0


def count_pinwheels(theta) -> tuple[int, int]:
    """Numbers of ``+1/2`` and ``-1/2`` pinwheels of an orientation map.

    Parameters
    ----------
    theta : array_like (M, N)
        Orientations.

    Returns
    -------
    n_positive : int
        ``+1/2`` pinwheels.
    n_negative : int
        ``-1/2`` pinwheels.
    """
    charges = pinwheel_charges(theta)
    return int(np.sum(charges > 0)), int(np.sum(charges < 0))


def pinwheel_counts(theta) -> np.ndarray:
    """Number of pinwheels (either sign) of every map in a stack ``theta`` (..., M, N).

    Parameters
    ----------
    theta : array_like (..., M, N)
        Orientations, e.g. posterior draws ``(chain, draw, M, N)``.

    Returns
    -------
    numpy.ndarray (...)
        Pinwheels per map, float64 (a per-draw statistic for summaries and R-hat).

    Examples
    --------
    >>> cell = np.array([[0.0, np.pi / 4], [3 * np.pi / 4, np.pi / 2]])
    >>> pinwheel_counts(np.stack([cell, np.zeros((2, 2))])).tolist()
    [1.0, 0.0]
    """
    return np.count_nonzero(pinwheel_charges(theta), axis=(-2, -1)).astype(np.float64)


def smoothness(o):
    """Mean ``cos`` of the difference of doubled angles ``o`` over all 4-neighbour edges.

    Parameters
    ----------
    o : array_like (..., M, N)
        Doubled angles: one map, or a stack of maps on leading axes.

    Returns
    -------
    float or numpy.ndarray (...)
        In ``[-1, 1]``; 1 for a constant map. A float for one map, an array over the leading
        axes for a stack.

    Examples
    --------
    >>> smoothness(np.zeros((3, 3))), smoothness(np.zeros((2, 3, 3))).tolist()
    (1.0, [1.0, 1.0])
    """
    o = np.asarray(o, dtype=np.float64)
    lead = o.shape[:-2]
    edges = np.concatenate(
        [np.cos(np.diff(o, axis=-2)).reshape(*lead, -1),
         np.cos(np.diff(o, axis=-1)).reshape(*lead, -1)], axis=-1
    )  # fmt: skip
    mean = edges.mean(axis=-1)
    return float(mean) if not lead else mean


def orientation_error(theta_hat, theta) -> np.ndarray:
    """Absolute orientation error ``1/2 |arg exp(2i (theta_hat - theta))|`` in ``[0, pi/2]``.

    Parameters
    ----------
    theta_hat, theta : array_like
        Estimated and true orientations.

    Returns
    -------
    numpy.ndarray
        Errors in ``[0, pi/2]``.
    """
    diff = 2.0 * (np.asarray(theta_hat, dtype=np.float64) - np.asarray(theta, dtype=np.float64))
    return 0.5 * np.abs(_wrap(diff))


def circular_moments(theta_draws, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean orientation and circular standard deviation of orientation draws.

    Both use the doubled angle: the mean is ``arg(E exp(2i theta)) / 2`` in ``[0, pi)`` and the
    standard deviation ``sqrt(-2 log R) / 2`` with ``R = |E exp(2i theta)|``.

    Parameters
    ----------
    theta_draws : array_like
        Orientation draws.
    axis : int, default 0
        The draws' axis.

    Returns
    -------
    mean : numpy.ndarray
        Circular mean orientation in ``[0, pi)``.
    sd : numpy.ndarray
        Circular standard deviation.
    """
    resultant = np.mean(np.exp(2j * np.asarray(theta_draws, dtype=np.float64)), axis=axis)
    mean = np.mod(np.angle(resultant), 2.0 * np.pi) / 2.0
    length = np.clip(np.abs(resultant), 1e-300, 1.0)
    return mean, np.sqrt(-2.0 * np.log(length)) / 2.0

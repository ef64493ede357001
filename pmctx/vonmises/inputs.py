"""The von Mises models' inputs: data files, observed maps and series, concentrations.

:func:`load_vonmises` and :func:`load_vonmises_chain` read the two models' data files
(``pmctx fit``; layouts in :mod:`pmctx.datafiles`);
:func:`check_map_observations` (the orientation map, :mod:`pmctx.models.vonmises_map`),
:func:`observed_doubled_angles` (orientations in ``[0, pi]`` for the selecting and band-pass
reconstructions) and
:func:`check_series` (the chain smoother, :mod:`pmctx.models.vonmises_chain`) turn observed
angles with NaN (or a mask) for missing values into the filled arrays and 0/1 masks the
models store; :func:`check_concentration` checks the chain's
options.

Examples
--------
>>> import numpy as np
>>> z, mask, signal = check_series([0.1, np.nan, 0.3])
>>> mask.tolist()
[1, 0, 1]
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from pmctx.datafiles import (
    DataSchema,
    check_array_dtype,
    check_file,
    read_npz_arrays,
)
from pmctx.validation import (
    as_angle_array,
    as_binary_array,
    check_int,
    check_nonempty,
    check_positive,
)
from pmctx.vonmises.potentials import wrap_angle

__all__ = [
    "CHAIN_SCHEMA", "MAP_SCHEMA", "check_concentration",
    "check_map_observations", "check_series", "load_vonmises", "load_vonmises_chain",
    "observed_doubled_angles",
]  # fmt: skip


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


def observed_doubled_angles(theta_obs, mask=None):
    """Observed orientations in ``[0, pi]`` as doubled angles and an observed mask.

    Parameters
    ----------
    theta_obs : array_like, shape (M, N)
        Observed orientations in ``[0, pi]``; NaN marks a missing pixel.
    mask : array_like of 0/1 or bool, shape (M, N), optional
        1 where observed (default: where ``theta_obs`` is not NaN).

    Returns
    -------
    z : numpy.ndarray, shape (M, N)
        Doubled angles ``2 theta`` wrapped to ``(-pi, pi]``, 0 where not observed.
    observed : numpy.ndarray of bool, shape (M, N)
        Where a pixel is observed.

    Raises
    ------
    ValueError
        When ``mask`` does not have the map's shape, or no pixel is observed.

    Examples
    --------
    >>> z, observed = observed_doubled_angles([[0.25, np.nan], [0.5, 0.0]])
    >>> z.tolist(), observed.tolist()
    ([[0.5, 0.0], [1.0, 0.0]], [[True, False], [True, True]])
    """
    theta_obs = as_angle_array(theta_obs, "theta_obs", ndim=2, low=0.0, high=np.pi, allow_nan=True)
    observed = ~np.isnan(theta_obs) if mask is None else np.asarray(mask).astype(bool)
    if observed.shape != theta_obs.shape:
        raise ValueError(
            f"mask must have theta_obs's shape {theta_obs.shape}, got {observed.shape}. "
            "Pass one 0/1 entry per pixel (1 = observed)."
        )
    if not observed.any():
        raise ValueError(
            "theta_obs has no observed pixel; the map cannot be reconstructed. Pass at least "
            "one observed orientation (NaN or mask 0 marks a missing pixel)."
        )
    return np.where(observed, wrap_angle(2.0 * np.nan_to_num(theta_obs)), 0.0), observed


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


# ---------------------------------------------------------------- data files

#: What ``pmctx fit vonmises`` reads (:class:`pmctx.datafiles.DataSchema`).
MAP_SCHEMA = DataSchema(
    "vonmises",
    (".npz", ".csv"),
    {"theta": "rows x cols orientations in [0, pi], NaN missing", "mask": "1 = observed"},
    ("theta",),
    ("kappa", "kappa_obs", "rank"),
    "a plain matrix of orientations in [0, pi] without a header, empty cells missing",
)

#: What ``pmctx fit vonmises-chain`` reads (:class:`pmctx.datafiles.DataSchema`).
CHAIN_SCHEMA = DataSchema(
    "vonmises-chain",
    (".npz", ".csv"),
    {"y": "angles in radians, NaN missing", "mask": "1 = observed", "signal": "> 0"},
    ("y",),
    ("kappa", "kappa_obs", "rank"),
    "one column of angles in radians without a header, empty cells missing",
)


def _read_matrix(path: Path) -> np.ndarray:
    rows = []
    with path.open(newline="") as handle:
        try:
            for line_no, row in enumerate(csv.reader(handle), start=1):
                if not row:  # blank line
                    continue
                try:
                    rows.append([float(c) if c.strip() not in ("", "nan", "NaN") else np.nan
                                 for c in row])  # fmt: skip
                except ValueError:
                    what = "a header row" if line_no == 1 else "text"
                    raise ValueError(
                        f"{path.name} line {line_no} holds {what} ({row[:4]}); vonmises "
                        "expects a plain matrix of orientations in [0, pi] without a header. "
                        "Remove it."
                    ) from None
        except UnicodeDecodeError as err:
            raise ValueError(f"{path.name} is not a text CSV file ({err}).") from err
    lengths = sorted({len(r) for r in rows})
    if len(lengths) > 1:
        raise ValueError(
            f"{path.name} has rows of different lengths {lengths}; every row of the map "
            "needs the same number of columns (empty cells for missing nodes)."
        )
    return np.array(rows, dtype=float) if rows else np.zeros((0, 0))


def load_vonmises(path, options=None) -> dict:
    """An orientation map (layouts in :mod:`pmctx.datafiles`).

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``theta`` (and optional ``mask`` and scalars), or a ``.csv`` holding the
        matrix of orientations without a header (empty cells missing).
    options : dict, optional
        Not read; the caller merges its ``kappa``, ``kappa_obs``, ``rank`` (and sampler
        options) over the scalars the file stores.

    Returns
    -------
    dict
        ``{"theta": array (rows, cols), "mask": array or None, "options": dict}``; the options
        are the scalars stored in an ``.npz``.

    Raises
    ------
    ValueError
        When the file departs from :data:`MAP_SCHEMA` (a header row, ragged rows, angles
        outside [0, pi], fewer than 2 x 2 nodes, nothing observed); the message says how to fix
        it.
    """
    schema = MAP_SCHEMA
    path = check_file(path, schema)
    file_options, mask = {}, None
    if path.suffix == ".npz":
        arrays, file_options = read_npz_arrays(path, schema, ("theta", "mask"))
        if "theta" not in arrays:
            raise ValueError(f"{path.name} has no 'theta' array; {schema.expected()}.")
        theta = arrays["theta"]
        check_array_dtype(theta, "theta", path.name)
        if "mask" in arrays:
            mask = as_binary_array(arrays["mask"], f"{path.name}: mask", ndim=2)
    else:
        theta = _read_matrix(path)
    theta = as_angle_array(
        theta, f"{path.name}: theta", low=0.0, high=np.pi, ndim=2, allow_nan=True
    )
    if theta.shape[0] < 2 or theta.shape[1] < 2:
        raise ValueError(
            f"{path.name}: the map has shape {theta.shape}; vonmises needs at least 2 x 2 "
            "nodes (rows x columns of orientations)."
        )
    observed = ~np.isnan(theta) if mask is None else (mask == 1) & ~np.isnan(theta)
    if not observed.any():
        raise ValueError(
            f"{path.name}: every node is missing; the posterior would be the prior. Pass "
            "at least one observed orientation."
        )
    return {"theta": theta, "mask": mask, "options": file_options}


def _read_series(path: Path) -> np.ndarray:
    """One angle per line; an empty line (or ``nan``) is a missing sample, kept in place."""
    values = []
    try:
        lines = path.read_text().splitlines()
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not a text CSV file ({err}).") from err
    for line_no, line in enumerate(lines, start=1):
        cells = line.split(",")
        if len(cells) != 1:
            raise ValueError(
                f"{path.name} line {line_no} has {len(cells)} columns; vonmises-chain expects "
                "one column of angles in radians (one time step per line, empty = missing)."
            )
        cell = cells[0].strip()
        try:
            values.append(np.nan if cell.lower() in ("", "nan") else float(cell))
        except ValueError:
            what = "a header row" if line_no == 1 else "text"
            raise ValueError(
                f"{path.name} line {line_no} holds {what} ({cell[:20]!r}); vonmises-chain "
                "expects one angle in radians per line without a header. Remove it."
            ) from None
    return np.array(values, dtype=float)


def load_vonmises_chain(path, options=None) -> dict:
    """An angular time series for the chain smoother.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``y`` (angles in radians; optional ``mask``, ``signal`` and scalars),
        or a one-column ``.csv`` without a header where an empty line is a missing sample.
    options : dict, optional
        The caller's model options; accepted by every loader for one signature and merged by
        the caller over the returned file options.

    Returns
    -------
    dict
        ``{"y": array (T,), "mask": array or None, "signal": array or None, "options": dict}``.

    Raises
    ------
    ValueError
        When the file departs from :data:`CHAIN_SCHEMA` (more than one column, a header row,
        fewer than 2 samples, nothing observed); the message says how to fix it.
    """
    schema = CHAIN_SCHEMA
    path = check_file(path, schema)
    file_options, extra = {}, {"mask": None, "signal": None}
    if path.suffix == ".npz":
        arrays, file_options = read_npz_arrays(path, schema, ("y", "mask", "signal"))
        if "y" not in arrays:
            raise ValueError(f"{path.name} has no 'y' array; {schema.expected()}.")
        y = arrays["y"]
        check_array_dtype(y, "y", path.name)
        if "mask" in arrays:
            extra["mask"] = as_binary_array(arrays["mask"], f"{path.name}: mask", ndim=1)
        if "signal" in arrays:
            extra["signal"] = np.asarray(arrays["signal"], dtype=np.float64)
    else:
        y = _read_series(path)
    y = as_angle_array(y, f"{path.name}: y", low=-2 * np.pi, high=2 * np.pi, ndim=1, allow_nan=True)
    if y.size < 2 or np.all(np.isnan(y)):
        raise ValueError(
            f"{path.name}: the series has {y.size} samples, {int(np.sum(~np.isnan(y)))} observed;"
            " vonmises-chain needs at least 2 samples and one observed angle."
        )
    return {"y": y, **extra, "options": file_options}

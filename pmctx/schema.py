"""Data files for ``pmctx fit``, loaded by declared schemas, one per model.

Each model declares the arrays (``.npz``) or columns (``.csv``) it reads in a
:class:`DataSchema`; ``load_<model>(path, options=None) -> dict`` returns the validated
arrays its ``fit_data`` takes, plus ``"options"`` (model options stored in the file).
Nothing is guessed: unknown, missing or duplicated names, header rows in matrix CSVs, empty
or mislabelled files, text, inf, zero or one row and all-missing data raise ``ValueError`` or
``TypeError`` saying what was expected, what arrived and how to fix it.

==========  ==============================================================================
model       file layout
==========  ==============================================================================
ibp         ``.npz``: ``F`` (trials x D forces) and/or ``X`` (trials x T binary cues),
            scalars ``K_max alpha sigma_n sigma_A phi lam eps``. ``.csv``: header with force
            columns ``F0, F1, ...`` and cue columns ``X0, X1, ...`` (numbered from 0).
            ``.nc``: an InferenceData whose ``observed_data`` holds ``F`` and/or ``X``.
crp         ``.npz``: ``features`` (trials x features, 0/1, NaN for an unknown US), optional
            ``feature_names`` (must contain ``US``; without names the US is column 0),
            scalars ``alpha max_causes concentration``. ``.csv``: header with a ``US`` column
            and one column per CS/context (0/1; empty US cell = probe trial).
vonmises    ``.npz``: ``theta`` (rows x cols orientations in [0, pi], NaN missing), optional
            ``mask`` (1 = observed), scalars ``kappa kappa_obs rank``. ``.csv``: a plain
            matrix of orientations, no header, empty cells missing.
gum         ``.npz``: ``formula``, optional ``family``, and the columns the formula names.
            ``.csv``: header with exactly the columns the formula names; the formula comes
            from ``--set formula=...`` or a sidecar ``<file>.formula`` (formula, family).
==========  ==============================================================================

Examples
--------
>>> import numpy as np, tempfile, pathlib
>>> from pmctx.schema import load_ibp
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

import csv
import difflib
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pmctx.validation import as_angle_array, as_binary_array, as_float_array

__all__ = [
    "SCHEMAS",
    "DataSchema",
    "load_crp",
    "load_gum",
    "load_ibp",
    "load_vonmises",
    "load_vonmises_chain",
]


@dataclass(frozen=True)
class DataSchema:
    """What one model reads: file types, named arrays, option scalars, CSV columns.

    Attributes
    ----------
    model : str
        The model's CLI name.
    suffixes : tuple of str
        Accepted file suffixes (``".npz"``, ``".csv"``, ``".nc"``).
    arrays : dict of str to str
        ``.npz`` key -> description, as the error messages show it.
    required : tuple of str
        At least one of these arrays must be present.
    scalars : tuple of str
        Option keys an ``.npz`` may hold as 0-d arrays (model options, such as ``K_max``).
    columns : str
        Description of the CSV layout.
    """

    model: str
    suffixes: tuple[str, ...]
    arrays: dict  # npz key -> description
    required: tuple[str, ...]  # at least one of these arrays must be present
    scalars: tuple[str, ...]  # option keys allowed in an .npz
    columns: str  # description of the CSV layout

    def expected(self) -> str:
        """The sentence error messages use to say what the model reads.

        Returns
        -------
        str
            Such as ``"crp expects 'features' (...), ... and optional scalars [...]"``.
        """
        arrays = ", ".join(f"'{k}' ({v})" for k, v in self.arrays.items())
        return f"{self.model} expects {arrays}" + (
            f" and optional scalars {list(self.scalars)}" if self.scalars else ""
        )


IBP_HYPER = ("K_max", "alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")

SCHEMAS = {
    "ibp": DataSchema(
        "ibp",
        (".npz", ".csv", ".nc"),
        {"F": "trials x D forces", "X": "trials x T binary cues"},
        ("F", "X"),
        IBP_HYPER,
        "force columns F0, F1, ... and cue columns X0, X1, ...",
    ),
    "crp": DataSchema(
        "crp",
        (".npz", ".csv"),
        {"features": "trials x features, 0/1, NaN = unknown US", "feature_names": "names"},
        ("features",),
        ("alpha", "max_causes", "concentration"),
        "a 'US' column and one 0/1 column per CS or context",
    ),
    "vonmises": DataSchema(
        "vonmises",
        (".npz", ".csv"),
        {"theta": "rows x cols orientations in [0, pi], NaN missing", "mask": "1 = observed"},
        ("theta",),
        ("kappa", "kappa_obs", "rank"),
        "a plain matrix of orientations in [0, pi] without a header, empty cells missing",
    ),
    "vonmises-chain": DataSchema(
        "vonmises-chain",
        (".npz", ".csv"),
        {"y": "angles in radians, NaN missing", "mask": "1 = observed", "signal": "> 0"},
        ("y",),
        ("kappa", "kappa_obs", "rank"),
        "one column of angles in radians without a header, empty cells missing",
    ),
    "gum": DataSchema(
        "gum",
        (".npz", ".csv"),
        {"formula": "model formula", "family": "gaussian/bernoulli/poisson"},
        (),
        (),
        "a header naming the response and the regressors of the formula",
    ),
}


# ---------------------------------------------------------------- files


def _check_file(path, schema: DataSchema) -> Path:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"Data file {path} does not exist.")
    if not path.is_file():
        raise ValueError(f"{path} is a folder; pass a data file ({'/'.join(schema.suffixes)}).")
    if path.suffix not in schema.suffixes:
        raise ValueError(
            f"{schema.model} reads {', '.join(schema.suffixes)} files, got {path.name!r}. "
            "Save the data in one of those formats."
        )
    if path.stat().st_size == 0:
        raise ValueError(f"{path.name} is empty (0 bytes); {schema.expected()}.")
    return path


def _read_npz(path: Path) -> dict:
    with path.open("rb") as handle:
        if handle.read(2) != b"PK":  # every .npz is a zip archive
            raise ValueError(
                f"{path.name} is not a NumPy .npz archive (no zip signature); write it with "
                "np.savez(path, name=array, ...)."
            )
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (zipfile.BadZipFile, EOFError, OSError) as err:
        raise ValueError(
            f"{path.name} is not a NumPy .npz archive ({type(err).__name__}); write it with "
            "np.savez(path, name=array, ...)."
        ) from err
    except ValueError as err:  # object arrays need pickles, which pmctx never loads
        raise TypeError(
            f"{path.name} holds object arrays ({err}); save plain numeric or string arrays."
        ) from err


def _read_nc_observed(path: Path) -> dict:
    import arviz as az

    try:
        idata = az.from_netcdf(str(path))
    except Exception as err:  # netCDF/HDF5 raise many types for a foreign file
        raise ValueError(
            f"{path.name} is not an InferenceData NetCDF file ({type(err).__name__}: {err})."
        ) from err
    if "observed_data" not in idata.groups():
        raise ValueError(
            f"{path.name} has no observed_data group (groups: {list(idata.groups())}); pass "
            "an InferenceData with the data in observed_data, or an .npz/.csv file."
        )
    return {str(k): np.asarray(v.values) for k, v in idata.observed_data.data_vars.items()}


def _header(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        try:
            return next(csv.reader(handle))
        except StopIteration:
            return []
        except (csv.Error, UnicodeDecodeError) as err:
            raise ValueError(f"{path.name} is not a readable CSV text file ({err}).") from err


def _read_table(path: Path, schema: DataSchema):
    """A CSV with a header, checked for empty, duplicated and blank column names."""
    import pandas as pd

    try:
        header = [h.strip() for h in _header(path)]
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not a text CSV file ({err}).") from err
    if not header or header == [""]:
        raise ValueError(f"{path.name} has no header row; {schema.model} expects {schema.columns}.")
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        raise ValueError(
            f"{path.name} has duplicated column(s) {duplicated}; give every column one name."
        )
    if any(h == "" for h in header):
        raise ValueError(f"{path.name} has a column without a name; name every column.")
    try:
        frame = pd.read_csv(path, skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise ValueError(f"{path.name} is not a well-formed CSV file ({err}).") from err
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _check_rows(n: int, name: str, what: str = "rows", minimum: int = 2) -> None:
    if n < minimum:
        raise ValueError(
            f"{name} has {n} {what}; at least {minimum} are needed to fit a model. "
            "Check that the file holds the data (not only a header)."
        )


def _numeric_column(frame, column: str, filename: str) -> np.ndarray:
    values = frame[column]
    if values.dtype == object or values.dtype.kind in "OUS":
        numbers = np.asarray(__import__("pandas").to_numeric(values, errors="coerce"), dtype=float)
        bad = values[np.isnan(numbers) & values.notna().to_numpy()]
        if len(bad):
            raise TypeError(
                f"{filename} column {column!r} must hold numbers, got text such as "
                f"{bad.iloc[0]!r} (row {bad.index[0] + 1}). Fix or remove it."
            )
        return numbers
    return values.to_numpy(dtype=float)


def _check_keys(found, allowed, filename: str, schema: DataSchema, what="array(s)"):
    unknown = sorted(set(found) - set(allowed))
    if unknown:
        hints = []
        lowered = {str(a).lower(): a for a in allowed}
        for key in unknown:
            close = difflib.get_close_matches(str(key).lower(), list(lowered), n=1, cutoff=0.6)
            if close:
                hints.append(f"{key!r} -> {lowered[close[0]]!r}?")
        hint = f" Did you mean {', '.join(hints)}" if hints else " Rename or drop them."
        raise ValueError(f"{filename} has unknown {what} {unknown}; {schema.expected()}.{hint}")


def _scalar_options(arrays: dict, keys, filename: str) -> dict:
    options = {}
    for key in keys:
        if key in arrays:
            value = arrays.pop(key)
            if np.ndim(value) != 0:
                raise ValueError(
                    f"{filename}: {key!r} must be a single number, got shape {np.shape(value)}."
                )
            options[key] = value.item()
    return options


def _check_array_dtype(value, key: str, filename: str) -> None:
    if value.dtype.kind in "USO":
        raise TypeError(
            f"{filename}: {key!r} must be numeric, got {value.dtype} values such as "
            f"{value.ravel()[:1].tolist()}. Convert it with np.asarray(..., dtype=float)."
        )


# ---------------------------------------------------------------- ibp


_IBP_COLUMN = re.compile(r"^([FX])(\d+)$")


def load_ibp(path, options=None) -> dict:
    """Forces ``F`` and/or cues ``X`` (see the module table).

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``F``/``X`` (and optional scalars), a ``.csv`` with columns
        ``F0, F1, ...`` and ``X0, X1, ...``, or an ``.nc`` InferenceData whose ``observed_data``
        holds them.
    options : dict, optional
        The caller's model options (``--set`` or Python); accepted by every loader for one
        signature. Only the GUM reads them (its ``formula`` and ``family``); the caller merges
        them over the returned file options.

    Returns
    -------
    dict
        ``{"F": array or None, "X": array or None, "options": dict}``, validated; the options
        are the scalars stored in an ``.npz``.

    Raises
    ------
    ValueError
        On any departure from the schema; the message says what was expected, what arrived and
        how to fix it.
    """
    schema = SCHEMAS["ibp"]
    path = _check_file(path, schema)
    file_options = {}
    if path.suffix in (".npz", ".nc"):
        arrays = _read_npz(path) if path.suffix == ".npz" else _read_nc_observed(path)
        if path.suffix == ".npz":
            file_options = _scalar_options(arrays, schema.scalars, path.name)
        _check_keys(arrays, ("F", "X"), path.name, schema)
        if not arrays:
            raise ValueError(f"{path.name} holds no 'F' or 'X'; {schema.expected()}.")
        F, X = arrays.get("F"), arrays.get("X")
        for key, value in (("F", F), ("X", X)):
            if value is not None:
                _check_array_dtype(value, key, path.name)
    else:
        frame = _read_table(path, schema)
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
            np.column_stack([_numeric_column(frame, c, path.name) for _, c in sorted(cols)])
            if cols
            else None
            for cols in (groups["F"], groups["X"])
        )
    n = (F if F is not None else X).shape[0] if np.ndim(F if F is not None else X) else 0
    _check_rows(n, path.name, "trials")
    F = None if F is None else as_float_array(F, f"{path.name}: F", ndim=2)
    X = None if X is None else as_binary_array(X, f"{path.name}: X", ndim=2)
    if F is not None and X is not None and F.shape[0] != X.shape[0]:
        raise ValueError(f"{path.name}: F has {F.shape[0]} trials but X has {X.shape[0]}.")
    return {"F": F, "X": X, "options": file_options}


# ---------------------------------------------------------------- crp


def _us_first(values: np.ndarray, names: list[str], filename: str):
    if "US" not in names:
        raise ValueError(
            f"{filename} has no 'US' column (columns: {names}); crp needs the US by name. "
            "Rename the unconditioned-stimulus column to 'US'."
        )
    order = [names.index("US")] + [i for i, n in enumerate(names) if n != "US"]
    return values[:, order], [names[i] for i in order]


def load_crp(path, options=None) -> dict:
    """Trial features with the US found by name.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``features`` (and optional ``feature_names`` and scalars), or a ``.csv``
        with a ``US`` column and one 0/1 column per CS or context.
    options : dict, optional
        The caller's model options (``--set`` or Python); accepted by every loader for one
        signature. Only the GUM reads them (its ``formula`` and ``family``); the caller merges
        them over the returned file options.

    Returns
    -------
    dict
        ``{"features": xarray.DataArray (trial, feature), "options": dict}``, the US first.

    Raises
    ------
    ValueError
        On any departure from the schema; the message says what was expected, what arrived and
        how to fix it.
    """
    import xarray as xr

    from pmctx.conditioning.design import as_feature_matrix

    schema = SCHEMAS["crp"]
    path = _check_file(path, schema)
    file_options = {}
    if path.suffix == ".npz":
        arrays = _read_npz(path)
        file_options = _scalar_options(arrays, schema.scalars, path.name)
        _check_keys(arrays, ("features", "feature_names"), path.name, schema)
        if "features" not in arrays:
            raise ValueError(f"{path.name} has no 'features' array; {schema.expected()}.")
        values = arrays["features"]
        _check_array_dtype(values, "features", path.name)
        values = as_float_array(values, f"{path.name}: features", ndim=2, allow_nan=True)
        names = None
        if "feature_names" in arrays:
            names = [str(n) for n in np.ravel(arrays["feature_names"])]
            if len(names) != values.shape[1]:
                raise ValueError(
                    f"{path.name}: feature_names has {len(names)} names for "
                    f"{values.shape[1]} feature columns."
                )
            values, names = _us_first(values, names, path.name)
    else:
        frame = _read_table(path, schema)
        names = list(frame.columns)
        values = np.column_stack([_numeric_column(frame, c, path.name) for c in names])
        values, names = _us_first(values, names, path.name)
    _check_rows(values.shape[0], path.name, "trials")
    if values.shape[1] < 2:
        raise ValueError(
            f"{path.name} has only the US; crp needs at least one CS or context column."
        )
    if np.isnan(values[:, 0]).all():
        raise ValueError(
            f"{path.name}: the US is missing on every trial; the model needs observed US "
            "outcomes (leave it empty only on probe trials)."
        )
    as_feature_matrix(values, f"{path.name}: features")
    coords = {"feature": names} if names else None
    features = xr.DataArray(values, dims=("trial", "feature"), coords=coords)
    return {"features": features, "options": file_options}


# ---------------------------------------------------------------- von Mises


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
    """An orientation map.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with ``theta`` (and optional ``mask`` and scalars), or a ``.csv`` holding the
        matrix of orientations without a header (empty cells missing).
    options : dict, optional
        The caller's model options (``--set`` or Python); accepted by every loader for one
        signature. Only the GUM reads them (its ``formula`` and ``family``); the caller merges
        them over the returned file options.

    Returns
    -------
    dict
        ``{"theta": array (rows, cols), "mask": array or None, "options": dict}``; the options
        are the scalars stored in an ``.npz``.

    Raises
    ------
    ValueError
        On any departure from the schema; the message says what was expected, what arrived and
        how to fix it.
    """
    schema = SCHEMAS["vonmises"]
    path = _check_file(path, schema)
    file_options, mask = {}, None
    if path.suffix == ".npz":
        arrays = _read_npz(path)
        file_options = _scalar_options(arrays, schema.scalars, path.name)
        _check_keys(arrays, ("theta", "mask"), path.name, schema)
        if "theta" not in arrays:
            raise ValueError(f"{path.name} has no 'theta' array; {schema.expected()}.")
        theta = arrays["theta"]
        _check_array_dtype(theta, "theta", path.name)
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
        On any departure from the schema; the message says what was expected, what arrived and
        how to fix it.
    """
    schema = SCHEMAS["vonmises-chain"]
    path = _check_file(path, schema)
    file_options, extra = {}, {"mask": None, "signal": None}
    if path.suffix == ".npz":
        arrays = _read_npz(path)
        file_options = _scalar_options(arrays, schema.scalars, path.name)
        _check_keys(arrays, ("y", "mask", "signal"), path.name, schema)
        if "y" not in arrays:
            raise ValueError(f"{path.name} has no 'y' array; {schema.expected()}.")
        y = arrays["y"]
        _check_array_dtype(y, "y", path.name)
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


# ---------------------------------------------------------------- gum


def load_gum(path, options=None) -> dict:
    """Columns for a GUM formula.

    Parameters
    ----------
    path : str or path-like
        An ``.npz`` with one array per column (and optional ``formula``, ``family``), or a
        ``.csv`` with a header naming the columns; the formula then comes from ``options`` or a
        sidecar file ``<data>.formula``.
    options : dict, optional
        The caller's model options (``--set`` or Python); accepted by every loader for one
        signature. Only the GUM reads them (its ``formula`` and ``family``); the caller merges
        them over the returned file options.

    Returns
    -------
    dict
        ``{"columns": dict of str to array, "options": dict}`` (options include ``formula``
        and ``family``).

    Raises
    ------
    ValueError
        On any departure from the schema; the message says what was expected, what arrived and
        how to fix it.
    """
    import pandas as pd

    schema = SCHEMAS["gum"]
    path = _check_file(path, schema)
    options = dict(options or {})
    file_options = {}
    if path.suffix == ".npz":
        columns = _read_npz(path)
        for key in ("formula", "family"):
            if key in columns:
                file_options[key] = str(columns.pop(key))
    else:
        columns = _read_table(path, schema)
        sidecar = path.with_suffix(".formula")
        if sidecar.exists():
            lines = [ln.strip() for ln in sidecar.read_text().splitlines() if ln.strip()]
            if lines:
                file_options["formula"] = lines[0]
            if len(lines) > 1:
                file_options["family"] = lines[1]
    formula = options.get("formula", file_options.get("formula"))
    if not formula:
        raise ValueError(
            f"{path.name} comes without a formula. Pass --set formula='y ~ f(x)', save one "
            "in the .npz (np.savez(path, formula='y ~ f(x)', x=..., y=...)) or write it to "
            f"{path.with_suffix('.formula').name}."
        )
    from pmctx.gum.formula import parse_formula
    from pmctx.gum.terms import normalize

    response, term, _ = parse_formula(formula)
    needed = {response} | {leaf.column for b in normalize(term) for f in b for leaf in f}
    names = list(columns.columns if isinstance(columns, pd.DataFrame) else columns)
    _check_keys(names, needed, path.name, schema, what="column(s) not in the formula")
    missing = sorted(needed - set(names))
    if missing:
        raise ValueError(
            f"{path.name} lacks column(s) {missing} that the formula {formula!r} uses; it has "
            f"{sorted(names)}."
        )
    if isinstance(columns, pd.DataFrame):
        n_rows = len(columns)
    else:
        n_rows = min((np.shape(v)[0] if np.ndim(v) else 0) for v in columns.values())
    _check_rows(n_rows, path.name, "observations")
    response_values = columns[response]
    if isinstance(columns, pd.DataFrame):
        response_values = _numeric_column(columns, response, path.name)
    else:
        _check_array_dtype(np.asarray(response_values), response, path.name)
    if np.isnan(np.asarray(response_values, dtype=float)).all():
        raise ValueError(f"{path.name}: the response {response!r} is missing everywhere.")
    return {"columns": columns, "options": file_options}

"""Generic readers of data files for ``pmctx fit``: ``.npz``, ``.csv`` and ``.nc``, checked.

Each model declares the arrays (``.npz``) or columns (``.csv``) it reads in a
:class:`DataSchema`, next to its loader in the model's family package
(:func:`pmctx.ibp.inputs.load_ibp`, :func:`pmctx.conditioning.inputs.load_crp`,
:func:`pmctx.vonmises.inputs.load_vonmises`, :func:`pmctx.vonmises.inputs.load_vonmises_chain`,
:func:`pmctx.gum.inputs.load_gum`); a loader ``load_<model>(path, options=None) -> dict``
returns the validated arrays its ``fit_data`` takes, plus ``"options"`` (model options stored
in the file). The readers here are what the loaders share: :func:`check_file` (exists, is a
file, has an accepted suffix, is not empty), :func:`read_npz` (never loads pickles),
:func:`read_nc_observed` (a fit's ``observed_data``), :func:`read_table` (a CSV with
a header), and the checks of keys, option scalars, dtypes, numeric columns and row counts.

Nothing is guessed: unknown, missing or duplicated names, header rows in matrix CSVs, empty
or mislabelled files, text, inf, zero or one row and all-missing data raise ``ValueError`` or
``TypeError`` saying what was expected, what arrived and how to fix it.

==========  ==============================================================================
model       file layout
==========  ==============================================================================
ibp         ``.npz``: ``F`` (trials x D forces) and/or ``X`` (trials x T binary cues),
            scalars ``K_max alpha sigma_n sigma_A phi lam eps``. ``.csv``: header with force
            columns ``F0, F1, ...`` and cue columns ``X0, X1, ...`` (numbered from 0).
            ``.nc``: a fit (DataTree) whose ``observed_data`` holds ``F`` and/or ``X``.
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
>>> import tempfile, pathlib
>>> schema = DataSchema("toy", (".csv",), {"y": "responses"}, ("y",), (), "a 'y' column")
>>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
>>> _ = path.write_text("y,z\\n0.1,1\\n0.3,0\\n")
>>> frame = read_table(check_file(path, schema), schema)
>>> list(frame.columns), numeric_column(frame, "y", path.name).tolist()
(['y', 'z'], [0.1, 0.3])
>>> try:
...     check_keys(frame.columns, ("y",), path.name, schema, what="column(s)")
... except ValueError as err:
...     print(err)
d.csv has unknown column(s) ['z']; toy expects 'y' (responses). Rename or drop them.
"""

from __future__ import annotations

import csv
import difflib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "DataSchema",
    "check_array_dtype",
    "check_file",
    "check_keys",
    "check_rows",
    "numeric_column",
    "read_nc_observed",
    "read_npz",
    "read_npz_arrays",
    "read_table",
    "scalar_options",
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


def check_file(path, schema: DataSchema) -> Path:
    """The data file as a ``Path``, checked to exist, be a file, have a suffix and content.

    Parameters
    ----------
    path : str or path-like
        The data file.
    schema : DataSchema
        The model's schema (its accepted suffixes and what it expects).

    Returns
    -------
    pathlib.Path
        The checked path.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        For a folder, a suffix the model does not read or an empty file.
    """
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


def read_npz(path: Path) -> dict:
    """The arrays of an ``.npz`` archive, loaded without pickles.

    Parameters
    ----------
    path : pathlib.Path
        The archive.

    Returns
    -------
    dict of str to numpy.ndarray
        Every array the archive holds, by name.

    Raises
    ------
    ValueError
        When the file is not an ``.npz`` (zip) archive.
    TypeError
        When it holds object arrays (which need pickles).
    """
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


def read_npz_arrays(path: Path, schema: DataSchema, allowed) -> tuple[dict, dict]:
    """An ``.npz``'s data arrays and option scalars, its names checked against the schema.

    Parameters
    ----------
    path : pathlib.Path
        The archive (checked with :func:`check_file`).
    schema : DataSchema
        The model's schema: its ``scalars`` are taken out as options.
    allowed : iterable of str
        The array names the model reads; any other name is refused (:func:`check_keys`).

    Returns
    -------
    arrays : dict of str to numpy.ndarray
        The data arrays, options removed.
    options : dict
        The option scalars the file stores (:func:`scalar_options`).
    """
    arrays = read_npz(path)
    options = scalar_options(arrays, schema.scalars, path.name)
    check_keys(arrays, allowed, path.name, schema)
    return arrays, options


def read_nc_observed(path: Path) -> dict:
    """The ``observed_data`` arrays of a fit's NetCDF file (a DataTree with ArviZ's groups,
    as pmctx writes, or an ArviZ 0.x InferenceData file).

    Parameters
    ----------
    path : pathlib.Path
        The ``.nc`` file.

    Returns
    -------
    dict of str to numpy.ndarray
        Each observed variable's values, by name.

    Raises
    ------
    ValueError
        When the file is not a fit's NetCDF file or has no ``observed_data`` group.
    """
    import arviz as az

    try:
        idata = az.from_netcdf(str(path))
    except Exception as err:  # netCDF/HDF5 raise many types for a foreign file
        raise ValueError(
            f"{path.name} is not an InferenceData NetCDF file ({type(err).__name__}: {err})."
        ) from err
    if "observed_data" not in idata.children:
        raise ValueError(
            f"{path.name} has no observed_data group (groups: {list(idata.children)}); pass "
            "a fit's NetCDF file with the data in observed_data, or an .npz/.csv file."
        )
    observed = idata["observed_data"].to_dataset()
    return {str(k): np.asarray(v.values) for k, v in observed.data_vars.items()}


def _header(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        try:
            return next(csv.reader(handle))
        except StopIteration:
            return []
        except (csv.Error, UnicodeDecodeError) as err:
            raise ValueError(f"{path.name} is not a readable CSV text file ({err}).") from err


def read_table(path: Path, schema: DataSchema):
    """A CSV with a header, checked for empty, duplicated and blank column names.

    Parameters
    ----------
    path : pathlib.Path
        The ``.csv`` file.
    schema : DataSchema
        The model's schema (its ``columns`` go into the message for a missing header).

    Returns
    -------
    pandas.DataFrame
        The table, column names stripped of surrounding spaces.

    Raises
    ------
    ValueError
        For a file that is not CSV text, has no header, or has duplicated or blank names.
    """
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


def check_rows(n: int, name: str, what: str = "rows", minimum: int = 2) -> None:
    """Require at least ``minimum`` rows (trials, observations) in a data file.

    Parameters
    ----------
    n : int
        The number of rows found.
    name : str
        The file's name, for the message.
    what : str, default "rows"
        What a row is (``"trials"``, ``"observations"``).
    minimum : int, default 2
        The fewest rows a fit needs.

    Raises
    ------
    ValueError
        When ``n < minimum``.
    """
    if n < minimum:
        raise ValueError(
            f"{name} has {n} {what}; at least {minimum} are needed to fit a model. "
            "Check that the file holds the data (not only a header)."
        )


def numeric_column(frame, column: str, filename: str) -> np.ndarray:
    """One table column as floats; empty cells become NaN, text is refused.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table (from :func:`read_table`).
    column : str
        The column's name.
    filename : str
        The file's name, for the message.

    Returns
    -------
    numpy.ndarray
        The column's values as float64.

    Raises
    ------
    TypeError
        When a cell holds text that is not a number (the message names it and its row).
    """
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


def check_keys(found, allowed, filename: str, schema: DataSchema, what="array(s)") -> None:
    """Refuse names the model does not read, suggesting the closest allowed name.

    Parameters
    ----------
    found : iterable of str
        The names in the file (arrays or columns).
    allowed : iterable of str
        The names the model reads.
    filename : str
        The file's name, for the message.
    schema : DataSchema
        The model's schema (what it expects, for the message).
    what : str, default "array(s)"
        What the names are, for the message.

    Raises
    ------
    ValueError
        When a name is not allowed; ``'x' -> 'X'?`` hints follow for close matches.
    """
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


def scalar_options(arrays: dict, keys, filename: str) -> dict:
    """Take the option scalars out of an ``.npz``'s arrays (removing them from ``arrays``).

    Parameters
    ----------
    arrays : dict of str to numpy.ndarray
        The archive's arrays; the option keys found are popped.
    keys : iterable of str
        The option names the model accepts.
    filename : str
        The file's name, for the message.

    Returns
    -------
    dict
        Option name -> Python scalar.

    Raises
    ------
    ValueError
        When an option is not a 0-d array.
    """
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


def check_array_dtype(value, key: str, filename: str) -> None:
    """Refuse string and object arrays where numbers are expected.

    Parameters
    ----------
    value : numpy.ndarray
        The array.
    key : str
        Its name in the file.
    filename : str
        The file's name, for the message.

    Raises
    ------
    TypeError
        When ``value`` holds strings or objects.
    """
    if value.dtype.kind in "USO":
        raise TypeError(
            f"{filename}: {key!r} must be numeric, got {value.dtype} values such as "
            f"{value.ravel()[:1].tolist()}. Convert it with np.asarray(..., dtype=float)."
        )

"""Units of a batch: a folder of data files, or one table with a ``unit`` column.

A unit is one independent fit (a subject, a session, a neuron). :func:`discover_units` turns
what the user points at into ``{name: UnitSource}``; a source loads its data dict lazily, on
the worker that fits it, so large files never travel through the scheduler.

Examples
--------
>>> import pandas as pd, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> pd.DataFrame({"unit": ["a", "a", "b"], "y": [1.0, 2.0, 3.0]}).to_csv(folder / "t.csv")
>>> units = discover_units(folder / "t.csv")
>>> sorted(units), units["b"].load()["y"].tolist()
(['a', 'b'], [3.0])
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["DATA_SUFFIXES", "UnitSource", "discover_units", "load_data_file", "unit_seed"]

#: File types a unit may be stored in.
DATA_SUFFIXES = (".npz", ".csv", ".nc")

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def unit_seed(random_seed: int, unit: str) -> int:
    """The random seed a batch gives ``unit``: a function of the batch seed and the unit name.

    The same (random_seed, unit) always gives the same seed, whatever the order, worker or rerun, so
    a batch reproduces a plain loop ``fit(data, random_seed=unit_seed(random_seed, name))``.

    Parameters
    ----------
    random_seed : int
        The batch seed.
    unit : str
        The unit's name.

    Returns
    -------
    int
        A 32-bit seed.

    Examples
    --------
    >>> unit_seed(0, "s01") == unit_seed(0, "s01") != unit_seed(1, "s01")
    True
    """
    sequence = np.random.SeedSequence(
        entropy=int(random_seed), spawn_key=(zlib.crc32(unit.encode()),)
    )
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def _array_dict_from_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as archive:
        out = {}
        for key in archive.files:
            value = archive[key]
            # Scalars (formula strings, K_max, ...) come back as 0-d arrays: unwrap them.
            out[key] = value.item() if value.ndim == 0 else value
    return out


def load_data_file(path) -> dict:
    """Read one unit's data file into a dict: ``.npz`` arrays, ``.csv`` columns, ``.nc`` vars.

    ``.npz`` files are read without pickles; 0-d entries become Python scalars.

    Parameters
    ----------
    path : path-like
        A ``.npz``, ``.csv`` or ``.nc`` file.

    Returns
    -------
    dict
        Named arrays (and scalars).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "s01.npz"
    >>> np.savez(path, y=np.arange(3.0), K_max=4)
    >>> data = load_data_file(path)
    >>> data["y"].tolist(), data["K_max"]
    ([0.0, 1.0, 2.0], 4)
    """
    path = Path(path)
    if path.suffix == ".npz":
        return _array_dict_from_npz(path)
    if path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path)
        return {str(c): frame[c].to_numpy() for c in frame.columns}
    if path.suffix == ".nc":
        import xarray as xr

        with xr.open_dataset(path) as ds:
            out = {name: ds[name].values for name in ds.data_vars}
            out.update({k: v for k, v in ds.attrs.items()})
        return out
    raise ValueError(
        f"Cannot read unit data from {path.name}: expected one of {DATA_SUFFIXES}. "
        "Convert the file, or pass a table with a 'unit' column."
    )


@dataclass(frozen=True)
class UnitSource:
    """Where one unit's data comes from: a file (``path``) or in-memory columns (``data``).

    Parameters
    ----------
    name : str
        The unit's name.
    path : pathlib.Path, optional
        Its data file.
    data : dict, optional
        Its data in memory (when there is no file).

    Examples
    --------
    >>> UnitSource("s01", data={"y": [1.0]}).load()
    {'y': [1.0]}
    """

    name: str
    path: Path | None = None
    data: dict | None = field(default=None, compare=False, repr=False)

    def load(self) -> dict:
        """The unit's data as a fresh dict (callers may modify it).

        Returns
        -------
        dict
            Named arrays of the unit.

        Examples
        --------
        >>> source = UnitSource("s01", data={"y": [1.0]})
        >>> data = source.load()
        >>> data["y"] = []  # a fresh dict: the source keeps its data
        >>> source.load()
        {'y': [1.0]}
        """
        if self.path is not None:
            return load_data_file(self.path)
        return dict(self.data or {})


def _check_name(name: str) -> str:
    name = str(name)
    if not _SAFE_NAME.match(name):
        raise ValueError(
            f"Unit name {name!r} cannot be a file name: use letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return name


def _from_table(frame, unit_column: str) -> dict[str, UnitSource]:
    if unit_column not in frame.columns:
        raise ValueError(
            f"A table of units needs a {unit_column!r} column naming each row's unit; the "
            f"table has columns {list(frame.columns)}."
        )
    units = {}
    for name, rows in frame.groupby(unit_column, sort=True):
        rows = rows.drop(columns=[unit_column])
        data = {str(c): rows[c].to_numpy() for c in rows.columns}
        units[_check_name(name)] = UnitSource(_check_name(name), data=data)
    return units


def discover_units(source, *, unit_column: str = "unit") -> dict[str, UnitSource]:
    """Units from a folder of data files (one unit per file, named by its stem), a table file
    (``.csv`` or ``.parquet`` with a ``unit`` column), a pandas DataFrame with that column, or
    a mapping ``{name: data dict}``.

    Parameters
    ----------
    source : path-like, pandas.DataFrame or dict
        A folder of files, a table file or DataFrame with a unit column, or ``{name: data}``.
    unit_column : str, default "unit"
        Column naming the unit in a table.

    Returns
    -------
    dict
        ``{unit name: UnitSource}``.

    Raises
    ------
    ValueError
        When the folder holds no data files, a table lacks the unit column, or two files
        share a stem.

    Examples
    --------
    >>> sorted(discover_units({"s01": {"y": [1.0]}, "s02": {"y": [2.0]}}))
    ['s01', 's02']
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _from_table(source, unit_column)
    if isinstance(source, dict):
        return {_check_name(k): UnitSource(_check_name(k), data=dict(v)) for k, v in source.items()}
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"No data folder or table at {path}.")
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in DATA_SUFFIXES and p.is_file())
        if not files:
            raise ValueError(
                f"{path} holds no unit data files ({', '.join(DATA_SUFFIXES)}); put one file "
                "per unit there, or pass a table with a 'unit' column."
            )
        units = {}
        for file in files:
            name = _check_name(file.stem)
            if name in units:
                raise ValueError(f"Two files in {path} give unit {name!r}: rename one.")
            units[name] = UnitSource(name, path=file)
        return units
    if path.suffix == ".csv":
        return _from_table(pd.read_csv(path), unit_column)
    if path.suffix == ".parquet":
        return _from_table(pd.read_parquet(path), unit_column)
    raise ValueError(
        f"{path.name} is neither a folder of unit files nor a .csv/.parquet table with a "
        f"{unit_column!r} column."
    )

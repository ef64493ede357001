"""Many fits: one GUM per level of a column (``y|subject ~ ...``) and population averages.

``gum("choice|subject ~ w(position) * f(angle)", data)`` returns a :class:`GumCollection`
with one independent :class:`~pmctx.gum.api.GumModel` per subject (per neuron, per session),
all with the same formula. :meth:`GumCollection.population_average` combines a function
across levels weighted by posterior precision (the authors' toolbox's population average):
at every input, ``mean = sum_s m_s / v_s / sum_s 1 / v_s`` and ``sd = (sum_s 1 / v_s)^-1/2``
from each level's posterior mean ``m_s`` and variance ``v_s``.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 120), "subject": np.repeat(["s1", "s2", "s3"], 40)}
>>> data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"])))
>>> fits = gum("y|subject ~ f(x, max_points=10)", data, family="poisson")
>>> list(fits), type(fits["s1"]).__name__
(['s1', 's2', 's3'], 'GumModel')
>>> avg = fits.population_average("f_x", np.linspace(0, 2, 5), draws=200)
>>> list(avg.columns)
['x', 'mean', 'sd']
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["GumCollection", "split_rows"]


def split_rows(columns: dict, by: str) -> dict:
    """``{level: columns restricted to that level's rows}`` (levels in sorted order).

    Parameters
    ----------
    columns : dict
        Data columns.
    by : str
        The split column.

    Returns
    -------
    dict
        ``{level: {column: rows of that level}}``; the split column and scalars are dropped.

    Examples
    --------
    >>> parts = split_rows({"g": np.array(["b", "a", "b"]), "y": np.arange(3)}, "g")
    >>> {level: cols["y"].tolist() for level, cols in parts.items()}
    {'a': [1], 'b': [0, 2]}
    """
    if by not in columns:
        raise ValueError(f"Split column {by!r} is not in the data; it has {sorted(columns)}.")
    key = np.asarray(columns[by])
    n = key.shape[0]
    out = {}
    for level in np.unique(key.astype(str)):
        rows = key.astype(str) == level
        out[str(level)] = {
            name: np.asarray(values)[rows]
            for name, values in columns.items()
            if name != by and np.ndim(values) >= 1 and np.shape(values)[0] == n
        }
    return out


class GumCollection(Mapping):
    """One :class:`~pmctx.gum.api.GumModel` per level of a split column (a read-only dict).

    Parameters
    ----------
    models : dict
        ``{level: GumModel}``.
    by : str
        Name of the split column.
    """

    def __init__(self, models: dict, by: str):
        self.models, self.by = dict(models), by

    def __getitem__(self, level):
        return self.models[level]

    def __iter__(self):
        return iter(self.models)

    def __len__(self):
        return len(self.models)

    def laplace(self, **kwargs) -> dict:
        """``{level: DataTree}`` of every level's Laplace posterior.

        Parameters
        ----------
        **kwargs
            Passed to :meth:`GumModel.laplace`.

        Returns
        -------
        dict
            ``{level: DataTree}``.
        """
        return {level: g.laplace(**kwargs) for level, g in self.models.items()}

    def sample(self, **kwargs) -> dict:
        """``{level: DataTree}`` of NUTS fits, one per level.

        Parameters
        ----------
        **kwargs
            Passed to :meth:`GumModel.sample`.

        Returns
        -------
        dict
            ``{level: DataTree}``.
        """
        return {level: g.sample(**kwargs) for level, g in self.models.items()}

    def fit_evidence(self, **kwargs) -> dict:
        """Evidence-fitted hyperparameters of every level (:func:`pmctx.gum.hyper.fit_evidence`).

        Parameters
        ----------
        **kwargs
            Passed to :func:`pmctx.gum.hyper.fit_evidence`.

        Returns
        -------
        dict
            ``{level: fitted hyperparameters}``.
        """
        from pmctx.gum.hyper import fit_evidence

        return {level: fit_evidence(g, **kwargs) for level, g in self.models.items()}

    def log_evidence(self) -> pd.Series:
        """Laplace log evidence per level (and their sum: independent levels).

        Returns
        -------
        pandas.Series
            ``log_evidence`` indexed by level.
        """
        values = {
            level: (g.laplace_result or g.fit_laplace()).log_evidence
            for level, g in self.models.items()
        }
        return pd.Series(values, name="log_evidence")

    def function_table(self, name: str, x, idatas: dict | None = None, *, draws=1000):
        """Posterior mean and sd of function ``name`` at inputs ``x`` for every level.

        Parameters
        ----------
        name : str
            A function name.
        x : array_like
            Inputs.
        idatas : dict, optional
            ``{level: DataTree}`` (default: Laplace draws per level).
        draws : int, default 1000
            Laplace draws when ``idatas`` is None.

        Returns
        -------
        pandas.DataFrame
            Columns ``level``, ``x``, ``mean``, ``sd``.
        """
        x = np.asarray(x, dtype=float)
        rows = []
        for level, g in self.models.items():
            idata = None if idatas is None else idatas[level]
            values = g.function_values(name, x, idata, draws=draws)
            values = values.reshape(-1, x.size)
            rows.append(
                pd.DataFrame({"level": level, "x": x, "mean": values.mean(0), "sd": values.std(0)})
            )
        return pd.concat(rows, ignore_index=True)

    def population_average(self, name: str, x, idatas: dict | None = None, *, draws=1000):
        """Precision-weighted average of function ``name`` across levels at inputs ``x``.

        Parameters
        ----------
        name : str
            A function name.
        x : array_like
            Inputs.
        idatas : dict, optional
            ``{level: DataTree}`` (default: Laplace draws per level).
        draws : int, default 1000
            Laplace draws when ``idatas`` is None.

        Returns
        -------
        pandas.DataFrame with columns ``x``, ``mean``, ``sd``.
        """
        table = self.function_table(name, x, idatas, draws=draws)
        precision = 1.0 / np.maximum(table["sd"].to_numpy(), 1e-12) ** 2
        table = table.assign(precision=precision, weighted=precision * table["mean"])
        grouped = table.groupby("x", sort=True)[["precision", "weighted"]].sum()
        return pd.DataFrame(
            {
                "x": grouped.index.to_numpy(),
                "mean": (grouped["weighted"] / grouped["precision"]).to_numpy(),
                "sd": (1.0 / np.sqrt(grouped["precision"])).to_numpy(),
            }
        )

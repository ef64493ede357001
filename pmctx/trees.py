"""Results as ArviZ 1 results trees: the one conversion at pmctx's public boundary.

Every pmctx fit returns an :class:`xarray.DataTree` with ArviZ's group names (``posterior``,
``sample_stats``, ``log_likelihood``, ...), the results object of ArviZ 1 and PyMC 6.
Functions that take a fit call :func:`as_datatree` once, so a fit made with ArviZ 0.x
(``arviz.InferenceData``, or anything else with its ``groups()`` method) is still accepted.

Examples
--------
>>> import numpy as np, xarray as xr
>>> class OldFit:  # an ArviZ 0.x InferenceData, as far as pmctx reads one
...     def groups(self):
...         return ["posterior"]
...     posterior = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 3)))})
>>> sorted(as_datatree(OldFit()).children)
['posterior']
"""

from __future__ import annotations

import xarray as xr

__all__ = ["as_datatree", "set_group"]


def as_datatree(fit, *, name: str = "idata") -> xr.DataTree:
    """``fit`` as an :class:`xarray.DataTree`: returned as is when it is one, converted once
    when it is an ArviZ 0.x ``InferenceData``.

    Parameters
    ----------
    fit : xarray.DataTree or arviz.InferenceData
        A fit.
    name : str
        The argument's name, for the error message.

    Returns
    -------
    xarray.DataTree
        Groups as children, named as ArviZ names them.

    Raises
    ------
    TypeError
        When ``fit`` is neither.
    """
    if isinstance(fit, xr.DataTree):
        return fit
    groups = getattr(fit, "groups", None)
    if callable(groups):  # ArviZ 0.x InferenceData: groups() is a method there
        return xr.DataTree.from_dict({group: getattr(fit, group) for group in groups()})
    raise TypeError(
        f"{name} must be a fit: an xarray.DataTree (what pm.sample and pmctx return) or an "
        f"ArviZ 0.x InferenceData, got {type(fit).__name__}. Pass the result of a fit, or "
        f"build one with arviz.from_dict({{'posterior': {{...}}}})."
    )


def set_group(tree: xr.DataTree, group: str, data) -> xr.DataTree:
    """Put ``data`` (a Dataset, or a mapping of names to DataArrays) in ``tree`` as ``group``,
    replacing any group of that name, in place.

    Parameters
    ----------
    tree : xarray.DataTree
        A fit.
    group : str
        The group's name, e.g. ``"log_likelihood"``.
    data : xarray.Dataset or mapping of str to xarray.DataArray
        Its variables.

    Returns
    -------
    xarray.DataTree
        ``tree``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": ("draw", np.zeros(2))})})
    >>> sorted(set_group(tree, "log_likelihood", {"y": xr.DataArray(np.zeros(2))}).children)
    ['log_likelihood', 'posterior']
    """
    if group in tree.children:
        del tree[group]
    tree[group] = data if isinstance(data, xr.Dataset) else xr.Dataset(dict(data))
    return tree

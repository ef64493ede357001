"""Progress bars for pmctx's long loops outside ``pm.sample``.

Uses ``rich`` (already a PyMC dependency). Bars switch off when output is not a terminal or
when ``PMCTX_QUICK``/``PMCTX_NO_PROGRESS`` is set, so tests and notebooks stay quiet.

Where it is used: the batch engine (:func:`pmctx.batch.engine.run_batch`) shows one bar over
the units of a batch, in the local loop and over Dask's ``as_completed``; that is the one loop
that runs for minutes to hours with nothing else reporting. The other long computations
report through ``pm.sample``'s own bar (every fit, every K-fold refit of :mod:`pmctx.kfold`,
every fit of an SBC run), and the sampling contract's ``progressbar`` argument
(:func:`pmctx.sampling.check_sample_kwargs`) follows :func:`progress_enabled`, so one rule
decides both. A particle filter over a few hundred trials takes seconds and runs inside fits
and batches that already show a bar, so it gets none (nested bars would only flicker).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

__all__ = ["progress", "progress_enabled"]


def progress_enabled(disable: bool | None = None) -> bool:
    """Whether a progress bar should be shown (``disable`` overrides the automatic choice).

    Parameters
    ----------
    disable : bool, optional
        ``True``/``False`` force the bar off/on; ``None`` (default) shows it only when
        standard error is a terminal and neither ``PMCTX_QUICK`` nor ``PMCTX_NO_PROGRESS``
        is set.

    Returns
    -------
    bool
        Whether to show a bar.

    Examples
    --------
    >>> progress_enabled(disable=True), progress_enabled(disable=False)
    (False, True)
    """
    if disable is not None:
        return not disable
    if os.environ.get("PMCTX_QUICK") or os.environ.get("PMCTX_NO_PROGRESS"):
        return False
    return sys.stderr.isatty()


def progress(
    iterable: Iterable,
    *,
    total: int | None = None,
    description: str = "",
    disable: bool | None = None,
) -> Iterator:
    """Iterate over ``iterable`` with a progress bar when one is wanted.

    Parameters
    ----------
    iterable : iterable
        What to loop over.
    total : int, optional
        Number of items, for iterables without ``len`` (such as ``as_completed``).
    description : str, default ""
        Label shown next to the bar.
    disable : bool, optional
        As in :func:`progress_enabled`.

    Yields
    ------
    object
        The items of ``iterable``, unchanged.

    Examples
    --------
    >>> sum(progress(range(3), description="sweeps", disable=True))
    3
    """
    if not progress_enabled(disable):
        yield from iterable
        return
    from rich.progress import track

    yield from track(iterable, total=total, description=description or "working")

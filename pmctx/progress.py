"""Progress bars for pmctx's long loops (particle filters, custom samplers, fits).

Uses ``rich`` (already a PyMC dependency). Bars switch off when output is not a terminal or
when ``PMCTX_QUICK``/``PMCTX_NO_PROGRESS`` is set, so tests and notebooks stay quiet.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

__all__ = ["progress", "progress_enabled"]


def progress_enabled(disable: bool | None = None) -> bool:
    """Whether a progress bar should be shown (``disable`` overrides the automatic choice)."""
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

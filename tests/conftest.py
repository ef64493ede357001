"""Shared test configuration: headless plots, quiet progress bars, the ``slow`` marker."""

import json
import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("PMCTX_NO_PROGRESS", "1")

import pmctx  # noqa: F401

_DURATIONS = Path(__file__).with_name("durations.json")
_UNKNOWN_TEST_SECONDS = 0.5  # a test file the durations file does not know yet


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: order only what will run
def pytest_collection_modifyitems(config, items):
    """Longest test files first, from ``tests/durations.json`` (``make durations``).

    pytest-xdist's ``--dist loadfile`` hands each worker one file at a time in collection
    order (``make`` passes ``--no-loadscope-reorder``, which keeps this order instead of
    sorting files by their number of tests): when the longest files start first, the last
    files to finish are short and the two workers end together. Tests keep their order
    within a file; the set of tests is unchanged.
    """
    try:
        durations = json.loads(_DURATIONS.read_text())
    except (OSError, ValueError):
        return
    expected: dict[str, float] = {}  # per file, in the order files first appear
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        seconds, count = durations.get(
            "slow" if item.get_closest_marker("slow") else "fast", {}
        ).get(path, (_UNKNOWN_TEST_SECONDS, 1))
        expected[path] = expected.get(path, 0.0) + seconds / max(count, 1)
    rank = {path: k for k, path in enumerate(sorted(expected, key=lambda p: -expected[p]))}
    items.sort(key=lambda it: rank[it.nodeid.split("::", 1)[0]])  # stable: in-file order kept

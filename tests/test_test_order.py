"""The order in which the tests hand files to pytest-xdist (tests/conftest.py)."""

import json

import pytest

from tests import conftest


class _Item:
    def __init__(self, nodeid, slow=False):
        self.nodeid = nodeid
        self._slow = slow

    def get_closest_marker(self, name):
        return object() if name == "slow" and self._slow else None


def test_longest_files_come_first_and_tests_keep_their_order_within_a_file(tmp_path, monkeypatch):
    durations = {
        "fast": {"tests/a.py": [1.0, 2], "tests/b.py": [9.0, 3]},
        "slow": {"tests/a.py": [40.0, 1]},
    }
    path = tmp_path / "durations.json"
    path.write_text(json.dumps(durations))
    monkeypatch.setattr(conftest, "_DURATIONS", path)
    items = [
        _Item("tests/a.py::t1"),
        _Item("tests/a.py::t2"),
        _Item("tests/b.py::t1"),
        _Item("tests/b.py::t2"),
        _Item("tests/new.py::t1"),  # unknown: 0.5 s per test
    ]
    before = {it.nodeid for it in items}
    conftest.pytest_collection_modifyitems(None, items)
    # fast suite: b (9 s) before a (1 s) before new (0.5 s)
    assert [it.nodeid for it in items] == [
        "tests/b.py::t1", "tests/b.py::t2", "tests/a.py::t1", "tests/a.py::t2", "tests/new.py::t1"
    ]  # fmt: skip
    assert {it.nodeid for it in items} == before
    # slow suite: a's one slow test (40 s) outranks b's fast ones
    items = [_Item("tests/b.py::t1"), _Item("tests/a.py::slow", slow=True)]
    conftest.pytest_collection_modifyitems(None, items)
    assert [it.nodeid for it in items] == ["tests/a.py::slow", "tests/b.py::t1"]


def test_a_missing_durations_file_leaves_the_collection_order(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "_DURATIONS", tmp_path / "absent.json")
    items = [_Item("tests/z.py::t"), _Item("tests/a.py::t")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [it.nodeid for it in items] == ["tests/z.py::t", "tests/a.py::t"]


@pytest.mark.parametrize("suite", ["fast", "slow"])
def test_the_committed_durations_cover_most_test_files(suite):
    durations = json.loads(conftest._DURATIONS.read_text())[suite]
    assert len(durations) >= (100 if suite == "fast" else 40)
    assert all(seconds >= 0 and count >= 1 for seconds, count in durations.values())

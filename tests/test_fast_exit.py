"""pmctx._fast_exit: gc.freeze at exit, once per process, with an environment switch."""

import os
import subprocess
import sys

import pytest

from pmctx import _fast_exit

# Handlers run last-registered-first, so one registered before ``import pmctx`` runs after
# pmctx's and sees whether the heap was frozen; the cycle's __del__ runs only if the
# interpreter's final collection still visits it. Some interpreters start with objects
# already frozen (pyenv's 3.12.1: 375), so the count is compared with the one at start.
SCRIPT = """
import atexit, gc
at_start = gc.get_freeze_count()
atexit.register(lambda: print("frozen", gc.get_freeze_count() > at_start, flush=True))

class Node:
    def __del__(self):
        print("collected", flush=True)

node = Node()
node.self = node  # a reference cycle alive at exit
import pmctx
"""


def _run(**env):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return out.stdout.split("\n")


@pytest.mark.parametrize(("switch", "frozen"), [("1", True), ("0", False)])
def test_exit_freezes_the_heap_unless_switched_off(switch, frozen):
    lines = _run(PMCTX_FAST_EXIT=switch)
    assert f"frozen {frozen}" in lines
    # what the switch trades: a cycle alive at exit is no longer collected (no __del__)
    assert ("collected" in lines) is not frozen


def test_install_registers_one_handler(monkeypatch):
    registered = []
    monkeypatch.setattr(_fast_exit.atexit, "register", registered.append)
    monkeypatch.setattr(_fast_exit, "_installed", False)
    monkeypatch.delenv(_fast_exit.SWITCH, raising=False)
    assert _fast_exit.install() and _fast_exit.install()
    assert registered == [_fast_exit.gc.freeze]
    monkeypatch.setenv(_fast_exit.SWITCH, "0")
    monkeypatch.setattr(_fast_exit, "_installed", False)
    assert not _fast_exit.install()
    assert registered == [_fast_exit.gc.freeze]

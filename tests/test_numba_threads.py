"""pmctx._numba_threads: chain processes fork safely after a threaded sweep in the parent."""

import os
import subprocess
import sys

import pytest

# A threaded (parallel=True) orientation-map pass in the parent, then a forked child that runs
# one too: what pm.sample does after reconstruct's first sweep of a map of 181 x 181 or more.
SCRIPT = """
import multiprocessing
import numpy as np
import pmctx
import numba
from pmctx.vonmises._numba_series_pass import column_pass

def threaded_pass():
    ext = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0]])
    rng = np.random.default_rng(0)
    column_pass(np.zeros((6, 4)), np.zeros((6, 4, 2)), ext, rng.random((6, 3)),
                rng.random((4, 6)), parallel=True)

threaded_pass()
print("layer", numba.threading_layer(), flush=True)
child = multiprocessing.get_context("fork").Process(target=threaded_pass)
child.start()
child.join(120)
print("child exit code", child.exitcode, flush=True)
"""


def _run(layer=None):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    if layer is not None:
        env["NUMBA_THREADING_LAYER"] = layer
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_a_forked_chain_process_runs_after_a_threaded_pass_in_the_parent():
    out = _run()
    assert out.returncode == 0, out.stderr[-3000:]
    assert "child exit code 0" in out.stdout, out.stdout + out.stderr[-3000:]
    assert "layer omp" not in out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="GNU OpenMP on Linux")
def test_gnu_openmp_kills_the_same_child():
    """The failure the fork-safe layer avoids, where Numba's OpenMP layer loads: the child is
    terminated ("fork() called from a process already using GNU OpenMP")."""
    out = _run("omp")
    if "layer omp" not in out.stdout:
        pytest.skip(f"Numba's omp layer is not available here: {out.stderr[-500:]}")
    assert "child exit code 0" not in out.stdout, out.stdout
    assert "GNU OpenMP" in out.stderr


def test_a_layer_the_user_chose_is_kept():
    code = (
        "import os, pmctx, numba; "
        "print(os.environ['NUMBA_THREADING_LAYER'], numba.config.THREADING_LAYER)"
    )
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.split() == ["workqueue", "workqueue"], out.stderr[-2000:]


def test_install_after_numba_started_its_threads_changes_nothing(monkeypatch):
    from numba.np.ufunc import parallel

    from pmctx import _numba_threads

    monkeypatch.delenv("NUMBA_THREADING_LAYER", raising=False)
    monkeypatch.setattr(parallel, "_is_initialized", True)
    assert _numba_threads.install() is None
    assert "NUMBA_THREADING_LAYER" not in os.environ

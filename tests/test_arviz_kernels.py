import os
import subprocess
import sys

CHECK = """
import numba
original = numba.vectorize
import pmctx
import arviz  # imports arviz.stats.ecdf_utils, which compiles _binom_pmf
from arviz.stats import ecdf_utils
import numpy as np
from scipy.stats import binom

assert numba.vectorize is original, "numba.vectorize was not restored"
k = np.arange(0, 12)
np.testing.assert_allclose(ecdf_utils._binom_pmf(k, 10, 0.3, 1), binom.pmf(k, 10, 0.3, loc=1))
"""


def _run(code, cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_arvizs_import_time_kernel_is_cached_on_disk_and_numba_is_left_as_it_was(tmp_path):
    _run(CHECK, tmp_path)
    cached = [p.name for p in tmp_path.rglob("*.nbi")]
    assert any(name.startswith("ecdf_utils._binom_pmf") for name in cached), cached
    _run(CHECK, tmp_path)  # the second process reads the kernel back and computes the same


def test_without_pmctx_arviz_caches_nothing(tmp_path):
    # The control: the cache entry above comes from pmctx's finder, not from ArviZ itself.
    _run(CHECK.replace("import pmctx\n", ""), tmp_path)
    assert not any(p.name.startswith("ecdf_utils") for p in tmp_path.rglob("*.nbi"))


# Replays the race of arviz-devs/arviz#2530 in one process: another process renames the shared
# temporary stamp file into place first, so this one's rename finds no file.
LOSE_THE_STAMP_RACE = """
import pathlib
real_replace = pathlib.Path.replace

def replace_after_another_process(self, target):
    if self.name == "daily_warning.tmp":
        real_replace(self, target)  # the other process's rename, of the same text
        return real_replace(self, target)  # ours: FileNotFoundError, as in the race
    return real_replace(self, target)

pathlib.Path.replace = replace_after_another_process
"""


def _import_after_losing_the_race(tmp_path, imports):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    code = LOSE_THE_STAMP_RACE + imports + "\nprint(arviz.__version__)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_an_import_that_loses_arvizs_stamp_race_is_run_again_and_passes(tmp_path):
    done = _import_after_losing_the_race(tmp_path, "import pmctx\nimport arviz")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "arviz" / "daily_warning").exists()
    # Control: the same lost race without pmctx's finder is the collection error CI hit.
    control = _import_after_losing_the_race(tmp_path / "control", "import arviz")
    assert control.returncode != 0
    assert "FileNotFoundError" in control.stderr and "daily_warning" in control.stderr

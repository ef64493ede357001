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

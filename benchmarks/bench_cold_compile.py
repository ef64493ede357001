"""What a fresh machine compiles before its first fits: PyTensor C modules and pmctx's kernels.

Two rows per part, each measured in fresh processes with empty caches, in the same run:

* PyTensor: a fixed set of small graphs (elemwise compositions, reductions, indexing), one C
  module each, compiled from an empty compile directory with PyTensor's default
  (``PMCTX_PYTENSOR_PCH=0``) and with pmctx's precompiled ``Python.h``
  (:mod:`pmctx._pytensor_pch`); tests run g++ without ``-O3``
  (``cmodule__remove_gxx_opt``), as ``make test`` does, and a plain install with it.
* Numba: the first call of the IBP sweep kernel and of the CRP particle filter kernel from an
  empty Numba cache (no baseline switch: the loops that replaced broadcasting slice
  assignments are the code itself; before them: 16.5 and 10.9 s on this machine).

Run: ``python -m benchmarks cold_compile [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

PYTENSOR_SCRIPT = """
import json, sys, time
import pmctx
import numpy as np
import pytensor
import pytensor.tensor as pt

n = int(sys.argv[1])
x, y = pt.dvector("x"), pt.dmatrix("y")
graphs = []
for k in range(n):
    kind = k % 4
    if kind == 0:
        graphs.append(([x], pt.exp(x) * (k + 1) + pt.log1p(x ** 2)))
    elif kind == 1:
        graphs.append(([y], (pt.sqrt(y + k) * y).sum(axis=k % 2)))
    elif kind == 2:
        graphs.append(([x], pt.tanh(x[1:] - x[:-1]) ** (k % 3 + 1)))
    else:
        graphs.append(([y, x], pt.maximum(y, 0.0) @ x + k))
start = time.perf_counter()
for inputs, output in graphs:
    pytensor.function(inputs, output, mode="FAST_RUN")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "graphs": n}))
"""

NUMBA_SCRIPT = """
import json, time
import numpy as np
from pmctx.conditioning import particle_filter, shipped_design
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep

rng = np.random.default_rng(0)
F, X = rng.normal(size=(5, 2)), rng.integers(0, 2, size=(5, 4))
state = IBPState.from_arrays(np.zeros((5, 3)), np.zeros((3, 2)), np.zeros((3, 4)))
start = time.perf_counter()
gibbs_sweep(state, F, X, IBPHyper(), rng)
ibp = time.perf_counter() - start
start = time.perf_counter()
particle_filter(shipped_design("renewal_aba", n_acquisition=5, n_extinction=5),
                alpha=0.1, n_particles=200, random_seed=0)
crp = time.perf_counter() - start
print(json.dumps({"ibp_sweep": ibp, "crp_filter": crp}))
"""


def _run(script: str, args: list[str], env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, **env}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pytensor(n_graphs: int, switch: str, optimize: bool) -> dict:
    with tempfile.TemporaryDirectory() as compiledir:
        flags = f"base_compiledir={compiledir}"
        if not optimize:
            flags += ",cmodule__remove_gxx_opt=True"
        env = {"PYTENSOR_FLAGS": flags, "PMCTX_PYTENSOR_PCH": switch}
        _run(PYTENSOR_SCRIPT, ["1"], env)  # PyTensor's own helper modules, untimed
        return _run(PYTENSOR_SCRIPT, [str(n_graphs)], env)


def run(quick: bool = False) -> list[dict]:
    n_graphs = 8 if quick else 24
    rows = []
    for optimize in (False, True):
        label = "g++ -O3 (plain install)" if optimize else "g++ without -O3 (make test)"
        base = _pytensor(n_graphs, "0", optimize)
        for variant, result in (
            ("PyTensor default (PMCTX_PYTENSOR_PCH=0)", base),
            ("precompiled Python.h (pmctx default)", _pytensor(n_graphs, "1", optimize)),
        ):
            per_graph = result["seconds"] / n_graphs
            rows.append(
                {
                    "benchmark": "cold_compile",
                    "variant": variant,
                    "size": f"{n_graphs} graphs, empty compile dir, {label}",
                    "seconds_per_sweep": per_graph,
                    "sweeps_per_s": None,
                    "ess_per_s": None,
                    "baseline": "PyTensor default",
                    "ratio_vs_baseline": base["seconds"] / result["seconds"],
                    "notes": f"{result['seconds']:.1f} s for {n_graphs} graphs "
                    f"({per_graph:.2f} s per compiled function)",
                }
            )
    with tempfile.TemporaryDirectory() as cache:
        numba = _run(NUMBA_SCRIPT, [], {"NUMBA_CACHE_DIR": cache})
    for name, seconds in numba.items():
        rows.append(
            {
                "benchmark": "cold_compile",
                "variant": f"first call of the {name.replace('_', ' ')} kernel",
                "size": "empty Numba cache",
                "seconds_per_sweep": seconds,
                "sweeps_per_s": None,
                "ess_per_s": None,
                "baseline": None,
                "ratio_vs_baseline": None,
                "notes": f"{seconds:.1f} s compile and first call",
            }
        )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)

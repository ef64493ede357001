"""What a fresh machine compiles before its first fits: PyTensor's functions and pmctx's kernels.

Each part is measured in a fresh process with empty caches:

* PyTensor: a fixed set of small graphs (elemwise compositions, reductions, indexing, a matrix
  product) compiled from an empty compile directory in PyTensor's default mode (Numba on
  PyTensor 3, which compiles no C module and needs no BLAS library).
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
    pytensor.function(inputs, output)
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


def _pytensor(n_graphs: int) -> dict:
    with tempfile.TemporaryDirectory() as compiledir:
        env = {"PYTENSOR_FLAGS": f"base_compiledir={compiledir}", "NUMBA_CACHE_DIR": compiledir}
        _run(PYTENSOR_SCRIPT, ["1"], env)  # PyTensor's own helpers, untimed
        return _run(PYTENSOR_SCRIPT, [str(n_graphs)], env)


def run(quick: bool = False) -> list[dict]:
    n_graphs = 8 if quick else 24
    result = _pytensor(n_graphs)
    per_graph = result["seconds"] / n_graphs
    rows = [
        {
            "benchmark": "cold_compile",
            "variant": "PyTensor default mode",
            "size": f"{n_graphs} graphs, empty compile dir",
            "seconds_per_sweep": per_graph,
            "sweeps_per_s": None,
            "ess_per_s": None,
            "baseline": None,
            "ratio_vs_baseline": None,
            "notes": f"{result['seconds']:.1f} s for {n_graphs} graphs "
            f"({per_graph:.2f} s per compiled function)",
        }
    ]
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

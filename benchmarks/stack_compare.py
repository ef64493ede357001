"""The headline figures of pmctx on one software stack, for the old-against-new stack table.

Run once per stack, in one sitting, each with its own tree and virtual environment::

    python -m benchmarks.stack_compare OUT.json          # from the tree being measured

It measures, in this process or fresh ones:

* IBP binary matrices: seconds per sweep of pmctx's generic binary-matrix Gibbs step against
  ``pm.BinaryGibbsMetropolis`` (``bench_binary_gibbs``, N = 100, K_max = 10, T = 36);
* CRP particle filter, M = 10,000 particles on the shipped renewal design (T = 200), best of 3;
* orientation map: one augmented column sweep of a 512 x 512 map, one thread, mean of 5;
* GUM ``g.sample()`` at N = 500 (seed 002 section 3.1): a fresh process from empty caches, and a
  process after the warm-up step (``bench_gum_first_call``);
* ``pmctx demo``: the whole demo in a fresh process (wall seconds).

``docs/benchmarks.md`` holds the table of both stacks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def ibp_rows() -> dict:
    from benchmarks import bench_binary_gibbs

    rows = bench_binary_gibbs.run(quick=True)[:2]
    return {
        "ibp_bgm_s_per_sweep": rows[0]["seconds_per_sweep"],
        "ibp_pmctx_s_per_sweep": rows[1]["seconds_per_sweep"],
        "ibp_ratio_vs_bgm": rows[0]["seconds_per_sweep"] / rows[1]["seconds_per_sweep"],
    }


def crp_row() -> dict:
    from benchmarks.bench_crp import _best_time
    from pmctx.conditioning import particle_filter, shipped_design

    design = shipped_design("renewal_aba", n_acquisition=80, n_extinction=80, n_test=40)
    particle_filter(design, n_particles=10, random_seed=0)  # compile or load the kernel
    seconds = _best_time(lambda: particle_filter(design, n_particles=10_000, random_seed=0), 3)
    return {"crp_filter_m10000_s": seconds}


def map_row() -> dict:
    from benchmarks import bench_vonmises_scale

    _, wall = bench_vonmises_scale.time_sweeps(512, 1, n_sweeps=5)
    return {"map_sweep_512_s": wall / 5}


def gum_rows() -> dict:
    from benchmarks import bench_gum_first_call

    rows = bench_gum_first_call.run(quick=True)
    by = {row["variant"]: row["process_s"] for row in rows}
    return {
        "gum_sample_fresh_process_s": by["fresh install, no warm-up"],
        "gum_sample_warm_process_s": by["warm cache, process 2"],
    }


def demo_row() -> dict:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pmctx", "demo", "--out", out],
            check=True, capture_output=True,
        )  # fmt: skip
        return {"make_demo_s": time.perf_counter() - start}


def main(path: str) -> dict:
    import numpy
    import pymc
    import pytensor

    result = {"pymc": pymc.__version__, "pytensor": pytensor.__version__,
              "numpy": numpy.__version__, "python": sys.version.split()[0]}  # fmt: skip
    for part in (ibp_rows, crp_row, map_row, gum_rows, demo_row):
        result.update(part())
        print(json.dumps(result), flush=True)
    Path(path).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "stack_compare.json")

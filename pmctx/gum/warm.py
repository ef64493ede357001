"""Fill the disk caches a first ``g.sample()`` reads, once, at install time.

A fresh install has empty caches: the first ``g.sample()`` of a process compiles PyTensor's
C and Numba code for every op of the GUM's graphs, the Numba code of the whitened model's
nutpie callbacks (:mod:`pmctx.gum.cached`, per structure and N) and pmctx's own Numba kernels
(``cache=True``), about half a minute. ``python -m pmctx.gum.warm`` (run by ``make`` after it
installs the environment) samples the seed 002 section 3.1 model (the one the docs and the
demo use) briefly, so that all of these are on disk before the first real call:

- the model itself (same formula, N and data) then reads everything from disk, its
  whitened model included (:mod:`pmctx.gum.recipes`);
- another data set of the same formula and N reads the callbacks' Numba code and compiles
  no graph code, only rewrites its graphs;
- any other GUM reuses the per-op code and pmctx's kernels, and compiles its own callbacks.

The caches live where PyTensor and Numba keep them (``pytensor.config.base_compiledir``,
``__pycache__``), so an interpreter with other flags or another user starts cold again.

Examples
--------
>>> from pmctx.gum.warm import warm
>>> rows = warm(n_values=(500,))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import time
import warnings

__all__ = ["main", "warm"]

#: Observation counts warmed by default: the docs' and the demo's N.
DEFAULT_N = (500,)


def warm(n_values=DEFAULT_N, *, max_points: int = 48, random_seed=0) -> list[dict]:
    """Sample the section 3.1 GUM briefly at each ``n`` so its compiled code is on disk.

    Parameters
    ----------
    n_values : sequence of int, default (500,)
        Observation counts (the callbacks' code is per N).
    max_points : int, default 48
        Support points per function (the formula's default).
    random_seed : int, default 0
        Seed of the data set (the docs' data set at 0) and of the short run.

    Returns
    -------
    list of dict
        Per ``n``: ``{"n": n, "seconds": wall time}``.

    Raises
    ------
    ValueError
        When an ``n`` is not an integer of at least 10.
    """
    for n in n_values:
        if isinstance(n, bool) or not isinstance(n, int) or n < 10:
            raise ValueError(
                f"warm needs observation counts of at least 10, got {n!r}; pass integers "
                "such as 500."
            )
    from pmctx.gum import gum
    from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1

    rows = []
    for n in n_values:
        start = time.perf_counter()
        data = seed_section_3_1(n, random_seed=random_seed)
        g = gum(section_3_1_formula(max_points=max_points), data, family="poisson")
        with warnings.catch_warnings():  # 2 x (50 + 50) draws do not converge: expected
            warnings.simplefilter("ignore")
            g.sample(draws=50, tune=50, chains=2, cores=1, backend="nutpie",
                     random_seed=random_seed, progressbar=False)  # fmt: skip
        rows.append({"n": int(n), "seconds": time.perf_counter() - start})
    return rows


def main(argv=None) -> int:
    """``python -m pmctx.gum.warm [--n N ...]``: :func:`warm`, one line per N.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: the command line).

    Returns
    -------
    int
        Exit status 0.
    """
    parser = argparse.ArgumentParser(
        prog="python -m pmctx.gum.warm",
        description="Sample the section 3.1 GUM briefly so its compiled code is on disk.",
    )
    parser.add_argument("--n", type=int, nargs="+", default=list(DEFAULT_N), help="N values")
    args = parser.parse_args(argv)
    for row in warm(args.n):
        print(f"pmctx.gum.warm: section 3.1 GUM at N={row['n']}: {row['seconds']:.1f} s")
    return 0


if __name__ == "__main__":  # importing the module (e.g. to document it) must not run it
    raise SystemExit(main())

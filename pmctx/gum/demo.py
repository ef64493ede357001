"""The GUM demo (seed 002 section 3.1) and the files a GUM fit writes.

:func:`write_outputs` writes the standard outputs of a fit (posterior, summary, diagnostics),
the function plot (:func:`pmctx.gum.plots.plot_functions`) and an info file; :func:`demo`
simulates the section 3.1 data (:mod:`pmctx.gum.synthetic`), fits it by Laplace with
evidence-fitted lengthscales and by NUTS, and writes both fits against the truth.

Examples
--------
>>> paths = demo("pmctx-demo", quick=True)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import arviz as az
import numpy as np

from pmctx.gum.api import gum
from pmctx.gum.hyper import fit_evidence
from pmctx.gum.plots import plot_functions
from pmctx.gum.synthetic import match_constraints, section_3_1_formula, seed_section_3_1
from pmctx.io import save_figure
from pmctx.sampling import demo_sections

__all__ = ["demo", "write_outputs"]


def write_outputs(idata, out_dir: Path, prefix: str = "gum", *, gum_model=None, truth=None,
                  extra=None, data=None) -> list[Path]:  # fmt: skip
    """Standard outputs (posterior, summary, diagnostics), the function plot when
    ``gum_model`` is given, and ``<prefix>_info.json`` from ``extra``.

    Parameters
    ----------
    idata : xarray.DataTree
        A GUM fit.
    out_dir : path-like
        Output folder.
    prefix : str, default "gum"
        File name prefix.
    gum_model : GumModel, optional
        The model, for the function plot.
    truth : dict, optional
        True function values by name, drawn in the plot.
    extra : dict, optional
        Written as ``<prefix>_info.json``.
    data : dict, optional
        The loaded data (:meth:`pmctx.registry.ModelSpec.fit_file` passes it); unused (the
        function plot needs ``gum_model``).

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = write_outputs(idata, "pmctx-out", gum_model=g)  # doctest: +SKIP
    """
    from pmctx.io import write_standard_outputs

    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    if gum_model is not None:
        fig = plot_functions(gum_model, idata, truth=truth)
        paths.append(save_figure(fig, out_dir / f"{prefix}_functions.png"))
    if extra:
        path = out_dir / f"{prefix}_info.json"
        path.write_text(json.dumps(extra, indent=2, default=float))
        paths.append(path)
    return paths


@demo_sections
def demo(out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list[Path]:
    """Seed section 3.1: Poisson ``f1(x1) f2(x2) + f3(x3)``, Laplace (+ evidence-fitted
    lengthscales) and, unless ``quick``, NUTS; recovered functions against the truth.

    Writes ``gum_laplace_*`` (posterior, summary, diagnostics, functions, info) and, unless
    ``quick``, ``gum_posterior.nc``, ``gum_summary.csv``, ``gum_diagnostics.csv`` (NUTS),
    ``gum_functions.png`` and ``gum_loo.csv``.
    """
    n = 200 if quick else 500
    data = seed_section_3_1(n, random_seed=random_seed)
    g = gum(section_3_1_formula(max_points=16 if quick else 32), data, family="poisson")
    start = time.perf_counter()
    hyper = fit_evidence(g)
    laplace = g.laplace(draws=1000, random_seed=random_seed)
    laplace_seconds = time.perf_counter() - start
    truth = match_constraints({k: fn.support for k, fn in g.design.functions.items()})
    errors = {
        k: float(np.sqrt(np.mean((g.function_summary(laplace, k)["mean"] - truth[k]) ** 2)))
        for k in g.function_names
    }
    info = {
        "n": n,
        "laplace_seconds": laplace_seconds,
        "log_evidence": hyper.objective,
        "hyperparameters": hyper.hyperparameters,
        "laplace_rmse": errors,
    }
    paths = write_outputs(laplace, out_dir, "gum_laplace", gum_model=g, truth=truth, extra=info)
    if not quick:
        nuts = g.sample(cores=cores, random_seed=random_seed)
        paths += write_outputs(nuts, out_dir, "gum", gum_model=g, truth=truth)
        path = Path(out_dir) / "gum_loo.csv"
        az.compare({"laplace": laplace, "nuts": nuts}).to_csv(path)
        paths.append(path)
    return paths

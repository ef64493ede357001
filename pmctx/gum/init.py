"""Initial values of a GUM's ``pm.Model`` at the Laplace mode, so default samplers converge.

Products of functions (``f1(x1) * f2(x2)``) have secondary modes: a sign-flipped or flat
factor whose offset the intercept absorbs. NUTS started at PyMC's default point (zeros, with
jitter) can settle in one of them for a whole run -- on seed 002 section 3.1 data one of
four chains stayed there (R-hat 1.5 on ``f_x1``), with PyMC's NUTS and nutpie alike. The
multi-start Newton search of :func:`pmctx.gum.laplace.laplace_fit` finds the main mode;
pass it as ``initvals`` (``GumModel.sample`` does):

    with g.model:
        idata = pm.sample(chains=4, initvals=laplace_initvals(g))

:func:`set_laplace_initvals` stores it on the model instead (``model.set_initval``), which
every back end then starts from (nutpie's ``compile_pymc_model`` included) -- but PyMC cannot
convert a model with initial values to a graph, so ``log_likelihood=True`` and ``pm.do``
fail on such a model; that is why ``GumModel.model`` does not call it.

Examples
--------
>>> from pmctx.gum import gum
>>> from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
>>> g = gum(section_3_1_formula(max_points=8), seed_section_3_1(60), family="poisson")
>>> start = laplace_initvals(g)
>>> sorted(start)
['f_x1_z', 'f_x2_z', 'f_x3_z', 'intercept_z']
"""

from __future__ import annotations

import numpy as np

__all__ = ["laplace_initvals", "set_laplace_initvals"]


def laplace_initvals(gum_model) -> dict | None:
    """``{value name: array}`` at the Laplace mode, or None when Laplace does not apply.

    Gaussian responses with a sampled noise sd have no fixed-noise Laplace fit, and a
    Newton search that fails leaves no usable mode; such models keep PyMC's default start.
    """
    design = gum_model.design
    if design.family == "gaussian" and design.noise_sd is None:
        return None
    try:
        result = gum_model.laplace_result or gum_model.fit_laplace()
    except (ValueError, np.linalg.LinAlgError, FloatingPointError):
        return None  # no usable mode: the sampler keeps PyMC's default start
    if not np.all(np.isfinite(result.u_map)):
        return None
    return gum_model.map_point(result.u_map)


def set_laplace_initvals(gum_model, model) -> None:
    """Set ``model``'s initial values to the Laplace mode of ``gum_model`` (in place)."""
    point = laplace_initvals(gum_model)
    if point is None:
        return
    for name, value in point.items():
        if name in model.named_vars:
            model.set_initval(model[name], np.asarray(value, dtype=np.float64))

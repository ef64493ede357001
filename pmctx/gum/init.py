"""Initial values of a GUM's ``pm.Model`` at the Laplace mode, so default samplers converge.

Products of functions (``f1(x1) * f2(x2)``) have secondary modes: a sign-flipped or flat
factor whose offset the intercept absorbs. NUTS started at PyMC's default point (zeros, with
jitter) can settle in one of them for a whole run -- on seed 002 section 3.1 data one of
four chains stayed there (R-hat 1.5 on ``f_x1``), with PyMC's NUTS and nutpie alike. The
multi-start Newton search of :func:`pmctx.gum.laplace.laplace_fit` finds the main mode;
:func:`set_laplace_initvals` stores it as the model's initial values
(``model.set_initval``), which ``pm.sample()`` (also with ``nuts_sampler="numpyro"``) and
``nutpie.compile_pymc_model`` start from.

Examples
--------
>>> from pmctx.gum import gum
>>> from pmctx.gum.synthetic import section_3_1_formula, seed_section_3_1
>>> g = gum(section_3_1_formula(max_points=8), seed_section_3_1(60), family="poisson")
>>> point = g.model.initial_point()  # GumModel.model calls set_laplace_initvals
>>> bool(abs(point["f_x1_z"] - g.laplace_result.u_map[g.design.slices["f_x1"]]).max() < 1e-9)
True
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

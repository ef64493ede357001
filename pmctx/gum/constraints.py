"""Identifiability constraints (seed 002, Appendix A) as projections onto free subspaces.

A linear constraint ``a^T theta = l`` on a function's parameter values ``theta`` (its values
at the support points, or its weights) is imposed by writing
``theta = theta0 + P^T theta_free`` with ``P`` an orthonormal basis of the complement of ``a``
and ``theta0 = a l / |a|^2``; the prior of the free part is ``N(P mu, P K P^T)`` (Appendix A).

Constraints: ``free``; ``first-zero`` (value at the first support point, the smallest input, is
0); ``mean-zero`` (mean over the support points is 0); ``mean-one`` (mean is 1, i.e. mean-zero
with the offset 1 absorbed); ``sum-one`` (values sum to 1; the seed's text writes the sum as
``V_k``, which would duplicate mean-one).

Default rule -- decided by the model's structure, not by the order the formula is written in
(``pmctx.gum.terms.canonical_order`` sorts every sum and product first, so ``w(p) * f(x)`` and
``f(x) * w(p)`` are one and the same model, with the same evidence and predictions):

* in a product block, **one factor keeps the free scale and every other factor has mean one**.
  The free factor is a function of values with a natural zero (a GP, linear or fixed term:
  the sign of ``f(angle)`` is the evidence it carries and its mean may be near zero, where a
  mean-one constraint would be ill-posed) rather than a weight vector over levels or positions
  (categorical ``w``: gets mean one, so it reads as relative weights); among factors of the
  same kind, the one whose function name sorts first. The authors' toolbox instead frees the
  *first-written* factor (ERRATA), which makes the evidence depend on the writing order.
* within a factor (a sum) the first function in that order carries the factor's constraint and
  the others are mean-zero;
* in additive blocks (one factor) every function is mean-zero when the model has an intercept.

Linear weights are never shifted, so they stay free in additive positions. A factor holding a
:class:`~pmctx.gum.terms.Fixed` function has no constraint (Appendix A). Offsets ``c_ij``
follow Appendix A when a factor has only zero-type constraints (first-zero/mean-zero): free for
the first factor, fixed to 1 for later factors, absent in additive blocks that an intercept
already shifts. Override the rule per function with ``constraint=`` (``GP("x",
constraint="mean-one")`` or ``f(x, constraint='mean-one')`` in a formula).

Examples
--------
>>> from pmctx.gum.constraints import projection
>>> P, theta0 = projection("mean-one", 3)
>>> P.shape, theta0.tolist()
((2, 3), [1.0, 1.0, 1.0])
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pmctx.gum.terms import Fixed, Linear

__all__ = ["projection", "resolve_constraints"]


@lru_cache(maxsize=64)
def _helmert(m: int) -> np.ndarray:
    """Seed's mean-zero basis: row r is (1,...,1,-r, 0...)/sqrt(r(r+1))."""
    P = np.zeros((m - 1, m))
    for r in range(1, m):
        P[r - 1, :r] = 1.0 / np.sqrt(r * (r + 1))
        P[r - 1, r] = -r / np.sqrt(r * (r + 1))
    return P


def projection(kind: str, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal free-subspace basis ``P`` (d x m) and offset ``theta0`` (m,) of a constraint.

    Parameters
    ----------
    kind : str
        One of ``free``, ``first-zero``, ``mean-zero``, ``mean-one``, ``sum-one``.
    m : int
        Number of parameter values.

    Returns
    -------
    P : numpy.ndarray (d, m)
        Orthonormal basis of the free subspace.
    theta0 : numpy.ndarray (m,)
        Offset: parameters are ``theta0 + z @ P``.

    Examples
    --------
    >>> P, theta0 = projection("mean-zero", 3)
    >>> P.shape, bool(np.allclose(P.sum(axis=1), 0.0))
    ((2, 3), True)
    """
    if kind == "free":
        return np.eye(m), np.zeros(m)
    if kind == "first-zero":
        return np.eye(m)[1:], np.zeros(m)
    if kind in ("mean-zero", "mean-one", "sum-one"):
        level = {"mean-zero": 0.0, "mean-one": 1.0, "sum-one": 1.0 / m}[kind]
        return _helmert(m).copy(), np.full(m, level)
    raise ValueError(f"Unknown constraint {kind!r}.")


def _zero_type(kind: str) -> bool:
    return kind in ("first-zero", "mean-zero")


def _free_factor(block, user: dict) -> int:
    """Index of the factor that keeps the free scale: one the user declared free, else the
    first (in canonical order) whose leading function has no user constraint."""
    leading = [factor[0] for factor in block]
    for j, leaf in enumerate(leading):
        if user.get(leaf.name) == "free":
            return j
    for j, leaf in enumerate(leading):
        if leaf.name not in user and leaf.has_parameters:
            return j
    return 0


def resolve_constraints(blocks, intercept: bool) -> tuple[dict[str, str], dict]:
    """Apply the default rule to every leaf without a user constraint.

    Parameters
    ----------
    blocks : list
        Product blocks of the expanded formula (lists of factors of leaf terms).
    intercept : bool
        Whether the model has an intercept.

    Returns
    -------
    constraints : dict of function name to constraint
    offsets : dict of (block, factor) to ``"free"`` or a fixed float (absent: no offset)
    """
    constraints: dict[str, str] = {
        leaf.name: leaf.constraint
        for block in blocks
        for factor in block
        for leaf in factor
        if leaf.constraint is not None
    }
    additive_free_used = intercept
    for block in blocks:
        free_factor = _free_factor(block, constraints)
        for j, factor in enumerate(block):
            has_fixed = any(isinstance(leaf, Fixed) for leaf in factor)
            for position, leaf in enumerate(factor):
                if leaf.name in constraints or not leaf.has_parameters:
                    continue
                if has_fixed:
                    constraints[leaf.name] = "free"
                elif len(block) == 1:
                    if isinstance(leaf, Linear) or not additive_free_used:
                        constraints[leaf.name] = "free"
                        additive_free_used = additive_free_used or not isinstance(leaf, Linear)
                    else:
                        constraints[leaf.name] = "mean-zero"
                elif position > 0:
                    constraints[leaf.name] = "free" if isinstance(leaf, Linear) else "mean-zero"
                else:
                    constraints[leaf.name] = "free" if j == free_factor else "mean-one"
    offsets: dict = {}
    for i, block in enumerate(blocks):
        for j, factor in enumerate(block):
            if any(isinstance(leaf, Fixed) for leaf in factor):
                continue
            kinds = [constraints[leaf.name] for leaf in factor]
            if all(_zero_type(kind) for kind in kinds):
                if j > 0:
                    offsets[(i, j)] = 1.0
                elif len(block) > 1 or not intercept:
                    offsets[(i, j)] = "free"
    return constraints, offsets

"""Formula front end: ``"y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3) + x4"``.

Grammar (a Python expression on the right of ``~``):

* ``f(col, **options)`` -- a GP function (:class:`~pmctx.gum.terms.GP` options);
* ``w(col, **options)`` -- one weight per level of a categorical regressor;
* ``lin(col, **options)`` or a bare column name ``col`` -- a linear weight;
* ``fixed(col, fn=cos)`` -- a known function; ``fn`` names a numpy function;
* ``+`` and ``*`` combine terms, parentheses group them;
* ``+ 1`` keeps the intercept (the default), ``+ 0`` or ``- 1`` removes it.

Option values may be numbers, strings, ``pi``, simple arithmetic on those, and numpy function
names (for ``fn``).

Examples
--------
>>> from pmctx.gum.formula import parse_formula
>>> response, expr, intercept = parse_formula("y ~ f(x1) * w(pos) + x4 - 1")
>>> response, intercept, type(expr).__name__
('y', False, 'Sum')
"""

from __future__ import annotations

import ast
import operator

import numpy as np

from pmctx.gum.terms import GP, Categorical, Fixed, Linear, Product, Sum, Term

__all__ = ["parse_formula"]

_CONSTRUCTORS = {"f": GP, "gp": GP, "w": Categorical, "cat": Categorical, "lin": Linear}
_CONSTANTS = {"pi": np.pi, "e": np.e, "inf": np.inf}
_ARITH = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def _error(formula: str, message: str) -> ValueError:
    return ValueError(f"Cannot parse GUM formula {formula!r}: {message}")


def _value(node, formula: str):
    """Evaluate an option value: literals, pi, arithmetic, numpy function names."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        fn = getattr(np, node.id, None)
        if callable(fn):
            return fn
        raise _error(formula, f"unknown name {node.id!r} in an option value.")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, formula)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        return _ARITH[type(node.op)](_value(node.left, formula), _value(node.right, formula))
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_value(elt, formula) for elt in node.elts)
    raise _error(formula, f"unsupported option value {ast.unparse(node)!r}.")


def _term(node, formula: str):
    """Translate an AST node into a Term, or an int 0/1 for intercept markers."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _term(node.left, formula), _term(node.right, formula)
        if isinstance(node.op, ast.Mult):
            left, right = _as_term(left), _as_term(right)
            if not (isinstance(left, Term) and isinstance(right, Term)):
                raise _error(formula, "'*' needs a term on both sides.")
            return Product([left, right])
        if isinstance(node.op, ast.Sub):
            if right != 1 or not isinstance(left, Term | list):
                raise _error(formula, "only '- 1' (remove the intercept) may be subtracted.")
            return _with_marker(left, "-1")
        return _join(left, right)
    if isinstance(node, ast.Constant) and node.value in (0, 1) and not isinstance(node.value, bool):
        return int(node.value)
    if isinstance(node, ast.Name):
        return Linear(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        kind = node.func.id
        if kind not in (*_CONSTRUCTORS, "fixed"):
            raise _error(
                formula,
                f"unknown term {kind!r}; use f(...), w(...), lin(...), fixed(...) or a column.",
            )
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
            raise _error(formula, f"{kind}(...) takes exactly one column name, then options.")
        options = {kw.arg: _value(kw.value, formula) for kw in node.keywords}
        column = node.args[0].id
        try:
            if kind == "fixed":
                return Fixed(column, **options)
            return _CONSTRUCTORS[kind](column, **options)
        except TypeError as err:
            raise _error(formula, f"bad options for {kind}({column}): {err}") from err
    raise _error(formula, f"unsupported expression {ast.unparse(node)!r}.")


def _as_term(piece):
    """A parenthesised sum used as a factor (intercept markers are not allowed there)."""
    if isinstance(piece, list) and not piece[1]:
        return piece[0][0] if len(piece[0]) == 1 else Sum(piece[0])
    return piece


def _with_marker(term, marker):
    terms, markers = term if isinstance(term, list) else ([term], [])
    return [terms, [*markers, marker]]


def _join(left, right):
    """Sum two parsed pieces, keeping intercept markers (0/1/'-1') aside."""
    terms, markers = [], []
    for piece in (left, right):
        if isinstance(piece, list):
            terms += piece[0]
            markers += piece[1]
        elif isinstance(piece, int):
            markers.append(piece)
        else:
            terms.append(piece)
    return [terms, markers]


def parse_formula(formula: str) -> tuple[str, Term, bool]:
    """Parse ``"response ~ predictor"`` into ``(response, term, intercept)``.

    Parameters
    ----------
    formula : str

    Returns
    -------
    response : str
    term : Term
    intercept : bool
    """
    if not isinstance(formula, str):
        raise TypeError(f"formula must be a string, got {type(formula).__name__}.")
    if formula.count("~") != 1:
        raise _error(formula, "it needs exactly one '~' between the response and the predictor.")
    lhs, rhs = (part.strip() for part in formula.split("~"))
    if not lhs.isidentifier():
        raise _error(formula, f"the response {lhs!r} must be a column name.")
    try:
        tree = ast.parse(rhs, mode="eval").body
    except SyntaxError as err:
        raise _error(formula, f"invalid syntax ({err.msg}).") from err
    parsed = _term(tree, formula)
    terms, markers = parsed if isinstance(parsed, list) else ([parsed], [])
    if isinstance(parsed, int):
        terms, markers = [], [parsed]
    intercept = not any(m in (0, "-1") for m in markers)
    if not terms:
        raise _error(formula, "the predictor has no terms.")
    return lhs, (terms[0] if len(terms) == 1 else Sum(terms)), intercept

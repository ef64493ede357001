"""Formula front end: ``"y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3) + x4"``.

Grammar (a Python expression on the right of ``~``):

* ``f(col, **options)`` -- a GP function (:class:`~pmctx.gum.terms.GP` options);
* ``w(col, **options)`` -- one weight per level of a categorical regressor;
* ``lin(col, **options)`` or a bare column name ``col`` -- a linear weight;
* ``fixed(col, fn=cos)`` -- a known function; ``fn`` names a numpy function;
* ``+`` and ``*`` combine terms, parentheses group them;
* ``+ 1`` keeps the intercept (the default), ``+ 0`` or ``- 1`` removes it;
* numeric multipliers and minus: ``2*f(z)``, ``f(x) - f(y)`` (known scales, not parameters;
  ``f(x) - f(x2, name='f_x')`` is one function applied to two inputs with opposite signs);
* ``[z]`` -- a fixed regressor entering with coefficient one (an offset);
* ``1|g`` -- one intercept per level of ``g``, partially pooled (a random effect: the levels
  share a prior sd fitted by the evidence or sampled); ``x|g`` -- one slope of ``x`` per level,
  partially pooled;
* ``f(x|g)`` -- one GP function of ``x`` per level of ``g`` with shared hyperparameters
  (partially pooled); ``f(x) + f(x|g)`` is the hierarchical model, a population function plus
  level deviations, in one ``pm.Model`` (:mod:`pmctx.gum.grouped`);
* ``w(p|g)`` -- one weight per level of ``p`` within each level of ``g``, partially pooled
  (shared sd): ``(w(position) + w(position|subject)) * f(angle)`` is the hierarchical
  psychophysics model, population weights plus subject deviations, in one ``pm.Model``;
* ``cat(a):cat(b)`` -- one weight per observed pair of levels; ``cat(a)^cat(b)`` -- both main
  effects plus the interaction;
* ``lag(x, lags=1:5)`` -- a temporal kernel ``sum_k w_k x[t - k]`` over the listed lags
  (rows are taken in data order; the first rows miss the lags before the start);
* ``binning=k`` on ``f(...)`` -- the function lives on ``k`` quantile bins of its regressor.

Option values may be numbers, strings, ``pi``, simple arithmetic on those, and numpy function
names (for ``fn``).

Examples
--------
>>> from pmctx.gum.formula import parse_formula
>>> response, expr, intercept = parse_formula("y ~ f(x1) * w(pos) + x4 - 1")
>>> response, intercept, type(expr).__name__
('y', False, 'Sum')
>>> from pmctx.gum.terms import normalize
>>> def show(formula):
...     blocks = normalize(parse_formula(formula)[1])
...     return [[[(leaf.name, leaf.scale) for leaf in f] for f in b] for b in blocks]
>>> show("y ~ 2*f(z) - f(x)")
[[[('f_x', -1.0)]], [[('f_z', 2.0)]]]
>>> show("y ~ [z] + 1|g")
[[[('h_z', 1.0)]], [[('r_g', 1.0)]]]
>>> show("y ~ x|g + cat(a):cat(b)")
[[[('h_x', 1.0)], [('r_x_g', 1.0)]], [[('w_a_b', 1.0)]]]
>>> show("y ~ (w(p) + w(p|s)) * f(a)")
[[[('f_a', 1.0)], [('w_p', 1.0), ('w_p_s', 1.0)]]]
>>> show("y ~ f(x) + f(x|subject, lengthscale=0.5)")
[[[('f_x', 1.0)]], [[('f_x_subject', 1.0)]]]
>>> show("y ~ lag(x, lags=1:3)")
[[[('h_x_lag', 1.0)], [('w_lag_x', 1.0)]]]
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import re

import numpy as np

from pmctx.gum.terms import GP, Categorical, Fixed, Linear, Product, Sum, Term

__all__ = ["parse_formula", "scaled"]

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


def _number(node):
    """The value of a numeric literal node (``2``, ``-0.5``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else float(node.value)
    return None


def scaled(term, factor: float):
    """``factor * term``: scales one factor of every product (a copy; parameters shared).

    Parameters
    ----------
    term : Term, Sum, Product or list
        A term expression.
    factor : float
        The scale factor.

    Returns
    -------
    Term
        The scaled copy.
    """
    if isinstance(term, Sum):
        return Sum([scaled(t, factor) for t in term.terms])
    if isinstance(term, Product):
        return Product([scaled(term.terms[0], factor), *term.terms[1:]])
    if isinstance(term, list):
        return [[scaled(t, factor) for t in term[0]], term[1]]
    return dataclasses.replace(term, scale=term.scale * factor)


def _column(node, formula: str, what: str) -> str:
    if not isinstance(node, ast.Name):
        raise _error(formula, f"{what} needs a column name, got {ast.unparse(node)!r}.")
    return node.id


def _split(node, formula: str):
    """``1|g`` (random intercepts) and ``x|g`` (random slopes)."""
    group = _column(node.right, formula, "'|'")
    if isinstance(node.left, ast.Constant) and node.left.value == 1:
        return Categorical(group, name=f"r_{group}", random=True, sd=1.0)
    x = _column(node.left, formula, "'x|g'")
    return Product([Fixed(x), Categorical(group, name=f"r_{x}_{group}", random=True, sd=1.0)])


def _interaction(node, formula: str):
    names = []
    for side in (node.left, node.right):
        leaf = _term(side, formula)
        if not isinstance(leaf, Categorical):
            raise _error(formula, "':' and '^' combine categorical terms, e.g. cat(a):cat(b).")
        names.append(leaf.column)
    a, b = names
    interaction = Categorical(f"{a}:{b}", name=f"w_{a}_{b}", derive=("interaction", (a, b)))
    if isinstance(node.op, ast.MatMult):
        return interaction
    return Sum([Categorical(a), Categorical(b), interaction])


def _lag(node, formula: str):
    if len(node.args) != 1:
        raise _error(formula, "lag(...) takes one column name and lags=..., e.g. lag(x, lags=1:5).")
    x = _column(node.args[0], formula, "lag(...)")
    options = {kw.arg: _value(kw.value, formula) for kw in node.keywords}
    lags = options.pop("lags", (1,))
    lags = tuple(int(k) for k in np.atleast_1d(lags))
    if options or not lags or min(lags) < 1:
        raise _error(formula, "lag(x, lags=...) takes positive integer lags and no other option.")
    derive_x, derive_k = ("lag", (x, lags)), ("lagindex", (x, lags))
    return Product(
        [
            Fixed(f"{x}_lag", derive=derive_x),
            Categorical(f"{x}_lagindex", name=f"w_lag_{x}", constraint="free", derive=derive_k),
        ]
    )


def _grouped_gp(node, formula: str) -> GP:
    """``f(x|g, **options)``: one GP of ``x`` per level of ``g``, shared hyperparameters."""
    x = _column(node.args[0].left, formula, "f(x|g)")
    group = _column(node.args[0].right, formula, "f(x|g)")
    options = {kw.arg: _value(kw.value, formula) for kw in node.keywords}
    try:
        return GP(x, group=group, **options)
    except TypeError as err:
        raise _error(formula, f"bad options for f({x}|{group}): {err}") from err


def _term(node, formula: str):
    """Translate an AST node into a Term, or an int 0/1 for intercept markers."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for number, other in ((node.left, node.right), (node.right, node.left)):
            value = _number(number)
            if value is not None:
                piece = _term(other, formula)
                if not isinstance(piece, Term | list):
                    raise _error(formula, "a number multiplies a term, e.g. 2*f(x).")
                return scaled(_as_term(piece), value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _split(node, formula)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult | ast.Pow):
        return _interaction(node, formula)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        piece = _term(node.operand, formula)
        if isinstance(piece, Term):
            return scaled(piece, -1.0)
    if isinstance(node, ast.List):
        if len(node.elts) != 1:
            raise _error(formula, "[...] holds exactly one column name: a fixed regressor [z].")
        return Fixed(_column(node.elts[0], formula, "[...]"))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _term(node.left, formula), _term(node.right, formula)
        if isinstance(node.op, ast.Mult):
            left, right = _as_term(left), _as_term(right)
            if not (isinstance(left, Term) and isinstance(right, Term)):
                raise _error(formula, "'*' needs a term on both sides.")
            return Product([left, right])
        if isinstance(node.op, ast.Sub):
            if right == 1 and isinstance(left, Term | list):
                return _with_marker(left, "-1")
            if isinstance(right, Term | list) and isinstance(left, Term | list | int):
                return _join(left, scaled(_as_term(right), -1.0))
            raise _error(formula, "'-' subtracts a term, or '- 1' removes the intercept.")
        return _join(left, right)
    if isinstance(node, ast.Constant) and node.value in (0, 1) and not isinstance(node.value, bool):
        return int(node.value)
    if isinstance(node, ast.Name):
        return Linear(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lag":
        return _lag(node, formula)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        kind = node.func.id
        if kind not in (*_CONSTRUCTORS, "fixed"):
            raise _error(
                formula,
                f"unknown term {kind!r}; use f(...), w(...), cat(...), lin(...), fixed(...), "
                "lag(...) or a column.",
            )
        if len(node.args) == 1 and isinstance(node.args[0], ast.BinOp):
            if not isinstance(node.args[0].op, ast.BitOr) or kind not in ("w", "cat", "f", "gp"):
                raise _error(formula, f"{kind}(...) takes a column name or x|g, then options.")
            if kind in ("f", "gp"):
                return _grouped_gp(node, formula)
            inner = _column(node.args[0].left, formula, f"{kind}(p|g)")
            group = _column(node.args[0].right, formula, f"{kind}(p|g)")
            return Categorical(
                f"{inner}|{group}",
                name=f"w_{inner}_{group}",
                random=True,
                sd=1.0,
                derive=("nested", (inner, group)),
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
    # integer ranges a:b (lags) become tuples; every other ':' is an interaction ('@')
    rhs = re.sub(
        r"(\d+)\s*:\s*(\d+)",
        lambda m: str(tuple(range(int(m.group(1)), int(m.group(2)) + 1))),
        rhs,
    ).replace(":", "@")
    rhs = rhs.replace("^", "**")  # cat(a)^cat(b) binds tighter than + and -, like Python's **
    # '|' binds tighter than '+' in GUM formulas (Python's '|' binds looser): group x|g
    rhs = re.sub(r"(\b\w+)\s*\|\s*(\w+\b)", r"(\1|\2)", rhs)
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

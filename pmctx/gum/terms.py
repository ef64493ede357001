"""Term objects of a GUM predictor, combined with ``+`` and ``*``.

A predictor is a sum of blocks, a block a product of factors, a factor a sum of functions
(seed 002, eq. 1): ``rho(x) = sum_i prod_j (sum_l f_k(ijl)(x) + c_ij) + c0``. Leaves are

* :class:`GP` -- a function with a Gaussian-process prior (SE, Matérn, periodic kernel);
* :class:`Linear` -- a weight times the regressor, Gaussian prior (a GLM term);
* :class:`Categorical` -- one weight per level of a discrete regressor, Gaussian prior;
* :class:`Fixed` -- a known function of the regressor, no parameters.

Leaves with the same ``name`` share their parameters (the same function applied to several
inputs). A regressor may be 2-D (trials x positions): the block is then summed over positions,
``rho_n = sum_p prod_j F_j(x_np)``, which is the psychophysics model
``rho = sum_k w_k f(x_k) + w0`` written ``Categorical("position") * GP("angle")``.

Examples
--------
>>> from pmctx.gum.terms import GP, Linear, normalize
>>> expr = GP("x1") * GP("x2", kernel="periodic", period=3.14) + GP("x3") + Linear("x4")
>>> [[[leaf.name for leaf in factor] for factor in block] for block in normalize(expr)]
[[['f_x1'], ['f_x2']], [['f_x3']], [['b_x4']]]
"""

# Long because it defines every term of the formula language (sums, products, GP, linear,
# categorical, fixed) and their normalisation to blocks; about 250 lines are docstrings.

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pmctx.gum.kernels import KERNELS

__all__ = [
    "CONSTRAINTS",
    "GP",
    "Categorical",
    "Fixed",
    "Function",
    "Linear",
    "Product",
    "Sum",
    "Term",
    "normalize",
]

#: Identifiability constraints of seed 002 Appendix A, plus "free" (none).
CONSTRAINTS = ("free", "first-zero", "mean-zero", "mean-one", "sum-one")


class Term:
    """Base of every predictor expression; ``+`` makes a :class:`Sum`, ``*`` a :class:`Product`."""

    def __add__(self, other):
        _check_term(other, "+")
        return Sum([self, other])

    def __mul__(self, other):
        _check_term(other, "*")
        return Product([self, other])


def _check_term(other, op: str) -> None:
    if not isinstance(other, Term):
        raise TypeError(
            f"GUM terms combine with {op} only with other terms, got {type(other).__name__}. "
            "Wrap regressors in GP(...), Linear(...), Categorical(...) or Fixed(...)."
        )


@dataclass(eq=False)
class Sum(Term):
    """Sum of terms (flattened).

    Parameters
    ----------
    terms : list of Term
        The summands (nested sums are flattened).

    Examples
    --------
    >>> len(Sum([GP("x"), Sum([GP("y"), Linear("z")])]).terms)
    3
    """

    terms: list

    def __post_init__(self):
        self.terms = [
            t for term in self.terms for t in (term.terms if isinstance(term, Sum) else [term])
        ]


@dataclass(eq=False)
class Product(Term):
    """Product of terms (flattened).

    Parameters
    ----------
    terms : list of Term
        The factors (nested products are flattened).

    Examples
    --------
    >>> [t.name for t in (GP("x") * Categorical("g")).terms]
    ['f_x', 'w_g']
    """

    terms: list

    def __post_init__(self):
        flat = []
        for term in self.terms:
            flat.extend(term.terms if isinstance(term, Product) else [term])
        self.terms = flat


@dataclass(eq=False)
class Function(Term):
    """A leaf: one function of one regressor column.

    Parameters
    ----------
    column : str
        Regressor name.
    name : str, optional
        Function name (default ``<prefix>_<column>``); leaves with one name share parameters.
    constraint : str, optional
        Identifiability constraint (default: the rule of :mod:`pmctx.gum.constraints`).
    scale : float, default 1.0
        Known multiplier (formula ``2*f(x)``, ``-f(y)``), not a parameter.
    derive : tuple, optional
        ``(kind, args)`` when the column is built from others (interactions, nesting, lags).
    """

    column: str
    name: str | None = None
    constraint: str | None = None  # None: the default rule of pmctx.gum.constraints
    scale: float = 1.0  # known multiplier (formula ``2*f(x)``, ``- f(y)``); not a parameter
    derive: tuple | None = None  # (kind, args) when the column is built from others

    prefix = "f"
    has_parameters = True

    def __post_init__(self):
        if not isinstance(self.column, str) or not self.column:
            raise TypeError(f"column must be a non-empty string, got {self.column!r}.")
        if self.name is None:
            self.name = f"{self.prefix}_{self.column}"
        if not np.isfinite(self.scale) or self.scale == 0:
            raise ValueError(f"scale of {self.name!r} must be finite and non-zero.")
        if self.constraint is not None and self.constraint not in CONSTRAINTS:
            raise ValueError(
                f"constraint of {self.name!r} must be one of {CONSTRAINTS}, got "
                f"{self.constraint!r}."
            )

    def options(self) -> tuple:
        """Everything but the column: leaves sharing a name must agree on it.

        Returns
        -------
        tuple
            The leaf's kind and settings.
        """
        return (type(self).__name__, self.constraint)


@dataclass(eq=False)
class GP(Function):
    """Function with a GP prior ``f ~ GP(0, k)``.

    Parameters
    ----------
    column : str
        Regressor name.
    kernel : {"se", "matern32", "matern52", "periodic"}
    lengthscale, variance : float
        Kernel hyperparameters (fitted by :mod:`pmctx.gum.hyper` for Laplace).
    period : float, optional
        Period of the periodic kernel.
    binning : int, optional
        Bin the regressor into this many quantile bins (equal counts); the function lives on
        the bins (one value per bin, at the bin's mean input) and each observation takes its
        bin's value.
    max_points : int, default 48
        Size of the support set: the unique input values when there are at most this many,
        otherwise an even grid with linear interpolation (an inducing-grid sparse GP, cost
        O(N) per evaluation).
    group : str, optional
        A categorical column: one function of ``column`` per level of ``group`` (formula
        ``f(x|g)``), all on the same support, independent a priori given the shared
        hyperparameters (``lengthscale``, ``variance``), so the levels are partially pooled.
        The prior covariance is ``I_levels (x) K``; the identifiability constraint applies to
        the stacked values of all levels (see :mod:`pmctx.gum.grouped`).
    name, constraint : str, optional
        Shared-parameter name, identifiability constraint (see :mod:`pmctx.gum.constraints`).
    scale : float, default 1.0
        Known multiplier, not a parameter.
    derive : tuple, optional
        ``(kind, args)`` when the column is built from others.

    Examples
    --------
    >>> GP("x", kernel="periodic", period=6.28).name
    'f_x'
    """

    kernel: str = "se"
    lengthscale: float = 1.0
    variance: float = 1.0
    period: float | None = None
    max_points: int = 48
    binning: int | None = None
    group: str | None = None

    prefix = "f"

    def __post_init__(self):
        if self.group is not None:
            if not isinstance(self.group, str) or not self.group:
                raise TypeError(f"group must be a non-empty column name, got {self.group!r}.")
            if self.name is None:
                self.name = f"{self.prefix}_{self.column}_{self.group}"
        super().__post_init__()
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}.")
        if self.kernel == "periodic" and self.period is None:
            raise ValueError(
                f"GP {self.name!r} uses the periodic kernel but has no period. Pass period=..."
            )
        for key in ("lengthscale", "variance"):
            value = getattr(self, key)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{key} of {self.name!r} must be positive, got {value!r}.")
        if self.period is not None and not self.period > 0:
            raise ValueError(f"period of {self.name!r} must be positive, got {self.period!r}.")
        if int(self.max_points) < 3:
            raise ValueError(f"max_points must be at least 3, got {self.max_points!r}.")
        if self.binning is not None and int(self.binning) < 2:
            raise ValueError(f"binning must be at least 2 bins, got {self.binning!r}.")

    def options(self):
        """Settings that leaves sharing a name must agree on.

        Returns
        -------
        tuple
            The leaf's kind, constraint and prior settings.
        """
        return (
            *super().options(),
            self.kernel,
            self.lengthscale,
            self.variance,
            self.period,
            self.binning,
            self.group,
        )


@dataclass(eq=False)
class Linear(Function):
    """Linear weight ``w * x`` with prior ``w ~ N(0, sd^2)``.

    Parameters
    ----------
    column : str
        Regressor name.
    name : str, optional
        Function name (default ``<prefix>_<column>``); leaves with one name share parameters.
    constraint : str, optional
        Identifiability constraint (default: the rule of :mod:`pmctx.gum.constraints`).
    scale : float, default 1.0
        Known multiplier (formula ``2*f(x)``, ``-f(y)``), not a parameter.
    derive : tuple, optional
        ``(kind, args)`` when the column is built from others (interactions, nesting, lags).

    sd : float, default 10.0
        Prior sd of the weight.

    Examples
    --------
    >>> Linear("x").name
    'b_x'
    """

    sd: float = 10.0
    prefix = "b"

    def __post_init__(self):
        super().__post_init__()
        if not np.isfinite(self.sd) or self.sd <= 0:
            raise ValueError(f"sd of {self.name!r} must be positive, got {self.sd!r}.")

    def options(self):
        """Settings that leaves sharing a name must agree on.

        Returns
        -------
        tuple
            The leaf's kind, constraint and prior settings.
        """
        return (*super().options(), self.sd)


@dataclass(eq=False)
class Categorical(Function):
    """One weight per level of a discrete regressor, ``w_level ~ N(0, sd^2)``.

    With ``random=True`` (formula ``1|g`` and ``x|g``) the levels are partially pooled: ``sd``
    is a hyperparameter shared by the levels, fitted by the Laplace evidence
    (:mod:`pmctx.gum.hyper`) and sampled under NUTS/ADVI with a ``HalfNormal(sd)`` prior as
    ``{name}_sd`` (a random effect).

    Parameters
    ----------
    column : str
        Regressor name.
    name : str, optional
        Function name (default ``<prefix>_<column>``); leaves with one name share parameters.
    constraint : str, optional
        Identifiability constraint (default: the rule of :mod:`pmctx.gum.constraints`).
    scale : float, default 1.0
        Known multiplier (formula ``2*f(x)``, ``-f(y)``), not a parameter.
    derive : tuple, optional
        ``(kind, args)`` when the column is built from others (interactions, nesting, lags).

    sd : float, default 10.0
        Prior sd of the weights (the shared hyperparameter when ``random``).
    random : bool, default False
        Partially pool the levels (a random effect).

    Examples
    --------
    >>> Categorical("subject", random=True).name
    'w_subject'
    """

    sd: float = 10.0
    random: bool = False
    prefix = "w"

    def __post_init__(self):
        super().__post_init__()
        if not np.isfinite(self.sd) or self.sd <= 0:
            raise ValueError(f"sd of {self.name!r} must be positive, got {self.sd!r}.")

    def options(self):
        """Settings that leaves sharing a name must agree on.

        Returns
        -------
        tuple
            The leaf's kind, constraint and prior settings.
        """
        return (*super().options(), self.sd, self.random)


@dataclass(eq=False)
class Fixed(Function):
    """Known function ``h(x)`` (no parameters), e.g. the normative mapping of a GLM.

    Without ``fn`` the regressor enters as is (a fixed offset term).

    Parameters
    ----------
    column : str
        Regressor name.
    name : str, optional
        Function name (default ``<prefix>_<column>``); leaves with one name share parameters.
    constraint : str, optional
        Identifiability constraint (default: the rule of :mod:`pmctx.gum.constraints`).
    scale : float, default 1.0
        Known multiplier (formula ``2*f(x)``, ``-f(y)``), not a parameter.
    derive : tuple, optional
        ``(kind, args)`` when the column is built from others (interactions, nesting, lags).

    fn : callable, optional
        The known function (default: identity, an offset term).

    Examples
    --------
    >>> Fixed("angle", fn=np.cos).has_parameters
    False
    """

    fn: Callable = field(default=None)
    prefix = "h"
    has_parameters = False

    def __post_init__(self):
        super().__post_init__()
        if self.fn is None:  # a fixed regressor entering with coefficient one (an offset)
            self.fn = _identity
        if not callable(self.fn):
            raise TypeError(f"Fixed term {self.name!r} needs a callable fn, got {self.fn!r}.")

    def options(self):
        """Settings that leaves sharing a name must agree on.

        Returns
        -------
        tuple
            The leaf's kind, constraint and prior settings.
        """
        return (*super().options(), id(self.fn))


def _identity(x):
    return x


def _alternatives(term) -> list[list[list[Function]]]:
    """Blocks of ``term``, with a sum of single-factor blocks merged into one factor."""
    blocks = normalize(term, check=False)
    if len(blocks) > 1 and all(len(block) == 1 for block in blocks):
        return [[[leaf for block in blocks for leaf in block[0]]]]
    return blocks


def normalize(term: Term, *, check: bool = True) -> list[list[list[Function]]]:
    """Expand an expression into blocks (products) of factors (sums) of leaves.

    Products of sums of products are expanded distributively, so every predictor becomes the
    seed's sum of products of sums.

    Parameters
    ----------
    term : Term
        A term expression.
    check : bool, default True
        Put the blocks in canonical order and check that shared names agree.

    Returns
    -------
    list of list of list of Function
        Blocks (products) of factors (sums) of leaves.

    Examples
    --------
    >>> blocks = normalize((GP("x") + GP("y")) * Categorical("g"))
    >>> [[[leaf.name for leaf in factor] for factor in block] for block in blocks]
    [[['f_x', 'f_y'], ['w_g']]]
    """
    if isinstance(term, Function):
        blocks = [[[term]]]
    elif isinstance(term, Sum):
        blocks = [block for t in term.terms for block in normalize(t, check=False)]
    elif isinstance(term, Product):
        blocks = [[]]
        for t in term.terms:
            blocks = [block + alt for block in blocks for alt in _alternatives(t)]
    else:
        raise TypeError(f"Not a GUM term: {term!r}.")
    if check:
        blocks = canonical_order(blocks)
        _check_blocks(blocks)
    return blocks


def _leaf_key(leaf) -> tuple:
    # Functions of values with a natural zero (GP, then linear and fixed) before weight vectors
    # (categorical): the first factor of a product keeps the free scale (pmctx.gum.constraints).
    rank = 0 if isinstance(leaf, GP) else 2 if isinstance(leaf, Categorical) else 1
    return (rank, leaf.name, leaf.column)


def _factor_key(factor) -> tuple:
    return (min(_leaf_key(leaf)[0] for leaf in factor), *[_leaf_key(leaf) for leaf in factor])


def canonical_order(blocks):
    """Blocks, factors and functions in one order that does not depend on how the formula
    was written (sums and products commute): within a factor, functions by kind (GP,
    linear/fixed, categorical) then name; within a block, factors by their functions; blocks
    with more factors first.

    So ``w(position) * f(angle)`` and ``f(angle) * w(position)`` are the same model.

    Parameters
    ----------
    blocks : list
        Blocks of factors of leaves, as from :func:`normalize`.

    Returns
    -------
    list
        The same blocks in canonical order.
    """
    blocks = [
        sorted((sorted(factor, key=_leaf_key) for factor in block), key=_factor_key)
        for block in blocks
    ]
    return sorted(blocks, key=lambda block: (-len(block), [_factor_key(f) for f in block]))


def _check_blocks(blocks) -> None:
    options: dict[str, tuple] = {}
    for block in blocks:
        seen: dict[str, int] = {}
        for j, factor in enumerate(block):
            for leaf in factor:
                if leaf.name in options and options[leaf.name] != leaf.options():
                    raise ValueError(
                        f"Two terms share the name {leaf.name!r} but differ in their options. "
                        "Shared functions must be declared identically; give different "
                        "functions different names."
                    )
                options[leaf.name] = leaf.options()
                if seen.get(leaf.name, j) != j:
                    raise ValueError(
                        f"Function {leaf.name!r} appears in two factors of the same product. "
                        "The GUM Laplace scheme (seed 002, Appendix B.2) cannot fit that "
                        "(e.g. f1*(f1+f2)). Use a different function in one factor, or share "
                        "the function across different product blocks instead."
                    )
                seen[leaf.name] = j

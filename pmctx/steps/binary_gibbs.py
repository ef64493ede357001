"""Row-parallel Gibbs step for a binary matrix with conditionally independent units.

For a Bernoulli matrix ``V`` whose slices along ``independent_axis`` (the *units*: rows of the
IBP's Z given pi, A, Y; columns of Y given Z) are conditionally independent given the rest of
the model, the full conditional of every entry in one line ``j`` of the other axis factorises
over units. So one line is updated for all units at once from vectorised evaluations of the
per-unit log density, instead of one full-model logp per entry as in
``pm.BinaryGibbsMetropolis``. The per-unit log density is derived from the model graph (see
:mod:`pmctx.steps._logp_terms`). The two states each unit's conditional needs (its entry at
0 and at 1) are the current state and the state with every unit's entry in line ``j``
flipped; the current one is carried over from the previous line, so a sweep over ``C`` lines
costs ``C + 1`` evaluations rather than ``2 C``. On models with ``TABULATE_MIN_ENTRIES``
entries or more in a term, each evaluation is cheap because its costly elementwise parts,
functions of discrete tensors such as ``Z @ Y``, are computed once per distinct value and
gathered (exactly the same numbers; see :mod:`pmctx.steps._logp_terms`); below that the
direct graph is faster.

The pure kernel (:func:`sample_from_log_odds`, :func:`gibbs_line_sweep`) is separate from the
PyMC step (:class:`BinaryMatrixGibbs`) that compiles the per-unit log density and calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numba
import numpy as np
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BernoulliRV

from pmctx.points import initial_point
from pmctx.steps._logp_terms import (
    UnitAxisError,
    dependent_logp_terms,
    exact_integer_dots,
    per_unit_logp,
    resolve_unit_axes,
    tabulate_discrete_elemwise,
)
from pmctx.steps.base import PmctxStep
from pmctx.validation import check_choice, check_int

__all__ = ["TABULATE_MIN_ENTRIES", "BinaryMatrixGibbs", "gibbs_line_sweep", "sample_from_log_odds"]

# The per-unit log density is rewritten with tables and exact float dots (_logp_terms) only
# when its largest term has at least this many entries: each table op is a Python call of
# about 15-25 us, which pays once it replaces a few hundred transcendental evaluations. Per
# call, tables against direct (benchmarks/bench_binary_gibbs.py, IBP noisy-OR model): 34 / 20
# us at 3 x 2 entries, 29 / 19 at 12 x 8, 37 / 49 at 40 x 16, 75 / 222 at 100 x 36; on a
# noisy-OR with one transcendental fewer per entry the two met near 1,000 entries.
TABULATE_MIN_ENTRIES = 512


_NAN_LOG_ODDS = (
    "A binary entry has zero probability both at 0 and at 1 given the other variables "
    "(NaN log-odds); the current point is outside the model's support."
)


def sample_from_log_odds(log_odds: np.ndarray, log_uniforms: np.ndarray) -> np.ndarray:
    """Exact Bernoulli draws with P(1) = sigmoid(log_odds), computed in log space.

    ``log_uniforms`` are logs of independent U(0, 1) draws; an entry is 1 when
    ``log u < log sigmoid(log_odds) = -log1p(exp(-log_odds))``, which stays exact for
    infinite log-odds (entries forced to 0 or 1 by the model).

    Parameters
    ----------
    log_odds : numpy.ndarray
        ``log P(1) - log P(0)`` per entry; ``-inf`` and ``inf`` force 0 and 1.
    log_uniforms : numpy.ndarray
        Logs of U(0, 1) draws, same shape.

    Returns
    -------
    numpy.ndarray
        int64 array of 0 and 1.

    Raises
    ------
    FloatingPointError
        When a log-odds is NaN (the model's density is undefined there).

    Examples
    --------
    >>> sample_from_log_odds(np.array([-np.inf, 0.0, np.inf]), np.log([0.1, 0.7, 0.99]))
    array([0, 0, 1])
    """
    log_odds = np.asarray(log_odds, dtype=np.float64)
    if np.isnan(log_odds).any():
        raise FloatingPointError(_NAN_LOG_ODDS)
    return (log_uniforms < -np.logaddexp(0.0, -log_odds)).astype(np.int64)


@numba.njit(cache=True)
def _flip_line(values, line):
    for unit in range(values.shape[0]):
        values[unit, line] = 1 - values[unit, line]


@numba.njit(cache=True)
def _accept_line(values, line, current, flipped, log_uniforms):
    # values[:, line] holds the flipped entries; keep each or restore the old one, and carry
    # the per-unit log density of the kept state in `current`. Returns -1, changing nothing,
    # on NaN log-odds.
    for unit in range(values.shape[0]):
        if np.isnan(flipped[unit] - current[unit]):
            return -1
    n_changed = 0
    for unit in range(values.shape[0]):
        gain = flipped[unit] - current[unit]
        was_one = values[unit, line] == 0
        log_odds = -gain if was_one else gain
        # log sigmoid(x) = -logaddexp(0, -x), as in sample_from_log_odds
        if log_odds >= 0.0:
            log_p_one = -math.log1p(math.exp(-log_odds))
        else:
            log_p_one = log_odds - math.log1p(math.exp(log_odds))
        is_one = log_uniforms[unit] < log_p_one
        if is_one != was_one:
            current[unit] = flipped[unit]
            n_changed += 1
        else:
            values[unit, line] = 1 - values[unit, line]
    return n_changed


def gibbs_line_sweep(
    values: np.ndarray,
    per_unit_logp: Callable[[np.ndarray], np.ndarray],
    order: np.ndarray,
    log_uniforms: np.ndarray,
) -> int:
    """One Gibbs sweep over the lines of a binary matrix, all units at once, in place.

    The per-unit log density of the current state is carried along, so each line costs one
    evaluation: the state with every unit's entry in that line flipped. For unit ``i`` the
    two evaluations (current, flipped) are its log densities at ``v_ij`` and ``1 - v_ij``,
    whose difference is the exact log-odds of its full conditional.

    Parameters
    ----------
    values : ndarray of int64, shape (n_units, n_lines)
        The matrix with units along axis 0 (pass a transposed view for column units);
        updated in place.
    per_unit_logp : callable ``(values) -> ndarray (n_units,)``
        Sum of every log-density term that depends on ``values``, one entry per unit.
    order : ndarray of int
        Lines to update, in order.
    log_uniforms : ndarray, shape (len(order), n_units)
        Logs of U(0, 1) draws, one row per visited line.

    Returns
    -------
    int
        Number of entries that changed.

    Examples
    --------
    >>> values = np.zeros((2, 3), dtype=np.int64)
    >>> favour_ones = lambda v: 50.0 * v.sum(axis=1)  # log-odds +50 for every entry
    >>> gibbs_line_sweep(values, favour_ones, np.arange(3), np.full((3, 2), -1.0))
    6
    """
    # A private copy: _accept_line updates it in place, and compiled functions may reuse
    # their output buffers.
    current = np.array(per_unit_logp(values), dtype=np.float64)
    log_uniforms = np.asarray(log_uniforms, dtype=np.float64)
    n_flips = 0
    for step, line in enumerate(order):
        _flip_line(values, line)
        flipped = np.asarray(per_unit_logp(values), dtype=np.float64)
        n_changed = _accept_line(values, line, current, flipped, log_uniforms[step])
        if n_changed < 0:
            _flip_line(values, line)  # leave the line as it was
            raise FloatingPointError(_NAN_LOG_ODDS)
        n_flips += n_changed
    return n_flips


def _is_binary_rv(rv) -> bool:
    return rv.owner is not None and isinstance(rv.owner.op, BernoulliRV)


class BinaryMatrixGibbs(PmctxStep):
    """Gibbs step updating a Bernoulli matrix one line at a time, all units in parallel.

    Parameters
    ----------
    vars : list with one variable
        A 2-D ``pm.Bernoulli`` free variable ``V`` of the model.
    independent_axis : {0, 1} or None, default None
        Axis of ``V`` whose slices are conditionally independent given all other variables:
        0 for rows (Z in the IBP), 1 for columns (Y in the IBP, given Z). ``None`` picks
        axis 0 if the model's log density splits into independent units along it (term axes
        map and the conditional check passes), else axis 1; read the choice from
        ``step.independent_axis``.
    term_axes : dict of str to int, optional
        For each model term (observed or free variable, potential) whose log density
        depends on ``V``: the axis of its elementwise log density that corresponds to
        ``independent_axis``. Inferred from named dims when the model has them, else from
        the unique axis of matching length.
    order : {"random", "fixed"}, default "random"
        Visit the lines of the other axis in a fresh random order each sweep, or in order.
    check_conditionals : bool, default True
        At construction, compare the line-wise conditionals of a few units at a random state
        with single-entry differences of the model's log density: a cheap guard against a
        wrong ``independent_axis`` or ``term_axes`` (units that are not independent).
    model : pm.Model, optional
    rng : int or numpy.random.Generator, optional

    Notes
    -----
    Sampler stats: ``n_ones`` (number of ones after the sweep) and ``n_flips`` (entries
    changed by the sweep). One sweep costs ``n_lines + 1`` evaluations of the terms that
    depend on ``V``, each vectorised over all units. ``step.tabulated`` says whether they are
    evaluated through tables (from ``TABULATE_MIN_ENTRIES`` entries in a term, at the model's
    initial point).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model(coords={"trial": range(4), "feature": range(2)}) as model:
    ...     z = pm.Bernoulli("z", 0.5, dims=("trial", "feature"))
    ...     f = pm.Normal("f", z.sum(axis=1), 0.5, observed=[0.0, 1.0, 2.0, 1.0], dims="trial")
    ...     step = BinaryMatrixGibbs([z], independent_axis=0, rng=0)
    >>> new_point, stats = step.step(model.initial_point())
    >>> new_point["z"].shape, sorted(stats[0])
    ((4, 2), ['n_flips', 'n_ones'])
    """

    name = "binary_matrix_gibbs"
    stats_dtypes_shapes = {"n_ones": (np.int64, []), "n_flips": (np.int64, [])}

    def __init__(
        self,
        vars,
        *,
        independent_axis: int | None = None,
        term_axes: Mapping[str, int] | None = None,
        order: str = "random",
        check_conditionals: bool = True,
        model=None,
        rng=None,
    ):
        vars = list(vars) if isinstance(vars, list | tuple) else [vars]
        if len(vars) != 1:
            raise ValueError(
                f"BinaryMatrixGibbs updates exactly one matrix variable, got {len(vars)}. "
                "Create one step per variable."
            )
        super().__init__(vars, model=model, rng=rng)
        value_var = self.vars[0]
        rv = self.model.values_to_rvs[value_var]
        if not _is_binary_rv(rv):
            raise ValueError(
                f"BinaryMatrixGibbs needs a pm.Bernoulli variable, but {rv.name!r} is "
                f"{type(rv.owner.op).__name__}. Use pm.Bernoulli for binary matrices, or "
                "another step method for other distributions."
            )
        if value_var.ndim != 2:
            raise ValueError(
                f"BinaryMatrixGibbs needs a 2-D matrix variable, but {rv.name!r} has "
                f"{value_var.ndim} dimension(s). Declare it with shape (n_rows, n_cols)."
            )
        self.order = check_choice(order, "order", ("random", "fixed"))
        if independent_axis is None:
            candidates = (0, 1)
        else:
            candidates = (check_int(independent_axis, "independent_axis", minimum=0, maximum=1),)
        point = initial_point(self.model)
        self.terms = dependent_logp_terms(self.model, value_var)
        self.tabulated = self._largest_term_size(point) >= TABULATE_MIN_ENTRIES
        failures = []
        for axis in candidates:
            try:
                self._set_up_axis(axis, rv.name, term_axes, point)
                # With the axis guessed, the check is what rules a wrong guess out.
                if check_conditionals or independent_axis is None:
                    self._check_conditionals(point)
                break
            except UnitAxisError as err:
                failures.append(f"axis {axis}: {err}")
        else:
            if len(failures) == 1:
                raise UnitAxisError(failures[0].split(": ", 1)[1])
            raise UnitAxisError(
                f"Neither axis of {rv.name!r} splits the model into conditionally independent "
                "units, so BinaryMatrixGibbs cannot update it; use pm.BinaryGibbsMetropolis. "
                + " ".join(failures)
            )

    def _set_up_axis(self, axis, var_name, term_axes, point):
        self.independent_axis = axis
        self._shape = tuple(np.shape(point[self.value_names[0]]))
        self.n_units = int(self._shape[axis])
        self.n_lines = int(self._shape[1 - axis])
        self.term_axes = resolve_unit_axes(
            self.model,
            self.terms,
            var_name=var_name,
            independent_axis=axis,
            n_units=self.n_units,
            term_axes=term_axes,
            point=point,
        )
        self._compile(self.vars[0])

    def _largest_term_size(self, point) -> int:
        # Evaluated once by PyTensor's Python linker: no C module is compiled for it.
        sizes = self.model.compile_fn(
            [term.size for term in self.terms.values()],
            inputs=self.model.value_vars,
            on_unused_input="ignore",
            mode="FAST_COMPILE",
        )(point)
        return int(max(sizes))

    def _compile(self, value_var):
        per_unit = per_unit_logp(self.terms, self.term_axes)
        if self.tabulated:  # same values, less arithmetic: see the helpers' docstrings
            per_unit = tabulate_discrete_elemwise(exact_integer_dots(per_unit))
        graph_inputs = set(ancestors([per_unit]))
        others = [v for v in self.model.value_vars if v is not value_var and v in graph_inputs]
        self._input_names = [v.name for v in others]
        self._input_dtypes = [v.dtype for v in others]
        self._input_ndims = [v.ndim for v in others]
        self._value_dtype = value_var.dtype
        self._per_unit_fn = self.model.compile_fn(
            per_unit, inputs=[value_var, *others], point_fn=False
        )
        # Inputs are cast to the exact input types in _other_inputs / step, so the per-call
        # type checks can be skipped (a few percent of a call on small matrices).
        self._per_unit_fn.trust_input = True

    def _other_inputs(self, point):
        arrays = []
        for name, dtype, ndim in zip(self._input_names, self._input_dtypes, self._input_ndims):
            array = np.asarray(point[name], dtype=dtype)
            if array.ndim != ndim:  # the compiled function trusts its inputs
                raise ValueError(f"{name} must have {ndim} dimension(s), got {array.ndim}.")
            arrays.append(array)
        return arrays

    def _per_unit_function(self, point):
        others = self._other_inputs(point)
        fn = self._per_unit_fn
        if self.independent_axis == 0:
            return lambda units_first: fn(units_first, *others)
        # Units along axis 1: the kernel sees the transposed view; the graph wants V itself.
        return lambda units_first: fn(units_first.T, *others)

    def per_unit_logp(self, point) -> np.ndarray:
        """Sum of the log-density terms that depend on the variable, one entry per unit.

        Parameters
        ----------
        point : dict
            A point of the model (value variable name -> array).

        Returns
        -------
        numpy.ndarray
            One log density per unit (entry along ``independent_axis``).
        """
        values = self._current_values(point)
        units_first = values if self.independent_axis == 0 else values.T
        return np.asarray(self._per_unit_function(point)(units_first))

    def log_odds(self, point, line: int) -> np.ndarray:
        """log P(v = 1 | rest) - log P(v = 0 | rest) of every unit's entry in ``line``.

        ``line`` indexes the axis that is not ``independent_axis`` (a column of Z, a row
        of Y).

        Parameters
        ----------
        point : dict
            A point of the model (value variable name -> array).
        line : int
            Index of the line, in ``[0, n_lines)``.

        Returns
        -------
        numpy.ndarray
            Log-odds of length ``n_units``.
        """
        line = check_int(line, "line", minimum=0, maximum=self.n_lines - 1)
        name = self.value_names[0]
        values = self._current_values(point)
        units_first = values if self.independent_axis == 0 else values.T
        per_unit = []
        for value in (1, 0):
            units_first[:, line] = value
            per_unit.append(self.per_unit_logp({**point, name: values}))
        return per_unit[0] - per_unit[1]

    def _check_conditionals(self, point, n_checked_units: int = 4):
        # Single-entry flips of the summed log density are the exact conditionals; the
        # line-wise per-unit evaluation matches them only when the units really are
        # conditionally independent and every term's unit axis is mapped right.
        point = dict(point)
        name = self.value_names[0]
        # Random binaries everywhere: at the initial point (often all zeros) the interactions
        # between units may vanish and hide a wrong axis.
        for rv in self.model.free_RVs:
            if _is_binary_rv(rv):
                value_name = self.model.rvs_to_values[rv].name
                point[value_name] = self.rng.integers(0, 2, size=np.shape(point[value_name]))
        total = sum(term.sum() for term in self.terms.values())
        total_fn = self.model.compile_fn(
            total, inputs=self.model.value_vars, on_unused_input="ignore"
        )
        line = int(self.rng.integers(self.n_lines))
        got = self.log_odds(point, line)
        for unit in self.rng.permutation(self.n_units)[:n_checked_units]:
            index = (unit, line) if self.independent_axis == 0 else (line, unit)
            logps = []
            for value in (1, 0):
                values = point[name].copy()
                values[index] = value
                logps.append(float(total_fn({**point, name: values})))
            expected = logps[0] - logps[1]
            if np.isfinite(expected) and not np.isclose(got[unit], expected, rtol=1e-6, atol=1e-6):
                raise UnitAxisError(
                    f"The entries of {name!r} along axis {self.independent_axis} are not "
                    "conditionally independent, or a term's unit axis is wrong: the line-wise "
                    f"conditional of unit {unit} ({got[unit]:.6g}) differs from the model's "
                    f"({expected:.6g}). Use the other independent_axis, or check "
                    f"term_axes ({self.term_axes})."
                )

    def _current_values(self, point):
        values = np.array(point[self.value_names[0]], dtype=self._value_dtype, order="C")
        if values.shape != self._shape:  # the compiled function trusts its inputs
            raise ValueError(
                f"{self.value_names[0]} must have shape {self._shape}, got {values.shape}."
            )
        return values

    def step(self, point):
        """One Gibbs sweep: every line in turn, all units of a line drawn at once.

        Parameters
        ----------
        point : dict
            The current point of the model.

        Returns
        -------
        tuple
            The new point and a list with one stats dict (``n_ones``, ``n_flips``).
        """
        name = self.value_names[0]
        values = self._current_values(point)
        units_first = values if self.independent_axis == 0 else values.T
        if self.order == "random":
            order = self.rng.permutation(self.n_lines)
        else:
            order = np.arange(self.n_lines)
        log_uniforms = np.log(self.rng.random((self.n_lines, self.n_units)))
        n_flips = gibbs_line_sweep(units_first, self._per_unit_function(point), order, log_uniforms)
        new_point = dict(point)
        new_point[name] = values
        return new_point, [{"n_ones": int(values.sum()), "n_flips": n_flips}]

"""Conditioning experiments written as phases and compiled to a trial x feature matrix.

A :class:`Phase` is a block of identical (or patterned) trials: which conditioned stimuli
(CSs) are on, whether the unconditioned stimulus (US) is delivered, and in which context.
A :class:`Design` strings phases together and compiles them into the binary observation matrix
of the latent-cause model: column 0 is the US, then one column per CS, then one column per
context cue (in order of first appearance). A US that is neither delivered nor withheld but
*unknown* (a probe trial, ``us=None``) is stored as NaN, i.e. missing data.

Examples
--------
>>> from pmctx.conditioning.design import Design, Phase
>>> design = Design([
...     Phase("acquisition", n=3, cs=["tone"], us=True, context="A"),
...     Phase("extinction", n=2, cs=["tone"], us=False, context="B"),
...     Phase("test", n=1, cs=["tone"], us=None, context="A"),
... ])
>>> design.feature_names
['US', 'tone', 'A', 'B']
>>> design.to_array()[[0, 3, 5]]
array([[ 1.,  1.,  1.,  0.],
       [ 0.,  1.,  0.,  1.],
       [nan,  1.,  1.,  0.]])
"""

# Long because it holds Phase, Design and the builders of every shipped experiment with
# their feature-matrix checks; about 200 of its lines are docstrings.

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

__all__ = ["SHIPPED_DESIGNS", "Design", "Phase", "as_feature_matrix", "shipped_design"]

_PHASE_FIELDS = ("name", "n", "cs", "us", "context", "iti", "interval_before")


def _us_pattern(us, n: int, phase: str) -> np.ndarray:
    """US value of each trial of a phase: 1, 0 or NaN (unknown)."""
    if us is None:
        return np.full(n, np.nan)
    if isinstance(us, bool | np.bool_):
        return np.full(n, float(us))
    if isinstance(us, numbers.Real):
        p = float(us)
        if not 0.0 <= p <= 1.0 or not np.isfinite(p):
            raise ValueError(
                f"Phase {phase!r}: a numeric us is the fraction of reinforced trials and must "
                f"lie in [0, 1], got {us!r}."
            )
        # Spread reinforced trials evenly and deterministically: trial j is reinforced when
        # the running count floor((j + 1) p) steps up, so exactly round-down(n p) trials are.
        j = np.arange(n)
        return (np.floor((j + 1) * p + 1e-12) > np.floor(j * p + 1e-12)).astype(float)
    if isinstance(us, str):
        raise TypeError(f"Phase {phase!r}: us must be True, False, None, a fraction or a pattern.")
    pattern = list(us)
    if len(pattern) != n:
        raise ValueError(
            f"Phase {phase!r}: a us pattern needs one entry per trial ({n}), got {len(pattern)}."
        )
    out = np.empty(n)
    for j, value in enumerate(pattern):
        if value is None:
            out[j] = np.nan
        elif value in (0, 1) and not isinstance(value, str):
            out[j] = float(value)
        else:
            raise ValueError(
                f"Phase {phase!r}: us pattern entries must be 1, 0 or None, got {value!r} at "
                f"trial {j}."
            )
    return out


@dataclasses.dataclass(frozen=True)
class Phase:
    """A block of trials of a conditioning experiment.

    Parameters
    ----------
    name : str
        Phase label (unique within a design), e.g. ``"acquisition"``.
    n : int
        Number of trials (at least 1).
    cs : sequence of str, default ()
        Conditioned stimuli present on every trial; several names make a compound;
        an empty sequence makes US-alone (or context-alone) trials.
    us : bool, None, float in [0, 1] or sequence of {1, 0, None}, default True
        ``True``: US on every trial; ``False``: never; ``None``: unknown (probe/test trials,
        the US feature is missing data); a float: partial reinforcement with that fraction of
        reinforced trials, spread evenly; a sequence: the per-trial pattern.
    context : str, optional
        Context cue present on every trial (``None``: no context feature).
    iti : float, default 1.0
        Time between successive trials of the phase (for the temporal prior).
    interval_before : float, optional
        Time from the previous phase's last trial to this phase's first (default ``iti``),
        e.g. a retention interval before a test.

    Examples
    --------
    >>> Phase("partial", n=4, cs=["light"], us=0.5, context="A").us_values()
    array([0., 1., 0., 1.])
    """

    name: str
    n: int
    cs: tuple[str, ...] = ()
    us: object = True
    context: str | None = None
    iti: float = 1.0
    interval_before: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Phase name must be a non-empty string, got {self.name!r}.")
        if isinstance(self.n, bool) or not isinstance(self.n, numbers.Integral):
            raise TypeError(f"Phase {self.name!r}: n must be an integer, got {self.n!r}.")
        if self.n < 1:
            raise ValueError(
                f"Phase {self.name!r}: n is the number of trials and must be at least 1, "
                f"got {self.n}. Drop the phase instead of giving it no trials."
            )
        cs = (self.cs,) if isinstance(self.cs, str) else tuple(self.cs)
        for stim in cs:
            if not isinstance(stim, str) or not stim:
                raise TypeError(f"Phase {self.name!r}: CS names must be strings, got {stim!r}.")
        if len(set(cs)) != len(cs):
            raise ValueError(f"Phase {self.name!r}: CS names repeat in {list(cs)}.")
        if self.context is not None and (not isinstance(self.context, str) or not self.context):
            raise TypeError(
                f"Phase {self.name!r}: context must be a string or None, got {self.context!r}."
            )
        if self.context is not None and (self.context in cs or self.context == "US"):
            raise ValueError(
                f"Phase {self.name!r}: context {self.context!r} clashes with a stimulus name."
            )
        if "US" in cs:
            raise ValueError(f"Phase {self.name!r}: 'US' is reserved; use the us argument.")
        for field in ("iti", "interval_before"):
            value = getattr(self, field)
            if field == "interval_before" and value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not np.isfinite(value)
                or value < 0
            ):
                raise ValueError(
                    f"Phase {self.name!r}: {field} is a time interval and must be a finite "
                    f"number >= 0, got {value!r}."
                )
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "cs", cs)
        _us_pattern(self.us, self.n, self.name)  # validate early

    @classmethod
    def from_dict(cls, spec: Mapping) -> Phase:
        """Build a phase from a mapping, rejecting unknown fields with a clear error.

        Parameters
        ----------
        spec : mapping
            Phase fields (``name``, ``n``, ``cs``, ``us``, ``context``, ``iti``, ...).

        Returns
        -------
        Phase
            The phase.
        """
        unknown = sorted(set(spec) - set(_PHASE_FIELDS))
        if unknown:
            raise ValueError(
                f"Unknown phase field(s) {unknown}; a phase takes {list(_PHASE_FIELDS)}."
            )
        return cls(**dict(spec))

    def us_values(self) -> np.ndarray:
        """US of each trial: 1.0 delivered, 0.0 withheld, NaN unknown.

        Returns
        -------
        numpy.ndarray (n,)
            The US per trial of the phase.
        """
        return _us_pattern(self.us, self.n, self.name)


class Design:
    """A conditioning experiment: a sequence of phases.

    Parameters
    ----------
    phases : sequence of Phase or dict
        At least one phase; dicts are passed to :meth:`Phase.from_dict`.
    name : str, optional
        Label of the design.
    contexts : sequence of str, optional
        Context features to include even if no phase uses them (coded 0 throughout), so that
        designs compared with each other share one feature set.

    Examples
    --------
    >>> d = Design([{"name": "acq", "n": 2, "cs": ["tone"], "context": "A"}], name="tiny")
    >>> d.n_trials, d.phase_of_trial().tolist()
    (2, ['acq', 'acq'])
    >>> Design([Phase("acq", n=1, cs=["tone"], context="A")], contexts=["A", "B"]).feature_names
    ['US', 'tone', 'A', 'B']
    """

    def __init__(self, phases: Sequence, *, name: str | None = None, contexts=()):
        if isinstance(phases, Phase | Mapping):
            phases = [phases]
        phases = [p if isinstance(p, Phase) else Phase.from_dict(p) for p in phases]
        if not phases:
            raise ValueError("A design needs at least one phase, got an empty list.")
        names = [p.name for p in phases]
        if len(set(names)) != len(names):
            raise ValueError(f"Phase names must be unique, got {names}.")
        self.phases = tuple(phases)
        self.name = name or "design"
        cs_names: list[str] = []
        extra = [contexts] if isinstance(contexts, str) else list(contexts)
        for ctx in extra:
            if not isinstance(ctx, str) or not ctx or ctx == "US":
                raise TypeError(f"contexts must be non-empty strings other than 'US', got {ctx!r}.")
        contexts: list[str] = []
        for p in self.phases:
            cs_names += [c for c in p.cs if c not in cs_names]
            if p.context is not None and p.context not in contexts:
                contexts.append(p.context)
        contexts += [c for c in dict.fromkeys(extra) if c not in contexts]
        clash = set(cs_names) & set(contexts)
        if clash:
            raise ValueError(f"Names {sorted(clash)} are used both as a CS and as a context.")
        self.cs_names = cs_names
        self.context_names = contexts

    def __repr__(self) -> str:
        inner = ", ".join(f"{p.name}:{p.n}" for p in self.phases)
        return f"Design({self.name!r}, [{inner}])"

    @property
    def feature_names(self) -> list[str]:
        """``["US", *cs_names, *context_names]``."""
        return ["US", *self.cs_names, *self.context_names]

    @property
    def n_trials(self) -> int:
        """Total number of trials over all phases.

        Returns
        -------
        int
            Sum of the phases' ``n``.
        """
        return sum(p.n for p in self.phases)

    def phase_slices(self) -> dict[str, slice]:
        """Trial range of each phase.

        Returns
        -------
        dict of str to slice
            ``{phase name: slice of trial indices}``.
        """
        out, start = {}, 0
        for p in self.phases:
            out[p.name] = slice(start, start + p.n)
            start += p.n
        return out

    def trial_times(self) -> np.ndarray:
        """Time stamp of every trial: the first at 0, then ``iti`` apart within a phase and
        ``interval_before`` (default the phase's ``iti``) between phases.

        Returns
        -------
        numpy.ndarray (trial,)
            Time stamps, non-decreasing.
        """
        gaps = []
        for j, p in enumerate(self.phases):
            first = p.iti if p.interval_before is None else p.interval_before
            gaps += [0.0 if j == 0 else float(first)] + [float(p.iti)] * (p.n - 1)
        return np.cumsum(gaps)

    def phase_of_trial(self) -> np.ndarray:
        """Name of the phase of every trial.

        Returns
        -------
        numpy.ndarray (trial,) of object
            Phase names, in trial order.
        """
        return np.concatenate([np.full(p.n, p.name, dtype=object) for p in self.phases])

    def to_array(self) -> np.ndarray:
        """Trial x feature float matrix of 0/1 with NaN where the US is unknown.

        Returns
        -------
        numpy.ndarray (trial, feature)
            Column 0 is the US; the others are the stimuli and contexts of ``feature_names``.
        """
        names = self.feature_names
        col = {f: i for i, f in enumerate(names)}
        rows = []
        for p in self.phases:
            block = np.zeros((p.n, len(names)))
            block[:, 0] = p.us_values()
            for stim in p.cs:
                block[:, col[stim]] = 1.0
            if p.context is not None:
                block[:, col[p.context]] = 1.0
            rows.append(block)
        return np.concatenate(rows, axis=0)

    def to_dataarray(self) -> xr.DataArray:
        """The matrix with named ``trial`` and ``feature`` coordinates and a ``phase`` coord.

        Returns
        -------
        xarray.DataArray
            Dims ``(trial, feature)``, named after the design.
        """
        return xr.DataArray(
            self.to_array(),
            dims=("trial", "feature"),
            coords={
                "trial": np.arange(self.n_trials),
                "feature": self.feature_names,
                "phase": ("trial", self.phase_of_trial().astype(str)),
            },
            name=self.name,
        )


def _renewal(contexts: str, n_acq: int, n_ext: int, n_test: int, test_us) -> list[Phase]:
    a, e, t = contexts
    return [
        Phase("acquisition", n=n_acq, cs=["tone"], us=True, context=a),
        Phase("extinction", n=n_ext, cs=["tone"], us=False, context=e),
        Phase("test", n=n_test, cs=["tone"], us=test_us, context=t),
    ]


def _latent_inhibition(pre_context: str | None, n_pre, n_acq, n_test, test_us) -> list[Phase]:
    phases = []
    if pre_context is not None:
        phases.append(Phase("preexposure", n=n_pre, cs=["tone"], us=False, context=pre_context))
    phases += [
        Phase("acquisition", n=n_acq, cs=["tone"], us=True, context="A"),
        Phase("test", n=n_test, cs=["tone"], us=test_us, context="A"),
    ]
    return phases


def _builders(n_acq: int, n_ext: int, n_test: int, n_pre: int, test_us, retention) -> dict:
    return {
        "acquisition": lambda: [
            Phase("acquisition", n=n_acq, cs=["tone"], us=True, context="A"),
            Phase("test", n=n_test, cs=["tone"], us=test_us, context="A"),
        ],
        "extinction": lambda: _renewal("AAA", n_acq, n_ext, n_test, test_us),
        "renewal_aba": lambda: _renewal("ABA", n_acq, n_ext, n_test, test_us),
        "renewal_abc": lambda: _renewal("ABC", n_acq, n_ext, n_test, test_us),
        "renewal_aab": lambda: _renewal("AAB", n_acq, n_ext, n_test, test_us),
        "renewal_aaa": lambda: _renewal("AAA", n_acq, n_ext, n_test, test_us),
        "latent_inhibition_none": lambda: _latent_inhibition(None, n_pre, n_acq, n_test, test_us),
        "latent_inhibition_same": lambda: _latent_inhibition("A", n_pre, n_acq, n_test, test_us),
        "latent_inhibition_different": lambda: _latent_inhibition(
            "B", n_pre, n_acq, n_test, test_us
        ),
        "reinstatement": lambda: [
            *_renewal("AAA", n_acq, n_ext, n_test, test_us)[:2],
            Phase("reinstatement", n=max(1, n_test), cs=[], us=True, context="A"),
            Phase("test", n=n_test, cs=["tone"], us=test_us, context="A"),
        ],
        "partial_reinforcement": lambda: [
            Phase("acquisition", n=n_acq, cs=["tone"], us=0.5, context="A"),
            Phase("extinction", n=n_ext, cs=["tone"], us=False, context="A"),
            Phase("test", n=n_test, cs=["tone"], us=test_us, context="A"),
        ],
        "spontaneous_recovery": lambda: [
            *_renewal("AAA", n_acq, n_ext, n_test, test_us)[:2],
            Phase(
                "test",
                n=n_test,
                cs=["tone"],
                us=test_us,
                context="A",
                interval_before=retention,
            ),
        ],
    }


#: Names of the designs :func:`shipped_design` builds.
SHIPPED_DESIGNS = tuple(_builders(1, 1, 1, 1, False, 1.0))

#: Every renewal design codes all three contexts, so AAA, AAB, ABA and ABC share features.
RENEWAL_CONTEXTS = ("A", "B", "C")


def shipped_design(
    name: str,
    *,
    n_acquisition: int = 15,
    n_extinction: int = 25,
    n_test: int = 1,
    n_preexposure: int = 20,
    probe: bool = False,
    retention_interval: float = 1.0,
) -> Design:
    """One of the standard designs in :data:`SHIPPED_DESIGNS`.

    Renewal designs ``renewal_XYZ`` run acquisition (tone + US) in context X, extinction
    (tone alone) in Y and a test (tone alone) in Z; ``extinction`` is ``AAA``. All renewal
    designs code the contexts A, B and C as features (absent ones as 0), so they can be
    compared trial by trial. The default phase lengths (15 acquisition, 25 extinction trials)
    follow the renewal literature; with them AAB tests above AAA.
    Latent inhibition pre-exposes the tone alone in A (``same``), B (``different``) or not at
    all (``none``) before acquisition in A. ``reinstatement`` adds US-alone trials in A after
    extinction; ``partial_reinforcement`` reinforces half of the acquisition trials;
    ``spontaneous_recovery`` is extinction in A followed by a test in A after
    ``retention_interval`` (trials are 1 time unit apart), which matters only under the
    temporal prior (``particle_filter(..., temporal_kernel=...)``): the CRP is exchangeable.

    Test trials are non-reinforced (the US is observed absent), as in a real experiment; with
    ``probe=True`` their US is missing data instead (V on the first test trial is the same
    either way, later test trials differ).

    Parameters
    ----------
    name : str
        One of :data:`SHIPPED_DESIGNS`.
    n_acquisition : int, default 15
        Acquisition trials.
    n_extinction : int, default 25
        Extinction trials.
    n_test : int, default 1
        Test trials.
    n_preexposure : int, default 20
        Pre-exposure trials (latent inhibition designs).
    probe : bool, default False
        Code the US of test trials as missing instead of absent.
    retention_interval : float, default 1.0
        Time between extinction and test (spontaneous recovery).

    Returns
    -------
    Design
        The design.

    Examples
    --------
    >>> shipped_design("renewal_aba", n_acquisition=2, n_extinction=2).to_array()[-1]
    array([0., 1., 1., 0., 0.])
    >>> shipped_design("renewal_aba", n_acquisition=2, n_extinction=2, probe=True).to_array()[-1]
    array([nan,  1.,  1.,  0.,  0.])
    """
    from pmctx.validation import check_choice, check_int, check_positive

    check_choice(name, "design name", SHIPPED_DESIGNS)
    if not isinstance(probe, bool | np.bool_):
        raise TypeError(f"probe must be True or False, got {probe!r}.")
    builders = _builders(
        check_int(n_acquisition, "n_acquisition", minimum=1),
        check_int(n_extinction, "n_extinction", minimum=1),
        check_int(n_test, "n_test", minimum=1),
        check_int(n_preexposure, "n_preexposure", minimum=1),
        None if probe else False,
        check_positive(retention_interval, "retention_interval"),
    )
    contexts = RENEWAL_CONTEXTS if name.startswith("renewal") or name == "extinction" else ()
    return Design(builders[name](), name=name, contexts=contexts)


def as_feature_matrix(features, name: str = "features") -> tuple[np.ndarray, list[str]]:
    """Validate trial features and code them as int64 with -1 for missing entries.

    Parameters
    ----------
    features : Design, xarray.DataArray or array_like of shape (n_trials, n_features)
        Binary (0/1) observations, US in column 0; NaN in the US column marks an unknown US
        (probe trials). NaN anywhere else is an error.
    name : str
        Name used in error messages.

    Returns
    -------
    coded : ndarray of int64, shape (n_trials, n_features)
        1, 0 or -1 (missing).
    feature_names : list of str

    Examples
    --------
    >>> import numpy as np
    >>> as_feature_matrix([[1, 1], [np.nan, 1]])[0]
    array([[ 1,  1],
           [-1,  1]])
    """
    from pmctx.validation import as_float_array, check_nonempty

    if isinstance(features, Design):
        names, values = features.feature_names, features.to_array()
    elif isinstance(features, xr.DataArray):
        values = features.values
        names = (
            [str(f) for f in features["feature"].values] if "feature" in features.coords else None
        )
    else:
        values, names = features, None
    arr = check_nonempty(as_float_array(values, name, ndim=2, allow_nan=True), name, unit="trial")
    observed = ~np.isnan(arr)
    if not observed[:, 1:].all():
        first = tuple(int(i) for i in np.argwhere(~observed[:, 1:])[0] + (0, 1))
        raise ValueError(
            f"{name} may be NaN only in the US column (column 0, an unknown US on probe "
            f"trials), got NaN at (trial, feature) {first}. CS and context cues are set by "
            "the experimenter: code them 0 (absent) or 1 (present)."
        )
    bad = observed & (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError(
            f"{name} must be binary (0/1; NaN for an unknown US), got {int(bad.sum())} other "
            f"value(s) such as {np.unique(arr[bad])[:5].tolist()}. Threshold them first."
        )
    # C order: the filter's compiled kernels then see one array layout (an F-ordered input,
    # e.g. a DataFrame's values, would compile them again).
    coded = np.where(observed, arr, -1.0).astype(np.int64, order="C")
    if names is None:
        names = ["US", *(f"feature_{i}" for i in range(1, arr.shape[1]))]
    return coded, list(names)

"""Specialised Gibbs step for the IBP visuo-motor model (seed 000, Algorithm 2, truncated).

The step owns the whole latent block of :func:`pmctx.models.ibp.build_model` — ``Z``, ``pi``
and, where present, ``A`` and ``Y`` — and runs sweeps of :func:`pmctx.ibp.sampler.gibbs_sweep`
(one per call below 5,000 trials, two from there on; ``sweeps=``), each: ``A`` from its
Gaussian conditional (eq. 2, Cholesky), exact ``y_kt`` updates (eq. 3-5), ``z_ik`` with the
finite-K collapsed prior ``(m_-ik + alpha/K_max) / (N + alpha/K_max)`` and incremental
residuals, a new-feature block per row (eq. 10-14 on the free columns of the truncation), then
``pi | Z``; from 50 trials on, birth/death proposals for small shared features follow
(``birth_death=``). Hyperparameters (``alpha, sigma_n, sigma_A, phi, lam, eps``) are read from
the current point, so they may be fixed data or free variables sampled by other PyMC steps.
"""

# Long because it holds the three PyMC steps of the IBP's latent block (the sweeps over Z,
# pi, A and Y; alpha; the other hyperparameters), which share the model's variable names and
# the trial-count defaults; about 200 of its lines are docstrings with runnable examples.

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.logprob.transforms import LogOddsTransform
from pytensor.graph.traversal import ancestors

from pmctx.ibp.birth_death import birth_death_move
from pmctx.ibp.conditionals import sample_pi_logit
from pmctx.ibp.hyper import HYPER_NAMES, HYPER_PRIORS, update_hyper
from pmctx.ibp.sampler import MOVES, IBPHyper, IBPState, gibbs_sweep
from pmctx.points import initial_point
from pmctx.sampling import dim_length
from pmctx.steps.base import PmctxStep
from pmctx.validation import check_int, check_int_or_auto

__all__ = [
    "ALPHA_PRIOR",
    "BIRTH_DEATH_MIN_TRIALS",
    "BIRTH_DEATH_PER_SWEEP",
    "HYPER_NAMES",
    "LEARNED_HYPER",
    "MAX_SWEEPS_PER_DRAW",
    "SWEEPS_PER_DRAW_LARGE",
    "SWEEPS_PER_DRAW_MIN_TRIALS",
    "TRIALS_SWEPT_PER_DRAW",
    "IBPAlphaGibbs",
    "IBPGibbs",
    "IBPHyperGibbs",
]

# What birth_death="auto" and sweeps="auto" choose from the number of trials, so that
# pmctx.models.ibp.sample and a plain pm.sample() run the same sampler. From
# BIRTH_DEATH_MIN_TRIALS trials on, BIRTH_DEATH_PER_SWEEP birth/death proposals for small
# shared features per sweep (pmctx.ibp.birth_death; docs/guides/ibp_defaults.md: at 60-300
# trials it raised the fits that pass the convergence check at the defaults from 13 to 18 of
# 24, at 1.3-1.6 times the CPU; at 30 trials it did not help); from
# SWEEPS_PER_DRAW_MIN_TRIALS on, each step is SWEEPS_PER_DRAW_LARGE sweeps: at N = 10,000 one
# sweep per draw left the tail ESS of loglik at 341 of the 400 the convergence check asks for.
# Below BIRTH_DEATH_MIN_TRIALS, each step sweeps until it has visited TRIALS_SWEPT_PER_DRAW
# rows (at most MAX_SWEEPS_PER_DRAW sweeps): there a sweep costs far less than pm.sample's own
# work per draw, and one sweep per draw left default fits at 30-45 trials short of their
# convergence check (docs/guides/ibp_defaults.md: cases 0-9 of its benchmark). From 50 trials
# on each sweep carries 5 birth/death proposals, which cost more than the sweep: 6 sweeps per
# draw at 70 trials took 3.3 times the CPU of one, so one it is.
BIRTH_DEATH_MIN_TRIALS = 50
BIRTH_DEATH_PER_SWEEP = 5
SWEEPS_PER_DRAW_MIN_TRIALS = 5000
SWEEPS_PER_DRAW_LARGE = 2
TRIALS_SWEPT_PER_DRAW = 400
MAX_SWEEPS_PER_DRAW = 16


def _default_birth_death(n_trials: int) -> int:
    """Birth/death proposals per sweep that ``birth_death="auto"`` runs on ``n_trials`` rows."""
    return BIRTH_DEATH_PER_SWEEP if n_trials >= BIRTH_DEATH_MIN_TRIALS else 0


def _default_sweeps(n_trials: int) -> int:
    """Sweeps per step that ``sweeps="auto"`` runs on ``n_trials`` rows."""
    if n_trials >= SWEEPS_PER_DRAW_MIN_TRIALS:
        return SWEEPS_PER_DRAW_LARGE
    if n_trials >= BIRTH_DEATH_MIN_TRIALS:
        return 1
    return min(MAX_SWEEPS_PER_DRAW, -(-TRIALS_SWEPT_PER_DRAW // max(n_trials, 1)))


def _force_offset_fn(step, model):
    """``point -> F_offset`` when the model has a user's force offset (build_model), else None.

    The offset (e.g. a regression of the forces on covariates) is read from the current
    point, so the steps update the IBP latents given the residual ``F - F_offset``.
    """
    if "F_offset" not in model.named_vars:
        return None
    return step.compile_fn(
        model.replace_rvs_by_values([model["F_offset"]]), inputs=list(model.value_vars)
    )


def _residual_forces(forces, offset_fn, point):
    if offset_fn is None:
        return forces
    return forces - np.asarray(offset_fn(point)[0], dtype=np.float64)


def _observed(model, name):
    if name not in model.named_vars:
        return None
    rv = model[name]
    if rv not in model.observed_RVs:
        raise ValueError(f"IBPGibbs expects {name!r} to be an observed variable of the model.")
    return np.asarray(model.rvs_to_values[rv].eval())


class IBPGibbs(PmctxStep):
    """Specialised IBP Gibbs sweeps over ``Z``, ``pi``, ``A`` and ``Y``: one or two per step.

    Parameters
    ----------
    vars : list, optional
        Defaults to the model's ``Z``, ``pi``, ``A`` (with forces) and ``Y`` (with cues); the
        step must own all of them because its ``Z`` updates integrate ``pi`` out.
    model : pm.Model, optional
        A model from :func:`pmctx.models.ibp.build_model` (its variable names are used).
    rng : int or Generator, optional
    new_features : bool, default True
        Run the new-feature block move (without it the sampler cannot grow K). Only with
        ``moves="legacy"``: the joint row move always draws new features.
    block_size : int, default 3
        Size of the random block of shared columns redrawn jointly per row (mixing between
        split and merged features); 0 switches it off.
    moves : {"joint", "legacy"}, default "joint"
        ``"joint"`` draws each row's block together with its number of singletons, the
        singletons' ``A`` and ``Y`` integrated out (:mod:`pmctx.ibp.joint_row`), so a row can
        trade a singleton for several shared features in one exact move. ``"legacy"`` is the
        original update (singletons given the shared columns), kept for comparison.
    birth_death : int or "auto", default "auto"
        Birth/death Metropolis-Hastings proposals per sweep for features owned by 2-19 rows
        (:mod:`pmctx.ibp.birth_death`: a data-driven birth with its exact reverse density),
        after the Gibbs sweep; ``pi`` is then redrawn given ``Z``. ``"auto"``:
        ``BIRTH_DEATH_PER_SWEEP`` (5) from ``BIRTH_DEATH_MIN_TRIALS`` (50) trials on, where it
        raised the share of default fits that converge (60-300 trials) and the ESS of
        ``n_shared`` per CPU second (1,000 trials; docs/guides/ibp_defaults.md), else 0.
    sweeps : int or "auto", default "auto"
        Sweeps (each with its birth/death proposals) per step, so per stored
        draw: on large data sets a sweep costs less than storing its draw, and the draws of
        slowly changing quantities (``loglik``) are less correlated. ``"auto"``:
        ``SWEEPS_PER_DRAW_LARGE`` (2) from ``SWEEPS_PER_DRAW_MIN_TRIALS`` (5,000) trials on;
        1 from ``BIRTH_DEATH_MIN_TRIALS`` (50) on; below, enough sweeps to visit
        ``TRIALS_SWEPT_PER_DRAW`` (400) rows, at most ``MAX_SWEEPS_PER_DRAW`` (16): 14 at
        30 trials, 9 at 45. The step's
        ``birth_death`` and ``sweeps`` attributes hold the numbers chosen.

    Notes
    -----
    Sampler stats: ``n_active`` (columns in use), ``n_singletons`` (columns used by one row
    only: with learned hyperparameters the posterior often keeps one such feature explaining
    a single noisy trial, so ``n_active - n_singletons`` is the number of features the data
    pin down), ``n_new_features`` (features added in the step's sweeps) and ``truncation_hit``
    (some row left no free column: raise ``K_max``).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.ibp import build_model
    >>> rng = np.random.default_rng(0)
    >>> model = build_model(F=rng.normal(size=(6, 2)), X=rng.integers(0, 2, (6, 4)), K_max=3)
    >>> with model:
    ...     step = IBPGibbs()
    >>> sorted(step.value_names)
    ['A', 'Y', 'Z', 'pi_logodds__']
    """

    name = "ibp_gibbs"
    owns_block = "ibp"  # Z, pi, A, Y as tagged by pmctx.models.ibp.build_model
    stats_dtypes_shapes = {
        "n_active": (np.int64, []),
        "n_singletons": (np.int64, []),
        "n_new_features": (np.int64, []),
        "birth_death_accepted": (np.int64, []),
        "truncation_hit": (bool, []),
    }

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        new_features: bool = True,
        block_size: int = 3,
        moves: str = "joint",
        birth_death: int | str = "auto",
        sweeps: int | str = "auto",
    ):
        model = pm.modelcontext(model)
        missing = [n for n in ("Z", "pi") if n not in model.named_vars]
        missing += [n for n in HYPER_NAMES if n not in model.named_vars]
        if missing:
            raise ValueError(
                f"IBPGibbs needs a model from pmctx.models.ibp.build_model; {missing} are "
                "missing from this model."
            )
        self.F = _observed(model, "F")
        self.X = _observed(model, "X")
        owned = ["Z", "pi"] + (["A"] if self.F is not None else [])
        owned += ["Y"] if self.X is not None else []
        if vars is None:
            vars = [model[n] for n in owned]
        super().__init__(vars, model=model, rng=rng)
        got = sorted(self.value_names)
        if got != sorted(model.rvs_to_values[model[n]].name for n in owned):
            raise ValueError(
                f"IBPGibbs updates {owned} together (its Z updates integrate pi out); got "
                f"{got}. Pass vars=None to let it pick them."
            )
        pi_rv = model["pi"]
        self._pi_key = model.rvs_to_values[pi_rv].name
        transform = model.rvs_to_transforms.get(pi_rv)
        if transform is not None and not isinstance(transform, LogOddsTransform):
            raise ValueError(f"pi must use the default logodds transform, not {transform}.")
        self._pi_logit_space = transform is not None
        self.k_max = int(model["Z"].type.shape[1] or dim_length(model, "feature"))
        n = dim_length(model, "trial")
        self._F = np.zeros((n, 0)) if self.F is None else np.asarray(self.F, dtype=np.float64)
        self._X = np.zeros((n, 0), np.int64) if self.X is None else self.X.astype(np.int64)
        self._offset_fn = _force_offset_fn(self, model)
        # Hyperparameters with priors must be read from the point, not drawn: replace RVs.
        hyper = model.replace_rvs_by_values([model[h] for h in HYPER_NAMES])
        self._hyper_fn = self.compile_fn(hyper, inputs=list(model.value_vars))
        # Fixed hyperparameters are read once; ones with priors are read from every point.
        values = set(model.value_vars)
        free = [v for v in ancestors(hyper) if v in values]
        self._fixed_hyper = None
        if not free:
            self._fixed_hyper = IBPHyper(*(float(v) for v in self._hyper_fn(initial_point(model))))
        self.new_features = bool(new_features)
        self.block_size = check_int(block_size, "block_size", minimum=0, maximum=12)
        if moves not in MOVES:
            raise ValueError(f"moves must be one of {sorted(MOVES)}; got {moves!r}.")
        if moves == "joint" and not new_features:
            # The joint row move draws each row's singletons (new features) itself.
            raise ValueError(
                "new_features=False needs moves='legacy': the default joint row move draws "
                "new features as part of each row's update. Pass moves='legacy' to freeze them."
            )
        self.moves = moves
        self.birth_death = check_int_or_auto(birth_death, "birth_death", minimum=0)
        if self.birth_death is None:
            self.birth_death = _default_birth_death(n)
        self.sweeps = check_int_or_auto(sweeps, "sweeps", minimum=1)
        if self.sweeps is None:
            self.sweeps = _default_sweeps(n)

    def current_hyper(self, point) -> IBPHyper:
        """The hyperparameters at ``point``: fixed ones, or the current values of random ones.

        Parameters
        ----------
        point : dict
            The current point.

        Returns
        -------
        pmctx.ibp.sampler.IBPHyper
            The hyperparameters.
        """
        if self._fixed_hyper is not None:
            return self._fixed_hyper
        values = [float(v) for v in self._hyper_fn(point)]
        return IBPHyper(*values)

    def step(self, point):
        """One update of ``Z``, ``A``, ``Y`` and ``pi``: sweep, then birth/death.

        The other variables of ``point`` are kept.

        Parameters
        ----------
        point : dict
            The current point (value variables by name).

        Returns
        -------
        point : dict
            The new point.
        stats : list of dict
            One stats dict (see ``stats_dtypes_shapes``).
        """
        hyper = self.current_hyper(point)
        n = self._F.shape[0]
        A = point["A"] if self.F is not None else np.zeros((self.k_max, 0))
        Y = point["Y"] if self.X is not None else np.zeros((self.k_max, 0))
        state = IBPState.from_arrays(point["Z"].copy(), np.array(A), np.array(Y))
        forces = _residual_forces(self._F, self._offset_fn, point)
        added = hits = born_or_died = 0
        for _ in range(self.sweeps):
            sweep_added, sweep_hits = gibbs_sweep(
                state,
                forces,
                self._X,
                hyper,
                self.rng,
                new_features=self.new_features,
                block_size=self.block_size,
                moves=self.moves,
            )
            added, hits = added + sweep_added, hits + sweep_hits
            for _ in range(self.birth_death):
                born_or_died += birth_death_move(
                    state.Z, state.A, state.Y, forces, self._X, hyper, self.rng
                )[1]
            if self.birth_death:
                # The moves target the posterior with pi integrated out: redraw pi | Z.
                m = state.Z.sum(axis=0)
                state.pi_logit = sample_pi_logit(m, n, hyper.alpha, self.k_max, self.rng)
        new = dict(point)
        new["Z"] = state.Z.reshape(n, self.k_max)
        if self.F is not None:
            new["A"] = state.A
        if self.X is not None:
            new["Y"] = state.Y
        logit = state.pi_logit
        new[self._pi_key] = logit if self._pi_logit_space else 1.0 / (1.0 + np.exp(-logit))
        stats = {
            "n_active": state.n_active,
            "n_singletons": int(np.count_nonzero(state.Z.sum(axis=0) == 1)),
            "n_new_features": added,
            "birth_death_accepted": born_or_died,
            "truncation_hit": hits > 0,
        }
        return new, [stats]


ALPHA_PRIOR = HYPER_PRIORS["alpha"]  # Gamma(shape, rate) that build_model gives alpha


class IBPAlphaGibbs(PmctxStep):
    """Conjugate Gibbs update of the IBP concentration ``alpha`` given ``pi``.

    With ``alpha ~ Gamma(a, b)`` and ``pi_k ~ Beta(alpha/K_max, 1)``,
    ``alpha | pi ~ Gamma(a + K_max, b - sum_k log(pi_k) / K_max)`` exactly.

    Parameters
    ----------
    vars : list, optional
        Defaults to ``[model["alpha"]]``.
    prior : (float, float), default ``ALPHA_PRIOR``
        Shape and rate of the Gamma prior; must match the model's.
    model, rng
        As in :class:`IBPGibbs`.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.ibp import build_model
    >>> model = build_model(X=np.eye(4, dtype=int), K_max=3, alpha="prior")
    >>> with model:
    ...     step = IBPAlphaGibbs(rng=0)
    >>> step.value_names
    ['alpha_log__']
    """

    name = "ibp_alpha_gibbs"
    owns_block = "ibp_alpha"  # alpha="prior" in pmctx.models.ibp.build_model
    stats_dtypes_shapes = {"alpha": (np.float64, [])}

    def __init__(self, vars=None, *, prior=ALPHA_PRIOR, model=None, rng=None):
        model = pm.modelcontext(model)
        if "alpha" not in model.named_vars or model["alpha"] not in model.free_RVs:
            raise ValueError("IBPAlphaGibbs needs a model whose alpha has a prior (alpha='prior').")
        super().__init__([model["alpha"]] if vars is None else vars, model=model, rng=rng)
        if self.value_names != [model.rvs_to_values[model["alpha"]].name]:
            raise ValueError(f"IBPAlphaGibbs updates alpha only, got {self.value_names}.")
        transform = model.rvs_to_transforms.get(model["alpha"])
        self._log_space = transform is not None
        self.shape, self.rate = (float(v) for v in prior)
        self.k_max = dim_length(model, "feature")
        self._pi_key = model.rvs_to_values[model["pi"]].name
        self._pi_logit = isinstance(model.rvs_to_transforms.get(model["pi"]), LogOddsTransform)

    def conditional(self, point):
        """Shape and rate of ``alpha | pi``.

        Parameters
        ----------
        point : dict
            The current point (``pi``'s value is read).

        Returns
        -------
        shape : float
            Gamma shape of ``alpha | pi``.
        rate : float
            Gamma rate.
        """
        value = np.asarray(point[self._pi_key], dtype=np.float64)
        log_pi = -np.logaddexp(0.0, -value) if self._pi_logit else np.log(value)
        return self.shape + self.k_max, self.rate - log_pi.sum() / self.k_max

    def step(self, point):
        """One update of ``alpha`` from its Gamma conditional.

        The other variables of ``point`` are kept.

        Parameters
        ----------
        point : dict
            The current point (value variables by name).

        Returns
        -------
        point : dict
            The new point.
        stats : list of dict
            One stats dict (``alpha``).
        """
        shape, rate = self.conditional(point)
        alpha = self.rng.gamma(shape, 1.0 / rate)
        new = dict(point)
        value = np.log(alpha) if self._log_space else alpha
        new[self.value_names[0]] = np.asarray(value, dtype=np.float64)
        return new, [{"alpha": float(alpha)}]


# Model variables IBPHyperGibbs updates: the two variances (their square roots sigma_n,
# sigma_A are deterministics of the model) and the three probabilities.
LEARNED_HYPER = ("sigma_n2", "sigma_A2", "phi", "lam", "eps")


class IBPHyperGibbs(PmctxStep):
    """Updates of the IBP hyperparameters that have priors, given ``Z``, ``A``, ``Y``.

    Conjugate draws of ``sigma_n^2 | F, Z, A`` and ``sigma_A^2 | A`` (inverse gamma) and
    ``phi | Y`` (beta); slice sampling of ``lam`` then ``eps`` on their exact noisy-OR
    conditional (:mod:`pmctx.ibp.hyper`). Each update leaves the posterior invariant.

    Parameters
    ----------
    vars : list, optional
        Defaults to every one of ``sigma_n2, sigma_A2, phi, lam, eps`` that has a prior in
        the model (the others are fixed numbers).
    priors : dict, optional
        Prior parameters; default ``pmctx.ibp.hyper.HYPER_PRIORS`` (what
        :func:`pmctx.models.ibp.build_model` uses). They must match the model's.
    model, rng
        As in :class:`IBPGibbs`.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.ibp import build_model
    >>> model = build_model(F=np.ones((4, 2)), X=np.eye(4, dtype=int), K_max=3, lam=0.9)
    >>> with model:
    ...     step = IBPHyperGibbs(rng=0)
    >>> step.value_names
    ['sigma_n2_log__', 'sigma_A2_log__', 'phi_logodds__', 'eps_logodds__']
    """

    name = "ibp_hyper_gibbs"
    # The hyperparameters build_model gives a prior (sigma_n2, sigma_A2, phi, lam, eps);
    # fixed numbers are data, not free variables, and are not tagged.
    owns_block = "ibp_hyper"
    updates_partial_block = True  # each hyperparameter's update is exact on its own
    stats_dtypes_shapes = {
        name: (np.float64, []) for name in ("sigma_n", "sigma_A", "phi", "lam", "eps")
    }

    def __init__(self, vars=None, *, priors=None, model=None, rng=None):
        model = pm.modelcontext(model)
        learned = [n for n in LEARNED_HYPER if n in model.named_vars and model[n] in model.free_RVs]
        if not learned:
            raise ValueError(
                "IBPHyperGibbs needs a model from pmctx.models.ibp.build_model with at least "
                f"one of {LEARNED_HYPER} given a prior; all are fixed numbers here."
            )
        super().__init__([model[n] for n in learned] if vars is None else vars, model=model,
                         rng=rng)  # fmt: skip
        by_value = {model.rvs_to_values[model[n]].name: n for n in learned}
        unknown = [v for v in self.value_names if v not in by_value]
        if unknown:
            raise ValueError(f"IBPHyperGibbs updates {learned} only; got {unknown}.")
        self.learned = [by_value[v] for v in self.value_names]
        self._keys = {n: model.rvs_to_values[model[n]].name for n in learned}
        self._transformed = {n: model.rvs_to_transforms.get(model[n]) is not None for n in learned}
        self.priors = {**HYPER_PRIORS, **(priors or {})}
        self.k_max = dim_length(model, "feature")
        self.F = _observed(model, "F")
        self.X = _observed(model, "X")
        n = dim_length(model, "trial")
        self._F = np.zeros((n, 0)) if self.F is None else np.asarray(self.F, dtype=np.float64)
        self._X = np.zeros((n, 0), np.int64) if self.X is None else self.X.astype(np.int64)
        hyper = model.replace_rvs_by_values([model[h] for h in HYPER_NAMES])
        self._hyper_fn = self.compile_fn(hyper, inputs=list(model.value_vars))
        self._offset_fn = _force_offset_fn(self, model)

    def _to_value(self, name, x):
        if not self._transformed[name]:
            return np.asarray(x, dtype=np.float64)
        if name in ("sigma_n2", "sigma_A2"):
            return np.asarray(np.log(x), dtype=np.float64)
        return np.asarray(np.log(x) - np.log1p(-x), dtype=np.float64)

    def step(self, point):
        """One update of the model's random hyperparameters (conjugate and slice updates).

        The other variables of ``point`` are kept.

        Parameters
        ----------
        point : dict
            The current point (value variables by name).

        Returns
        -------
        point : dict
            The new point.
        stats : list of dict
            One stats dict (``sigma_n``, ``sigma_A``, ``phi``, ``lam``, ``eps``).
        """
        values = dict(zip(HYPER_NAMES, (float(v) for v in self._hyper_fn(point))))
        n = self._F.shape[0]
        Z = np.asarray(point["Z"]).reshape(n, self.k_max)
        A = point["A"] if self.F is not None else np.zeros((self.k_max, 0))
        Y = point["Y"] if self.X is not None else np.zeros((self.k_max, 0), np.int64)
        forces = self._F
        if "sigma_n2" in self.learned:
            forces = _residual_forces(self._F, self._offset_fn, point)
        # sigma_n2 -> sigma_n: update_hyper works on the model's hyperparameter names.
        learned = [name.removesuffix("2") for name in self.learned]
        update_hyper(values, learned, Z, A, Y, forces, self._X, self.priors, self.rng)
        new = dict(point)
        for name in self.learned:
            value = values[name.removesuffix("2")]
            value = value**2 if name in ("sigma_n2", "sigma_A2") else value
            new[self._keys[name]] = self._to_value(name, value)
        stats = {k: values[k] for k in ("sigma_n", "sigma_A", "phi", "lam", "eps")}
        return new, [stats]

"""PyMC step methods for the low-rank von Mises orientation map (``pmctx.models.vonmises_map``).

:class:`AugmentedVonMisesGibbs` samples the latent doubled angles ``o`` (dims row, col): explicit
horizontal (then vertical) edge modes and all columns (then rows) at once, ``(R+1)^2`` work per
node, a thin wrapper around :func:`pmctx.vonmises.augmented.augmented_sweep`, with the
pinwheel-pair jumps of :mod:`pmctx.steps.vonmises_jumps`. :class:`ClusterVonMisesGibbs` adds
a reflection cluster move (Swendsen-Wang with the observations as external field) after each
augmented sweep, which reflects whole regions (when to use which:
docs/guides/choosing_a_sampler.md).
:class:`ChainFFBSVonMises` draws a von Mises chain's angles exactly.

The steps read ``kappa``, ``kappa_obs``, the observations, the optional per-node ``signal``
strength and the node prior from the model at every step, so a model whose ``kappa_obs``
(or ``kappa``) is a random variable (``kappa_obs="prior"``) keeps working with its current
value; :class:`KappaObsSlice` is the exact update of such a ``kappa_obs``.
"""

from __future__ import annotations

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable

from pmctx.steps.base import PmctxStep
from pmctx.steps.vonmises_jumps import PairJumps
from pmctx.vonmises._numba_vector import log_joint_compiled
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.chain import sample_chain
from pmctx.vonmises.cluster import cluster_sweep
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR, kappa_obs_statistics, sample_kappa_obs
from pmctx.vonmises.maps import smoothness
from pmctx.vonmises.potentials import natural_field, wrap_angle

__all__ = [
    "AugmentedVonMisesGibbs",
    "ChainFFBSVonMises",
    "ClusterVonMisesGibbs",
    "KappaObsSlice",
    "ModelParameters",
]

_PARAMETERS = ("kappa", "kappa_obs", "z_filled", "obs_mask", "prior_mean", "prior_kappa")


class ModelParameters:
    """Current values of named model quantities (data containers or random variables).

    Shared data containers are read directly; anything else (a random variable such as
    ``kappa_obs="prior"``, or an expression) is compiled as a function of the point, with
    random variables replaced by their value variables.

    Parameters
    ----------
    step : PmctxStep
        The step (its model and compiler are used).
    names : sequence of str
        Names of the model quantities to read.
    """

    def __init__(self, step: PmctxStep, names):
        model = step.model
        self.shared = {n: model[n] for n in names if isinstance(model[n], SharedVariable)}
        self.computed = [n for n in names if n not in self.shared]
        self._fn = None
        if self.computed:
            outputs = model.replace_rvs_by_values([model[n] for n in self.computed])
            self._fn = step.compile_fn(outputs, inputs=model.value_vars)

    def __call__(self, point) -> dict:
        values = {name: var.get_value() for name, var in self.shared.items()}
        if self._fn is not None:
            values.update(zip(self.computed, self._fn(point)))
        return values


class _VonMisesMapStep(PmctxStep):
    """Shared plumbing: read the model's parameters, run ``n_sweeps`` kernel sweeps.

    ``n_sweeps=None`` takes the class's :attr:`default_n_sweeps`. The stored ``log_joint``
    stat is computed by a compiled kernel (:func:`~pmctx.vonmises._numba_vector.
    log_joint_compiled`), so the fixed cost per stored draw is small next to a sweep.
    """

    stats_dtypes_shapes = {
        "smoothness": (np.float64, []),
        "log_joint": (np.float64, []),
    }
    #: Kernel sweeps per stored draw when ``n_sweeps`` is not given.
    default_n_sweeps = 1

    def __init__(self, vars=None, *, model=None, rng=None, n_sweeps: int | None = None):
        import pymc as pm

        model = pm.modelcontext(model)
        if vars is None:
            vars = [model["o"]]
        super().__init__(vars, model=model, rng=rng)
        if len(self.vars) != 1:
            raise ValueError(
                f"{type(self).__name__} updates exactly one variable (the angle grid 'o'), got "
                f"{self.value_names}."
            )
        missing = [name for name in (*_PARAMETERS, "rank") if name not in model.named_vars]
        if missing:
            raise ValueError(
                f"{type(self).__name__} needs a model built by "
                f"pmctx.models.vonmises_map.build_model; the model lacks {missing}."
            )
        self.rank = int(model["rank"].get_value())
        if n_sweeps is None:
            n_sweeps = self.default_n_sweeps
        if isinstance(n_sweeps, bool) or int(n_sweeps) != n_sweeps or n_sweeps < 1:
            raise ValueError(f"n_sweeps must be an integer >= 1, got {n_sweeps!r}.")
        self.n_sweeps = int(n_sweeps)
        optional = ("signal",) if "signal" in model.named_vars else ()
        self._parameters = ModelParameters(self, (*_PARAMETERS, *optional))

    @staticmethod
    def _field(params) -> np.ndarray:
        """The natural field of the data (and the optional node prior) at ``params``."""
        return natural_field(
            params["z_filled"],
            params["obs_mask"],
            float(params["kappa_obs"]),
            prior_mean=params["prior_mean"],
            prior_kappa=float(params["prior_kappa"]),
            signal=params.get("signal"),
        )

    def step(self, point):
        params = self._parameters(point)
        kappa = float(params["kappa"])
        field = self._field(params)
        key = self.value_names[0]
        o = self._run_sweeps(wrap_angle(point[key]), field, kappa)
        new_point = dict(point)
        new_point[key] = o.astype(point[key].dtype)
        stats = {
            "smoothness": smoothness(o),
            "log_joint": log_joint_compiled(o, field, kappa, self.rank),
            **self._draw_stats(),
        }
        return new_point, [stats]

    def _draw_stats(self) -> dict:
        """Stats of a subclass's own moves in this draw (its ``stats_dtypes_shapes`` extras)."""
        return {}

    def _run_sweeps(self, o, field, kappa: float):
        """``n_sweeps`` kernel sweeps of ``o`` (a step running them elsewhere overrides this)."""
        for _ in range(self.n_sweeps):
            o = self.sweep(o, field, kappa, self.rank, self.rng)
        return o

    @staticmethod
    def sweep(o, field, kappa, rank, rng):  # pragma: no cover - overridden
        raise NotImplementedError


class AugmentedVonMisesGibbs(PairJumps, _VonMisesMapStep):
    """Auxiliary-variable block Gibbs: all columns, then all rows, exactly and at once.

    Eight sweeps per stored draw by default (:attr:`default_n_sweeps`): on the demo map
    theta's bulk ESS per CPU second is then about 2.8 times that of one sweep per draw
    (``benchmarks/bench_vonmises_step.py``, ``benchmarks/results/vonmises_step.json``).
    ``n_sweeps=1`` stores every sweep. After every sweep the step proposes the exact
    pinwheel-pair jumps it learnt during tuning (:mod:`pmctx.steps.vonmises_jumps`), which
    move the chain between pinwheel layouts that sweeps alone leave only every thousand
    sweeps or so; a map with none to learn costs only the learning during tuning.

    Parameters
    ----------
    vars : list, optional
        The angle grid variable (default: the model's ``o``).
    model : pm.Model, optional
        The model (default: the context's).
    rng : int or Generator, optional
        Random seed or generator.
    n_sweeps : int, optional
        Kernel sweeps per PyMC draw (default :attr:`default_n_sweeps`, 8).
    n_jumps : int, optional
        Proposals of each learnt jump after every sweep (default
        :data:`~pmctx.vonmises.jumps.DEFAULT_JUMPS_PER_SWEEP`); 0 turns the jumps off.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = AugmentedVonMisesGibbs()
    >>> step.name, step.n_sweeps, step.n_jumps
    ('vonmises_augmented', 8, 10)
    """

    name = "vonmises_augmented"
    default_n_sweeps = 8
    owns_block = "vonmises_map"  # o, as tagged by pmctx.models.vonmises_map.build_model
    sweep = staticmethod(augmented_sweep)
    stats_dtypes_shapes = {
        **_VonMisesMapStep.stats_dtypes_shapes,
        "jumps": (np.int64, []),
    }

    def __init__(self, vars=None, *, model=None, rng=None, n_sweeps=None, n_jumps=None):
        super().__init__(vars, model=model, rng=rng, n_sweeps=n_sweeps)
        self._init_jumps(n_jumps, self.model["z_filled"].get_value().shape)

    def _run_sweeps(self, o, field, kappa: float):
        for _ in range(self.n_sweeps):
            o = self.sweep(o, field, kappa, self.rank, self.rng)
            if self.jump_moves:
                o = self._jump(o, field, kappa)
            self._observe(o)
        return o


class ClusterVonMisesGibbs(_VonMisesMapStep):
    """Augmented block Gibbs plus a reflection cluster move per sweep (both exact).

    The cluster move (:mod:`pmctx.vonmises.cluster`) reflects connected regions about one of
    the ``R + 1`` symmetry axes of the edge potential, accepting each region by heat bath on
    the observations. Eight sweeps per stored draw by default, as
    :class:`AugmentedVonMisesGibbs`.

    Parameters
    ----------
    vars : list, optional
        The angle grid variable (default: the model's ``o``).
    model : pm.Model, optional
        The model (default: the context's).
    rng : int or Generator, optional
        Random seed or generator.
    n_sweeps : int, optional
        Kernel sweeps per PyMC draw (default :attr:`default_n_sweeps`, 8).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = ClusterVonMisesGibbs()
    >>> step.name
    'vonmises_cluster'
    """

    name = "vonmises_cluster"
    default_n_sweeps = 8
    sweep = staticmethod(cluster_sweep)


class KappaObsSlice(PmctxStep):
    """Exact update of the observation concentration ``kappa_obs`` given the angles.

    Slice sampling on ``log kappa_obs`` of the von Mises likelihood of the observed nodes
    (with its ``2 pi I0`` normaliser, per-node ``signal`` strengths if the model has them)
    times the Gamma prior that ``build_model(kappa_obs="prior")`` declares
    (:mod:`pmctx.vonmises.hyper`). Works for the orientation map (angles ``o``) and the chain
    model (angles ``x``).

    Parameters
    ----------
    vars : list, optional
        Defaults to ``[model["kappa_obs"]]`` (a random variable with a log transform).
    angles : str, optional
        Name of the latent angle variable (default: ``"o"`` or ``"x"``, whichever exists).
    prior : (float, float), default ``KAPPA_OBS_PRIOR``
        Shape and rate of the Gamma prior; must match the model's.
    model, rng
        As in :class:`AugmentedVonMisesGibbs`.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs="prior", rank=2):
    ...     step = KappaObsSlice(rng=0)
    >>> step.value_names
    ['kappa_obs_log__']
    """

    name = "vonmises_kappa_obs_slice"
    owns_block = "vonmises_kappa_obs"  # kappa_obs="prior" in pmctx.models.vonmises_map
    stats_dtypes_shapes = {"kappa_obs": (np.float64, [])}

    def __init__(self, vars=None, *, angles=None, prior=KAPPA_OBS_PRIOR, model=None, rng=None):
        import pymc as pm

        model = pm.modelcontext(model)
        if "kappa_obs" not in model.named_vars or model["kappa_obs"] not in model.free_RVs:
            raise ValueError(
                "KappaObsSlice needs a model whose kappa_obs has a prior: build it with "
                "kappa_obs='prior'."
            )
        super().__init__([model["kappa_obs"]] if vars is None else vars, model=model, rng=rng)
        value = model.rvs_to_values[model["kappa_obs"]]
        if self.vars != [value]:
            raise ValueError(f"KappaObsSlice updates kappa_obs only, got {self.value_names}.")
        self._log_space = model.rvs_to_transforms.get(model["kappa_obs"]) is not None
        if angles is None:
            angles = next((n for n in ("o", "x") if n in model.named_vars), None)
        if angles is None or angles not in model.named_vars:
            raise ValueError("KappaObsSlice needs the latent angles: pass angles='<name>'.")
        names = ["z_filled", "obs_mask", angles]
        if "signal" in model.named_vars:
            names.append("signal")
        self._angles = angles
        self._parameters = ModelParameters(self, names)
        self.prior = tuple(float(v) for v in prior)

    def step(self, point):
        """One update of ``kappa_obs`` by slice sampling.

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
            One stats dict (``kappa_obs``).
        """
        params = self._parameters(point)
        stats = kappa_obs_statistics(
            params[self._angles], params["z_filled"], params["obs_mask"], params.get("signal")
        )
        key = self.value_names[0]
        current = float(np.exp(point[key]) if self._log_space else point[key])
        kappa_obs = sample_kappa_obs(stats, current, self.rng, prior=self.prior)
        new = dict(point)
        new[key] = np.asarray(np.log(kappa_obs) if self._log_space else kappa_obs, np.float64)
        return new, [{"kappa_obs": kappa_obs}]


def _model_with(model, names, who):
    missing = [name for name in names if name not in model.named_vars]
    if missing:
        raise ValueError(
            f"{who} needs a model built by pmctx.models.vonmises_chain.build_model; the model "
            f"lacks {missing}."
        )


class ChainFFBSVonMises(PmctxStep):
    """Exact joint draw of a von Mises chain's angles ``x`` by forward-filter backward-sample.

    Reads ``kappa``, ``kappa_obs`` (numbers or random variables), the observations and the
    signal strengths from the model built by :func:`pmctx.models.vonmises_chain.build_model`.

    Parameters
    ----------
    vars : list, optional
        The angle variable (default: the model's ``x``).
    model : pm.Model, optional
        The model (default: the context's).
    rng : int or Generator, optional
        Random seed or generator.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_chain import build_model
    >>> with build_model(np.array([0.1, np.nan, 0.3]), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = ChainFFBSVonMises(rng=0)
    >>> step.value_names
    ['x_circular__']
    """

    name = "vonmises_chain_ffbs"
    stats_dtypes_shapes = {"log_evidence": (np.float64, [])}
    owns_block = "vonmises_chain"  # x, as tagged by pmctx.models.vonmises_chain.build_model

    def __init__(self, vars=None, *, model=None, rng=None):
        import pymc as pm

        model = pm.modelcontext(model)
        _model_with(model, ("x", "kappa", "kappa_obs", "rank", "z_filled", "obs_mask"), "Step")
        super().__init__([model["x"]] if vars is None else vars, model=model, rng=rng)
        if self.vars != [model.rvs_to_values[model["x"]]]:
            raise ValueError(f"ChainFFBSVonMises updates x only, got {self.value_names}.")
        self.rank = int(model["rank"].get_value())
        names = ["kappa", "kappa_obs", "z_filled", "obs_mask"]
        self._parameters = ModelParameters(
            self, names + (["signal"] if "signal" in model.named_vars else [])
        )

    def step(self, point):
        """One update of the chain's angles ``x`` (an exact joint draw).

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
            One stats dict (``log_evidence``).
        """
        params = self._parameters(point)
        field = natural_field(
            params["z_filled"],
            params["obs_mask"],
            float(params["kappa_obs"]),
            signal=params.get("signal"),
        )
        x, log_evidence = sample_chain(field, float(params["kappa"]), self.rank, self.rng)
        key = self.value_names[0]
        new = dict(point)
        new[key] = x.astype(point[key].dtype)
        return new, [{"log_evidence": log_evidence}]

"""PyMC step methods for the low-rank von Mises orientation map (``pmctx.models.vonmises_map``).

Three interchangeable Gibbs samplers for the latent doubled angles ``o`` (dims row, col),
thin wrappers around the pure kernels of :mod:`pmctx.vonmises`:

* :class:`PointwiseVonMisesGibbs` -- every node from its exact full conditional
  (checkerboard scan; ``(R+1)^4`` mixture terms per node);
* :class:`ColumnFFBSVonMises` -- the seed note's column blocks by forward-filter
  backward-sample with the circle normaliser (``(R+1)^4`` per node, half the columns at once);
* :class:`AugmentedVonMisesGibbs` -- explicit horizontal (then vertical) edge modes and all
  columns (then rows) at once, ``(R+1)^2`` per node. The fastest; use it by default.

The steps read ``kappa``, ``kappa_obs``, the observations and the node prior from the model's
data containers at every step, so a model whose ``kappa`` is later given a prior (a random
variable of the same name) keeps working with the current value of ``kappa``.
"""

from __future__ import annotations

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable

from pmctx.steps.base import PmctxStep
from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.ffbs import ffbs_sweep
from pmctx.vonmises.maps import smoothness
from pmctx.vonmises.pointwise import pointwise_sweep
from pmctx.vonmises.potentials import log_joint, natural_field, wrap_angle

__all__ = ["AugmentedVonMisesGibbs", "ColumnFFBSVonMises", "PointwiseVonMisesGibbs"]

_PARAMETERS = ("kappa", "kappa_obs", "z_filled", "obs_mask", "prior_mean", "prior_kappa")


class _VonMisesMapStep(PmctxStep):
    """Shared plumbing: read the model's parameters, run ``n_sweeps`` kernel sweeps."""

    stats_dtypes_shapes = {
        "smoothness": (np.float64, []),
        "log_joint": (np.float64, []),
    }

    def __init__(self, vars=None, *, model=None, rng=None, n_sweeps: int = 1):
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
        self.n_sweeps = int(n_sweeps)
        shared = [name for name in _PARAMETERS if isinstance(model[name], SharedVariable)]
        self._shared = {name: model[name] for name in shared}
        computed = [name for name in _PARAMETERS if name not in shared]
        self._computed = computed
        # Parameters that depend on free variables (e.g. a prior on kappa_obs) are read from
        # the point: random variables in their graphs are replaced by their values.
        outputs = model.replace_rvs_by_values([model[name] for name in computed])
        self._compute = (
            self.compile_fn(outputs, inputs=list(model.value_vars)) if computed else None
        )

    def _parameters(self, point) -> dict:
        values = {name: var.get_value() for name, var in self._shared.items()}
        if self._compute is not None:
            values.update(zip(self._computed, self._compute(point)))
        return values

    def step(self, point):
        params = self._parameters(point)
        kappa = float(params["kappa"])
        field = natural_field(
            params["z_filled"],
            params["obs_mask"],
            float(params["kappa_obs"]),
            prior_mean=params["prior_mean"],
            prior_kappa=float(params["prior_kappa"]),
        )
        key = self.value_names[0]
        o = wrap_angle(point[key])
        for _ in range(self.n_sweeps):
            o = self.sweep(o, field, kappa, self.rank, self.rng)
        new_point = dict(point)
        new_point[key] = o.astype(point[key].dtype)
        stats = {
            "smoothness": smoothness(o),
            "log_joint": log_joint(o, field, kappa, self.rank),
        }
        return new_point, [stats]

    @staticmethod
    def sweep(o, field, kappa, rank, rng):  # pragma: no cover - overridden
        raise NotImplementedError


class PointwiseVonMisesGibbs(_VonMisesMapStep):
    """Point-wise Gibbs: every angle from its exact full conditional (checkerboard scan).

    Parameters
    ----------
    vars : list, optional
        The angle grid variable (default: the model's ``o``).
    model : pm.Model, optional
    rng : int or Generator, optional
    n_sweeps : int, default 1
        Kernel sweeps per PyMC draw.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.vonmises_map import build_model
    >>> model = build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2)
    >>> with model:
    ...     step = PointwiseVonMisesGibbs()
    >>> step.rank
    2
    """

    name = "vonmises_pointwise"
    sweep = staticmethod(pointwise_sweep)


class ColumnFFBSVonMises(_VonMisesMapStep):
    """Seed §4.3 column blocks by forward-filter backward-sample (circle normaliser).

    Same parameters as :class:`PointwiseVonMisesGibbs`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = ColumnFFBSVonMises(n_sweeps=2)
    >>> step.n_sweeps
    2
    """

    name = "vonmises_column_ffbs"
    sweep = staticmethod(ffbs_sweep)


class AugmentedVonMisesGibbs(_VonMisesMapStep):
    """Auxiliary-variable block Gibbs: all columns, then all rows, exactly and at once.

    Same parameters as :class:`PointwiseVonMisesGibbs`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = AugmentedVonMisesGibbs()
    >>> step.name
    'vonmises_augmented'
    """

    name = "vonmises_augmented"
    owns_block = "vonmises_map"  # o, as tagged by pmctx.models.vonmises_map.build_model
    sweep = staticmethod(augmented_sweep)

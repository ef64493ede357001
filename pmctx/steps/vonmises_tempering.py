"""Replica-exchange step of the orientation map: block Gibbs at every rung of a kappa ladder.

:class:`TemperedVonMisesGibbs` keeps ``K`` maps, one per rung of a geometric ladder from
``kappa_min`` up to the model's ``kappa``; every step sweeps each map with the exact
auxiliary-variable block sampler at its rung's ``kappa`` and offers swaps between
neighbouring rungs (:func:`pmctx.vonmises.tempering.tempered_sweep`). The map stored in the
trace is the last rung's, at the model's ``kappa``: its draws are from the map posterior,
and the states it receives from the lower rungs let it change pinwheel layouts that a single
chain at a large ``kappa`` leaves only every thousand sweeps or so.

The other rungs live in the step object. When ``pm.sample`` hands the step a map that is not
the one it last returned (a new chain, or a user's start), every rung restarts from that map.

It is ``reconstruct(sampler="tempered")``; the default sampler is the augmented one, whose
pinwheel-pair jumps (:mod:`pmctx.steps.vonmises_jumps`) mixed better per CPU second on the
demo map at ``kappa = 5`` (fit seeds 0-4: pinwheel-count R-hat 1.002-1.007 at 1.07-1.49
times the CPU of the plain augmented run, against 1.009-1.024 at 1.29-1.55 times here).
"""

from __future__ import annotations

import math

import numpy as np

from pmctx.steps.vonmises import _VonMisesMapStep
from pmctx.vonmises import SWEEPS
from pmctx.vonmises._numba_vector import log_joint_compiled
from pmctx.vonmises.maps import smoothness
from pmctx.vonmises.potentials import wrap_angle
from pmctx.vonmises.tempering import kappa_ladder, tempered_sweep

__all__ = [
    "TemperedVonMisesGibbs",
    "default_n_replicas",
]

#: Lowest rung relative to the target when ``kappa_min`` is not given.
DEFAULT_KAPPA_MIN_RATIO = 0.8
# Standard deviation of dE/dlog(kappa) per sqrt(edge) on the demo map (0.73 at kappa 3-5),
# and the spacing in units of it that gives swap rates of about 0.2 there.
_ENERGY_SD_PER_SQRT_EDGE = 0.75
_SPACING_IN_SD = 1.7
#: Swap passes after each sweep of the rungs (even pairs, then odd pairs).
DEFAULT_SWAP_PASSES = 2


def default_n_replicas(shape, kappa: float, kappa_min: float) -> int:
    """Rungs for swap rates of about 0.2 between neighbours on a map of ``shape``.

    The edge energy's fluctuations grow as the square root of the number of edges, so the
    ladder's log-spacing must shrink as ``1 / sqrt(edges)``: about 8 rungs from 4 to 5 on a
    50 x 50 map.

    Parameters
    ----------
    shape : tuple of int
        Grid shape ``(M, N)``.
    kappa, kappa_min : float
        Top and bottom of the ladder.

    Returns
    -------
    int
        The number of rungs (at least 2).

    Examples
    --------
    >>> default_n_replicas((50, 50), 5.0, 4.0)
    8
    """
    n_rows, n_cols = shape
    n_edges = n_rows * (n_cols - 1) + (n_rows - 1) * n_cols
    sd = _ENERGY_SD_PER_SQRT_EDGE * math.sqrt(max(n_edges, 1))
    return 1 + max(1, math.ceil(math.log(kappa / kappa_min) * sd / _SPACING_IN_SD))


class TemperedVonMisesGibbs(_VonMisesMapStep):
    """Replica exchange across a kappa ladder, each rung swept by augmented block Gibbs.

    Every step sweeps all ``n_replicas`` maps (about ``n_replicas`` times the CPU of one
    augmented sweep) and offers swaps between neighbouring rungs; the stored map is the one
    at the model's ``kappa``. One step per stored draw by default, so that with 8 rungs a
    draw costs about as much as one of :class:`~pmctx.steps.vonmises.AugmentedVonMisesGibbs`
    (8 sweeps).

    Parameters
    ----------
    vars : list, optional
        The angle grid variable (default: the model's ``o``).
    n_replicas : int, optional
        Rungs of the ladder, the target included (default: :func:`default_n_replicas`, about
        8 on a 50 x 50 map).
    kappa_min : float, optional
        Lowest rung, ``0 < kappa_min <= kappa`` (default ``0.8 kappa``). Choose it where a
        single chain mixes well, e.g. the ``kappa`` that held-out pixels favour.
    sweep : {"augmented", "cluster", "ffbs", "pointwise"}, default "augmented"
        Exact sweep run at every rung.
    model : pm.Model, optional
        The model (default: the context's).
    rng : int or Generator, optional
        Random seed or generator.
    n_sweeps : int, default 1
        Tempered steps per stored draw.
    n_swap_passes : int, default 2
        Swap passes after each sweep of the rungs (even pairs, odd pairs, even, ...); passes
        after the second reuse the energies already computed
        (:func:`pmctx.vonmises.tempering.swap_passes`).

    Raises
    ------
    ValueError
        When the model's ``kappa_obs`` is a random variable (the rungs share the data term,
        so ``kappa_obs`` would have to be updated given all rungs), or an option is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = TemperedVonMisesGibbs(n_replicas=3, kappa_min=1.0, rng=0)
    >>> step.ladder(2.0).tolist()
    [1.0, 1.4142135623730951, 2.0]
    """

    name = "vonmises_tempered"
    stats_dtypes_shapes = {
        **_VonMisesMapStep.stats_dtypes_shapes,
        "swap_rate": (np.float64, []),
    }
    default_n_sweeps = 1

    def __init__(
        self,
        vars=None,
        *,
        n_replicas: int | None = None,
        kappa_min: float | None = None,
        sweep: str = "augmented",
        model=None,
        rng=None,
        n_sweeps: int | None = None,
        n_swap_passes: int = DEFAULT_SWAP_PASSES,
    ):
        super().__init__(vars, model=model, rng=rng, n_sweeps=n_sweeps)
        if self.model["kappa_obs"] in self.model.free_RVs:
            raise ValueError(
                "TemperedVonMisesGibbs needs a fixed kappa_obs (a number), got a random "
                "variable (kappa_obs='prior'): fit kappa_obs first (or choose it by held-out "
                "pixels) and pass its value."
            )
        if sweep not in SWEEPS:
            raise ValueError(f"sweep must be one of {sorted(SWEEPS)}, got {sweep!r}.")
        if n_replicas is not None and (
            isinstance(n_replicas, bool) or int(n_replicas) != n_replicas or n_replicas < 2
        ):
            raise ValueError(
                f"n_replicas must be an integer >= 2 (the target and at least one lower "
                f"rung), got {n_replicas!r}; omit it for the default."
            )
        if kappa_min is not None and not (
            isinstance(kappa_min, int | float) and math.isfinite(kappa_min) and kappa_min > 0
        ):
            raise ValueError(f"kappa_min must be a positive number, got {kappa_min!r}.")
        if (
            isinstance(n_swap_passes, bool)
            or not isinstance(n_swap_passes, int | np.integer)
            or n_swap_passes < 1
        ):
            raise ValueError(
                f"n_swap_passes must be an integer >= 1, got {n_swap_passes!r}; pass e.g. 2 "
                "(even pairs, then odd pairs)."
            )
        self.n_swap_passes = int(n_swap_passes)
        self.n_replicas = None if n_replicas is None else int(n_replicas)
        self.kappa_min = None if kappa_min is None else float(kappa_min)
        self._sweep = SWEEPS[sweep]
        self._shape = tuple(self.model["z_filled"].get_value().shape)
        self._states = None
        self._returned = None

    def ladder(self, kappa: float) -> np.ndarray:
        """The rungs for a target ``kappa`` (increasing, the last equal to ``kappa``).

        Parameters
        ----------
        kappa : float
            The model's smoothing concentration.

        Returns
        -------
        numpy.ndarray
            The ladder.
        """
        low = DEFAULT_KAPPA_MIN_RATIO * kappa if self.kappa_min is None else self.kappa_min
        if low > kappa:
            raise ValueError(
                f"kappa_min ({low}) exceeds the model's kappa ({kappa}): the ladder runs "
                "from kappa_min up to kappa; pass a smaller kappa_min."
            )
        n = self.n_replicas or default_n_replicas(self._shape, kappa, low)
        return kappa_ladder(kappa, n, kappa_min=low)

    def step(self, point):
        """Sweep every rung, offer swaps, and return the target rung's map.

        Parameters
        ----------
        point : dict
            The current point (value variables by name).

        Returns
        -------
        point : dict
            The new point (``o`` from the target rung).
        stats : list of dict
            ``smoothness``, ``log_joint`` of the stored map and ``swap_rate`` (fraction of
            offered swaps accepted in this draw).
        """
        params = self._parameters(point)
        kappa = float(params["kappa"])
        field = self._field(params)
        key = self.value_names[0]
        ladder = self.ladder(kappa)
        if (
            self._states is None
            or self._states.shape[0] != ladder.size
            or self._returned is None
            or not np.array_equal(point[key], self._returned)
        ):  # a new chain or start: every rung starts from the given map
            self._states = np.repeat(wrap_angle(point[key])[None], ladder.size, axis=0)
        offered = accepted = 0.0
        for _ in range(self.n_sweeps):
            self._states, swaps = tempered_sweep(
                self._states, field, ladder, self.rank, self.rng, sweep=self._sweep,
                n_swap_passes=self.n_swap_passes,
            )  # fmt: skip
            offered += np.sum(~np.isnan(swaps))
            accepted += np.nansum(swaps)
        o = self._states[-1]
        new_point = dict(point)
        new_point[key] = o.astype(point[key].dtype)
        self._returned = new_point[key].copy()
        stats = {
            "smoothness": smoothness(o),
            "log_joint": log_joint_compiled(o, field, kappa, self.rank),
            "swap_rate": float(accepted / offered) if offered else float("nan"),
        }
        return new_point, [stats]

"""Collapsed Gibbs step of the chain smoother: concentrations with the angles summed out.

:class:`ChainCollapsedGibbs` owns the chain's angles ``x`` together with its learned
concentrations (``kappa`` and/or ``kappa_obs`` declared ``"prior"``) and updates them as one
block with the kernel :func:`pmctx.vonmises.chain_collapsed.collapsed_update`: slice updates
of the concentrations from ``p(kappa, kappa_obs | y)`` (the angles integrated out by the
exact forward pass), then an exact FFBS draw of ``x`` given the new values: updating the
concentrations given ``x`` instead mixes slowly on long series. It is what
``pmctx.models.vonmises_chain.build_model`` tags for plain ``pm.sample()`` when a
concentration is learned.
"""

from __future__ import annotations

import numpy as np

from pmctx.steps.base import PmctxStep
from pmctx.steps.vonmises import ModelParameters
from pmctx.vonmises.chain import CHAIN_KAPPA_PRIOR
from pmctx.vonmises.chain_collapsed import collapsed_update
from pmctx.vonmises.hyper import KAPPA_OBS_PRIOR

__all__ = ["ChainCollapsedGibbs"]

_NEEDED = ("x", "kappa", "kappa_obs", "rank", "z_filled", "obs_mask")


class ChainCollapsedGibbs(PmctxStep):
    """Blocked collapsed Gibbs update of a von Mises chain's ``x`` and learned concentrations.

    Parameters
    ----------
    vars : list, optional
        Default: ``x`` plus whichever of ``kappa``, ``kappa_obs`` are random variables.
    kappa_prior, kappa_obs_prior : (float, float)
        Gamma(shape, rate) priors; must match the model's (those of ``build_model``).
    n_steps : int, default 1
        Slice updates of each learned concentration per draw (before ``x`` is drawn).
    model : pm.Model, optional
    rng : int or Generator, optional

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_chain import build_model
    >>> y = np.array([0.1, np.nan, 0.3, 0.2])
    >>> with build_model(y, kappa="prior", kappa_obs="prior", rank=2):
    ...     step = ChainCollapsedGibbs(rng=0)
    >>> step.value_names
    ['x_circular__', 'kappa_log__', 'kappa_obs_log__']
    """

    name = "vonmises_chain_collapsed"
    owns_block = "vonmises_chain_collapsed"  # x, kappa, kappa_obs as build_model tags them
    stats_dtypes_shapes = {
        "kappa": (np.float64, []),
        "kappa_obs": (np.float64, []),
        "log_evidence": (np.float64, []),
        "log_marginal_likelihood": (np.float64, []),
    }

    def __init__(
        self,
        vars=None,
        *,
        kappa_prior=CHAIN_KAPPA_PRIOR,
        kappa_obs_prior=KAPPA_OBS_PRIOR,
        n_steps: int = 1,
        model=None,
        rng=None,
    ):
        import pymc as pm

        model = pm.modelcontext(model)
        missing = [name for name in _NEEDED if name not in model.named_vars]
        if missing:
            raise ValueError(
                "ChainCollapsedGibbs needs a model built by pmctx.models.vonmises_chain."
                f"build_model; the model lacks {missing}."
            )
        free = [model[n] for n in ("x", "kappa", "kappa_obs") if model[n] in model.free_RVs]
        super().__init__(free if vars is None else vars, model=model, rng=rng)
        x_value = model.rvs_to_values[model["x"]]
        if x_value not in self.vars:
            raise ValueError(
                "ChainCollapsedGibbs must update x together with the concentrations (the "
                f"angles are redrawn after them); got {self.value_names}."
            )
        self._learned = {}
        for name in ("kappa", "kappa_obs"):
            rv = model[name]
            value = model.rvs_to_values.get(rv)
            if value is not None and value in self.vars:
                self._learned[name] = (value.name, model.rvs_to_transforms.get(rv) is not None)
        extra = set(self.value_names) - {x_value.name} - {v[0] for v in self._learned.values()}
        if extra:
            raise ValueError(f"ChainCollapsedGibbs updates x, kappa, kappa_obs only; got {extra}.")
        self._x_key = x_value.name
        self.rank = int(model["rank"].get_value())
        self.kappa_prior = tuple(float(v) for v in kappa_prior)
        self.kappa_obs_prior = tuple(float(v) for v in kappa_obs_prior)
        self.n_steps = int(n_steps)
        names = ["kappa", "kappa_obs", "z_filled", "obs_mask"]
        if "signal" in model.named_vars:
            names.append("signal")
        self._parameters = ModelParameters(self, names)

    def step(self, point):
        """One collapsed update; returns ``(new point, [stats])``.

        Parameters
        ----------
        point : dict
            Current values of the model's value variables.

        Returns
        -------
        tuple of (dict, list of dict)
            The point with new ``x`` (and learned concentrations), and this step's stats.
        """
        params = self._parameters(point)
        state = collapsed_update(
            params["z_filled"],
            np.asarray(params["obs_mask"]).astype(bool),
            float(params["kappa"]),
            float(params["kappa_obs"]),
            self.rank,
            self.rng,
            signal=params.get("signal"),
            learn_kappa="kappa" in self._learned,
            learn_kappa_obs="kappa_obs" in self._learned,
            kappa_prior=self.kappa_prior,
            kappa_obs_prior=self.kappa_obs_prior,
            n_steps=self.n_steps,
        )
        new = dict(point)
        new[self._x_key] = state.x.astype(point[self._x_key].dtype)
        for name, (key, log_space) in self._learned.items():
            value = getattr(state, name)
            new[key] = np.asarray(np.log(value) if log_space else value, np.float64)
        stats = {
            "kappa": state.kappa,
            "kappa_obs": state.kappa_obs,
            "log_evidence": state.log_evidence,
            "log_marginal_likelihood": state.log_likelihood,
        }
        return new, [stats]

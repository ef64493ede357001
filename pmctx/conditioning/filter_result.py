"""The result of a CRP filter run: predictions, cause posteriors, particles, as xarray.

:class:`CRPFilterResult` is what :func:`pmctx.conditioning.particle_filter.particle_filter` and
:func:`pmctx.conditioning.exact.exact_filter` return: the predicted US probability before
each trial, the filtering posterior over causes, the particles' cause counts and assignments
and the log predictive of each trial; :meth:`CRPFilterResult.to_dataset` and
:meth:`CRPFilterResult.to_inference_data` turn them into xarray and ArviZ objects.

Examples
--------
>>> import numpy as np
>>> res = CRPFilterResult(V=np.array([0.5, 0.7]), cause_posterior=np.array([[1.0], [1.0]]),
...                       n_causes=np.ones((2, 3), int), log_predictive=np.log([0.25, 0.5]),
...                       assignments=np.zeros((3, 2), int), feature_names=["US", "A"],
...                       settings={"alpha": 1.0}, V_weighted=np.array([0.5, 0.7]))
>>> round(res.log_marginal_likelihood, 4), dict(res.to_dataset().sizes)
(-2.0794, {'trial': 2, 'cause': 1, 'particle': 3})
"""

from __future__ import annotations

import dataclasses

import numpy as np
import xarray as xr

__all__ = ["CRPFilterResult"]


@dataclasses.dataclass(frozen=True)
class CRPFilterResult:
    """What :func:`~pmctx.conditioning.particle_filter.particle_filter` (or
    :func:`~pmctx.conditioning.exact_filter`) returns.

    Attributes
    ----------
    V : ndarray (trial,)
        Predicted US probability before each trial, the US treated as missing (eq. 6).
    cause_posterior : ndarray (trial, cause)
        Filtering posterior P(c_t = k | F_1:t), causes labelled by order of first use.
    n_causes : ndarray (trial, particle)
        Causes in use in each particle after each trial.
    log_predictive : ndarray (trial,)
        log P(F_t | F_1:t-1); its sum is the log marginal likelihood estimate.
    assignments : ndarray (particle, trial)
        Cause of every trial in each final particle.
    feature_names : list of str
    settings : dict
    V_weighted : ndarray (trial,)
        The full Bayesian predictive P(US_t | F_1:t-1, other features of trial t), which also
        weights each particle by how well it predicts the trial's CSs and context. Eq. 6 (and
        ``V``) averages particles without that weight; the two differ when a trial's cues are
        surprising under some histories.
    """

    V: np.ndarray
    cause_posterior: np.ndarray
    n_causes: np.ndarray
    log_predictive: np.ndarray
    assignments: np.ndarray
    feature_names: list
    settings: dict
    V_weighted: np.ndarray | None = None

    @property
    def log_marginal_likelihood(self) -> float:
        """Log marginal likelihood of all features, the sum of ``log_predictive``.

        Returns
        -------
        float
            ``log p(F_1, ..., F_T)`` as estimated by the filter.
        """
        return float(self.log_predictive.sum())

    @property
    def mean_n_causes(self) -> np.ndarray:
        """Mean number of causes in use after each trial."""
        return self.n_causes.mean(axis=1)

    def to_dataset(self) -> xr.Dataset:
        """The result as an ``xarray.Dataset`` with ``trial``, ``cause`` and ``particle`` dims.

        Returns
        -------
        xarray.Dataset
            ``V``, ``V_weighted``, ``cause_posterior``, ``n_causes``, ``log_predictive`` and
            ``assignments``; the settings and the log marginal likelihood as attributes.
        """
        T, K = self.cause_posterior.shape
        return xr.Dataset(
            {
                "V": ("trial", self.V),
                "V_weighted": ("trial", self.V_weighted),
                "cause_posterior": (("trial", "cause"), self.cause_posterior),
                "n_causes": (("trial", "particle"), self.n_causes),
                "log_predictive": ("trial", self.log_predictive),
                "assignments": (("particle", "trial"), self.assignments),
            },
            coords={"trial": np.arange(T), "cause": np.arange(K)},
            attrs={
                **{k: str(v) for k, v in self.settings.items()},
                "log_marginal_likelihood": self.log_marginal_likelihood,
            },
        )

    def to_inference_data(self):
        """Results tree: particles as draws of one chain, filter summaries as a group.

        Returns
        -------
        xarray.DataTree
            Posterior ``n_causes`` and ``assignment`` (chain 0, one draw per particle) and a
            ``filtering`` group with ``V``, ``cause_posterior`` and ``log_predictive``.
        """
        from pmctx.io import to_inference_data

        idata = to_inference_data(
            {"n_causes": self.n_causes.T[None], "assignment": self.assignments[None]},
            dims={"n_causes": ["trial"], "assignment": ["trial"]},
            attrs={"inference": "crp_particle_filter"},
        )
        filt = self.to_dataset()[["V", "cause_posterior", "log_predictive"]]
        idata["filtering"] = filt
        return idata

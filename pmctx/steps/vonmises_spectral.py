"""Step method of the band-pass orientation prior: exact HMC on the white noise ``nu``.

The model of :func:`pmctx.models.vonmises_spectral.build_spectral_model` declares white
noise ``nu`` (shape ``(2, P, Q)``: real and imaginary parts, each ``N(0, 1/2)``), the field
``w = F' sqrt(S) F nu`` as a deterministic FFT filter, and observed doubled angles
``z ~ VonMises(arg w, kappa_obs)``. :class:`SpectralFieldHMC` updates ``nu`` by one HMC move
of :mod:`pmctx.vonmises.spectral_hmc` (the whitened coefficients are ``u = F nu``, a
unitary change of variables, so the prior ``exp(-|nu|^2)`` is ``exp(-|u|^2)``), reading the
data, the spectrum and the current ``kappa_obs`` from the model at every step; during
tuning it adapts its step size. ``kappa_obs`` with a prior is updated by
:class:`pmctx.steps.vonmises.KappaObsSlice` (which reads the map's angles ``o``).
"""

from __future__ import annotations

import numpy as np
import scipy.fft

from pmctx.steps.base import PmctxStep
from pmctx.steps.vonmises import ModelParameters
from pmctx.vonmises.spectral import CURVATURE, MAX_LEAPFROG, TARGET_ACCEPT, TRAJECTORY
from pmctx.vonmises.spectral_hmc import hmc_move, potential_and_gradient

__all__ = ["SpectralFieldHMC"]


class SpectralFieldHMC(PmctxStep):
    """One exact HMC move of the band-pass field's white noise ``nu`` per step.

    Parameters
    ----------
    vars : list, optional
        Defaults to ``[model["nu"]]``.
    model : pm.Model, optional
        A model of :func:`~pmctx.models.vonmises_spectral.build_spectral_model`.
    rng : int or numpy.random.Generator, optional
        Source of randomness outside ``pm.sample``.
    step_size : float, default 0.1
        Initial leapfrog step size (adapted while ``tune`` is true).

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_spectral import build_spectral_model
    >>> with build_spectral_model(np.full((4, 4), 0.5), spacing=3.0, kappa_obs=2.0):
    ...     step = SpectralFieldHMC(rng=0)
    >>> step.value_names
    ['nu']
    """

    name = "vonmises_spectral_hmc"
    stats_dtypes_shapes = {
        "accept": (np.float64, []),
        "step_size": (np.float64, []),
        "n_leap": (np.int64, []),
    }

    def __init__(self, vars=None, *, model=None, rng=None, step_size: float = 0.1):
        import pymc as pm

        model = pm.modelcontext(model)
        missing = [n for n in ("nu", "z_filled", "obs_mask", "spectrum") if n not in model]
        if missing:
            raise ValueError(
                f"SpectralFieldHMC needs a model built by build_spectral_model; it lacks {missing}."
            )
        super().__init__([model["nu"]] if vars is None else vars, model=model, rng=rng)
        if self.value_names != ["nu"]:
            raise ValueError(f"SpectralFieldHMC updates nu only, got {self.value_names}.")
        self._parameters = ModelParameters(self, ["z_filled", "obs_mask", "spectrum", "kappa_obs"])
        self.step_size = float(step_size)
        self.tune = True
        self._moves = 0

    def stop_tuning(self):
        """Freeze the step size (``pm.sample`` calls this when tuning ends)."""
        self.tune = False

    def step(self, point):
        """One HMC move of ``nu`` (the other variables of ``point`` are kept).

        Parameters
        ----------
        point : dict
            The current point (value variables by name).

        Returns
        -------
        point : dict
            The new point.
        stats : list of dict
            One stats dict (``accept``, ``step_size``, ``n_leap``).
        """
        params = self._parameters(point)
        spectrum = np.asarray(params["spectrum"], dtype=np.float64)
        kappa_obs = float(params["kappa_obs"])
        observed = np.asarray(params["obs_mask"]).astype(bool)
        z = np.asarray(params["z_filled"], dtype=np.float64)[observed]
        rows, cols = np.nonzero(observed)
        obs = rows * spectrum.shape[1] + cols
        root = np.sqrt(spectrum)
        nu = np.asarray(point["nu"], dtype=np.float64)
        u = scipy.fft.fft2(nu[0] + 1j * nu[1], norm="ortho")
        args = (root, obs, np.cos(z), np.sin(z), kappa_obs)
        state = potential_and_gradient(u, *args)
        mass = 2.0 + spectrum * (CURVATURE * kappa_obs * obs.size / spectrum.size)
        n_leap = int(min(MAX_LEAPFROG, np.ceil(TRAJECTORY / self.step_size)))
        jitter = self.step_size * self.rng.uniform(0.9, 1.1)
        state, prob = hmc_move(state, *args, mass, jitter, n_leap, self.rng)
        if self.tune:  # Robbins-Monro on log step size, towards TARGET_ACCEPT
            self.step_size *= float(np.exp((prob - TARGET_ACCEPT) / np.sqrt(self._moves + 2.0)))
        self._moves += 1
        noise = scipy.fft.ifft2(state.u, norm="ortho")
        new = dict(point)
        new["nu"] = np.stack([noise.real, noise.imag])
        return new, [{"accept": prob, "step_size": jitter, "n_leap": n_leap}]

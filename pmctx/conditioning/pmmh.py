"""Particle marginal Metropolis-Hastings for the latent-cause filter's parameters.

LCM's process model is the ``M``-particle filter itself: ``V_t`` is *one run* of the filter,
so given the parameters it is random through the filter's random numbers ``u`` (resampling
and cause draws). The likelihood of a subject's responses is then the average over ``u``,

.. math:: p(y | \\theta) = E_u\\, p(y | V(\\theta, u), \\theta_{resp}),

and ``p(y | V(theta, u))`` with a fresh ``u ~ U(0, 1)`` is an *unbiased* estimate of it.
:class:`ParticleMarginalMH` is the pseudo-marginal sampler on that estimate (Andrieu & Roberts
2009): it proposes new filter parameters with a random walk on the unconstrained scale and a
fresh ``u``, and accepts with the ratio of the model's log densities at the proposal (new
``u``) and at the current state with the **stored** ``u`` of the current state (never a
re-estimate: refreshing the current estimate targets a different distribution). Equivalently
it is Metropolis-Hastings on the extended target ``p(theta) p(u) p(y | V(theta, u))`` with
``u`` proposed from its prior, so Gibbs updates of the response parameters given the stored
``V`` (NUTS, in :func:`~pmctx.conditioning.posterior.sample_subject`) leave it invariant.

Freezing ``u`` for a whole chain instead (common random numbers) targets ``p(theta | y, u)``,
the posterior *given one realisation of the filter's noise*: its intervals are too narrow and
centred on the wrong point (issue 13: 80% intervals covered 0.42-0.55).

With ``method="local_map"`` the filter is deterministic, ``u`` is ignored and the step is an
ordinary adaptive random-walk Metropolis step on an exact likelihood.

During tuning the proposal adapts (Andrieu & Thoms 2008, algorithm 4): the global scale by
Robbins-Monro towards ``target_accept`` and the covariance from the tuning draws. After tuning
the step measures the standard deviation of the log-likelihood estimate at the current point
over ``n_noise_checks`` fresh ``u`` and reports it in every draw's ``loglik_sd`` stat
(Doucet et al. 2015: around 1-1.5 or less keeps the chain mixing; larger values make it stick).

Examples
--------
>>> import numpy as np, pymc as pm
>>> from pmctx.conditioning.likelihood import SubjectLikelihood, recovery_design
>>> from pmctx.conditioning.posterior import FilterV
>>> design = recovery_design(20)
>>> lik = SubjectLikelihood(np.full(20, 0.5), design, n_particles=10, rng=0)
>>> op = FilterV(lik)
>>> with pm.Model():
...     alpha = pm.Uniform("alpha", 0.0, 5.0)
...     V = op(alpha, 1.0, 1.0, 0.0, 1.0)
...     _ = pm.Normal("cr", V, 0.2, observed=lik.responses)
...     step = ParticleMarginalMH([alpha], op, rng=1)
...     point, stats = step.step({"alpha_interval__": np.array(0.0)})
>>> sorted(stats[0])
['accept', 'accepted', 'loglik', 'loglik_sd', 'scaling', 'tune']
"""

from __future__ import annotations

import numpy as np

from pmctx.conditioning.particle_filter import common_uniforms
from pmctx.steps.base import PmctxStep
from pmctx.validation import check_int

__all__ = ["ParticleMarginalMH"]


class ParticleMarginalMH(PmctxStep):
    """Pseudo-marginal random-walk Metropolis-Hastings on the filter parameters.

    Parameters
    ----------
    vars : list of model variables
        The filter parameters the ``filter_op`` reads (continuous, any transform).
    filter_op : :class:`~pmctx.conditioning.posterior.FilterV`
        The Op computing ``V``; the step sets its random numbers.
    target_accept : float, default 0.25
        Acceptance rate the scale adapts to during tuning.
    scaling : float, optional
        Initial random-walk scale on the unconstrained scale (default ``1 / sqrt(d)``).
    n_noise_checks : int, default 10
        Fresh filter runs used (once, when tuning ends) to measure the log-likelihood noise.
    tune : bool, default True
    model, rng
        As :class:`~pmctx.steps.base.PmctxStep`.
    """

    name = "particle_marginal_mh"
    stats_dtypes_shapes = {
        "accept": (np.float64, []),
        "accepted": (bool, []),
        "tune": (bool, []),
        "scaling": (np.float64, []),
        "loglik": (np.float64, []),
        "loglik_sd": (np.float64, []),
    }

    def __init__(
        self,
        vars,
        filter_op,
        *,
        target_accept=0.25,
        scaling=None,
        n_noise_checks=10,
        tune=True,
        model=None,
        rng=None,
    ):
        super().__init__(vars, model=model, rng=rng)
        if not 0.0 < target_accept < 1.0:
            raise ValueError(f"target_accept must lie in (0, 1), got {target_accept}.")
        self.op = filter_op
        self.target_accept = float(target_accept)
        self.n_noise_checks = check_int(n_noise_checks, "n_noise_checks", minimum=2)
        self.tune = bool(tune)
        start = self.model.initial_point()
        self._shapes = [np.shape(start[n]) for n in self.value_names]
        self._sizes = [int(np.prod(s)) for s in self._shapes]
        d = sum(self._sizes)
        self._log_scale = np.log(1.0 / np.sqrt(d) if scaling is None else float(scaling))
        self._chol = np.eye(d)
        self._n_tuned = 0
        self._mean = np.zeros(d)
        self._m2 = np.zeros((d, d))
        self._loglik_sd = np.nan
        self._uniforms = None
        self.logp = self.compile_fn(self.model.logp())
        self.loglik = self.compile_fn(self.model.observedlogp)

    # --- the state ------------------------------------------------------------------------
    def _fresh_uniforms(self):
        lik = self.op.likelihood
        if lik.deterministic and self._uniforms is not None:
            return self._uniforms
        return common_uniforms(lik.F.shape[0], lik.n_particles, self.rng)

    def _pack(self, point):
        return np.concatenate([np.ravel(point[n]) for n in self.value_names])

    def _unpack(self, point, q):
        new = dict(point)
        i = 0
        for name, shape, size in zip(self.value_names, self._shapes, self._sizes, strict=True):
            new[name] = q[i : i + size].reshape(shape)
            i += size
        return new

    def log_acceptance(self, logp_proposed, logp_current):
        """Log Metropolis-Hastings ratio (symmetric proposal; ``u`` proposed from its prior)."""
        return logp_proposed - logp_current

    # --- one step -------------------------------------------------------------------------
    def step(self, point):
        if self._uniforms is None:  # first call of this chain: draw u for the start
            self._uniforms = self._fresh_uniforms()
        # The current state's stored u: its V is cached, so this does not rerun the filter.
        self.op.set_uniforms(self._uniforms)
        logp_current = self.logp(point)
        current_state = self.op.get_state()
        if not self.tune and np.isnan(self._loglik_sd):
            self._loglik_sd = self._measure_noise(point, current_state)
        q = self._pack(point)
        step = np.exp(self._log_scale) * (self._chol @ self.rng.standard_normal(q.size))
        proposal = self._unpack(point, q + step)
        uniforms = self._fresh_uniforms()
        self.op.set_uniforms(uniforms)
        logp_proposed = self.logp(proposal)
        log_ratio = self.log_acceptance(logp_proposed, logp_current)
        if not np.isfinite(log_ratio):
            log_ratio = -np.inf
        accepted = bool(np.log(self.rng.random()) < log_ratio)
        if accepted:
            point, self._uniforms = proposal, uniforms
        else:
            self.op.set_state(current_state)
        accept = float(np.exp(min(log_ratio, 0.0)))
        if self.tune:
            self._adapt(self._pack(point), accept)
        stats = {
            "accept": accept,
            "accepted": accepted,
            "tune": self.tune,
            "scaling": float(np.exp(self._log_scale)),
            "loglik": float(self.loglik(point)),
            "loglik_sd": 0.0 if self.op.likelihood.deterministic else self._loglik_sd,
        }
        return point, [stats]

    def _adapt(self, q, accept):
        self._n_tuned += 1
        n = self._n_tuned
        self._log_scale += (accept - self.target_accept) / n**0.6
        delta = q - self._mean
        self._mean += delta / n
        self._m2 += np.outer(delta, q - self._mean)
        d = q.size
        if n >= 20 * d and n % 25 == 0:
            cov = self._m2 / (n - 1) + 1e-8 * np.eye(d)
            try:
                self._chol = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:  # keep the last good proposal
                pass

    def _measure_noise(self, point, current_state):
        if self.op.likelihood.deterministic:
            return 0.0
        values = []
        for _ in range(self.n_noise_checks):
            self.op.set_uniforms(self._fresh_uniforms())
            values.append(float(self.loglik(point)))
        self.op.set_state(current_state)
        return float(np.std(values, ddof=1))

    def reset_tuning(self):
        """Restart the adaptation (the proposal returns to its initial scale and shape)."""
        d = self._chol.shape[0]
        self._log_scale = np.log(1.0 / np.sqrt(d))
        self._chol = np.eye(d)
        self._n_tuned = 0
        self._mean = np.zeros(d)
        self._m2 = np.zeros((d, d))

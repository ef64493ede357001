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
centred on the wrong point (simulated coverage: ``docs/benchmarks.md``).

With ``method="local_map"`` the filter is deterministic, ``u`` is ignored and the step is an
ordinary adaptive random-walk Metropolis step on an exact likelihood.

Averaging filter runs (Doucet et al. 2015). The estimate is the mean over ``R`` independent
runs, ``p_hat = (1/R) sum_r p(y | V(theta, u_r))`` (in log space, logsumexp), still unbiased,
with an sd of ``log p_hat`` roughly ``1/sqrt(R)`` of one run's. With ``n_filter_runs="auto"``
(default) the step measures one run's sd at tuning step ``choose_runs_at`` and again when
tuning ends, and takes the smallest ``R`` in 1, 2, 4, ... whose measured sd is at most
``target_loglik_sd`` (1.2; capped at ``max_filter_runs``); ``loglik_sd`` (the sd of the
``R``-run estimate, measured over ``n_noise_checks`` fresh estimates when tuning ends) and
``n_filter_runs`` are in every draw's stats. An integer fixes ``R``.

Which ``V`` is recorded. The extended target is
``p(theta) prod_r p(u_r) (1/R) p(y | V(theta, u_k)) `` with a run index ``k``: summing out
``k`` gives the averaged estimate, so the step accepts on ``p_hat`` and then draws ``k`` with
probability ``p(y | V_k) / sum_r p(y | V_r)`` (a Gibbs update, as the selected path of
particle Gibbs). The model's ``V`` (deterministic, recorded per draw) is ``V_k``, so the
model's ``logp`` at a recorded draw, the response parameters' NUTS update given ``V_k`` and
the ``log_likelihood`` group (pointwise ``log p(y_t | V_k, theta)``, summing to the joint) are
all the same one-run model. The per-trial log of the average over runs would *not* sum to
``log p_hat`` (the average of a product is not the product of averages), so it is not used:
LOO's pointwise terms are conditional on the recorded run, as with ``R = 1``.

During tuning the proposal adapts (Andrieu & Thoms 2008, algorithm 4): the global scale by
Robbins-Monro towards ``target_accept`` and the covariance from the tuning draws (choosing
``R`` mid-tuning lets the scale adapt to the final noise level).

Independence proposal after tuning. alpha's posterior is wide and skewed on the
unconstrained scale, and the random walk alone mixes slowly on it (``docs/benchmarks.md``).
When tuning ends the step evaluates the model at
``grid_points`` points of a box (tuning mean +- 5 sd, one fresh filter run each) and fits a
multivariate t (df 4, 1.2 times the grid's sd) to it; from then on a step proposes from it
with probability ``independence_prob`` (default 1) with the Hastings ratio ``q(x) / q(x')``,
else from the random walk. The proposal is fixed after tuning, so each step is an exact
pseudo-marginal MH step; the t covers the whole space (ergodic). Tested against exact
enumeration in ``tests/conditioning/test_crp_pmmh*.py`` (without the Hastings ratio the
same check fails).

Collapsed response block (``collapse``). The response parameters (level, gain) of the
linear-Gaussian CR model are strongly tied to ``V`` (so to alpha and a), and alternating
PMMH on (alpha, a) with NUTS on (level, gain) mixes slowly (``docs/benchmarks.md``). Given
``V`` and ``sd`` they are Gaussian (normal priors), so the step integrates them out: it
accepts on ``p(theta, u | y, sd)``, the log prior of every variable but the block (one
compiled call per point, which also gives the filter's inputs) plus the block's closed-form
marginal likelihood given each run's ``V`` (NumPy), and then redraws the block from
``N(m_k, C_k)`` given the selected run ``V_k``. This is MH on (theta, u, block) with the
block proposed from its exact conditional, so the target is unchanged. The step owns the
block's variables, so ``pm.sample`` adds no other step for them.

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
['accept', 'accepted', 'loglik', 'loglik_sd', 'n_filter_runs', 'scaling', 'tune']
"""

# Long because the step's exactness notes (noise averaging, run selection, independence
# proposal, collapsed block) belong next to the code they justify.

from __future__ import annotations

from typing import Any

import numpy as np
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.graph.traversal import ancestors
from scipy.special import gammaln

from pmctx.conditioning.particle_filter import common_uniforms
from pmctx.points import initial_point
from pmctx.steps.base import PmctxStep
from pmctx.validation import check_int, check_int_or_auto

__all__ = ["ParticleMarginalMH"]

_RUN_CHOICES = (1, 2, 4, 8, 16, 32, 64)


def _log_mean_exp(x):
    """log(mean(exp(x))) in NumPy (SciPy's logsumexp costs ~1 ms a call; this ~5 us)."""
    x = np.asarray(x, dtype=float)
    mx = np.max(x)
    if not np.isfinite(mx):
        return float(mx)
    return float(mx + np.log(np.mean(np.exp(x - mx))))


class _MultivariateT:
    """Multivariate t (location ``mean``, shape ``shape``, ``df``): draws and log density in
    NumPy (as ``scipy.stats.multivariate_t``, without its per-call overhead)."""

    def __init__(self, mean, shape, df):
        self.mean = np.asarray(mean, dtype=float)
        self.chol = np.linalg.cholesky(np.asarray(shape, dtype=float))
        self.df = float(df)
        d = self.mean.size
        self._const = (
            gammaln((self.df + d) / 2)
            - gammaln(self.df / 2)
            - 0.5 * d * np.log(self.df * np.pi)
            - np.sum(np.log(np.diag(self.chol)))
        )

    def draw(self, rng):
        z = self.chol @ rng.standard_normal(self.mean.size)
        return self.mean + z / np.sqrt(rng.chisquare(self.df) / self.df)

    def log_density(self, x):
        z = np.linalg.solve(self.chol, np.asarray(x, dtype=float) - self.mean)
        d = self.mean.size
        return float(self._const - 0.5 * (self.df + d) * np.log1p(z @ z / self.df))


@dataclass_state
class _ParticleMarginalMHState(StepMethodState):
    """What a chain changes in :class:`ParticleMarginalMH` (``pm.sample`` restores it per chain)."""

    tune: bool
    n_runs: int
    _log_scale: float
    _chol: np.ndarray
    _n_tuned: int
    _mean: np.ndarray
    _m2: np.ndarray
    _loglik_sd: float
    _uniforms: Any
    _states: Any
    _indep: Any


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
        Fresh estimates used to measure the log-likelihood noise (when ``R`` is chosen).
    n_filter_runs : "auto" or int, default "auto"
        ``R``, the filter runs averaged per likelihood estimate; ``"auto"`` chooses it.
    max_filter_runs : int, default 16
        Cap on the automatic ``R``.
    target_loglik_sd : float, default 1.2
        The automatic ``R`` is the smallest with the estimate's sd at most this.
    choose_runs_at : int, default 100
        Tuning step at which ``R`` is first chosen (it is chosen again when tuning ends).
    independence_prob : float, default 1.0
        After tuning, the probability that a step proposes from the grid independence
        proposal (see the module notes) instead of the random walk; 0 keeps the random walk.
    grid_points : int, default 144
        Points of the grid the proposal is fitted to (``round(grid_points ** (1 / d))`` per
        dimension, at least 3).
    collapse : object, optional
        Integrates a Gaussian block of response parameters out of the acceptance ratio and
        redraws it from its exact conditional with the filter parameters: ``names`` (their
        value variables), ``conditional(point, V) -> (mean, chol)`` (of the block given
        ``V`` and the other parameters) and ``log_marginal(point, V)`` (the observed
        responses' log likelihood with the block integrated out). ``filter_op`` then needs
        ``evaluate(inputs) -> V``. See the module notes.
    tune : bool, default True
    model, rng
        As :class:`~pmctx.steps.base.PmctxStep`.
    """

    name = "particle_marginal_mh"
    # Its sampling_state is a chain's starting state: pm.sample sets it back before each
    # chain it runs in one process, so the same step object (its functions compiled once)
    # starts every chain afresh, with the adaptation, R and the stored runs of a new step.
    _state_class = _ParticleMarginalMHState
    stats_dtypes_shapes = {
        "accept": (np.float64, []),
        "accepted": (bool, []),
        "tune": (bool, []),
        "scaling": (np.float64, []),
        "loglik": (np.float64, []),
        "loglik_sd": (np.float64, []),
        "n_filter_runs": (np.int64, []),
    }

    def __init__(
        self,
        vars,
        filter_op,
        *,
        target_accept=0.25,
        scaling=None,
        n_noise_checks=10,
        n_filter_runs="auto",
        max_filter_runs=16,
        target_loglik_sd=1.2,
        choose_runs_at=100,
        independence_prob=1.0,
        grid_points=144,
        collapse=None,
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
        self.max_filter_runs = check_int(max_filter_runs, "max_filter_runs", minimum=1)
        self.choose_runs_at = check_int(choose_runs_at, "choose_runs_at", minimum=1)
        if not (np.isfinite(target_loglik_sd) and target_loglik_sd > 0):
            raise ValueError(
                f"target_loglik_sd must be a positive number, got {target_loglik_sd!r}."
            )
        self.target_loglik_sd = float(target_loglik_sd)
        if not 0.0 <= independence_prob <= 1.0:
            raise ValueError(
                f"independence_prob must lie in [0, 1], got {independence_prob!r}; use 0 for "
                "the random walk alone."
            )
        self.independence_prob = float(independence_prob)
        self.grid_points = check_int(grid_points, "grid_points", minimum=1)
        self.collapse = collapse
        runs = check_int_or_auto(n_filter_runs, "n_filter_runs", minimum=1)
        self._auto_runs = runs is None
        self.n_runs = 1 if runs is None else runs
        if filter_op.likelihood.deterministic:
            self.n_runs, self._auto_runs = 1, False  # an exact likelihood needs one run
        self.tune = bool(tune)
        start = initial_point(self.model)
        self._shapes = [np.shape(start[n]) for n in self.value_names]
        self._sizes = [int(np.prod(s)) for s in self._shapes]
        d = sum(self._sizes)
        self._log_scale = np.log(1.0 / np.sqrt(d) if scaling is None else float(scaling))
        self._chol = np.eye(d)
        self._n_tuned = 0
        self._mean = np.zeros(d)
        self._m2 = np.zeros((d, d))
        self._loglik_sd = np.nan
        self._uniforms = None  # the recorded run's random numbers
        self._states = None  # the current state's R runs: Op states (uniforms, cached V)
        self._indep = None  # the independence proposal's grid (False: none), see step()
        logp = self.model.logp()
        # With ``collapse`` the model's logp is never evaluated (see _logp): not compiled.
        self.logp = self.compile_fn(logp) if collapse is None else None
        self.loglik = self.compile_fn(self.model.observedlogp)
        if collapse is not None:
            # The step redraws the block itself: it owns the block's variables, so that
            # pm.sample assigns them no other step (an extra NUTS update of the block would
            # leave the target unchanged but cost as much as the rest of the sweep).
            values = {v.name: v for v in self.model.value_vars}
            block = {n: values[n] for n in collapse.names}
            self.vars = [*self.vars, *block.values()]
            # One call per point: the filter Op's inputs and the log prior density of every
            # free variable but the block; the block's marginal likelihood is NumPy per run.
            node = next(
                v.owner
                for v in ancestors([logp])
                if v.owner is not None and v.owner.op is filter_op
            )
            rest = [
                rv
                for rv in self.model.free_RVs
                if self.model.rvs_to_values[rv] not in block.values()
            ]
            self._point_fn = self.compile_fn(
                [*node.inputs, self.model.logp(vars=rest)], inputs=self.model.value_vars
            )

    # --- the state ------------------------------------------------------------------------
    def _fresh_uniforms(self):
        lik = self.op.likelihood
        if lik.deterministic and self._uniforms is not None:
            return self._uniforms
        return common_uniforms(lik.F.shape[0], lik.n_particles, self.rng)

    def _draw_uniforms(self, n_runs):
        return [self._fresh_uniforms() for _ in range(n_runs)]

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
        """Log Metropolis-Hastings ratio (symmetric proposal; ``u`` proposed from its prior).

        Parameters
        ----------
        logp_proposed : float
            Estimated log posterior density of the proposal.
        logp_current : float
            Estimated log posterior density of the current state.

        Returns
        -------
        float
            ``logp_proposed - logp_current``.
        """
        return logp_proposed - logp_current

    # --- one step -------------------------------------------------------------------------
    def _point_terms(self, point):
        """With ``collapse``: the filter Op's inputs at ``point`` and the log prior density of
        every free variable but the block (None without ``collapse``)."""
        if self.collapse is None:
            return None
        out = self._point_fn(point)
        return out[:-1], float(out[-1])

    def _logp(self, point, terms):
        """Model log density; with ``collapse``, the collapsed block integrated out:
        ``log p(rest) + log p(y | V, rest)`` with the block's closed-form marginal likelihood
        (``terms`` from :meth:`_point_terms`; the Op's current run gives ``V``)."""
        if self.collapse is None:
            return float(self.logp(point))
        inputs, log_prior = terms
        return log_prior + self.collapse.log_marginal(point, self.op.evaluate(inputs))

    def _set_block(self, point, values):
        new = dict(point)
        i = 0
        for name in self.collapse.names:
            size = int(np.size(point[name]))
            new[name] = np.reshape(values[i : i + size], np.shape(point[name]))
            i += size
        return new

    def _runs(self, point, uniforms_list):
        """Model log densities at ``point``, one per filter run, and the runs' Op states."""
        log_densities, states = [], []
        terms = self._point_terms(point)
        for uniforms in uniforms_list:
            self.op.set_uniforms(uniforms)
            log_densities.append(self._logp(point, terms))
            states.append(self.op.get_state())
        return np.array(log_densities), states

    def _rerun_current(self, point):
        """The current runs' log densities at ``point`` (cached ``V``: no filter rerun)."""
        log_densities = []
        terms = self._point_terms(point)
        for r, state in enumerate(self._states):
            self.op.set_state(state)
            log_densities.append(self._logp(point, terms))
            self._states[r] = self.op.get_state()
        return np.array(log_densities)

    def _select_run(self, log_densities, states):
        """Gibbs update of the recorded run: ``k`` with probability ``p(y | V_k) / sum_r``."""
        w = np.exp(log_densities - np.max(log_densities))
        k = int(self.rng.choice(len(w), p=w / w.sum())) if len(w) > 1 else 0
        self.op.set_state(states[k])
        self._uniforms = states[k][0]
        return k

    def step(self, point):
        """One pseudo-marginal Metropolis-Hastings update of the filter and response parameters.

        Parameters
        ----------
        point : dict
            The current point (value variables by name).

        Returns
        -------
        point : dict
            The new point (the proposal if accepted, else ``point``).
        stats : list of dict
            One stats dict: ``accept``, ``accepted``, ``tune``, ``scaling``, ``loglik``,
            ``loglik_sd`` and ``n_filter_runs``.
        """
        if self._states is None:  # first call of this chain: draw the start's u_1..u_R
            self._states = self._runs(point, self._draw_uniforms(self.n_runs))[1]
        # The current state's stored runs: their V are cached, so this reruns no filter, but
        # the response parameters (updated by other steps) enter the estimate.
        log_current = self._rerun_current(point)
        if self._choose_now():
            self._choose_runs(point)
            log_current = self._rerun_current(point)
        if self._indep is None and not self.tune:
            # Built once, when tuning ends (from at least 20 d tuning draws); fixed after.
            enough = self._n_tuned >= 20 * self._mean.size and self.independence_prob > 0
            self._indep = self._build_grid(point) if enough else False
            log_current = self._rerun_current(point)
        logp_current = _log_mean_exp(log_current)
        q = self._pack(point)
        if self._indep and self.rng.random() < self.independence_prob:
            q_new = self._grid_draw()
            log_hastings = self._grid_log_density(q) - self._grid_log_density(q_new)
        else:
            q_new = q + np.exp(self._log_scale) * (self._chol @ self.rng.standard_normal(q.size))
            log_hastings = 0.0
        proposal = self._unpack(point, q_new)
        log_proposed, proposed_states = self._runs(proposal, self._draw_uniforms(self.n_runs))
        log_ratio = self.log_acceptance(_log_mean_exp(log_proposed), logp_current) + log_hastings
        if not np.isfinite(log_ratio):
            log_ratio = -np.inf
        accepted = bool(np.log(self.rng.random()) < log_ratio)
        if accepted:
            point, self._states, log_current = proposal, proposed_states, log_proposed
        self._select_run(log_current, self._states)
        if self.collapse is not None:  # the block from its exact conditional given V_k
            mean, chol = self.collapse.conditional(point, self.op._cache[1])
            point = self._set_block(point, mean + chol @ self.rng.standard_normal(mean.size))
        accept = float(np.exp(min(log_ratio, 0.0)))
        if self.tune:
            self._adapt(self._pack(point), accept)
        deterministic = self.op.likelihood.deterministic
        stats = {
            "accept": accept,
            "accepted": accepted,
            "tune": self.tune,
            "scaling": float(np.exp(self._log_scale)),
            "loglik": float(self.loglik(point)),
            "loglik_sd": 0.0 if deterministic else self._loglik_sd,
            "n_filter_runs": self.n_runs,
        }
        return point, [stats]

    # --- the number of filter runs ---------------------------------------------------------
    def _choose_now(self):
        if self.op.likelihood.deterministic:
            return False
        if self.tune:  # once during tuning, so the scale adapts to the chosen R
            return self._auto_runs and self._n_tuned + 1 == self.choose_runs_at
        return np.isnan(self._loglik_sd)  # once when tuning ends (final R and its noise)

    def _estimate_sd(self, point, n_runs):
        """SD of the ``n_runs``-run log-likelihood estimate at ``point`` (fresh runs)."""
        values = []
        for _ in range(self.n_noise_checks):
            runs = []
            for uniforms in self._draw_uniforms(n_runs):
                self.op.set_uniforms(uniforms)
                runs.append(float(self.loglik(point)))
            values.append(_log_mean_exp(np.array(runs)))
        return float(np.std(values, ddof=1))

    def _choose_runs(self, point):
        """Pick ``R`` (auto mode) from the measured noise, measure its sd, redraw the runs."""
        if self._auto_runs:
            sd = self._estimate_sd(point, 1)
            # Delta method: sd_R ~ sd_1 / sqrt(R); then check it, doubling while too noisy.
            need = (sd / self.target_loglik_sd) ** 2
            R = next((r for r in _RUN_CHOICES if r >= need), self.max_filter_runs)
            R = min(R, self.max_filter_runs)
            while True:
                sd = self._estimate_sd(point, R) if R > 1 else sd
                if sd <= self.target_loglik_sd or R >= self.max_filter_runs:
                    break
                R = min(2 * R, self.max_filter_runs)
            self.n_runs = R
        else:
            sd = self._estimate_sd(point, self.n_runs)
        if not self.tune:
            self._loglik_sd = sd
        # The chain's runs are redrawn from their prior at a fixed point, once (at a fixed
        # time, as part of tuning); from then on the kernel is fixed.
        self._states = self._runs(point, self._draw_uniforms(self.n_runs))[1]

    # --- the independence proposal --------------------------------------------------------
    def _build_grid(self, point):
        """Independence proposal from a grid of the model at ``point`` (fixed after tuning).

        A box of the tuning draws' mean +- 5 sd per coordinate, ``n ** d`` cell centres, the
        model's ``logp`` at each (one fresh filter run, the response parameters at
        ``point``); the proposal is a multivariate t (``df`` 4) with the grid's mean and
        ``1.2 ** 2`` times its covariance (smooth and heavy-tailed: a single noisy filter run
        at one grid point cannot make it a spike, and it covers the whole space).
        """
        d = self._mean.size
        n = max(3, round(self.grid_points ** (1.0 / d)))
        sd = np.sqrt(np.maximum(np.diag(self._m2) / max(self._n_tuned - 1, 1), 1e-4))
        lo, width = self._mean - 5 * sd, 10 * sd / n
        idx = np.stack(np.meshgrid(*[np.arange(n)] * d, indexing="ij"), -1).reshape(-1, d)
        centres = lo + (idx + 0.5) * width
        logp = np.array(
            [self._runs(self._unpack(point, c), self._draw_uniforms(1))[0][0] for c in centres]
        )
        logp = np.where(np.isfinite(logp), logp, -np.inf)
        w = np.exp(logp - np.max(logp))
        w /= w.sum()
        mean = w @ centres
        cov = (centres - mean).T @ (w[:, None] * (centres - mean)) + np.diag(width**2 / 12)
        return _MultivariateT(mean, 1.2**2 * cov, df=4.0)

    def _grid_draw(self):
        return self._indep.draw(self.rng)

    def _grid_log_density(self, q):
        """Log density of the independence proposal at ``q``."""
        return self._indep.log_density(q)

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

    def reset_tuning(self):
        """Restart the adaptation (the proposal returns to its initial scale and shape)."""
        d = self._chol.shape[0]
        self._log_scale = np.log(1.0 / np.sqrt(d))
        self._chol = np.eye(d)
        self._n_tuned = 0
        self._mean = np.zeros(d)
        self._m2 = np.zeros((d, d))
        self._indep = None

"""Full posterior over one subject's latent-cause and response parameters, in PyMC.

:func:`build_subject_model` declares a ``pm.Model`` whose likelihood runs the particle filter:
a PyTensor ``Op`` maps the free filter parameters (alpha, a, b, stickiness, decay) to
``V_t`` with fixed uniforms (**common random numbers**), and the conditioned responses are
observed given ``V_t`` under the chosen response model (``pm.Normal``, ``pm.Bernoulli`` or
``pm.OrderedLogistic``), so ``pm.sample`` gives a ``log_likelihood`` group for LOO.

:func:`sample_subject` samples it. The filter parameters have no gradient, so they get
``pm.DEMetropolisZ``; the response parameters get NUTS (the ``Op`` caches its last output, so
NUTS's leapfrog steps do not rerun the filter). **Honest Monte Carlo error**: the CRN fix
one realisation of the particle filter's noise, so every chain is run with its *own*
uniforms (one ``pm.sample`` call per chain, then concatenated): R-hat and MCSE across chains
then include the particle noise, not only the MCMC noise.
``idata.posterior.attrs["particle_loglik_sd"]`` is the standard deviation of the total log
likelihood at the posterior mean over 10 fresh sets of uniforms.

Priors: uniform on the :data:`~pmctx.conditioning.fitting.LCM_BOUNDS` boxes for the filter
parameters (as LCM_fit); for the linear-Gaussian CR model, with ``s`` the responses' standard
deviation, ``level ~ N(mean(CR), 2 s)`` (the CR at V = 0.5; ``intercept = level - gain / 2``
is recorded), ``gain ~ N(0, 5 s)``, ``sd ~ HalfNormal(2 s)``;
for binary responses ``bias ~ N(0, 2)``, ``slope ~ N(0, 10)``; for ratings ``slope ~ N(0, 10)``
and ordered ``cutpoints ~ N(0, 5)``.

Examples
--------
>>> from pmctx.conditioning.fitting import recovery_design, simulate_subject
>>> from pmctx.conditioning.posterior import build_subject_model
>>> design = recovery_design(30)
>>> data = simulate_subject(design, {"alpha": 1.0, "a": 1.0, "gain": 1.0, "sd": 0.1},
...                         variant="lcm", n_particles=20, rng=0)
>>> model = build_subject_model(data["responses"], design, variant="lcm", n_particles=20)
>>> sorted(v.name for v in model.free_RVs)
['a', 'alpha', 'gain', 'level', 'sd']
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from pmctx.conditioning.fitting import LCM_BOUNDS, SubjectLikelihood, _variant
from pmctx.conditioning.particle_filter import common_uniforms
from pmctx.conditioning.response import BinaryChoice, LinearGaussian, OrdinalRating
from pmctx.validation import as_rng, check_choice, check_int

__all__ = ["FilterV", "build_subject_model", "sample_subject"]

_ORDER = ("alpha", "a", "b", "stickiness", "decay")


class FilterV(Op):
    """PyTensor Op: (alpha, a, b, stickiness, decay) -> V_t of the particle filter (CRN).

    No gradient (sample its inputs with a gradient-free step). The last input/output pair is
    cached, so evaluations that change only other variables do not rerun the filter.
    """

    def __init__(self, likelihood: SubjectLikelihood):
        self.likelihood = likelihood
        self._cache = (None, None)

    def make_node(self, *inputs):
        inputs = [pt.as_tensor_variable(x, dtype="float64") for x in inputs]
        return Apply(self, inputs, [pt.dvector()])

    def perform(self, node, inputs, outputs):
        key = tuple(float(x) for x in inputs)
        if self._cache[0] != key:
            self._cache = (key, self.likelihood.V(dict(zip(_ORDER, key, strict=True))))
        outputs[0][0] = self._cache[1].copy()

    def reset(self, uniforms):
        """Use new common random numbers (and drop the cache)."""
        self.likelihood.uniforms = uniforms
        self._cache = (None, None)


def build_subject_model(
    responses,
    features,
    *,
    variant="lcm_sticky",
    response="linear_gaussian",
    free=None,
    fixed=None,
    bounds=None,
    n_particles=100,
    uniforms=None,
    max_causes=None,
    temporal_kernel=None,
    timescale=1.0,
    response_options=None,
    rng=None,
) -> pm.Model:
    """The PyMC model of one subject (arguments as :func:`~.fitting.fit_subject`).

    Returns
    -------
    pm.Model
        Free variables: the variant's filter parameters and the response parameters; the
        deterministic ``V`` (trial); observed ``cr`` (response: the trials with a response).
        ``model.filter_op`` is the :class:`FilterV` Op.
    """
    free, values = _variant(variant, free, fixed)
    bounds = {**LCM_BOUNDS, **(bounds or {})}
    lik = SubjectLikelihood(
        responses,
        features,
        response=response,
        n_particles=n_particles,
        uniforms=uniforms,
        max_causes=max_causes,
        temporal_kernel=temporal_kernel,
        timescale=timescale,
        response_options=response_options,
        rng=rng,
    )
    y = lik.responses
    seen = np.flatnonzero(~np.isnan(y))
    T = lik.F.shape[0]
    coords = {"trial": np.arange(T), "response": seen}
    op = FilterV(lik)
    with pm.Model(coords=coords) as model:
        params = {}
        for p in _ORDER:
            if p in free:
                lo, hi = bounds[p]
                params[p] = pm.Uniform(p, lo, hi)
            else:
                params[p] = pt.as_tensor_variable(float(values[p]))
        V = pm.Deterministic("V", op(*(params[p] for p in _ORDER)), dims="trial")
        Vs = V[seen]
        resp = lik.response
        yo = y[seen]
        if isinstance(resp, LinearGaussian):
            s = float(np.std(yo)) or 1.0
            gain = pm.Normal("gain", 0.0, 5 * s)
            if resp.intercept:
                # CR at V = 0.5 is sampled (it is far less correlated with the gain than the
                # CR at V = 0); the LCM intercept is derived from it.
                level = pm.Normal("level", float(np.mean(yo)), 2 * s)
                mu = level + gain * (Vs - 0.5)
                pm.Deterministic("intercept", level - 0.5 * gain)
            else:
                mu = gain * Vs
            sd = pm.HalfNormal("sd", 2 * s)
            pm.Normal("cr", mu=mu, sigma=sd, observed=yo, dims="response")
        elif isinstance(resp, BinaryChoice):
            eta = pm.Normal("bias", 0.0, 2.0) + pm.Normal("slope", 0.0, 10.0) * (Vs - 0.5)
            p = pm.math.invlogit(eta) if resp.link == "logistic" else pm.math.invprobit(eta)
            pm.Bernoulli("cr", p=p, observed=yo, dims="response")
        elif isinstance(resp, OrdinalRating):
            L = resp.n_levels
            cuts = pm.Normal(
                "cutpoints",
                0.0,
                5.0,
                shape=L - 1,
                transform=pm.distributions.transforms.ordered,
                initval=np.linspace(-1.0, 1.0, L - 1),
            )
            slope = pm.Normal("slope", 0.0, 10.0)
            pm.OrderedLogistic(
                "cr", eta=slope * Vs, cutpoints=cuts, observed=yo.astype(int), dims="response"
            )
    model.filter_op = op
    model.filter_free = tuple(p for p in _ORDER if p in free)
    return model


def _steps(model, sampler):
    filt = [model[p] for p in model.filter_free]
    rest = [v for v in model.free_RVs if v.name not in model.filter_free]
    # S sized to the stepped variables (DEMetropolisZ's default is sized to the whole model).
    if sampler == "demz":
        every = filt + rest
        size = sum(model.initial_point()[model.rvs_to_values[v].name].size for v in every)
        return [pm.DEMetropolisZ(every, S=np.full(size, 0.1))]
    steps = [pm.DEMetropolisZ(filt, S=np.full(len(filt), 0.1))] if filt else []
    return steps + ([pm.NUTS(rest, target_accept=0.9)] if rest else [])


def sample_subject(
    responses,
    features,
    *,
    variant="lcm_sticky",
    draws=1000,
    tune=1000,
    chains=2,
    random_seed=None,
    progressbar=False,
    n_particles=100,
    sampler="demz+nuts",
    **options,
):
    """Posterior draws for one subject; every chain with its own common random numbers.

    Parameters
    ----------
    responses, features, variant
        As :func:`~.fitting.fit_subject`.
    draws, tune, chains, random_seed, progressbar
        As ``pm.sample`` (chains run one after another, one ``pm.sample`` call each).
    n_particles : int, default 100
    sampler : {"demz", "demz+nuts"}
        ``"demz+nuts"`` (default): DEMetropolisZ on the filter parameters, NUTS on the
        response ones; ``"demz"``: one ``DEMetropolisZ`` over all parameters (cheaper per
        draw, but it mixed far worse in our checks: ESS 3-6 per 1,000 draws vs 60-160).
    **options
        Passed to :func:`build_subject_model` (``response``, ``free``, ``fixed``, ...).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` (parameters and ``V``), ``log_likelihood`` (``cr``), ``sample_stats``,
        ``observed_data``; ``posterior.attrs["particle_loglik_sd"]``.
    """
    gen = as_rng(random_seed)
    chains = check_int(chains, "chains", minimum=1)
    check_choice(sampler, "sampler", ["demz", "demz+nuts"])
    model = build_subject_model(
        responses, features, variant=variant, n_particles=n_particles, rng=gen, **options
    )
    op = model.filter_op
    T, M = op.likelihood.F.shape[0], op.likelihood.n_particles
    parts = []
    with model:
        for _ in range(chains):
            op.reset(common_uniforms(T, M, gen))
            steps = _steps(model, sampler)
            parts.append(
                pm.sample(
                    draws=check_int(draws, "draws", minimum=1),
                    tune=check_int(tune, "tune", minimum=0),
                    chains=1,
                    cores=1,
                    step=steps,
                    random_seed=int(gen.integers(2**31 - 1)),
                    progressbar=progressbar,
                    compute_convergence_checks=False,
                    idata_kwargs={"log_likelihood": True},
                )
            )
    idata = az.concat(parts, dim="chain") if chains > 1 else parts[0]
    # Particle noise of the likelihood at the posterior mean, over fresh uniforms.
    lik = op.likelihood
    mean = {p: float(idata.posterior[p].mean()) for p in model.filter_free}
    lls = []
    for _ in range(10):
        lik.uniforms = common_uniforms(T, M, gen)
        lls.append(lik(mean))
    idata.posterior.attrs["particle_loglik_sd"] = float(np.std(lls, ddof=1))
    idata.posterior.attrs["variant"] = variant
    idata.posterior.attrs["n_particles"] = M
    return idata

"""Full posterior over one subject's latent-cause and response parameters, in PyMC.

:func:`build_subject_model` declares a ``pm.Model`` whose likelihood runs the particle filter:
a PyTensor ``Op`` maps the free filter parameters (alpha, a, b, stickiness, decay) to
``V_t`` given the filter's random numbers, and the conditioned responses are observed given
``V_t`` under the chosen response model (``pm.Normal``, ``pm.Bernoulli`` or
``pm.OrderedLogistic``), so ``pm.sample`` gives a ``log_likelihood`` group for LOO.

:func:`sample_subject` samples it. The generative model is LCM's: ``V`` is one run of the
``M``-particle filter, random given the parameters, so the likelihood is an average over the
filter's random numbers. :func:`sample_subject` targets exactly that posterior:
:class:`~pmctx.conditioning.pmmh.ParticleMarginalMH` (pseudo-marginal MH, fresh random numbers
at every proposal, the current state's stored) on the filter parameters and NUTS on the
response parameters given the stored ``V``. For the linear-Gaussian CR model with normal
priors on (level, gain) and the default half-normal ``sd`` prior, PMMH integrates (level,
gain) out and redraws them exactly with the filter parameters (``_GaussianBlock``), and
NUTS updates ``sd`` alone. With ``method="local_map"`` the filter is
deterministic and the likelihood exact. (Freezing one set of random numbers per chain
instead samples the posterior *given that noise realisation*, narrower and shifted: such
DEMetropolisZ samplers' 80% intervals covered the truth in 42-55% of simulated subjects.)
``idata.posterior.attrs["particle_loglik_sd"]`` is the standard deviation of the total log
likelihood at the posterior mean over 10 fresh sets of uniforms; the PMMH step also reports
it per draw (``sample_stats.loglik_sd``).

Priors: uniform on the :data:`~pmctx.conditioning.fitting.LCM_BOUNDS` boxes for the filter
parameters (as LCM_fit); for the linear-Gaussian CR model, with ``s`` the responses' standard
deviation, ``level ~ N(mean(CR), 2 s)`` (the CR at V = 0.5; ``intercept = level - gain / 2``
is recorded), ``gain ~ N(0, 5 s)``, ``sd ~ HalfNormal(2 s)``;
for binary responses ``bias ~ N(0, 2)``, ``slope ~ N(0, 10)``; for ratings ``slope ~ N(0, 10)``
and ordered ``cutpoints ~ N(0, 5)``. ``priors=`` sets fixed (data-independent) priors instead.

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

# Long because the model, its Op, the collapsed Gaussian block and the sampler driver share
# the model's conventions.

from __future__ import annotations

import numba
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify
from pytensor.tensor.random.basic import NormalRV

from pmctx.conditioning.fitting import LCM_BOUNDS, SubjectLikelihood, _variant
from pmctx.conditioning.particle_filter import common_uniforms
from pmctx.conditioning.pmmh import ParticleMarginalMH
from pmctx.conditioning.response import BinaryChoice, LinearGaussian, OrdinalRating
from pmctx.convergence import check_divergences
from pmctx.trees import set_group
from pmctx.validation import as_rng, check_int

__all__ = ["FilterV", "build_subject_model", "sample_subject"]

_ORDER = ("alpha", "a", "b", "stickiness", "decay")


class FilterV(Op):
    """PyTensor Op: (alpha, a, b, stickiness, decay) -> V_t of the particle filter (CRN).

    No gradient (sample its inputs with a gradient-free step). The last input/output pair is
    cached, so evaluations that change only other variables do not rerun the filter.

    Parameters
    ----------
    likelihood : SubjectLikelihood
        The subject's likelihood; its filter and common random numbers are used.
    """

    def __init__(self, likelihood: SubjectLikelihood):
        self.likelihood = likelihood
        self._cache = (None, None)

    def make_node(self, *inputs):
        """The Apply node of the filter: five float64 scalar inputs, one float64 vector output.

        Parameters
        ----------
        *inputs : scalar tensor-like
            ``alpha, a, b, stickiness, decay``.

        Returns
        -------
        pytensor.graph.basic.Apply
            The node.
        """
        inputs = [pt.as_tensor_variable(x, dtype="float64") for x in inputs]
        return Apply(self, inputs, [pt.dvector()])

    def perform(self, node, inputs, outputs):
        """Run the filter (or reuse the cached ``V`` when the inputs repeat).

        Parameters
        ----------
        node : pytensor.graph.basic.Apply
            The node (unused).
        inputs : list of numpy.ndarray
            The five scalar inputs.
        outputs : list of list
            Output storage; ``outputs[0][0]`` receives ``V``.
        """
        outputs[0][0] = self.evaluate(inputs).copy()

    def evaluate(self, inputs):
        """``V`` at the five scalar inputs with the current uniforms (cached; do not modify).

        Parameters
        ----------
        inputs : sequence of float
            ``alpha, a, b, stickiness, decay``.

        Returns
        -------
        numpy.ndarray (trial,)
            The filter's ``V``.
        """
        key = tuple(float(x) for x in inputs)
        if self._cache[0] != key:
            self._cache = (key, self.likelihood.V(dict(zip(_ORDER, key, strict=True))))
        return self._cache[1]

    def reset(self, uniforms):
        """Use new common random numbers (and drop the cache).

        Parameters
        ----------
        uniforms : tuple of numpy.ndarray
            The filter's two ``(trial, particle)`` uniform arrays.
        """
        self.likelihood.uniforms = uniforms
        self._cache = (None, None)

    def set_uniforms(self, uniforms):
        """Use ``uniforms`` from now on; the cache survives only if they are the same arrays.

        Parameters
        ----------
        uniforms : tuple of numpy.ndarray
            The filter's two ``(trial, particle)`` uniform arrays.
        """
        if uniforms is not self.likelihood.uniforms:
            self.reset(uniforms)

    def get_state(self):
        """(uniforms, cache): what :meth:`set_state` restores after a rejected proposal.

        Returns
        -------
        tuple
            ``(uniforms, cache)``.
        """
        return self.likelihood.uniforms, self._cache

    def set_state(self, state):
        """Restore the uniforms and cache saved by :meth:`get_state`.

        Parameters
        ----------
        state : tuple
            ``(uniforms, cache)`` from :meth:`get_state`.
        """
        self.likelihood.uniforms, self._cache = state


@numba_funcify.register(FilterV)
def _filter_v_numba(op, node=None, **kwargs):
    """FilterV in PyTensor's Numba mode (PyTensor 3's default): its ``evaluate`` (a Numba
    kernel behind a Python cache of the last inputs) runs in object mode. That is what
    PyTensor's generic fallback does too, but the fallback warns that it is slow; here there
    is no faster path to offer, so the Op says so once, by registering this."""

    def evaluate(*inputs):
        return op.evaluate(inputs).copy()

    @numba.njit
    def filter_v(alpha, a, b, stickiness, decay):
        with numba.objmode(out="float64[:]"):
            out = evaluate(alpha, a, b, stickiness, decay)
        return out

    return filter_v


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
    method="particle",
    uniforms=None,
    max_causes=None,
    temporal_kernel=None,
    timescale=1.0,
    response_options=None,
    priors=None,
    rng=None,
) -> pm.Model:
    """The PyMC model of one subject (arguments as :func:`~.fitting.fit_subject`).

    ``priors`` replaces the response parameters' default (data-scaled) priors by fixed
    ones: a dict mapping ``"gain"``, ``"level"``, ``"sd"`` (linear-Gaussian), ``"bias"``,
    ``"slope"`` (binary) to ``("normal", mu, sigma)``, ``("halfnormal", sigma)`` or
    ``("uniform", low, high)``. A coverage study must draw its true parameters from the
    priors the fit uses (see :func:`~pmctx.conditioning.recovery.posterior_coverage`).

    Parameters
    ----------
    responses : array_like (trial,)
        Conditioned responses, NaN where missing.
    features : Design or array_like (trial, feature)
        The trials.
    variant : {"lcm_sticky", "lcm", "lcm_one_cause"}, default "lcm_sticky"
        Model variant.
    response : str or response model, default "linear_gaussian"
        The response model.
    free, fixed : optional
        Override the variant's free parameters and fixed values.
    bounds : dict, optional
        Uniform prior boxes of the filter parameters.
    n_particles : int, default 100
        Particles of the filter.
    method : {"particle", "local_map"}, default "particle"
        Filter method.
    uniforms : tuple of numpy.ndarray, optional
        Common random numbers (default: drawn from ``rng``).
    max_causes : int, optional
        Largest number of causes.
    temporal_kernel : {None, "power", "exponential"}, optional
        Temporal prior.
    timescale : float, default 1.0
        Temporal-prior timescale.
    response_options : dict, optional
        Options of the response model.
    priors : dict, optional
        Fixed priors of the response parameters (see above).
    rng : int or numpy.random.Generator, optional
        Random seed or generator.

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
        method=method,
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
    collapse = None
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
            gain = _prior("gain", priors, ("normal", 0.0, 5 * s))
            if resp.intercept:
                # CR at V = 0.5 is sampled (it is far less correlated with the gain than the
                # CR at V = 0); the LCM intercept is derived from it.
                level = _prior("level", priors, ("normal", float(np.mean(yo)), 2 * s))
                mu = level + gain * (Vs - 0.5)
                pm.Deterministic("intercept", level - 0.5 * gain)
            else:
                mu = gain * Vs
            sd = _prior("sd", priors, ("halfnormal", 2 * s))
            pm.Normal("cr", mu=mu, sigma=sd, observed=yo, dims="response")
            if resp.intercept:
                collapse = _GaussianBlock.build(priors, s, yo, seen)
        elif isinstance(resp, BinaryChoice):
            bias = _prior("bias", priors, ("normal", 0.0, 2.0))
            eta = bias + _prior("slope", priors, ("normal", 0.0, 10.0)) * (Vs - 0.5)
            p = pm.math.invlogit(eta) if resp.link == "logistic" else pm.math.invprobit(eta)
            pm.Bernoulli("cr", p=p, observed=yo, dims="response")
        elif isinstance(resp, OrdinalRating):
            L = resp.n_levels
            # N(0, 5) cut points, ordered, starting evenly spaced in [-1, 1] (PyMC's default
            # start, all zeros, is not ordered). The start is the support point, not a stored
            # initval, which would stop PyMC converting the model to a graph
            # (compute_log_likelihood, pm.do raised NotImplementedError).
            cuts = _OrderedStartNormal(
                "cutpoints", 0.0, 5.0, size=(L - 1,), transform=pm.distributions.transforms.ordered
            )
            slope = pm.Normal("slope", 0.0, 10.0)
            pm.OrderedLogistic(
                "cr", eta=slope * Vs, cutpoints=cuts, observed=yo.astype(int), dims="response"
            )
    model.filter_op = op
    model.collapse = collapse
    model.filter_free = tuple(p for p in _ORDER if p in free)
    return model


class _GaussianBlock:
    """(level, gain) given ``V`` and ``sd``: Gaussian (normal priors, linear-Gaussian CR).

    Parameters
    ----------
    prior_mean, prior_sd : numpy.ndarray (2,)
        The normal priors of (level, gain).
    y : numpy.ndarray
        The observed responses.
    seen : numpy.ndarray of int
        The trials they belong to.
    sd : float, optional
        A fixed response sd (default: read ``sd_log__`` from the point).
    """

    names = ("level", "gain")

    def __init__(self, prior_mean, prior_sd, y, seen, sd=None):
        self.prior_mean = np.asarray(prior_mean, dtype=float)
        self.prior_prec = 1.0 / np.asarray(prior_sd, dtype=float) ** 2
        self.y, self.seen, self.sd = np.asarray(y, dtype=float), np.asarray(seen), sd
        self._sum_y = float(self.y.sum())
        self._sum_y2 = float(self.y @ self.y)
        self._prior_quad = float(np.sum(self.prior_prec * self.prior_mean**2))

    @classmethod
    def build(cls, priors, s, y, seen):
        """The block for the default-shaped model, or None (a non-normal or non-default prior)."""
        spec = {
            "level": tuple((priors or {}).get("level", ("normal", float(np.mean(y)), 2 * s))),
            "gain": tuple((priors or {}).get("gain", ("normal", 0.0, 5 * s))),
            "sd": tuple((priors or {}).get("sd", ("halfnormal", 2 * s))),
        }
        if spec["level"][0] != "normal" or spec["gain"][0] != "normal":
            return None
        if spec["sd"][0] != "halfnormal":
            return None
        mean = np.array([spec["level"][1], spec["gain"][1]], dtype=float)
        sd = np.array([spec["level"][2], spec["gain"][2]], dtype=float)
        return cls(mean, sd, y, seen)

    def _sd(self, point):
        return self.sd if self.sd is not None else float(np.exp(point["sd_log__"]))

    def _precision_and_shift(self, prec_y, V):
        """The block's posterior precision ``P = X'X / sd^2 + S0^-1`` (entries p11, p12, p22)
        and ``b = X'y / sd^2 + S0^-1 m0``, with ``X = [1, V - 0.5]`` summed, not built."""
        x = V[self.seen] - 0.5
        p11 = prec_y * self.seen.size + self.prior_prec[0]
        p12 = prec_y * x.sum()
        p22 = prec_y * (x @ x) + self.prior_prec[1]
        b1 = prec_y * self._sum_y + self.prior_prec[0] * self.prior_mean[0]
        b2 = prec_y * (x @ self.y) + self.prior_prec[1] * self.prior_mean[1]
        return (p11, p12, p22), (b1, b2)

    def log_marginal(self, point, V):
        """log p(y | V, sd) with (level, gain) integrated out (their normal priors).

        ``y ~ N(X m0, sd^2 I + X S0 X^T)`` with ``X = [1, V - 0.5]``, by the matrix
        determinant lemma and Woodbury's identity in the block's 2 x 2 precision ``P``:
        ``-n/2 log(2 pi sd^2) - (log|S0| + log|P|) / 2 - (y'y / sd^2 + m0' S0^-1 m0 -
        b' P^-1 b) / 2`` with ``b = X'y / sd^2 + S0^-1 m0``.

        Parameters
        ----------
        point : dict
            Value variables (``sd_log__`` is read).
        V : numpy.ndarray (trial,)
            The filter's predictions.

        Returns
        -------
        float
        """
        sd = self._sd(point)
        prec_y = 1.0 / (sd * sd)
        (p11, p12, p22), (b1, b2) = self._precision_and_shift(prec_y, V)
        det = p11 * p22 - p12 * p12
        quad = (p22 * b1 * b1 - 2.0 * p12 * b1 * b2 + p11 * b2 * b2) / det
        n = self.seen.size
        return float(
            -0.5 * n * np.log(2.0 * np.pi * sd * sd)
            - 0.5 * (np.log(det) - np.sum(np.log(self.prior_prec)))
            - 0.5 * (prec_y * self._sum_y2 + self._prior_quad - quad)
        )

    def conditional(self, point, V):
        """Mean and Cholesky factor of (level, gain) given ``V`` and ``point``'s ``sd``.

        Parameters
        ----------
        point : dict
            Value variables (``sd_log__`` is read).
        V : numpy.ndarray (trial,)
            The filter's predictions.

        Returns
        -------
        mean : numpy.ndarray (2,)
        chol : numpy.ndarray (2, 2)
            Lower Cholesky factor of the conditional covariance.
        """
        sd = self._sd(point)
        # The 2 x 2 inverse and Cholesky factor in closed form (PMMH calls this for every
        # filter run).
        (p11, p12, p22), (b1, b2) = self._precision_and_shift(1.0 / (sd * sd), V)
        det = p11 * p22 - p12 * p12
        c11, c12, c22 = p22 / det, -p12 / det, p11 / det
        mean = np.array([c11 * b1 + c12 * b2, c12 * b1 + c22 * b2])
        l11 = np.sqrt(c11)
        l21 = c12 / l11
        return mean, np.array([[l11, 0.0], [l21, np.sqrt(c22 - l21 * l21)]])


class _OrderedStartNormalRV(NormalRV):
    """``NormalRV`` of its own type, so its support point can differ from ``normal``'s."""


class _OrderedStartNormal(pm.Normal):
    """``pm.Normal`` whose support point is evenly spaced in ``[-1, 1]`` (same log density).

    A ``pm.Distribution`` subclass with its own ``rv_op`` and ``support_point``: PyMC
    registers the support point for that op (its public way to give a distribution a start).
    """

    rv_op = _OrderedStartNormalRV()

    @staticmethod
    def support_point(rv, size, mu, sigma):
        return pt.broadcast_to(pt.linspace(-1.0, 1.0, rv.shape[-1]), rv.shape).astype(rv.dtype)


def _prior(name, priors, default):
    spec = tuple((priors or {}).get(name, default))
    kinds = {"normal": (pm.Normal, 3), "halfnormal": (pm.HalfNormal, 2), "uniform": (pm.Uniform, 3)}
    if not spec or spec[0] not in kinds or len(spec) != kinds[spec[0]][1]:
        raise ValueError(
            f"priors[{name!r}] must be ('normal', mu, sigma), ('halfnormal', sigma) or "
            f"('uniform', low, high); got {spec!r}."
        )
    return kinds[spec[0]][0](name, *(float(x) for x in spec[1:]))


def _steps(model, n_filter_runs="auto"):
    filt = [model[p] for p in model.filter_free]
    rest = [v for v in model.free_RVs if v.name not in model.filter_free]
    pmmh = ParticleMarginalMH(
        filt, model.filter_op, n_filter_runs=n_filter_runs, collapse=model.collapse
    )
    steps = [pmmh] if filt else []
    if filt and model.collapse is not None:  # PMMH redraws (level, gain) exactly
        rest = [v for v in rest if v.name not in model.collapse.names]
    return steps + ([pm.NUTS(rest, target_accept=0.9)] if rest else [])


def _add_log_likelihood(idata, lik):
    """``log_likelihood["cr"]`` (chain, draw, response) from each draw's recorded ``V``.

    The recorded ``V`` is the one the model's log density used at that draw (the draw's
    stored filter run), so this equals PyMC's pointwise ``logp`` of ``cr`` there, without
    rerunning the filter.
    """
    import xarray as xr
    from scipy import stats
    from scipy.special import expit, log_expit

    post = idata.posterior
    seen = np.flatnonzero(~np.isnan(lik.responses))
    y = lik.responses[seen]
    V = post["V"].values[..., seen]
    resp = lik.response

    def par(name):
        return post[name].values[..., None]

    if isinstance(resp, LinearGaussian):
        mu = par("gain") * V + (par("intercept") if resp.intercept else 0.0)
        ll = stats.norm.logpdf(y, mu, par("sd"))
    elif isinstance(resp, BinaryChoice):
        eta = par("bias") + par("slope") * (V - 0.5)
        if resp.link == "logistic":
            ll = np.where(y == 1, log_expit(eta), log_expit(-eta))
        else:
            ll = np.where(y == 1, stats.norm.logcdf(eta), stats.norm.logcdf(-eta))
    else:  # ordinal (as pm.OrderedLogistic): P(y = k) = sigmoid(c_k - eta) - sigmoid(c_{k-1} - eta)
        eta = par("slope") * V
        cuts = post["cutpoints"].values
        inf = np.full(cuts.shape[:-1] + (1,), np.inf)  # noqa: RUF005
        ext = np.concatenate([-inf, cuts, inf], axis=-1)
        k = y.astype(int)
        p = expit(ext[..., k + 1] - eta) - expit(ext[..., k] - eta)
        ll = np.log(np.clip(p, 1e-300, None))
    coords = {"chain": post["chain"].values, "draw": post["draw"].values, "response": seen}
    data = xr.Dataset({"cr": (("chain", "draw", "response"), ll)}, coords=coords)
    set_group(idata, "log_likelihood", data)


def _forked_chain(c):
    return _FORK_JOB["run"](c)


_FORK_JOB = {}


def _concat_chains(parts):
    """One tree of the single-chain trees ``parts``: groups with a ``chain`` dimension are
    concatenated along it (chains renumbered 0, 1, ...), the others taken from the first."""
    import xarray as xr

    groups = {}
    for name, node in parts[0].children.items():
        first = node.to_dataset()
        if "chain" not in first.dims:
            groups[name] = first
            continue
        ds = xr.concat([p[name].to_dataset() for p in parts], dim="chain")
        groups[name] = ds.assign_coords(chain=np.arange(ds.sizes["chain"]))
    tree = xr.DataTree.from_dict(groups)
    tree.attrs = dict(parts[0].attrs)
    return tree


def _map_chains(run_chain, chains, cores):
    """``[run_chain(c) for c in range(chains)]``, in up to ``cores`` forked processes.

    Forked children inherit the built model and compiled steps (nothing is pickled but the
    chain index and the returned draws). Where fork is unavailable, chains run here.
    """
    import multiprocessing as mp

    n = min(cores, chains)
    if n == 1 or "fork" not in mp.get_all_start_methods():
        return [run_chain(c) for c in range(chains)]
    _FORK_JOB["run"] = run_chain
    try:
        with mp.get_context("fork").Pool(n) as pool:
            return pool.map(_forked_chain, range(chains), chunksize=1)
    finally:
        _FORK_JOB.clear()


def sample_subject(
    responses,
    features,
    *,
    variant="lcm_sticky",
    draws=1000,
    tune=1000,
    chains=2,
    cores=1,
    random_seed=None,
    progressbar=False,
    n_particles=100,
    n_filter_runs="auto",
    check_convergence=True,
    **options,
):
    """Posterior draws for one subject; every chain with its own common random numbers.

    Parameters
    ----------
    responses, features, variant
        As :func:`~.fitting.fit_subject`.
    draws, tune, chains, random_seed, progressbar
        As ``pm.sample`` (one ``pm.sample`` call per chain).
    cores : int, default 1
        Chains run at once in up to this many processes, forked after the model and its
        steps are built and compiled; the draws are those of a run with ``cores=1`` (each
        chain's random numbers and seed are drawn up front, in the same order).
    n_particles : int, default 100
        Particles of the filter. The sampler is
        :class:`~pmctx.conditioning.pmmh.ParticleMarginalMH` on the filter parameters (with
        (level, gain) collapsed into it for the linear-Gaussian CR model with normal priors)
        and NUTS on the other response ones; exact for the model whose ``V`` is one filter
        run.
    n_filter_runs : "auto" or int, default "auto"
        Filter runs averaged per likelihood estimate (``"auto"``: chosen during
        tuning so that the log-likelihood estimate's sd is at most 1.2, at most 16 runs);
        the draws' ``n_filter_runs`` and ``loglik_sd`` stats report it.
    check_convergence : bool, default True
        Warn :class:`pmctx.DivergenceWarning` when NUTS had divergent transitions after
        tuning (:func:`pmctx.convergence.check_divergences`).
    **options
        Passed to :func:`build_subject_model` (``response``, ``free``, ``fixed``, ...).

    Returns
    -------
    xarray.DataTree
        ``posterior`` (parameters and ``V``), ``log_likelihood`` (``cr``), ``sample_stats``,
        ``observed_data``; ``posterior.attrs["particle_loglik_sd"]``.

    Warns
    -----
    pmctx.DivergenceWarning
        When NUTS (the response parameters) had divergent transitions after tuning and
        ``check_convergence`` is True.
    """
    gen = as_rng(random_seed)
    chains = check_int(chains, "chains", minimum=1)
    model = build_subject_model(
        responses, features, variant=variant, n_particles=n_particles, rng=gen, **options
    )
    op = model.filter_op
    T, M = op.likelihood.F.shape[0], op.likelihood.n_particles
    draws = check_int(draws, "draws", minimum=1)
    tune = check_int(tune, "tune", minimum=0)
    cores = check_int(cores, "cores", minimum=1)
    # Each chain's common random numbers and seed, drawn in the order a sequential run uses.
    plan = []
    for _ in range(chains):
        uniforms = common_uniforms(T, M, gen)
        plan.append((uniforms, int(gen.integers(2**31 - 1))))
    with model:
        # The steps are built (their functions compiled) once; each chain starts from their
        # initial sampling state, as a freshly built step would (pm.sample's own sequential
        # chains do the same), and pm.sample seeds every step's generator from the chain's
        # seed: a chain's draws depend on its plan only, in this process or a forked one.
        steps = _steps(model, n_filter_runs)
        initial = [step.sampling_state for step in steps]

    def run_chain(c):
        uniforms, seed = plan[c]
        op.reset(uniforms)
        for step, state in zip(steps, initial, strict=True):
            step.sampling_state = state
        with model:
            return pm.sample(
                draws=draws,
                tune=tune,
                chains=1,
                cores=1,
                step=steps,
                random_seed=seed,
                progressbar=progressbar,
                compute_convergence_checks=False,
                # No log_likelihood here (pm.sample computes none unless asked): the
                # pointwise log likelihood is computed below from each draw's recorded V,
                # as PMMH's V depends on the draw's stored random numbers.
            )

    parts = _map_chains(run_chain, chains, cores)
    idata = _concat_chains(parts) if chains > 1 else parts[0]
    if check_convergence:  # pm.sample's own divergence message is off (see above)
        check_divergences(idata, stacklevel=3)
    _add_log_likelihood(idata, op.likelihood)
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

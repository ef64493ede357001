"""Collapsed Gibbs step for the assignment vector of a finite (truncated) CRP mixture.

Model (see :mod:`pmctx.models.crp_conditioning`): ``weights ~ Dirichlet(alpha/K, ..., alpha/K)``
over ``K`` causes, ``z_t ~ Categorical(weights)``, ``theta[k, i] ~ Beta(eta, eta)`` and binary
features ``F[t, i] ~ Bernoulli(theta[z_t, i])`` (entries of ``F`` may be missing). With
``weights`` and ``theta`` integrated out, the conditional of one assignment is::

    P(z_t = k | z_-t, F) ∝ (n_-t,k + alpha/K) * prod_i (N_-t,k,i,F_ti + eta) / (N_-t,k,i + 2 eta),

the Dirichlet-multinomial (CRP-like) prior times the Beta-Bernoulli predictive of trial t's
features (eq. 4 of seed 004). As ``K`` grows this is the CRP conditional with ``alpha``
shared among the empty causes. One sweep updates every ``z_t`` in turn; the step then draws
``weights`` and ``theta`` exactly from their conjugate conditionals given the new ``z``, so the
block (z, weights, theta) is a valid Gibbs transition of the full posterior and needs no other
sampler.

Examples
--------
>>> import numpy as np
>>> from pmctx.steps.crp_gibbs import collapsed_gibbs_sweep
>>> F = np.array([[1, 1], [1, 1], [0, 0]])
>>> z = collapsed_gibbs_sweep(np.zeros(3, np.int64), F, 3, 0.5, 1.0, np.full(3, 0.5))
>>> z.shape
(3,)
"""

from __future__ import annotations

import numba
import numpy as np
from pymc.distributions.transforms import LogOddsTransform, SimplexTransform

from pmctx.points import initial_point
from pmctx.steps.base import PmctxStep
from pmctx.steps.registration import block_tag, block_variables
from pmctx.validation import check_int, check_positive

__all__ = ["CRPCollapsedGibbs", "collapsed_conditional", "collapsed_gibbs_sweep"]


@numba.njit(cache=True)
def _counts(z, F, n_causes):
    T, D = F.shape
    n_k = np.zeros(n_causes)
    counts = np.zeros((n_causes, D, 2))
    for t in range(T):
        n_k[z[t]] += 1.0
        for i in range(D):
            if F[t, i] >= 0:
                counts[z[t], i, F[t, i]] += 1.0
    return n_k, counts


@numba.njit(cache=True)
def _conditional_inplace(out, t, F, n_k, counts, prior_weight, eta):
    # counts/n_k must already exclude trial t.
    D = F.shape[1]
    mx = -np.inf
    for k in range(out.shape[0]):
        lp = np.log(n_k[k] + prior_weight)
        for i in range(D):
            f = F[t, i]
            if f >= 0:
                c = counts[k, i]
                lp += np.log((c[f] + eta) / (c[0] + c[1] + 2.0 * eta))
        out[k] = lp
        if lp > mx:
            mx = lp
    total = 0.0
    for k in range(out.shape[0]):
        out[k] = np.exp(out[k] - mx)
        total += out[k]
    for k in range(out.shape[0]):
        out[k] /= total


@numba.njit(cache=True)
def collapsed_gibbs_sweep(z, F, n_causes, prior_weight, eta, uniforms):
    """One systematic-scan sweep over all assignments; returns the new ``z`` (a copy).

    Parameters
    ----------
    z : int64 array (T,)
        Current assignments in ``[0, n_causes)``.
    F : int64 array (T, D)
        Features coded 1/0, -1 for missing.
    n_causes : int
        Number of causes K.
    prior_weight : float
        Dirichlet concentration per cause, ``alpha / K``.
    eta : float
        Beta concentration of the feature probabilities.
    uniforms : float array (T,)
        One uniform draw per trial (all randomness comes from the caller's generator).
    """
    z = z.copy()
    n_k, counts = _counts(z, F, n_causes)
    probs = np.empty(n_causes)
    D = F.shape[1]
    for t in range(z.shape[0]):
        k_old = z[t]
        n_k[k_old] -= 1.0
        for i in range(D):
            if F[t, i] >= 0:
                counts[k_old, i, F[t, i]] -= 1.0
        _conditional_inplace(probs, t, F, n_k, counts, prior_weight, eta)
        k_new = n_causes - 1
        run = 0.0
        for k in range(n_causes):
            run += probs[k]
            if uniforms[t] < run:
                k_new = k
                break
        z[t] = k_new
        n_k[k_new] += 1.0
        for i in range(D):
            if F[t, i] >= 0:
                counts[k_new, i, F[t, i]] += 1.0
    return z


def collapsed_conditional(z, t, F, n_causes, prior_weight, eta) -> np.ndarray:
    """``P(z_t = k | z_-t, F)`` for every ``k`` (the probabilities one sweep samples from).

    Parameters
    ----------
    z : array_like of int
        Cause of every trial.
    t : int
        The trial whose cause is resampled.
    F : array_like of int
        Features (trial, feature) in {0, 1}, -1 where unobserved.
    n_causes : int
        Truncation, the number of causes.
    prior_weight : float
        Dirichlet weight of each cause, ``alpha / n_causes``.
    eta : float
        Beta(eta, eta) prior of the feature probabilities.

    Returns
    -------
    numpy.ndarray
        Probabilities of the ``n_causes`` causes, summing to 1.
    """
    z = np.asarray(z, dtype=np.int64)
    F = np.asarray(F, dtype=np.int64)
    n_k, counts = _counts(z, F, n_causes)
    n_k[z[t]] -= 1.0
    for i in range(F.shape[1]):
        if F[t, i] >= 0:
            counts[z[t], i, F[t, i]] -= 1.0
    out = np.empty(n_causes)
    _conditional_inplace(out, t, F, n_k, counts, prior_weight, eta)
    return out


def _log_gamma_draws(rng, shape):
    """log of Gamma(shape, 1) draws, accurate for tiny shapes (no underflow to log 0)."""
    shape = np.asarray(shape, dtype=np.float64)
    return np.log(rng.gamma(shape + 1.0)) + np.log(rng.random(shape.shape)) / shape


class CRPCollapsedGibbs(PmctxStep):
    """Collapsed Gibbs for the assignments, then conjugate draws of weights and theta.

    Plain ``pm.sample()`` on a model from :func:`pmctx.models.crp_conditioning.build_model`
    assigns this step to ``z, weights, theta`` together (they are tagged as the block
    ``"crp"``) and it reads the features and the priors from the model.

    Parameters
    ----------
    vars : list, optional
        ``[z, weights, theta]``: the Categorical assignments (trial,), the Dirichlet cause
        weights (cause,) and the Beta feature probabilities (cause, feature) of the model.
        Default (or any order when the variables are tagged): the model's ``"crp"`` block.
    features : array_like of int (trial, feature), optional
        The observed features coded 1/0 with -1 for missing entries. Default: read from the
        model's observed ``features`` and its ``trial_index``/``feature_index`` data.
    alpha : float, optional
        Total Dirichlet concentration (each cause has ``alpha / K``). Default: read from the
        Dirichlet prior of ``weights`` at every step, so ``alpha`` may be a random variable
        (e.g. with a Gamma hyperprior) that another step samples.
    concentration : float, optional
        Beta(eta, eta) prior of the feature probabilities; default read from ``theta``'s
        prior at every step, like ``alpha``.
    model, rng : see :class:`~pmctx.steps.base.PmctxStep`.

    Examples
    --------
    >>> import pymc as pm
    >>> from pmctx.models.crp_conditioning import build_model
    >>> F = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 1]])
    >>> model = build_model(F, alpha=1.0, max_causes=3)
    >>> with model:
    ...     step = CRPCollapsedGibbs(
    ...         [model["z"], model["weights"], model["theta"]], features=F, alpha=1.0)
    ...     idata = pm.sample(20, tune=5, chains=1, step=[step], progressbar=False,
    ...                       random_seed=0, compute_convergence_checks=False)
    >>> idata.sample_stats["n_occupied"].shape
    (1, 20)
    """

    name = "crp_collapsed_gibbs"
    owns_block = "crp"  # z, weights, theta as tagged by pmctx.models.crp_conditioning
    stats_dtypes_shapes = {"n_occupied": (np.int64, [])}

    def __init__(
        self, vars=None, *, features=None, alpha=None, concentration=None, model=None, rng=None
    ):
        import pymc as pm

        model = pm.modelcontext(model)
        tagged = block_variables(model, self.owns_block)
        vars = _order_by_role(model, vars, tagged)
        if len(vars) != 3:
            raise ValueError(
                "CRPCollapsedGibbs updates [z, weights, theta] together (the collapsed update "
                f"of z is only valid when followed by fresh weights and theta); got {len(vars)} "
                "variable(s)."
            )
        super().__init__(vars, model=model, rng=rng)
        value_to_rv = {v: rv for rv, v in self.model.rvs_to_values.items()}
        self._rvs = [value_to_rv[v] for v in self.vars]
        self._transforms = [self.model.rvs_to_transforms.get(rv) for rv in self._rvs]
        for rv, tr, ok in zip(
            self._rvs[1:], self._transforms[1:], (SimplexTransform, LogOddsTransform)
        ):
            if tr is not None and not isinstance(tr, ok):
                raise ValueError(f"{rv.name} has transform {tr!r}; expected {ok.__name__} or none.")
        start = initial_point(self.model)
        z_shape = np.shape(start[self.value_names[0]])
        if features is None:
            features = _model_features(self.model, tagged, z_shape[0])
        self.features = np.ascontiguousarray(features, dtype=np.int64)  # one compiled layout
        if self.features.ndim != 2 or self.features.shape[0] != z_shape[0]:
            raise ValueError(
                f"features must have shape (n_trials, n_features) with n_trials={z_shape[0]} "
                f"matching z, got shape {self.features.shape}."
            )
        if not np.isin(self.features, (-1, 0, 1)).all():
            raise ValueError("features must be coded 1/0 with -1 for missing entries.")
        n_w = np.shape(start[self.value_names[1]])[-1]
        self.n_causes = check_int(
            n_w + (self._transforms[1] is not None), "number of causes", minimum=1
        )
        # Priors given as numbers stay fixed; otherwise they are read from the model graph
        # (the Dirichlet's and the Beta's parameters) at every step, which is what lets a
        # user put hyperpriors on them without changing this step.
        self.alpha = None if alpha is None else check_positive(alpha, "alpha")
        self.eta = None if concentration is None else check_positive(concentration, "concentration")
        self._prior_fn = None
        if alpha is None or concentration is None:
            w_rv, th_rv = self._rvs[1], self._rvs[2]
            params = [w_rv.owner.inputs[-1], *th_rv.owner.inputs[-2:]]
            params = self.model.replace_rvs_by_values(params)
            self._prior_fn = self.compile_fn(params, inputs=list(self.model.value_vars))
            if not any(rv in self.model.free_RVs for rv in _ancestors(self.model, params)):
                self.alpha, self.eta = self._read_prior(start)
                self._prior_fn = None
        self.prior_weight = None if self.alpha is None else self.alpha / self.n_causes

    def _read_prior(self, point):
        a, b1, b2 = (np.asarray(v, dtype=np.float64) for v in self._prior_fn(point))
        a = np.broadcast_to(a, (self.n_causes,))
        if not np.allclose(a, a[0]) or not np.allclose(b1, b2) or np.ptp(b1) > 1e-12 * b1.max():
            raise ValueError(
                "CRPCollapsedGibbs needs a symmetric Dirichlet prior on weights and one "
                f"Beta(eta, eta) on theta; got Dirichlet a={a}, Beta({b1}, {b2})."
            )
        alpha = self.alpha if self.alpha is not None else float(a[0]) * self.n_causes
        eta = self.eta if self.eta is not None else float(np.ravel(b1)[0])
        return alpha, eta

    def step(self, point):
        """One collapsed sweep over the causes, then exact draws of weights and theta.

        Parameters
        ----------
        point : dict
            The current point of the model.

        Returns
        -------
        tuple
            The new point and a list with one stats dict (``n_occupied``).
        """
        z_name, w_name, th_name = self.value_names
        if self._prior_fn is None:
            alpha, eta = self.alpha, self.eta
        else:
            alpha, eta = self._read_prior(point)
        prior_weight = alpha / self.n_causes
        z = np.asarray(point[z_name], dtype=np.int64)
        F = self.features
        z = collapsed_gibbs_sweep(
            z, F, self.n_causes, prior_weight, eta, self.rng.random(z.shape[0])
        )
        n_k, counts = _counts(z, F, self.n_causes)
        log_w = _log_gamma_draws(self.rng, n_k + prior_weight)
        log_w -= np.logaddexp.reduce(log_w)
        log_g1 = _log_gamma_draws(self.rng, counts[:, :, 1] + eta)
        log_g0 = _log_gamma_draws(self.rng, counts[:, :, 0] + eta)
        new = dict(point)
        new[z_name] = z.astype(point[z_name].dtype)
        if self._transforms[1] is None:
            new[w_name] = np.exp(log_w)
        else:  # PyMC's simplex transform: drop the last log weight, centre on the mean
            new[w_name] = log_w[:-1] - log_w.mean()
        logit = log_g1 - log_g0
        new[th_name] = logit if self._transforms[2] is not None else 1.0 / (1.0 + np.exp(-logit))
        return new, [{"n_occupied": int((n_k > 0).sum())}]


def _order_by_role(model, vars, tagged):
    """``[z, weights, theta]`` from the tagged block (any order given) or as given."""
    roles = ("z", "weights", "theta")
    if vars is None:
        if not all(r in tagged for r in roles):
            raise ValueError(
                "CRPCollapsedGibbs needs vars=[z, weights, theta] or a model from "
                "pmctx.models.crp_conditioning.build_model (whose variables are tagged)."
            )
        return [tagged[r] for r in roles]
    vars = list(vars)
    as_rv = {v: rv for rv, v in model.rvs_to_values.items()}
    rvs = [as_rv.get(v, v) for v in vars]
    by_role = {block_tag(rv).role: v for rv, v in zip(rvs, vars) if block_tag(rv) is not None}
    if len(vars) == 3 and set(by_role) == set(roles):
        return [by_role[r] for r in roles]
    return vars


def _model_features(model, tagged, n_trials):
    """The (trial, feature) matrix coded 1/0/-1 from the model's observed entries."""
    if "features" not in tagged or not {"trial_index", "feature_index"} <= set(model.named_vars):
        raise ValueError(
            "Pass features=... (trials x features, 1/0 and -1 for missing): the model is not "
            "one from pmctx.models.crp_conditioning.build_model."
        )
    observed = np.asarray(model.rvs_to_values[tagged["features"]].eval(), dtype=np.int64)
    t_idx = np.asarray(model["trial_index"].get_value(), dtype=np.int64)
    i_idx = np.asarray(model["feature_index"].get_value(), dtype=np.int64)
    n_features = int(tagged["theta"].shape[-1].eval())
    F = np.full((n_trials, n_features), -1, dtype=np.int64)
    F[t_idx, i_idx] = observed
    return F


def _ancestors(model, outputs):
    from pytensor.graph.traversal import ancestors

    values = set(model.value_vars)
    value_to_rv = {v: rv for rv, v in model.rvs_to_values.items()}
    return [value_to_rv[v] for v in ancestors(outputs) if v in values]

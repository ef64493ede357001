"""Integrated per-trial log-likelihoods of the IBP visuo-motor model, for LOO.

The conditional log-likelihood ``log p(F_i, X_i | z_i, A, Y)`` that ``pm.sample`` stores is
evaluated at the trial's own latent row ``z_i``; leaving the trial out changes the posterior of
``z_i`` completely, so PSIS-LOO on it fails (Pareto k > 1 on most trials). The quantity LOO
needs integrates the row out:

.. math:: p(F_i, X_i | A, Y, \\pi) = \\sum_{z_i} p(z_i | \\pi)\\, p(F_i, X_i | z_i, A, Y).

How the sum is computed, per posterior draw:

* **Exact** over the ``2^{K_+}`` configurations of the draw's *active* columns (used by some
  trial) when ``K_+ <= max_exact`` (default 10; the cost is ``N * 2^{K_+} * (D + T)`` per
  draw). The inactive columns (``pi_k`` tiny, ``A_k, Y_k`` prior draws) enter through a
  *stratified unbiased* term: their all-off configuration exactly, the rest
  (probability ``1 - prod(1 - pi_k)``) by ``n_inactive`` draws from the prior conditioned on
  at least one inactive column being on. ``inactive="exact"`` enumerates every column instead
  (exact, cost ``2^{K_max}``); ``inactive="off"`` drops them (a lower bound).
* **Importance sampling** over all columns when ``K_+ > max_exact``: ``n_importance`` draws
  from the defensive mixture ``0.5 * prod Bernoulli(q_ik) + 0.5 * p(z | pi)`` with
  ``q_ik = 0.9 z_ik + 0.05`` (centred on the draw's own row), weights ``p/q <= 2``.

Both estimators are unbiased for the *likelihood*; their log is biased downwards by about
``Var/(2 p^2)`` (Jensen), negligible for the inactive-column term (its mass is ~1e-3) and
reported by the tests for the importance-sampling branch.

Stored variables (:func:`integrated_log_likelihood`, all ``(chain, draw, trial)``):

* ``joint``: ``log p(F_i, X_i | theta)`` (or of whichever of F, X the model has): LOO of the
  whole trial, e.g. to compare ``K_max = 5`` with ``K_max = 10``.
* ``F``: ``log p(F_i | X_i, theta)`` in the joint model (the forces given the trial's cues:
  the visuo-motor question), ``log p(F_i | theta)`` in a forces-only model. PSIS weights
  ``1/p(F_i | X_i, theta)`` leave out the forces and keep the cues, so ``az.compare(...,
  var_name="F")`` of a forces-only and a joint model compares predictions of the same forces.
* ``X``: ``log p(X_i | F_i, theta)``, likewise.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> Z = np.array([[1, 0], [0, 1], [1, 1]])
>>> A, Y = rng.normal(size=(2, 2)), np.array([[1, 0, 1], [0, 1, 1]])
>>> F, X = Z @ A, np.array([[1, 0, 1], [0, 1, 1], [1, 1, 1]])
>>> out = trial_logliks(F, X, Z, A, Y, np.array([0.5, 0.5]), sigma_n=0.5, lam=0.9, eps=0.05)
>>> sorted(out), out["joint"].shape
(['F', 'X', 'joint'], (3,))
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pmctx.io import LOG_LIKELIHOOD_GROUPS, set_log_likelihood_groups
from pmctx.numerics import logsumexp_rows
from pmctx.validation import as_rng, check_int

__all__ = [
    "CONDITIONAL_GROUP",
    "DEFAULT_MAX_EXACT",
    "add_integrated_log_likelihood",
    "config_logliks",
    "integrated_log_likelihood",
    "trial_logliks",
]

#: Largest number of active features summed exactly (2^10 = 1024 configurations per draw).
DEFAULT_MAX_EXACT = 10

_LOG_2PI = float(np.log(2.0 * np.pi))


@njit(cache=True)
def _config_logliks_kernel(
    F, ones_ptr, ones_idx, n_pixels, configs, A, Y, sigma_n, log1m_lam, log1m_eps, out_f, out_x
):
    n, d = F.shape
    n_c, k = configs.shape
    const_f = -0.5 * d * (_LOG_2PI + 2.0 * np.log(sigma_n))
    inv_var = 1.0 / (sigma_n * sigma_n)
    mean = np.empty(d)
    delta = np.empty(n_pixels)
    for c in range(n_c):
        for j in range(d):
            s = 0.0
            for kk in range(k):
                if configs[c, kk]:
                    s += A[kk, j]
            mean[j] = s
        # Cues: sum_t log P(x=0) for all pixels, then (log P(x=1) - log P(x=0)) on the ones
        # of each trial only (cues are sparse).
        base = 0.0
        for j in range(n_pixels):
            count = 0
            for kk in range(k):
                if configs[c, kk]:
                    count += Y[kk, j]
            lq = count * log1m_lam + log1m_eps
            base += lq
            # log(1 - exp(lq)) without cancellation on either side of -log 2.
            if lq > -0.6931471805599453:
                delta[j] = np.log(-np.expm1(lq)) - lq
            else:
                delta[j] = np.log1p(-np.exp(lq)) - lq
        for i in range(n):
            s = 0.0
            for j in range(d):
                r = F[i, j] - mean[j]
                s += r * r
            out_f[i, c] = const_f - 0.5 * s * inv_var
            s = base
            for p in range(ones_ptr[i], ones_ptr[i + 1]):
                s += delta[ones_idx[p]]
            out_x[i, c] = s


def config_logliks(F, X, configs, A, Y, *, sigma_n, lam, eps):
    """Per-trial ``log p(F_i | c, A)`` and ``log p(X_i | c, Y)`` for every configuration ``c``.

    Parameters
    ----------
    F : (N, D) float array or None
    X : (N, T) 0/1 array or None
    configs : (C, K) 0/1 array
        Candidate rows ``z``.
    A : (K, D) array or None
    Y : (K, T) 0/1 array or None
    sigma_n, lam, eps : float

    Returns
    -------
    (log_f, log_x) : two (N, C) arrays (zeros for an absent modality).
    """
    configs = np.ascontiguousarray(configs, dtype=np.int64)
    n = (F if F is not None else X).shape[0]
    k = configs.shape[1]
    F_ = np.zeros((n, 0)) if F is None else np.ascontiguousarray(F, dtype=np.float64)
    A_ = np.zeros((k, 0)) if A is None else np.ascontiguousarray(A, dtype=np.float64)
    X_ = np.zeros((n, 0), np.int64) if X is None else np.ascontiguousarray(X, dtype=np.int64)
    Y_ = np.zeros((k, 0), np.int64) if Y is None else np.ascontiguousarray(Y, dtype=np.int64)
    out_f = np.empty((n, configs.shape[0]))
    out_x = np.empty((n, configs.shape[0]))
    rows, cols = np.nonzero(X_ == 1)  # row-major: the ones of each trial, in order
    ones_ptr = np.searchsorted(rows, np.arange(n + 1)).astype(np.int64)
    _config_logliks_kernel(
        F_, ones_ptr, cols.astype(np.int64), X_.shape[1], configs, A_, Y_, float(sigma_n),
        float(np.log1p(-lam)), float(np.log1p(-eps)), out_f, out_x,
    )  # fmt: skip
    return out_f, out_x


def _all_configs(columns: np.ndarray, k: int) -> np.ndarray:
    """All ``2^len(columns)`` rows that are free on ``columns`` and zero elsewhere."""
    e = len(columns)
    bits = (np.arange(2**e)[:, None] >> np.arange(e)[None, :]) & 1
    configs = np.zeros((2**e, k), dtype=np.int64)
    configs[:, columns] = bits
    return configs


def _log_bernoulli(configs, log_pi, log1m_pi):
    """``log p(z | pi)`` of each row of ``configs`` (0 * -inf treated as 0)."""
    on = configs.astype(bool)
    return np.where(on, log_pi, log1m_pi).sum(axis=1)


def _sample_nonzero(log_pi, log1m_pi, n, rng):
    """``n`` draws of independent Bernoullis conditioned on at least one being on."""
    k = len(log_pi)
    # log P(all of columns j.. are off), for the sequential conditional.
    tail_off = np.append(np.cumsum(log1m_pi[::-1])[::-1], 0.0)
    out = np.zeros((n, k), dtype=np.int64)
    for m in range(n):
        any_on = False
        for j in range(k):
            if any_on:
                p = np.exp(log_pi[j])
            else:  # P(z_j = 1 | none before on, some on from j) = pi_j / (1 - P(all off from j))
                p = np.exp(log_pi[j] - np.log(-np.expm1(tail_off[j])))
            if rng.random() < p:
                out[m, j] = 1
                any_on = True
    return out


def _combine(log_f, log_x, log_w, has_f, has_x):
    """``joint``, ``F`` and ``X`` from per-configuration terms and log weights (N x C)."""
    joint = logsumexp_rows(log_w + log_f + log_x)
    out = {"joint": joint}
    marg_f = logsumexp_rows(log_w + log_f) if has_f else None
    marg_x = logsumexp_rows(log_w + log_x) if has_x else None
    if has_f:
        out["F"] = joint - marg_x if has_x else joint
    if has_x:
        out["X"] = joint - marg_f if has_f else joint
    return out


#: The exact branch works on blocks of trials whose (trial x configuration) arrays take about
#: this many bytes (the arrays of 10,000 trials x 1,280 configurations took 0.55 GB at once).
BLOCK_BYTES = 32 * 2**20


def _exact_in_blocks(F, X, configs, A, Y, log_w, hyper, has_f, has_x):
    """:func:`_combine` of :func:`config_logliks`, a block of trials at a time (rows are
    independent given the configurations: the same numbers as all trials at once)."""
    n = (F if F is not None else X).shape[0]
    rows = max(1, BLOCK_BYTES // (6 * 8 * max(len(configs), 1)))
    parts = []
    for start in range(0, n, rows):
        block = slice(start, min(start + rows, n))
        log_f, log_x = config_logliks(
            None if F is None else F[block], None if X is None else X[block], configs, A, Y,
            **hyper,
        )  # fmt: skip
        parts.append(_combine(log_f, log_x, log_w[None, :], has_f, has_x))
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def trial_logliks(
    F,
    X,
    Z,
    A,
    Y,
    pi,
    *,
    sigma_n=1.0,
    lam=0.9,
    eps=0.05,
    max_exact: int = DEFAULT_MAX_EXACT,
    inactive: str = "sample",
    n_inactive: int = 4,
    n_importance: int = 256,
    rng=None,
) -> dict:
    """Integrated per-trial log-likelihoods for one posterior draw (see the module docstring).

    Parameters
    ----------
    F, X : arrays or None
        Forces (N x D) and binary cues (N x T).
    Z, A, Y, pi : arrays
        One draw: ``Z`` (N_fit x K, the fitted trials' rows) selects the active columns
        (and centres the importance proposal when its rows are the scored trials);
        ``A`` (K x D), ``Y`` (K x T), ``pi`` (K,).
    sigma_n, lam, eps : float
        Hyperparameters of this draw.
    max_exact : int, default 10
        Sum exactly while the number of enumerated columns is at most this.
    inactive : {"sample", "exact", "off"}
        How inactive columns enter (stratified unbiased term, enumeration, left out).
    n_inactive, n_importance : int
        Draws for the inactive-column term and for importance sampling.
    rng : Generator or seed

    Returns
    -------
    dict of (N,) arrays: ``joint`` and, where present, ``F`` and ``X``.
    """
    if inactive not in ("sample", "exact", "off"):
        raise ValueError(f"inactive must be 'sample', 'exact' or 'off'; got {inactive!r}.")
    rng = as_rng(rng)
    Z = np.asarray(Z)
    k = Z.shape[1]
    pi = np.clip(np.asarray(pi, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        log_pi, log1m_pi = np.log(pi), np.log1p(-pi)
    has_f, has_x = F is not None, X is not None
    active = Z.any(axis=0)
    enumerated = np.arange(k) if inactive == "exact" else np.flatnonzero(active)
    hyper = dict(sigma_n=sigma_n, lam=lam, eps=eps)
    if len(enumerated) <= max_exact:
        configs = _all_configs(enumerated, k)
        rest = np.setdiff1d(np.arange(k), enumerated)
        log_w = _log_bernoulli(configs, log_pi, log1m_pi)  # rest columns off
        all_configs, all_w = [configs], [log_w]
        log_off = log1m_pi[rest].sum()
        if inactive == "sample" and len(rest) and log_off < 0.0:
            # Stratum "some inactive column on": probability -expm1(log_off), unbiased draws.
            draws = _sample_nonzero(log_pi[rest], log1m_pi[rest], n_inactive, rng)
            base_w = log_w - log_off + np.log(-np.expm1(log_off)) - np.log(n_inactive)
            for row in draws:
                extra = configs.copy()
                extra[:, rest] = row
                all_configs.append(extra)
                all_w.append(base_w)
        configs, log_w = np.concatenate(all_configs), np.concatenate(all_w)
        return _exact_in_blocks(F, X, configs, A, Y, log_w, hyper, has_f, has_x)
    # Importance sampling over all columns, one proposal per trial.
    n = (F if F is not None else X).shape[0]
    own_rows = Z.shape[0] == n  # else held-out trials: no own row to centre the proposal on
    out = {name: np.empty(n) for name in ("joint", "F", "X") if name == "joint" or
           (name == "F" and has_f) or (name == "X" and has_x)}  # fmt: skip
    for i in range(n):
        q = 0.9 * Z[i] + 0.05 if own_rows else np.full(k, 0.5)
        from_prior = rng.random(n_importance) < 0.5
        u = rng.random((n_importance, k))
        configs = np.where(from_prior[:, None], u < pi, u < q).astype(np.int64)
        log_p = _log_bernoulli(configs, log_pi, log1m_pi)
        log_q = _log_bernoulli(configs, np.log(q), np.log1p(-q))
        log_mix = np.logaddexp(log_q, log_p) - np.log(2.0)
        log_w = log_p - log_mix - np.log(n_importance)
        log_f, log_x = config_logliks(
            None if F is None else F[i : i + 1], None if X is None else X[i : i + 1],
            configs, A, Y, **hyper,
        )  # fmt: skip
        for name, value in _combine(log_f, log_x, log_w[None, :], has_f, has_x).items():
            out[name][i] = value[0]
    return out


def integrated_log_likelihood(
    posterior,
    F=None,
    X=None,
    *,
    hyper: dict,
    max_exact: int = DEFAULT_MAX_EXACT,
    inactive: str = "sample",
    n_inactive: int = 4,
    n_importance: int = 256,
    random_seed=0,
    parts_dtype="float64",
    joint_dtype="float64",
):
    """Integrated log-likelihoods of every posterior draw, as an ``xarray.Dataset``.

    Parameters
    ----------
    posterior : xarray.Dataset
        With ``Z`` (chain, draw, trial, feature), ``pi`` and ``A`` / ``Y`` where the model has
        forces / cues; hyperparameters present in it are read per draw.
    F, X : arrays or None
        The observed forces and cues.
    hyper : dict
        Values of the hyperparameters (``sigma_n, lam, eps``) that are *not* in ``posterior``.
    max_exact, inactive, n_inactive, n_importance
        As in :func:`trial_logliks`.
    random_seed : int or Generator
        For the stochastic terms (reproducible).
    parts_dtype, joint_dtype : dtype, default "float64"
        Of ``F`` and ``X``, and of ``joint``; ``"float32"`` halves them for large fits
        (``az.loo`` on ``float32`` moves elpd by about 1e-6 of its standard error).

    Returns
    -------
    xarray.Dataset
        ``joint`` and ``F`` / ``X`` with dims ``(chain, draw, trial)``.
    """
    import xarray as xr

    max_exact = check_int(max_exact, "max_exact", minimum=0, maximum=20)
    rng = as_rng(random_seed)
    Z = posterior["Z"].values
    n_chain, n_draw = Z.shape[:2]
    if F is None and X is None:
        raise ValueError("Pass the forces F, the cues X or both.")
    n = (F if F is not None else X).shape[0]  # may be held-out trials, not the fitted ones
    pi = posterior["pi"].values

    def per_draw(name):
        if name in posterior:
            return np.broadcast_to(posterior[name].values, (n_chain, n_draw))
        if name not in hyper:
            raise ValueError(f"Hyperparameter {name!r} is neither in the posterior nor given.")
        return np.full((n_chain, n_draw), float(hyper[name]))

    values = {name: per_draw(name) for name in ("sigma_n", "lam", "eps")}
    A = posterior["A"].values if F is not None else None
    Y = posterior["Y"].values if X is not None else None
    names = ["joint"] + (["F"] if F is not None else []) + (["X"] if X is not None else [])
    out = {
        name: np.empty((n_chain, n_draw, n), joint_dtype if name == "joint" else parts_dtype)
        for name in names
    }
    for c in range(n_chain):
        for d in range(n_draw):
            res = trial_logliks(
                F, X, Z[c, d], None if A is None else A[c, d], None if Y is None else Y[c, d],
                pi[c, d], sigma_n=values["sigma_n"][c, d], lam=values["lam"][c, d],
                eps=values["eps"][c, d], max_exact=max_exact, inactive=inactive,
                n_inactive=n_inactive, n_importance=n_importance, rng=rng,
            )  # fmt: skip
            for name in names:
                out[name][c, d] = res[name]
    coords = {
        "chain": posterior["chain"].values,
        "draw": posterior["draw"].values,
        "trial": (
            posterior["trial"].values
            if "trial" in posterior.coords and posterior["trial"].size == n
            else np.arange(n)
        ),
    }
    return xr.Dataset(
        {name: (("chain", "draw", "trial"), v) for name, v in out.items()}, coords=coords
    )


#: Group that keeps the log-likelihood given each trial's own ``z_i`` (not for LOO).
CONDITIONAL_GROUP = LOG_LIKELIHOOD_GROUPS[2]


def _constant(idata, model, name):
    if "constant_data" in idata.children and name in idata.constant_data:
        value = np.asarray(idata.constant_data[name].values)
        if value.size != 1:
            raise ValueError(f"constant_data[{name!r}] must be a scalar, got shape {value.shape}.")
        return float(value.reshape(-1)[0])
    if model is not None and name in model.named_vars:
        var = model[name]
        if var not in model.free_RVs:
            return float(var.eval())
    return None


def add_integrated_log_likelihood(idata, model=None, **options):
    """Replace ``idata``'s ``log_likelihood`` group by the integrated per-trial one, in place.

    ``log_likelihood`` then holds ``joint`` (each whole trial, its feature row integrated out:
    what ``az.loo(idata)`` uses); ``log_likelihood_parts`` holds ``F`` (forces given the
    trial's cues: the visuo-motor question) and ``X`` (cues given forces), for
    ``pmctx.compare(..., var_name="F")``. The log-likelihood given each trial's sampled
    ``z_i`` (what ``pm.sample`` stores) moves to the ``conditional_log_likelihood`` group: it
    is *not* for LOO/WAIC (its Pareto k are mostly > 0.7), only for diagnostics.
    Hyperparameters are read per draw from the posterior when they were sampled, otherwise
    from ``constant_data`` or ``model``.

    Parameters
    ----------
    idata : xarray.DataTree
        From :func:`pmctx.models.ibp.sample` (``posterior`` with ``Z, pi`` and ``A``/``Y``,
        ``observed_data`` with ``F``/``X``).
    model : pm.Model, optional
        The model, to read fixed hyperparameters not stored in ``constant_data``.
    **options
        ``max_exact, inactive, n_inactive, n_importance, random_seed`` of
        :func:`integrated_log_likelihood`.

    Returns
    -------
    xarray.DataTree
        The same object, for chaining.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> from pmctx.models.ibp import sample
    >>> data = visuomotor_data(n_trials=10, random_seed=0)
    >>> idata = sample(data.F, data.X, K_max=8, draws=5, tune=5, chains=1, sigma_n=0.3,
    ...                random_seed=0, check_convergence=False)
    >>> list(idata.log_likelihood.data_vars), sorted(idata.log_likelihood_parts.data_vars)
    (['joint'], ['F', 'X'])
    >>> sorted(idata.conditional_log_likelihood.data_vars)
    ['F', 'X']
    """
    observed = idata.observed_data if "observed_data" in idata.children else {}
    F = observed["F"].values if "F" in observed else None
    X = observed["X"].values if "X" in observed else None
    if F is None and X is None:
        raise ValueError("idata.observed_data has neither 'F' nor 'X'; is it an IBP fit?")
    hyper = {}
    for name in ("sigma_n", "lam", "eps"):
        if name in idata.posterior:
            continue
        value = _constant(idata, model, name)
        if value is None:
            needed = F is not None if name == "sigma_n" else X is not None
            if needed:
                raise ValueError(
                    f"Cannot find hyperparameter {name!r} in the posterior, constant_data or "
                    "the model; pass model=the pm.Model that produced idata."
                )
            value = 1.0 if name == "sigma_n" else 0.5
        hyper[name] = value
    integrated = integrated_log_likelihood(idata.posterior, F, X, hyper=hyper, **options)
    integrated.attrs["pmctx_log_likelihood"] = "integrated over each trial's latent row z_i"
    conditional = (
        idata[CONDITIONAL_GROUP].to_dataset() if CONDITIONAL_GROUP in idata.children else None
    )
    if "log_likelihood" in idata.children and "joint" not in idata.log_likelihood:
        # pm.sample's, given z_i (a rerun keeps the first)
        conditional = idata.log_likelihood.to_dataset()
        conditional.attrs["pmctx_note"] = "given each trial's sampled z_i: not for LOO/WAIC"
    parts = integrated[[name for name in ("F", "X") if name in integrated]]
    parts.attrs["pmctx_log_likelihood"] = "one part of each trial given the other, z_i integrated"
    return set_log_likelihood_groups(
        idata, integrated[["joint"]], parts=parts, conditional=conditional
    )

"""A data-driven starting state for large data sets: fit a random subsample, then extend.

From ``pm.sample``'s start (``Z = 0``) the first sweep at large ``N`` lets the early rows
create features that later rows copy in part: at N = 10,000 both row kernels then held 16-19
shared features for hundreds of sweeps (the truth had 4), a trap no single-row move leaves
quickly because each spurious copy is owned by thousands of rows. A subsample of a few hundred
rows does not fall into it (the sampler converges there within its default tuning), and its
features are the features of the whole data set. So :func:`subsample_start`

1. runs the ordinary sweep (:func:`pmctx.ibp.sampler.gibbs_sweep`, joint row moves) with the
   same hyperparameter updates as the model's steps (:func:`pmctx.ibp.hyper.update_hyper`) on
   a random subsample of ``n_sub`` rows, from ``Z = 0``;
2. gives every other row ``z_i = 0`` and runs full sweeps over all rows: rows are visited in
   random order (the sweep's own order) and, with ``A`` and ``Y`` already right, each takes
   the features it owns. The hyperparameters are held during the first of these sweeps (an
   unassigned row's whole force would otherwise count as noise) and updated after it.

Only the starting point changes: the chains that ``pm.sample`` then runs use the exact
kernels, and each chain gets its own subsample and random stream, so the chains start apart
and R-hat still compares independent runs. Tuning draws are discarded as usual.
:func:`subsample_initvals` turns one such start per chain into ``pm.sample``'s ``initvals``.
"""

from __future__ import annotations

import numpy as np

from pmctx.ibp.hyper import HYPER_NAMES, HYPER_PRIORS, update_hyper
from pmctx.ibp.sampler import IBPHyper, IBPState, gibbs_sweep
from pmctx.sampling import dim_length
from pmctx.validation import as_rng, check_int

__all__ = ["START_HYPER", "subsample_initvals", "subsample_start"]

# The first sweep over all rows draws each row's shared columns jointly, up to this many
# (2^8 configurations per row).
MAX_EXTEND_BLOCK = 8

# Subsample features owned by fewer rows than this (and this share of the subsample) are
# dropped before extending.
MIN_OWNERS = 3
MIN_OWNER_SHARE = 0.03

# Where the learned hyperparameters start (the model's initial point is about the same).
START_HYPER = dict(alpha=1.0, sigma_n=0.5, sigma_A=1.0, phi=0.5, lam=0.9, eps=0.05)


def _hyper(values) -> IBPHyper:
    return IBPHyper(**{("sigma_a" if k == "sigma_A" else k): float(v) for k, v in values.items()})


def subsample_start(
    F,
    X,
    K_max: int,
    *,
    learned=(),
    fixed=None,
    n_sub: int = 500,
    sweeps: int = 300,
    extend_sweeps: int = 3,
    priors=None,
    rng=None,
) -> dict:
    """A starting state from a fit to a random subsample, extended to every row.

    Parameters
    ----------
    F : ndarray (N, D) float64, D may be 0
    X : ndarray (N, T) int64, T may be 0
    K_max : int
    learned : iterable of str
        Hyperparameters with priors (``alpha, sigma_n, sigma_A, phi, lam, eps``), updated
        as in the model's steps; the others are fixed at ``fixed``.
    fixed : dict, optional
        Values of the fixed hyperparameters (and starting values of learned ones); missing
        ones start at ``START_HYPER``.
    n_sub : int, default 500
        Rows in the subsample (all rows if ``N <= n_sub``).
    sweeps : int, default 300
        Sweeps on the subsample.
    extend_sweeps : int, default 3
        Sweeps over all rows after extending.
    priors : dict, optional
        Hyperparameter priors; default ``pmctx.ibp.hyper.HYPER_PRIORS``.
    rng : int or Generator, optional

    Returns
    -------
    dict
        ``Z, A, Y, pi`` and the hyperparameter values (``alpha, sigma_n, sigma_A, phi, lam,
        eps``), every entry in its constrained space.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> data = visuomotor_data(400, random_seed=0)
    >>> start = subsample_start(data.F, data.X, 10, learned=("sigma_n", "phi"), n_sub=100,
    ...                         sweeps=50, rng=0)
    >>> start["Z"].shape, int((start["Z"].sum(axis=0) >= 2).sum()) >= 1
    ((400, 10), True)
    """
    F = np.ascontiguousarray(F, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.int64)
    K_max = check_int(K_max, "K_max", minimum=1)
    n_sub = check_int(n_sub, "n_sub", minimum=1)
    sweeps = check_int(sweeps, "sweeps", minimum=0)
    extend_sweeps = check_int(extend_sweeps, "extend_sweeps", minimum=0)
    rng = as_rng(rng)
    priors = {**HYPER_PRIORS, **(priors or {})}
    learned = tuple(learned)
    values = {**START_HYPER, **(fixed or {})}
    n = F.shape[0]
    rows = np.sort(rng.choice(n, size=min(n, n_sub), replace=False))

    def run(state, F_, X_, n_sweeps, hold_first=False):
        for s in range(n_sweeps):
            if hold_first and s == 0:
                # Every row's shared columns in one block and no new features: each
                # unassigned row takes its exact conditional among the subsample's features,
                # not one column at a time, and no row opens a feature that later rows of
                # the same pass would copy in part.
                block = min(MAX_EXTEND_BLOCK, int((state.Z.sum(axis=0) > 0).sum()))
                gibbs_sweep(state, F_, X_, _hyper(values), rng, block_size=block,
                            moves="legacy", new_features=False)  # fmt: skip
            else:
                gibbs_sweep(state, F_, X_, _hyper(values), rng)
            if not (hold_first and s == 0):
                update_hyper(
                    values,
                    learned,
                    state.Z,
                    state.A,
                    state.Y,
                    F_,
                    X_,
                    priors,
                    rng,
                    pi_logit=state.pi_logit,
                )

    sub = IBPState.from_arrays(
        np.zeros((rows.size, K_max)), np.zeros((K_max, F.shape[1])), np.zeros((K_max, X.shape[1]))
    )
    run(sub, F[rows], X[rows], sweeps)
    # A feature few subsample rows own may be the subsample's own noise (at N = 300 the
    # posterior keeps such features); extended to every row it would attract copies of
    # a true feature. The exact chain can still add rare features back.
    min_owners = max(MIN_OWNERS, int(np.ceil(MIN_OWNER_SHARE * rows.size)))
    sub.Z[:, sub.Z.sum(axis=0) < min_owners] = 0
    Z = np.zeros((n, K_max), dtype=np.int64)
    Z[rows] = sub.Z
    state = IBPState(Z, sub.A, sub.Y, sub.pi_logit)
    run(state, F, X, extend_sweeps, hold_first=True)
    pi = 1.0 / (1.0 + np.exp(-state.pi_logit))
    return dict(Z=state.Z, A=state.A, Y=state.Y, pi=pi, **values)


def _chain_rngs(random_seed, chains):
    if isinstance(random_seed, (list, tuple, np.ndarray)):
        return [np.random.default_rng(s) for s in random_seed]
    return np.random.default_rng(random_seed).spawn(chains)


def subsample_initvals(model, F, X, *, chains, random_seed=None) -> list | None:
    """Per-chain ``initvals`` for ``pm.sample`` from :func:`subsample_start`, or None.

    Every chain gets its own subsample and random stream.

    Parameters
    ----------
    model : pm.Model
        From :func:`pmctx.models.ibp.build_model`.
    F, X : ndarray or None
        The forces and cues the model was built with.
    chains : int
        Number of chains (one start each).
    random_seed : int, sequence of int, Generator or None
        As ``pm.sample``'s; a sequence gives one seed per chain.

    Returns
    -------
    list of dict or None
        ``pm.sample``'s ``initvals`` (``Z, pi, A, Y`` and the learned hyperparameters, in
        their constrained space); None when a hyperparameter is neither learned with
        ``build_model``'s prior nor a fixed number (a user's own variable), since the start
        could not follow it.

    Examples
    --------
    >>> from pmctx.ibp.data import visuomotor_data
    >>> from pmctx.models.ibp import build_model
    >>> data = visuomotor_data(30, random_seed=0)
    >>> model = build_model(data.F, data.X, K_max=6)
    >>> points = subsample_initvals(model, data.F, data.X, chains=2, random_seed=0)
    >>> len(points), points[0]["Z"].shape
    (2, (30, 6))
    """
    free = set(model.free_RVs)
    learned, fixed = [], {}
    for name in HYPER_NAMES:
        rv_name = name + "2" if name in ("sigma_n", "sigma_A") else name
        if rv_name in model.named_vars and model[rv_name] in free:
            learned.append(name)
        elif name in model.named_vars and model[name] in model.data_vars:
            fixed[name] = float(model[name].get_value())
        else:
            return None
    k_max = dim_length(model, "feature")
    n = dim_length(model, "trial")
    F = np.zeros((n, 0)) if F is None else np.asarray(F, dtype=np.float64)
    X = np.zeros((n, 0), np.int64) if X is None else np.asarray(X, dtype=np.int64)
    points = []
    for rng in _chain_rngs(random_seed, chains):
        state = subsample_start(F, X, k_max, learned=learned, fixed=fixed, rng=rng)
        point = {"Z": state["Z"], "pi": np.clip(state["pi"], 1e-9, 1.0 - 1e-9)}
        if F.shape[1]:
            point["A"] = state["A"]
        if X.shape[1]:
            point["Y"] = state["Y"]
        for name in learned:
            value = state[name] ** 2 if name in ("sigma_n", "sigma_A") else state[name]
            point[name + "2" if name in ("sigma_n", "sigma_A") else name] = value
        points.append(point)
    return points

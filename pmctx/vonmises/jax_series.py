"""The augmented orientation-map sampler in JAX, for GPUs (optional extra ``pmctx[jax]``).

Same sweep as :func:`pmctx.vonmises.augmented.augmented_sweep`: draw every horizontal edge
mode, then every column as an independent chain of vertical modes by forward filtering and
backward sampling (FFBS), then each node's von Mises angle; then the same with rows and
columns swapped. The CPU pass (:mod:`pmctx.vonmises._numba_series_pass`) is a loop per node
tuned for a core's vector units; here one forward and one backward ``lax.scan`` run along the
chains, each step vectorised over every column (and every mode pair), which is the shape a GPU
wants. The pair terms are ``log I0(r) = log i0e(r) + r`` in log space, float64.

Given the same uniforms, :func:`column_pass` returns the CPU pass's von Mises means and
concentrations (the tests compare them to 1e-10), so both samplers have the same law; the
angles are then drawn with :class:`numpyro.distributions.VonMises`.

The module imports without JAX (a plain install, the docs build); JAX and numpyro are imported
when a function first runs (:func:`require_jax`), which says ``pip install 'pmctx[jax]'`` where
they are missing.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.jax_series import augmented_sweeps
>>> o = augmented_sweeps(np.zeros((6, 5)), np.zeros((6, 5, 2)), 2.0, 4, n_sweeps=3, random_seed=0)
>>> o.shape
(6, 5)
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from pmctx.validation import as_float_array, check_int, check_positive
from pmctx.vonmises.potentials import mode_vectors

__all__ = ["augmented_sweeps", "column_pass", "edge_modes", "require_jax"]

# numpyro's rejection sampler divides by the concentration; a node whose natural vector is
# exactly zero is uniform, which this floor reproduces to far below float64 resolution.
_MIN_CONCENTRATION = 1e-30


@functools.cache
def require_jax():
    """Import JAX (float64 enabled) and check numpyro, on first use; ``jax``.

    JAX is an optional extra, so this module imports without it (the docs and a plain install
    read it) and JAX is imported when a function first runs.

    Returns
    -------
    module
        ``jax``, with ``jax_enable_x64`` set.

    Raises
    ------
    ImportError
        When JAX or numpyro is not installed, saying what to install.
    """
    try:
        import jax
        import numpyro  # noqa: F401
    except ImportError as err:
        raise ImportError(
            f"pmctx.vonmises.jax_series runs on JAX and numpyro, which are not installed "
            f"({err}). Install the extra: pip install 'pmctx[jax]' (with a JAX build for your "
            "GPU), or use the compiled CPU sweep pmctx.vonmises.augmented.augmented_sweep."
        ) from err
    # float64 like the CPU kernels; JAX reads this flag when arrays are created, so set it
    # before any array is made.
    jax.config.update("jax_enable_x64", True)
    return jax


# JAX makes float32 arrays unless jax_enable_x64 is set first. Where the caller has imported
# JAX already (to build arrays for column_pass, say), set it now, as importing this module
# always did; otherwise the first call sets it. Only the flag: a stand-in module (a docs
# build's mock) or JAX without numpyro must not fail the import.
_jax_module = sys.modules.get("jax")
if callable(getattr(getattr(_jax_module, "config", None), "update", None)):
    _jax_module.config.update("jax_enable_x64", True)
del _jax_module


def _jnp():
    """``jax.numpy``, imported through :func:`require_jax`."""
    return require_jax().numpy


def _log_i0(r):
    from jax.scipy.special import i0e

    return _jnp().log(i0e(r)) + r


def _pick(log_weights, uniforms):
    """Inverse-CDF draw along the last axis, the compiled kernels' rule
    (:func:`pmctx.vonmises._numba_chains.inverse_cdf_pick`): the first index whose cumulative
    weight reaches ``uniform * total``."""
    jnp = _jnp()
    weights = jnp.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    cumulative = jnp.cumsum(weights, axis=-1)
    target = uniforms * cumulative[..., -1]
    index = jnp.sum(cumulative < target[..., None], axis=-1)
    return jnp.minimum(index, weights.shape[-1] - 1)


def edge_modes(o, kappa_modes, uniforms):
    """Mode of each horizontal edge of ``o`` (M, N): ``P(k) ∝ exp(kappa r_k · (o_a + o_b))``.

    Parameters
    ----------
    o : jax.Array (M, N)
        Doubled angles.
    kappa_modes : jax.Array (K, 2)
        ``kappa r_k`` for the ``K = R + 1`` modes.
    uniforms : jax.Array (M, N - 1)
        One uniform per edge.

    Returns
    -------
    jax.Array of int, shape (M, N - 1)
    """
    jnp = _jnp()
    x = jnp.cos(o[:, :-1]) + jnp.cos(o[:, 1:])
    y = jnp.sin(o[:, :-1]) + jnp.sin(o[:, 1:])
    logits = x[..., None] * kappa_modes[:, 0] + y[..., None] * kappa_modes[:, 1]
    return _pick(logits, uniforms)


def _chain_naturals(node_vec, kappa_modes, uniforms):
    """FFBS over the vertical modes of chains laid out ``(length, chains, 2)``; each node's
    natural vector given the drawn modes, ``(length, chains, 2)``.

    ``uniforms`` is ``(chains, length)`` (entry 0 unused), the compiled kernel's layout.
    """
    jax, jnp = require_jax(), _jnp()
    from jax.scipy.special import logsumexp

    length = node_vec.shape[0]
    if length == 1:
        return node_vec
    pairs = kappa_modes[:, None, :] + kappa_modes[None, :, :]  # (K, K, 2)

    def log_terms(vectors):  # log I0(|vectors|) over the last axis
        return _log_i0(jnp.hypot(vectors[..., 0], vectors[..., 1]))

    def normalise(log_f):
        return log_f - logsumexp(log_f, axis=-1, keepdims=True)

    first = normalise(log_terms(node_vec[0][:, None] + kappa_modes))  # (C, K): no mode above node 0

    def forward(log_f, v):
        log_f = normalise(
            logsumexp(log_f[:, :, None] + log_terms(v[:, None, None] + pairs), axis=1)
        )
        return log_f, log_f

    _, rest = jax.lax.scan(forward, first, node_vec[1:-1])
    filtered = jnp.concatenate([first[None], rest], axis=0)  # (length - 1, C, K)
    last = length - 1
    below = _pick(
        filtered[-1] + log_terms(node_vec[last][:, None] + kappa_modes), uniforms[:, last]
    )

    def backward(below, step):  # the mode above node i, given the one below it
        log_f, v, u = step
        shifted = v[:, None] + kappa_modes[None, :] + kappa_modes[below][:, None]  # (C, K, 2)
        above = _pick(log_f + log_terms(shifted), u)
        return above, above

    _, drawn = jax.lax.scan(
        backward,
        below,
        (filtered[:-1], node_vec[1:last], uniforms[:, 1:last].T),
        reverse=True,
    )
    null = kappa_modes.shape[0]
    aux = jnp.concatenate(
        [
            jnp.full((1, *below.shape), null, dtype=below.dtype),
            drawn,
            below[None],
            jnp.full((1, *below.shape), null, dtype=below.dtype),
        ]
    )  # (length + 1, C): aux[i] above node i, aux[i + 1] below it
    extended = jnp.concatenate([kappa_modes, jnp.zeros((1, 2), kappa_modes.dtype)])
    return node_vec + extended[aux[:-1]] + extended[aux[1:]]


def column_pass(o, field, kappa_modes, u_edge, u_chain):
    """Von Mises mean and concentration of every node after the horizontal edge modes and
    the vertical modes of every column are drawn, ``(N, M)`` each (columns first), as
    :func:`pmctx.vonmises._numba_series_pass.column_pass` returns them.

    Parameters
    ----------
    o : jax.Array (M, N)
        Current doubled angles.
    field : jax.Array (M, N, 2)
        Natural parameters of the observations and node priors.
    kappa_modes : jax.Array (K, 2)
        ``kappa r_k`` for the ``K = R + 1`` modes.
    u_edge : jax.Array (M, N - 1)
        Uniforms of the horizontal edge modes (ignored when ``N == 1``).
    u_chain : jax.Array (N, M)
        Uniforms of the vertical modes, one row per column.

    Returns
    -------
    mean, concentration : jax.Array (N, M)

    Notes
    -----
    Arrays are float64 only when made after ``jax_enable_x64`` is set: by importing this
    module after JAX, or by calling :func:`require_jax` first.
    """
    jnp = _jnp()
    node_vec = field
    if o.shape[1] > 1:
        edge = kappa_modes[edge_modes(o, kappa_modes, u_edge)]  # (M, N - 1, 2)
        node_vec = node_vec.at[:, 1:].add(edge).at[:, :-1].add(edge)
    natural = _chain_naturals(node_vec, kappa_modes, u_chain)  # (M, N, 2)
    mean = jnp.arctan2(natural[..., 1], natural[..., 0])
    return mean.T, jnp.hypot(natural[..., 0], natural[..., 1]).T


def _pass(o, field, kappa_modes, key):
    """One column pass with its own uniforms and von Mises draws; the new ``o`` (M, N)."""
    jax, jnp = require_jax(), _jnp()
    from numpyro.distributions import VonMises

    n_rows, n_cols = o.shape
    k_edge, k_chain, k_angle = jax.random.split(key, 3)
    u_edge = jax.random.uniform(k_edge, (n_rows, max(n_cols - 1, 0)), dtype=o.dtype)
    u_chain = jax.random.uniform(k_chain, (n_cols, n_rows), dtype=o.dtype)
    mean, concentration = column_pass(o, field, kappa_modes, u_edge, u_chain)
    angles = VonMises(mean, jnp.maximum(concentration, _MIN_CONCENTRATION)).sample(k_angle)
    # numpyro's draws lie in [-pi, pi]; the CPU samplers' convention is [-pi, pi).
    return (jnp.remainder(angles + jnp.pi, 2.0 * jnp.pi) - jnp.pi).T


class _LazyJit:
    """``jax.jit(function, **options)``, compiled on the first call so that importing this
    module does not import JAX; ``clear_cache`` drops the traces, as on a jitted function."""

    def __init__(self, function, **options):
        self._function, self._options, self._jitted = function, options, None
        functools.update_wrapper(self, function)

    def __call__(self, *args, **kwargs):
        if self._jitted is None:
            self._jitted = require_jax().jit(self._function, **self._options)
        return self._jitted(*args, **kwargs)

    def clear_cache(self):
        if self._jitted is not None:
            self._jitted.clear_cache()


def _sweeps_body(o, field, kappa_modes, key, n_sweeps, trace):
    jax = require_jax()
    field_t = field.transpose(1, 0, 2)

    def sweep(o, key):
        k_cols, k_rows = jax.random.split(key)
        o = _pass(o, field, kappa_modes, k_cols)
        o = _pass(o.T, field_t, kappa_modes, k_rows).T
        return o, (o if trace else None)

    o, draws = jax.lax.scan(sweep, o, jax.random.split(key, n_sweeps))
    return draws if trace else o


_sweeps = _LazyJit(_sweeps_body, static_argnames=("n_sweeps", "trace"))


def augmented_sweeps(
    o, field, kappa: float, rank: int, *, n_sweeps: int = 1, trace: bool = False, random_seed=None
):
    """Run ``n_sweeps`` sweeps (a column pass, then a row pass) on the default JAX device.

    The law of each sweep is :func:`pmctx.vonmises.augmented.augmented_sweep`'s with
    ``direction="both"``; the whole run is one compiled call (recompiled for each new map
    shape and ``n_sweeps``).

    Parameters
    ----------
    o : array_like (M, N)
        Starting doubled angles in radians.
    field : array_like (M, N, 2)
        Natural parameters of the observations and node priors
        (:func:`pmctx.vonmises.potentials.natural_field`).
    kappa : float
        Smoothing concentration (> 0).
    rank : int
        Rank ``R`` of the edge potential (``R + 1`` modes, >= 1).
    n_sweeps : int, default 1
        Number of sweeps.
    trace : bool, default False
        Return the map after every sweep, ``(n_sweeps, M, N)``, instead of the last one.
    random_seed : int, optional
        Seed of the JAX random key (default 0).

    Returns
    -------
    numpy.ndarray (M, N), or (n_sweeps, M, N) with ``trace=True``
        The doubled angles after the last sweep (or after each).

    Raises
    ------
    ValueError
        On a bad argument (checked before JAX is imported).
    ImportError
        When JAX or numpyro is not installed (``pip install 'pmctx[jax]'``).
    """
    o = as_float_array(o, "o", ndim=2)
    field = as_float_array(field, "field", shape=(*o.shape, 2))
    kappa = check_positive(kappa, "kappa")
    rank = check_int(rank, "rank", minimum=1)
    n_sweeps = check_int(n_sweeps, "n_sweeps", minimum=1)
    seed = 0 if random_seed is None else check_int(random_seed, "random_seed", minimum=0)
    jax, jnp = require_jax(), _jnp()
    kappa_modes = jnp.asarray(kappa * mode_vectors(rank))
    key = jax.random.key(seed)
    out = _sweeps(jnp.asarray(o), jnp.asarray(field), kappa_modes, key, n_sweeps, bool(trace))
    return np.asarray(out)

"""Tools that prove a sampler right: exact enumeration and Geweke's joint-distribution test.

Every pmctx step method is tested with these:

* **Exact enumeration**: on a problem small enough to list every discrete state, compute the
  exact target probabilities from the log joint, then compare a sampler's visit frequencies
  with a total-variation bound *and* a chi-square goodness-of-fit test on an effective
  sample size (so autocorrelated chains are not over-trusted).
* **Geweke (2004)**: simulate the joint p(theta, y) twice, by the marginal-conditional route
  (theta from the prior, y given theta) and by the successive-conditional route (alternate the
  MCMC transition for theta given y with a fresh y given theta); a correct transition leaves
  the joint invariant, so test-function means agree up to Monte Carlo error.

Examples
--------
>>> import numpy as np
>>> from pmctx.testing import enumerate_binary_states, exact_probabilities
>>> states = enumerate_binary_states((2,))
>>> exact_probabilities(lambda s: float(s.sum()), states).round(3)
array([0.072, 0.197, 0.197, 0.534])
"""

# Long because it gathers the exactness tools (enumeration, TV checks, categorical ESS,
# Geweke's test, docstring examples) in one module; about 340 lines are docstrings.

from __future__ import annotations

import doctest
import importlib
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from pmctx.validation import as_rng

__all__ = [
    "DistributionComparison",
    "GewekeResult",
    "assert_chains_match_exact",
    "assert_docstring_examples",
    "assert_geweke",
    "assert_matches_exact",
    "categorical_ess",
    "compare_to_exact",
    "enumerate_binary_states",
    "exact_probabilities",
    "geweke_test",
    "reference_compile_kwargs",
    "state_indices",
    "tv_tolerance",
]


def reference_compile_kwargs() -> dict:
    """``compile_kwargs`` for PyMC's own samplers (NUTS, ``BinaryGibbsMetropolis``,
    ``CategoricalGibbsMetropolis``) when a test runs them as the reference for a pmctx step.

    PyTensor's Numba backend, which is PyTensor 3's default; named here so that a reference
    chain does not change with a user's ``PYTENSOR_FLAGS``. The backend changes the
    floating-point path, not the target, so a reference chain tests the same law either way.

    Returns
    -------
    dict
        A fresh ``{"mode": "NUMBA"}``.

    Examples
    --------
    >>> reference_compile_kwargs()
    {'mode': 'NUMBA'}
    """
    return {"mode": "NUMBA"}


def enumerate_binary_states(shape) -> np.ndarray:
    """All binary arrays of ``shape``, stacked: an array of shape ``(2**size, *shape)``.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of one state; at most 24 entries in all.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(2**size, *shape)``, states in binary counting order.

    Raises
    ------
    ValueError
        For more than 24 entries (2**24 states).

    Examples
    --------
    >>> enumerate_binary_states((1, 2)).shape
    (4, 1, 2)
    """
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    size = int(np.prod(shape))
    if size > 24:
        raise ValueError(f"Refusing to enumerate 2**{size} states; use at most 24 binary entries.")
    flat = np.array(list(itertools.product((0, 1), repeat=size)), dtype=np.int64)
    return flat.reshape((2**size, *shape))


def exact_probabilities(log_joint: Callable[[np.ndarray], float], states) -> np.ndarray:
    """Normalised probabilities of ``states`` under an unnormalised ``log_joint``.

    Parameters
    ----------
    log_joint : callable
        ``log_joint(state) -> float``, the log joint density up to a constant; ``-inf`` for
        impossible states.
    states : sequence of numpy.ndarray
        The enumerated states, such as :func:`enumerate_binary_states`.

    Returns
    -------
    numpy.ndarray
        One probability per state, summing to 1 (normalised in log space).

    Examples
    --------
    >>> states = enumerate_binary_states(2)
    >>> exact_probabilities(lambda s: np.log(1.0 + s.sum()), states)
    array([0.125, 0.25 , 0.25 , 0.375])
    """
    logp = np.array([float(log_joint(s)) for s in states])
    if np.isnan(logp).any() or np.isposinf(logp).any():
        raise ValueError("log_joint returned NaN or +inf for some state.")
    return np.exp(logp - logsumexp(logp))


def _row_keys(arr: np.ndarray) -> list[bytes]:
    # Rounding makes float-valued discrete states (e.g. grid angles) match their enumeration.
    flat = np.round(np.asarray(arr, dtype=np.float64).reshape(len(arr), -1), 10) + 0.0
    return [row.tobytes() for row in flat]


def state_indices(samples, states) -> np.ndarray:
    """Index of each sample among the enumerated ``states`` (first axis of both).

    Parameters
    ----------
    samples : array_like
        Draws, one state per entry of the first axis.
    states : array_like
        The enumerated states, same shape per state.

    Returns
    -------
    numpy.ndarray
        int64 index of every draw into ``states``.

    Raises
    ------
    ValueError
        When the state shapes differ or a draw is not among the states.

    Examples
    --------
    >>> states = enumerate_binary_states(2)
    >>> state_indices(np.array([[1, 1], [0, 1]]), states)
    array([3, 1])
    """
    samples = np.asarray(samples)
    states = np.asarray(states)
    if samples.shape[1:] != states.shape[1:]:
        raise ValueError(
            f"samples have state shape {samples.shape[1:]} but states have {states.shape[1:]}."
        )
    lookup = {key: i for i, key in enumerate(_row_keys(states))}
    try:
        return np.array([lookup[key] for key in _row_keys(samples)], dtype=np.int64)
    except KeyError as err:
        raise ValueError("A sample is not among the enumerated states.") from err


@dataclass(frozen=True)
class DistributionComparison:
    """Outcome of comparing visit frequencies with exact probabilities.

    Attributes
    ----------
    tv : float
        Total-variation distance between visit frequencies and exact probabilities.
    chi2 : float
        Chi-square statistic on the effective sample size (rare cells pooled).
    dof : int
        Its degrees of freedom.
    p_value : float
        Its p-value.
    n_eff : float
        Effective sample size used.
    tv_tol : float
        Largest acceptable total variation.
    alpha : float
        Significance level of the chi-square test.
    impossible_visits : int
        Draws in states of probability zero (any is a failure).
    """

    tv: float
    chi2: float
    dof: int
    p_value: float
    n_eff: float
    tv_tol: float
    alpha: float
    impossible_visits: int

    @property
    def passed(self) -> bool:
        """No impossible visits, total variation within ``tv_tol`` and p-value >= ``alpha``."""
        return self.impossible_visits == 0 and self.tv <= self.tv_tol and self.p_value >= self.alpha

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (
            f"{verdict}: total variation {self.tv:.4f} (tolerance {self.tv_tol}), chi-square "
            f"{self.chi2:.1f} on {self.dof} dof, p={self.p_value:.3g} (alpha {self.alpha}), "
            f"n_eff={self.n_eff:.0f}, visits to zero-probability states: "
            f"{self.impossible_visits}"
        )


def compare_to_exact(
    sample_indices, probs, *, tv_tol: float, alpha: float = 1e-3, ess: float | None = None
) -> DistributionComparison:
    """Compare a sampler's visits with exact probabilities.

    Parameters
    ----------
    sample_indices : array_like of int
        State index of every retained draw (see :func:`state_indices`).
    probs : array_like
        Exact probability of every state.
    tv_tol : float
        Largest acceptable total-variation distance between visit frequencies and ``probs``.
    alpha : float, default 1e-3
        Significance level of the chi-square test; the comparison fails when p < alpha.
    ess : float, optional
        Effective sample size used for the chi-square test (default: the number of draws,
        right only for independent draws). Cells with expected count below 5 are pooled.

    Returns
    -------
    DistributionComparison
        Total variation, chi-square test and the verdict (``.passed``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = np.array([0.2, 0.3, 0.5])
    >>> compare_to_exact(rng.choice(3, size=5000, p=p), p, tv_tol=0.03).passed
    True
    """
    idx = np.asarray(sample_indices, dtype=np.int64).ravel()
    probs = np.asarray(probs, dtype=np.float64)
    if idx.size == 0:
        raise ValueError("No samples to compare.")
    if idx.min() < 0 or idx.max() >= probs.size:
        raise ValueError(f"sample indices must lie in [0, {probs.size}).")
    probs = probs / probs.sum()
    counts = np.bincount(idx, minlength=probs.size)
    freq = counts / idx.size
    tv = 0.5 * float(np.abs(freq - probs).sum())
    impossible = int(counts[probs == 0].sum())
    n_eff = float(idx.size if ess is None else min(ess, idx.size))

    expected = n_eff * probs
    observed = n_eff * freq
    order = np.argsort(expected)
    # Pool the rarest cells until the pooled cell has an expected count of at least 5.
    cum = np.cumsum(expected[order])
    n_pool = int(np.searchsorted(cum, 5.0) + 1) if expected.min() < 5 else 0
    n_pool = min(n_pool, probs.size)
    pooled_e = [expected[order[:n_pool]].sum()] if n_pool else []
    pooled_o = [observed[order[:n_pool]].sum()] if n_pool else []
    e = np.concatenate([pooled_e, expected[order[n_pool:]]])
    o = np.concatenate([pooled_o, observed[order[n_pool:]]])
    keep = e > 0
    chi2 = float(((o[keep] - e[keep]) ** 2 / e[keep]).sum())
    dof = max(int(keep.sum()) - 1, 1)
    p_value = float(stats.chi2.sf(chi2, dof))
    return DistributionComparison(tv, chi2, dof, p_value, n_eff, tv_tol, alpha, impossible)


def tv_tolerance(probs, n_eff, *, quantile: float = 0.999, n_sim: int = 4000) -> float:
    """The total variation that ``n_eff`` independent draws from ``probs`` exceed with
    probability ``1 - quantile``: a tolerance set by the comparison's own Monte Carlo error.

    A fixed ``tv_tol`` near the sampling noise of the visit frequencies passes or fails by
    environment (another PyTensor backend draws other numbers); this one follows from the
    effective sample size, so it tightens as a test draws more.

    Parameters
    ----------
    probs : array_like
        Exact probability of every state.
    n_eff : float
        Effective sample size of the draws (e.g. :func:`categorical_ess`).
    quantile : float, default 0.999
        Quantile of the total-variation distribution under independent draws.
    n_sim : int, default 4000
        Multinomial replicates that estimate it (fixed seed: the result is deterministic).

    Returns
    -------
    float
        The ``quantile`` of total variation between multinomial frequencies and ``probs``.

    Examples
    --------
    >>> p = np.full(4, 0.25)
    >>> bool(tv_tolerance(p, 10_000) < tv_tolerance(p, 100))
    True
    """
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    n = max(round(float(n_eff)), 1)
    counts = np.random.default_rng(0).multinomial(n, probs, size=n_sim)
    tv = 0.5 * np.abs(counts / n - probs).sum(axis=1)
    return float(np.quantile(tv, quantile))


def categorical_ess(codes, probs, *, min_prob: float = 0.02) -> float:
    """Effective sample size of a chain of discrete states: the smallest bulk ESS of the
    indicators of the states with probability at least ``min_prob``.

    Parameters
    ----------
    codes : array_like of int, shape (chain, draw)
        State index of every draw, per chain.
    probs : array_like
        Exact probability of every state (chooses the states whose indicators are read).
    min_prob : float, default 0.02
        Rarer states are skipped: their indicators' ESS is too noisy to read.

    Returns
    -------
    float
        The smallest ESS, at most the number of draws.

    Examples
    --------
    >>> codes = np.random.default_rng(0).choice(2, size=(2, 500))
    >>> 600 < categorical_ess(codes, [0.5, 0.5]) <= 1000
    True
    """
    import arviz as az

    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must have shape (chain, draw), got {codes.shape}.")
    probs = np.asarray(probs, dtype=np.float64)
    states = np.flatnonzero(probs / probs.sum() >= min_prob)
    ess = [float(az.ess((codes == s).astype(np.float64), method="bulk")) for s in states]
    # A state never visited has no ESS (nan); the comparison itself then fails on it.
    return float(min([codes.size, *(e for e in ess if np.isfinite(e))]))


def assert_matches_exact(sample_indices, probs, *, tv_tol, alpha=1e-3, ess=None):
    """Raise ``AssertionError`` unless :func:`compare_to_exact` passes; return the result.

    Parameters
    ----------
    sample_indices, probs, tv_tol, alpha, ess
        As in :func:`compare_to_exact`.

    Returns
    -------
    DistributionComparison
        The passing comparison.

    Raises
    ------
    AssertionError
        With the comparison's figures when it fails.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> p = np.array([0.5, 0.5])
    >>> assert_matches_exact(rng.choice(2, size=4000, p=p), p, tv_tol=0.03).passed
    True
    """
    result = compare_to_exact(sample_indices, probs, tv_tol=tv_tol, alpha=alpha, ess=ess)
    if not result.passed:
        raise AssertionError(f"Sampler does not match the exact distribution: {result}")
    return result


def assert_chains_match_exact(codes, probs, *, alpha: float = 1e-3, max_tv_tol: float = 1.0):
    """:func:`assert_matches_exact` for MCMC chains, with the effective sample size measured
    (:func:`categorical_ess`) and the total-variation tolerance derived from it
    (:func:`tv_tolerance`), so the verdict does not hang on a guessed ESS or on which backend
    drew the numbers.

    Parameters
    ----------
    codes : array_like of int, shape (chain, draw)
        State index of every draw, per chain.
    probs : array_like
        Exact probability of every state.
    alpha : float, default 1e-3
        Significance level of the chi-square test (run at the measured ESS).
    max_tv_tol : float, default 1.0
        Largest tolerance the test accepts: below it, the chains were too short (too few
        effective draws) for a sharp test, which fails with a message saying so.

    Returns
    -------
    DistributionComparison
        The passing comparison.

    Raises
    ------
    AssertionError
        When the comparison fails or the derived tolerance exceeds ``max_tv_tol``.

    Examples
    --------
    >>> codes = np.random.default_rng(2).choice(3, size=(2, 2000), p=[0.2, 0.3, 0.5])
    >>> assert_chains_match_exact(codes, [0.2, 0.3, 0.5], max_tv_tol=0.05).passed
    True
    """
    codes = np.asarray(codes)
    n_eff = categorical_ess(codes, probs)
    tv_tol = tv_tolerance(probs, n_eff)
    if tv_tol > max_tv_tol:
        raise AssertionError(
            f"Only {n_eff:.0f} effective draws: the tolerance they support ({tv_tol:.4f}) "
            f"exceeds max_tv_tol={max_tv_tol}. Draw more."
        )
    return assert_matches_exact(codes.ravel(), probs, tv_tol=tv_tol, alpha=alpha, ess=n_eff)


@dataclass(frozen=True)
class GewekeResult:
    """Means, standard errors and z-scores of each Geweke test function.

    Attributes
    ----------
    mean_marginal, mean_successive : dict of str to float
        Mean of each test function under forward (marginal-conditional) simulation and
        along the successive-conditional Gibbs chain.
    se_marginal, se_successive : dict of str to float
        Their standard errors (batch means for the chain).
    z : dict of str to float
        The z-score of the difference per test function.
    """

    mean_marginal: dict[str, float]
    mean_successive: dict[str, float]
    se_marginal: dict[str, float]
    se_successive: dict[str, float]
    z: dict[str, float]

    def passed(self, z_threshold: float = 4.0) -> bool:
        """Whether every test function's ``|z|`` is at most ``z_threshold``.

        Parameters
        ----------
        z_threshold : float, default 4.0
            Largest acceptable absolute z-score.

        Returns
        -------
        bool
            ``True`` when all pass.
        """
        return all(abs(z) <= z_threshold for z in self.z.values())

    def __str__(self) -> str:
        rows = [f"{'function':>20} {'marginal':>12} {'successive':>12} {'z':>8}"]
        for name, z in self.z.items():
            rows.append(
                f"{name:>20} {self.mean_marginal[name]:12.4g} "
                f"{self.mean_successive[name]:12.4g} {z:8.2f}"
            )
        return "\n".join(rows)


def _batch_means_se(values: np.ndarray, n_batches: int = 25) -> float:
    n = values.size - values.size % n_batches
    batches = values[:n].reshape(n_batches, -1).mean(axis=1)
    return float(batches.std(ddof=1) / np.sqrt(n_batches))


def geweke_test(
    sample_prior: Callable,
    sample_data: Callable,
    transition: Callable,
    test_functions: Mapping[str, Callable],
    *,
    n_marginal: int,
    n_successive: int,
    thin: int = 1,
    burn: int = 0,
    rng=None,
) -> GewekeResult:
    """Geweke's joint-distribution test of an MCMC transition.

    Parameters
    ----------
    sample_prior : callable ``(rng) -> params``
    sample_data : callable ``(params, rng) -> data``
    transition : callable ``(params, data, rng) -> params``
        One sweep of the sampler under test, targeting p(params | data).
    test_functions : dict of str to callable ``(params, data) -> float``
    n_marginal, n_successive : int
        Draws of the marginal-conditional and the successive-conditional simulators.
    thin, burn : int
        Thinning and burn-in of the successive-conditional chain.
    rng : int or Generator, optional

    Returns
    -------
    GewekeResult
        Its z-scores are standard normal for a correct transition (successive standard
        errors by batch means).

    Examples
    --------
    >>> prior = lambda rng: rng.normal()
    >>> data = lambda theta, rng: theta + rng.normal()
    >>> exact = lambda theta, y, rng: rng.normal(y / 2, np.sqrt(0.5))
    >>> res = geweke_test(prior, data, exact, {"theta": lambda t, y: t},
    ...                   n_marginal=2000, n_successive=2000, rng=0)
    >>> res.passed(4.0)
    True
    """
    rng = as_rng(rng)
    names = list(test_functions)
    marginal = np.empty((n_marginal, len(names)))
    for i in range(n_marginal):
        params = sample_prior(rng)
        data = sample_data(params, rng)
        marginal[i] = [test_functions[k](params, data) for k in names]

    successive = np.empty((n_successive, len(names)))
    params = sample_prior(rng)
    data = sample_data(params, rng)
    for _ in range(burn):
        params = transition(params, data, rng)
        data = sample_data(params, rng)
    for i in range(n_successive):
        for _ in range(thin):
            params = transition(params, data, rng)
            data = sample_data(params, rng)
        successive[i] = [test_functions[k](params, data) for k in names]

    mean_m = marginal.mean(axis=0)
    mean_s = successive.mean(axis=0)
    se_m = marginal.std(axis=0, ddof=1) / np.sqrt(n_marginal)
    se_s = np.array([_batch_means_se(successive[:, j]) for j in range(len(names))])
    z = (mean_m - mean_s) / np.sqrt(se_m**2 + se_s**2 + 1e-300)
    as_dict = lambda a: {k: float(v) for k, v in zip(names, a)}  # noqa: E731
    return GewekeResult(as_dict(mean_m), as_dict(mean_s), as_dict(se_m), as_dict(se_s), as_dict(z))


def assert_geweke(result: GewekeResult, *, z_threshold: float = 4.0) -> GewekeResult:
    """Raise ``AssertionError`` when any Geweke z-score exceeds ``z_threshold``.

    Parameters
    ----------
    result : GewekeResult
        From :func:`geweke_test`.
    z_threshold : float, default 4.0
        Largest acceptable absolute z-score.

    Returns
    -------
    GewekeResult
        ``result``, when it passes.

    Raises
    ------
    AssertionError
        With the table of means and z-scores.
    """
    if not result.passed(z_threshold):
        raise AssertionError(
            f"Geweke test failed (|z| > {z_threshold} for some test function):\n{result}"
        )
    return result


def assert_docstring_examples(module_name: str, *, optionflags=doctest.NORMALIZE_WHITESPACE):
    """Run the docstring examples of ``module_name``; fail if there are none or any fails.

    Parameters
    ----------
    module_name : str
        Importable module name, such as ``"pmctx.validation"``.
    optionflags : int, default doctest.NORMALIZE_WHITESPACE
        ``doctest`` option flags.

    Returns
    -------
    doctest.TestResults
        ``(failed, attempted)``.

    Raises
    ------
    AssertionError
        When the module has no example or an example fails.
    """
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=optionflags)
    assert result.attempted > 0, f"{module_name} has no docstring example"
    assert result.failed == 0, f"{result.failed} docstring example(s) of {module_name} failed"
    return result

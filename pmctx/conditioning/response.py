"""Response models: from the latent-cause model's US expectation ``V_t`` to measured CRs.

Three families, all skipping trials whose response is missing (NaN):

* :class:`LinearGaussian` — the LCM code's ``LCM_lik``: ``CR_t = intercept + gain V_t + e_t``,
  ``e_t ~ N(0, sd^2)``; ``intercept``, ``gain`` by least squares and ``sd`` by maximum
  likelihood (``sqrt(mean(residual^2))``), all in closed form. ``intercept=False`` gives the
  pure gain model ``CR = gain V + e``.
* :class:`BinaryChoice` — a binary CR with ``P(CR = 1) = link(bias + slope (V - 0.5))``,
  ``link`` logistic or probit; MAP under weak Normal priors (sd 10) so that perfectly
  separated responses still give finite estimates.
* :class:`OrdinalRating` — a rating scale with levels ``0..n_levels-1`` (cumulative logit:
  ``P(CR <= k) = sigmoid(cut_k - slope V)``), MAP with the same weak priors.

Each model has ``fit(V, responses) -> ResponseFit`` (the profile over its own parameters, which
is what the per-subject fits optimise), ``pointwise(V, responses, params)`` and
``simulate(V, params, rng)``.

Examples
--------
>>> import numpy as np
>>> from pmctx.conditioning.response import LinearGaussian
>>> V = np.linspace(0.1, 0.9, 9)
>>> cr = 0.2 + 2.0 * V + np.array([0.01, -0.01] * 4 + [np.nan])
>>> fit = LinearGaussian().fit(V, cr)
>>> round(fit.params["gain"], 2), fit.n_observed
(1.99, 8)
"""

# Long because it holds the three response models (linear-Gaussian, binary choice, ordinal
# rating), each with its fit and likelihood; about 300 of its lines are docstrings.

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import optimize, stats
from scipy.special import expit, log_expit

from pmctx.validation import as_float_array, as_rng, check_choice, check_int

__all__ = [
    "RESPONSE_MODELS",
    "BinaryChoice",
    "LinearGaussian",
    "OrdinalRating",
    "ResponseFit",
    "get_response_model",
]

_LOG_SQRT_2PI = np.log(np.sqrt(2 * np.pi))  # scipy.stats.norm's log normalising constant
PRIOR_SD = 10.0  # weak Normal prior of the binary/ordinal coefficients (keeps MAP finite)


@dataclasses.dataclass(frozen=True)
class ResponseFit:
    """Maximum-likelihood (or MAP) response parameters given ``V``.

    Attributes
    ----------
    params : dict
        Parameter name -> value.
    log_likelihood : float
        Sum of ``pointwise`` (the maximised log likelihood of the observed responses).
    pointwise : ndarray (n_observed,)
        Log likelihood of every observed response.
    n_observed : int
        Number of non-missing responses.
    n_params : int
        Free response parameters (for BIC/AIC).
    """

    params: dict
    log_likelihood: float
    pointwise: np.ndarray
    n_observed: int
    n_params: int


def _check(V, responses):
    V = as_float_array(V, "V", ndim=1)
    y = as_float_array(responses, "responses", ndim=1, allow_nan=True)
    if y.shape != V.shape:
        raise ValueError(
            f"responses must have one entry per trial ({V.shape[0]}), got {y.shape[0]}. "
            "Use NaN for trials without a response."
        )
    seen = ~np.isnan(y)
    if not seen.any():
        raise ValueError("responses are all NaN; at least one trial needs a response.")
    return V, y, seen


class LinearGaussian:
    """``CR = intercept + gain V + N(0, sd^2)``, fitted in closed form as in ``LCM_lik``.

    Parameters
    ----------
    intercept : bool, default True
        Fit an intercept (``LCM_lik`` does); ``False``: ``CR = gain V + noise``.
    """

    name = "linear_gaussian"

    def __init__(self, *, intercept: bool = True):
        self.intercept = bool(intercept)

    @property
    def param_names(self):
        """Names of the response parameters, in the order of ``fit``'s ``params``.

        Returns
        -------
        tuple of str
            The parameter names.
        """
        return ("intercept", "gain", "sd") if self.intercept else ("gain", "sd")

    def check_responses(self, responses):
        """Responses pass unchanged: any real value is a valid Gaussian response.

        Parameters
        ----------
        responses : array_like (trial,)
            The responses, NaN where missing.

        Returns
        -------
        array_like
            ``responses``.
        """
        return responses

    def _design(self, V):
        return np.column_stack([np.ones_like(V), V]) if self.intercept else V[:, None]

    def fit(self, V, responses) -> ResponseFit:
        """Best response parameters given ``V`` (the profile the per-subject fits optimise).

        Parameters
        ----------
        V : array_like (trial,)
            The latent-cause model's US expectation on each trial.
        responses : array_like (trial,)
            The responses, NaN where missing (skipped).

        Returns
        -------
        ResponseFit
            Parameters, maximised log likelihood and pointwise log likelihoods.
        """
        V, y, seen = _check(V, responses)
        X, yo = self._design(V[seen]), y[seen]
        coef, *_ = np.linalg.lstsq(X, yo, rcond=None)
        resid = yo - X @ coef
        # ML sd; a floor keeps a perfect fit (e.g. V constant and CR constant) finite.
        sd = max(float(np.sqrt(np.mean(resid**2))), 1e-8 * (1.0 + float(np.abs(yo).max())))
        params = dict(zip(self.param_names[:-1], map(float, coef), strict=True), sd=sd)
        pw = self.pointwise(V, y, params)
        return ResponseFit(params, float(pw.sum()), pw, int(seen.sum()), len(self.param_names))

    def mean(self, V, params):
        """Mean response ``intercept + gain V``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        params : dict
            ``gain`` and optionally ``intercept``.

        Returns
        -------
        numpy.ndarray (trial,)
            The mean CR.
        """
        return params.get("intercept", 0.0) + params["gain"] * np.asarray(V)

    def pointwise(self, V, responses, params) -> np.ndarray:
        """Log likelihood of each observed response at ``params``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        responses : array_like (trial,)
            The responses, NaN where missing (skipped).
        params : dict
            Response parameters by name (see :attr:`param_names`).

        Returns
        -------
        numpy.ndarray (n_observed,)
            One log likelihood per non-missing response.
        """
        V, y, seen = _check(V, responses)
        # scipy.stats.norm.logpdf's arithmetic, term for term (same values, bit for bit),
        # without its per-call overhead: the fits call this once per filter run.
        sd = params["sd"]
        z = (y[seen] - self.mean(V[seen], params)) / sd
        return -(z**2) / 2.0 - _LOG_SQRT_2PI - np.log(sd)

    def simulate(self, V, params, rng=None) -> np.ndarray:
        """Draw responses given ``V``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        params : dict
            Response parameters by name.
        rng : int or numpy.random.Generator, optional
            Random seed or generator.

        Returns
        -------
        numpy.ndarray (trial,)
            Simulated responses (float).
        """
        V = as_float_array(V, "V", ndim=1)
        return self.mean(V, params) + params["sd"] * as_rng(rng).standard_normal(V.shape)


class BinaryChoice:
    """Binary CR: ``P(CR = 1) = link(bias + slope (V - 0.5))``.

    Parameters
    ----------
    link : {"logistic", "probit"}
    """

    name = "binary"
    param_names = ("bias", "slope")

    def __init__(self, *, link: str = "logistic"):
        self.link = check_choice(link, "link", ["logistic", "probit"])
        self.name = link

    def check_responses(self, responses):
        """Validate responses for this model (0 or 1).

        Parameters
        ----------
        responses : array_like (trial,)
            The responses, NaN where missing.

        Returns
        -------
        array_like or numpy.ndarray
            The responses (as a float array where they were checked).

        Raises
        ------
        ValueError
            When a response is not 0 or 1.
        """
        y = as_float_array(responses, "responses", ndim=1, allow_nan=True)
        seen = y[~np.isnan(y)]
        if not np.isin(seen, (0, 1)).all():
            raise ValueError(
                f"A {self.link} response model needs binary responses (0/1, NaN missing), got "
                f"values such as {np.unique(seen[~np.isin(seen, (0, 1))])[:3].tolist()}. "
                "Use LinearGaussian or OrdinalRating for graded responses."
            )
        return y

    def _log_p(self, eta):
        if self.link == "logistic":
            return log_expit(eta), log_expit(-eta)
        return stats.norm.logcdf(eta), stats.norm.logcdf(-eta)

    def pointwise(self, V, responses, params) -> np.ndarray:
        """Log likelihood of each observed response at ``params``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        responses : array_like (trial,)
            The responses, NaN where missing (skipped).
        params : dict
            Response parameters by name (see :attr:`param_names`).

        Returns
        -------
        numpy.ndarray (n_observed,)
            One log likelihood per non-missing response.
        """
        V, y, seen = _check(V, self.check_responses(responses))
        eta = params["bias"] + params["slope"] * (V[seen] - 0.5)
        log_p1, log_p0 = self._log_p(eta)
        return np.where(y[seen] == 1, log_p1, log_p0)

    def fit(self, V, responses) -> ResponseFit:
        """Best response parameters given ``V`` (the profile the per-subject fits optimise).

        Parameters
        ----------
        V : array_like (trial,)
            The latent-cause model's US expectation on each trial.
        responses : array_like (trial,)
            The responses, NaN where missing (skipped).

        Returns
        -------
        ResponseFit
            Parameters, maximised log likelihood and pointwise log likelihoods.
        """
        V, y, seen = _check(V, self.check_responses(responses))
        x, yo = V[seen] - 0.5, y[seen]

        def neg(theta):
            log_p1, log_p0 = self._log_p(theta[0] + theta[1] * x)
            ll = np.where(yo == 1, log_p1, log_p0).sum()
            return -(ll - 0.5 * np.sum(theta**2) / PRIOR_SD**2)

        theta = optimize.minimize(neg, np.zeros(2), method="BFGS").x
        params = {"bias": float(theta[0]), "slope": float(theta[1])}
        pw = self.pointwise(V, y, params)
        return ResponseFit(params, float(pw.sum()), pw, int(seen.sum()), 2)

    def simulate(self, V, params, rng=None) -> np.ndarray:
        """Draw responses given ``V``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        params : dict
            Response parameters by name.
        rng : int or numpy.random.Generator, optional
            Random seed or generator.

        Returns
        -------
        numpy.ndarray (trial,)
            Simulated responses (float).
        """
        V = as_float_array(V, "V", ndim=1)
        eta = params["bias"] + params["slope"] * (V - 0.5)
        p = expit(eta) if self.link == "logistic" else stats.norm.cdf(eta)
        return (as_rng(rng).random(V.shape) < p).astype(float)


class OrdinalRating:
    """Rating on ``n_levels`` ordered levels ``0..n_levels-1`` (cumulative logit).

    ``P(CR <= k) = sigmoid(cut_k - slope V)`` with increasing cut points, parametrised by
    the first cut point and log increments so the optimiser is unconstrained.

    Parameters
    ----------
    n_levels : int
        Number of scale points (at least 2).
    """

    name = "ordinal"

    def __init__(self, n_levels: int):
        self.n_levels = check_int(n_levels, "n_levels", minimum=2)

    @property
    def param_names(self):
        """Names of the response parameters, in the order of ``fit``'s ``params``.

        Returns
        -------
        tuple of str
            The parameter names.
        """
        return ("slope", *(f"cut_{k}" for k in range(self.n_levels - 1)))

    def check_responses(self, responses):
        """Validate responses for this model (an integer level 0..n_levels-1).

        Parameters
        ----------
        responses : array_like (trial,)
            The responses, NaN where missing.

        Returns
        -------
        array_like or numpy.ndarray
            The responses (as a float array where they were checked).

        Raises
        ------
        ValueError
            When a response is not an integer level 0..n_levels-1.
        """
        y = as_float_array(responses, "responses", ndim=1, allow_nan=True)
        seen = y[~np.isnan(y)]
        ok = (seen == np.round(seen)) & (seen >= 0) & (seen < self.n_levels)
        if not ok.all():
            raise ValueError(
                f"An ordinal response model with n_levels={self.n_levels} needs integer "
                f"ratings 0..{self.n_levels - 1} (NaN missing), got values such as "
                f"{np.unique(seen[~ok])[:3].tolist()}. Recode the scale to start at 0."
            )
        return y

    def _cuts(self, theta):
        return theta[1] + np.concatenate([[0.0], np.cumsum(np.exp(theta[2:]))])

    def _pointwise_theta(self, theta, V, y):
        cuts = np.concatenate([[-np.inf], self._cuts(theta), [np.inf]])
        eta = theta[0] * V
        k = y.astype(np.int64)
        upper = cuts[k + 1] - eta
        lower = cuts[k] - eta
        # log(sigmoid(upper) - sigmoid(lower)) computed stably.
        log_up = log_expit(upper)
        with np.errstate(divide="ignore"):
            diff = -np.expm1(log_expit(lower) - log_up)
        return log_up + np.log(np.maximum(diff, 1e-300))

    def _theta(self, params):
        cuts = np.array([params[f"cut_{k}"] for k in range(self.n_levels - 1)])
        return np.concatenate([[params["slope"], cuts[0]], np.log(np.diff(cuts))])

    def pointwise(self, V, responses, params) -> np.ndarray:
        """Log likelihood of each observed response at ``params``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        responses : array_like (trial,)
            The responses, NaN where missing (skipped).
        params : dict
            Response parameters by name (see :attr:`param_names`).

        Returns
        -------
        numpy.ndarray (n_observed,)
            One log likelihood per non-missing response.
        """
        V, y, seen = _check(V, self.check_responses(responses))
        return self._pointwise_theta(self._theta(params), V[seen], y[seen])

    def fit(self, V, responses) -> ResponseFit:
        """Best response parameters given ``V`` (the profile the per-subject fits optimise).

        Parameters
        ----------
        V : array_like (trial,)
            The latent-cause model's US expectation on each trial.
        responses : array_like (trial,)
            The responses, NaN where missing (skipped).

        Returns
        -------
        ResponseFit
            Parameters, maximised log likelihood and pointwise log likelihoods.
        """
        V, y, seen = _check(V, self.check_responses(responses))
        Vo, yo = V[seen], y[seen]
        L = self.n_levels

        def neg(theta):
            ll = self._pointwise_theta(theta, Vo, yo).sum()
            return -(ll - 0.5 * (theta[0] ** 2 + theta[1] ** 2) / PRIOR_SD**2)

        start = np.concatenate([[0.0, -1.0], np.full(L - 2, np.log(2.0 / max(L - 2, 1)))])
        theta = optimize.minimize(neg, start, method="BFGS").x
        params = {"slope": float(theta[0])}
        params.update({f"cut_{k}": float(c) for k, c in enumerate(self._cuts(theta))})
        pw = self.pointwise(V, y, params)
        return ResponseFit(params, float(pw.sum()), pw, int(seen.sum()), L)

    def simulate(self, V, params, rng=None) -> np.ndarray:
        """Draw responses given ``V``.

        Parameters
        ----------
        V : array_like (trial,)
            US expectation on each trial.
        params : dict
            Response parameters by name.
        rng : int or numpy.random.Generator, optional
            Random seed or generator.

        Returns
        -------
        numpy.ndarray (trial,)
            Simulated responses (float).
        """
        V = as_float_array(V, "V", ndim=1)
        cuts = np.array([params[f"cut_{k}"] for k in range(self.n_levels - 1)])
        cdf = expit(cuts[None, :] - params["slope"] * V[:, None])
        u = as_rng(rng).random(V.shape)
        return (u[:, None] > cdf).sum(axis=1).astype(float)


#: Names accepted by :func:`get_response_model`.
RESPONSE_MODELS = ("linear_gaussian", "logistic", "probit", "ordinal")


def get_response_model(response, **options):
    """A response model from its name (or the model itself, returned unchanged).

    Parameters
    ----------
    response : str or response model
        One of :data:`RESPONSE_MODELS`, or a model instance.
    **options
        Constructor options (``intercept`` for ``linear_gaussian``, ``n_levels`` for
        ``ordinal``).

    Returns
    -------
    LinearGaussian, BinaryChoice or OrdinalRating
        The response model.

    Examples
    --------
    >>> get_response_model("probit").link
    'probit'
    >>> get_response_model("ordinal", n_levels=5).param_names[:2]
    ('slope', 'cut_0')
    """
    if isinstance(response, LinearGaussian | BinaryChoice | OrdinalRating):
        return response
    check_choice(response, "response model", RESPONSE_MODELS)
    if response == "linear_gaussian":
        return LinearGaussian(**options)
    if response in ("logistic", "probit"):
        return BinaryChoice(link=response, **options)
    if "n_levels" not in options:
        raise ValueError("The ordinal response model needs n_levels (the number of scale points).")
    return OrdinalRating(**options)

"""``gum(...)``: declare a GUM from a formula or terms and data; fit it by NUTS, Laplace, ADVI.

Examples
--------
>>> import numpy as np
>>> from pmctx.gum import gum
>>> rng = np.random.default_rng(0)
>>> data = {"x": rng.uniform(0, 2, 40)}
>>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
>>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
>>> sorted(g.model.named_vars)[:3]
['f_x', 'f_x_z', 'intercept']
>>> g.laplace(draws=10).posterior["f_x"].dims
('chain', 'draw', 'f_x_x')
"""

from __future__ import annotations

from collections.abc import Mapping

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm

from pmctx.gum.build import build_pymc_model, function_dim
from pmctx.gum.constraints import resolve_constraints
from pmctx.gum.design import build_design, offset_name
from pmctx.gum.families import FAMILIES, loglik
from pmctx.gum.formula import parse_formula
from pmctx.gum.laplace import LaplaceResult, laplace_fit
from pmctx.gum.terms import Categorical, Term, normalize
from pmctx.io import add_log_likelihood, to_inference_data
from pmctx.validation import (
    as_binary_array,
    as_count_array,
    as_float_array,
    check_choice,
    check_int,
    check_positive,
)

__all__ = ["GumModel", "gum"]


def _columns(data) -> dict:
    if isinstance(data, pd.DataFrame):
        return {str(c): data[c].to_numpy() for c in data.columns}
    if isinstance(data, Mapping):
        return {str(k): np.asarray(v) for k, v in data.items()}
    raise TypeError(
        f"data must be a pandas DataFrame or a dict of arrays, got {type(data).__name__}."
    )


def _response(family: str, values, name: str) -> np.ndarray:
    if family == "bernoulli":
        return as_binary_array(values, name, ndim=1).astype(float)
    if family == "poisson":
        return as_count_array(values, name, ndim=1).astype(float)
    return as_float_array(values, name, ndim=1)


def _regressor(values: np.ndarray, name: str, n: int, categorical: bool):
    labels = None
    if values.dtype.kind in "OUSb" and categorical:
        labels, values = np.unique(values.astype(str), return_inverse=True)
    arr = as_float_array(values, f"data[{name!r}]", allow_nan=np.ndim(values) == 2)
    if arr.ndim not in (1, 2) or arr.shape[0] != n:
        raise ValueError(
            f"data[{name!r}] must have shape ({n},) or ({n}, positions) to match the response, "
            f"got shape {arr.shape}."
        )
    if arr.ndim == 2 and np.isnan(arr).all(axis=1).any():
        raise ValueError(f"data[{name!r}] has rows where every position is NaN (missing).")
    return (arr[:, None] if arr.ndim == 1 else arr), labels


class GumModel:
    """A declared GUM: its structure, numeric design and ``pm.Model``.

    Build it with :func:`gum`. ``model`` is the ``pm.Model`` (any PyMC sampler runs on it);
    :meth:`sample` (NUTS), :meth:`laplace` and :meth:`advi` return ``InferenceData`` with a
    ``log_likelihood`` group; :meth:`function_summary` gives a function's posterior on its
    grid with a credible band.
    """

    def __init__(self, design, blocks, constraints, labels, lengthscale_prior_sigma=None):
        self.lengthscale_prior_sigma = lengthscale_prior_sigma
        self.design = design
        self.blocks = blocks
        self.constraints = constraints
        self.labels = labels
        self._model = None
        self.laplace_result: LaplaceResult | None = None

    @property
    def model(self) -> pm.Model:
        """The ``pm.Model`` (built on first use, rebuilt after hyperparameter changes)."""
        if self._model is None:
            self._model = build_pymc_model(
                self.design, lengthscale_prior_sigma=self.lengthscale_prior_sigma
            )
        return self._model

    @property
    def function_names(self) -> list[str]:
        return list(self.design.functions)

    def hyperparameters(self) -> dict:
        """Current hyperparameters per function (plus ``noise_sd`` for Gaussian data)."""
        out = {name: dict(fn.hyper) for name, fn in self.design.functions.items()}
        if self.design.family == "gaussian":
            out["noise_sd"] = self.design.noise_sd
        return out

    def set_hyperparameters(self, values: dict) -> None:
        """Set hyperparameters, e.g. ``{"f_x": {"lengthscale": 0.3}, "noise_sd": 0.5}``."""
        for name, settings in values.items():
            if name == "noise_sd":
                self.design.noise_sd = check_positive(settings, "noise_sd")
                continue
            if name not in self.design.functions:
                raise ValueError(f"Unknown function {name!r}; have {self.function_names}.")
            fn = self.design.functions[name]
            for key, value in settings.items():
                if key not in fn.hyper:
                    raise ValueError(
                        f"{name!r} has hyperparameters {sorted(fn.hyper)}, not {key!r}."
                    )
                fn.hyper[key] = check_positive(value, f"{name}.{key}")
            fn.refresh()
        self._model = None
        self.laplace_result = None
        self.design.layout()

    # ---------------------------------------------------------------- inference
    def map_point(self, u: np.ndarray | None = None) -> dict:
        """Initial-value dict of the PyMC model at free vector ``u`` (default: Laplace MAP)."""
        d = self.design
        if u is None:
            u = (self.laplace_result or self.fit_laplace()).u_map
        point = {f"{name}_z": u[d.slices[name]] for name, fn in d.functions.items() if fn.n_free}
        for key, value in d.slices.items():
            if key not in d.functions:
                point[f"{key}_z"] = u[value][0]
        return point

    def sample(
        self, *, draws=500, tune=500, chains=2, seed=0, init_at_map=True, **kwargs
    ) -> az.InferenceData:
        """NUTS via ``pm.sample`` with a ``log_likelihood`` group.

        Products of functions have secondary modes (see :func:`pmctx.gum.laplace.laplace_fit`);
        with ``init_at_map`` (default) every chain starts at the multi-start Laplace MAP.
        """
        kwargs.setdefault("progressbar", False)
        kwargs.setdefault("target_accept", 0.9)
        if init_at_map and not (self.design.family == "gaussian" and self.design.noise_sd is None):
            kwargs.setdefault("initvals", self.map_point())
            kwargs.setdefault("init", "adapt_diag")
        with self.model:
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                random_seed=seed,
                idata_kwargs={"log_likelihood": True},
                **kwargs,
            )
        return idata

    def advi(
        self,
        *,
        n=20000,
        method="advi",
        draws=500,
        seed=0,
        minibatch_size=None,
        start_at_map=True,
        log_likelihood=True,
        **kwargs,
    ) -> az.InferenceData:
        """Mean-field (``"advi"``) or full-rank (``"fullrank_advi"``) ADVI via ``pm.fit``.

        Parameters
        ----------
        n : int
            Optimisation steps.
        minibatch_size : int, optional
            Stochastic ADVI on minibatches of this many observations (the scalable option for
            large N; the likelihood is rescaled by ``total_size``).
        start_at_map : bool, default True
            Start at the Laplace MAP with the Laplace sds (mean-field). Weak-prior terms have
            tiny posterior scales in the non-centred coordinates, where a cold start diverges.
        log_likelihood : bool, default True
            Add the pointwise ``log_likelihood`` group (size draws x N).
        """
        check_choice(method, "method", ("advi", "fullrank_advi"))
        kwargs.setdefault("progressbar", False)
        gaussian_free_noise = self.design.family == "gaussian" and self.design.noise_sd is None
        if start_at_map and not gaussian_free_noise:
            result = self.laplace_result or self.fit_laplace()
            kwargs.setdefault("start", self.map_point(result.u_map))
            if method == "advi":
                sd = self.map_point(np.sqrt(np.diag(result.cov)))
                kwargs.setdefault("start_sigma", {k: np.asarray(v) for k, v in sd.items()})
        kwargs.setdefault("obj_optimizer", pm.adam(learning_rate=0.01))
        model = self.model
        if minibatch_size is not None:
            model = build_pymc_model(
                self.design,
                lengthscale_prior_sigma=self.lengthscale_prior_sigma,
                minibatch_size=check_int(minibatch_size, "minibatch_size", minimum=1),
            )
        with model:
            approx = pm.fit(n=n, method=method, random_seed=seed, **kwargs)
            idata = approx.sample(draws, random_seed=seed, return_inferencedata=True)
        for group in ("observed_data", "log_likelihood"):
            if minibatch_size is not None and group in idata.groups():
                del idata[group]
        if log_likelihood:
            add_log_likelihood(idata, self.model)
        return idata

    def fit_laplace(self, **kwargs) -> LaplaceResult:
        """Newton MAP + Hessian at the current hyperparameters (see :mod:`pmctx.gum.laplace`)."""
        if self.design.family == "gaussian" and self.design.noise_sd is None:
            raise ValueError(
                "Laplace needs a fixed noise_sd for Gaussian data: pass noise_sd=... to gum() "
                "or fit it with pmctx.gum.hyper.fit_evidence(...)."
            )
        self.laplace_result = laplace_fit(self.design, **kwargs)
        return self.laplace_result

    def laplace(self, *, draws=1000, seed=0, log_likelihood=True, result=None) -> az.InferenceData:
        """Laplace posterior as InferenceData (Gaussian draws; one chain).

        ``attrs["log_evidence"]`` holds the Laplace log marginal likelihood.
        """
        result = result or self.fit_laplace()
        u = result.draws(draws, np.random.default_rng(seed))
        return self.to_idata(u, result=result, log_likelihood=log_likelihood)

    def to_idata(self, u: np.ndarray, *, result=None, log_likelihood=True) -> az.InferenceData:
        """InferenceData of free-vector draws ``u`` (draws x D), named like the PyMC model."""
        d = self.design
        posterior, dims, coords = {}, {}, {"obs": np.arange(d.n_obs)}
        thetas, scalars = d.thetas(u), d.scalars(u)
        for name, fn in d.functions.items():
            if fn.n_free:
                posterior[f"{name}_z"] = u[None, :, d.slices[name]]
                dims[f"{name}_z"] = [f"{name}_free"]
            fdims = function_dim(d, name)
            posterior[name] = thetas[name][None] if fdims else thetas[name][None, :, 0]
            dims[name] = fdims
            for dim in fdims:
                coords[dim] = fn.support
        for key in sorted(d.offsets):
            label = offset_name(key)
            if d.offsets[key] == "free":
                posterior[f"{label}_z"] = u[None, :, d.slices[label].start]
                posterior[label] = scalars[label][None]
        if d.intercept:
            posterior["intercept_z"] = u[None, :, d.slices["intercept"].start]
            posterior["intercept"] = scalars["intercept"][None]
        groups = {}
        if log_likelihood:
            ll = np.stack([self.pointwise_loglik(row) for row in u])
            groups["log_likelihood"] = {d.response: ll[None]}
            dims[d.response] = ["obs"]
        attrs = {"inference": "laplace"}
        if result is not None:
            attrs.update(log_evidence=result.log_evidence, converged=int(result.converged))
        return to_inference_data(
            posterior,
            observed_data={d.response: d.y},
            coords=coords,
            dims=dims,
            attrs=attrs,
            **groups,
        )

    def pointwise_loglik(self, u: np.ndarray) -> np.ndarray:
        """Log-likelihood of every observation at free vector ``u``."""
        rho = self.design.predictor(u)
        noise = 1.0 if self.design.noise_sd is None else self.design.noise_sd
        return loglik(self.design.family, self.design.link, self.design.y, rho, noise_sd=noise)[0]

    def function_summary(self, idata: az.InferenceData, name: str, *, hdi_prob=0.94):
        """Posterior mean, sd and equal-tailed band of function ``name`` on its grid.

        Returns
        -------
        pandas.DataFrame with columns ``x``, ``mean``, ``sd``, ``lower``, ``upper``.
        """
        if name not in self.design.functions:
            raise ValueError(f"Unknown function {name!r}; have {self.function_names}.")
        values = idata.posterior[name].values
        values = values.reshape(-1, *values.shape[2:])
        if values.ndim == 1:
            values = values[:, None]
        tail = (1.0 - hdi_prob) / 2.0
        x = self.design.functions[name].support
        if name in self.labels:
            x = self.labels[name]
        return pd.DataFrame(
            {
                "x": x,
                "mean": values.mean(axis=0),
                "sd": values.std(axis=0),
                "lower": np.quantile(values, tail, axis=0),
                "upper": np.quantile(values, 1 - tail, axis=0),
            }
        )


def gum(
    formula_or_terms,
    data,
    *,
    response: str | None = None,
    family: str = "gaussian",
    link: str | None = None,
    intercept: bool | None = None,
    intercept_sd: float = 10.0,
    offset_sd: float = 10.0,
    noise_sd: float | None = None,
    lengthscale_prior_sigma: float | None = None,
) -> GumModel:
    """Declare a GUM.

    Parameters
    ----------
    formula_or_terms : str or Term
        A formula ``"y ~ f(x1) * f(x2, kernel='periodic', period=pi) + f(x3)"`` (see
        :mod:`pmctx.gum.formula`) or a term expression such as
        ``GP("x1") * GP("x2", kernel="periodic", period=np.pi) + GP("x3")`` (then pass
        ``response``).
    data : pandas.DataFrame or dict of arrays
        Named columns. 2-D regressors (trials x positions, NaN where absent) make their
        product block a sum over positions.
    response : str, optional
        Response column when terms are given.
    family : {"gaussian", "bernoulli", "poisson"}
    link : str, optional
        ``logit`` (default) or ``probit`` for Bernoulli; ``log`` for Poisson; ``identity``.
    intercept : bool, optional
        Overrides the formula's intercept (default: present).
    intercept_sd, offset_sd : float
        Prior standard deviations of the intercept ``c0`` and of free offsets ``c_ij``.
    noise_sd : float, optional
        Gaussian noise sd; None samples it (NUTS) or leaves it to hyperparameter fitting.
    lengthscale_prior_sigma : float, optional
        Sample GP lengthscales under NUTS/ADVI with priors
        ``LogNormal(log(declared), lengthscale_prior_sigma)``; Laplace keeps them fixed (fit
        them with :mod:`pmctx.gum.hyper` instead). Default: fixed lengthscales.

    Returns
    -------
    GumModel
    """
    check_choice(family, "family", tuple(FAMILIES))
    default_link, links = FAMILIES[family]
    link = default_link if link is None else link
    check_choice(link, "link", links)
    if isinstance(formula_or_terms, str):
        name, term, formula_intercept = parse_formula(formula_or_terms)
        if response is not None and response != name:
            raise ValueError(f"response={response!r} disagrees with the formula's {name!r}.")
        response = name
    elif isinstance(formula_or_terms, Term):
        if response is None:
            raise ValueError("Pass response='column' when giving terms instead of a formula.")
        term, formula_intercept = formula_or_terms, True
    else:
        raise TypeError(
            f"formula_or_terms must be a formula string or a Term, got "
            f"{type(formula_or_terms).__name__}."
        )
    intercept = formula_intercept if intercept is None else bool(intercept)
    intercept_sd = check_positive(intercept_sd, "intercept_sd")
    offset_sd = check_positive(offset_sd, "offset_sd")
    if noise_sd is not None:
        noise_sd = check_positive(noise_sd, "noise_sd")
    columns = _columns(data)
    blocks = normalize(term)
    needed = [response] + [leaf.column for b in blocks for f in b for leaf in f]
    missing = sorted({c for c in needed if c not in columns})
    if missing:
        raise ValueError(
            f"Unknown column(s) {missing} in the GUM; the data has columns "
            f"{sorted(columns)}. Fix the formula or rename the data columns."
        )
    y = _response(family, columns[response], f"data[{response!r}]")
    categorical = {
        leaf.column for b in blocks for f in b for leaf in f if isinstance(leaf, Categorical)
    }
    prepared, labels = {}, {}
    for column in {leaf.column for b in blocks for f in b for leaf in f}:
        prepared[column], lab = _regressor(columns[column], column, len(y), column in categorical)
        if lab is not None:
            for b in blocks:
                for f in b:
                    labels.update({leaf.name: lab for leaf in f if leaf.column == column})
    constraints, offsets = resolve_constraints(blocks, intercept)
    design = build_design(
        blocks,
        prepared,
        y,
        response=response,
        family=family,
        link=link,
        constraints=constraints,
        offsets=offsets,
        intercept=intercept,
        intercept_sd=intercept_sd,
        offset_sd=offset_sd,
        noise_sd=noise_sd,
    )
    if lengthscale_prior_sigma is not None:
        lengthscale_prior_sigma = check_positive(lengthscale_prior_sigma, "lengthscale_prior_sigma")
    return GumModel(design, blocks, constraints, labels, lengthscale_prior_sigma)

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
import xarray as xr

from pmctx.gum.build import build_pymc_model, function_coords, function_dim
from pmctx.gum.constraints import resolve_constraints
from pmctx.gum.derived import derive_column
from pmctx.gum.design import build_design, offset_name
from pmctx.gum.families import DISPERSION, FAMILIES
from pmctx.gum.formula import parse_formula
from pmctx.gum.hsgp import HSGP_MIN_OBS, HSGP_TOL, choose_n_basis, hsgp_factor, uses_hsgp
from pmctx.gum.init import laplace_start
from pmctx.gum.laplace import LaplaceResult, laplace_fit
from pmctx.gum.many import GumCollection, split_rows
from pmctx.gum.predict import (
    KINDS,
    as_dataarray,
    function_draws,
    mean_response,
    predict_draws,
    response_draws,
)
from pmctx.gum.terms import Categorical, Term, normalize
from pmctx.io import add_log_likelihood, to_inference_data
from pmctx.sampling import SAMPLE_DEFAULTS
from pmctx.validation import (
    as_binary_array,
    as_count_array,
    as_float_array,
    check_choice,
    check_int,
    check_nonempty,
    check_positive,
)

#: ``approximation`` of :func:`gum`: HSGP for NUTS/ADVI from ``HSGP_MIN_OBS`` rows ("auto").
APPROXIMATIONS = ("auto", "exact", "hsgp")

__all__ = ["APPROXIMATIONS", "GumModel", "gum"]


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
    if family in ("poisson", "negative_binomial"):
        return as_count_array(values, name, ndim=1).astype(float)
    return as_float_array(values, name, ndim=1)


def _regressor(values: np.ndarray, name: str, n: int, categorical: bool, allow_empty=False):
    labels = None
    if values.dtype.kind in "OUSb" and categorical:
        # '' marks an absent position of a 2-D categorical (e.g. a nested w(p|g) column)
        text = values.astype(str)
        present = text != ""
        labels, codes = np.unique(text[present], return_inverse=True)
        values = np.full(text.shape, np.nan)
        values[present] = codes
    arr = as_float_array(values, f"data[{name!r}]", allow_nan=np.ndim(values) == 2)
    if arr.ndim not in (1, 2) or arr.shape[0] != n:
        raise ValueError(
            f"data[{name!r}] must have shape ({n},) or ({n}, positions) to match the response, "
            f"got shape {arr.shape}."
        )
    if arr.ndim == 2 and not allow_empty and np.isnan(arr).all(axis=1).any():
        raise ValueError(f"data[{name!r}] has rows where every position is NaN (missing).")
    return (arr[:, None] if arr.ndim == 1 else arr), labels


def _split_fits(formula: str, data, *, weights=None, **kwargs):
    """``y|g ~ rhs``: one GUM per level of ``g`` (see :mod:`pmctx.gum.many`)."""
    lhs, rhs = formula.split("~", 1)
    response, _, by = (part.strip() for part in lhs.partition("|"))
    columns = _columns(data)
    if response in columns:
        check_nonempty(columns[response], f"data[{response!r}]", unit="observation")
    if weights is not None:
        columns["__weights__"] = as_float_array(weights, "weights", ndim=1)
    models = {}
    for level, rows in split_rows(columns, by).items():
        level_weights = rows.pop("__weights__", None)
        models[level] = gum(f"{response} ~ {rhs}", rows, weights=level_weights, **kwargs)
    return GumCollection(models, by)


def _leaf_columns(leaf) -> list[str]:
    """Data columns a leaf reads: its regressor, and the group of a grouped GP ``f(x|g)``."""
    group = getattr(leaf, "group", None)
    return [leaf.column] if group is None else [leaf.column, group]


def _add_derived(blocks, columns: dict) -> None:
    """Build the columns of interaction and lag terms (in place)."""
    for block in blocks:
        for factor in block:
            for leaf in factor:
                if leaf.derive is not None:
                    columns[leaf.column] = derive_column(leaf.derive, columns)


class GumModel:
    """A declared GUM: its structure, numeric design and ``pm.Model``.

    Build it with :func:`gum`. ``model`` is the ``pm.Model`` (any PyMC sampler runs on it);
    :meth:`sample` (NUTS), :meth:`laplace` and :meth:`advi` return ``InferenceData`` with a
    ``log_likelihood`` group; :meth:`function_summary` gives a function's posterior on its
    grid with a credible band.

    Parameters
    ----------
    design : pmctx.gum.design.Design
        The numeric design (bases, slices of the free vector, likelihood).
    blocks : list
        The product blocks of the expanded formula (lists of factors of leaf terms).
    constraints : dict
        Identifiability constraints per function (see :mod:`pmctx.gum.constraints`).
    labels : dict
        Category labels of categorical terms, by function name.
    lengthscale_prior_sigma : float, optional
        Log-normal prior sd of sampled GP lengthscales (None: fixed lengthscales).
    columns : dict, optional
        The training regressor columns (for the posterior predictive).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

    >>> type(g).__name__, g.function_names
    ('GumModel', ['f_x'])
    """

    def __init__(
        self, design, blocks, constraints, labels, lengthscale_prior_sigma=None, columns=None
    ):
        self.lengthscale_prior_sigma = lengthscale_prior_sigma
        self._training_columns = columns
        self.design = design
        self.blocks = blocks
        self.constraints = constraints
        self.labels = labels
        self._model = None
        self.laplace_result: LaplaceResult | None = None
        self.approximation = "auto"
        self._hsgp_search: dict = {}  # basis-size searches, by function and hyperparameters
        self._white = None  # (model, laplace result, whitened model)
        self._nutpie: dict = {}  # compiled nutpie models: kind -> (model, laplace, compiled)

    @property
    def hsgp_sizes(self) -> dict:
        """``{function: (basis size, boundary factor c)}`` of the GP terms that ``model``
        (NUTS, ADVI) samples through HSGP: with ``approximation="hsgp"``, or ``"auto"`` when
        lengthscales are sampled (``lengthscale_prior_sigma``) and the data have
        :data:`pmctx.gum.hsgp.HSGP_MIN_OBS` rows or more (with fixed lengthscales HSGP gave no
        speed-up at N=1,000-10,000); only terms whose basis within
        :data:`~pmctx.gum.hsgp.HSGP_TOL` is smaller than their grid (:mod:`pmctx.gum.hsgp`).

        Returns
        -------
        dict
            Empty when every term keeps its exact prior.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> gum("y ~ f(x)", data, family="poisson").hsgp_sizes
        {}
        """
        check_choice(self.approximation, "approximation", APPROXIMATIONS)
        if self.approximation == "exact" or (
            self.approximation == "auto"
            and (self.lengthscale_prior_sigma is None or self.design.n_obs < HSGP_MIN_OBS)
        ):
            return {}
        sizes = {}
        for name, fn in self.design.functions.items():
            if not (uses_hsgp(fn) and fn.n_free):
                continue
            key = (
                name,
                fn.leaf.kernel,
                fn.support.size,
                fn.n_free,
                tuple(sorted(fn.hyper.items())),
            )
            if key not in self._hsgp_search:  # searched once per function and hyperparameters
                self._hsgp_search[key] = choose_n_basis(fn)
            if self._hsgp_search[key] is not None:
                sizes[name] = self._hsgp_search[key]
        return sizes

    @property
    def model(self) -> pm.Model:
        """The ``pm.Model`` (built on first use, rebuilt after hyperparameter changes).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> sorted(v.name for v in g.model.free_RVs)
        ['f_x_z', 'intercept_z']
        """
        if self._model is None:
            self._hsgp = self.hsgp_sizes
            self._model = build_pymc_model(
                self.design,
                lengthscale_prior_sigma=self.lengthscale_prior_sigma,
                start=laplace_start(self),  # plain pm.sample() starts at the Laplace mode
                hsgp=self._hsgp,
            )
        return self._model

    @property
    def whitened_model(self) -> pm.Model | None:
        """``model`` in Laplace-whitened coordinates (:mod:`pmctx.gum.whiten`), built once per
        model and Laplace fit; None when a free variable is outside the Laplace vector.

        Returns
        -------
        pymc.Model or None
            Free variable ``gum_white_z``; the plain model's variables as Deterministics.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> [v.name for v in g.whitened_model.free_RVs]
        ['gum_white_z']
        """
        from pmctx.gum.whiten import whitened_model

        model = self.model
        result = self.laplace_result or self.fit_laplace()
        if self._white is None or self._white[0] is not model or self._white[1] is not result:
            self._white = (model, result, whitened_model(self))
        return self._white[2]

    def _nutpie_model(self, whiten: bool, init_at_map: bool):
        """``(model, compiled nutpie model, whitened?)``, compiled once per model, Laplace fit
        and kind (repeat :meth:`sample` calls skip nutpie's compile)."""
        from pmctx.gum.backends import compile_nutpie

        start = init_at_map and not self._free_dispersion()
        white = self.whitened_model if whiten and start else None
        kind = "white" if white is not None else ("map" if start else "plain")
        model, result = self.model, self.laplace_result
        cached = self._nutpie.get(kind)
        if cached is None or cached[0] is not model or cached[1] is not result:
            target = white if white is not None else model
            point = self.map_point() if kind == "map" else None
            compiled = compile_nutpie(target, point, cached=kind == "white")
            cached = (model, result, compiled, target)
            self._nutpie[kind] = cached
        return cached[3], cached[2], kind == "white"

    def _model_coordinates(self, u: np.ndarray, cov: np.ndarray | None = None):
        """Laplace vector ``u`` (and covariance) in the ``model``'s coordinates: identity except
        for HSGP terms, whose ``z`` is the ridge (posterior-mean) match ``A Q u`` of the same
        function values, with the conditional covariance ``I - A Q_hsgp`` added."""
        d = self.design
        self.model  # noqa: B018 -- fixes which terms are HSGP
        blocks, nulls, slots = [], [], {}
        start = 0
        for key, slot in d.slices.items():
            if key in self._hsgp:
                fn = d.functions[key]
                n_basis, c = self._hsgp[key]
                Q_h = hsgp_factor(fn, n_basis, c=c)
                # z | theta of a regression with noise HSGP_TOL * variance (the approximation's
                # own error): ridge mean, covariance lam (Q_h^T Q_h + lam I)^-1 = I - A Q_h
                lam = HSGP_TOL * fn.hyper["variance"]
                A = np.linalg.solve(Q_h.T @ Q_h + lam * np.eye(Q_h.shape[1]), Q_h.T)
                blocks.append(A @ fn.Q)
                nulls.append(np.eye(Q_h.shape[1]) - A @ Q_h)
            else:
                width = slot.stop - slot.start
                blocks.append(np.eye(width))
                nulls.append(np.zeros((width, width)))
            slots[key] = slice(start, start + blocks[-1].shape[0])
            start += blocks[-1].shape[0]
        from scipy.linalg import block_diag

        T = block_diag(*blocks)
        mean = T @ u
        cov_model = None if cov is None else T @ cov @ T.T + block_diag(*nulls)
        return mean, cov_model, slots

    def _free_dispersion(self) -> bool:
        return self.design.family in DISPERSION and self.design.noise_sd is None

    @property
    def function_names(self) -> list[str]:
        """Names of the model's functions (``f_x``, ``w_g``, ...), in declaration order.

        Returns
        -------
        list of str
            The keys of ``design.functions``.

        Examples
        --------

        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> g.function_names
        ['f_x']
        """
        return list(self.design.functions)

    def hyperparameters(self) -> dict:
        """Current hyperparameters per function (plus ``noise_sd`` for Gaussian data).

        Returns
        -------
        dict
            ``{function name: {hyperparameter: value}}``, plus the dispersion (``noise_sd`` or
            ``alpha``) of families that have one.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> g.hyperparameters()
        {'f_x': {'lengthscale': 0.5, 'variance': 1.0}}
        """
        out = {name: dict(fn.hyper) for name, fn in self.design.functions.items()}
        if self.design.family in DISPERSION:
            out[DISPERSION[self.design.family]] = self.design.noise_sd
        return out

    def set_hyperparameters(self, values: dict) -> None:
        """Set hyperparameters, e.g. ``{"f_x": {"lengthscale": 0.3}, "noise_sd": 0.5}``.

        Parameters
        ----------
        values : dict
            ``{function name: {hyperparameter: value}}`` and, for families with a dispersion,
            ``"noise_sd"`` or ``"alpha"``: value. Values must be positive.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> g.set_hyperparameters({"f_x": {"lengthscale": 0.3}})
        >>> g.hyperparameters()["f_x"]["lengthscale"]
        0.3
        """
        for name, settings in values.items():
            if name in ("noise_sd", "alpha") and self.design.family in DISPERSION:
                self.design.noise_sd = check_positive(settings, name)
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
        """Initial-value dict of the PyMC model at free vector ``u`` (default: Laplace MAP).

        Parameters
        ----------
        u : numpy.ndarray, optional
            A free vector (length ``design.n_free``); default the Laplace MAP (fitted if needed).

        Returns
        -------
        dict
            ``{value variable name: value}`` for the PyMC model's free variables, usable as
            ``initvals``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> sorted(g.map_point())
        ['f_x_z', 'intercept_z']
        """
        d = self.design
        if u is None:
            u = (self.laplace_result or self.fit_laplace()).u_map
        u, _, slices = self._model_coordinates(u)
        point = {f"{name}_z": u[slices[name]] for name, fn in d.functions.items() if fn.n_free}
        for key, value in slices.items():
            if key not in d.functions:
                point[f"{key}_z"] = u[value][0]
        return point

    def map_point_raw(self, v: np.ndarray) -> dict:
        """Split a vector already in the ``model``'s coordinates into its ``*_z`` variables.

        Parameters
        ----------
        v : numpy.ndarray
            Concatenated ``*_z`` values in the order of the model's coordinates.

        Returns
        -------
        dict
            ``{"<function>_z": array}``, scalars for one-value variables.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> point = g.map_point_raw(np.zeros(g.design.n_free))
        >>> sorted(point)
        ['f_x_z', 'intercept_z']
        """
        _, _, slices = self._model_coordinates(np.zeros(self.design.n_free))
        point = {f"{key}_z": v[slot] for key, slot in slices.items()}
        return {
            name: value if name.removesuffix("_z") in self.design.functions else value[0]
            for name, value in point.items()
        }

    def sample(
        self,
        *,
        draws: int = SAMPLE_DEFAULTS["draws"],
        tune: int = SAMPLE_DEFAULTS["tune"],
        chains: int = SAMPLE_DEFAULTS["chains"],
        cores: int | None = SAMPLE_DEFAULTS["cores"],
        random_seed=SAMPLE_DEFAULTS["random_seed"],
        progressbar: bool | None = SAMPLE_DEFAULTS["progressbar"],
        idata_kwargs: dict | None = SAMPLE_DEFAULTS["idata_kwargs"],
        seed=None,
        init_at_map=True,
        laplace_metric: bool = True,
        posterior_predictive: bool = True,
        check_convergence: bool = True,
        backend: str = "auto",
        whiten: bool = True,
        **kwargs,
    ) -> az.InferenceData:
        """NUTS via ``pm.sample`` or nutpie, with ``log_likelihood`` and
        ``posterior_predictive`` groups.

        ``backend`` is ``"auto"`` (nutpie with a low-rank mass matrix for long runs when it is
        installed, else ``pm.sample``; the rule and timings are in
        :mod:`pmctx.gum.backends`), ``"pymc"`` or ``"nutpie"``.

        ``draws, tune, chains, cores, random_seed, progressbar, idata_kwargs`` are
        ``pm.sample``'s, with its defaults (``seed`` is a deprecated alias). Products of
        functions have secondary modes and curved posteriors (see
        :func:`pmctx.gum.laplace.laplace_fit`): with ``init_at_map`` (default) every chain
        starts at the multi-start Laplace MAP, and ``target_accept`` defaults to 0.9
        rather than pm.sample's 0.8, which diverges on them. With ``laplace_metric``
        (default) NUTS uses the Laplace posterior covariance as its dense mass matrix (only
        the step size is tuned), i.e. it samples in whitened coordinates: on seed 002 section
        3.1 at N=500 that takes 15 instead of ~127 leapfrog steps per draw
        (``benchmarks/bench_gum.py``). It applies when every free variable is in the Laplace
        vector (not with sampled lengthscales, dispersions or random-effect sds) and no
        ``step`` is given. ``check_convergence`` warns :class:`pmctx.ConvergenceWarning`
        when function values or hyperparameters have not converged.

        Parameters
        ----------
        draws, tune, chains, cores, random_seed, progressbar, idata_kwargs
            As in :func:`pymc.sample` (same defaults); ``idata_kwargs`` always includes
            ``log_likelihood=True``.
        seed : optional
            Deprecated alias of ``random_seed``.
        init_at_map : bool, default True
            Start every chain at the multi-start Laplace MAP.
        laplace_metric : bool, default True
            Use the Laplace covariance as NUTS's dense mass matrix (see above).
        posterior_predictive : bool, default True
            Add the ``posterior_predictive`` group (responses redrawn at the data).
        check_convergence : bool, default True
            Warn when function values or hyperparameters have not converged.
        backend : {"auto", "pymc", "nutpie"}, default "auto"
            The NUTS implementation: ``"auto"`` takes nutpie (low-rank mass matrix) for long
            runs when it is installed and no :func:`pymc.sample`-only argument is given, else
            PyMC (the rule and its timings: :mod:`pmctx.gum.backends`).
        whiten : bool, default True
            nutpie only: sample :attr:`whitened_model` (Laplace mode and Cholesky factor,
            :mod:`pmctx.gum.whiten`) with a diagonal mass matrix when ``init_at_map`` and every
            free variable is in the Laplace vector; otherwise the plain model with nutpie's
            low-rank mass matrix. The compiled model is kept on the GUM, so repeat calls do
            not compile again.
        **kwargs
            Passed to :func:`pymc.sample` (``target_accept``, ``step``, ``initvals``, ...).

        Returns
        -------
        arviz.InferenceData
            ``posterior`` (function values on their grids, offsets, intercept, hyper-
            parameters), ``sample_stats``, ``log_likelihood``, ``posterior_predictive``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> idata = g.sample(draws=200, tune=200, chains=2)  # doctest: +SKIP
        """
        from pmctx.convergence import report_after_fit
        from pmctx.gum.backends import choose_backend, sample_nutpie
        from pmctx.gum.outputs import convergence_check
        from pmctx.sampling import resolve_seed, run_sampler

        nutpie_ok = {"target_accept", "compute_convergence_checks", "init"}
        chosen = choose_backend(
            backend, draws=draws, tune=tune, chains=chains, pymc_only=bool(set(kwargs) - nutpie_ok)
        )
        if chosen == "nutpie":
            from pmctx.gum.whiten import WHITE_DIM, WHITE_NAME

            random_seed = resolve_seed(random_seed, seed)
            target, compiled, white = self._nutpie_model(whiten, init_at_map)
            idata = sample_nutpie(
                target,
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                random_seed=random_seed,
                progressbar=progressbar,
                observed={self.design.response: self.design.y},
                compiled=compiled,
                low_rank=not white,
                loglik_model=self.model,
                log_likelihood=self.log_likelihood_draws,
                drop=(WHITE_NAME, WHITE_DIM),
            )
            if posterior_predictive:
                self.add_posterior_predictive(idata, seed=random_seed)
            report_after_fit(idata, convergence_check(), check=check_convergence)
            return idata
        target_accept = kwargs.pop("target_accept", 0.9)
        if init_at_map and not self._free_dispersion():
            kwargs.setdefault("initvals", self.map_point())
            kwargs.setdefault("init", "adapt_diag")
            if laplace_metric and "step" not in kwargs:
                potential = self._laplace_potential()
                if potential is not None:
                    with self.model:
                        kwargs["step"] = pm.NUTS(potential=potential, target_accept=target_accept)
        if "step" not in kwargs:
            kwargs["target_accept"] = target_accept
        idata = run_sampler(
            self.model,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            progressbar=progressbar,
            idata_kwargs={"log_likelihood": True, **(idata_kwargs or {})},
            seed=seed,
            **kwargs,
        )
        if posterior_predictive:
            self.add_posterior_predictive(idata, seed=seed if random_seed is None else random_seed)
        report_after_fit(idata, convergence_check(), check=check_convergence)
        return idata

    def _laplace_potential(self):
        """Dense NUTS metric from the Laplace covariance, in the model's variable order."""
        from pymc.step_methods.hmc.quadpotential import QuadPotentialFull

        result = self.laplace_result or self.fit_laplace()
        _, cov, slices = self._model_coordinates(result.u_map, result.cov)
        order = []
        for var in self.model.value_vars:
            label = var.name.removesuffix("_z")
            if not var.name.endswith("_z") or label not in slices:
                return None  # a variable outside the Laplace vector (sampled hyperparameter)
            order.extend(range(slices[label].start, slices[label].stop))
        if sorted(order) != list(range(cov.shape[0])):
            return None
        index = np.asarray(order)
        return QuadPotentialFull(cov[np.ix_(index, index)])

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
        method : {"advi", "fullrank_advi"}, default "advi"
            Mean-field or full-rank ADVI.
        draws : int, default 500
            Draws from the fitted approximation.
        seed : int, default 0
            Seed of the optimisation and of the draws.
        **kwargs
            Passed to :func:`pymc.fit` (e.g. ``obj_optimizer``, ``callbacks``).

        Returns
        -------
        arviz.InferenceData
            One chain of ``draws`` draws, with a ``log_likelihood`` group when requested.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> idata = g.advi(n=2000, draws=100)  # doctest: +SKIP
        """
        check_choice(method, "method", ("advi", "fullrank_advi"))
        kwargs.setdefault("progressbar", False)
        gaussian_free_noise = self._free_dispersion()
        if start_at_map and not gaussian_free_noise:
            result = self.laplace_result or self.fit_laplace()
            kwargs.setdefault("start", self.map_point(result.u_map))
            if method == "advi":
                _, cov, _ = self._model_coordinates(result.u_map, result.cov)
                sd = self.map_point_raw(np.sqrt(np.diag(cov)))
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
        """Newton MAP + Hessian at the current hyperparameters (see :mod:`pmctx.gum.laplace`).

        Parameters
        ----------
        **kwargs
            Options of :func:`pmctx.gum.laplace.laplace_fit` (e.g. ``max_iter``, ``n_starts``).

        Returns
        -------
        pmctx.gum.laplace.LaplaceResult
            The mode ``u_map``, its covariance and the Laplace log evidence; also stored as
            ``laplace_result``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> result = g.fit_laplace()
        >>> result.u_map.shape == (g.design.n_free,)
        True
        """
        if self._free_dispersion():
            key = DISPERSION[self.design.family]
            raise ValueError(
                f"Laplace needs a fixed {key} for {self.design.family} data: pass {key}=... to "
                "gum() or fit it with pmctx.gum.hyper.fit_evidence(...)."
            )
        self.laplace_result = laplace_fit(self.design, **kwargs)
        return self.laplace_result

    def laplace(
        self, *, draws=1000, seed=0, log_likelihood=True, posterior_predictive=True, result=None
    ) -> az.InferenceData:
        """Laplace posterior as InferenceData (Gaussian draws; one chain).

        ``attrs["log_evidence"]`` holds the Laplace log marginal likelihood. The Newton fit is
        reused when the model already has one at its current hyperparameters (e.g. after
        :func:`pmctx.gum.hyper.fit_evidence`); pass ``result`` to use another.

        Parameters
        ----------
        draws : int, default 1000
            Independent draws from the Gaussian approximation.
        seed : int, default 0
            Seed of the draws (and of the posterior predictive).
        log_likelihood : bool, default True
            Add the pointwise ``log_likelihood`` group (for :func:`pmctx.compare`).
        posterior_predictive : bool, default True
            Add the ``posterior_predictive`` group (for ``az.plot_ppc``).
        result : LaplaceResult, optional
            A Newton fit to use instead of the model's own.

        Returns
        -------
        arviz.InferenceData
            One chain of ``draws`` draws, with the same variables as :meth:`sample`.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> idata = g.laplace(draws=20)
        >>> idata.posterior["f_x"].shape[:2], "log_evidence" in idata.posterior.attrs
        ((1, 20), True)
        """
        result = result or self.laplace_result or self.fit_laplace()
        u = result.draws(draws, np.random.default_rng(seed))
        idata = self.to_idata(u, result=result, log_likelihood=log_likelihood)
        if posterior_predictive:
            self.add_posterior_predictive(idata, seed=seed)
        return idata

    # --------------------------------------------------------------- prediction
    def _new_columns(self, data) -> tuple[dict, int]:
        """Validated 2-D regressor columns of new data (categorical labels mapped to codes)."""
        columns = _columns(data)
        _add_derived(self.blocks, columns)
        leaves = [leaf for b in self.blocks for f in b for leaf in f]
        needed = sorted({c for leaf in leaves for c in _leaf_columns(leaf)})
        missing = [c for c in needed if c not in columns]
        if missing:
            raise ValueError(
                f"New data lacks column(s) {missing} that the GUM uses; it has {sorted(columns)}."
            )
        lengths = {np.shape(columns[c])[0] if np.ndim(columns[c]) else 0 for c in needed}
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError(
                f"New data columns {needed} must have the same number of rows, got {lengths}."
            )
        n = lengths.pop()
        prepared = {}
        for column in needed:
            values = np.asarray(columns[column])
            labels = next(
                (
                    self.labels[leaf.name]
                    for leaf in leaves
                    if leaf.column == column and leaf.name in self.labels
                ),
                self.labels.get(f"{column}|group"),
            )
            if labels is not None and values.dtype.kind in "OUSb":
                text = values.astype(str)
                codes = np.searchsorted(labels, text)
                codes = np.clip(codes, 0, len(labels) - 1)
                unseen = sorted(set(text[(labels[codes] != text) & (text != "")]))
                if unseen:
                    raise ValueError(
                        f"data[{column!r}] has level(s) {unseen[:5]} not seen in training "
                        f"(levels: {list(labels)}). Predict only at training levels."
                    )
                values = np.where(text == "", np.nan, codes.astype(float))
            prepared[column], _ = _regressor(values, column, n, False, allow_empty=True)
        return prepared, n

    def predict(
        self, data, idata=None, *, kind="rho", draws=1000, seed=0, name=None
    ) -> xr.DataArray:
        """Posterior draws of the predictor, mean or response at new inputs.

        Functions are evaluated exactly at the new inputs (GP conditional of seed 002 eq. 14
        for exact-support GPs, the model's own basis otherwise; see
        :mod:`pmctx.gum.predict`).

        Parameters
        ----------
        data : DataFrame or dict
            The regressor columns of the formula (the response is not needed).
        idata : InferenceData, optional
            Posterior draws (NUTS, ADVI or Laplace). Default: ``draws`` Laplace draws.
        kind : {"rho", "mean", "response"}
            The predictor ``rho``, the mean response ``g^-1(rho)``, or response draws.
        draws : int, default 1000
            Laplace draws when ``idata`` is None.
        seed : int, default 0
            Seed of the GP-conditional and response draws.
        name : str, optional
            Name of the returned DataArray (default: ``kind``, or the response's name).

        Returns
        -------
        xarray.DataArray with dims ``(chain, draw, obs)``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> idata = g.laplace(draws=20)
        >>> g.predict({"x": np.array([0.5, 1.5])}, idata, kind="mean").shape
        (1, 20, 2)
        """
        check_choice(kind, "kind", KINDS)
        draws = check_int(draws, "draws", minimum=1)
        columns, n = self._new_columns(data)
        rho, noise = predict_draws(self, columns, n, idata, draws=draws, seed=seed)
        d = self.design
        if kind == "mean":
            rho = mean_response(d.family, d.link, rho)
        elif kind == "response":
            if d.family == "gaussian" and noise is None:
                raise ValueError(
                    "Response draws of Gaussian data need noise_sd (fixed or sampled)."
                )
            rng = np.random.default_rng(seed + 1)
            rho = response_draws(d.family, d.link, rho, rng, noise_sd=noise)
        return as_dataarray(rho, name or (d.response if kind == "response" else kind))

    def function_values(self, name, x, idata=None, *, draws=1000, seed=0) -> np.ndarray:
        """Draws (chain, draw, len(x)) of function ``name`` at inputs ``x`` (exact, not
        interpolated from the support grid).

        Parameters
        ----------
        name : str
            The function (one of :attr:`function_names`).
        x : array_like
            Inputs at which to evaluate it.
        idata : arviz.InferenceData, optional
            Posterior draws; default ``draws`` Laplace draws.
        draws : int, default 1000
            Laplace draws when ``idata`` is None.
        seed : int, default 0
            Seed of the Laplace and GP-conditional draws.

        Returns
        -------
        numpy.ndarray
            Draws of shape ``(chain, draw, len(x))``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> g.function_values("f_x", np.array([0.5, 1.0]), draws=20).shape
        (1, 20, 2)
        """
        if name not in self.design.functions:
            raise ValueError(f"Unknown function {name!r}; have {self.function_names}.")
        return function_draws(self, name, x, idata, draws=draws, seed=seed)

    def add_posterior_predictive(self, idata: az.InferenceData, *, seed=0) -> az.InferenceData:
        """Add a ``posterior_predictive`` group (response draws at the training inputs), so
        ``az.plot_ppc`` and ``az.loo_pit`` work on GUM fits.

        Parameters
        ----------
        idata : arviz.InferenceData
            Posterior draws of this model (NUTS, ADVI or Laplace); modified in place.
        seed : int, default 0
            Seed of the response draws.

        Returns
        -------
        arviz.InferenceData
            ``idata`` with a (replaced) ``posterior_predictive`` group; unchanged when the
            dispersion is neither fixed nor sampled.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> idata = g.laplace(draws=20, posterior_predictive=False)
        >>> g.add_posterior_predictive(idata).posterior_predictive["y"].shape
        (1, 20, 30)
        """
        d = self.design
        rho, noise = predict_draws(self, self._training_columns, d.n_obs, idata, seed=seed)
        rng = np.random.default_rng(None if seed is None else seed + 2)
        if d.family in DISPERSION and noise is None:
            return idata  # dispersion neither fixed nor sampled: nothing to draw from
        values = response_draws(d.family, d.link, rho, rng, noise_sd=noise)
        group = xr.Dataset({d.response: as_dataarray(values, d.response)})
        if "posterior_predictive" in idata.groups():
            del idata["posterior_predictive"]
        idata.add_groups(posterior_predictive=group)
        return idata

    def to_idata(self, u: np.ndarray, *, result=None, log_likelihood=True) -> az.InferenceData:
        """InferenceData of free-vector draws ``u`` (draws x D), named like the PyMC model.

        Parameters
        ----------
        u : numpy.ndarray, shape (draws, D)
            Draws of the free vector.
        result : pmctx.gum.laplace.LaplaceResult, optional
            A Laplace fit whose log evidence and convergence flag go into the attributes.
        log_likelihood : bool, default True
            Add the pointwise ``log_likelihood`` group.

        Returns
        -------
        arviz.InferenceData
            One chain with the free variables, the functions on their grids, the intercept and
            offsets, named as in the PyMC model.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> u = np.zeros((3, g.design.n_free))
        >>> g.to_idata(u).log_likelihood["y"].shape
        (1, 3, 30)
        """
        d = self.design
        posterior, dims, coords = {}, {}, {"obs": np.arange(d.n_obs)}
        thetas, scalars = d.thetas(u), d.scalars(u)
        for name, fn in d.functions.items():
            if fn.n_free:
                posterior[f"{name}_z"] = u[None, :, d.slices[name]]
                dims[f"{name}_z"] = [f"{name}_free"]
            fdims = function_dim(d, name)
            values = thetas[name].reshape(len(u), *fn.value_shape)
            posterior[name] = values[None] if fdims else values[None, :, 0]
            dims[name] = fdims
            coords.update(function_coords(d, name))
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

    def log_likelihood_draws(self, posterior) -> dict | None:
        """Pointwise log-likelihood of every posterior draw, from its ``*_z`` variables.

        The ``log_likelihood`` group that :func:`pymc.compute_log_likelihood` gives, computed
        by the design's own NumPy likelihood: no PyTensor function to compile, which is most of
        a first :meth:`sample` call's time after sampling. ``None`` when the model's
        coordinates are not the design's (HSGP terms) or a ``*_z`` variable is missing.

        Parameters
        ----------
        posterior : xarray.Dataset
            Posterior draws with dims ``chain``, ``draw`` and the model's ``*_z`` variables.

        Returns
        -------
        dict or None
            ``{response name: array (chain, draw, N)}``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> idata = g.laplace(draws=5, log_likelihood=False, posterior_predictive=False)
        >>> g.log_likelihood_draws(idata.posterior)["y"].shape
        (1, 5, 30)
        """
        d = self.design
        self.model  # noqa: B018 -- fixes which terms are HSGP
        slots = {key: slot for key, slot in d.slices.items() if slot.stop > slot.start}
        if self._hsgp or any(f"{key}_z" not in posterior for key in slots):
            return None
        shape = (posterior.sizes["chain"], posterior.sizes["draw"])
        u = np.zeros((*shape, d.n_free))
        for key, slot in slots.items():
            u[..., slot] = posterior[f"{key}_z"].values.reshape(*shape, -1)
        rows = u.reshape(-1, d.n_free)
        ll = np.stack([self.pointwise_loglik(row) for row in rows])
        return {d.response: ll.reshape(*shape, -1)}

    def pointwise_loglik(self, u: np.ndarray) -> np.ndarray:
        """Log-likelihood of every observation at free vector ``u``.

        Parameters
        ----------
        u : numpy.ndarray, shape (D,)
            A free vector.

        Returns
        -------
        numpy.ndarray, shape (N,)
            Log-likelihood of each observation.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> g.pointwise_loglik(np.zeros(g.design.n_free)).shape
        (30,)
        """
        return self.design.loglik(self.design.predictor(u))[0]

    def function_summary(self, idata: az.InferenceData, name: str, *, hdi_prob=0.94):
        """Posterior mean, sd and equal-tailed band of function ``name`` on its grid.

        Parameters
        ----------
        idata : arviz.InferenceData
            Posterior draws with the function ``name``.
        name : str
            The function (one of :attr:`function_names`).
        hdi_prob : float, default 0.94
            Probability mass of the equal-tailed band.

        Returns
        -------
        pandas.DataFrame with columns ``x``, ``mean``, ``sd``, ``lower``, ``upper`` (and
        ``level`` first for a grouped GP ``f(x|g)``).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")

        >>> table = g.function_summary(g.laplace(draws=20), "f_x")
        >>> list(table.columns)
        ['x', 'mean', 'sd', 'lower', 'upper']
        """
        if name not in self.design.functions:
            raise ValueError(f"Unknown function {name!r}; have {self.function_names}.")
        fn = self.design.functions[name]
        values = idata.posterior[name].values
        values = values.reshape(values.shape[0] * values.shape[1], -1)
        tail = (1.0 - hdi_prob) / 2.0
        x = fn.support
        if name in self.labels:
            x = self.labels[name]
        columns = {}
        if fn.levels is not None:  # grouped GP: one row per (level, support point)
            columns["level"] = np.repeat(fn.level_names, len(x))
            x = np.tile(x, fn.n_levels)
        return pd.DataFrame(
            {
                **columns,
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
    alpha: float | None = None,
    weights=None,
    lengthscale_prior_sigma: float | None = None,
    approximation: str = "auto",
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
    family : {"gaussian", "bernoulli", "poisson", "negative_binomial"}
    link : str, optional
        ``logit`` (default) or ``probit`` for Bernoulli; ``log`` for Poisson; ``identity``.
    intercept : bool, optional
        Overrides the formula's intercept (default: present).
    intercept_sd, offset_sd : float
        Prior standard deviations of the intercept ``c0`` and of free offsets ``c_ij``.
    noise_sd : float, optional
        Gaussian noise sd; None samples it (NUTS) or leaves it to hyperparameter fitting.
    alpha : float, optional
        Negative-binomial dispersion (variance ``mu + mu^2 / alpha``); None samples it (NUTS,
        ``HalfNormal(10)`` prior) or leaves it to hyperparameter fitting.
    weights : array of shape (N,), optional
        Observation weights: observation n's log-likelihood counts ``weights[n]`` times
        (non-negative; e.g. frequency weights of aggregated trials).
    lengthscale_prior_sigma : float, optional
        Sample GP lengthscales under NUTS/ADVI with priors
        ``LogNormal(log(declared), lengthscale_prior_sigma)``; Laplace keeps them fixed (fit
        them with :mod:`pmctx.gum.hyper` instead). Default: fixed lengthscales.
    approximation : {"auto", "exact", "hsgp"}, default "auto"
        GP prior of the ``pm.Model`` that NUTS and ADVI sample: the exact grid prior, or the
        HSGP basis (:mod:`pmctx.gum.hsgp`, PyMC's ``pm.gp.HSGP``); ``"auto"`` takes HSGP when
        lengthscales are sampled (``lengthscale_prior_sigma``) and from
        :data:`pmctx.gum.hsgp.HSGP_MIN_OBS` rows on. Laplace and evidence stay exact.

    Returns
    -------
    GumModel, or a :class:`~pmctx.gum.many.GumCollection` (one model per level) for a
    formula ``"y|g ~ ..."``.

    Examples
    --------
    Quantile binning, observation weights and a negative-binomial family:

    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> data = {"x": rng.normal(size=200), "g": rng.choice(["a", "b", "c"], 200)}
    >>> data["y"] = rng.poisson(np.exp(0.5 * data["x"]))
    >>> g = gum("y ~ f(x, binning=5) + cat(g)^cat(g2)", {**data, "g2": data["g"][::-1]},
    ...         family="negative_binomial", alpha=5.0, weights=np.ones(200))
    >>> g.design.functions["f_x"].support.size, sorted(g.function_names)
    (5, ['f_x', 'w_g', 'w_g2', 'w_g_g2'])
    """
    if isinstance(formula_or_terms, str) and "|" in formula_or_terms.split("~")[0]:
        return _split_fits(
            formula_or_terms,
            data,
            family=family,
            link=link,
            intercept=intercept,
            intercept_sd=intercept_sd,
            offset_sd=offset_sd,
            noise_sd=noise_sd,
            alpha=alpha,
            weights=weights,
            lengthscale_prior_sigma=lengthscale_prior_sigma,
            approximation=approximation,
        )
    check_choice(family, "family", tuple(FAMILIES))
    check_choice(approximation, "approximation", APPROXIMATIONS)
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
    if alpha is not None:
        if family != "negative_binomial":
            raise ValueError(f"alpha is the negative-binomial dispersion; family is {family!r}.")
        noise_sd = check_positive(alpha, "alpha")
    columns = _columns(data)
    blocks = normalize(term)
    _add_derived(blocks, columns)
    needed = [response] + [c for b in blocks for f in b for leaf in f for c in _leaf_columns(leaf)]
    missing = sorted({c for c in needed if c not in columns})
    if missing:
        raise ValueError(
            f"Unknown column(s) {missing} in the GUM; the data has columns "
            f"{sorted(columns)}. Fix the formula or rename the data columns."
        )
    y = _response(family, columns[response], f"data[{response!r}]")
    check_nonempty(y, f"data[{response!r}]", unit="observation")
    derived = {leaf.column for b in blocks for f in b for leaf in f if leaf.derive is not None}
    categorical = {
        leaf.column for b in blocks for f in b for leaf in f if isinstance(leaf, Categorical)
    }
    groups = {leaf.group for b in blocks for f in b for leaf in f if getattr(leaf, "group", None)}
    prepared, labels = {}, {}
    for column in {c for b in blocks for f in b for leaf in f for c in _leaf_columns(leaf)}:
        prepared[column], lab = _regressor(
            columns[column], column, len(y), column in categorical | groups, column in derived
        )
        if lab is not None:
            for b in blocks:
                for f in b:
                    labels.update({leaf.name: lab for leaf in f if leaf.column == column})
            if column in groups:  # level names of grouped GPs f(x|column)
                labels[f"{column}|group"] = lab
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
    for fn in design.functions.values():
        group_labels = labels.get(f"{getattr(fn.leaf, 'group', None)}|group")
        if fn.levels is not None and group_labels is not None:
            fn.level_names = group_labels[fn.levels.astype(int)]
    if weights is not None:
        weights = as_float_array(weights, "weights", shape=(len(y),))
        if np.any(weights < 0):
            raise ValueError("weights must be non-negative, got a negative weight.")
        design.weights = weights
    if lengthscale_prior_sigma is not None:
        lengthscale_prior_sigma = check_positive(lengthscale_prior_sigma, "lengthscale_prior_sigma")
    fitted = GumModel(design, blocks, constraints, labels, lengthscale_prior_sigma, prepared)
    fitted.approximation = approximation
    return fitted

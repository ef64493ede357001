"""``GumModel``: a declared GUM, and a facade over the modules that do its work.

:func:`pmctx.gum.gum` builds it. It holds the structure (blocks, constraints, labels), the
numeric design and what is cached per hyperparameter setting (the ``pm.Model``, the Laplace
fit, compiled nutpie models); its methods hand over to the module of their concern:

* coordinates of the ``pm.Model`` and HSGP terms: :mod:`pmctx.gum.coordinates`;
* NUTS (PyMC or nutpie): :mod:`pmctx.gum.nuts`; Laplace and ADVI:
  :mod:`pmctx.gum.approximations`;
* prediction at new inputs: :mod:`pmctx.gum.predict` (data columns: :mod:`pmctx.gum.columns`);
* DataTree assembly and function summaries: :mod:`pmctx.gum.assemble`.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import xarray as xr

from pmctx.gum import approximations, assemble, coordinates, declaration, nuts
from pmctx.gum import predict as prediction
from pmctx.gum.build import build_pymc_model
from pmctx.gum.families import DISPERSION
from pmctx.gum.init import laplace_start
from pmctx.gum.laplace import LaplaceResult
from pmctx.validation import check_positive

__all__ = ["GumModel"]


def _remembered(fit):
    """``fit`` (a method) whose DataTree remembers the model (:mod:`.declaration`)."""

    @functools.wraps(fit)
    def method(self, *args, **kwargs):
        return declaration.remember(self, fit(self, *args, **kwargs))

    return method


class GumModel:
    """A declared GUM: its structure, numeric design and ``pm.Model``.

    Build it with :func:`pmctx.gum.gum`. ``model`` is the ``pm.Model`` (any PyMC sampler runs
    on it); :meth:`sample` (NUTS), :meth:`laplace` and :meth:`advi` return ``DataTree``
    with a ``log_likelihood`` group; :meth:`function_summary` gives a function's posterior on
    its grid with a credible band.

    Parameters
    ----------
    design : pmctx.gum.design.GumDesign
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
    >>> from pmctx.gum import gum
    >>> rng = np.random.default_rng(0)
    >>> data = {"x": rng.uniform(0, 2, 30)}
    >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
    >>> type(g).__name__, g.function_names
    ('GumModel', ['f_x'])
    >>> g
    GumModel(y ~ f_x, family='poisson', n_obs=30, n_free=30)
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
        self.declaration = None  # set by gum(): what to declare again on other rows
        self._nutpie: dict = {}  # compiled nutpie models: kind -> (model, laplace, compiled)

    def __repr__(self) -> str:
        def factor(terms):
            names = " + ".join(term.name for term in terms)
            return f"({names})" if len(terms) > 1 else names

        structure = " + ".join(" * ".join(factor(f) for f in block) for block in self.blocks)
        d = self.design
        return (
            f"GumModel({d.response} ~ {structure}, family={d.family!r}, n_obs={len(d.y)}, "
            f"n_free={d.n_free})"
        )

    # ------------------------------------------------------------ structure
    @property
    def hsgp_sizes(self) -> dict:
        """``{function: (basis size, boundary factor c)}`` of the GP terms that ``model``
        (NUTS, ADVI) samples through HSGP (rule: :func:`pmctx.gum.coordinates.hsgp_sizes`).

        Returns
        -------
        dict
            Empty when every term keeps its exact prior.

        Examples
        --------
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> gum("y ~ f(x)", data, family="poisson").hsgp_sizes
        {}
        """
        return coordinates.hsgp_sizes(
            self.design, self.approximation, self.lengthscale_prior_sigma, self._hsgp_search
        )

    @property
    def model(self) -> pm.Model:
        """The ``pm.Model`` (built on first use, rebuilt after hyperparameter changes).

        Examples
        --------
        >>> from pmctx.gum import gum
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
        >>> from pmctx.gum import gum
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

    def _model_coordinates(self, u: np.ndarray, cov: np.ndarray | None = None):
        """:func:`pmctx.gum.coordinates.model_coordinates` for this model's HSGP terms."""
        self.model  # noqa: B018 -- fixes which terms are HSGP
        return coordinates.model_coordinates(self.design, self._hsgp, u, cov)

    @property
    def function_names(self) -> list[str]:
        """Names of the model's functions (``f_x``, ``w_g``, ...), in declaration order.

        Returns
        -------
        list of str
            The keys of ``design.functions``.

        Examples
        --------
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> gum("y ~ f(x, lengthscale=0.5)", data, family="poisson").function_names
        ['f_x']
        """
        return list(self.design.functions)

    def hyperparameters(self) -> dict:
        """Current hyperparameters per function (plus the dispersion of families with one).

        Returns
        -------
        dict
            ``{function name: {hyperparameter: value}}``, plus ``noise_sd`` or ``alpha``.

        Examples
        --------
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> gum("y ~ f(x, lengthscale=0.5)", data, family="poisson").hyperparameters()
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
        >>> from pmctx.gum import gum
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

    # ------------------------------------------------------------ inference
    def map_point(self, u: np.ndarray | None = None) -> dict:
        """Initial-value dict of the PyMC model at free vector ``u`` (default: Laplace MAP).

        Parameters
        ----------
        u : numpy.ndarray, optional
            A free vector (length ``design.n_free``); default the Laplace MAP (fitted if needed).

        Returns
        -------
        dict
            ``{value variable name: value}`` of the model's free variables (``initvals``).

        Examples
        --------
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> sorted(gum("y ~ f(x, lengthscale=0.5)", data, family="poisson").map_point())
        ['f_x_z', 'intercept_z']
        """
        if u is None:
            u = (self.laplace_result or self.fit_laplace()).u_map
        self.model  # noqa: B018 -- fixes which terms are HSGP
        return coordinates.map_point(self.design, self._hsgp, u)

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
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> sorted(g.map_point_raw(np.zeros(g.design.n_free)))
        ['f_x_z', 'intercept_z']
        """
        self.model  # noqa: B018 -- fixes which terms are HSGP
        return coordinates.split_point(self.design, self._hsgp, v)

    # ------------------------------------------------------------ inference and prediction
    # Each is a function of its concern module, bound here as the method (``self``: the model).
    # Fits remember their model, so pmctx.compare can refit them exactly on other rows.
    sample = _remembered(nuts.sample)
    fit_laplace = approximations.fit_laplace
    laplace = _remembered(approximations.laplace)
    advi = _remembered(approximations.advi)
    redeclare = declaration.redeclare
    predict = prediction.predict
    function_values = prediction.function_values
    add_posterior_predictive = assemble.add_posterior_predictive

    # ------------------------------------------------------------ DataTree
    def to_idata(self, u: np.ndarray, *, result=None, log_likelihood=True) -> xr.DataTree:
        """DataTree of free-vector draws ``u`` (draws x D), named like the PyMC model.

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
        xarray.DataTree
            One chain with the free variables, the functions on their grids, the intercept and
            offsets, named as in the PyMC model.

        Examples
        --------
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> g.to_idata(np.zeros((3, g.design.n_free))).log_likelihood["y"].shape
        (1, 3, 30)
        """
        return assemble.to_idata(self.design, u, result=result, log_likelihood=log_likelihood)

    def log_likelihood_draws(self, posterior) -> dict | None:
        """Pointwise log-likelihood of every posterior draw, from its ``*_z`` variables.

        :func:`pymc.compute_log_likelihood`'s group by the design's NumPy likelihood (nothing to
        compile); ``None`` with HSGP terms or a missing ``*_z`` variable.

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
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> idata = g.laplace(draws=5, log_likelihood=False, posterior_predictive=False)
        >>> g.log_likelihood_draws(idata.posterior)["y"].shape
        (1, 5, 30)
        """
        self.model  # noqa: B018 -- fixes which terms are HSGP
        return assemble.log_likelihood_draws(self.design, self._hsgp, posterior)

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
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> g.pointwise_loglik(np.zeros(g.design.n_free)).shape
        (30,)
        """
        return assemble.pointwise_loglik(self.design, u)

    def function_summary(self, idata: xr.DataTree, name: str, *, hdi_prob=0.94):
        """Posterior mean, sd and equal-tailed band of function ``name`` on its grid.

        Parameters
        ----------
        idata : xarray.DataTree
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
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> g = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson")
        >>> list(g.function_summary(g.laplace(draws=20), "f_x").columns)
        ['x', 'mean', 'sd', 'lower', 'upper']
        """
        return assemble.function_summary(self.design, self.labels, idata, name,
                                         hdi_prob=hdi_prob)  # fmt: skip

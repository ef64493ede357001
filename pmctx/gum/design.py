"""Numeric design of a GUM: every function as ``theta = theta0 + Q z`` with ``z ~ N(0, I)``.

From validated data and the normalised predictor this builds, for each function, its support
points, its constraint projection and the non-centred prior factor ``Q = P^T chol(P K P^T)``,
and for each use of a function its basis ``Phi`` (N x positions x m) so that the function's
values at the data are ``Phi @ theta``. Free offsets and the intercept are ``sd * z``.
The whole model is then a generalized multilinear model in the free vector ``u`` with a
standard-normal prior (seed 002, Appendix B.1), which both the PyMC builder and the Laplace
routine use.

Support rule (documented default, overridable with ``GP(max_points=...)``): a GP lives on the
sorted unique values of its inputs when there are at most ``max_points`` of them (exact GP),
otherwise on an even grid of ``max_points`` points with linear interpolation to the data
(an inducing-grid sparse GP whose cost is linear in N).
"""

# Long because FunctionDesign, GumDesign (predictor, Jacobian, curvature, subsets) and
# build_design are one numeric representation; about 330 of its lines are docstrings.

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pmctx.gum.basis import basis_matrix, support_points
from pmctx.gum.constraints import projection
from pmctx.gum.families import loglik
from pmctx.gum.grouped import group_levels, grouped_basis, grouped_cov, level_index
from pmctx.gum.kernels import kernel_matrix
from pmctx.gum.terms import GP, Fixed

__all__ = ["FunctionDesign", "GumDesign", "build_design"]

_JITTER = 1e-6


@dataclass
class FunctionDesign:
    """One function: support, constraint and non-centred prior factor.

    Parameters
    ----------
    name : str
        Function name (``f_x``, ``w_g``, ``b_x``).
    leaf : pmctx.gum.terms.Term
        The leaf term it comes from.
    support : numpy.ndarray (m,)
        Support points (or category codes).
    constraint : str
        Identifiability constraint (see :func:`pmctx.gum.constraints.projection`).
    hyper : dict
        Hyperparameters (``lengthscale``, ``variance``, ``sd``, ...).
    exact : bool, default True
        Whether every input is a support point.
    P : numpy.ndarray (d, m)
        Free-subspace basis of the constraint.
    theta0 : numpy.ndarray (m,)
        Constraint offset.
    Q : numpy.ndarray (m, d)
        Non-centred prior factor: ``theta = theta0 + Q z``.
    L : numpy.ndarray
        Cholesky factor of the projected prior covariance.
    edges : numpy.ndarray, optional
        Inner bin edges of a binned GP.
    levels : numpy.ndarray, optional
        Group level code of each row, for a grouped GP ``f(x|g)``.
    level_names : numpy.ndarray, optional
        Labels of the levels (coordinates of the level dim).
    """

    name: str
    leaf: object
    support: np.ndarray
    constraint: str
    hyper: dict
    exact: bool = True
    P: np.ndarray = None
    theta0: np.ndarray = None
    Q: np.ndarray = None
    L: np.ndarray = None
    edges: np.ndarray | None = None  # inner bin edges of a binned GP
    levels: np.ndarray | None = None  # group level codes of a grouped GP f(x|g)
    level_names: np.ndarray | None = None  # their labels (coordinates of the level dim)

    @property
    def n_free(self) -> int:
        """Number of free (standard-normal) coordinates of the function.

        Returns
        -------
        int
            Rows of ``P``.
        """
        return self.P.shape[0]

    @property
    def n_levels(self) -> int:
        """Number of group levels (1 for an ungrouped function)."""
        return 1 if self.levels is None else len(self.levels)

    @property
    def n_values(self) -> int:
        """Length of the parameter vector ``theta`` (support points times levels)."""
        return len(self.support) * self.n_levels

    @property
    def value_shape(self) -> tuple:
        """Shape of ``theta`` as stored in DataTree: (levels, support) when grouped."""
        m = len(self.support)
        return (m,) if self.levels is None else (len(self.levels), m)

    def kernel_cov(self) -> np.ndarray:
        """Prior covariance of one level's values on the support (with jitter).

        Returns
        -------
        numpy.ndarray (m, m)
            The kernel matrix of a GP, or ``sd^2 I`` of weights.
        """
        m = len(self.support)
        if isinstance(self.leaf, GP):
            K = kernel_matrix(
                self.leaf.kernel,
                self.support,
                self.support,
                lengthscale=self.hyper["lengthscale"],
                variance=self.hyper["variance"],
                period=self.hyper.get("period"),
            )
            return K + _JITTER * self.hyper["variance"] * np.eye(m)
        return self.hyper["sd"] ** 2 * np.eye(m)

    def prior_cov(self) -> np.ndarray:
        """Prior covariance of ``theta`` (block diagonal over the levels of a grouped GP).

        Returns
        -------
        numpy.ndarray (n_values, n_values)
            :meth:`kernel_cov`, repeated on the diagonal once per level when grouped.
        """
        K = self.kernel_cov()
        return K if self.levels is None else grouped_cov(K, self.n_levels)

    def refresh(self) -> None:
        """Recompute the projection and ``Q`` (after a hyperparameter change)."""
        self.P, self.theta0 = projection(self.constraint, self.n_values)
        if self.n_free == 0:
            self.Q, self.L = np.zeros((self.n_values, 0)), np.zeros((0, 0))
            return
        K_free = self.P @ self.prior_cov() @ self.P.T
        self.L = np.linalg.cholesky(0.5 * (K_free + K_free.T))
        self.Q = self.P.T @ self.L

    def free_coordinates(self, theta: np.ndarray) -> np.ndarray:
        """``z`` with ``theta0 + Q z`` closest to ``theta`` (warm starts across hyperparameters).

        Parameters
        ----------
        theta : numpy.ndarray (m,)
            Function values on the support.

        Returns
        -------
        numpy.ndarray (d,)
            The least-squares free coordinates ``z``.
        """
        if self.n_free == 0:
            return np.zeros(0)
        return np.linalg.solve(self.L, self.P @ (theta - self.theta0))


@dataclass
class Use:
    """One occurrence of a function in a factor: its basis at the data (or fixed values).

    Parameters
    ----------
    name : str
        Function name.
    basis : numpy.ndarray (N, P, m) or None
        Basis at the data; None for fixed functions.
    fixed_values : numpy.ndarray (N, P), optional
        Values of a fixed function at the data.
    """

    name: str
    basis: np.ndarray | None  # (N, P, m); None for fixed functions
    fixed_values: np.ndarray | None = None  # (N, P)


@dataclass
class GumDesign:
    """Everything numeric about a GUM (see module docstring).

    Parameters
    ----------
    response : str
        Response column name.
    y : numpy.ndarray (N,)
        Responses.
    family : str
        Response family.
    link : str
        Link function.
    functions : dict
        ``{name: FunctionDesign}``.
    blocks : list
        Blocks -> factors -> lists of :class:`Use`.
    masks : list of numpy.ndarray
        Per block, the (N, P) 0/1 mask of present positions.
    offsets : dict
        ``{(block, factor): "free" or fixed value}``.
    intercept : bool
        Whether the model has an intercept.
    intercept_sd : float
        Prior sd of the intercept.
    offset_sd : float
        Prior sd of free offsets.
    noise_sd : float or None
        Dispersion (Gaussian sd or negative-binomial alpha); None when not fixed.
    slices : dict, optional
        Slices of the free vector per function, offset and intercept (set by :meth:`layout`).
    _jacobian_cache : dict, optional
        Cache of Jacobian pieces (internal).
    weights : numpy.ndarray (N,), optional
        Observation weights (None: all one).
    """

    response: str
    y: np.ndarray
    family: str
    link: str
    functions: dict
    blocks: list  # blocks -> factors -> list[Use]
    masks: list  # per block (N, P) 0/1
    offsets: dict  # (i, j) -> "free" or float
    intercept: bool
    intercept_sd: float
    offset_sd: float
    noise_sd: float | None  # dispersion: Gaussian noise sd or negative-binomial alpha
    slices: dict = field(default_factory=dict)
    _jacobian_cache: dict = field(default_factory=dict, repr=False)
    weights: np.ndarray | None = None  # observation weights (None: all one)

    def loglik(self, rho: np.ndarray, y: np.ndarray | None = None, weights=None):
        """``(ll, d1, w)`` of the family at ``rho`` (observation weights applied).

        Parameters
        ----------
        rho : numpy.ndarray (N,)
            Predictor values.
        y : numpy.ndarray (N,), optional
            Responses (default the model's).
        weights : numpy.ndarray (N,), optional
            Observation weights (default the model's).

        Returns
        -------
        tuple of numpy.ndarray
            Log-likelihood, first derivative and curvature weight per observation.
        """
        noise = 1.0 if self.noise_sd is None else float(self.noise_sd)
        y = self.y if y is None else y
        weights = self.weights if weights is None and y is self.y else weights
        return loglik(self.family, self.link, y, rho, noise_sd=noise, weights=weights)

    @property
    def n_obs(self) -> int:
        """Number of observations.

        Returns
        -------
        int
            ``len(y)``.
        """
        return len(self.y)

    @property
    def n_free(self) -> int:
        """Length of the free vector ``u``.

        Returns
        -------
        int
            Free coordinates of all functions, offsets and the intercept.
        """
        return max((s.stop for s in self.slices.values()), default=0)

    def layout(self) -> None:
        """Assign slices of the free vector ``u`` to functions, offsets and the intercept."""
        self._jacobian_cache = {}
        start, self.slices = 0, {}
        for name, fn in self.functions.items():
            self.slices[name] = slice(start, start + fn.n_free)
            start += fn.n_free
        for key, value in sorted(self.offsets.items()):
            if value == "free":
                self.slices[offset_name(key)] = slice(start, start + 1)
                start += 1
        if self.intercept:
            self.slices["intercept"] = slice(start, start + 1)

    def thetas(self, u: np.ndarray) -> dict:
        """Function parameter values (support values or weights) for a free vector ``u``.

        Parameters
        ----------
        u : numpy.ndarray (D,)
            Free vector.

        Returns
        -------
        dict
            ``{function name: values on its support}``.
        """
        return {
            name: fn.theta0 + fn.Q @ u[..., self.slices[name]].T
            if u.ndim == 1
            else fn.theta0 + u[..., self.slices[name]] @ fn.Q.T
            for name, fn in self.functions.items()
        }

    def scalars(self, u: np.ndarray) -> dict:
        """Offsets and intercept on their natural scale.

        Parameters
        ----------
        u : numpy.ndarray (D,)
            Free vector.

        Returns
        -------
        dict
            ``{offset name or "intercept": value}``.
        """
        out = {}
        for key, value in self.offsets.items():
            name = offset_name(key)
            out[name] = (
                self.offset_sd * u[..., self.slices[name].start]
                if value == "free"
                else np.full(u.shape[:-1], float(value))
            )
        if self.intercept:
            out["intercept"] = self.intercept_sd * u[..., self.slices["intercept"].start]
        return out

    def factor_values(self, u: np.ndarray) -> list[list[np.ndarray]]:
        """Value of every factor at the data, (N, P) arrays; (N, P, S) for S free vectors.

        Parameters
        ----------
        u : numpy.ndarray (D,) or (S, D)
            Free vector, or one per row.

        Returns
        -------
        list of list of numpy.ndarray
            Per block and factor, the (N, P) values, or (N, P, S) for a batch.
        """
        thetas, scalars = self.thetas(u), self.scalars(u)
        batch = u.ndim == 2  # a trailing draws axis: the same operations, one per column
        values = []
        for i, block in enumerate(self.blocks):
            # every factor at full shape, so np.prod can stack them (a fixed-only factor too)
            ones = np.ones((*self.masks[i].shape, len(u))) if batch else np.ones_like(self.masks[i])
            row = []
            for j, factor in enumerate(block):
                total = 0.0
                for use in factor:
                    if use.basis is None:
                        total = total + (use.fixed_values[..., None] if batch else use.fixed_values)
                    else:
                        theta = thetas[use.name]
                        total = total + use.basis @ (theta.T if batch else theta)
                if (i, j) in self.offsets:
                    total = total + scalars[offset_name((i, j))]
                row.append(total * ones)
            values.append(row)
        return values

    def predictor(self, u: np.ndarray) -> np.ndarray:
        """``rho`` at the data for a free vector ``u``, or for each row of a batch.

        Parameters
        ----------
        u : numpy.ndarray (D,) or (S, D)
            Free vector, or one per row (``GumModel.log_likelihood_draws`` passes chunks of
            posterior draws).

        Returns
        -------
        numpy.ndarray (N,) or (S, N)
            The predictor ``rho``.

        Examples
        --------
        >>> import numpy as np
        >>> from pmctx.gum import gum
        >>> rng = np.random.default_rng(0)
        >>> data = {"x": rng.uniform(0, 2, 30)}
        >>> data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
        >>> d = gum("y ~ f(x, lengthscale=0.5)", data, family="poisson").design
        >>> u = rng.normal(size=(4, d.n_free))
        >>> d.predictor(u).shape, bool(np.allclose(d.predictor(u)[2], d.predictor(u[2])))
        ((4, 30), True)
        """
        batch = u.ndim == 2
        rho = np.zeros((self.n_obs, len(u)) if batch else self.n_obs)
        for i, row in enumerate(self.factor_values(u)):
            mask = self.masks[i][..., None] if batch else self.masks[i]
            rho += (np.prod(row, axis=0) * mask).sum(axis=1)
        if self.intercept:
            rho += self.intercept_sd * u[..., self.slices["intercept"].start]
        return rho.T if batch else rho

    def factor_jacobians(self, i: int, j: int) -> list[tuple[slice, np.ndarray]]:
        """(slot, d factor / d u_slot) pairs of factor (i, j), each (N, P, d).

        Parameters
        ----------
        i : int
            Block index.
        j : int
            Factor index within the block.

        Returns
        -------
        list of tuple
            ``(slot, derivative)`` pairs.
        """
        if (i, j) in self._jacobian_cache:
            return self._jacobian_cache[(i, j)]
        pieces = []
        for use in self.blocks[i][j]:
            if use.basis is not None and self.functions[use.name].n_free:
                pieces.append((self.slices[use.name], use.basis @ self.functions[use.name].Q))
        if self.offsets.get((i, j)) == "free":
            ones = np.full((*self.masks[i].shape, 1), self.offset_sd)
            pieces.append((self.slices[offset_name((i, j))], ones))
        self._jacobian_cache[(i, j)] = pieces
        return pieces

    def jacobian(self, u: np.ndarray, values=None) -> np.ndarray:
        """``d rho / d u`` (N x D).

        Parameters
        ----------
        u : numpy.ndarray (D,)
            Free vector.

        values : list, optional
            Factor values at ``u`` (computed when omitted).

        Returns
        -------
        numpy.ndarray (N, D)
            ``d rho / d u``.
        """
        values = self.factor_values(u) if values is None else values
        J = np.zeros((self.n_obs, self.n_free))
        for i, row in enumerate(values):
            for j in range(len(row)):
                others = self.masks[i] * _product_except(row, (j,))
                for slot, dF in self.factor_jacobians(i, j):
                    J[:, slot] += np.matmul(others[:, None, :], dF)[:, 0, :]
        if self.intercept:
            J[:, self.slices["intercept"]] = self.intercept_sd
        return J

    def curvature_term(self, u: np.ndarray, d1: np.ndarray, values=None) -> np.ndarray:
        """``sum_n d1_n d^2 rho_n / du du^T`` (the part of the Hessian the GN step drops).

        Parameters
        ----------
        u : numpy.ndarray (D,)
            Free vector.

        d1 : numpy.ndarray (N,)
            First derivatives of the log-likelihood in ``rho``.
        values : list, optional
            Factor values at ``u``.

        Returns
        -------
        numpy.ndarray (D, D)
            The second-order term.
        """
        values = self.factor_values(u) if values is None else values
        H2 = np.zeros((self.n_free, self.n_free))
        for i, row in enumerate(values):
            for j in range(len(row)):
                for k in range(j + 1, len(row)):
                    weight = d1[:, None] * self.masks[i] * _product_except(row, (j, k))
                    for slot_a, dA in self.factor_jacobians(i, j):
                        weighted = (dA * weight[..., None]).reshape(-1, dA.shape[-1])
                        for slot_b, dB in self.factor_jacobians(i, k):
                            block = weighted.T @ dB.reshape(-1, dB.shape[-1])
                            H2[slot_a, slot_b] += block
                            H2[slot_b, slot_a] += block.T
        return H2

    def subset(self, rows: np.ndarray) -> GumDesign:
        """The same model on a subset of the observations (functions are shared, not copied).

        Parameters
        ----------
        rows : numpy.ndarray
            Indices (or boolean mask) of the observations kept.

        Returns
        -------
        GumDesign
            The design on those rows.
        """
        blocks = [
            [
                [
                    Use(
                        use.name,
                        None if use.basis is None else use.basis[rows],
                        None if use.fixed_values is None else use.fixed_values[rows],
                    )
                    for use in factor
                ]
                for factor in block
            ]
            for block in self.blocks
        ]
        return GumDesign(
            self.response,
            self.y[rows],
            self.family,
            self.link,
            self.functions,
            blocks,
            [mask[rows] for mask in self.masks],
            self.offsets,
            self.intercept,
            self.intercept_sd,
            self.offset_sd,
            self.noise_sd,
            dict(self.slices),
            {},
            None if self.weights is None else self.weights[rows],
        )

    def warm_start(self, u: np.ndarray, thetas: dict) -> np.ndarray:
        """Free vector reproducing ``thetas`` (and ``u``'s scalars) under the current priors.

        Parameters
        ----------
        u : numpy.ndarray (D,)
            Free vector.

        thetas : dict
            ``{function name: values on its support}``.

        Returns
        -------
        numpy.ndarray (D,)
            The new free vector.
        """
        new = np.array(u, dtype=float)
        for name, fn in self.functions.items():
            new[self.slices[name]] = fn.free_coordinates(thetas[name])
        return new


def offset_name(key) -> str:
    """Variable name of the offset of factor ``key = (block, factor)``.

    Parameters
    ----------
    key : tuple of int
        ``(block, factor)``.

    Returns
    -------
    str
        ``"c_<block>_<factor>"``.

    Examples
    --------
    >>> offset_name((0, 1))
    'c_0_1'
    """
    return f"c_{key[0]}_{key[1]}"


def _product_except(row: list[np.ndarray], skip: tuple) -> np.ndarray:
    out = np.ones_like(row[0])
    for j, value in enumerate(row):
        if j not in skip:
            out = out * value
    return out


def build_design(
    blocks,
    columns: dict,
    y: np.ndarray,
    *,
    response: str,
    family: str,
    link: str,
    constraints: dict,
    offsets: dict,
    intercept: bool,
    intercept_sd: float = 10.0,
    offset_sd: float = 10.0,
    noise_sd: float | None = None,
    hyper: dict | None = None,
) -> GumDesign:
    """Assemble a :class:`GumDesign` from normalised blocks and validated 2-D columns.

    Parameters
    ----------
    blocks : list
        Normalised product blocks (factors of leaf terms).
    columns : dict
        Validated 2-D regressor columns.
    y : numpy.ndarray (N,)
        Responses.
    response : str
        Response name.
    family : str
        Response family.
    link : str
        Link function.
    constraints : dict
        ``{function name: constraint}``.
    offsets : dict
        ``{(block, factor): "free" or fixed value}``.
    intercept : bool
        Whether the model has an intercept.
    intercept_sd : float, default 10.0
        Prior sd of the intercept.
    offset_sd : float, default 10.0
        Prior sd of free offsets.
    noise_sd : float, optional
        Dispersion (None: not fixed).
    hyper : dict, optional
        Hyperparameter overrides per function.

    Returns
    -------
    GumDesign
        The laid-out design.
    """
    hyper = hyper or {}
    inputs: dict[str, list] = {}
    leaves: dict[str, object] = {}
    for block in blocks:
        for factor in block:
            for leaf in factor:
                inputs.setdefault(leaf.name, []).append(columns[leaf.column])
                leaves.setdefault(leaf.name, leaf)
    functions = {}
    for name, leaf in leaves.items():
        if isinstance(leaf, Fixed):
            continue
        support, exact, edges = support_points(leaf, inputs[name])
        if isinstance(leaf, GP):
            defaults = {"lengthscale": leaf.lengthscale, "variance": leaf.variance}
            if leaf.kernel == "periodic":
                defaults["period"] = leaf.period
        else:
            defaults = {"sd": leaf.sd}
        fn = FunctionDesign(
            name, leaf, support, constraints[name], {**defaults, **hyper.get(name, {})}, exact
        )
        fn.edges = edges
        if getattr(leaf, "group", None) is not None:
            fn.levels = group_levels([columns[leaf.group]])
            fn.level_names = fn.levels
        fn.refresh()
        functions[name] = fn
    design_blocks, masks = [], []
    for block in blocks:
        shapes = {columns[leaf.column].shape[1] for factor in block for leaf in factor}
        n_pos = max(shapes)
        if len(shapes - {1}) > 1:
            raise ValueError(
                f"Regressors in one product have different numbers of positions {sorted(shapes)}."
                " 2-D regressors combined in a product must have the same number of columns."
            )
        mask = np.ones((len(y), n_pos))
        factors = []
        for factor in block:
            uses = []
            for leaf in factor:
                x = np.broadcast_to(columns[leaf.column], (len(y), n_pos))
                mask = mask * np.isfinite(x)
                if isinstance(leaf, Fixed):
                    values = leaf.scale * np.asarray(
                        leaf.fn(np.where(np.isfinite(x), x, 0.0)), dtype=float
                    )
                    if values.shape != x.shape or not np.all(np.isfinite(values)):
                        raise ValueError(
                            f"Fixed function {leaf.name!r} must return finite values of the "
                            f"input's shape {x.shape}, got shape {values.shape}."
                        )
                    uses.append(Use(leaf.name, None, values))
                else:
                    fn = functions[leaf.name]
                    basis = basis_matrix(leaf, fn, x)
                    if fn.levels is not None:
                        groups = np.broadcast_to(columns[leaf.group], x.shape)
                        index = level_index(groups, fn.levels, leaf.name)
                        mask = mask * (index >= 0)
                        basis = grouped_basis(basis, index, fn.n_levels)
                    uses.append(Use(leaf.name, basis))
            factors.append(uses)
        design_blocks.append(factors)
        masks.append(mask)
    design = GumDesign(
        response,
        y,
        family,
        link,
        functions,
        design_blocks,
        masks,
        offsets,
        intercept,
        intercept_sd,
        offset_sd,
        noise_sd,
    )
    design.layout()
    return design

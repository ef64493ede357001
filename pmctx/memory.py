"""What a fit's outputs will take in memory, said before sampling; a trace that stores less.

Two pieces every fit uses:

* :func:`check_output_memory` adds up the bytes of the arrays a fit will keep (from their
  shapes, before any work) and warns :class:`pmctx.exceptions.MemoryWarning` with what to do
  when the total passes a share (:data:`MEMORY_SHARE`) of the memory available now.
* :class:`StoreTrace`, a ``pm.sample`` trace backend (``pm.sample(trace=StoreTrace(...))``)
  that keeps the small variables as PyMC does and the big ones as asked, after tuning only:
  every draw in a compact dtype (``int8`` for binary draws, ``float32``), every ``thin``-th
  draw, or only per-chain running moments (mean and sd). PyMC's own trace keeps every
  variable for ``tune + draws`` iterations in its own dtype (``int64`` for binary draws), which
  for a 10,000 x 10 binary matrix over 4 x 2,000 iterations is 6.4 GB.

Examples
--------
>>> import numpy as np, pymc as pm
>>> with pm.Model(coords={"i": range(50)}) as model:
...     x = pm.Normal("x", dims="i")
...     y = pm.Deterministic("y", 2 * x, dims="i")
>>> trace = StoreTrace(model, draws=20, per_draw={"x": "float32"}, moments=["y"])
>>> idata = pm.sample(draws=20, tune=10, chains=1, trace=trace, progressbar=False,
...                   random_seed=0, compute_convergence_checks=False, model=model)
>>> idata = trace.attach(idata)
>>> idata.posterior["x"].dtype, idata.posterior_moments["y"].dims
(dtype('float32'), ('chain', 'moment', 'i'))
"""

# Long because the size rules, the warning before sampling and the trace that applies them
# are one policy; each public piece carries a numpydoc docstring with an example.
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
from pymc.backends.ndarray import NDArray
from pymc.model import modelcontext

from pmctx.exceptions import MemoryWarning
from pmctx.points import initial_point

__all__ = [
    "LOG_LIKELIHOOD_BYTES",
    "MEMORY_SHARE",
    "MOMENTS_GROUP",
    "PER_DRAW_BYTES",
    "PREDICTIVE_BYTES",
    "ChainTrace",
    "StoreTrace",
    "available_memory",
    "check_output_memory",
    "even_draws",
    "format_bytes",
    "nbytes",
    "subset_draws",
    "thin_to_fit",
]

#: Warn when a fit's outputs would take more than this share of the memory available now.
MEMORY_SHARE = 0.5
#: Group of the running per-chain moments (``moment`` = ``mean``, ``sd``) of variables that
#: :class:`StoreTrace` keeps no draws of.
MOMENTS_GROUP = "posterior_moments"
#: Per-draw arrays of one quantity (a posterior predictive, a pointwise log-likelihood, a
#: per-trial reconstruction) are kept at every draw, in their own dtype, up to this size;
#: above it fits keep a compact dtype, moments or a subset of draws (each fit says which).
PER_DRAW_BYTES = 256 * 2**20
#: A posterior predictive (for ``az.plot_ppc``) is drawn at the draws whose values fit this
#: size; every draw when they all do.
PREDICTIVE_BYTES = 64 * 2**20
#: A pointwise log-likelihood (float32) is kept at every draw up to this size, else at every
#: k-th draw, the smallest k that fits (:func:`thin_to_fit`): PSIS-LOO from 2,000 draws is as
#: good as from 4,000, and at 100,000 rows x 4,000 draws the full array (1.6 GB) would hold
#: most of a 2 GB budget.
LOG_LIKELIHOOD_BYTES = 2**30


def available_memory() -> int:
    """Bytes of memory available to new allocations now (``PMCTX_MEMORY_BYTES`` overrides).

    Returns
    -------
    int
        ``psutil.virtual_memory().available``, else ``MemAvailable`` of ``/proc/meminfo``,
        else physical memory; ``PMCTX_MEMORY_BYTES`` when set (for tests and batch nodes whose
        limit the kernel does not report).

    Examples
    --------
    >>> available_memory() > 0
    True
    """
    text = os.environ.get("PMCTX_MEMORY_BYTES", "").strip()
    if text:
        if not text.isdigit():
            raise ValueError(
                f"PMCTX_MEMORY_BYTES must be a whole number of bytes, got {text!r}; unset it "
                "to use the memory the system reports."
            )
        return int(text)
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil comes with the dependencies
        pass
    try:  # pragma: no cover
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")  # pragma: no cover


def nbytes(shape: Iterable[int], dtype="float64") -> int:
    """Bytes of an array of ``shape`` and ``dtype``.

    Parameters
    ----------
    shape : iterable of int
        The array's shape.
    dtype : dtype, default "float64"
        Its dtype.

    Returns
    -------
    int

    Examples
    --------
    >>> nbytes((4, 1000, 10_000), "int8")
    40000000
    """
    return math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize


def subset_draws(chains: int, draws: int, values_per_draw: int, *, itemsize: int = 8,
                 budget: int = PER_DRAW_BYTES) -> int:  # fmt: skip
    """Draws per chain whose ``values_per_draw`` values fit ``budget`` bytes (1 to ``draws``).

    Parameters
    ----------
    chains, draws : int
        Chains and draws per chain of the fit.
    values_per_draw : int
        Values one draw of the array holds.
    itemsize : int, default 8
        Bytes per value.
    budget : int, default PER_DRAW_BYTES
        Bytes the array may take.

    Returns
    -------
    int

    Examples
    --------
    >>> subset_draws(4, 1000, 100), subset_draws(4, 1000, 10_000 * 38)
    (1000, 22)
    """
    fit = budget // max(chains * values_per_draw * itemsize, 1)
    return int(max(1, min(draws, fit)))


def even_draws(n_draw: int, keep: int) -> np.ndarray:
    """Indices of ``keep`` evenly spaced draws out of ``n_draw`` (first and last included).

    Parameters
    ----------
    n_draw : int
        Draws per chain.
    keep : int
        How many to keep.

    Returns
    -------
    numpy.ndarray of int

    Examples
    --------
    >>> even_draws(10, 4).tolist()
    [0, 3, 6, 9]
    """
    return np.unique(np.linspace(0, n_draw - 1, max(1, min(keep, n_draw))).round().astype(int))


def thin_to_fit(chains: int, draws: int, values_per_draw: int, *, itemsize: int = 4,
                budget: int = LOG_LIKELIHOOD_BYTES) -> int:  # fmt: skip
    """The smallest ``k`` such that every ``k``-th draw of an array fits ``budget`` bytes.

    Parameters
    ----------
    chains, draws : int
        Chains and draws per chain of the fit.
    values_per_draw : int
        Values one draw of the array holds.
    itemsize : int, default 4
        Bytes per value.
    budget : int, default LOG_LIKELIHOOD_BYTES
        Bytes the array may take.

    Returns
    -------
    int
        ``k`` in ``1..draws`` (``draws``: one draw per chain, even if that passes ``budget``).

    Examples
    --------
    >>> thin_to_fit(4, 1000, 10_000), thin_to_fit(4, 1000, 100_000)
    (1, 2)
    """
    # ceil(draws / k) draws fit exactly when k >= draws / fit, fit the draws that fit.
    fit = subset_draws(chains, draws, values_per_draw, itemsize=itemsize, budget=budget)
    return -(-max(draws, 1) // fit)


def format_bytes(n: float) -> str:
    """``n`` bytes as a short text (``"1.2 GB"``, decimal units).

    Parameters
    ----------
    n : float
        Bytes.

    Returns
    -------
    str

    Examples
    --------
    >>> format_bytes(3.2e9), format_bytes(512e6), format_bytes(2048)
    ('3.2 GB', '512 MB', '2 kB')
    """
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if unit == "GB" else f"{n / size:.0f} {unit}"
    return f"{int(n)} B"


def check_output_memory(
    outputs: Mapping[str, int],
    *,
    what: str,
    advice: str,
    share: float = MEMORY_SHARE,
    available: int | None = None,
    stacklevel: int = 3,
) -> int:
    """Warn :class:`~pmctx.exceptions.MemoryWarning` when ``outputs`` would not fit comfortably.

    Call it before sampling, with the bytes of every array the fit will keep.

    Parameters
    ----------
    outputs : mapping of str to int
        Bytes per kept array (``{"posterior Z": ..., "log_likelihood": ...}``).
    what : str
        The fit, for the message (``"IBP fit of 10000 trials, 4 x 1000 draws"``).
    advice : str
        What to pass to keep less (the fit's own options).
    share : float, default MEMORY_SHARE
        Share of the available memory above which to warn.
    available : int, optional
        Bytes available; default :func:`available_memory`.
    stacklevel : int, default 3
        Of the warning (3: the caller of the fit that calls this).

    Returns
    -------
    int
        The total bytes.

    Examples
    --------
    >>> check_output_memory({"x": 10}, what="a fit", advice="", available=100)
    10
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}.")
    total = int(sum(outputs.values()))
    available = available_memory() if available is None else int(available)
    if total > share * available:
        largest = sorted(outputs.items(), key=lambda item: -item[1])[:4]
        parts = ", ".join(f"{name} {format_bytes(size)}" for name, size in largest if size)
        warnings.warn(
            f"The outputs of this {what} need about {format_bytes(total)} ({parts}), more than "
            f"{share:.0%} of the {format_bytes(available)} of memory available now; the fit "
            f"may be killed for lack of memory. {advice}",
            MemoryWarning,
            stacklevel=stacklevel,
        )
    return total


class ChainTrace(NDArray):
    """PyMC's ``NDArray`` trace, safe to pass as ``pm.sample(trace=...)`` with several chains.

    ``pm.sample`` records each chain on a shallow copy of the trace it is given, so the
    copies of a plain ``NDArray`` share one dict of arrays and each chain overwrites the
    others' draws; here each copy allocates its own. Built once, it also compiles the
    recording function once for all chains (``pm.sample``'s own traces compile one each).

    Parameters
    ----------
    name : str, optional
        As in PyMC's ``NDArray``.
    model : pm.Model, optional
        The model sampled (default: the one in context).
    vars : list of variables, optional
        What the trace keeps (default: the model's free and deterministic variables).
    test_point : dict, optional
        A point of the model, for the variables' shapes (default: its initial point).
    **kwargs
        Passed to ``NDArray`` (``fn``, ``var_shapes``, ``var_dtypes`` when PyMC slices).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    ...     idata = pm.sample(draws=5, tune=5, chains=2, cores=1, progressbar=False,
    ...                       trace=ChainTrace(model=model), random_seed=0,
    ...                       compute_convergence_checks=False)
    >>> bool((idata.posterior["mu"][0] != idata.posterior["mu"][1]).all())
    True
    """

    def setup(self, draws, chain, sampler_vars=None) -> None:
        """Allocate this chain's arrays (``pm.sample`` calls it on a copy per chain).

        Parameters
        ----------
        draws : int
            Iterations of the chain, tuning included.
        chain : int
            The chain's number.
        sampler_vars : list of dict, optional
            The samplers' statistics and their dtypes.
        """
        self.samples, self._stats = {}, None  # copies must not share the template's arrays
        super().setup(draws, chain, sampler_vars)

    def keep_first(self, n_iterations: int) -> None:
        """Keep only the first ``n_iterations`` (tuning included) when the trace is closed:
        a run sampling until converged stops every chain at the same draw
        (:mod:`pmctx.continuation`).

        Parameters
        ----------
        n_iterations : int
            Iterations to keep; more than recorded keeps all.
        """
        self.draw_idx = min(self.draw_idx, int(n_iterations))


class StoreTrace(ChainTrace):
    """A ``pm.sample`` trace that keeps big variables compactly, after tuning only.

    Variables not named in ``per_draw`` or ``moments`` are kept as PyMC's ``NDArray`` keeps
    them. Pass the instance as ``pm.sample(trace=...)`` (one copy per chain is recorded in the
    main process, also when chains run in parallel), then :meth:`attach` the kept arrays to
    the returned ``InferenceData``.

    Parameters
    ----------
    model : pm.Model
        The model sampled.
    draws : int
        Draws per chain after tuning (``pm.sample``'s ``draws``).
    per_draw : mapping of str to dtype or None, optional
        Variables kept per draw, cast to the dtype (``None``: their own); with ``thin > 1``
        every ``thin``-th draw, in the group ``thinned_group`` instead of ``posterior``.
    moments : iterable of str, optional
        Variables kept only as per-chain running mean and sd (group :data:`MOMENTS_GROUP`).
    thin : int, default 1
        Keep every ``thin``-th draw of the ``per_draw`` variables.
    thinned_group : str, default "posterior_thinned"
        Group of the ``per_draw`` variables when ``thin > 1``.
    drop : iterable of str, optional
        Variables not kept at all (e.g. the transformed copy ``o_circular__`` of a big
        variable kept in ``per_draw``).
    vars : list of variables, optional
        What ``NDArray`` keeps (default: the model's other variables); PyMC passes it when it
        slices a trace.
    **kwargs
        Passed to ``NDArray`` (``fn``, ``var_shapes``, ``var_dtypes`` when PyMC slices).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     z = pm.Bernoulli("z", 0.5, shape=3)
    >>> trace = StoreTrace(model, draws=10, per_draw={"z": "int8"}, thin=5)
    >>> trace.kept_draws
    2
    """

    def __init__(
        self,
        model=None,
        *,
        draws: int | None = None,
        per_draw: Mapping[str, object] | None = None,
        moments: Iterable[str] = (),
        thin: int = 1,
        thinned_group: str = "posterior_thinned",
        drop: Iterable[str] = (),
        vars=None,
        **kwargs,
    ):
        per_draw = dict(per_draw or {})
        moments = list(moments)
        if per_draw or moments:
            if draws is None or int(draws) < 1:
                raise ValueError(f"draws must be a positive integer, got {draws!r}.")
            if int(thin) < 1:
                raise ValueError(f"thin must be a positive integer, got {thin!r}.")
            traced = list(model.unobserved_value_vars)
            names = {v.name for v in traced}
            unknown = sorted((set(per_draw) | set(moments)) - names)
            if unknown:
                raise ValueError(
                    f"StoreTrace: {unknown} are not variables of the model; expected some of "
                    f"{sorted(names)}."
                )
            big = set(per_draw) | set(moments)
            vars = [v for v in traced if v.name not in big | set(drop)]
            self._big = [v for v in traced if v.name in big]
        else:
            self._big = []
        if kwargs.get("test_point") is None and not {"var_shapes", "var_dtypes"} <= kwargs.keys():
            # The shapes from the point pmctx already computed (NDArray would compile its own).
            kwargs["test_point"] = initial_point(modelcontext(model))
        super().__init__(model=model, vars=vars, **kwargs)
        self.per_draw = per_draw
        self.moments = moments
        self.thin = int(thin)
        self.thinned_group = thinned_group
        self.kept_draws = 0 if draws is None else -(-int(draws) // self.thin)
        self._big_fn = None
        self._big_shapes = {}
        if self._big:
            from pymc.pytensorf import compile as compile_fn
            from pytensor import In, Out

            self._big_fn = compile_fn(
                inputs=[In(v, borrow=True) for v in self.model.value_vars],
                outputs=[Out(v, borrow=True) for v in self._big],
                on_unused_input="ignore",
            )
            self._big_fn.trust_input = True
            point = initial_point(self.model)
            self._big_shapes = {
                v.name: np.shape(value)
                for v, value in zip(self._big, self._big_fn(**point), strict=True)
            }
        self._chains = {}  # shared by the per-chain copies pm.sample makes

    def setup(self, draws, chain, sampler_vars=None) -> None:
        """Allocate this chain's arrays (``pm.sample`` calls it on a copy per chain).

        Parameters
        ----------
        draws : int
            Iterations of the chain, tuning included.
        chain : int
            The chain's number.
        sampler_vars : list of dict, optional
            The samplers' statistics and their dtypes.
        """
        super().setup(draws, chain, sampler_vars)
        self._seen = 0
        self._store = {
            name: np.zeros((self.kept_draws, *self._big_shapes[name]), dtype or "float64")
            for name, dtype in self.per_draw.items()
        }
        self._sums = {
            name: np.zeros((2, *self._big_shapes[name]), np.float64) for name in self.moments
        }
        self._snapshots = {}
        if self._big:
            self._chains[chain] = self

    #: Kept-draw counts at which a run sampling until converged may stop
    #: (:mod:`pmctx.continuation` sets them): the running moments are copied there, so that
    #: a chain stopped at one keeps the moments of exactly its first draws.
    checkpoints: tuple = ()

    def keep_first(self, n_iterations: int) -> None:
        """Keep only the first ``n_iterations`` (tuning included), the big variables and
        their moments included (see :meth:`ChainTrace.keep_first`).

        Parameters
        ----------
        n_iterations : int
            Iterations to keep; a stop between checkpoints is refused for moments.
        """
        extra = self.draw_idx - int(n_iterations)
        if extra > 0 and self._big:
            self._seen -= extra
            if self.moments:
                if self._seen not in self._snapshots:
                    raise ValueError(
                        f"StoreTrace keeps running moments only at its checkpoints "
                        f"{self.checkpoints}; cannot stop at {self._seen} draws."
                    )
                self._sums = self._snapshots[self._seen]
        super().keep_first(n_iterations)

    def kept_first(self, n: int) -> tuple[str, dict]:
        """The big per-draw variables of the first ``n`` kept draws, and their group.

        Parameters
        ----------
        n : int
            Kept draws (after tuning).

        Returns
        -------
        tuple of (str, dict of str to numpy.ndarray)
            ``"posterior"`` or the thinned group, and each ``per_draw`` variable's draws
            (every ``thin``-th).
        """
        group = "posterior" if self.thin == 1 else self.thinned_group
        n_kept = min(-(-int(n) // self.thin), self.kept_draws)
        return group, {name: store[:n_kept] for name, store in self._store.items()}

    def __len__(self):
        return self.draw_idx  # NDArray's says 0 when it keeps no variable (every one is big)

    def record(self, point, sampler_stats=None, *, in_warmup: bool) -> None:
        """Record one iteration; the big variables only after tuning.

        Parameters
        ----------
        point : dict
            Values of the model's value variables.
        sampler_stats : list of dict, optional
            The samplers' statistics.
        in_warmup : bool
            Whether the iteration is a tuning one.
        """
        super().record(point, sampler_stats, in_warmup=in_warmup)
        if not self._big or in_warmup:
            return
        values = dict(zip((v.name for v in self._big), self._big_fn(*point.values()), strict=True))
        if self._seen % self.thin == 0 and self._seen // self.thin < self.kept_draws:
            for name, store in self._store.items():
                store[self._seen // self.thin] = values[name]
        for name, sums in self._sums.items():
            value = np.asarray(values[name], dtype=np.float64)
            sums[0] += value
            sums[1] += value * value
        self._seen += 1
        if self._sums and self._seen in self.checkpoints:
            self._snapshots[self._seen] = {k: v.copy() for k, v in self._sums.items()}

    def attach(self, idata):
        """Put the kept arrays into ``idata`` (in place) and return it.

        ``per_draw`` variables go to ``posterior`` (``thin == 1``) or ``thinned_group``,
        moments to :data:`MOMENTS_GROUP`, with the model's dims and coordinates.

        Parameters
        ----------
        idata : xarray.DataTree
            What ``pm.sample`` returned with this trace.

        Returns
        -------
        xarray.DataTree
            ``idata``.
        """
        import xarray as xr

        from pmctx.trees import as_datatree, set_group

        idata = as_datatree(idata)
        if not self._big:
            return idata
        chains = [self._chains[c] for c in sorted(self._chains)]
        n_seen = min(trace._seen for trace in chains)
        # PyMC 6 returns an empty posterior group when this trace records every variable
        empty = "posterior" in idata.children and not idata["posterior"].data_vars
        post = idata["posterior"].to_dataset() if "posterior" in idata.children else None
        post = None if empty else post
        coords = {"chain": np.array(sorted(self._chains)) if post is None else post["chain"].values}
        dims_of = self.model.named_vars_to_dims

        def var_dims(name, shape):
            dims = tuple(dims_of.get(name) or ())
            if len(dims) != len(shape):
                dims = tuple(f"{name}_dim_{i}" for i in range(len(shape)))
            for dim in dims:
                if dim in self.model.coords and self.model.coords[dim] is not None:
                    coords[dim] = np.asarray(self.model.coords[dim])
            return dims

        if self.per_draw:
            n_kept = min(-(-n_seen // self.thin), self.kept_draws)
            data = {}
            for name in self.per_draw:
                dims = var_dims(name, self._big_shapes[name])
                stacked = np.stack([trace._store[name][:n_kept] for trace in chains])
                for trace in chains:  # free each chain's copy as soon as it is stacked
                    trace._store[name] = None
                data[name] = (("chain", "draw", *dims), stacked)
            if self.thin == 1 and post is None:
                attrs = dict(idata["posterior"].attrs) if empty else {}
                set_group(idata, "posterior", xr.Dataset(
                    data, coords={**coords, "draw": np.arange(n_kept)}, attrs=attrs
                ))  # fmt: skip
            elif self.thin == 1 and n_kept == post.sizes["draw"]:
                idata["posterior"] = post.assign(
                    {name: xr.DataArray(v, dims=d, coords=self._coords(coords, d, post))
                     for name, (d, v) in data.items()}
                )  # fmt: skip
            else:
                draw = np.arange(n_kept) * self.thin
                ds = xr.Dataset(data, coords={**coords, "draw": draw})
                ds.attrs["thin"] = self.thin
                set_group(idata, self.thinned_group, ds)
        if self.moments:
            data = {}
            for name in self.moments:
                dims = var_dims(name, self._big_shapes[name])
                sums = np.stack([trace._sums[name] for trace in chains]) / max(n_seen, 1)
                mean = sums[:, 0]
                sd = np.sqrt(np.maximum(sums[:, 1] - mean**2, 0.0))
                data[name] = (("chain", "moment", *dims), np.stack([mean, sd], axis=1))
            ds = xr.Dataset(data, coords={**coords, "moment": ["mean", "sd"]})
            ds.attrs["draws"] = n_seen
            set_group(idata, MOMENTS_GROUP, ds)
        return idata

    @staticmethod
    def _coords(coords, dims, post):
        out = {d: coords[d] for d in dims if d in coords}
        out["draw"] = post["draw"].values
        return out

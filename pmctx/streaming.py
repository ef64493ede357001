"""Draws written to disk as they come, so a fit bigger than memory finishes and reads lazily.

A fit given ``store="fit.zarr"`` (a path ending in ``.zarr``) samples into a
:class:`DiskTrace`: a :class:`pmctx.memory.StoreTrace` whose big variables go, every
``draws_per_chunk`` draws of a chain, into a Zarr store on disk (one chunk per chain and block
of draws) instead of memory. After sampling, :func:`save_groups` writes the other groups
(small posterior variables, sample stats, log-likelihood, posterior predictive, data) into
the same store and reopens every group lazily: the returned :class:`xarray.DataTree` holds
Dask-backed arrays that read their chunks when used, and :func:`open_trace` reopens the
store later (``xr.open_zarr(path, group="posterior")`` reads one group).

PyMC's own ``pymc.backends.zarr.ZarrTrace`` needs Zarr 2 (``zarr.storage.BaseStore``) and a
step method's ``sampling_state``, which pmctx's Gibbs steps do not have; this trace is a plain
``pm.sample`` trace (recorded in the main process, any step method) writing Zarr 3 through
xarray's layout.

Examples
--------
>>> import tempfile, pymc as pm
>>> with pm.Model(coords={"i": range(3)}) as model:
...     x = pm.Normal("x", dims="i")
>>> path = tempfile.mkdtemp() + "/fit.zarr"
>>> trace = DiskTrace(model, path=path, draws=20, chains=1, draws_per_chunk=8)
>>> idata = pm.sample(draws=20, tune=10, chains=1, trace=trace, progressbar=False,
...                   random_seed=0, compute_convergence_checks=False, model=model)
>>> idata = save_groups(trace.attach(idata), path)
>>> type(idata.posterior["x"].data).__name__, idata.posterior["x"].shape
('Array', (1, 20, 3))
"""

# Long because each public piece (the trace, the group writer, the lazy readers, LOO and the
# memory view) carries a numpydoc docstring; the trace and its writer belong together.

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from pymc.backends.ndarray import NDArray

from pmctx.memory import ChainTrace, StoreTrace
from pmctx.points import initial_point
from pmctx.trees import as_datatree, set_group

__all__ = [
    "CHUNK_BYTES",
    "DiskTrace",
    "disk_path",
    "loo",
    "memory_view",
    "open_trace",
    "save_groups",
    "stream_log_likelihood",
]

#: A block of draws of one chain written at once holds about this many bytes per variable.
CHUNK_BYTES = 16 * 2**20
_SUFFIX = ".zarr"


def disk_path(store, choices: Iterable[str]) -> Path | None:
    """The Zarr path ``store`` names, or None when it is one of ``choices``.

    Parameters
    ----------
    store : str or os.PathLike
        A fit's ``store`` argument.
    choices : iterable of str
        Its in-memory choices (``"auto"``, ``"all"``).

    Returns
    -------
    pathlib.Path or None

    Examples
    --------
    >>> disk_path("auto", ("auto", "all")) is None, disk_path("fit.zarr", ("auto",)).name
    (True, 'fit.zarr')
    """
    choices = tuple(choices)
    if isinstance(store, str) and store in choices:
        return None
    if isinstance(store, (str, os.PathLike)) and str(store).endswith(_SUFFIX):
        return Path(store)
    raise ValueError(
        f"store must be one of {choices} or a path ending in {_SUFFIX!r} (draws streamed to "
        f"disk as they come); got {store!r}."
    )


def _dims_and_coords(model, name, shape):
    dims = tuple(model.named_vars_to_dims.get(name) or ())
    if len(dims) != len(shape):
        dims = tuple(f"{name}_dim_{i}" for i in range(len(shape)))
    coords = {}
    for dim, size in zip(dims, shape, strict=True):
        values = model.coords.get(dim) if dim in model.coords else None
        coords[dim] = np.arange(size) if values is None else np.asarray(values)
    return dims, coords


class DiskTrace(StoreTrace):
    """A ``pm.sample`` trace writing the ``per_draw`` variables to a Zarr store as it goes.

    The variables are recorded after tuning, every ``thin``-th draw, in their dtype, and
    written per chain in blocks of ``draws_per_chunk`` draws (memory: one block per chain);
    other variables stay in memory as PyMC keeps them. :meth:`attach` puts the written ones,
    opened lazily, into the results tree; :func:`save_groups` writes the rest.

    Parameters
    ----------
    model : pm.Model
        The model sampled.
    path : str or os.PathLike
        The Zarr store (a directory, replaced).
    draws, chains : int
        Draws per chain after tuning and chains (``pm.sample``'s).
    per_draw : mapping of str to dtype or None, optional
        Variables written to disk, with their dtype (``None``: their own); default: every
        variable of the model not in ``drop``, in its own dtype.
    thin : int, default 1
        Write every ``thin``-th draw (to group ``thinned_group`` when above 1).
    draws_per_chunk : int, optional
        Draws per block; default: as many as keep a block of the biggest variable under
        :data:`CHUNK_BYTES`.
    drop : iterable of str, optional
        Variables not kept at all.
    thinned_group : str, default "posterior_thinned"
        Group of the written variables when ``thin > 1``.
    vars : list of variables, optional
        What PyMC passes when it slices a trace (then ``path`` is None: an in-memory trace).
    **kwargs
        Passed to :class:`pmctx.memory.StoreTrace`.

    Examples
    --------
    >>> import tempfile, pymc as pm
    >>> with pm.Model() as model:
    ...     z = pm.Bernoulli("z", 0.5, shape=4)
    >>> trace = DiskTrace(model, path=tempfile.mkdtemp() + "/t.zarr", draws=10, chains=2,
    ...                   per_draw={"z": "int8"})
    >>> trace.draws_per_chunk
    10
    """

    def __init__(
        self,
        model=None,
        *,
        path=None,
        draws: int | None = None,
        chains: int | None = None,
        per_draw: Mapping[str, object] | None = None,
        thin: int = 1,
        draws_per_chunk: int | None = None,
        drop: Iterable[str] = (),
        thinned_group: str = "posterior_thinned",
        vars=None,
        **kwargs,
    ):
        if path is None:  # PyMC slicing a trace: a plain in-memory one
            super().__init__(model, vars=vars, **kwargs)
            return
        drop = list(drop)
        if per_draw is None:
            per_draw = {v.name: None for v in model.unobserved_value_vars if v.name not in drop}
        if chains is None or int(chains) < 1:
            raise ValueError(f"chains must be a positive integer, got {chains!r}.")
        super().__init__(model, draws=draws, per_draw=per_draw, thin=thin, drop=drop,
                         thinned_group=thinned_group, **kwargs)  # fmt: skip
        self.path = Path(path)
        self.group = "posterior" if self.thin == 1 else thinned_group
        dtypes = {
            name: np.dtype(dtype or np.asarray(value).dtype)
            for (name, dtype), value in zip(
                per_draw.items(), self._initial_values(per_draw), strict=True
            )
        }
        self._dtypes = dtypes
        biggest = max(
            (int(np.prod(self._big_shapes[n])) * dtypes[n].itemsize for n in per_draw), default=1
        )
        if draws_per_chunk is None:
            draws_per_chunk = max(1, CHUNK_BYTES // max(biggest, 1))
        self.draws_per_chunk = int(max(1, min(int(draws_per_chunk), self.kept_draws)))
        self._create_store(int(chains))

    def _initial_values(self, per_draw):
        point = initial_point(self.model)
        values = dict(zip((v.name for v in self._big), self._big_fn(**point), strict=True))
        return [values[name] for name in per_draw]

    def _create_store(self, chains: int) -> None:
        import dask.array as da
        import xarray as xr

        coords = {"chain": np.arange(chains), "draw": np.arange(self.kept_draws) * self.thin}
        data = {}
        for name in self.per_draw:
            shape = self._big_shapes[name]
            dims, var_coords = _dims_and_coords(self.model, name, shape)
            coords.update(var_coords)
            full = (chains, self.kept_draws, *shape)
            chunks = (1, self.draws_per_chunk, *shape)
            data[name] = (
                ("chain", "draw", *dims),
                da.zeros(full, dtype=self._dtypes[name], chunks=chunks),
            )
        ds = xr.Dataset(data, coords=coords)
        if self.thin > 1:
            ds.attrs["thin"] = self.thin
        ds.to_zarr(self.path, group=self.group, mode="w", compute=False, consolidated=False)

    def setup(self, draws, chain, sampler_vars=None) -> None:
        """Open this chain's arrays and its block buffer (``pm.sample`` calls it per chain).

        Parameters
        ----------
        draws : int
            Iterations of the chain, tuning included.
        chain : int
            The chain's number.
        sampler_vars : list of dict, optional
            The samplers' statistics and their dtypes.
        """
        import zarr

        # ChainTrace's per-copy arrays, not StoreTrace's in-memory store: this one is on disk.
        ChainTrace.setup(self, draws, chain, sampler_vars)
        self._seen = self._filled = self._written = 0
        self._store, self._sums = {}, {}
        self._buffer = {
            name: np.empty((self.draws_per_chunk, *self._big_shapes[name]), self._dtypes[name])
            for name in self.per_draw
        }
        self._arrays = {
            name: zarr.open_array(self.path, path=f"{self.group}/{name}", mode="r+")
            for name in self.per_draw
        }
        self._chains[chain] = self

    def record(self, point, sampler_stats=None, *, in_warmup: bool) -> None:
        """Record one iteration; the written variables after tuning, one block at a time.

        Parameters
        ----------
        point : dict
            Values of the model's value variables.
        sampler_stats : list of dict, optional
            The samplers' statistics.
        in_warmup : bool
            Whether the iteration is a tuning one.
        """
        NDArray.record(self, point, sampler_stats, in_warmup=in_warmup)
        if in_warmup:
            return
        if self._seen % self.thin == 0 and self._seen // self.thin < self.kept_draws:
            values = self._big_fn(*point.values())
            for v, value in zip(self._big, values, strict=True):
                self._buffer[v.name][self._filled] = value
            self._filled += 1
            if self._filled == self.draws_per_chunk:
                self.flush()
        self._seen += 1

    def flush(self) -> None:
        """Write the buffered draws of this chain."""
        if not self._filled:
            return
        rows = slice(self._written, self._written + self._filled)
        for name, array in self._arrays.items():
            array[self.chain, rows] = self._buffer[name][: self._filled]
        self._written += self._filled
        self._filled = 0

    def close(self) -> None:
        """Write what is left (``pm.sample`` calls it when a chain ends)."""
        self.flush()

    def attach(self, idata):
        """Put the written variables, opened lazily, into ``idata`` (in place) and return it.

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

        for trace in self._chains.values():
            trace.flush()
        n_kept = min(trace._written for trace in self._chains.values())
        disk = xr.open_zarr(self.path, group=self.group, consolidated=False)
        disk = disk.isel(draw=slice(0, n_kept))
        idata = as_datatree(idata)
        post = _posterior_or_none(idata)
        if self.thin == 1 and post is not None and post.sizes["draw"] == n_kept:
            disk = disk.assign_coords(draw=post["draw"].values, chain=post["chain"].values)
            merged = post.assign({name: disk[name] for name in disk.data_vars})
            merged.attrs = dict(post.attrs)
            idata["posterior"] = merged
        else:
            if self.thin == 1 and "posterior" in idata.children:  # PyMC 6: an empty posterior
                disk.attrs = {**idata["posterior"].attrs, **disk.attrs}
            set_group(idata, "posterior" if self.thin == 1 else self.group, disk)
        return idata


def _posterior_or_none(idata):
    """The posterior as a Dataset; None when there is none or it is empty (PyMC 6 returns an
    empty posterior group when a trace records every variable itself)."""
    if "posterior" not in idata.children or not idata["posterior"].data_vars:
        return None
    return idata["posterior"].to_dataset()


def save_groups(idata, path):
    """Write every group of ``idata`` into the Zarr store at ``path`` (the variables a
    :class:`DiskTrace` wrote are kept there) and reopen them all lazily, in place.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit whose streamed variables live in ``path``.
    path : str or os.PathLike
        The store.

    Returns
    -------
    xarray.DataTree
        ``idata``, every group now read from ``path`` (Dask-backed).
    """
    import xarray as xr

    idata = as_datatree(idata)
    path = Path(path)
    on_disk = _groups_on_disk(path)
    for name in list(idata.children):
        ds = idata[name].to_dataset()
        written = {v for v in ds.data_vars if _is_lazy(ds[v])}
        rest = ds.drop_vars(written)
        if name in on_disk and written:
            rest = rest.drop_vars([c for c in rest.coords if c in rest.indexes])
            rest.to_zarr(path, group=name, mode="a", consolidated=False)
        else:
            ds.to_zarr(path, group=name, mode="w", consolidated=False)
        opened = xr.open_zarr(path, group=name, consolidated=False)
        opened.attrs = dict(ds.attrs)
        set_group(idata, name, opened)
    return idata


def _is_lazy(array) -> bool:
    return not isinstance(array.variable._data, np.ndarray) and array.chunks is not None


def _groups_on_disk(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {p.name for p in path.iterdir() if p.is_dir()}


def open_trace(path):
    """A fit streamed to ``path``, every group opened lazily (Dask-backed).

    Parameters
    ----------
    path : str or os.PathLike
        The Zarr store of a fit run with ``store="....zarr"``.

    Returns
    -------
    xarray.DataTree
    """
    import xarray as xr

    path = Path(path)
    if not (path / "zarr.json").exists():
        raise FileNotFoundError(
            f"{str(path)!r} is not a Zarr store of a fit; expected the path given as store= "
            "to a fit (a directory holding zarr.json)."
        )
    groups = {
        name: xr.open_zarr(path, group=name, consolidated=False)
        for name in sorted(_groups_on_disk(path))
    }
    return xr.DataTree.from_dict(groups)


def stream_log_likelihood(idata, model, path, *, var_names=None, dtype="float32",
                          block_bytes: int = CHUNK_BYTES * 16) -> None:  # fmt: skip
    """Compute the pointwise log-likelihood block by block of draws and write it to
    ``path`` (group ``log_likelihood``), never holding more than one block in memory.

    Parameters
    ----------
    idata : xarray.DataTree
        The fit (its posterior may be lazy); its ``log_likelihood`` group is set, lazily.
    model : pm.Model
        The model sampled.
    path : str or os.PathLike
        The fit's Zarr store.
    var_names : list of str, optional
        Observed variables (default: all).
    dtype : dtype, default "float32"
        Of the stored values.
    block_bytes : int, default 256 MiB
        Posterior values loaded per block.
    """
    import pymc as pm
    import xarray as xr
    import zarr

    post = idata["posterior"].to_dataset()
    per_draw = sum(int(np.prod(post[v].shape[2:])) * post[v].dtype.itemsize for v in post.data_vars)
    step = int(max(1, min(post.sizes["draw"], block_bytes // max(per_draw, 1))))
    arrays, first = {}, True
    for chain in range(post.sizes["chain"]):
        for start in range(0, post.sizes["draw"], step):
            block = post.isel(chain=[chain], draw=slice(start, start + step)).load()
            block = block.assign(
                {
                    v: block[v].astype("float64")
                    for v in block.data_vars
                    if block[v].dtype.kind == "f"
                }
            )  # PyMC's log-likelihood function takes the model's float64 values
            ll = pm.compute_log_likelihood(xr.DataTree.from_dict({"posterior": block}), model=model,
                                           var_names=var_names, extend_inferencedata=False,
                                           progressbar=False)  # fmt: skip
            if first:
                template = xr.Dataset(
                    {
                        name: ll[name]
                        .isel(draw=0, chain=0, drop=True)
                        .astype(dtype)
                        .expand_dims(chain=post["chain"].values, draw=post["draw"].values)
                        .chunk({"chain": 1, "draw": step})
                        for name in ll.data_vars
                    }
                )
                template.to_zarr(path, group="log_likelihood", mode="w", compute=False,
                                 consolidated=False)  # fmt: skip
                arrays = {
                    name: zarr.open_array(path, path=f"log_likelihood/{name}", mode="r+")
                    for name in ll.data_vars
                }
                first = False
            for name, array in arrays.items():
                array[chain, start : start + step] = ll[name].values[0].astype(dtype)
    set_group(idata, "log_likelihood",
              xr.open_zarr(path, group="log_likelihood", consolidated=False))  # fmt: skip


def memory_view(idata, *, budget: int | None = None):
    """``posterior`` and ``sample_stats`` of ``idata`` at evenly spaced draws whose posterior
    fits ``budget`` bytes, loaded in memory (every draw when it all fits): what convergence
    checks of a fit streamed to disk read.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit, possibly lazy.
    budget : int, optional
        Bytes; default :data:`pmctx.memory.PER_DRAW_BYTES`.

    Returns
    -------
    xarray.DataTree
    """

    import xarray as xr

    from pmctx.memory import PER_DRAW_BYTES, even_draws, subset_draws

    idata = as_datatree(idata)
    post = idata["posterior"].to_dataset()
    per_draw = sum(int(np.prod(post[v].shape[2:])) * post[v].dtype.itemsize for v in post.data_vars)
    n_draw = post.sizes["draw"]
    keep = subset_draws(post.sizes["chain"], n_draw, per_draw, itemsize=1,
                        budget=PER_DRAW_BYTES if budget is None else budget)  # fmt: skip
    index = even_draws(n_draw, keep)
    groups = {"posterior": post.isel(draw=index).load()}
    if "sample_stats" in idata.children:
        stats = idata["sample_stats"].to_dataset()
        groups["sample_stats"] = stats.isel(draw=index).load() if len(index) < n_draw else stats
    view = xr.DataTree.from_dict(groups)
    view["posterior"].attrs["draws_of_posterior"] = "every draw" if keep == n_draw else "a subset"
    return view


def loo(idata, *, block_bytes: int | None = None, **kwargs):
    """``az.loo`` of a fit read lazily from disk (``az.loo`` itself refuses Dask arrays) or of
    a big one in memory, by blocks of observations.

    The relative efficiency comes from the posterior at the draws :func:`memory_view` loads.
    PSIS smooths each observation on its own, so ``az.loo`` of blocks of observations with
    that efficiency gives the same pointwise values as of all at once; ``az.loo`` copies the
    whole pointwise log-likelihood in float64 several times (a 100,000-row GUM fit at 2,000
    draws: 2.7 GiB peak), a block holds at most ``block_bytes`` of it.

    Parameters
    ----------
    idata : xarray.DataTree
        A fit streamed to disk (or any fit).
    block_bytes : int, optional
        Bytes of float64 log-likelihood per block; default
        :data:`pmctx.memory.PREDICTIVE_BYTES` (64 MiB).
    **kwargs
        Passed to :func:`arviz.loo` (``pointwise``, ``var_name``, ``reff``).

    Returns
    -------
    arviz.ELPDDataLOO
        As :func:`arviz.loo` returns (without ``log_weights`` when computed by blocks: they
        are as big as the log-likelihood).

    Examples
    --------
    >>> import arviz as az
    >>> rng = np.random.default_rng(0)
    >>> fit = az.from_dict({"posterior": {"mu": rng.normal(size=(2, 100))},
    ...                    "log_likelihood": {"y": rng.normal(-1, 0.1, (2, 100, 30))}})
    >>> bool(np.isclose(loo(fit, block_bytes=8 * 200 * 7).elpd, az.loo(fit).elpd))
    True
    """
    import warnings

    import arviz as az
    import xarray as xr

    from pmctx.memory import PREDICTIVE_BYTES

    idata = as_datatree(idata)
    if "reff" not in kwargs:
        view = memory_view(idata)
        post = view["posterior"].to_dataset()
        n_samples = post.sizes["chain"] * post.sizes["draw"]
        if post.sizes["chain"] == 1:  # as az.loo: no between-chain ESS from one chain
            kwargs["reff"] = 1.0
        else:
            ess = az.ess(post, method="mean")
            kwargs["reff"] = float(
                np.hstack([ess[v].values.ravel() for v in ess.data_vars]).mean() / n_samples
            )
    group = idata["log_likelihood"].to_dataset()
    name = kwargs.pop("var_name", None)
    if name is None and len(group.data_vars) == 1:
        name = next(iter(group.data_vars))
    if name is None:  # az.loo says which variables there are
        return az.loo(xr.DataTree.from_dict({"log_likelihood": group.load()}), **kwargs)
    ll = group[name]
    obs_dims = [d for d in ll.dims if d not in ("chain", "draw")]
    samples = ll.sizes["chain"] * ll.sizes["draw"]
    budget = PREDICTIVE_BYTES if block_bytes is None else int(block_bytes)
    if not obs_dims or samples * 8 * int(np.prod(ll.shape[2:])) <= budget:
        data = xr.DataTree.from_dict({"log_likelihood": xr.Dataset({name: ll.load()})})
        return az.loo(data, var_name=name, **kwargs)
    dim = obs_dims[0]
    per_row = samples * 8 * int(np.prod(ll.shape[2:])) // ll.sizes[dim]
    step = max(1, budget // max(per_row, 1))
    pointwise = kwargs.pop("pointwise", None)
    if pointwise is None:
        pointwise = az.rcParams["stats.ic_pointwise"]
    parts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for start in range(0, ll.sizes[dim], step):
            block = ll.isel({dim: slice(start, start + step)}).load()
            data = xr.DataTree.from_dict({"log_likelihood": xr.Dataset({name: block})})
            parts.append(az.loo(data, var_name=name, pointwise=True, **kwargs))
    for message in {str(w.message): w for w in caught}.values():
        warnings.warn(message.message, message.category, stacklevel=2)
    elpd_i = xr.concat([part.elpd_i for part in parts], dim=dim)
    n_data = int(elpd_i.size)
    values = elpd_i.values.ravel()
    return az.ELPDDataLOO(
        elpd=float(values.sum()),
        # as az.loo: sqrt(n var(elpd_i)), with ddof=1
        se=float(np.sqrt(n_data * np.var(values, ddof=1))) if n_data > 1 else 0.0,
        p=float(sum(part.p for part in parts)),
        n_samples=parts[0].n_samples,
        n_data_points=n_data,
        scale=parts[0].scale,
        warning=any(bool(part.warning) for part in parts),
        good_k=parts[0].good_k,
        elpd_i=elpd_i if pointwise else None,
        pareto_k=xr.concat([part.pareto_k for part in parts], dim=dim) if pointwise else None,
    )

"""A tiny conjugate model for trying the batch engine (and for its tests).

``y_i ~ Normal(mu, sigma)`` with known ``sigma`` and ``mu ~ Normal(0, prior_sd)``: the
posterior is Normal in closed form, so ``normal_mean_fit`` returns exact independent draws
in milliseconds, without compiling a PyMC model. It follows the ``fit_unit`` contract of
:func:`pmctx.batch.run_batch`.

Examples
--------
>>> idata = normal_mean_fit({"y": [0.5, 1.5]}, random_seed=1, draws=5)
>>> idata.posterior["mu"].shape
(1, 5)
"""

from __future__ import annotations

import os
import time

import numpy as np

from pmctx.validation import as_float_array, check_positive

__all__ = ["normal_mean_fit", "normal_mean_simulate"]


def normal_mean_simulate(
    random_seed=None, *, n: int = 10, sigma: float = 1.0, prior_sd: float = 1.0
):
    """A prior draw of ``mu`` and ``n`` observations: ``(data, truth)``, as for SBC.

    Parameters
    ----------
    random_seed : int or numpy.random.Generator, optional
        Random seed or generator.
    n : int, default 10
        Observations.
    sigma : float, default 1.0
        Observation sd.
    prior_sd : float, default 1.0
        Prior sd of ``mu``.

    Returns
    -------
    data : dict
        ``{"y": observations}``.
    truth : dict
        ``{"mu": value}``.

    Examples
    --------
    >>> data, truth = normal_mean_simulate(0, n=5)
    >>> data["y"].shape, sorted(truth)
    ((5,), ['mu'])
    """
    rng = np.random.default_rng(random_seed)
    mu = rng.normal(0.0, prior_sd)
    return {"y": rng.normal(mu, sigma, n)}, {"mu": mu}


def normal_mean_fit(
    data: dict,
    *,
    random_seed=None,
    draws: int = 200,
    sigma: float = 1.0,
    prior_sd: float = 1.0,
    bias: float = 0.0,
    delay: float = 0.0,
    fail_on: str | None = None,
    crash_on: str | None = None,
):
    """Exact posterior draws of ``mu`` as a DataTree (with a ``log_likelihood`` group).

    ``bias`` shifts the draws (a deliberately wrong sampler, for SBC tests); ``delay`` sleeps
    that many seconds (to imitate a slow fit); ``fail_on``/``crash_on`` raise or kill the
    worker process when ``data["name"]`` equals them (for failure tests). A unit whose data
    hold a file path under ``"hold"`` waits (at most two minutes) until that file exists, so
    that a test can pause units while it kills and replaces a worker.

    Parameters
    ----------
    data : dict
        ``y`` (and optionally ``name`` and ``hold``).
    random_seed : int, optional
        Seed of the draws.
    draws : int, default 200
        Posterior draws.
    sigma : float, default 1.0
        Known observation sd.
    prior_sd : float, default 1.0
        Prior sd of ``mu``.
    bias : float, default 0.0
        Shift of the draws (a broken sampler).
    delay : float, default 0.0
        Seconds to sleep.
    fail_on, crash_on : str, optional
        Unit name on which to raise, or to kill the worker.

    Returns
    -------
    xarray.DataTree
        Posterior ``mu`` (one chain), ``log_likelihood`` and ``observed_data``.

    Examples
    --------
    >>> idata = normal_mean_fit({"y": [0.2, 0.4]}, random_seed=0, draws=50)
    >>> idata.posterior["mu"].shape, "log_likelihood" in idata.children
    ((1, 50), True)
    """
    name = str(data.get("name", ""))
    hold = data.get("hold")
    if hold:
        deadline = time.monotonic() + 120.0
        while not os.path.exists(str(hold)) and time.monotonic() < deadline:
            time.sleep(0.05)
    if fail_on is not None and name == fail_on:
        raise RuntimeError(f"unit {name} fails on purpose")
    if crash_on is not None and name == crash_on:
        os._exit(1)
    if delay:
        time.sleep(float(delay))
    y = as_float_array(data["y"], "y", ndim=1)
    sigma = check_positive(sigma, "sigma")
    prior_sd = check_positive(prior_sd, "prior_sd")
    precision = 1.0 / prior_sd**2 + y.size / sigma**2
    mean = y.sum() / sigma**2 / precision
    rng = np.random.default_rng(random_seed)
    mu = mean + bias + rng.normal(size=(1, int(draws))) / np.sqrt(precision)
    loglik = -0.5 * np.log(2 * np.pi * sigma**2) - 0.5 * ((y - mu[..., None]) / sigma) ** 2
    import arviz as az  # not pmctx.io: workers running only this model skip importing PyMC

    return az.from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": loglik}, "observed_data": {"y": y}},
        dims={"y": ["obs"]},
    )

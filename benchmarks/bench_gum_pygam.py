"""Held-out log predictive density: pmctx GUM against pyGAM on seed 002 section 3.1 data.

One data set of seed 002 section 3.1 (Poisson, ``rho = f1(x1) f2(x2) + f3(x3)``, seed 2002)
is cut into 5 disjoint training windows of 500 rows and one held-out set of 2,000 rows
(quick: 2 windows of 200, 500 held out). Each model is fitted on each window and scored on
the same held-out rows by the log predictive density per observation,
``mean_i log p(y*_i | training window)``:

* ``gum_laplace`` -- ``section_3_1_formula(max_points=32)`` (SE, periodic, SE kernels),
  lengthscales fitted by the Laplace evidence (:func:`pmctx.gum.hyper.fit_evidence`), scored
  with 1000 Laplace draws through the exact prediction (:func:`pmctx.gum.heldout.held_out_lpd`);
* ``gum_nuts`` (not in quick mode) -- the same model at the evidence-fitted hyperparameters,
  NUTS 2 chains x 500 draws (+500 tune), scored with its draws;
* ``pygam_te_s`` -- ``PoissonGAM(te(x1, x2) + s(x3))``, every smoothing parameter (the two
  marginal penalties of ``te`` and the one of ``s``) tuned separately by pyGAM's
  ``gridsearch`` (UBRE) over ``logspace(-3, 3, 7)`` each (343 fits; quick: 5 values);
* ``pygam_s_s_s`` -- the additive ``s(x1) + s(x2) + s(x3)``, tuned the same way;
* ``true_predictor`` -- the generating ``rho``: the ceiling.

pyGAM's score is the plug-in density at its fitted mean (it has no posterior draws); the
GUM's averages the density over posterior draws. Rows per window, then per variant the mean
over windows, its standard error, and the paired difference to ``gum_laplace`` (``notes``;
also as fields ``lpd_per_obs``, ``se``, ``diff_vs_gum_laplace``, ``diff_se``, ``gum_ahead``).

pyGAM is an optional benchmark dependency (``pip install 'pmctx[bench]'``); without it the
pyGAM rows are replaced by one row saying so and the GUM rows still run.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy.stats import poisson

from pmctx.gum import gum
from pmctx.gum.heldout import held_out_lpd
from pmctx.gum.hyper import fit_evidence
from pmctx.gum.synthetic import TRUE_FUNCTIONS, section_3_1_formula, seed_section_3_1

BENCHMARK = "gum_pygam"
REFERENCE = "gum_laplace"
SKIP_MESSAGE = "skipped: pygam is not installed (pip install 'pmctx[bench]')"


def load_pygam():
    """The ``pygam`` module, or None when the optional benchmark extra is not installed."""
    try:
        import pygam
    except ImportError:
        return None
    return pygam


def _row(variant, size, seconds, *, notes="", **extra):
    return {
        "benchmark": BENCHMARK,
        "variant": variant,
        "size": size,
        "seconds_per_sweep": seconds,
        "sweeps_per_s": None,
        "ess_per_s": None,
        "baseline": None if variant == REFERENCE else REFERENCE,
        "ratio_vs_baseline": None,
        "notes": notes,
        **extra,
    }


def skip_row(size: str) -> dict:
    """The row that stands for the pyGAM variants when pygam is absent."""
    return _row("pygam", size, None, notes=SKIP_MESSAGE, skipped=True)


def split(quick: bool):
    """Training windows and the held-out rows (see the module doc)."""
    n_windows, n_train, n_test = (2, 200, 500) if quick else (5, 500, 2000)
    data = seed_section_3_1(n_windows * n_train + n_test, random_seed=2002)
    test = {key: value[-n_test:] for key, value in data.items()}
    windows = [
        {key: value[k * n_train : (k + 1) * n_train] for key, value in data.items()}
        for k in range(n_windows)
    ]
    return windows, test


def _matrix(data) -> np.ndarray:
    return np.column_stack([data["x1"], data["x2"], data["x3"]])


def _true_lpd(test) -> float:
    rho = TRUE_FUNCTIONS["f_x1"](test["x1"]) * TRUE_FUNCTIONS["f_x2"](test["x2"])
    rho = rho + TRUE_FUNCTIONS["f_x3"](test["x3"])
    return float(poisson.logpmf(test["y"], np.exp(rho)).mean())


def _gum_fits(train, test, *, nuts: bool, seed: int) -> dict:
    out = {}
    start = time.perf_counter()
    g = gum(section_3_1_formula(max_points=32), train, family="poisson")
    fit_evidence(g)
    lpd = float(held_out_lpd(g, test, draws=1000, random_seed=seed).mean())
    out["gum_laplace"] = (lpd, time.perf_counter() - start)
    if nuts:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = g.sample(
                draws=500, tune=500, chains=2, cores=1, random_seed=seed, progressbar=False
            )
        lpd = float(held_out_lpd(g, test, idata, random_seed=seed).mean())
        out["gum_nuts"] = (lpd, time.perf_counter() - start)
    return out


def _pygam_fits(pygam, train, test, *, quick: bool) -> dict:
    grid = np.logspace(-3, 3, 5 if quick else 7)
    X, y, X_test = _matrix(train), train["y"], _matrix(test)
    terms = {
        "pygam_te_s": (pygam.te(0, 1) + pygam.s(2), 3),
        "pygam_s_s_s": (pygam.s(0) + pygam.s(1) + pygam.s(2), 3),
    }
    out = {}
    for variant, (term, n_penalties) in terms.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = pygam.PoissonGAM(term).gridsearch(
                X, y, lam=[grid] * n_penalties, progress=False
            )
        mu = model.predict_mu(X_test)
        lpd = float(poisson.logpmf(test["y"], mu).mean())
        out[variant] = (lpd, time.perf_counter() - start)
    return out


def summarize(per_window: dict, size: str) -> list[dict]:
    """Mean, standard error and paired difference to ``gum_laplace`` of every variant."""
    rows = []
    reference = np.array(per_window[REFERENCE])
    for variant, values in per_window.items():
        values = np.asarray(values)
        se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else None
        diff = values - reference
        diff_se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else None
        ahead = int(np.sum(reference > values)) if variant != REFERENCE else None
        notes = f"mean lpd/obs {values.mean():.4f} (se {se if se is None else f'{se:.4f}'})"
        if variant != REFERENCE:
            notes += f"; vs gum_laplace {diff.mean():+.4f}; gum ahead in {ahead}/{len(values)}"
        rows.append(
            _row(
                variant,
                size,
                None,
                notes=notes,
                window="mean",
                lpd_per_obs=float(values.mean()),
                se=se,
                diff_vs_gum_laplace=float(diff.mean()),
                diff_se=diff_se,
                gum_ahead=ahead,
            )
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    """Per-window and summary rows (see the module doc)."""
    pygam = load_pygam()
    windows, test = split(quick)
    size = f"N={len(windows[0]['y'])} x {len(windows)} windows, {len(test['y'])} held out"
    rows, per_window = [], {}
    truth = _true_lpd(test)
    for k, train in enumerate(windows):
        scores = _gum_fits(train, test, nuts=not quick, seed=k)
        if pygam is not None:
            scores.update(_pygam_fits(pygam, train, test, quick=quick))
        scores["true_predictor"] = (truth, 0.0)
        for variant, (lpd, seconds) in scores.items():
            per_window.setdefault(variant, []).append(lpd)
            rows.append(
                _row(
                    variant,
                    size,
                    seconds,
                    notes=f"window {k}: lpd/obs {lpd:.4f}",
                    window=k,
                    lpd_per_obs=lpd,
                )
            )
    rows += summarize(per_window, size)
    if pygam is None:
        print(SKIP_MESSAGE)
        rows.append(skip_row(size))
    return rows

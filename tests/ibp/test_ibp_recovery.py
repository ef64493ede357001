"""Recovery at the package defaults (pm.sample's tune=1000, draws=1000, chains=4).

Synthetic data of the kind in issue 10 (6x6 bar cues, 2-D forces) from three generators
(different number of features, trials and noise). Nothing is set but the data and the seed:
the hyperparameters are learned, the moves are the defaults.

What is checked, per generator:
* convergence: R-hat of ``n_active`` < 1.05, and the four chains agree on the distribution:
  their ``P(n_active = K)`` differ by at most 0.1;
* in every chain the most frequent number of features owned by at least two trials
  (``n_active - n_singletons``) is the true K;
* the chains from the default start (``Z = 0``) sample the same ``P(n_active = K)`` as two
  chains started at the true ``Z, A, Y`` (within 0.15): no shared trap;
* ``Z`` and ``Y`` recovered: the posterior mean of the aligned ``Z`` (``Y``) rounds to the
  truth in >= 98% (>= 97%) of the entries.

Not checked: issue 10's ``P(n_active = K) >= 0.9`` in every chain. The *posterior* under the
default priors keeps an extra feature 20-50% of the time, mostly owned by a single trial
whose few spontaneous pixels or outlying force it explains (the IBP expects ``alpha``
features owned by one trial). Chains of 10,000 sweeps started at the truth and at the
default start agree on the fraction (0.75-0.77 on the first generator, 0.49-0.60 on the
third), so the shortfall is the target's, not the sampler's: see
docs/guides/ibp_defaults.md.
"""

import warnings

import arviz as az
import numpy as np
import pytest
from pmctx.models.ibp import build_model, sample

from pmctx.ibp.conditionals import noisy_or_log_p
from pmctx.ibp.data import BAR_FORCES, bar_images
from pmctx.ibp.diagnostics import align_features
from pmctx.sampling import run_sampler
from pmctx.steps.ibp_gibbs import IBPAlphaGibbs, IBPGibbs, IBPHyperGibbs

GENERATORS = [  # (N trials, K true features, force noise sigma_n, seed)
    (100, 4, 0.3, 0),
    (60, 3, 0.2, 1),
    (150, 4, 0.5, 2),
]


def generate(n, k, sigma, seed, lam=0.9, eps=0.05, p_own=0.4):
    rng = np.random.default_rng(seed)
    Y, A = bar_images(6)[:k], BAR_FORCES[:k]
    Z = (rng.random((n, k)) < p_own).astype(np.int64)
    F = Z @ A + sigma * rng.normal(size=(n, 2))
    log_q, _ = noisy_or_log_p(Z @ Y, lam, eps)
    X = (rng.random(log_q.shape) >= np.exp(log_q)).astype(np.int64)
    return F, X, Z, Y


def _p_k_from_truth(F, X, Z, Y, seed, k_max=10):
    """P(n_active = K) over 2 chains started at the true Z, A, Y (same priors and moves)."""
    k = Z.shape[1]
    model = build_model(F, X, K_max=k_max, reconstructions=False)
    truth = {
        "Z": np.pad(Z, ((0, 0), (0, k_max - k))),
        "A": np.pad(BAR_FORCES[:k], ((0, k_max - k), (0, 0))),
        "Y": np.pad(Y, ((0, k_max - k), (0, 0))),
    }
    with model:
        steps = [IBPGibbs(), IBPAlphaGibbs(), IBPHyperGibbs()]
    idata = run_sampler(model, step=steps, draws=1000, tune=200, chains=2, cores=1,
                        random_seed=seed + 1000, progressbar=False, initvals=truth,
                        idata_kwargs={"log_likelihood": False})  # fmt: skip
    return float((idata.posterior["n_active"].values == k).mean())


@pytest.mark.slow
@pytest.mark.parametrize("n, k, sigma, seed", GENERATORS)
def test_recovery_at_the_package_defaults(n, k, sigma, seed):
    F, X, Z, Y = generate(n, k, sigma, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTensor's BLAS notice, not pmctx's
        idata = sample(F, X, K_max=10, draws=1000, tune=1000, chains=4, random_seed=seed,
                       reconstructions=False)  # fmt: skip
    n_active = idata.posterior["n_active"].values
    n_shared = n_active - idata.sample_stats["n_singletons"].values
    rhat = float(az.rhat(idata, var_names=["n_active"])["n_active"])
    assert rhat < 1.05, rhat
    p_k = (n_active == k).mean(axis=1)
    assert np.ptp(p_k) <= 0.1, p_k
    modes = [np.bincount(chain).argmax() for chain in n_shared]
    assert modes == [k] * len(modes), modes
    # The default start reaches the posterior that chains started at the truth sample: their
    # P(n_active = K) agree (a shared trap far from the truth would show here). Tolerance:
    # at P ~ 0.5 the difference has a standard error of ~0.05 with these chain lengths.
    p_truth = _p_k_from_truth(F, X, Z, Y, seed)
    assert abs(p_k.mean() - p_truth) <= 0.15, (p_k, p_truth)
    aligned = align_features(idata, reference=Z)
    z_hat = aligned["Z"].mean(axis=(0, 1)).round()
    y_hat = aligned["Y"].mean(axis=(0, 1)).round()
    print(f"Z entries right {(z_hat == Z).mean():.3f}, Y entries right {(y_hat == Y).mean():.3f}")
    assert (z_hat == Z).mean() >= 0.98, (z_hat == Z).mean()
    assert (y_hat == Y).mean() >= 0.97, (y_hat == Y).mean()

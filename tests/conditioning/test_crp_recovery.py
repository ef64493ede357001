"""Parameter and variant recovery of the per-subject fits on simulated subjects (slow).

Settings are smaller than the defaults (fewer starts and filter runs) to fit the CI budget;
the seeds are fixed, so these are deterministic checks of the whole simulate-fit pipeline.
The coverage of the posterior intervals is in ``test_crp_recovery_coverage.py`` (its own file,
the longest of the three, so that ``--dist loadfile`` can run it beside these two).
"""

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from pmctx.conditioning.recovery import parameter_recovery, variant_confusion

pytestmark = pytest.mark.slow


def test_alpha_and_response_parameters_are_recovered():
    df = parameter_recovery(
        10, n_trials=100, variant="lcm", rng=0, n_particles=100, n_starts=3, max_evals=100
    )
    # alpha spans two decades (log-uniform 0.05..5) and is weakly identified at the top of
    # that range; rank correlation across subjects is the stated criterion.
    assert spearmanr(df.true_alpha, df.fit_alpha)[0] > 0.5, df
    assert pearsonr(df.true_gain, df.fit_gain)[0] > 0.9
    assert pearsonr(df.true_sd, df.fit_sd)[0] > 0.9


def test_each_variant_is_best_fitted_by_itself_in_most_subjects():
    counts = variant_confusion(3, n_trials=60, rng=1, n_particles=50, n_starts=2, max_evals=60)
    diagonal = np.diag(counts.to_numpy())
    assert (diagonal >= 2).all(), counts  # 2 of 3 subjects or more per variant

"""IBP visuo-motor factorisation: kernels, conditionals, reference sampler, diagnostics, data.

The PyMC model lives in :mod:`pmctx.models.ibp`, the step methods in
:mod:`pmctx.steps.ibp_gibbs`.

Moves: :mod:`pmctx.ibp.joint_row` (default row update: a block of shared columns and the
number of singletons drawn together), :mod:`pmctx.ibp.kernels` (single-site, legacy row
update, Y), :mod:`pmctx.ibp.birth_death` (MH birth/death of small features), :mod:`pmctx.ibp.hyper`
(hyperparameter conditionals and their default priors). Start for large data sets:
:mod:`pmctx.ibp.start` (a fit to a random subsample, extended to every row).

Forces-only data: the posterior, not the sampler, is what recovers little. On the 4-bar data
with 2-D forces alone (N=100, sigma_n fixed at the true 0.3), chains started at the true
``(Z, A)`` and chains from random starts reach the same distribution (P(K+ = 4) about 0.33 in
both, aligned Z accuracy 0.85 in both; 0.20 and 0.79 for a second data seed), and both visit
``Z`` whose marginal ``log p(Z, F)`` beats the truth's by 15-25 nats: sums of four 2-D force
vectors are ambiguous at that noise level. Cues (or more force dimensions) pin ``Z`` down.
"""

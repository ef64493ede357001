"""IBP visuo-motor factorisation: kernels, conditionals, reference sampler, diagnostics, data.

The PyMC model lives in :mod:`pmctx.models.ibp`, the step method in
:mod:`pmctx.steps.ibp_gibbs`.
"""

"""Test oracles: slow, independent references that the samplers' tests compare against.

They live with the tests, not in the package, because only the tests use them; each needs
the model family's code (likelihoods, potentials), which the low-level :mod:`pmctx.testing`
may not import.

* :mod:`tests.oracles.ibp_reference` -- the IBP's untruncated Algorithm 2 and exact
  enumeration of a tiny posterior;
* :mod:`tests.oracles.vonmises_exact` -- exact bin probabilities of tiny orientation maps and
  exact prior draws.
* :mod:`tests.oracles.vonmises_kernels` -- two independent compiled kernels of the
  augmented orientation-map sweep, which the default kernel must match draw for draw.
* :mod:`tests.oracles.convergence_reference` -- the whole-array numpy R-hat and ESS that the
  blocked, compiled diagnostics of :mod:`pmctx.convergence` must equal to 1e-10.
"""

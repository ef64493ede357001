"""Kernels of the low-rank von Mises orientation map (pure numpy, no PyMC).

* :mod:`~pmctx.vonmises.potentials` -- edge potential, circle normaliser, sampling helpers
* :mod:`~pmctx.vonmises.pointwise` -- one node's full conditional (exact mixture terms)
* :mod:`~pmctx.vonmises.ffbs` -- forward filtering of a column's auxiliary modes (seed §4.3)
* :mod:`~pmctx.vonmises.augmented` -- auxiliary-variable sampler, all columns at once
* :mod:`~pmctx.vonmises.cluster` -- reflection cluster move (Swendsen-Wang with a field)
* :mod:`~pmctx.vonmises.marginals` -- node marginals by forward-backward (seed §4.4)
* :mod:`~pmctx.vonmises.maps` -- pinwheels, smoothness, orientation error, doubled angles
* :mod:`~pmctx.vonmises.plots` -- orientation map and angle series plots
* :mod:`~pmctx.vonmises.inputs` -- checks of observed maps, series and concentrations
* :mod:`~pmctx.vonmises.simulate` -- prior maps, noisy observations, the map's SBC simulator
* :mod:`~pmctx.vonmises.series` -- the chain's series: exact marginals, simulation, SBC
* :mod:`~pmctx.vonmises.predictive` -- predictive draws of the orientation map
* :mod:`~pmctx.vonmises.outputs` -- the files a map or chain fit writes
* :mod:`~pmctx.vonmises.demo` -- the map and chain demos (given the model's fit)
"""

from pmctx.vonmises.augmented import augmented_sweep
from pmctx.vonmises.cluster import cluster_sweep

#: The map's sweep kernels by name (``sweep(o, field, kappa, rank, rng)``; when to use which:
#: docs/guides/choosing_a_sampler.md).
SWEEPS = {"augmented": augmented_sweep, "cluster": cluster_sweep}

__all__ = ["SWEEPS", "augmented_sweep", "cluster_sweep"]

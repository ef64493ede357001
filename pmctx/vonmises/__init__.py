"""Kernels of the low-rank von Mises orientation map (pure numpy, no PyMC).

* :mod:`~pmctx.vonmises.potentials` -- edge potential, circle normaliser, sampling helpers
* :mod:`~pmctx.vonmises.pointwise` -- point-wise Gibbs (exact mixture conditionals)
* :mod:`~pmctx.vonmises.ffbs` -- column blocks by forward-filter backward-sample (seed §4.3)
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
from pmctx.vonmises.ffbs import ffbs_sweep
from pmctx.vonmises.pointwise import pointwise_sweep

SWEEPS = {
    "augmented": augmented_sweep,
    "cluster": cluster_sweep,
    "ffbs": ffbs_sweep,
    "pointwise": pointwise_sweep,
}

__all__ = ["SWEEPS", "augmented_sweep", "cluster_sweep", "ffbs_sweep", "pointwise_sweep"]

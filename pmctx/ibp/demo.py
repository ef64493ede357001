"""The IBP demo: synthetic 6 x 6 bar cues with 2-D forces (four true contexts), fit and plots.

:func:`run_demo` simulates the data (:func:`pmctx.ibp.data.visuomotor_data`), fits it with
the sampler it is given (:func:`pmctx.models.ibp.sample`, which ``pmctx demo ibp`` and
:func:`pmctx.models.ibp.demo` pass) and writes the files of :func:`pmctx.ibp.outputs.write_outputs`
with the features aligned to the true ones.

Examples
--------
>>> from pmctx.models.ibp import sample
>>> paths = run_demo(sample, "pmctx-demo", quick=True)  # doctest: +SKIP
"""

from __future__ import annotations

from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.outputs import write_outputs

__all__ = ["run_demo"]


def run_demo(sample, out_dir, *, quick: bool = False, random_seed: int = 0, cores=None) -> list:
    """Simulate the demo data, fit it with ``sample`` and write the outputs.

    Parameters
    ----------
    sample : callable
        ``sample(F, X, **options)`` returning a DataTree, as :func:`pmctx.models.ibp.sample`.
    out_dir : path-like
        Output folder.
    quick : bool, default False
        Small sizes (seconds to a minute), for a first look and the tests.
    random_seed : int, default 0
        Seed of the data and the sampler.
    cores : int, optional
        Parallel chains, as in :func:`pymc.sample`.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> from pmctx.models.ibp import sample
    >>> paths = run_demo(sample, "pmctx-demo", quick=True)  # doctest: +SKIP
    """
    data = visuomotor_data(60 if quick else 100, random_seed=random_seed)
    idata = sample(
        data.F,
        data.X,
        K_max=8 if quick else 12,
        # 100 trials and 4 x 1200 draws: the worst F_hat entry's tail ESS is the slowest
        # quantity (about 250 per 2400 draws on seed 0, where the check asks for 400).
        draws=150 if quick else 1200,
        tune=150 if quick else 300,
        chains=2 if quick else 4,
        cores=cores,
        random_seed=random_seed,
        sigma_n=0.3,
        check_convergence=not quick,
    )
    return write_outputs(idata, out_dir, reference=data.Z, side=data.side)

"""The latent-cause demo (renewal) and the table of conditioning phenomena.

:func:`phenomena_table` runs the particle filter on every shipped renewal / extinction design
and tabulates ``V`` at the end of acquisition, of extinction and at test; :func:`run_demo`
runs the filter on the ABA, ABC and AAB renewal designs, samples the batch posterior of ABA
with the sampler it is given (:func:`pmctx.models.crp_conditioning.sample_posterior`, which
``pmctx demo crp`` and :func:`pmctx.models.crp_conditioning.demo` pass) and writes the files
of :func:`pmctx.conditioning.outputs.write_outputs` and ``phenomena.csv``.

Examples
--------
>>> table = phenomena_table(n_particles=20, n_seeds=1, n_acquisition=2, n_extinction=2)
>>> list(table.columns)
['V_end_acquisition', 'V_end_extinction', 'V_test']
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pmctx.conditioning.design import shipped_design
from pmctx.conditioning.outputs import write_outputs
from pmctx.conditioning.particle_filter import particle_filter

__all__ = ["RENEWAL_DESIGNS", "phenomena_table", "run_demo"]


RENEWAL_DESIGNS = ("renewal_aba", "renewal_abc", "renewal_aab")


def phenomena_table(*, alpha=0.1, n_particles=500, n_seeds=5, random_seed=0, **sizes):
    """V at the end of extinction and at test on every renewal/extinction design.

    Parameters
    ----------
    alpha : float, default 0.1
        CRP concentration of the particle filter.
    n_particles : int, default 500
        Particles per run.
    n_seeds : int, default 5
        Filter runs averaged per design.
    random_seed : int, default 0
        Seed of the first run (run ``s`` uses ``random_seed + s``).
    **sizes
        Phase lengths passed to :func:`pmctx.conditioning.shipped_design`
        (``n_acquisition``, ``n_extinction``, ``n_test``).

    Returns
    -------
    pandas.DataFrame
        Indexed by design, averaged over ``n_seeds`` filter runs.

    Examples
    --------
    >>> table = phenomena_table(n_particles=20, n_seeds=1, n_acquisition=2, n_extinction=2)
    >>> table.shape[0] > 0
    True
    """
    import pandas as pd

    rows = {}
    for name in (*RENEWAL_DESIGNS, "renewal_aaa", "reinstatement", "partial_reinforcement"):
        design = shipped_design(name, **sizes)
        V = np.mean(
            [
                particle_filter(
                    design, alpha=alpha, n_particles=n_particles, random_seed=random_seed + s
                ).V
                for s in range(n_seeds)
            ],
            axis=0,
        )
        sl = design.phase_slices()
        rows[name] = {
            "V_end_acquisition": V[sl["acquisition"]][-1],
            "V_end_extinction": V[sl["extinction"]][-1],
            "V_test": V[sl["test"]].mean(),
        }
    return pd.DataFrame(rows).T


def run_demo(
    sample_posterior, out_dir, *, quick: bool = False, random_seed: int = 0, cores=None
) -> list[Path]:
    """Renewal: particle filter on ABA, ABC and AAB, the batch posterior of ABA, plots.

    Writes ``crp_V.png`` (V_t per design), ``crp_causes.png`` (ABA cause posterior),
    ``crp_filter.nc``, ``crp_posterior.nc`` (collapsed Gibbs, with ``log_likelihood``),
    ``crp_summary.csv``, ``crp_diagnostics.csv`` and ``phenomena.csv``.

    Parameters
    ----------
    sample_posterior : callable
        ``sample_posterior(features, **options)`` returning a DataTree, as
        :func:`pmctx.models.crp_conditioning.sample_posterior`.
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
    >>> from pmctx.models.crp_conditioning import sample_posterior
    >>> paths = run_demo(sample_posterior, "pmctx-demo", quick=True)  # doctest: +SKIP
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = dict(n_acquisition=10, n_extinction=10, n_test=2)
    n_particles = 200 if quick else 1000
    results = {
        name.split("_")[1].upper(): particle_filter(
            shipped_design(name, **sizes),
            alpha=0.1,
            n_particles=n_particles,
            random_seed=random_seed,
        )
        for name in RENEWAL_DESIGNS
    }
    design = shipped_design("renewal_aba", **sizes)
    idata = sample_posterior(
        design,
        alpha=1.0,
        max_causes=6,
        draws=200 if quick else 1000,
        tune=100 if quick else 500,
        chains=2 if quick else 4,
        cores=cores,
        random_seed=random_seed,
        check_convergence=not quick,
    )
    paths = write_outputs(idata, out_dir, design=design, results=results)
    table = phenomena_table(
        n_particles=n_particles, n_seeds=2 if quick else 5, random_seed=random_seed, **sizes
    )
    table.to_csv(out_dir / "phenomena.csv")
    return [*paths, out_dir / "phenomena.csv"]

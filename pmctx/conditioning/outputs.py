"""The files a fit of the latent-cause model writes: standard outputs and the filter's plots.

:func:`write_outputs` writes the standard outputs of a batch posterior (posterior, summary,
diagnostics) and the particle filter's result with its plots: ``V_t`` per design
(:func:`pmctx.conditioning.plots.plot_V`) and the posterior over causes
(:func:`pmctx.conditioning.plots.plot_cause_posterior`).

Examples
--------
>>> paths = write_outputs(idata, "pmctx-out")  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from pmctx.conditioning.particle_filter import particle_filter
from pmctx.conditioning.plots import plot_cause_posterior, plot_V
from pmctx.io import save_figure, save_idata, write_standard_outputs

__all__ = ["write_outputs"]


def write_outputs(
    idata, out_dir, prefix="crp", *, design=None, results=None, data=None
) -> list[Path]:
    """Standard outputs (posterior, summary, diagnostics) plus the particle filter's V and
    cause-posterior plots (``results``: name -> particle-filter result).

    Parameters
    ----------
    idata : xarray.DataTree
        A fit of :func:`pmctx.models.crp_conditioning.sample_posterior`.
    out_dir : path-like
        Output folder.
    prefix : str, default "crp"
        File name prefix.
    design : Design, optional
        The experiment, for the phase labels of the plots.
    results : dict, optional
        Name -> particle-filter result, for the V and cause-posterior plots.
    data : dict, optional
        The loaded data (:meth:`pmctx.registry.ModelSpec.fit_file` passes it); without
        ``results``, the particle filter runs on its ``features`` at the fit's alpha and
        truncation (1,000 particles) for those plots.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> paths = write_outputs(idata, "pmctx-out")  # doctest: +SKIP
    """
    out_dir = Path(out_dir)
    paths = write_standard_outputs(idata, out_dir, prefix)
    if not results and data is not None:
        post = idata.posterior
        results = {
            "V": particle_filter(
                data["features"],
                alpha=post.attrs.get("alpha", 1.0),
                n_particles=1000,
                max_causes=post.sizes.get("cause"),
                random_seed=0,
            )
        }
    if results:
        first = next(iter(results.values()))
        paths += [
            save_idata(first.to_inference_data(), out_dir / f"{prefix}_filter.nc"),
            save_figure(plot_V(results, design=design), out_dir / f"{prefix}_V.png"),
            save_figure(
                plot_cause_posterior(first, design=design), out_dir / f"{prefix}_causes.png"
            ),
        ]
    return paths

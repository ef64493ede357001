"""The orientation map's augmented block-Gibbs step on a JAX device (optional extra ``pmctx[jax]``).

:class:`JaxAugmentedVonMisesGibbs` is :class:`~pmctx.steps.vonmises.AugmentedVonMisesGibbs`
with its sweeps run by :func:`pmctx.vonmises.jax_series.augmented_sweeps`: the same law (the
kernel's tests tie it to the compiled CPU pass given the same uniforms, and to the exact joint
of a small grid), one compiled call per stored draw, on JAX's default device. It pays on a GPU
for maps of about a million nodes and more (``docs/benchmarks.md``, GPU section); on a CPU
the compiled default is faster. ``reconstruct(..., sampler="augmented_jax")`` selects it
and runs the chains one after another, since chain processes would each claim the device's
memory.
"""

from __future__ import annotations

from pmctx.steps.vonmises import _VonMisesMapStep

__all__ = ["JaxAugmentedVonMisesGibbs"]


class JaxAugmentedVonMisesGibbs(_VonMisesMapStep):
    """Augmented block Gibbs of the angle grid, its sweeps run by JAX (GPU or CPU).

    Each draw takes one JAX random key from the step's generator, so a seeded ``pm.sample``
    is reproducible on one device. Not assigned by plain ``pm.sample()``: pass it as a step
    (or ``sampler="augmented_jax"`` to ``reconstruct``).

    Parameters
    ----------
    vars : list, optional
        The angle grid variable (default: the model's ``o``).
    model : pm.Model, optional
        The model (default: the context's).
    rng : int or Generator, optional
        Random seed or generator.
    n_sweeps : int, optional
        Sweeps per PyMC draw (default :attr:`default_n_sweeps`, 8), run in one compiled call.

    Raises
    ------
    ImportError
        When JAX or numpyro is not installed.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmctx.models.vonmises_map import build_model
    >>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = JaxAugmentedVonMisesGibbs(rng=0)
    >>> step.name, step.n_sweeps
    ('vonmises_augmented_jax', 8)
    """

    name = "vonmises_augmented_jax"
    default_n_sweeps = 8

    def __init__(self, vars=None, *, model=None, rng=None, n_sweeps: int | None = None):
        try:
            from pmctx.vonmises import jax_series

            jax_series.require_jax()
        except ImportError as err:
            raise ImportError(
                f"{type(self).__name__} runs its sweeps with JAX and numpyro, which are not "
                f"installed ({err}). Install the extra: pip install 'pmctx[jax]' (with a JAX "
                "build for your GPU), or use the CPU step AugmentedVonMisesGibbs."
            ) from err
        self._sweeps = jax_series.augmented_sweeps
        super().__init__(vars, model=model, rng=rng, n_sweeps=n_sweeps)

    def _run_sweeps(self, o, field, kappa: float):
        seed = int(self.rng.integers(2**63 - 1))
        return self._sweeps(o, field, kappa, self.rank, n_sweeps=self.n_sweeps, random_seed=seed)

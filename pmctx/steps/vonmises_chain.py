"""The chain smoother's steps as owners of their blocks, so plain ``pm.sample()`` uses them.

:func:`pmctx.models.vonmises_chain.build_model` tags the angles ``x`` with the block
``"vonmises_chain"`` and a learned ``kappa`` with ``"vonmises_chain_kappa"`` (a learned
``kappa_obs`` goes to :class:`~pmctx.steps.vonmises.KappaObsSlice`, which finds the angles
``x`` itself). The classes below are :class:`~pmctx.steps.vonmises.ChainFFBSVonMises` and
:class:`~pmctx.steps.vonmises.ChainKappaSlice` unchanged apart from the block they own
(see :mod:`pmctx.steps.registration`).

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_chain import build_model
>>> from pmctx.steps.registration import assigned_steps
>>> model = build_model(np.array([0.1, np.nan, 0.3]), kappa="prior", kappa_obs="prior")
>>> sorted(assigned_steps(model))
['ChainFFBSStep', 'ChainKappaStep', 'KappaObsSlice']
"""

from __future__ import annotations

from pmctx.steps.vonmises import ChainFFBSVonMises, ChainKappaSlice

__all__ = ["ChainFFBSStep", "ChainKappaStep"]


class ChainFFBSStep(ChainFFBSVonMises):
    """:class:`~pmctx.steps.vonmises.ChainFFBSVonMises` owning the block ``"vonmises_chain"``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_chain import build_model
    >>> with build_model(np.array([0.1, np.nan, 0.3]), kappa=2.0, kappa_obs=1.0, rank=2):
    ...     step = ChainFFBSStep(rng=0)
    >>> step.value_names
    ['x_circular__']
    """

    owns_block = "vonmises_chain"  # x, as tagged by pmctx.models.vonmises_chain.build_model


class ChainKappaStep(ChainKappaSlice):
    """:class:`~pmctx.steps.vonmises.ChainKappaSlice` owning ``"vonmises_chain_kappa"``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmctx.models.vonmises_chain import build_model
    >>> with build_model(np.array([0.1, 0.2, 0.3]), kappa="prior", rank=2):
    ...     step = ChainKappaStep(rng=0)
    >>> step.value_names
    ['kappa_log__']
    """

    owns_block = "vonmises_chain_kappa"  # kappa="prior" in pmctx.models.vonmises_chain

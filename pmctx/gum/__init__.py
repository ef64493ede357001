"""Generalized unrestricted models (GUM) with Gaussian-process priors (seed 002).

Declare a model with :func:`gum` from a formula or from term objects
(:class:`GP`, :class:`Linear`, :class:`Categorical`, :class:`Fixed`, combined with ``+`` and
``*``); fit it by NUTS (``GumModel.sample``), Laplace (``GumModel.laplace``) or ADVI
(``GumModel.advi``); fit hyperparameters with :mod:`pmctx.gum.hyper`.
"""

from pmctx.gum.api import GumModel, gum
from pmctx.gum.terms import GP, Categorical, Fixed, Linear

__all__ = ["GP", "Categorical", "Fixed", "GumModel", "Linear", "gum"]

"""Model name -> the callables a batch or an SBC run needs, read from the model's spec.

``resolve_fit(name)`` is the spec's ``fit_unit`` (a unit's raw arrays or table columns ->
``DataTree``, following the engine's contract ``fit_unit(data: dict, *, random_seed,
**options)``), or its registered ``fit`` when the model has no unit adapter. A callable
passed to :func:`resolve_fit` is your own ``fit_unit`` and is returned as is.
``resolve_simulate`` and ``resolve_invariants`` give the spec's ``simulate`` and
``sbc_quantities`` for simulation-based calibration.

Examples
--------
>>> fit = resolve_fit("gum")
>>> callable(fit) and resolve_fit(fit) is fit
True
"""

from __future__ import annotations

from pmctx.registry import get_spec

__all__ = ["resolve_fit", "resolve_invariants", "resolve_simulate"]


def resolve_fit(model):
    """The ``fit_unit`` callable of registered model ``model`` (a name such as ``"gum"``);
    a callable is your own ``fit_unit`` and comes back unchanged.

    Parameters
    ----------
    model : str or callable
        A registered model name (see :func:`pmctx.registry.model_names`) or your own
        ``fit_unit(data, *, random_seed, **options)``.

    Returns
    -------
    callable
        ``fit_unit(data: dict, *, random_seed, **options) -> DataTree``.

    Raises
    ------
    ValueError
        For an unknown model name.

    Examples
    --------
    >>> resolve_fit("gum").__name__
    'fit_unit'
    """
    if callable(model):
        return model
    return get_spec(model).unit_fit()


def _sbc_part(name: str, part: str):
    spec = get_spec(name)
    value = getattr(spec, part)
    if value is None:
        raise ValueError(
            f"Model {name!r} declares no {part!r} in its ModelSpec, so it cannot be "
            "calibrated by SBC: add simulate and sbc_quantities to its spec."
        )
    return value


def resolve_simulate(name: str):
    """``simulate(random_seed, **options) -> (data, truth)`` of model ``name`` (its spec's).

    Parameters
    ----------
    name : str
        A registered model name.

    Returns
    -------
    callable
        ``simulate(random_seed, **options) -> (data, truth)``.

    Raises
    ------
    ValueError
        For an unknown model or one without ``simulate``.

    Examples
    --------
    >>> import numpy as np
    >>> data, truth = resolve_simulate("gum")(np.random.default_rng(0), n=10)
    >>> "formula" in data
    True
    """
    return _sbc_part(name, "simulate")


def resolve_invariants(name: str):
    """``sbc_quantities(idata) -> dict`` of posterior draws of what ``simulate`` ranks.

    Parameters
    ----------
    name : str
        A registered model name.

    Returns
    -------
    callable
        ``sbc_quantities(idata) -> dict`` of posterior draws by quantity name.

    Raises
    ------
    ValueError
        For an unknown model or one without ``sbc_quantities``.

    Examples
    --------
    >>> resolve_invariants("vonmises").__module__
    'pmctx.vonmises.simulate'
    """
    return _sbc_part(name, "sbc_quantities")

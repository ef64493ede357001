"""Model options from the command line: ``--config FILE.toml`` then ``--set key=value``.

One parser for ``pmctx fit``, ``pmctx batch`` and ``pmctx sbc``: values are TOML (``20``,
``0.3``, ``"prior"``, ``true``), bare text stays a string.

Examples
--------
>>> parse_options(["rank=3", "sampler=ffbs"])
{'rank': 3, 'sampler': 'ffbs'}
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["parse_options"]


def _parse_value(text: str):
    """A TOML value (``20``, ``0.3``, ``"prior"``, ``true``), or the bare text as a string."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_options(pairs, config=None) -> dict:
    """Model options from ``--config FILE.toml`` then ``--set key=value`` (later wins).

    Parameters
    ----------
    pairs : list of str or None
        The ``--set`` values, each ``key=value``; values are parsed as TOML (``20``, ``0.3``,
        ``"prior"``, ``true``), else kept as text.
    config : str or path-like, optional
        A TOML file of options, read first.

    Returns
    -------
    dict
        Option name -> value.

    Raises
    ------
    FileNotFoundError
        When ``config`` does not exist.
    ValueError
        When ``config`` is not valid TOML or a pair has no ``=``.

    Examples
    --------
    >>> parse_options(["K_max=20", "sigma_n=prior", "alpha=0.5"])
    {'K_max': 20, 'sigma_n': 'prior', 'alpha': 0.5}
    """
    import tomllib

    options = {}
    if config is not None:
        config = Path(config)
        if not config.is_file():
            raise FileNotFoundError(f"--config {config} does not exist.")
        try:
            options.update(tomllib.loads(config.read_text()))
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"--config {config} is not valid TOML: {err}.") from err
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set takes key=value (e.g. --set K_max=20), got {pair!r}.")
        options[key.strip()] = _parse_value(value.strip())
    return options

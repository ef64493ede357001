"""Data files for ``pmctx fit``, loaded by declared schemas, one per model.

Each ``load_<model>(path) -> dict`` returns the validated arrays the model's ``fit_data``
takes, plus ``"options"`` (model options stored in the file).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["load_crp", "load_gum", "load_ibp", "load_vonmises"]


def load_ibp(path) -> dict:
    from pmctx.models.ibp import _load

    F, X, options = _load(Path(path))
    return {"F": F, "X": X, "options": options}


def load_crp(path) -> dict:
    from pmctx.models.crp_conditioning import _load_features

    return _load_features(Path(path))


def load_vonmises(path) -> dict:
    from pmctx.models.vonmises_map import _load_map

    theta, mask, options = _load_map(Path(path))
    return {"theta": theta, "mask": mask, "options": options}


def load_gum(path) -> dict:
    from pmctx.models.gum import _load

    return _load(Path(path))

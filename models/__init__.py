"""Model declarations, installed as ``pmctx.models``: one module per model.

Each module declares a real ``pm.Model`` and ends with its ``SPEC``
(:class:`pmctx.registry.ModelSpec`), which the registry finds through the ``pmctx.models``
entry-point group in ``pyproject.toml``.
"""

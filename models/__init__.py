"""Model declarations, installed as ``pmctx.models``: one module per model.

Each module declares a real ``pm.Model`` and may expose ``demo(out_dir, *, quick, seed)`` and
``fit(data_path, *, draws, tune, chains, seed, out_dir)``, which the ``pmctx`` CLI calls.
"""

#: CLI name -> module name inside ``pmctx.models``.
MODEL_MODULES = {
    "ibp": "ibp",
    "crp": "crp_conditioning",
    "vonmises": "vonmises_map",
    "vonmises-chain": "vonmises_chain",
    "gum": "gum",
}

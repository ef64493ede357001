"""The PyTensor internals pmctx._upstream_pytensor reads are still there, under those names
and signatures: a PyTensor release that drops or changes one fails here (pmctx's cached
nutpie compile then falls back to nutpie.compile_pymc_model with one warning)."""

import inspect

import numpy as np
import pytensor
import pytensor.tensor as pt

from pmctx import _upstream_pytensor


def test_private_names_still_exist():
    from pytensor.link.numba.cache import (  # noqa: F401  (imported by name on purpose)
        CACHED_SRC_FUNCTIONS,
        compile_numba_function_src,
    )
    from pytensor.link.numba.dispatch.basic import numba_njit  # noqa: F401
    from pytensor.link.numba.linker import NumbaLinker

    assert list(inspect.signature(NumbaLinker.jit_compile).parameters) == ["self", "fn_and_cache"]
    params = inspect.signature(compile_numba_function_src).parameters
    assert {"global_env", "cache_key"} <= set(params)
    assert _upstream_pytensor.missing() == []


def test_nogil_mode_compiles_a_numba_function_with_a_cache_key():
    x = pt.vector("x")
    fn = pytensor.function([x], pt.sum(x**2), mode=_upstream_pytensor.numba_nogil_mode())
    inner = _upstream_pytensor.jitted(fn)
    assert float(inner(np.arange(3.0))[0]) == 5.0
    assert isinstance(_upstream_pytensor.cache_key_of(inner), str)

#!/usr/bin/env bash
# The GPU rows of docs/benchmarks.md (issue 28, item 6), as one run on a machine with a GPU,
# JAX and numpyro but no PyMC stack and no network: the PyMC stack travels as wheels in .whl
# (pip download --no-deps of the constraints.txt versions for that machine's Python), which
# this script installs into /tmp/site. Every part writes its JSON into $OUT as it finishes.
#   tests: the JAX sweep's exactness tests, on the GPU;
#   vonmises_gpu.json: the orientation-map sweep, compiled CPU vs JAX, 512^2 and 2048^2;
#   gum_gpu.json / gum_cpu.json: the GUM through numpyro on the GPU / PyMC, nutpie and numpyro
#   on the CPU (two processes: JAX picks its platform once per process).
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/pmctx-gpu}
mkdir -p "$OUT"
if [ -d .whl ] && [ -z "${SKIP_WHEELS:-}" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1 PMCTX_NO_PROGRESS=1
nvidia-smi -L 2>/dev/null
$PY -c "import jax, numpy, numba, pymc, pytensor; print(jax.devices(), numpy.__version__, numba.__version__, pymc.__version__, pytensor.__version__)"
timeout "${TEST_S:-150}" $PY -m pytest -q -p no:cacheprovider tests/vonmises/test_vonmises_jax_series.py 2>&1 | tail -4
timeout "${VONMISES_S:-200}" $PY -m benchmarks.bench_gpu --part vonmises "$OUT/vonmises_gpu.json"
JAX_PLATFORMS=cuda timeout "${GUM_GPU_S:-150}" $PY -m benchmarks.bench_gpu --part gum \
    --samplers numpyro "$OUT/gum_gpu.json"
JAX_PLATFORMS=cpu timeout "${GUM_CPU_S:-200}" $PY -m benchmarks.bench_gpu --part gum \
    --samplers pymc,nutpie,numpyro "$OUT/gum_cpu.json"
ls -la "$OUT"

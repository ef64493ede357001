"""Map the top-level ``models/`` directory onto the ``pmctx.models`` package.

Everything else about the build lives in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

library = find_packages(include=["pmctx", "pmctx.*"])
models = [
    "pmctx.models" + name.removeprefix("models")
    for name in find_packages(include=["models", "models.*"])
]

setup(
    packages=library + models,
    package_dir={"pmctx": "pmctx", "pmctx.models": "models"},
    package_data={"pmctx.models": ["data/*"]},
)

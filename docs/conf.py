"""Sphinx configuration of the pmctx documentation (PyMC/ArviZ style).

``make docs`` builds the site with the notebooks executed; ``make docs-noexec`` (run by the
tests) builds it without executing them, with warnings as errors in both.
"""

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

import pmctx  # noqa: E402

# autosummary rewrites its stubs but never deletes them: a stub left by a module that was
# since removed or renamed would fail the build (-W), so every build starts from fresh stubs.
for _stub in (Path(__file__).resolve().parent / "generated").glob("pmctx*.rst"):
    _stub.unlink()

project = "pmctx"
author = "The pmctx developers"
copyright = "2026, The pmctx developers"
release = pmctx.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "numpydoc_template_once",
    "myst_nb",
    "benchmark_tables",
    "model_table",
]

autosummary_generate = True
autosummary_imported_members = False
# The optional extra pmctx[jax] (pmctx.vonmises.jax_series, pmctx.steps.vonmises_jax) is
# documented from stand-ins where JAX is not installed, as in a plain `make test` venv.
autodoc_mock_imports = [m for m in ("jax", "numpyro") if importlib.util.find_spec(m) is None]
# ArviZ 1 (arviz_base.io_numpyro) binds jax and numpyro through lazy_loader when it is first
# imported; imported under autodoc's mock, that would put a lazy stand-in in sys.modules whose
# first attribute read turns it into a plain empty module (no jax.config for jax_series).
# Imported here, before any mock, lazy_loader sees that JAX is missing and leaves sys.modules.
import arviz  # noqa: E402, F401
# Document what a module defines, not what a package re-exports (that would describe the
# same object twice).
autodoc_default_options = {"members": True, "ignore-module-all": True}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

# myst-nb runs the tutorials at build time unless PMCTX_DOCS_EXECUTE=0 (the tests' build).
nb_execution_mode = "off" if os.environ.get("PMCTX_DOCS_EXECUTE", "1") == "0" else "cache"
nb_execution_timeout = 1200
nb_execution_raise_on_error = True
myst_enable_extensions = ["dollarmath", "colon_fence"]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    "jupyter_execute",
    "generated/benchmark_tables.md",  # included by benchmarks.md, not a page of its own
    "generated/model_table.md",  # included by index.md
]
templates_path = ["_templates"]

html_theme = "pydata_sphinx_theme"
html_title = "pmctx"
html_theme_options = {"navigation_with_keys": False}

intersphinx_mapping = {}  # no network in CI: keep the build self-contained

"""The ``pmctx`` command line: run the bundled demos or fit a model to your data.

``pmctx demo [MODEL ...]`` runs each model on its bundled default data and writes an
InferenceData NetCDF file, an ``az.summary`` CSV and diagnostic PNG plots per model.
``pmctx fit MODEL --data FILE`` fits one model to user data.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from pmctx.models import MODEL_MODULES

__all__ = ["available_models", "main"]


def _load(name: str):
    """Import the model module behind a CLI name, or return None when it does not exist yet."""
    module_name = f"pmctx.models.{MODEL_MODULES[name]}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name == module_name:
            return None
        raise


def available_models() -> dict[str, dict[str, bool]]:
    """Which models exist, and whether each offers ``demo`` and ``fit``."""
    status = {}
    for name in MODEL_MODULES:
        module = _load(name)
        status[name] = {
            "demo": module is not None and hasattr(module, "demo"),
            "fit": module is not None and hasattr(module, "fit"),
        }
    return status


def _model_list_help() -> str:
    return ", ".join(f"{name} (pmctx.models.{mod})" for name, mod in MODEL_MODULES.items())


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pmctx",
        description="PyMC/ArviZ models for cognitive science and neuroscience. "
        f"Models: {_model_list_help()}.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo",
        help="run models on their bundled default data",
        description="Run each model on its bundled default data; write InferenceData (.nc), "
        f"az.summary (.csv) and plots (.png) per model. Models: {', '.join(MODEL_MODULES)}.",
    )
    demo.add_argument("models", nargs="*", metavar="MODEL", help="models to run (default: all)")
    demo.add_argument("--out", default="pmctx-demo", type=Path, help="output folder")
    demo.add_argument("--quick", action="store_true", help="small sizes, about a minute each")
    demo.add_argument("--seed", type=int, default=0, help="random seed")

    fit = sub.add_parser(
        "fit",
        help="fit a model to your data",
        description="Fit MODEL to a data file (.npz loaded without pickles, or .csv/.nc where "
        f"the model's data is tabular). Models: {', '.join(MODEL_MODULES)}. See each model's "
        "`fit` docstring for the expected arrays or columns.",
    )
    fit.add_argument("model", metavar="MODEL", choices=list(MODEL_MODULES))
    fit.add_argument("--data", required=True, type=Path, help="data file")
    fit.add_argument("--draws", type=int, default=1000)
    fit.add_argument("--tune", type=int, default=1000)
    fit.add_argument("--chains", type=int, default=4)
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--out", default="pmctx-fit", type=Path, help="output folder")
    from pmctx.batch.cli import add_parser as add_batch_parsers

    add_batch_parsers(sub)  # `pmctx batch` and `pmctx sbc`
    return parser


def _print_written(name: str, paths, seconds: float) -> None:
    print(f"[{name}] wrote {len(paths)} file(s) in {seconds:.1f} s:")
    for path in paths:
        print(f"  {path}")


def _demo(args) -> int:
    unknown = [m for m in args.models if m not in MODEL_MODULES]
    if unknown:
        print(f"Unknown model(s) {unknown}; choose from {list(MODEL_MODULES)}.", file=sys.stderr)
        return 2
    status = available_models()
    chosen = args.models or list(MODEL_MODULES)
    missing = [m for m in chosen if not status[m]["demo"]]
    print(
        "pmctx models: "
        + ", ".join(
            f"{m} ({'available' if status[m]['demo'] else 'not yet implemented'})"
            for m in MODEL_MODULES
        )
    )
    for name in missing:
        print(f"[{name}] not yet implemented: no demo to run.")
    for name in chosen:
        if name in missing:
            continue
        start = time.perf_counter()
        paths = _load(name).demo(args.out / name, quick=args.quick, seed=args.seed)
        _print_written(name, paths, time.perf_counter() - start)
    if len(missing) == len(chosen):
        print("No demo ran: none of the requested models is implemented yet.")
    return 0


def _fit(args) -> int:
    module = _load(args.model)
    if module is None or not hasattr(module, "fit"):
        print(f"[{args.model}] not yet implemented: fit is not available.", file=sys.stderr)
        return 2
    if not args.data.exists():
        print(f"Data file {args.data} does not exist.", file=sys.stderr)
        return 2
    for opt in ("draws", "chains"):
        if getattr(args, opt) < 1:
            print(f"--{opt} must be at least 1, got {getattr(args, opt)}.", file=sys.stderr)
            return 2
    if args.tune < 0:
        print(f"--tune must be non-negative, got {args.tune}.", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        paths = module.fit(
            args.data,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            seed=args.seed,
            out_dir=args.out / args.model,
        )
    except (ValueError, TypeError) as err:
        print(f"[{args.model}] cannot fit {args.data}: {err}", file=sys.stderr)
        return 2
    _print_written(args.model, paths, time.perf_counter() - start)
    return 0


def main(argv=None) -> int:
    """Entry point of the ``pmctx`` command."""
    args = _build_parser().parse_args(argv)
    if args.command in ("batch", "sbc"):
        from pmctx.batch.cli import run as run_batch_command

        return run_batch_command(args)
    return _demo(args) if args.command == "demo" else _fit(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

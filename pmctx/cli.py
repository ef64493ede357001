"""The ``pmctx`` command line: run the bundled demos or fit a model to your data.

``pmctx demo [MODEL ...]`` runs each model on its bundled default data; ``pmctx fit MODEL
--data FILE`` fits one model to user data. Both write ``<model>_posterior.nc``,
``<model>_summary.csv`` and ``<model>_diagnostics.csv`` (plus plots) per model and print the
convergence report. Models come from the registry (:mod:`pmctx.registry`); ``pmctx fit
MODEL --help`` lists one model's options. Other modules add subcommands with
``add_parser(subparsers)`` functions (e.g. ``pmctx.compare.add_parser``), each setting
``func`` (``args -> exit code``) with ``parser.set_defaults``.

User errors (a bad file, a bad option) print one line to stderr and exit with status 2;
nothing is written to ``--out`` then.
"""

# Long because the two commands share their argument groups, output printing and exit rules
# here (demo's parallel jobs included); other subcommands live with their own modules.

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

from pmctx.options import parse_options
from pmctx.registry import model_names

__all__ = ["main", "parse_options"]

#: Errors that come from the user's input: one line and exit status 2, no traceback.
USER_ERRORS = (ValueError, TypeError, FileNotFoundError, NotADirectoryError, PermissionError)


# ---------------------------------------------------------------- options


def _check_options(name: str, options: dict) -> None:
    from pmctx.registry import get_spec

    known = get_spec(name).options
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"Unknown option(s) {unknown} for {name}; it takes {sorted(known)} "
            f"(see `pmctx fit {name} --help`)."
        )


def _check_out(out: Path) -> Path:
    """Fail before any work if ``--out`` cannot be a folder."""
    out = Path(out)
    for parent in (out, *out.parents):
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"--out {out}: {parent} is a file, not a folder.")
            break
    return out


def _add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (1000)")
    parser.add_argument("--tune", type=int, default=1000, help="tuning steps per chain (1000)")
    parser.add_argument("--chains", type=int, default=4, help="chains (4)")
    parser.add_argument(
        "--cores", type=int, default=None, help="chains run in parallel (default: PyMC's)"
    )
    parser.add_argument("--random-seed", dest="random_seed", type=int, default=None, help="seed")
    parser.add_argument(
        "--until-converged",
        dest="until_converged",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="continue the same chains while the convergence check fails (default: on)",
    )
    parser.add_argument(
        "--max-draws",
        dest="max_draws",
        type=int,
        default=None,
        help="most draws per chain when continuing (default: 3 x --draws)",
    )
    parser.add_argument(
        "--max-time",
        dest="max_time",
        type=float,
        default=None,
        help="seconds after which no further block of draws starts (default: no limit)",
    )
    parser.add_argument(
        "--progressbar",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars (default: on in a terminal)",
    )


# ---------------------------------------------------------------- output


def _print_written(name: str, paths, seconds: float) -> None:
    print(f"[{name}] wrote {len(paths)} file(s) in {seconds:.1f} s:")
    for path in paths:
        print(f"  {path}")
    nc = [p for p in paths if str(p).endswith("_posterior.nc")]
    if nc:
        own = str(nc[0]).removesuffix("_posterior.nc") + "_summary.csv"
        csv = [p for p in paths if str(p) == own] or [
            p for p in paths if str(p).endswith("_summary.csv")
        ]
        print(
            f"[{name}] load them with: import pmctx, arviz as az, pandas as pd; "
            f"idata = az.from_netcdf('{nc[0]}'); print(pmctx.summary(idata))"
            + (f"; pd.read_csv('{csv[0]}', index_col=0)" if csv else "")
        )


def _run_quietly(name: str, func, *args, **kwargs):
    """Call ``func``; print pmctx warnings as plain lines instead of Python's warning format.

    Returns ``func``'s result and whether it emitted a pmctx warning.
    """
    from pmctx.exceptions import PmctxWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PmctxWarning)
        result = func(*args, **kwargs)
    warned = False
    for warning in caught:
        if issubclass(warning.category, PmctxWarning):
            warned = True
            print(f"[{name}] {warning.category.__name__}: {warning.message}", file=sys.stderr)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return result, warned


def _add_fail_on_warning(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on-warning",
        action="store_true",
        help="exit with status 1 when a fit has not converged or pmctx warned (the files are "
        "still written), so scripts and pipelines can stop",
    )


def _exit_status(args, ok: bool, name: str) -> int:
    if ok or not args.fail_on_warning:
        return 0
    print(f"[{name}] --fail-on-warning: not converged or warned; exit status 1.", file=sys.stderr)
    return 1


# ---------------------------------------------------------------- demo


def _add_demo(sub) -> None:
    demo = sub.add_parser(
        "demo",
        help="run models on their bundled default data",
        description="Run each model on its bundled default data; write <model>_posterior.nc, "
        "<model>_summary.csv, <model>_diagnostics.csv and plots per model. Models: "
        f"{', '.join(model_names())}.",
    )
    demo.add_argument("models", nargs="*", metavar="MODEL", help="models to run (default: all)")
    demo.add_argument("--out", default="pmctx-demo", type=Path, help="output folder")
    demo.add_argument("--quick", action="store_true", help="small sizes, about a minute each")
    demo.add_argument("--random-seed", dest="random_seed", type=int, default=0, help="seed (0)")
    demo.add_argument("--cores", type=int, default=None, help="chains run in parallel")
    demo.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="models run at once (default: 2 on a machine with 2 or more usable CPUs, else 1)",
    )
    _add_fail_on_warning(demo)
    demo.set_defaults(func=_demo)


#: Extra wall seconds of the first ``pmctx demo`` on a machine, while Numba compiles pmctx's
#: kernels and caches them: ``time pmctx demo`` took 72.7 s with an empty kernel cache against
#: 48.0 s right after (2 CPUs at load 0.3-2.3), since the chains' processes inherit the
#: kernels compiled once before they fork (:func:`pmctx.sampling.run_sampler`); each compiled
#: them itself before (86.5 against 49.6 s).
FIRST_RUN_SECONDS = 25


def _kernels_cached() -> bool:
    """Whether Numba has cached pmctx's kernels: an index file (``*.nbi``) beside pmctx's
    sources or under ``NUMBA_CACHE_DIR``. Where pmctx's folder is read-only Numba caches
    elsewhere, so the answer is unknown and taken as yes (no first-run warning)."""
    package = Path(__file__).resolve().parent
    if not os.access(package, os.W_OK) and not os.environ.get("NUMBA_CACHE_DIR"):
        return True
    roots = [
        package,
        *([Path(os.environ["NUMBA_CACHE_DIR"])] if "NUMBA_CACHE_DIR" in os.environ else []),
    ]
    return any(next(root.rglob("*.nbi"), None) is not None for root in roots if root.is_dir())


def _demo_estimate(chosen, quick: bool, jobs: int = 1, *, first_run: bool = False) -> str:
    """The line announcing how long the chosen demos take: each spec's ``demo_seconds``
    (measured on 2 CPUs beside another model's demo, kernels cached), shared among ``jobs``
    models at once, and on a ``first_run`` the kernels' compile time."""
    from pmctx.registry import get_spec

    expected = {name: get_spec(name).demo_seconds[1 if quick else 0] for name in chosen}
    parts = ", ".join(f"{name} {seconds:g}" for name, seconds in expected.items())
    total = max(max(expected.values()), sum(expected.values()) / jobs)
    at_once = f", {jobs} models at a time" if jobs > 1 else ""
    first = (
        f" First run on this machine: about {FIRST_RUN_SECONDS} s more, while Numba compiles "
        "pmctx's kernels and caches them."
        if first_run
        else ""
    )
    return (
        f"pmctx demo: about {total:.0f} s on 2 CPUs{at_once}, more on a busy machine "
        f"(expected seconds of each: {parts}).{first}"
    )


def _print_reports(name: str, paths) -> bool:
    """Print the convergence report (``*_diagnostics.csv``) of every fit a command wrote;
    whether all of them converged."""
    import pandas as pd

    all_ok = True
    for path in paths:
        if str(path).endswith("_diagnostics.csv"):
            report = pd.read_csv(path, index_col=0)
            ok = bool(report["converged"].all())
            status = "all quantities converged" if ok else "NOT CONVERGED"
            print(f"[{name}: {Path(path).name}] convergence ({status}):")
            columns = ["kind", "r_hat", "r_hat_limit", "ess_bulk", "ess_tail", "ess_min"]
            print(report[[*columns, "converged"]].to_string(float_format=lambda v: f"{v:.4g}"))
            all_ok = all_ok and ok
    return all_ok


def _demo(args) -> int:
    names = model_names()
    unknown = [m for m in args.models if m not in names]
    if unknown:
        print(f"Unknown model(s) {unknown}; choose from {names}.", file=sys.stderr)
        return 2
    _check_out(args.out)
    chosen = args.models or names
    jobs = _demo_jobs(args.jobs, len(chosen))
    print(_demo_estimate(chosen, args.quick, jobs, first_run=not _kernels_cached()), flush=True)
    if jobs == 1:
        failed = [name for name in chosen if not _demo_one(name, args)]
    else:
        failed = _demo_at_once(chosen, args, jobs)
    return _exit_status(args, not failed, ", ".join(failed))


def _demo_jobs(jobs: int | None, n_models: int) -> int:
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs must be at least 1; got {jobs}.")
    if jobs is None:
        from pmctx.sampling import usable_cores

        jobs = 2 if usable_cores() >= 2 else 1
    return max(1, min(jobs, n_models))


def _demo_one(name: str, args) -> bool:
    """Run one model's demo and print what it wrote and its convergence report; whether it
    converged without a pmctx warning."""
    from pmctx.registry import get_spec

    start = time.perf_counter()
    paths, warned = _run_quietly(
        name,
        get_spec(name).demo,
        args.out / name,
        quick=args.quick,
        random_seed=args.random_seed,
        cores=args.cores,
    )
    _print_written(name, paths, time.perf_counter() - start)
    return _print_reports(name, paths) and not warned


def _demo_in_child(name: str, args, log: str) -> bool:
    # Everything this process and its chain processes print goes to ``log`` (file
    # descriptors 1 and 2 and Python's streams), so that the parent prints each model's
    # lines together.
    streams, saved = (sys.stdout, sys.stderr), (os.dup(1), os.dup(2))
    with open(log, "w", buffering=1) as sink:
        for stream in streams:
            stream.flush()
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        sys.stdout = sys.stderr = sink
        try:
            return _demo_one(name, args)
        finally:
            sink.flush()
            sys.stdout, sys.stderr = streams
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


def _demo_at_once(chosen, args, jobs: int) -> list[str]:
    """Run the demos ``jobs`` at a time in forked processes (the imports are already done),
    printing each model's output when it ends; the names that failed. One model's sampling
    leaves a CPU idle while it compiles, builds its outputs or scores its CV folds."""
    import multiprocessing
    import tempfile
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from pmctx.registry import get_spec

    failed = []
    with (
        tempfile.TemporaryDirectory() as logs,
        ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool,
    ):
        futures = {
            pool.submit(_demo_in_child, name, args, f"{logs}/{name}.log"): name
            for name in sorted(chosen, key=lambda n: -get_spec(n).demo_seconds[int(args.quick)])
        }  # longest first, so that the short ones fill in at the end
        for future in as_completed(futures):
            name = futures[future]
            print(Path(f"{logs}/{name}.log").read_text(), end="", flush=True)
            if not future.result():
                failed.append(name)
    return [name for name in chosen if name in failed]


# ---------------------------------------------------------------- fit


def _fit_help(model: str | None) -> str:
    """The models (names only: no model is imported), or one model's options."""
    if model is None:
        return (
            f"Models: {', '.join(model_names())}. `pmctx fit MODEL --help` lists MODEL's "
            "options (--set key=value)."
        )
    from pmctx.registry import get_spec

    spec = get_spec(model)
    lines = [f"{model}: {spec.summary} ({spec.module}). Options (--set key=value):"]
    lines += [f"  {key}: {text}" for key, text in spec.options.items()]
    return "\n".join(lines)


def _add_fit(sub, model: str | None = None) -> None:
    fit = sub.add_parser(
        "fit",
        help="fit a model to your data",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit MODEL to a data file (.npz loaded without pickles, .csv, or .nc "
        "holding a fit's observed_data) and write <model>_posterior.nc, "
        "<model>_summary.csv and <model>_diagnostics.csv into --out/MODEL. Each model's "
        "`fit_data` docstring lists the arrays or columns it expects.\n\n" + _fit_help(model),
    )
    fit.add_argument("model", metavar="MODEL", choices=model_names())
    fit.add_argument("--data", required=True, type=Path, help="data file")
    _add_sampling_arguments(fit)
    fit.add_argument(
        "--set",
        dest="options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="model option, e.g. --set K_max=20 (repeatable; TOML values)",
    )
    fit.add_argument("--config", type=Path, default=None, help="TOML file of model options")
    fit.add_argument("--out", default="pmctx-fit", type=Path, help="output folder")
    _add_fail_on_warning(fit)
    fit.set_defaults(func=_fit)


def _check_counts(args) -> None:
    for opt in ("draws", "chains"):
        if getattr(args, opt) < 1:
            raise ValueError(f"--{opt} must be at least 1, got {getattr(args, opt)}.")
    if args.tune < 0:
        raise ValueError(f"--tune must be non-negative, got {args.tune}.")
    if args.cores is not None and args.cores < 1:
        raise ValueError(f"--cores must be at least 1, got {args.cores}.")


def _fit(args) -> int:
    from pmctx.registry import get_spec

    _check_counts(args)
    out_dir = _check_out(args.out) / args.model
    if not args.data.exists():
        raise FileNotFoundError(f"Data file {args.data} does not exist.")
    spec = get_spec(args.model)
    options = parse_options(args.options, args.config)
    _check_options(args.model, options)
    start = time.perf_counter()
    with _print_extensions(args.model):
        paths, warned = _run_quietly(
            args.model,
            spec.fit_file,
            args.data,
            out_dir=out_dir,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            random_seed=args.random_seed,
            progressbar=args.progressbar,
            **_budget_options(args),
            **options,
        )
    converged = _print_reports(args.model, paths)
    _print_written(args.model, paths, time.perf_counter() - start)
    return _exit_status(args, converged and not warned, args.model)


def _budget_options(args) -> dict:
    """The sampling-until-converged options the user set (a model's ``fit`` that predates
    them still runs at their defaults)."""
    options = {} if args.until_converged else {"until_converged": False}
    options.update(
        {k: getattr(args, k) for k in ("max_draws", "max_time") if getattr(args, k) is not None}
    )
    return options


@contextlib.contextmanager
def _print_extensions(name: str):
    """Print one line per convergence check of a run sampling until converged, as it comes."""
    import logging

    logger = logging.getLogger("pmctx.continuation")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(f"[{name}] %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _external_registrars():
    """The ``add_parser(subparsers)`` of the subcommands other modules define, in help order."""
    from pmctx.batch.cli import add_parser as add_batch_and_sbc
    from pmctx.compare import add_parser as add_compare

    return [add_compare, add_batch_and_sbc]


def _help_model(argv) -> str | None:
    """The model of ``pmctx fit MODEL --help``, whose options the help then lists."""
    argv = list(argv or [])
    if argv[:1] != ["fit"] or not {"-h", "--help"} & set(argv):
        return None
    names = model_names()
    return next((arg for arg in argv[1:] if arg in names), None)


def _build_parser(argv=None) -> argparse.ArgumentParser:
    from pmctx import __version__

    parser = argparse.ArgumentParser(
        prog="pmctx",
        description="PyMC/ArviZ models for cognitive science and neuroscience. "
        f"Models: {', '.join(model_names())}.",
    )
    parser.add_argument("--version", action="version", version=f"pmctx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_demo(sub)
    _add_fit(sub, _help_model(argv))
    for add in _external_registrars():
        add(sub)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``pmctx`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``pmctx``; default: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 2 on bad input (one line on standard error, no
        traceback).

    Examples
    --------
    >>> main(["fit", "ibp", "--data", "no_such_file.csv"])
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _build_parser(argv).parse_args(argv)
    try:
        return args.func(args)
    except USER_ERRORS as err:
        message = " ".join(str(err).split())
        print(f"pmctx {args.command}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

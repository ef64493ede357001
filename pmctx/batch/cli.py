"""``pmctx batch`` and ``pmctx sbc``: parsers and runners, wired into :mod:`pmctx.cli`.

``pmctx batch MODEL --data DIR_OR_TABLE --out DIR [--workers N] [--scheduler ADDR]
[--set key=value ...]`` fits every unit and writes ``units/<unit>.nc``, ``summary.csv`` and
``population.nc``. ``pmctx sbc MODEL [--reps N]`` runs simulation-based calibration and writes
the ranks, the uniformity tests and rank histograms. ``--set`` and ``--sim`` values are
parsed as by ``pmctx fit`` (:func:`pmctx.options.parse_options`: TOML values, bare text as a
string).

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser(prog="pmctx")
>>> add_parser(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["sbc", "crp", "--reps", "10", "--sim", "target=alpha",
...                           "--set", "alphas=[0.1, 1.0]"])
>>> args.model, args.reps, parse_options(args.sim_settings), parse_options(args.settings)
('crp', 10, {'target': 'alpha'}, {'alphas': [0.1, 1.0]})
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pmctx.options import parse_options  # one --set parser for fit, batch and sbc
from pmctx.registry import model_names

__all__ = ["add_parser", "run"]


def _cluster_args(parser):
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes, one thread each (default: CPU count)",
    )
    parser.add_argument("--scheduler", default=None,
                        help="address of a running Dask scheduler (default: "
                        "$DASK_SCHEDULER_ADDRESS, else a local cluster)")  # fmt: skip
    parser.add_argument("--random-seed", type=int, default=0, help="batch seed (0)")


def add_parser(subparsers) -> None:
    """Add the ``batch`` and ``sbc`` sub-commands to an ``argparse`` sub-parser set.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The sub-parser set of the ``pmctx`` command (``parser.add_subparsers()``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pmctx")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["batch", "gum", "--data", "units/", "--out", "fits/"]).model
    'gum'
    """
    batch = subparsers.add_parser(
        "batch",
        help="fit a model to many units (subjects, sessions, neurons) on Dask",
        description="Fit MODEL to every unit of a folder of data files (one per unit) or of a "
        "table (.csv/.parquet) with a 'unit' column. Results are written per unit as they "
        "finish; rerunning skips finished units.",
    )
    batch.add_argument("model", metavar="MODEL", choices=model_names())
    batch.add_argument("--data", required=True, type=Path, help="folder or table of units")
    batch.add_argument("--out", required=True, type=Path, help="output folder")
    _cluster_args(batch)
    batch.add_argument("--set", dest="settings", action="append", metavar="KEY=VALUE",
                       help="fit option, repeatable (e.g. --set draws=500)")  # fmt: skip
    batch.add_argument("--rerun-errors", action="store_true", help="retry failed units")
    batch.add_argument("--all-groups", action="store_true",
                       help="write every results group per unit (default: all but the "
                       "posterior predictive draws)")  # fmt: skip
    batch.add_argument("--chunk-size", type=int, default=None, metavar="N",
                       help="units per Dask task (default: about a second of fits per task, "
                       "from measured fit times)")  # fmt: skip
    batch.set_defaults(func=run)
    sbc = subparsers.add_parser(
        "sbc",
        help="simulation-based calibration of a model",
        description="Draw from MODEL's prior, simulate data, fit it, and test that the ranks "
        "of the true label-invariant quantities among the posterior draws are uniform.",
    )
    sbc.add_argument("model", metavar="MODEL", choices=model_names())
    sbc.add_argument("--reps", type=int, default=200, help="replications (default 200)")
    sbc.add_argument("--out", type=Path, default=None, help="output folder (default: sbc-MODEL)")
    sbc.add_argument("--n-ranks", type=int, default=99, help="posterior draws per rank")
    _cluster_args(sbc)
    sbc.add_argument("--set", dest="settings", action="append", metavar="KEY=VALUE",
                     help="fit option, repeatable")  # fmt: skip
    sbc.add_argument(
        "--sim",
        dest="sim_settings",
        action="append",
        metavar="KEY=VALUE",
        help="simulate option, repeatable (e.g. --sim target=alpha for crp)",
    )
    sbc.set_defaults(func=run)


def _engine(args) -> dict:
    if args.workers is not None and args.workers < 0:
        raise ValueError(f"--workers must be 0 (no Dask) or more, got {args.workers}.")
    local = args.workers == 0 and not args.scheduler
    return {"random_seed": args.random_seed, "local": local,
            "workers": None if local else args.workers, "scheduler": args.scheduler}  # fmt: skip


def _batch(args) -> int:
    from pmctx.batch import resolve_fit, run_batch
    from pmctx.batch.engine import UNIT_GROUPS
    from pmctx.batch.population import gather

    if not args.data.exists():
        print(f"No data folder or table at {args.data}.", file=sys.stderr)
        return 2
    table = run_batch(
        resolve_fit(args.model),
        args.data,
        args.out,
        options=parse_options(args.settings),
        rerun_errors=args.rerun_errors,
        groups=None if args.all_groups else UNIT_GROUPS,
        chunk_size=args.chunk_size,
        **_engine(args),
    )
    counts = table["status"].value_counts().to_dict()
    print(f"[{args.model}] {len(table)} units: {counts.get('ok', 0)} ok, "
          f"{counts.get('error', 0)} failed; summary in {args.out / 'summary.csv'}")  # fmt: skip
    if counts.get("ok"):
        gather(args.out).to_netcdf(args.out / "population.nc")
        print(f"[{args.model}] population view in {args.out / 'population.nc'}")
        _write_population_table(args.model, args.out)
        _write_model_selection(args.model, args.out, args.random_seed)
    for row in table[table["status"] == "error"].itertuples():
        print(f"  {row.unit}: {row.error}", file=sys.stderr)
    return 0 if not counts.get("error") else 1


def _write_population_table(model: str, out: Path) -> None:
    from pmctx.batch.population import population_summary

    view = population_summary(model, out)
    path = out / "population.csv"
    view["population"].to_csv(path)
    print(f"[{model}] spread over units of each headline quantity in {path}")


def _write_model_selection(model: str, out: Path, random_seed: int) -> None:
    # Units fitted under several models (e.g. crp's LCM variants): BMS across units.
    from pmctx.batch.bms import write_model_selection

    paths = write_model_selection(out, random_seed=random_seed)
    if paths:
        print(f"[{model}] per-unit models and Bayesian model selection in "
              f"{', '.join(str(p) for p in paths)}")  # fmt: skip


def _sbc(args) -> int:
    from pmctx.batch import resolve_fit, resolve_simulate
    from pmctx.batch.adapters import resolve_invariants
    from pmctx.batch.sbc import run_sbc

    out = args.out or Path(f"sbc-{args.model}")
    result = run_sbc(
        resolve_simulate(args.model),
        resolve_fit(args.model),
        args.reps,
        out,
        n_ranks=args.n_ranks,
        simulate_options=parse_options(args.sim_settings),
        fit_options=parse_options(args.settings),
        invariants=resolve_invariants(args.model),
        **_engine(args),
    )
    paths = result.write(out)
    print(result.tests.to_string(float_format=lambda v: f"{v:.3g}"))
    print(f"[{args.model}] wrote {', '.join(str(p) for p in paths)}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``batch`` or ``sbc`` command; returns the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of the ``batch`` or ``sbc`` sub-command.

    Returns
    -------
    int
        Exit code: 0 on success, 2 on bad input (the message goes to stderr).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pmctx")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["batch", "gum", "--data", "no-such-folder", "--out", "fits"])
    >>> run(args)  # the error goes to stderr
    2
    """
    try:
        return _batch(args) if args.command == "batch" else _sbc(args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"[{args.model}] {err}", file=sys.stderr)
        return 2

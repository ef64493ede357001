import subprocess
import sys

import pytest

from pmctx import cli
from pmctx.registry import model_names

MODEL_NAMES = model_names()


def test_help_lists_models_and_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in MODEL_NAMES:
        assert name in out
    for sub in (["demo", "--help"], ["fit", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(sub)
        text = capsys.readouterr().out
        assert "--out" in text and "ibp" in text
    assert "--draws" in text and "--data" in text
    assert "pmctx fit MODEL --help" in text and "  K_max: " not in text


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_fit_help_of_one_model_lists_its_options_only(name, capsys):
    from pmctx.registry import get_spec

    with pytest.raises(SystemExit):
        cli.main(["fit", name, "--help"])
    text = capsys.readouterr().out
    spec = get_spec(name)
    assert spec.summary in " ".join(text.split())
    assert all(f"  {key}: " in text for key in spec.options)
    others = {k for other in MODEL_NAMES if other != name for k in get_spec(other).options}
    assert not any(f"  {key}: " in text for key in others - set(spec.options))


def test_demo_reports_unknown_model(capsys):
    assert cli.main(["demo", "nope"]) == 2
    assert "Unknown model" in capsys.readouterr().err


def test_fit_rejects_missing_file_and_bad_options(tmp_path, capsys):
    name = "ibp"
    assert cli.main(["fit", name, "--data", str(tmp_path / "missing.npz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    data = tmp_path / "d.npz"
    data.write_bytes(b"")
    assert cli.main(["fit", name, "--data", str(data), "--draws", "0"]) == 2
    assert "--draws must be at least 1" in capsys.readouterr().err


def test_console_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "pmctx", "--help"], capture_output=True, text=True, check=True
    )
    assert "demo" in result.stdout and "fit" in result.stdout


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("pmctx ")


def test_options_from_set_and_config(tmp_path):
    config = tmp_path / "opts.toml"
    config.write_text('K_max = 12\nsigma_n = "prior"\n')
    options = cli.parse_options(["K_max=20", "alpha=0.5"], config)
    assert options == {"K_max": 20, "sigma_n": "prior", "alpha": 0.5}
    with pytest.raises(ValueError, match="key=value"):
        cli.parse_options(["K_max"])
    config.write_text("K_max = = 3")
    with pytest.raises(ValueError, match="not valid TOML"):
        cli.parse_options([], config)


def test_every_subcommand_offers_every_registered_model(capsys):
    for command in ("fit", "batch", "sbc"):
        with pytest.raises(SystemExit):
            cli.main([command, "nosuchmodel", "--help"])
        err = capsys.readouterr().err
        assert all(repr(name) in err for name in MODEL_NAMES), command


def test_fit_writes_standard_outputs_and_prints_report(tmp_path, capsys):
    import numpy as np

    from pmctx.conditioning import shipped_design

    design = shipped_design("renewal_aba", n_acquisition=3, n_extinction=3, n_test=1)
    data = tmp_path / "subject.csv"
    frame = design.to_array()
    names = design.feature_names
    rows = [",".join("" if np.isnan(v) else str(int(v)) for v in row) for row in frame]
    data.write_text(",".join(names) + "\n" + "\n".join(rows) + "\n")
    code = cli.main(
        ["fit", "crp", "--data", str(data), "--out", str(tmp_path / "o"), "--draws", "1000",
         "--tune", "200", "--chains", "2", "--cores", "1", "--random-seed", "1",
         "--set", "max_causes=4"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    for suffix in ("posterior.nc", "summary.csv", "diagnostics.csv"):
        assert (tmp_path / "o" / "crp" / f"crp_{suffix}").exists()
    assert "convergence (all quantities converged)" in out and "az.from_netcdf" in out


def test_fit_prints_one_line_per_convergence_check(tmp_path, capsys):
    import arviz as az
    import numpy as np

    from pmctx.conditioning import shipped_design

    design = shipped_design("renewal_aba", n_acquisition=3, n_extinction=3, n_test=1)
    data = tmp_path / "subject.csv"
    rows = [",".join("" if np.isnan(v) else str(int(v)) for v in row) for row in design.to_array()]
    data.write_text(",".join(design.feature_names) + "\n" + "\n".join(rows) + "\n")
    # 30 draws per chain are too few for 100 per chain of ESS: the chains go on to 60 and stop.
    cli.main(
        ["fit", "crp", "--data", str(data), "--out", str(tmp_path / "o"), "--draws", "30",
         "--tune", "30", "--chains", "2", "--random-seed", "1", "--max-draws", "60",
         "--set", "max_causes=4"]
    )  # fmt: skip
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "draws per chain: worst R-hat" in line]
    stats = az.from_netcdf(tmp_path / "o" / "crp" / "crp_posterior.nc").sample_stats.attrs
    assert len(lines) == len(stats["pmctx_checks"]) == stats["pmctx_extensions"] + 1 == 3
    assert lines[0].startswith("[crp] 30 draws per chain") and "continuing to 45" in lines[0]
    assert lines[-1].startswith("[crp] 60 draws per chain") and "max_draws reached" in lines[-1]


def test_demo_announces_the_sum_of_each_specs_expected_seconds():
    from pmctx.registry import get_spec

    for quick in (False, True):
        line = cli._demo_estimate(MODEL_NAMES, quick)
        seconds = [get_spec(name).demo_seconds[1 if quick else 0] for name in MODEL_NAMES]
        assert all(s > 0 for s in seconds), "every model's spec states its demo's duration"
        assert line.startswith(f"pmctx demo: about {sum(seconds):g} s on 2 CPUs")
        shared = cli._demo_estimate(MODEL_NAMES, quick, jobs=2)
        at_once = max(max(seconds), sum(seconds) / 2)
        assert shared.startswith(f"pmctx demo: about {at_once:.0f} s on 2 CPUs, 2 models at")


def test_demo_estimate_adds_the_kernel_compile_on_a_first_run(tmp_path, monkeypatch):
    line = cli._demo_estimate(MODEL_NAMES, False, jobs=2, first_run=True)
    assert line.endswith(
        f"First run on this machine: about {cli.FIRST_RUN_SECONDS} s more, while Numba "
        "compiles pmctx's kernels and caches them."
    )
    assert "First run" not in cli._demo_estimate(MODEL_NAMES, False, jobs=2)
    # An index file under NUMBA_CACHE_DIR counts as cached kernels.
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    (tmp_path / "pmctx" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pmctx" / "__pycache__" / "kernel.nbi").write_bytes(b"")
    assert cli._kernels_cached()


class _FakeSpec:
    demo_seconds = (1.0, 1.0)

    def __init__(self, name, converged):
        self.name, self.converged = name, converged

    def demo(self, out, *, quick, random_seed, cores):
        import os

        out.mkdir(parents=True)
        report = out / f"{self.name}_diagnostics.csv"
        report.write_text(
            "quantity,kind,r_hat,r_hat_limit,ess_bulk,ess_tail,ess_min,converged\n"
            f"x,linear,1.0,1.01,500,500,400,{self.converged}\n"
        )
        os.write(2, f"{self.name} sampler line on stderr\n".encode())  # as PyMC logs
        return [report]


def test_demo_jobs_run_models_at_once_and_print_each_models_lines_together(
    tmp_path, capfd, monkeypatch
):
    import pmctx.registry

    specs = {"one": _FakeSpec("one", True), "two": _FakeSpec("two", False)}
    monkeypatch.setattr(cli, "model_names", lambda: list(specs))
    monkeypatch.setattr(pmctx.registry, "get_spec", specs.__getitem__)
    code = cli.main(["demo", "--jobs", "2", "--out", str(tmp_path), "--fail-on-warning"])
    captured = capfd.readouterr()
    out = captured.out
    assert code == 1 and "[two] --fail-on-warning" in captured.err
    for name, status in (("one", "all quantities converged"), ("two", "NOT CONVERGED")):
        block = out[out.index(f"{name} sampler line") :]
        assert block.index(f"[{name}] wrote 1 file(s)") < block.index(f"({status})")
        assert (tmp_path / name / f"{name}_diagnostics.csv").exists()
    assert "2 models at a time" in out.splitlines()[0]


def test_demo_rejects_zero_jobs(tmp_path, capsys):
    assert cli.main(["demo", "crp", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs must be at least 1; got 0" in capsys.readouterr().err


def test_load_hint_names_the_files_written(tmp_path, capsys):
    from pmctx.cli import _print_written

    posterior, summary = tmp_path / "gum_posterior.nc", tmp_path / "gum_summary.csv"
    _print_written("gum", [posterior, summary, tmp_path / "gum_laplace_posterior.nc"], 1.0)
    hint = capsys.readouterr().out.splitlines()[-1]
    assert "<model>" not in hint and "import pmctx, arviz as az, pandas as pd" in hint
    assert f"az.from_netcdf('{posterior}')" in hint
    assert hint.endswith(f"pd.read_csv('{summary}', index_col=0)")

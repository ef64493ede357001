"""The pyGAM held-out benchmark: it skips pyGAM with a clear message when pygam is absent,
and its summary rows are the mean, standard error and paired difference of the windows."""

import sys

import numpy as np

from benchmarks import bench_gum_pygam as bench


def test_skips_pygam_with_a_clear_message_when_it_is_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygam", None)  # import pygam raises ImportError
    assert bench.load_pygam() is None
    row = bench.skip_row("N=1")
    assert row["skipped"] and "pygam is not installed" in row["notes"]
    assert "pip install 'pmctx[bench]'" in row["notes"]


def test_summary_rows_are_mean_se_and_paired_difference():
    per_window = {"gum_laplace": [-1.0, -1.2, -1.1], "pygam_te_s": [-1.1, -1.1, -1.3]}
    rows = {row["variant"]: row for row in bench.summarize(per_window, "N=3")}
    other = rows["pygam_te_s"]
    assert np.isclose(other["lpd_per_obs"], -3.5 / 3)
    assert np.isclose(other["se"], np.std([-1.1, -1.1, -1.3], ddof=1) / np.sqrt(3))
    assert np.isclose(other["diff_vs_gum_laplace"], (-0.1 + 0.1 - 0.2) / 3)
    assert other["gum_ahead"] == 2 and rows["gum_laplace"]["gum_ahead"] is None


def test_windows_are_disjoint_and_held_out_rows_are_shared():
    windows, test = bench.split(quick=True)
    assert len(windows) == 2 and all(len(w["y"]) == 200 for w in windows)
    assert len(test["y"]) == 500
    assert not np.intersect1d(windows[0]["x1"], windows[1]["x1"]).size
    assert not np.intersect1d(windows[0]["x1"], test["x1"]).size

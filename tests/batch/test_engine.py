"""The batch engine: same draws as a plain loop, failures recorded, dead workers, resume."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from pmctx.batch import discover_units, load_records, run_batch, unit_seed
from pmctx.batch.toy import normal_mean_fit
from pmctx.io import load_idata

UNITS = {f"u{i}": {"y": np.linspace(-1, 1, 5) + i, "name": f"u{i}"} for i in range(6)}


#: Seconds a test on a local cluster may take before pytest-timeout fails it (instead of the
#: suite's 15 minutes): a loaded machine can stall a worker restart, never a whole test.
CLUSTER_TEST_TIMEOUT = 300


@contextlib.contextmanager
def local_cluster(workers=2):
    """A ``LocalCluster`` client closed with time limits; no worker process outlives it.

    Worker processes that a nanny restarted, or that ignore the shutdown, are killed by pid
    (only processes started while the cluster was up, never the resource tracker).
    """
    import psutil

    from pmctx.batch import connect

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    started = []
    client = None
    try:
        client = connect(workers=workers)
        yield client
    finally:
        started = [p for p in me.children(recursive=True) if p.pid not in before]
        try:
            if client is not None:
                cluster = client.cluster
                client.close(timeout=30)
                cluster.close(timeout=60)
        finally:
            workers_left = []
            for proc in started:
                with contextlib.suppress(psutil.Error):
                    if "resource_tracker" not in " ".join(proc.cmdline()):
                        workers_left.append(proc)
            _, alive = psutil.wait_procs(workers_left, timeout=10)
            for proc in alive:
                with contextlib.suppress(psutil.Error):
                    proc.kill()


@pytest.fixture(scope="module")
def client():
    with local_cluster(workers=2) as client:
        yield client


def _draws(out_dir, unit):
    return load_idata(Path(out_dir) / "units" / f"{unit}.nc").posterior["mu"].values


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_batch_on_two_workers_equals_plain_loop(client, tmp_path):
    table = run_batch(normal_mean_fit, UNITS, tmp_path, client=client, random_seed=3)
    assert table["status"].tolist() == ["ok"] * 6
    assert table["unit"].tolist() == sorted(UNITS)
    assert table["worker"].nunique() == 2  # both workers took part
    for name, data in UNITS.items():
        expected = normal_mean_fit(dict(data), random_seed=unit_seed(3, name)).posterior["mu"]
        np.testing.assert_array_equal(_draws(tmp_path, name), expected.values)
    assert (tmp_path / "summary.csv").exists()
    assert pd.read_csv(tmp_path / "summary.csv")["unit"].tolist() == sorted(UNITS)


@pytest.mark.parametrize(
    "where",
    ["local", pytest.param("cluster", marks=[pytest.mark.slow,
                                             pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)])],
)  # fmt: skip
def test_failing_unit_is_recorded_and_batch_goes_on(where, request, tmp_path):
    if where == "cluster":
        engine = {"client": request.getfixturevalue("client")}
    else:
        engine = {"local": True}
    table = run_batch(
        normal_mean_fit, UNITS, tmp_path, options={"fail_on": "u2"}, **engine
    ).set_index("unit")
    assert table.loc["u2", "status"] == "error"
    assert "fails on purpose" in table.loc["u2", "error"]
    assert (table.drop(index="u2")["status"] == "ok").all()
    assert not (tmp_path / "units" / "u2.nc").exists()
    # A rerun keeps the error unless asked to retry it.
    again = run_batch(normal_mean_fit, UNITS, tmp_path, **engine).set_index("unit")
    assert again.loc["u2", "status"] == "error"
    again = run_batch(normal_mean_fit, UNITS, tmp_path, rerun_errors=True, **engine)
    assert (again["status"] == "ok").all()


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_unit_that_kills_its_worker_every_time_is_an_error(tmp_path):
    # Its own cluster: the unit kills workers until the scheduler gives up on it, and a nanny
    # that fails to restart its worker on a loaded machine must not leave the shared cluster
    # without workers (where every later test would wait forever).
    units = {k: UNITS[k] for k in ("u0", "u1", "u3")}
    with local_cluster(workers=2) as client:
        table = run_batch(
            normal_mean_fit, units, tmp_path, client=client, options={"crash_on": "u1"}
        ).set_index("unit")
    assert table.loc["u1", "status"] == "error"
    assert "KilledWorker" in table.loc["u1", "error"]
    assert (table.loc[["u0", "u3"], "status"] == "ok").all()


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_worker_killed_mid_run_every_unit_ends_exactly_once(tmp_path):
    # k0 runs at once; the other units hold until `release` exists, which the killer thread
    # creates once the nanny's replacement worker is up: the dead worker's task is retried on
    # the other worker and the replacement takes units too, however long its restart takes
    # on a loaded machine.
    release = tmp_path / "release"
    units = {f"k{i}": {"y": [float(i)], "name": f"k{i}"} for i in range(8)}
    for i in range(1, 8):
        units[f"k{i}"]["hold"] = str(release)
    with local_cluster(workers=2) as client:  # its own cluster: the test kills a worker
        pids = set(client.run(os.getpid).values())
        victim = sorted(pids)[0]
        killed, replaced = threading.Event(), threading.Event()

        def kill_after_first_result():
            try:
                deadline = time.time() + 120
                while time.time() < deadline and not list((tmp_path / "units").glob("*.json")):
                    time.sleep(0.05)
                os.kill(victim, signal.SIGKILL)  # a worker process this test's cluster started
                killed.set()
                deadline = time.time() + 180
                while time.time() < deadline:
                    # on_error: the dead worker may still be listed a moment.
                    if set(client.run(os.getpid, on_error="ignore").values()) - pids:
                        replaced.set()
                        break
                    time.sleep(0.2)
            finally:
                release.touch()

        killer = threading.Thread(target=kill_after_first_result, daemon=True)
        killer.start()
        table = run_batch(normal_mean_fit, units, tmp_path, client=client, options={"delay": 0.4})
        killer.join()
    assert killed.is_set() and replaced.is_set()
    assert sorted(table["unit"]) == sorted(units)  # every unit exactly once
    assert table["unit"].is_unique and (table["status"] == "ok").all()
    workers = {int(w.rsplit(":", 1)[1]) for w in table["worker"]}
    assert workers - pids, "no unit ran on the replacement worker"
    assert not list((tmp_path / "units").glob(".*.tmp"))
    for name in units:  # intact files with the unit's own seed
        expected = normal_mean_fit(dict(units[name]), random_seed=unit_seed(0, name))
        np.testing.assert_array_equal(_draws(tmp_path, name), expected.posterior["mu"].values)


RESUMABLE = textwrap.dedent(
    """
    import sys
    import numpy as np
    from pmctx.batch import run_batch
    from pmctx.batch.toy import normal_mean_fit
    units = {f"r{i}": {"y": [float(i)]} for i in range(6)}
    run_batch(normal_mean_fit, units, sys.argv[1], workers=1, options={"delay": 1.0},
              progressbar=False)
    """
)


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_resume_after_client_killed_runs_only_unfinished_units(tmp_path):
    units = {f"r{i}": {"y": [float(i)]} for i in range(6)}
    proc = subprocess.Popen(
        [sys.executable, "-c", RESUMABLE, str(tmp_path)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list((tmp_path / "units").glob("*.json"))) < 2:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = load_records(tmp_path)
    finished = set(before.loc[before["status"] == "ok", "unit"])
    assert 2 <= len(finished) < 6
    table = run_batch(normal_mean_fit, units, tmp_path, local=True)
    assert sorted(table["unit"]) == sorted(units) and (table["status"] == "ok").all()
    old_run = before["run_id"].iloc[0]
    rerun = set(table.loc[table["run_id"] != old_run, "unit"])
    assert rerun == set(units) - finished
    for name in units:
        expected = normal_mean_fit(dict(units[name]), random_seed=unit_seed(0, name))
        np.testing.assert_array_equal(_draws(tmp_path, name), expected.posterior["mu"].values)


def test_rerun_fits_only_unfinished_units(tmp_path):
    first = run_batch(normal_mean_fit, {k: UNITS[k] for k in ("u0", "u1")}, tmp_path, local=True)
    (tmp_path / "units" / ".u2.nc.0123.tmp").write_bytes(b"half a file")  # killed mid-write
    table = run_batch(normal_mean_fit, UNITS, tmp_path, local=True)
    rerun = set(table.loc[table["run_id"] != first["run_id"].iloc[0], "unit"])
    assert rerun == set(UNITS) - {"u0", "u1"}
    assert not list((tmp_path / "units").glob(".*.tmp"))
    assert pd.read_csv(tmp_path / "summary.csv")["unit"].tolist() == sorted(UNITS)


def test_units_from_folder_and_table(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    np.savez(folder / "s1.npz", y=np.ones(3), formula="y ~ f(x)")
    pd.DataFrame({"y": [1.0, 2.0]}).to_csv(folder / "s2.csv", index=False)
    units = discover_units(folder)
    assert sorted(units) == ["s1", "s2"]
    assert units["s1"].load()["formula"] == "y ~ f(x)"
    table = pd.DataFrame({"unit": ["a", "b", "a"], "y": [1.0, 2.0, 3.0]})
    assert discover_units(table)["a"].load()["y"].tolist() == [1.0, 3.0]
    with pytest.raises(ValueError, match="'unit' column"):
        discover_units(pd.DataFrame({"subject": [1]}))
    with pytest.raises(ValueError, match="holds no unit data files"):
        discover_units(_empty(tmp_path))
    with pytest.raises(ValueError, match="cannot be a file name"):
        discover_units({"../x": {}})


def _empty(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    return empty


def test_retried_chunk_refits_only_units_this_run_has_not_recorded(tmp_path):
    # What a chunk's retry on a second worker sees when its first worker died mid-chunk.
    from pmctx.batch.scheduling import run_chunk

    sources = list(discover_units({k: UNITS[k] for k in ("u0", "u1", "u2")}).values())
    kwargs = {"options": {"fail_on": "u1"}, "run_id": "first"}
    first = run_chunk(normal_mean_fit, sources[:2], tmp_path, seeds=[1, 2], **kwargs)
    assert [r["status"] for r in first] == ["ok", "error"]
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "units").iterdir()}
    again = run_chunk(normal_mean_fit, sources, tmp_path, seeds=[1, 2, 3], **kwargs)
    assert again[:2] == first  # returned from disk, not refitted (nor the error retried)
    assert {p: (tmp_path / "units" / p).stat().st_mtime_ns for p in stamps} == stamps
    assert again[2]["status"] == "ok" and (tmp_path / "units" / "u2.nc").exists()
    # A later run retries the error only when asked (rerun_errors), never an ok unit.
    later = run_chunk(normal_mean_fit, sources[:2], tmp_path, seeds=[1, 2], run_id="second")
    assert later[0] == first[0] and later[1]["status"] == "ok"


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_chunks_run_every_unit_once_and_a_failing_unit_does_not_stop_its_chunk(client, tmp_path):
    units = {f"c{i}": {"y": np.linspace(0, 1, 4) + i, "name": f"c{i}"} for i in range(10)}
    table = run_batch(normal_mean_fit, units, tmp_path, client=client, random_seed=5, chunk_size=4,
                      options={"fail_on": "c5"}).set_index("unit")  # fmt: skip
    assert sorted(table.index) == sorted(units) and table.index.is_unique
    assert table.loc["c5", "status"] == "error" and "fails on purpose" in table.loc["c5", "error"]
    assert (table.drop(index="c5")["status"] == "ok").all()
    assert len(list((tmp_path / "units").glob("*.json"))) == len(units)
    for name in set(units) - {"c5"}:
        expected = normal_mean_fit(dict(units[name]), random_seed=unit_seed(5, name))
        np.testing.assert_array_equal(_draws(tmp_path, name), expected.posterior["mu"].values)


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_chunk_that_kills_its_workers_is_split_and_only_the_killer_unit_fails(tmp_path):
    import dask

    units = {f"x{i}": {"y": [float(i)], "name": f"x{i}"} for i in range(6)}
    # One retry per task keeps the test short: the chunk dies twice, then its units run alone.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with local_cluster(workers=2) as client:
            table = run_batch(normal_mean_fit, units, tmp_path, client=client, chunk_size=3,
                              options={"crash_on": "x1"}).set_index("unit")  # fmt: skip
    assert sorted(table.index) == sorted(units) and table.index.is_unique
    assert table.loc["x1", "status"] == "error" and "KilledWorker" in table.loc["x1", "error"]
    assert (table.drop(index="x1")["status"] == "ok").all()
    assert not list((tmp_path / "units").glob(".*.tmp"))


def test_background_writes_give_the_same_files_and_records_as_inline_writes(tmp_path):
    inline = run_batch(normal_mean_fit, UNITS, tmp_path / "inline", local=True)
    background = run_batch(
        normal_mean_fit, UNITS, tmp_path / "background", local=True, background_writes=True
    )
    assert inline["unit"].tolist() == background["unit"].tolist()
    assert (background["status"] == "ok").all()
    for name in UNITS:
        np.testing.assert_array_equal(
            _draws(tmp_path / "inline", name), _draws(tmp_path / "background", name)
        )
    assert not list((tmp_path / "background" / "units").glob(".*.tmp"))

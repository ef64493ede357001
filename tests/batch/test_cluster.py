"""The engine's local cluster: tuned settings reach every worker process, restarts included."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

pytest.importorskip("distributed")

from pmctx.batch import cluster as cluster_module
from pmctx.batch import connect, run_batch
from pmctx.batch.cluster import TUNED_CONFIG, tuned_config
from pmctx.batch.toy import normal_mean_fit

CLUSTER_TEST_TIMEOUT = 300
MALLOC = "MALLOC_TRIM_THRESHOLD_"


def worker_settings(dask_worker):
    """What a worker process runs with (``client.run`` passes the worker)."""
    import dask

    tick = dask_worker.periodic_callbacks["tick"].callback_time
    return {
        "pid": os.getpid(),
        "malloc": os.environ.get(MALLOC),
        "openblas": os.environ.get("OPENBLAS_NUM_THREADS"),
        "profile": dask.config.get("distributed.worker.profile.enabled"),
        "profiling": "profile" in dask_worker.periodic_callbacks,
        "tick_ms": tick,
        "monitor_ms": dask_worker.periodic_callbacks["memory_monitor"].callback_time,
    }


TUNED = {"malloc": None, "openblas": "1", "profile": False, "profiling": False,
         "tick_ms": 1000.0, "monitor_ms": 1000.0}  # fmt: skip
DEFAULT = {"malloc": "65536", "openblas": "1", "profile": True, "profiling": True,
           "tick_ms": 20.0, "monitor_ms": 100.0}  # fmt: skip


def _without_pid(settings):
    return {k: v for k, v in settings.items() if k != "pid"}


@contextlib.contextmanager
def closing(client):
    """Close ``client`` and its local cluster (if any) with time limits."""
    try:
        yield client
    finally:
        cluster = getattr(client, "cluster", None)
        client.close(timeout=30)
        if cluster is not None:
            cluster.close(timeout=60)


def _restart_by_kill(client, pid, timeout=120.0):
    # SIGKILL the worker process (one this test's cluster started); its nanny starts another.
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + timeout
    while time.time() < deadline:
        settings = client.run(worker_settings, on_error="ignore")
        fresh = [s for s in settings.values() if isinstance(s, dict) and s["pid"] != pid]
        if fresh:
            return fresh[0]
        time.sleep(0.2)
    raise AssertionError("the nanny did not restart its worker")


@pytest.fixture
def no_exported_malloc(monkeypatch):
    # A MALLOC_TRIM_THRESHOLD_ exported by the user is (rightly) kept; these tests need none.
    if MALLOC in (cluster_module._initial_environ() or {}):
        pytest.skip(f"{MALLOC} exported in the environment running the tests")
    monkeypatch.delenv(MALLOC, raising=False)


@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_tuned_settings_reach_the_worker_and_survive_its_restart(no_exported_malloc, tmp_path):
    with closing(connect(workers=1)) as client:
        (first,) = client.run(worker_settings).values()
        assert _without_pid(first) == TUNED
        restarted = _restart_by_kill(client, first["pid"])
        assert _without_pid(restarted) == TUNED
        table = run_batch(normal_mean_fit, {"a": {"y": [0.5]}}, tmp_path, client=client)
        assert table["status"].tolist() == ["ok"]
    assert os.environ.get(MALLOC) in (None, "65536")  # this process: only Dask's own leak


@pytest.mark.slow
@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_untuned_cluster_and_a_nanny_without_a_deep_copy_lose_the_settings(no_exported_malloc):
    # The checks above detect Dask's defaults: ``tuned=False`` has them, and so has a worker
    # restarted by a nanny that kept a shallow copy of the global configuration (what
    # ``dask.config.set`` around ``LocalCluster`` alone gives).
    from distributed import Client, LocalCluster

    with closing(connect(workers=1, tuned=False)) as client:
        (settings,) = client.run(worker_settings).values()
        assert _without_pid(settings) == DEFAULT
    with tuned_config():
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None)
    with closing(Client(cluster)) as client:
        (first,) = client.run(worker_settings).values()
        assert first["profile"] is False  # spawned inside the context
        restarted = _restart_by_kill(client, first["pid"])
        assert restarted["profile"] is True and restarted["tick_ms"] == 20.0


@pytest.mark.timeout(CLUSTER_TEST_TIMEOUT)
def test_a_scheduler_given_by_address_is_left_alone(no_exported_malloc, monkeypatch):
    import dask

    before = dask.config.get("distributed.admin.tick.interval")
    with closing(connect(workers=1, tuned=False)) as own:
        address = own.scheduler.address
        for how in ("argument", "environment"):
            if how == "environment":
                monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", address)
            client = connect(scheduler=address if how == "argument" else None)
            with closing(client):
                assert getattr(client, "cluster", None) is None
                (settings,) = client.run(worker_settings).values()
                assert _without_pid(settings) == DEFAULT
    assert dask.config.get("distributed.admin.tick.interval") == before


def test_tuned_config_is_set_inside_and_restored_after():
    import dask

    with tuned_config() as config:
        for key, value in TUNED_CONFIG.items():
            assert dask.config.get(key) == value
    assert dask.config.get("distributed.worker.profile.enabled") is True
    assert dask.config.get("distributed.admin.tick.interval") == "20ms"
    # the yielded copy keeps the tuned values after the context
    assert config["distributed"]["worker"]["profile"]["enabled"] is False
    assert config["distributed"]["nanny"]["pre-spawn-environ"][MALLOC] is None
    assert config["distributed"]["nanny"]["pre-spawn-environ"]["OPENBLAS_NUM_THREADS"] == 1


@pytest.mark.parametrize(
    ("initial", "current", "kept"),
    [
        ({}, "65536", False),  # set by an earlier nanny in this process: removed
        ({MALLOC: "65536"}, "65536", True),  # exported by the user: kept
        ({MALLOC: "1000"}, "1000", True),
        ({}, None, True),  # nothing to do
    ],
)
def test_malloc_setting_leaked_by_a_nanny_is_dropped(monkeypatch, initial, current, kept):
    monkeypatch.setattr(cluster_module, "_initial_environ", lambda: dict(initial))
    if current is None:
        monkeypatch.delenv(MALLOC, raising=False)
    else:
        monkeypatch.setenv(MALLOC, current)
    cluster_module._drop_leaked_malloc_setting()
    assert os.environ.get(MALLOC) == (current if kept else None)


def test_without_proc_environ_only_dasks_own_value_counts_as_leaked(monkeypatch):
    monkeypatch.setattr(cluster_module, "_initial_environ", lambda: None)
    monkeypatch.setenv(MALLOC, "65536")
    cluster_module._drop_leaked_malloc_setting()
    assert MALLOC not in os.environ
    monkeypatch.setenv(MALLOC, "4096")
    cluster_module._drop_leaked_malloc_setting()
    assert os.environ[MALLOC] == "4096"

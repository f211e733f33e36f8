"""End to end: a misbehaving plugin costs its own pods (or its own say), never the others."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until

ROOT = Path(__file__).resolve().parents[2]


async def test_prebind_swallowing_cancellation_cannot_hold_the_only_binding_slot(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"preBind": {"enabled": [{"name": "StubbornPreBind"}]}},
    }
    config = scheduler_config(
        [profile],
        pluggableScheduler={
            "serverAddress": "127.0.0.1:0",
            "bindingConcurrency": 1,
            "timeouts": {"preBind": "300ms"},
        },
    )
    running = await start_daemon(config)
    plugin = running.plugin(cluster.scheduler_name, "StubbornPreBind")
    try:
        await cluster.create_pod("stubborn", labels={"stubborn": "yes"})
        await wait_until(lambda: plugin.cancellations >= 1, message="the first abandoned call")
        names = [f"p-{i}" for i in range(6)]
        for name in names:
            await cluster.create_pod(name)
        await cluster.wait_bound(names, within=20)
        await cluster.assert_bound_exactly_once(names)
        event = await cluster.wait_event("stubborn", "FailedScheduling")
        assert "StubbornPreBind" in event["note"]
        assert "on pod " in event["note"] and "timed out after 0.3s" in event["note"]
        assert (await cluster.placements())["stubborn"] == ""
        labels = {
            "plugin": "StubbornPreBind",
            "extension_point": "PreBind",
            "profile": cluster.scheduler_name,
        }
        metrics = running.daemon.metrics
        abandoned = metrics.sample("scheduler_plugin_abandoned_calls_total", labels)
        assert abandoned is not None and abandoned >= 1
        still = metrics.sample("scheduler_plugin_abandoned_calls_running", labels)
        assert still is not None and still >= 1
        # The stop does not wait for the hooks that never end.
        started = time.monotonic()
        assert await running.stop(within=15) == 0
        assert time.monotonic() - started < 10
    finally:
        plugin.release.set()


async def test_score_plugin_that_raises_under_ignore_does_not_stop_pods_binding(
    cluster: Cluster, start_daemon: StartDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scheduler's own Pod (the downward API's names): breaker events go there.
    await cluster.create_pod("scheduler-self", scheduler="nobody")
    monkeypatch.setenv("POD_NAME", "scheduler-self")
    monkeypatch.setenv("POD_NAMESPACE", cluster.namespace)
    await cluster.create_node("n1")
    await cluster.create_node("n2")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"score": {"enabled": [{"name": "BrokenScore"}]}},
        "pluggableScheduler": {"failurePolicy": {"BrokenScore": "Ignore"}},
    }
    running = await start_daemon(scheduler_config([profile]))
    names = [f"p-{i}" for i in range(5)]
    for name in names:
        await cluster.create_pod(name)
    await cluster.wait_bound(names, within=20)
    await cluster.assert_bound_exactly_once(names)
    event = await cluster.wait_event("p-0", "PluginIgnored")
    assert event["type"] == "Warning"
    assert event["note"].startswith("Score plugin BrokenScore left out (failurePolicy Ignore): ")
    assert "ZeroDivisionError: score divided by zero" in event["note"]
    ignored = running.daemon.metrics.sample(
        "scheduler_plugin_ignored_failures_total",
        {
            "plugin": "BrokenScore",
            "extension_point": "Score",
            "profile": cluster.scheduler_name,
            "reason": "error",
        },
    )
    assert ignored is not None and ignored >= 1
    # Five different pods failed in a row: the breaker took the plugin out.
    is_open = running.daemon.metrics.sample(
        "scheduler_plugin_circuit_open",
        {"plugin": "BrokenScore", "profile": cluster.scheduler_name},
    )
    assert is_open == 1.0
    opened: list[dict[str, object]] = []

    async def circuit_event() -> bool:
        opened[:] = await cluster.events("PluginCircuitOpen")
        return bool(opened)

    await wait_until(circuit_event, message="a PluginCircuitOpen event")
    assert str(opened[0]["note"]).startswith(
        f"plugin BrokenScore is out of profile {cluster.scheduler_name} for 30s"
    )
    assert opened[0]["regarding"]["kind"] == "Pod"
    assert opened[0]["regarding"]["name"] == "scheduler-self"


DAEMON_WITH_TEST_PLUGINS = """
import asyncio, json, sys
from scheduler.config.loading import load_config
from scheduler.daemon.daemon import Daemon
from scheduler.kube.client import KubeClient
from tests.e2e.plugins import catalog_with_test_plugins

async def main() -> int:
    config = load_config(json.loads(open(sys.argv[1]).read()))
    client = await KubeClient.from_kubeconfig(sys.argv[2], qps=0, burst=100)
    daemon = Daemon(config, catalog_with_test_plugins(), client, serve_health=False)
    try:
        return await daemon.run()
    finally:
        await client.close()

sys.exit(asyncio.run(main()))
"""


async def test_sigterm_ends_a_process_whose_prebind_never_ends(
    cluster: Cluster, tmp_path: Path
) -> None:
    """``asyncio.run`` awaits every task it knows at exit: abandoned hooks must not be known."""
    await cluster.create_node("n1")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"preBind": {"enabled": [{"name": "StubbornPreBind"}]}},
    }
    config = scheduler_config(
        [profile],
        pluggableScheduler={"serverAddress": "127.0.0.1:0", "timeouts": {"preBind": "200ms"}},
    )
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON_WITH_TEST_PLUGINS)
    log_file = tmp_path / "daemon.log"
    root = ROOT
    env = {**os.environ, "PYTHONPATH": str(root)}
    with log_file.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            str(config_file),
            str(cluster.backend.kubeconfig),
            stdout=log,
            stderr=log,
            cwd=root,
            env=env,
        )
        try:
            await cluster.create_pod("stubborn", labels={"stubborn": "yes"})
            event = await cluster.wait_event("stubborn", "FailedScheduling", within=30)
            assert "timed out after 0.2s" in event["note"]
            await cluster.create_pod("fine")
            await cluster.wait_bound(["fine"], within=30)
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    output = log_file.read_text()
    assert code == 0, output[-3000:]
    assert "abandoned PreBind plugin StubbornPreBind on pod" in output

"""End to end: a real ``run`` process applies an edited config file without a restart.

The file is replaced the way the kubelet updates a mounted ConfigMap (a new
file renamed over the old one). Decisions must follow each valid version;
an invalid version, or one changing a field only a restart can apply, must
leave the running config in place and be reported in the log, in
``/metrics`` and as an event on the scheduler's own Pod.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until
from tests.e2e.processes import PLAIN, free_port, start_run


def replace_file(path: Path, config: dict[str, Any]) -> None:
    """Swap the file's content atomically, as the kubelet's ConfigMap update does."""
    staged = path.with_suffix(".staged")
    staged.write_text(json.dumps(config))
    os.replace(staged, path)


async def sample(base: str, name: str, labels: dict[str, str] | None = None) -> float | None:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http,
        http.get(f"{base}/metrics") as response,
    ):
        text = await response.text()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in (labels or {}).items()):
                return float(s.value)
    return None


async def test_weights_args_and_plugins_change_live_and_bad_versions_are_refused(
    cluster: Cluster, tmp_path: Path
) -> None:
    for short, pool in (("a", "blue"), ("b", "blue"), ("c", "green")):
        await cluster.create_node(short, labels={"pool": pool})
    a, b, c = (cluster.node_name(s) for s in "abc")
    # The scheduler's own Pod, as the Deployment's downward API names it.
    await cluster.create_pod("scheduler-self", scheduler="nobody")
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    def config(weight_a: int, weight_b: int, pool: str, **extra: Any) -> dict[str, Any]:
        profile = {
            "schedulerName": cluster.scheduler_name,
            "plugins": {
                "filter": {"enabled": [{"name": "PoolFilter"}]},
                "score": {
                    "enabled": [
                        {"name": "FavourNodeA", "weight": weight_a},
                        {"name": "FavourNodeB", "weight": weight_b},
                    ]
                },
            },
            "pluginConfig": [
                {"name": "PoolFilter", "args": {"pool": pool}},
                {"name": "FavourNodeA", "args": {"node": a}},
                {"name": "FavourNodeB", "args": {"node": b}},
            ],
        }
        built = scheduler_config(
            [profile],
            leader_elect=True,
            namespace=cluster.namespace,
            lease="reload-lease",
            pluggableScheduler={
                "serverAddress": f"127.0.0.1:{port}",
                "configReloadPeriod": "0.2s",
            },
        )
        built.update(extra)
        return built

    env = {"POD_NAME": "scheduler-self", "POD_NAMESPACE": cluster.namespace}
    proc = await start_run(cluster, config(1, 5, "blue"), tmp_path, "daemon", env=env, args=PLAIN)
    config_file = tmp_path / "daemon.json"
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/reload-lease"

    async def reloads(result: str) -> float:
        return await sample(base, "scheduler_config_reloads_total", {"result": result}) or 0.0

    async def apply(version: dict[str, Any], result: str, count: int) -> None:
        replace_file(config_file, version)

        async def counted() -> bool:
            return await reloads(result) >= count

        await wait_until(counted, within=20, message=f"reload {result} #{count}")

    try:
        await cluster.create_pod("first")
        assert (await cluster.wait_bound(["first"], within=30))["first"] == b
        lease = await cluster.client.get(lease_path)
        holder = lease["spec"]["holderIdentity"]

        # Weights only: the plugin instances stay, the decisions follow.
        await apply(config(5, 1, "blue"), "success", 1)
        await cluster.create_pod("second")
        assert (await cluster.wait_bound(["second"]))["second"] == a

        # New args for the filter: a new instance, swapped between cycles.
        await apply(config(5, 1, "green"), "success", 2)
        await cluster.create_pod("third")
        assert (await cluster.wait_bound(["third"]))["third"] == c
        assert await sample(base, "scheduler_config_last_reload_successful") == 1.0

        # Invalid args: refused, the green pool stays in force.
        broken = config(5, 1, "green")
        broken["profiles"][0]["pluginConfig"][1]["args"] = {"nodes": a}
        await apply(broken, "failure", 1)
        assert await sample(base, "scheduler_config_last_reload_successful") == 0.0
        event = await cluster.wait_event("scheduler-self", "ConfigReloadFailed")
        assert event["type"] == "Warning"
        assert "the running configuration stays" in event["note"]
        assert "profiles[0].pluginConfig[1].args" in event["note"], event["note"]
        await cluster.create_pod("fourth")
        assert (await cluster.wait_bound(["fourth"]))["fourth"] == c

        # A field only a restart applies: refused as a whole, naming it.
        await apply(config(1, 5, "blue", parallelism=8), "failure", 2)
        refused = [
            e
            for e in await cluster.events_for("scheduler-self", "ConfigReloadFailed")
            if "parallelism" in e["note"]
        ]
        assert refused and "restart" in refused[0]["note"]
        await cluster.create_pod("fifth")
        assert (await cluster.wait_bound(["fifth"]))["fifth"] == c

        # A valid version again is applied, with a Normal event saying what changed.
        await apply(config(1, 5, "blue"), "success", 3)
        await cluster.create_pod("sixth")
        assert (await cluster.wait_bound(["sixth"]))["sixth"] == b
        applied = await cluster.wait_event("scheduler-self", "ConfigReloaded")
        assert applied["type"] == "Normal"
        assert await sample(base, "scheduler_config_last_reload_successful") == 1.0

        # One process all along, and it never let go of the lease.
        assert proc.returncode is None
        lease = await cluster.client.get(lease_path)
        assert lease["spec"]["holderIdentity"] == holder
        await cluster.assert_bound_exactly_once(
            ["first", "second", "third", "fourth", "fifth", "sixth"]
        )
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    output = (tmp_path / "daemon.log").read_text()
    assert "configuration reloaded" in output
    assert "configuration reload failed; the running configuration stays" in output


# -- in-process daemons: the reload's steps, driven one check at a time --------------


def profile_with(
    cluster: Cluster, filters: list[str], args: dict[str, Any], name: str | None = None
) -> dict[str, Any]:
    return {
        "schedulerName": name or cluster.scheduler_name,
        "plugins": {
            "filter": {"enabled": [{"name": f} for f in filters]},
            "preBind": {"enabled": [{"name": "ControlledPreBind"}]},
        },
        "pluginConfig": [{"name": n, "args": a} for n, a in args.items()],
    }


def watched(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    # Checked by the test (reloader.check()), never by the timer.
    return scheduler_config(profiles, pluggableScheduler={"configReloadPeriod": "1h"})


async def test_a_plugin_that_cannot_load_is_named_and_nothing_changes(
    cluster: Cluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    await cluster.create_node("n1", labels={"pool": "blue"})
    file = tmp_path / "config.json"
    config = watched([profile_with(cluster, ["PoolFilter"], {"PoolFilter": {"pool": "blue"}})])
    running = await start_daemon(config, config_file=file)
    reloader = running.daemon.reloader
    assert reloader is not None
    before = running.daemon.profiles
    unknown = watched(
        [profile_with(cluster, ["PoolFilter", "NoSuchFilter"], {"PoolFilter": {"pool": "blue"}})]
    )
    replace_file(file, unknown)
    assert await reloader.check() is False
    assert running.daemon.profiles is before
    assert running.daemon.metrics.sample("scheduler_config_last_reload_successful") == 0.0
    # The same bytes are not tried again; a fixed file is.
    assert await reloader.check() is None
    replace_file(file, config)
    assert await reloader.check() is True
    await cluster.create_pod("p")
    assert (await cluster.wait_bound(["p"]))["p"] == cluster.node_name("n1")
    # Not UTF-8: refused with the file named, the daemon keeps scheduling.
    file.write_bytes(b"\xff\xfe{")
    assert await reloader.check() is False
    await cluster.create_pod("q")
    await cluster.wait_bound(["q"])


async def test_new_args_wait_for_binding_cycles_of_the_old_instance(
    cluster: Cluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    """A replaced instance's in-flight pods finish first; pods popped meanwhile wait."""
    await cluster.create_node("blue", labels={"pool": "blue"})
    await cluster.create_node("green", labels={"pool": "green"})
    file = tmp_path / "config.json"
    running = await start_daemon(
        watched([profile_with(cluster, ["PoolFilter"], {"PoolFilter": {"pool": "blue"}})]),
        config_file=file,
    )
    reloader = running.daemon.reloader
    assert reloader is not None
    prebind = running.plugin(cluster.scheduler_name, "ControlledPreBind")
    gate = prebind.hold["held"] = asyncio.Event()
    await cluster.create_pod("held")
    await wait_until(lambda: prebind.entered.get("held") == 1, message="held in PreBind")
    replace_file(
        file, watched([profile_with(cluster, ["PoolFilter"], {"PoolFilter": {"pool": "green"}})])
    )
    check = asyncio.ensure_future(reloader.check())
    await asyncio.sleep(0.3)
    assert not check.done(), "the switch must wait for the held binding cycle"
    await cluster.create_pod("during")  # popped while paused: decided by the new config
    await asyncio.sleep(0.3)
    assert (await cluster.placements())["during"] == ""
    gate.set()
    assert await asyncio.wait_for(check, 10) is True
    placed = await cluster.wait_bound(["held", "during"])
    assert placed == {"held": cluster.node_name("blue"), "during": cluster.node_name("green")}
    # The plugin kept its instance (same args), so the test's handle still steers it.
    assert running.plugin(cluster.scheduler_name, "ControlledPreBind") is prebind


async def test_profiles_can_be_added_and_removed(
    cluster: Cluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    await cluster.create_node("n1")
    other = f"{cluster.scheduler_name}-other"
    file = tmp_path / "config.json"
    running = await start_daemon(watched([profile_with(cluster, [], {})]), config_file=file)
    reloader = running.daemon.reloader
    assert reloader is not None
    await cluster.create_pod("waiting", scheduler=other)  # nobody's yet
    replace_file(file, watched([profile_with(cluster, [], {}, name=other)]))
    assert await reloader.check() is True
    await cluster.wait_bound(["waiting"])
    await cluster.create_pod("orphan")  # its profile is gone
    await asyncio.sleep(1.0)
    assert (await cluster.placements())["orphan"] == ""
    assert running.daemon.queue.get(f"{cluster.namespace}/orphan") is None

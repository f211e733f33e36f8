"""End to end: the real daemon schedules through kubernetes-asyncio over HTTP.

Backend-agnostic: these run against the emulator (default) or a real
kube-apiserver (``--backend=real``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until


def pool_profile(name: str, pool: str) -> dict[str, Any]:
    return {
        "schedulerName": name,
        "plugins": {"filter": {"enabled": [{"name": "PoolFilter"}]}},
        "pluginConfig": [{"name": "PoolFilter", "args": {"pool": pool}}],
    }


def pod_scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


async def test_each_profile_binds_its_own_pods(cluster: Cluster, start_daemon: StartDaemon) -> None:
    a, b = f"{cluster.scheduler_name}-a", f"{cluster.scheduler_name}-b"
    await cluster.create_node("a1", labels={"pool": "a"})
    await cluster.create_node("a2", labels={"pool": "a"})
    await cluster.create_node("b1", labels={"pool": "b"})
    await start_daemon(scheduler_config([pool_profile(a, "a"), pool_profile(b, "b")]))
    names_a = [f"pa-{i}" for i in range(4)]
    names_b = [f"pb-{i}" for i in range(4)]
    for name in names_a:
        await cluster.create_pod(name, scheduler=a)
    for name in names_b:
        await cluster.create_pod(name, scheduler=b)
    await cluster.create_pod("not-ours", scheduler="someone-else")
    placed = await cluster.wait_bound(names_a + names_b)
    assert {placed[n] for n in names_a} <= {cluster.node_name("a1"), cluster.node_name("a2")}
    assert {placed[n] for n in names_b} == {cluster.node_name("b1")}
    await cluster.assert_bound_exactly_once(names_a + names_b)
    for name in names_a + names_b:
        event = await cluster.wait_event(name, "Scheduled")
        assert event["type"] == "Normal"
        assert (
            event["note"] == f"Successfully assigned {cluster.namespace}/{name} to {placed[name]}"
        )
        assert event["reportingController"] == "pluggable-scheduler"
        assert event["action"] == "Binding"
        assert event["regarding"]["kind"] == "Pod"
    assert (await cluster.placements())["not-ours"] == ""
    assert await cluster.events_for("not-ours", "FailedScheduling") == []


async def test_unschedulable_pod_reports_then_binds_when_a_node_fits(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    small = await cluster.create_node("small", cpu="1")
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    await cluster.create_pod("big", cpu="2")
    event = await cluster.wait_event("big", "FailedScheduling")
    # kube's text; with DefaultPreemption enabled it adds why preemption did not help.
    message = event["note"]
    assert message in (
        "0/1 nodes are available: 1 Insufficient cpu.",
        # 2 cpu on a 1-cpu node: more than the node has at all, which kube 1.36
        # makes UnschedulableAndUnresolvable (InsufficientResource.Unresolvable).
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling.",
        # kube 1.36's default profile: DynamicResources' PostFilter verdict comes first
        # (kube-scheduler 1.36.3's text for the same objects).
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    )
    assert event["type"] == "Warning"
    assert event["action"] == "Scheduling"
    assert event["reportingController"] == "pluggable-scheduler"

    async def condition_set() -> bool:
        cond = pod_scheduled_condition(await cluster.pod("big"))
        return cond is not None and cond.get("reason") == "Unschedulable"

    await wait_until(condition_set, message="the PodScheduled condition", every=0.05)
    cond = pod_scheduled_condition(await cluster.pod("big"))
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", message)

    big = await cluster.create_node("big", cpu="4")
    placed = await cluster.wait_bound(["big"])
    assert placed["big"] == big != small
    await cluster.wait_event("big", "Scheduled")
    await cluster.assert_bound_exactly_once(["big"])
    assert running.daemon.io.last_failure.get(f"{cluster.namespace}/big") is None


async def test_plugin_that_raises_costs_only_its_pods(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"filter": {"enabled": [{"name": "ExplodingFilter"}]}},
    }
    running = await start_daemon(scheduler_config([profile]))
    good = [f"good-{i}" for i in range(5)]
    bad = ["bad-0", "bad-1"]
    for i in range(5):
        await cluster.create_pod(good[i])
        if i < len(bad):
            await cluster.create_pod(bad[i], labels={"explode": "yes"})
    await cluster.wait_bound(good)
    for name in bad:
        event = await cluster.wait_event(name, "FailedScheduling")
        assert "ExplodingFilter" in event["note"]
        assert f"RuntimeError: cannot handle {name}" in event["note"]
    placed = await cluster.placements()
    assert [placed[n] for n in bad] == ["", ""]
    assert not running.task.done()
    await cluster.create_pod("late")
    await cluster.wait_bound(["late"])
    await cluster.assert_bound_exactly_once([*good, "late"])


async def test_prebind_hanging_past_its_timeout_requeues_the_pod(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"preBind": {"enabled": [{"name": "ControlledPreBind"}]}},
    }
    config = scheduler_config(
        [profile],
        pluggableScheduler={
            "serverAddress": "127.0.0.1:0",
            "timeouts": {"preBind": "300ms"},
        },
    )
    running = await start_daemon(config)
    plugin = running.plugin(cluster.scheduler_name, "ControlledPreBind")
    plugin.hang = True
    await cluster.create_pod("p")
    event = await cluster.wait_event("p", "FailedScheduling")
    assert "ControlledPreBind" in event["note"] and "timed out after 0.3s" in event["note"]
    assert (await cluster.placements())["p"] == ""
    plugin.hang = False
    await cluster.wait_bound(["p"])
    assert plugin.entered["p"] >= 2
    await cluster.wait_event("p", "Scheduled")
    await cluster.assert_bound_exactly_once(["p"])


async def test_the_next_pod_waits_for_a_free_binding_slot(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    """With every slot binding, a decision could not be sent: the pod stays queued (and
    unassumed) until a binding ends, then is decided on the cluster as it is then."""
    await cluster.create_node("n1", cpu="8")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {
            "bind": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "ControlledBind"}, {"name": "DefaultBinder"}],
            }
        },
    }
    config = scheduler_config([profile], pluggableScheduler={"bindingConcurrency": 2})
    running = await start_daemon(config)
    binder = running.plugin(cluster.scheduler_name, "ControlledBind")
    gates = {name: asyncio.Event() for name in ("a", "b")}
    binder.hold.update(gates)
    scheduler = running.daemon.scheduler
    for name in ("a", "b"):
        await cluster.create_pod(name)
    await wait_until(lambda: set(binder.entered) == {"a", "b"}, message="a and b binding")
    names = [f"p{i}" for i in range(3)]
    for name in names:
        await cluster.create_pod(name)
    await asyncio.sleep(0.5)
    assert scheduler.attempts == 2, "no decision while both slots bind"
    assert all(not running.daemon.cache.is_assumed(f"{cluster.namespace}/{n}") for n in names)
    gates["a"].set()
    await cluster.wait_bound(["a", *names])
    assert scheduler.attempts == 5
    gates["b"].set()
    await cluster.wait_bound(["b"])
    await cluster.assert_bound_exactly_once(["a", "b", *names])


async def test_a_waiting_prebind_holds_no_binding_slot(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    """PreBind may wait minutes for others (volumes being provisioned): as in
    kube-scheduler, the pods after it are decided and bound meanwhile, however many
    PreBinds wait."""
    await cluster.create_node("n1", cpu="8")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {"preBind": {"enabled": [{"name": "ControlledPreBind"}]}},
    }
    config = scheduler_config([profile], pluggableScheduler={"bindingConcurrency": 2})
    running = await start_daemon(config)
    prebind = running.plugin(cluster.scheduler_name, "ControlledPreBind")
    held = ["a", "b", "c"]
    gates = {name: asyncio.Event() for name in held}
    prebind.hold.update(gates)
    for name in held:
        await cluster.create_pod(name)
    await wait_until(lambda: set(prebind.entered) == set(held), message="a, b and c in PreBind")
    names = [f"p{i}" for i in range(3)]
    for name in names:
        await cluster.create_pod(name)
    await cluster.wait_bound(names)
    placements = await cluster.placements()
    assert [placements[n] for n in held] == ["", "", ""], "still in PreBind"
    for gate in gates.values():
        gate.set()
    await cluster.wait_bound(held)
    await cluster.assert_bound_exactly_once([*held, *names])


async def test_profiles_share_the_sampling_start(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    """kube keeps one ``nextStartNodeIndex`` for the scheduler: a cycle of one profile
    moves it for the next cycle of any other, so profiles sample on from each other."""
    for i in range(120):
        await cluster.create_node(f"n{i:03d}")
    other = f"{cluster.scheduler_name}-b"
    config = scheduler_config(
        [{"schedulerName": cluster.scheduler_name}, {"schedulerName": other}],
        percentageOfNodesToScore=10,  # 120 nodes: kube's floor of 100 per cycle
    )
    running = await start_daemon(config)
    algorithms = running.daemon.scheduler.algorithms
    await cluster.create_pod("a")
    await cluster.wait_bound(["a"])
    assert [algorithms[name].next_start for name in (cluster.scheduler_name, other)] == [100, 100]
    await cluster.create_pod("b", scheduler=other)
    await cluster.wait_bound(["b"])
    assert [algorithms[name].next_start for name in (cluster.scheduler_name, other)] == [80, 80]
    await cluster.assert_bound_exactly_once(["a", "b"])

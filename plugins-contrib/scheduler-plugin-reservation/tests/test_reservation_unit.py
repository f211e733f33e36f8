"""Reservation's decisions with scheduler.testing.PluginTestKit: placement, use, expiry."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from scheduler.api import Code, CycleState
from scheduler.testing import PluginTestKit, installed_plugin, make_node, make_pod

from scheduler_plugin_reservation import Reservation, ReservationError, ReservationPlugin

PROFILE = "pluggable-scheduler"
CREATED = "2026-01-01T00:00:00Z"
T0 = 1767225600.0  # CREATED as POSIX time


def reservation(
    name: str,
    *,
    cpu: str = "2",
    owners: Sequence[Mapping[str, Any]] = ({"labelSelector": {"matchLabels": {"app": "web"}}},),
    ttl: str | None = None,
    expires: str | None = None,
    allocate_once: bool | None = None,
    status: Mapping[str, Any] | None = None,
    node_name: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"namespace": "default"},
            "spec": {
                "schedulerName": PROFILE,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            },
        },
        "owners": [dict(o) for o in owners],
    }
    if node_name:
        spec["template"]["spec"]["nodeName"] = node_name
    if ttl is not None:
        spec["ttl"] = ttl
    if expires is not None:
        spec["expires"] = expires
    if allocate_once is not None:
        spec["allocateOnce"] = allocate_once
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": CREATED},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = dict(status)
    return obj


def available(node: str, cpu: str = "2000m", **extra: Any) -> dict[str, Any]:
    return {"phase": "Available", "nodeName": node, "allocatable": {"cpu": cpu}, **extra}


def pod(name: str, cpu: str = "1", **labels: str) -> dict[str, Any]:
    obj = make_pod(name, cpu=cpu, labels=labels)
    obj["metadata"]["uid"] = f"uid-{name}"
    return dict(obj)


class RecordingClient:
    """handle.client: records the requests, answers with an empty object."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.requests.append((method, path, body))
        return {}

    def statuses(self, name: str) -> list[dict[str, Any]]:
        suffix = f"/reservations/{name}/status"
        return [b["status"] for m, p, b in self.requests if m == "PATCH" and p.endswith(suffix)]


class Clock:
    def __init__(self, now: float = T0 + 60) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def setup(
    *objects: Mapping[str, Any], nodes: int = 2, cpu: str = "4"
) -> tuple[PluginTestKit, ReservationPlugin, RecordingClient, Clock]:
    client = RecordingClient()
    kit = PluginTestKit(
        nodes=[make_node(f"n{i}", cpu=cpu) for i in range(1, nodes + 1)],
        objects=list(objects),
        profile=PROFILE,
        client=client,
    )
    plugin = kit.build(ReservationPlugin)
    clock = Clock()
    plugin.clock = clock  # type: ignore[method-assign]
    fit = kit.build(installed_plugin("NodeResourcesFit").plugin_class)
    node_name = kit.build(installed_plugin("NodeName").plugin_class)
    kit.profile(plugin, node_name, fit)
    return kit, plugin, client, clock


def schedule(kit: PluginTestKit, obj: Mapping[str, Any]) -> tuple[str | None, Any]:
    framework = kit.handle.framework
    return framework.find_node(framework.pod_from_object(obj), kit.nodes())


# -- parsing -------------------------------------------------------------------------------


def test_koordinator_defaults_ttl_24h_and_allocate_once() -> None:
    r = Reservation.from_object(reservation("r"))
    assert r.allocate_once and r.expires_at == T0 + 24 * 3600
    assert r.requests == {"cpu": 2000} and r.scheduler_name == PROFILE
    assert Reservation.from_object(reservation("r", ttl="0")).expires_at is None
    assert Reservation.from_object(reservation("r", ttl="90s")).expires_at == T0 + 90
    expires = Reservation.from_object(reservation("r", ttl="1h", expires="2026-01-01T00:00:10Z"))
    assert expires.expires_at == T0 + 10  # expires is checked first


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"owners": []}, "Reservation bad: spec.owners must list at least one owner"),
        ({"ttl": "soon"}, "Reservation bad: spec.ttl 'soon'"),
        ({"template": {}}, "Reservation bad: spec.template.spec is missing"),
        (
            {"owners": [{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "X"}]}}]},
            "spec.owners[0].labelSelector",
        ),
    ],
)
def test_bad_reservations_are_refused_naming_the_object_and_field(
    change: dict[str, Any], message: str
) -> None:
    obj = reservation("bad")
    obj["spec"].update(change)
    with pytest.raises(ReservationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Reservation.from_object(obj)


def test_owners_match_object_controller_and_selector_as_koordinator_does() -> None:
    kit = PluginTestKit(profile=PROFILE)
    by_object = Reservation.from_object(
        reservation("r", owners=[{"object": {"namespace": "default", "name": "a"}}])
    )
    assert by_object.matches(kit.pod(pod("a"))) and not by_object.matches(kit.pod(pod("b")))
    controlled = pod("c")
    controlled["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j1", "controller": True}
    ]
    by_controller = Reservation.from_object(
        reservation(
            "r",
            owners=[
                {
                    "controller": {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "train",
                        "uid": "j1",
                        "namespace": "default",
                    }
                }
            ],
        )
    )
    assert by_controller.matches(kit.pod(controlled))
    assert not by_controller.matches(kit.pod(pod("d")))
    both = Reservation.from_object(
        reservation(
            "r",
            owners=[
                {"object": {"name": "x"}, "labelSelector": {"matchLabels": {"app": "web"}}},
                {"labelSelector": {"matchLabels": {"team": "ml"}}},
            ],
        )
    )
    assert both.matches(kit.pod(pod("x", app="web")))  # first owner: both parts
    assert not both.matches(kit.pod(pod("y", app="web")))  # first owner: name differs
    assert both.matches(kit.pod(pod("z", team="ml")))  # second owner (ORed)


# -- placement -----------------------------------------------------------------------------


async def test_a_pending_reservation_is_placed_through_filter_and_score() -> None:
    kit, plugin, client, _ = setup(reservation("r1", cpu="3"))
    kit.add_pod(pod("busy", cpu="2"), "n1")
    await plugin.sync()
    [status] = client.statuses("r1")
    assert status["phase"] == "Available" and status["nodeName"] == "n2"
    assert status["allocatable"] == {"cpu": "3000m"}
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("Scheduled", "True"),
        ("Ready", "True"),
    ]
    # Its room is held for other pods at once, before the status comes back.
    node, result = schedule(kit, pod("other", cpu="3"))
    assert node is None and "Insufficient cpu" in result.message()


async def test_reservations_see_each_other_and_unplaceable_ones_say_why() -> None:
    _, plugin, client, _ = setup(
        reservation("r1", cpu="3"), reservation("r2", cpu="3"), reservation("r3", cpu="3")
    )
    await plugin.sync()
    nodes = {client.statuses(n)[0].get("nodeName") for n in ("r1", "r2", "r3")}
    assert {"n1", "n2"} <= nodes  # two placed on different nodes
    [stuck] = [n for n in ("r1", "r2", "r3") if not client.statuses(n)[0].get("nodeName")]
    condition = client.statuses(stuck)[0]["conditions"][0]
    assert (condition["reason"], condition["status"]) == ("Unschedulable", "False")
    assert "Insufficient cpu" in condition["message"]
    await plugin.sync()  # the same message is not written again
    assert len(client.statuses(stuck)) == 1


async def test_only_the_profile_the_template_names_places_it() -> None:
    other = reservation("r1")
    other["spec"]["template"]["spec"]["schedulerName"] = "someone-else"
    _, plugin, client, _ = setup(other)
    await plugin.sync()
    assert client.requests == []


# -- consumption ---------------------------------------------------------------------------


def test_an_owner_uses_the_room_others_are_refused() -> None:
    kit, _, _, _ = setup(reservation("r1", cpu="3", status=available("n1", "3000m")), nodes=1)
    node, status = schedule(kit, pod("stranger", cpu="2"))
    assert node is None and "Insufficient cpu" in status.message()
    node, status = schedule(kit, pod("owner", cpu="2", app="web"))
    assert node == "n1", status.message()


def test_score_prefers_the_node_of_the_owners_reservation() -> None:
    kit, plugin, _, _ = setup(reservation("r1", cpu="1", status=available("n2", "1000m")))
    state = CycleState()
    owner = kit.pod(pod("owner", cpu="1", app="web"))
    assert kit.call(plugin, "before_filter", owner, state=state) is None  # its own: free
    scores = kit.call(plugin, "score", owner, state=state)
    assert scores.tolist() == [0, 100]


async def test_allocate_once_is_consumed_by_one_owner_and_released() -> None:
    kit, plugin, client, _ = setup(
        reservation("r1", cpu="3", status=available("n1", "3000m")), nodes=1
    )
    state = CycleState()
    owner = kit.pod(pod("owner", cpu="1", app="web"))
    kit.call(plugin, "before_filter", owner, state=state)
    assert kit.call(plugin, "reserve", owner, state=state, node_name="n1") is None
    kit.add_pod(owner, "n1")
    await plugin.post_bind(state, owner, "n1")
    [status] = client.statuses("r1")
    assert status["phase"] == "Succeeded" and status["allocated"] == {"cpu": "1000m"}
    assert status["currentOwners"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": "default",
            "name": "owner",
            "uid": "uid-owner",
        }
    ]
    assert status["conditions"][-1]["reason"] == "Succeeded"
    # What the reservation still held is free again, for a second owner and for others.
    assert plugin.held() == []
    assert schedule(kit, pod("stranger", cpu="3"))[0] == "n1"


def test_unreserve_gives_the_reservation_back() -> None:
    kit, plugin, _, _ = setup(reservation("r1", cpu="3", status=available("n1", "3000m")), nodes=1)
    state = CycleState()
    owner = kit.pod(pod("owner", cpu="1", app="web"))
    kit.call(plugin, "before_filter", owner, state=state)
    kit.call(plugin, "reserve", owner, state=state, node_name="n1")
    assert plugin.held() == []  # allocateOnce: taken by the pod in flight
    kit.call(plugin, "unreserve", owner, state=state, node_name="n1")
    assert [h.reservation.name for h in plugin.held()] == ["r1"]


def test_without_allocate_once_owners_share_what_remains() -> None:
    r = reservation("r1", cpu="3", allocate_once=False, status=available("n1", "3000m"))
    kit, plugin, _, _ = setup(r, nodes=1)
    for name in ("a", "b"):
        state = CycleState()
        owner = kit.pod(pod(name, cpu="1", app="web"))
        assert schedule(kit, pod(name, cpu="1", app="web"))[0] == "n1"
        kit.call(plugin, "before_filter", owner, state=state)
        kit.call(plugin, "reserve", owner, state=state, node_name="n1")
        kit.add_pod(owner, "n1")
    [held] = plugin.held()
    assert held.remaining == {"cpu": 1000}
    # An owner bigger than what remains does not use it, and finds no room besides.
    node, _ = schedule(kit, pod("c", cpu="2", app="web"))
    assert node is None


# -- expiry --------------------------------------------------------------------------------


async def test_expiry_fails_the_reservation_with_koordinators_reason_and_frees_the_room() -> None:
    r = reservation("r1", cpu="3", ttl="10m", status=available("n1", "3000m"))
    kit, plugin, client, clock = setup(r, nodes=1)
    assert schedule(kit, pod("stranger", cpu="2"))[0] is None
    await plugin.sync()
    assert client.statuses("r1") == []  # not due yet
    clock.now = T0 + 601
    assert schedule(kit, pod("stranger", cpu="2"))[0] == "n1"  # expired: holds nothing
    await plugin.sync()
    [status] = client.statuses("r1")
    assert status["phase"] == "Failed"
    ready = status["conditions"][-1]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "False", "Expired")


def test_a_reservation_whose_template_names_a_node_stays_there() -> None:
    kit, plugin, _, _ = setup(reservation("r1", cpu="1", node_name="n2"))
    framework = kit.handle.framework
    pseudo = framework.pod_from_object(plugin.reservations()[0].reserve_pod())
    node, status = framework.find_node(pseudo, kit.nodes())
    assert (node, status.code) == ("n2", Code.SUCCESS)


async def test_the_sync_task_places_pending_ones_and_ends_with_the_plugin() -> None:
    client = RecordingClient()
    kit = PluginTestKit(
        nodes=[make_node("n1")],
        objects=[reservation("r1", ttl="0")],
        profile=PROFILE,
        client=client,
    )
    plugin = kit.build(ReservationPlugin, {"syncIntervalSeconds": 0.01})
    kit.profile(plugin, kit.build(installed_plugin("NodeResourcesFit").plugin_class))
    task = plugin._task
    assert task is not None
    for _ in range(200):
        if client.statuses("r1"):
            break
        await asyncio.sleep(0.01)
    assert client.statuses("r1")[0].get("nodeName") == "n1", client.statuses("r1")
    kit = None  # type: ignore[assignment]  # the profile holds the plugin too
    del plugin
    gc.collect()
    await asyncio.wait_for(task, 1)


async def test_a_shared_reservation_gets_back_what_a_deleted_owner_took() -> None:
    owners = [
        {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": n, "uid": f"uid-{n}"}
        for n in ("a", "b")
    ]
    r = reservation(
        "r1",
        cpu="3",
        allocate_once=False,
        status=available("n1", "3000m", allocated={"cpu": "2000m"}, currentOwners=owners),
    )
    still_there = pod("a", cpu="1", app="web")
    still_there["spec"]["nodeName"] = "n1"
    _, plugin, client, _ = setup(r, still_there, nodes=1)  # b was deleted
    await plugin.sync()
    [status] = client.statuses("r1")
    assert [o["name"] for o in status["currentOwners"]] == ["a"]
    assert status["allocated"] == {"cpu": "1000m"}

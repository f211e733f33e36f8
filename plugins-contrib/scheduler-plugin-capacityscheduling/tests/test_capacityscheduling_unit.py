"""CapacityScheduling's decisions one hook at a time, with scheduler.testing.PluginTestKit."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from scheduler.api import Code, CycleState, Status
from scheduler.testing import PluginTestKit, RecordingClient
from scheduler.testing.objects import make_node, make_pod

from scheduler_plugin_capacityscheduling import CapacityScheduling, QuotaError, QuotaSpec
from scheduler_plugin_capacityscheduling.book import DOUBT_SECONDS, QuotaBook
from scheduler_plugin_capacityscheduling.plugin import SNAPSHOT_KEY
from scheduler_plugin_capacityscheduling.quota import QuotaSet
from scheduler_plugin_capacityscheduling.status import desired_used


def quota(
    namespace: str,
    *,
    min: Mapping[str, Any] | None = None,
    max: Mapping[str, Any] | None = None,
    name: str = "quota",
    created: str = "2024-01-01T00:00:00Z",
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if min is not None:
        spec["min"] = dict(min)
    if max is not None:
        spec["max"] = dict(max)
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": spec,
    }


def pod(
    name: str,
    namespace: str,
    cpu: str = "1",
    *,
    memory: str | None = "1Gi",
    node: str | None = None,
    priority: int | None = None,
    phase: str | None = None,
) -> dict[str, Any]:
    obj = dict(
        make_pod(
            name,
            namespace=namespace,
            cpu=cpu,
            memory=memory,
            node_name=node,
            priority=priority,
        )
    )
    obj["metadata"] = {**obj["metadata"], "uid": f"uid-{namespace}-{name}"}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


NODES = [make_node(f"n{i}", cpu="8", memory="32Gi") for i in range(4)]
A = {"cpu": "2", "memory": "8Gi"}
B = {"cpu": "4", "memory": "8Gi"}
MAX = {"cpu": "6", "memory": "16Gi"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def build(objects: Sequence[Mapping[str, Any]]) -> tuple[CapacityScheduling, PluginTestKit]:
    kit = PluginTestKit(nodes=NODES, objects=objects, profile="pluggable-scheduler")
    return kit.build(CapacityScheduling), kit


def pre_filter(
    plugin: CapacityScheduling, kit: PluginTestKit, obj: Mapping[str, Any]
) -> tuple[Status, CycleState]:
    state = CycleState()
    status = kit.call(plugin, "pre_filter", obj, state=state)
    return (status if status is not None else Status.success()), state


def bound(namespace: str, count: int, cpu: str = "1") -> list[dict[str, Any]]:
    return [pod(f"run-{i}", namespace, cpu, node=f"n{i % 4}") for i in range(count)]


# -- PreFilter ------------------------------------------------------------------------------


def test_pod_within_its_min_passes() -> None:
    plugin, kit = build([quota("a", min=A, max=MAX), quota("b", min=B, max=MAX)])
    status, state = pre_filter(plugin, kit, pod("p", "a"))
    assert status.is_success()
    assert isinstance(state.read(SNAPSHOT_KEY), QuotaSet)


def test_over_max_is_rejected_with_scheduler_plugins_message() -> None:
    objects = [quota("a", min=A, max={"cpu": "3", "memory": "16Gi"}), *bound("a", 3)]
    plugin, kit = build(objects)
    status, _ = pre_filter(plugin, kit, pod("p", "a"))
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == (
        "Pod a/p is rejected in PreFilter because ElasticQuota a is more than Max"
    )


def test_borrowing_up_to_the_unused_min_of_others_then_rejected() -> None:
    # min a=2, b=4: the guaranteed total is 6 cpus. a already runs 5 (borrowing 3 of b's 4).
    wide = {"cpu": "10", "memory": "16Gi"}
    objects = [quota("a", min=A, max=wide), quota("b", min=B, max=wide), *bound("a", 5)]
    plugin, kit = build(objects)
    assert pre_filter(plugin, kit, pod("p", "a"))[0].is_success()  # 6 <= 6
    status, _ = pre_filter(plugin, kit, pod("p", "a", "2"))  # 7 > 6
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == (
        "Pod a/p is rejected in PreFilter because total ElasticQuota used is more than min"
    )


def test_pod_outside_any_quota_is_not_limited() -> None:
    plugin, kit = build([quota("a", min=A, max=MAX), *bound("a", 6)])
    assert pre_filter(plugin, kit, pod("free", "elsewhere", "64"))[0].is_success()


def test_finished_pods_release_their_quota() -> None:
    done = [pod(f"done-{i}", "a", node="n0", phase="Succeeded") for i in range(6)]
    plugin, kit = build([quota("a", min=MAX, max=MAX), *done])
    assert pre_filter(plugin, kit, pod("p", "a", "6"))[0].is_success()
    assert plugin.book.live["a"].used == {}


def test_unbound_pods_are_not_charged() -> None:
    pending = [pod(f"pending-{i}", "a") for i in range(6)]
    plugin, kit = build([quota("a", min=MAX, max=MAX), *pending])
    assert pre_filter(plugin, kit, pod("p", "a", "6"))[0].is_success()


def test_max_without_memory_rejects_memory_requests_as_scheduler_plugins_does() -> None:
    # newElasticQuotaInfo builds max from the given list: memory absent means 0.
    plugin, kit = build([quota("a", min={"cpu": "1"}, max={"cpu": "4"})])
    assert pre_filter(plugin, kit, pod("cpu-only", "a", memory=None))[0].is_success()
    status, _ = pre_filter(plugin, kit, pod("with-memory", "a"))
    assert status.code is Code.UNSCHEDULABLE


def test_omitted_max_is_unlimited_and_omitted_min_guarantees_nothing() -> None:
    plugin, kit = build([quota("a", max=MAX), quota("b", min={"cpu": "10", "memory": "1Ti"})])
    # b lends its whole min; b itself has no max.
    assert pre_filter(plugin, kit, pod("p", "a", "6"))[0].is_success()
    assert pre_filter(plugin, kit, pod("p", "b", "10"))[0].is_success()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"min": {"cpu": "lots"}},
            "ElasticQuota a/quota: spec.min.cpu",
        ),
        (
            {"min": {"cpu": "4"}, "max": {"cpu": "2"}},
            "ElasticQuota a/quota: spec.min.cpu (4) is greater than spec.max.cpu (2)",
        ),
        ({"max": ["cpu"]}, "ElasticQuota a/quota: spec.max must be an object"),
    ],
)
def test_unusable_quota_rejects_its_pods_naming_the_field(
    spec: dict[str, Any], message: str
) -> None:
    obj = quota("a")
    obj["spec"] = spec
    plugin, kit = build([obj, quota("b", min=B, max=MAX)])
    status, _ = pre_filter(plugin, kit, pod("p", "a"))
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert message in status.message()
    assert pre_filter(plugin, kit, pod("p", "b"))[0].is_success()  # others are unaffected


def test_the_oldest_quota_of_a_namespace_governs_it() -> None:
    objects = [
        quota("a", max={"cpu": "1", "memory": "1Gi"}, name="newer", created="2024-02-01T00:00:00Z"),
        quota("a", min=A, max=MAX, name="older", created="2024-01-01T00:00:00Z"),
    ]
    plugin, kit = build(objects)
    assert pre_filter(plugin, kit, pod("p", "a", "2"))[0].is_success()
    assert plugin.book.live["a"].spec.name == "older"


# -- Reserve / Unreserve: pods in flight ------------------------------------------------------


def test_reserved_pods_count_before_they_are_bound_and_unreserve_releases_them() -> None:
    plugin, kit = build([quota("a", min=A, max={"cpu": "2", "memory": "16Gi"})])
    first, second, third = pod("p1", "a"), pod("p2", "a"), pod("p3", "a")
    for obj in (first, second):
        status, state = pre_filter(plugin, kit, obj)
        assert status.is_success()
        assert kit.call(plugin, "reserve", obj, state=state, node_name="n0") is None
    assert plugin.book.live["a"].used == {"cpu": 2000, "memory": 2 * 2**30}
    assert sorted(plugin.book.in_flight()) == ["uid-a-p1", "uid-a-p2"]
    status, _ = pre_filter(plugin, kit, third)
    assert status.code is Code.UNSCHEDULABLE  # the two in flight hold the quota's max

    clock = FakeClock()
    plugin.book.clock = clock
    kit.call(plugin, "unreserve", first, state=CycleState(), node_name="n0")
    kit.call(plugin, "unreserve", first, state=CycleState(), node_name="n0")  # idempotent
    # Its binding may have committed with the answer lost: charged a while longer.
    assert pre_filter(plugin, kit, third)[0].code is Code.UNSCHEDULABLE
    clock.now += DOUBT_SECONDS
    assert pre_filter(plugin, kit, third)[0].is_success()
    assert plugin.book.live["a"].used == {"cpu": 1000, "memory": 2**30}


def test_a_failed_pod_retried_does_not_count_against_itself() -> None:
    one = {"cpu": "1", "memory": "16Gi"}
    plugin, kit = build([quota("a", min=one, max=one)])
    obj = pod("p", "a")
    state = pre_filter(plugin, kit, obj)[1]
    kit.call(plugin, "reserve", obj, state=state, node_name="n0")
    kit.call(plugin, "unreserve", obj, state=state, node_name="n0")
    status, state = pre_filter(plugin, kit, obj)  # its retry, while its charge is in doubt
    assert status.is_success()
    assert kit.call(plugin, "reserve", obj, state=state, node_name="n1") is None
    assert plugin.book.live["a"].used["cpu"] == 1000
    assert plugin.book.in_flight() == ["uid-a-p"]


def test_reserve_refuses_to_take_a_quota_above_max() -> None:
    # Two decisions made on the same snapshot: the second Reserve must not overshoot.
    plugin, kit = build(
        [quota("a", min={"cpu": "1", "memory": "8Gi"}, max={"cpu": "1", "memory": "16Gi"})]
    )
    first, second = pod("p1", "a"), pod("p2", "a")
    s1 = pre_filter(plugin, kit, first)
    s2 = pre_filter(plugin, kit, second)
    assert s1[0].is_success() and s2[0].is_success()
    assert kit.call(plugin, "reserve", first, state=s1[1], node_name="n0") is None
    status = kit.call(plugin, "reserve", second, state=s2[1], node_name="n1")
    assert status.code is Code.UNSCHEDULABLE
    assert "is more than Max" in status.message()
    assert plugin.book.live["a"].used["cpu"] == 1000
    kit.call(plugin, "unreserve", second, state=s2[1], node_name="n1")  # Reserve failed: no-op
    assert plugin.book.live["a"].used["cpu"] == 1000


def test_reserve_is_idempotent_for_a_pod_already_charged() -> None:
    plugin, kit = build([quota("a", min=A, max=MAX)])
    obj = pod("p", "a")
    state = pre_filter(plugin, kit, obj)[1]
    kit.call(plugin, "reserve", obj, state=state, node_name="n0")
    kit.call(plugin, "reserve", obj, state=state, node_name="n0")
    assert plugin.book.live["a"].used["cpu"] == 1000


# -- PreFilter extensions: preemption's what-if copies ------------------------------------------


def test_add_and_remove_pod_change_only_the_cycle_snapshot() -> None:
    objects = [quota("a", min=MAX, max=MAX), *bound("a", 2)]
    plugin, kit = build(objects)
    status, state = pre_filter(plugin, kit, pod("p", "a"))
    assert status.is_success()
    copy = state.clone()
    victim = kit.pod(pod("run-0", "a", node="n0"))
    kit.call(
        plugin, "pre_filter_remove_pod", pod("p", "a"), state=copy, pod_to_remove=victim, node="n0"
    )
    assert copy.read(SNAPSHOT_KEY)["a"].used["cpu"] == 1000
    assert state.read(SNAPSHOT_KEY)["a"].used["cpu"] == 2000  # the original is untouched
    kit.call(plugin, "pre_filter_add_pod", pod("p", "a"), state=copy, pod_to_add=victim, node="n0")
    assert copy.read(SNAPSHOT_KEY)["a"].used["cpu"] == 2000
    assert plugin.book.live["a"].used["cpu"] == 2000


# -- status.used ---------------------------------------------------------------------------------


def test_status_used_names_min_and_max_resources_and_never_exceeds_max() -> None:
    spec = QuotaSpec.from_object(quota("a", min={"cpu": "1"}, max={"cpu": "2", "memory": "1Gi"}))
    used, capped = desired_used(spec, {"cpu": 1500})
    assert used == {"cpu": 1500, "memory": 0} and capped == []
    used, capped = desired_used(spec, {"cpu": 3000, "nvidia.com/gpu": 1})
    assert used == {"cpu": 2000, "memory": 0, "nvidia.com/gpu": 1}
    assert capped == ["cpu"]


def test_quota_spec_errors_are_quota_errors() -> None:
    with pytest.raises(QuotaError, match=r"spec\.max\.memory"):
        QuotaSpec.from_object(quota("a", max={"memory": "-1Gi"}))


# -- the book against a changing pod store -----------------------------------------------------


class Store:
    """The ObjectStore protocol over a dict the test changes (what an informer does)."""

    def __init__(self, objects: Sequence[Mapping[str, Any]] = ()) -> None:
        self.objects: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._log: list[tuple[str, str]] = []  # the key changed at each revision
        self.forgets = False  # answer changed_since with None, as after a re-list
        for obj in objects:
            self.put(obj)

    def put(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        self.objects[key] = dict(obj)  # a new object, as informers
        self._log.append(key)

    def remove(self, namespace: str, name: str) -> None:
        del self.objects[(namespace, name)]
        self._log.append((namespace, name))

    def changed_since(self, revision: int) -> set[tuple[str, str]] | None:
        return None if self.forgets else set(self._log[revision:])

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((namespace, name))

    def list(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        return [o for (ns, _), o in self.objects.items() if namespace in (None, ns)]

    def revision(self) -> int:
        return len(self._log)


def test_an_unreserved_pod_is_released_by_a_newer_unbound_version_or_kept_if_bound() -> None:
    kit = PluginTestKit()
    pods = Store([pod("lost", "a"), pod("failed", "a")])
    book = QuotaBook(pods, Store([quota("a", min=A, max=MAX)]))
    book.sync()
    for name in ("lost", "failed"):
        view = kit.pod(pods.get("a", name))
        book.reserve(view)
        book.unreserve(view)
    book.sync()
    assert book.live["a"].used["cpu"] == 2000  # both in doubt
    # "failed" gets its failure condition: a newer version, not on a node.
    pods.put({**pod("failed", "a"), "status": {"conditions": [{"type": "PodScheduled"}]}})
    # "lost" was bound after all (its binding's answer was lost).
    pods.put(pod("lost", "a", node="n0"))
    book.sync()
    assert book.live["a"].used["cpu"] == 1000
    assert book.bound_used("a") == {"cpu": 1000, "memory": 2**30}
    book.clock = lambda: 10**9  # long after: the bound pod stays charged
    book.sync()
    assert book.live["a"].used["cpu"] == 1000
    pods.remove("a", "lost")
    book.sync()
    assert book.live["a"].used == {} and book.bound_used("a") == {}


# -- PostFilter: the whole preemption, as the scheduler runs it ---------------------------------


def test_the_book_follows_changed_pods_as_a_fresh_book_reads_them() -> None:
    """Synced on what the store says changed, or on everything when it cannot
    tell, the book charges exactly what a book built from the store now does."""
    rng = random.Random(7)
    pods = Store()
    quotas = Store([quota(ns, min=A, max=MAX) for ns in ("a", "b")])
    book = QuotaBook(pods, quotas)
    stages: dict[tuple[str, str], tuple[int, str, int]] = {}  # key -> (uid, cpu, stage)
    for step in range(400):
        key = (rng.choice(("a", "b")), f"p{rng.randrange(6)}")
        if key not in stages:  # created pending or already bound, under a new uid
            stages[key] = (step, str(rng.randint(1, 3)), rng.randrange(2))
        elif rng.random() < 0.3 or stages[key][2] == 2:
            del stages[key]
            pods.remove(*key)
            continue
        else:  # pending -> bound -> succeeded
            uid, cpu, stage = stages[key]
            stages[key] = (uid, cpu, stage + 1)
        uid, cpu, stage = stages[key]
        obj = pod(
            key[1],
            key[0],
            cpu=cpu,
            node="n0" if stage else None,
            phase="Succeeded" if stage == 2 else None,
        )
        obj["metadata"] = {**obj["metadata"], "uid": f"uid-{uid}"}
        pods.put(obj)
        if rng.random() < 0.5:
            continue  # several changes between two syncs
        pods.forgets = rng.random() < 0.2
        book.sync()
        fresh = QuotaBook(pods, quotas)
        fresh.sync()
        for namespace in ("a", "b"):
            assert book.live[namespace].used == fresh.live[namespace].used, f"step {step}"
            assert book.bound_used(namespace) == fresh.bound_used(namespace), f"step {step}"


async def test_post_filter_reclaims_the_lent_min_from_the_borrowing_quota() -> None:
    # One 4-cpu node; a (min 2) runs 4 pods, 2 of them on b's unused min.
    node = make_node("n1", cpu="4", memory="32Gi")
    running = [pod(f"a{i}", "a", node="n1") for i in range(4)]
    quotas = [quota("a", min=A, max=MAX), quota("b", min=A, max=MAX)]
    client = RecordingClient()
    kit = PluginTestKit(nodes=[node], pods=running, objects=[*quotas, *running], client=client)
    plugin = kit.build(CapacityScheduling)
    outcome = kit.post_filter(plugin, pod("b0", "b"))
    assert outcome.diagnosis.pre_filter_message == (
        "Pod b/b0 is rejected in PreFilter because total ElasticQuota used is more than min"
    )
    assert outcome.result is not None and outcome.result.nominated_node_name == "n1"
    for _ in range(100):  # the eviction runs in the background
        if client.deleted():
            break
        await asyncio.sleep(0.01)
    victims = client.deleted()
    assert len(victims) == 1 and victims[0].startswith("a/a")
    # A pod of a (over its min) finds no victim: it may not take b's pods, nor its own.
    outcome = kit.post_filter(plugin, pod("a9", "a"))
    assert outcome.result is not None and outcome.result.nominated_node_name is None

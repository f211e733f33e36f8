"""GangScheduling's decisions one hook at a time (kube 1.36.3's gangscheduling_test.go cases)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api import Code, QueueingHint
from scheduler.plugins.gangscheduling import (
    GROUP_UNSCHEDULABLE,
    PERMIT_TIMEOUT_SECONDS,
    GangScheduling,
)
from scheduler.testing import PluginTestKit

Obj = dict[str, Any]
PROFILE = "default-scheduler"


def group(name: str, min_count: int | None) -> Obj:
    policy: Obj = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"schedulingPolicy": policy},
    }


def member(name: str, group_name: str | None = "g", node: str = "") -> Obj:
    spec: Obj = {"schedulerName": PROFILE, "containers": [{"name": "c", "image": "x"}]}
    if group_name:
        spec["schedulingGroup"] = {"podGroupName": group_name}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": spec,
    }


def kit(*objects: Obj) -> tuple[PluginTestKit, GangScheduling]:
    k = PluginTestKit(objects=list(objects), profile=PROFILE)
    return k, k.build(GangScheduling)


def test_pre_enqueue_waits_for_the_pod_group_and_min_count() -> None:
    k, plugin = kit(member("a"), member("b"))
    status = k.call(plugin, "pre_enqueue", member("a"))
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'waiting for pods\'s pod group "g" to appear in scheduling queue'

    k, plugin = kit(group("g", 3), member("a"), member("b"))
    status = k.call(plugin, "pre_enqueue", member("a"))
    assert status.message() == "waiting for minCount pods from a gang to appear in scheduling queue"

    k, plugin = kit(group("g", 3), member("a"), member("b"), member("c", node="n1"))
    assert k.call(plugin, "pre_enqueue", member("a")) is None  # an assigned member counts
    k, plugin = kit(group("g", None), member("a"))
    assert k.call(plugin, "pre_enqueue", member("a")) is None  # basic policy: no gang
    assert k.call(plugin, "pre_enqueue", member("x", group_name=None)) is None


def test_pre_enqueue_does_not_count_terminal_or_other_schedulers_pods() -> None:
    done = member("b")
    done["status"] = {"phase": "Succeeded"}
    other = member("c")
    other["spec"]["schedulerName"] = "someone-else"
    k, plugin = kit(group("g", 2), member("a"), done, other)
    assert k.call(plugin, "pre_enqueue", member("a")) is not None


async def test_permit_waits_for_min_count_then_releases_the_gang() -> None:
    k, plugin = kit(group("g", 3), member("a"), member("b"), member("c"))
    assert k.call(plugin, "reserve", member("a"), node_name="n1") is None
    first = k.permit(plugin, member("a"), "n1")
    assert first.code is Code.WAIT
    assert first.message() == "waiting for minCount pods from a gang to be scheduled"
    waiting = plugin.handle.get_waiting_pod("uid-a")
    assert waiting is not None and waiting.pending_plugins() == ["GangScheduling"]
    k.call(plugin, "reserve", member("b"), node_name="n1")
    assert k.permit(plugin, member("b"), "n1").code is Code.WAIT
    k.call(plugin, "reserve", member("c"), node_name="n2")
    assert k.permit(plugin, member("c"), "n2").is_success()
    assert (await k.permit_outcome("uid-a")).is_success()
    assert (await k.permit_outcome("uid-b")).is_success()
    assert PERMIT_TIMEOUT_SECONDS == 300.0


async def test_unreserved_members_no_longer_count() -> None:
    k, plugin = kit(group("g", 2), member("a"), member("b"))
    k.call(plugin, "reserve", member("a"), node_name="n1")
    k.call(plugin, "unreserve", member("a"), node_name="n1")
    k.call(plugin, "reserve", member("b"), node_name="n1")
    assert k.permit(plugin, member("b"), "n1").code is Code.WAIT


async def test_post_filter_releases_the_waiting_members_in_kubes_words() -> None:
    k, plugin = kit(group("g", 3), member("a"), member("b"), member("c"))
    k.call(plugin, "reserve", member("a"), node_name="n1")
    assert k.permit(plugin, member("a"), "n1").code is Code.WAIT
    status = k.call(plugin, "post_filter", member("c"), diagnosis=None)
    assert status.code is Code.UNSCHEDULABLE and status.message() == ""
    outcome = await k.permit_outcome("uid-a")
    assert outcome.is_rejected() and GROUP_UNSCHEDULABLE in outcome.message()


def test_missing_pod_group_at_permit_is_an_error() -> None:
    k, plugin = kit(member("a"))
    status = k.call(plugin, "permit", member("a"), node_name="n1")
    assert status.code is Code.ERROR
    assert 'podgroups.scheduling.k8s.io "g" not found' in status.message()


@pytest.mark.parametrize(
    ("added", "hint"),
    [(member("z"), QueueingHint.QUEUE), (member("z", group_name="other"), QueueingHint.SKIP)],
)
def test_events_queue_only_the_same_group(added: Obj, hint: QueueingHint) -> None:
    k, plugin = kit(group("g", 2))
    events = k.call(plugin, "events_to_register")
    pod_event, group_event = events
    assert pod_event.hint is not None and group_event.hint is not None
    assert pod_event.hint(k.pod(member("a")), None, added) is hint
    assert group_event.hint(k.pod(member("a")), None, group("g", 2)) is QueueingHint.QUEUE
    assert group_event.hint(k.pod(member("a")), None, group("h", 2)) is QueueingHint.SKIP

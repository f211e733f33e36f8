"""VolumeBinding against kube-scheduler's decisions (volume_binding_test.go, binder_test.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from scheduler.api import Code, CycleState, FilterResult, QueueingHint, Status
from scheduler.plugins.volumes.binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    UNBOUND_IMMEDIATE,
    VolumeBinding,
    VolumeBindingArgs,
)
from scheduler.state.pod import PodInfo
from tests.plugins.builders import make_node, make_pod, make_table
from tests.plugins.volume_builders import (
    VolumeHandle,
    capacity,
    claim_volume,
    csi_driver,
    ephemeral_volume,
    pv,
    pvc,
    storage_class,
)

NODES = [
    make_node(
        name,
        cpu="4",
        labels={"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
    )
    for name, zone in (("node-a", "zone-a"), ("node-b", "zone-a"), ("node-c", "zone-b"))
]


def setup(*objects: dict[str, Any], args: Any = None) -> tuple[VolumeBinding, VolumeHandle]:
    handle = VolumeHandle(make_table(NODES))
    handle.put(*objects)
    return VolumeBinding(args, handle.as_handle()), handle


def pod_with(*volumes: dict[str, Any], name: str = "p") -> PodInfo:
    raw = make_pod(name, requests=[{"cpu": "100m"}])
    raw["spec"]["volumes"] = list(volumes)
    return PodInfo.from_dict(raw)


def run(
    plugin: VolumeBinding, pod: PodInfo
) -> tuple[CycleState, Status | None, FilterResult | Status | None]:
    state = CycleState()
    nodes = plugin.handle.table.all_nodes()
    pre = plugin.pre_filter(state, pod, nodes)
    if pre is not None and not pre.is_success():
        return state, pre, None
    return state, pre, plugin.filter(state, pod, nodes)


def verdicts(result: FilterResult | Status | None) -> dict[str, list[str]]:
    assert isinstance(result, FilterResult)
    names = ["node-a", "node-b", "node-c"]
    return {names[i]: result.reasons_at(i) for i in range(len(names))}


def test_pod_without_claims_skips() -> None:
    plugin, _ = setup()
    _, pre, _ = run(plugin, pod_with())
    assert pre is not None and pre.is_skip()


@pytest.mark.parametrize(
    ("objects", "volume", "message"),
    [
        ([], claim_volume("data"), 'persistentvolumeclaim "data" not found'),
        (
            [pvc("data", storage_class="standard"), storage_class("standard", mode="Immediate")],
            claim_volume("data"),
            UNBOUND_IMMEDIATE,
        ),
        (
            [pvc("data", storage_class="missing-class")],
            claim_volume("data"),
            UNBOUND_IMMEDIATE,
        ),
        (
            [],
            ephemeral_volume("scratch"),
            "waiting for ephemeral volume controller to create the persistentvolumeclaim "
            '"p-scratch"',
        ),
        (
            [pvc("p-scratch", storage_class="fast")],
            ephemeral_volume("scratch"),
            "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
        ),
        (
            [{**pvc("data"), "status": {"phase": "Lost"}}],
            claim_volume("data"),
            'persistentvolumeclaim "data" bound to non-existent persistentvolume ""',
        ),
        (
            [storage_class("nomode", mode=None), pvc("data", storage_class="nomode")],
            claim_volume("data"),
            'VolumeBindingMode not set for StorageClass "nomode"',
        ),
    ],
)
def test_pre_filter_refusals(objects: list[Any], volume: Any, message: str) -> None:
    plugin, _ = setup(*objects)
    _, pre, _ = run(plugin, pod_with(volume))
    assert pre is not None
    assert pre.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert pre.message() == message


def test_bound_claim_follows_its_pv_node_affinity() -> None:
    claim = pvc("data", volume="pv-b", bound=True)
    plugin, _ = setup(claim, pv("pv-b", hostname="node-b", claim=claim))
    _, _, result = run(plugin, pod_with(claim_volume("data")))
    assert verdicts(result) == {
        "node-a": [ERR_REASON_NODE_CONFLICT],
        "node-b": [],
        "node-c": [ERR_REASON_NODE_CONFLICT],
    }


def test_bound_claim_to_a_missing_pv_is_unresolvable_everywhere() -> None:
    plugin, _ = setup(pvc("data", volume="gone", bound=True))
    _, _, result = run(plugin, pod_with(claim_volume("data")))
    assert all(r == [ERR_REASON_PV_NOT_EXIST] for r in verdicts(result).values())
    assert isinstance(result, FilterResult)
    assert (result.codes == Code.UNSCHEDULABLE_AND_UNRESOLVABLE).all()


def test_wait_for_first_consumer_matches_local_pvs_smallest_first() -> None:
    plugin, handle = setup(
        storage_class("local"),
        pvc("data", "5Gi", storage_class="local"),
        pv("big-a", "100Gi", storage_class="local", hostname="node-a"),
        pv("small-a", "6Gi", storage_class="local", hostname="node-a"),
        pv("tiny-b", "1Gi", storage_class="local", hostname="node-b"),  # too small
        pv("rox-c", "10Gi", storage_class="local", hostname="node-c", modes=["ReadOnlyMany"]),
    )
    pod = pod_with(claim_volume("data"))
    state, _, result = run(plugin, pod)
    assert verdicts(result) == {
        "node-a": [],
        "node-b": [ERR_REASON_BIND_CONFLICT],
        "node-c": [ERR_REASON_BIND_CONFLICT],
    }
    assert plugin.reserve(state, pod, "node-a") is None
    # The PV is assumed taken: the next pod's claim cannot have it.
    taken = handle.store("", "v1", "persistentvolumes").get("", "small-a")
    assert taken is not None and "claimRef" not in taken["spec"]  # the store is untouched
    assert plugin.pvs.get("", "small-a")["spec"]["claimRef"]["name"] == "data"  # type: ignore[index]
    handle.put(pvc("other", "5Gi", storage_class="local"))
    _, _, second = run(plugin, pod_with(claim_volume("other"), name="q"))
    assert verdicts(second)["node-a"] == []  # big-a is still free there
    state3, _, _ = run(plugin, pod_with(claim_volume("other"), name="q"))
    assert plugin.reserve(state3, pod_with(claim_volume("other"), name="q"), "node-a") is None
    assert plugin.pvs.get("", "big-a")["spec"]["claimRef"]["name"] == "other"  # type: ignore[index]
    handle.put(pvc("third", "5Gi", storage_class="local"))
    _, _, third = run(plugin, pod_with(claim_volume("third"), name="r"))
    assert verdicts(third)["node-a"] == [ERR_REASON_BIND_CONFLICT]
    plugin.unreserve(state, pod, "node-a")
    _, _, again = run(plugin, pod_with(claim_volume("third"), name="r"))
    assert verdicts(again)["node-a"] == []


def test_two_claims_need_two_pvs_on_the_same_node() -> None:
    plugin, _ = setup(
        storage_class("local"),
        pvc("one", "5Gi", storage_class="local"),
        pvc("two", "5Gi", storage_class="local"),
        pv("a1", "10Gi", storage_class="local", hostname="node-a"),
        pv("a2", "10Gi", storage_class="local", hostname="node-a"),
        pv("b1", "10Gi", storage_class="local", hostname="node-b"),
    )
    _, _, result = run(plugin, pod_with(claim_volume("one"), claim_volume("two")))
    assert verdicts(result) == {
        "node-a": [],
        "node-b": [ERR_REASON_BIND_CONFLICT],
        "node-c": [ERR_REASON_BIND_CONFLICT],
    }


def test_provisioning_follows_allowed_topologies_and_capacity() -> None:
    plugin, _ = setup(
        storage_class("fast", provisioner="csi.example.com", zones=["zone-a", "zone-b"]),
        storage_class("zonal", provisioner="csi.example.com", zones=["zone-b"]),
        csi_driver("csi.example.com", capacity=True),
        capacity("cap-a", "fast", "8Gi", "zone-a"),
        capacity("cap-b", "fast", "100Gi", "zone-b"),
        capacity("cap-zonal", "zonal", "100Gi", "zone-b"),
        pvc("small", "5Gi", storage_class="fast"),
        pvc("large", "50Gi", storage_class="fast"),
        pvc("z", "1Gi", storage_class="zonal"),
    )
    _, _, small = run(plugin, pod_with(claim_volume("small")))
    assert verdicts(small) == {"node-a": [], "node-b": [], "node-c": []}
    _, _, large = run(plugin, pod_with(claim_volume("large")))
    assert verdicts(large) == {
        "node-a": [ERR_REASON_NOT_ENOUGH_SPACE],
        "node-b": [ERR_REASON_NOT_ENOUGH_SPACE],
        "node-c": [],
    }
    _, _, zonal = run(plugin, pod_with(claim_volume("z")))
    assert verdicts(zonal) == {
        "node-a": [ERR_REASON_BIND_CONFLICT],
        "node-b": [ERR_REASON_BIND_CONFLICT],
        "node-c": [],
    }


def test_claim_pinned_by_selected_node_fits_only_there() -> None:
    plugin, _ = setup(
        storage_class("fast", provisioner="csi.example.com"),
        pvc(
            "data",
            storage_class="fast",
            annotations={"volume.kubernetes.io/selected-node": "node-c"},
        ),
    )
    _, _, result = run(plugin, pod_with(claim_volume("data")))
    assert verdicts(result) == {
        "node-a": [ERR_REASON_BIND_CONFLICT],
        "node-b": [ERR_REASON_BIND_CONFLICT],
        "node-c": [],
    }


def test_owned_ephemeral_claim_is_provisioned_like_any_other() -> None:
    pod_raw = make_pod("runner", requests=[{"cpu": "100m"}])
    pod_raw["spec"]["volumes"] = [ephemeral_volume("scratch")]
    plugin, _ = setup(
        storage_class("fast", provisioner="csi.example.com"),
        pvc("runner-scratch", "1Gi", storage_class="fast", owner=pod_raw),
    )
    pod = PodInfo.from_dict(pod_raw)
    state, pre, result = run(plugin, pod)
    assert pre is None
    assert verdicts(result) == {"node-a": [], "node-b": [], "node-c": []}
    assert plugin.reserve(state, pod, "node-b") is None
    pinned = plugin.pvcs.get("default", "runner-scratch")
    assert pinned is not None
    assert pinned["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-b"


class RecordingClient:
    def __init__(self, handle: VolumeHandle) -> None:
        self.handle = handle
        self.calls: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path, body))
        written = {**body, "metadata": dict(body["metadata"])}
        self.handle.put(written)
        return written


async def test_pre_bind_writes_like_kube_and_waits_for_the_pv_controller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("scheduler.plugins.volumes.binding.BIND_POLL_SECONDS", 0.01)
    plugin, handle = setup(
        storage_class("local"),
        storage_class("fast", provisioner="csi.example.com"),
        pvc("data", "5Gi", storage_class="local"),
        pvc("scratch", "1Gi", storage_class="fast"),
        pv("pv-a", "10Gi", storage_class="local", hostname="node-a"),
        args={"bindTimeoutSeconds": 5},
    )
    client = RecordingClient(handle)
    handle.client = client
    pod = pod_with(claim_volume("data"), claim_volume("scratch"))
    handle.put(pod.raw | {"kind": "Pod"})
    state, _, result = run(plugin, pod)
    assert verdicts(result)["node-a"] == []
    assert plugin.reserve(state, pod, "node-a") is None
    task = asyncio.create_task(plugin.pre_bind(state, pod, "node-a"))
    await asyncio.sleep(0.05)
    assert not task.done()  # waiting for the PV controller
    (m1, path1, pv_body), (m2, path2, pvc_body) = client.calls
    assert (m1, path1) == ("PUT", "/api/v1/persistentvolumes/pv-a")
    assert pv_body["spec"]["claimRef"]["name"] == "data"
    assert pv_body["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert (m2, path2) == ("PUT", "/api/v1/namespaces/default/persistentvolumeclaims/scratch")
    assert pvc_body["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-a"
    # The PV controller completes both bindings.
    store = handle.store("", "v1", "persistentvolumeclaims")
    for claim, volume in (("data", "pv-a"), ("scratch", "pvc-new")):
        obj = store.get("default", claim)
        assert obj is not None
        done = {
            **obj,
            "metadata": {
                **obj["metadata"],
                "annotations": {
                    **obj["metadata"]["annotations"],
                    "pv.kubernetes.io/bind-completed": "yes",
                },
            },
            "spec": {**obj["spec"], "volumeName": volume},
        }
        handle.put(done)
    handle.put(pv("pvc-new", "1Gi", storage_class="fast", hostname="node-a"))
    assert await asyncio.wait_for(task, 2) is None


async def test_pre_bind_times_out_with_kube_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.plugins.volumes.binding.BIND_POLL_SECONDS", 0.01)
    plugin, handle = setup(
        storage_class("fast", provisioner="csi.example.com"),
        pvc("scratch", "1Gi", storage_class="fast"),
        args={"bindTimeoutSeconds": 0},
    )
    handle.client = RecordingClient(handle)
    pod = pod_with(claim_volume("scratch"))
    handle.put(pod.raw | {"kind": "Pod"})
    state, _, _ = run(plugin, pod)
    assert plugin.reserve(state, pod, "node-a") is None
    status = await plugin.pre_bind(state, pod, "node-a")
    assert status is not None and status.code is Code.ERROR
    assert status.message() == "binding volumes: context deadline exceeded"


def test_all_bound_pod_needs_no_prebind() -> None:
    claim = pvc("data", volume="pv-a", bound=True)
    plugin, _ = setup(claim, pv("pv-a", claim=claim))
    pod = pod_with(claim_volume("data"))
    state, _, _ = run(plugin, pod)
    assert plugin.reserve(state, pod, "node-a") is None
    assert asyncio.run(plugin.pre_bind(state, pod, "node-a")) is None


def test_capacity_scoring_with_shape() -> None:
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    plugin, _ = setup(
        storage_class("local"),
        pvc("data", "5Gi", storage_class="local"),
        pv("exact-a", "5Gi", storage_class="local", hostname="node-a"),
        pv("double-b", "10Gi", storage_class="local", hostname="node-b"),
        args=VolumeBindingArgs.model_validate({"shape": shape}),
    )
    pod = pod_with(claim_volume("data"))
    state, _, result = run(plugin, pod)
    assert verdicts(result)["node-c"] == [ERR_REASON_BIND_CONFLICT]
    nodes = plugin.handle.table.all_nodes().subset(np.array([True, True, False]))
    assert plugin.pre_score(state, pod, nodes) is None
    assert plugin.score(state, pod, nodes).tolist() == [100, 50]


def test_no_scoring_without_shape() -> None:
    plugin, _ = setup()
    state = CycleState()
    pod = pod_with()
    plugin.pre_filter(state, pod, plugin.handle.table.all_nodes())
    skipped = plugin.pre_score(state, pod, plugin.handle.table.all_nodes())
    assert skipped is not None and skipped.is_skip()


def test_queueing_hints() -> None:
    plugin, _ = setup()
    pod = pod_with(claim_volume("data"))
    hints = {e.event.resource: e.hint for e in plugin.events_to_register() if e.hint is not None}
    claim_hint = hints["PersistentVolumeClaim"]
    assert claim_hint is not None
    assert claim_hint(pod, None, pvc("data")) is QueueingHint.QUEUE
    assert claim_hint(pod, None, pvc("other")) is QueueingHint.SKIP
    assert claim_hint(pod, None, pvc("data", namespace="elsewhere")) is QueueingHint.SKIP
    sc_hint = hints["StorageClass"]
    assert sc_hint is not None
    assert sc_hint(pod, None, storage_class("x")) is QueueingHint.QUEUE
    same = storage_class("x")
    assert sc_hint(pod, same, same) is QueueingHint.SKIP
    assert sc_hint(pod, same, storage_class("x", zones=["z"])) is QueueingHint.QUEUE
    cap_hint = hints["CSIStorageCapacity"]
    assert cap_hint is not None
    small, large = capacity("c", "x", "1Gi", "z"), capacity("c", "x", "2Gi", "z")
    assert cap_hint(pod, small, large) is QueueingHint.QUEUE
    assert cap_hint(pod, large, small) is QueueingHint.SKIP


def test_bad_storage_input_is_a_per_pod_reason() -> None:
    bad_request = pvc("data", "lots", storage_class="local")
    plugin, _ = setup(storage_class("local"), bad_request)
    _, pre, _ = run(plugin, pod_with(claim_volume("data")))
    assert pre is not None and pre.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert 'persistentvolumeclaim "data" has an invalid storage request' in pre.message()
    broken = pv("broken", storage_class="local")
    broken["spec"]["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]
        }
    }
    plugin2, _ = setup(storage_class("local"), pvc("data", storage_class="local"), broken)
    _, _, result = run(plugin2, pod_with(claim_volume("data")))
    assert all(r == [ERR_REASON_BIND_CONFLICT] for r in verdicts(result).values())

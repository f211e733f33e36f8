"""VolumeZone, NodeVolumeLimits and VolumeRestrictions against kube-scheduler's decisions."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.api import Code, CycleState, FilterResult, QueueingHint, Status
from scheduler.plugins.volumes.limits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.plugins.volumes.restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from scheduler.plugins.volumes.zone import ERR_REASON_CONFLICT, VolumeZone
from scheduler.state.pod import PodInfo
from tests.plugins.builders import make_node, make_pod, make_table
from tests.plugins.preemption_kit import HIGH, LOW, build_cluster, knode, kpod
from tests.plugins.volume_builders import (
    VolumeHandle,
    claim_volume,
    csi_node,
    pv,
    pvc,
    storage_class,
)

NODES = [
    make_node(
        "node-a",
        cpu="4",
        labels={"topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "r1"},
    ),
    make_node("node-b", cpu="4", labels={"failure-domain.beta.kubernetes.io/zone": "zone-b"}),
    make_node("node-c", cpu="4", labels={}),
]


def raw_pod(name: str, *volumes: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    raw = make_pod(name, requests=[{"cpu": "100m"}], node_name=node)
    raw["spec"]["volumes"] = list(volumes)
    return raw


def run(
    plugin: Any, pod: PodInfo
) -> tuple[CycleState, Status | None, FilterResult | Status | None]:
    state = CycleState()
    nodes = plugin.handle.table.all_nodes()
    pre = plugin.pre_filter(state, pod, nodes)
    if pre is not None and not pre.is_success():
        return state, pre, None
    return state, pre, plugin.filter(state, pod, nodes)


def rejected(result: FilterResult | Status | None) -> list[str]:
    assert isinstance(result, FilterResult)
    names = ["node-a", "node-b", "node-c"]
    return [names[i] for i in np.flatnonzero(~result.feasible).tolist()]


# -- VolumeZone ------------------------------------------------------------------------


def test_volume_zone_follows_bound_pv_zone_with_legacy_labels() -> None:
    claim = pvc("data", volume="pv-b", bound=True)
    zoned = pv("pv-b", claim=claim, labels={"failure-domain.beta.kubernetes.io/zone": "zone-b"})
    handle = VolumeHandle(make_table(NODES))
    handle.put(claim, zoned)
    plugin = VolumeZone(None, handle.as_handle())
    _, _, result = run(plugin, PodInfo.from_dict(raw_pod("p", claim_volume("data"))))
    # node-c has no topology label at all: not constrained, as in kube.
    assert rejected(result) == ["node-a"]
    assert isinstance(result, FilterResult)
    assert result.reasons_at(0) == [ERR_REASON_CONFLICT]
    assert result.codes[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_volume_zone_multi_zone_label_and_region() -> None:
    claim = pvc("data", volume="pv", bound=True)
    volume = pv(
        "pv",
        claim=claim,
        labels={
            "topology.kubernetes.io/zone": "zone-a__zone-b",
            "topology.kubernetes.io/region": "r2",
        },
    )
    handle = VolumeHandle(make_table(NODES))
    handle.put(claim, volume)
    _, _, result = run(
        VolumeZone(None, handle.as_handle()), PodInfo.from_dict(raw_pod("p", claim_volume("data")))
    )
    # node-a is in zone-a but region r1; node-b has zone-b and no region label.
    assert rejected(result) == ["node-a", "node-b"]


def test_volume_zone_skips_wffc_and_reports_missing_objects() -> None:
    handle = VolumeHandle(make_table(NODES))
    handle.put(storage_class("local"), pvc("wffc", storage_class="local"))
    plugin = VolumeZone(None, handle.as_handle())
    _, pre, _ = run(plugin, PodInfo.from_dict(raw_pod("p", claim_volume("wffc"))))
    assert pre is not None and pre.is_skip()
    handle.put(pvc("ghost", volume="nowhere", bound=True))
    _, pre, _ = run(plugin, PodInfo.from_dict(raw_pod("q", claim_volume("ghost"))))
    assert pre is not None and pre.message() == 'persistentvolume "nowhere" not found'
    handle.put(pvc("classless", storage_class=None))
    _, pre, _ = run(plugin, PodInfo.from_dict(raw_pod("r", claim_volume("classless"))))
    assert pre is not None
    assert pre.message() == "PersistentVolumeClaim had no pv name and storageClass name"
    handle.put(pvc("noclass", storage_class="missing"))
    _, pre, _ = run(plugin, PodInfo.from_dict(raw_pod("s", claim_volume("noclass"))))
    assert pre is not None
    assert pre.message() == 'storageclass.storage.k8s.io "missing" not found'


# -- NodeVolumeLimits ------------------------------------------------------------------


def limits_setup(count: int) -> tuple[NodeVolumeLimits, VolumeHandle]:
    existing = []
    claims = []
    for i in range(2):
        claim = pvc(f"used-{i}", volume=f"pv-used-{i}", bound=True)
        claims.append(claim)
        claims.append(
            pv(
                f"pv-used-{i}",
                claim=claim,
                source={"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{i}"}},
            )
        )
        existing.append(raw_pod(f"old-{i}", claim_volume(f"used-{i}"), node="node-a"))
    # A second pod sharing used-0: the volume counts once.
    existing.append(raw_pod("sharer", claim_volume("used-0"), node="node-a"))
    handle = VolumeHandle(make_table(NODES, existing))
    handle.put(
        *claims,
        csi_node("node-a", {"ebs.csi.aws.com": count}),
        csi_node("node-b", {"ebs.csi.aws.com": 0}),
        storage_class("ebs", provisioner="ebs.csi.aws.com"),
        pvc("new", storage_class="ebs"),
        pvc("used-0-again", volume="pv-used-0", bound=True),
    )
    return NodeVolumeLimits(None, handle.as_handle()), handle


def test_node_volume_limits_counts_unique_volumes_per_driver() -> None:
    plugin, _ = limits_setup(3)
    pod = PodInfo.from_dict(raw_pod("p", claim_volume("new")))
    _, _, result = run(plugin, pod)
    # node-a: 2 attached + 1 new <= 3; node-b: limit 0; node-c: no CSINode, no limit.
    assert rejected(result) == ["node-b"]
    plugin, _ = limits_setup(2)
    _, _, result = run(plugin, pod)
    assert rejected(result) == ["node-a", "node-b"]
    assert isinstance(result, FilterResult)
    assert result.reasons_at(0) == [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED]
    assert result.codes[0] == Code.UNSCHEDULABLE


def test_node_volume_limits_follow_pods_and_csinode_changes() -> None:
    plugin, handle = limits_setup(3)
    pod = PodInfo.from_dict(raw_pod("p", claim_volume("new")))
    assert rejected(run(plugin, pod)[2]) == ["node-b"]
    third = pvc("used-2", volume="pv-used-2", bound=True)
    handle.put(
        third,
        pv(
            "pv-used-2",
            claim=third,
            source={"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-2"}},
        ),
    )
    handle.table.add_pod(PodInfo.from_dict(raw_pod("old-2", claim_volume("used-2"), node="node-a")))
    assert rejected(run(plugin, pod)[2]) == ["node-a", "node-b"]  # 3 attached + 1 > 3
    handle.put(csi_node("node-a", {"ebs.csi.aws.com": 10}))
    assert rejected(run(plugin, pod)[2]) == ["node-b"]
    handle.table.remove_pod("default/old-2")
    handle.put(csi_node("node-a", {"ebs.csi.aws.com": 3}))
    assert rejected(run(plugin, pod)[2]) == ["node-b"]


def test_node_volume_limits_already_attached_volume_is_free() -> None:
    plugin, _ = limits_setup(2)
    pod = PodInfo.from_dict(raw_pod("p", claim_volume("used-0-again")))
    _, _, result = run(plugin, pod)
    assert rejected(result) == ["node-b"]


def test_node_volume_limits_migrated_in_tree_and_missing_claim() -> None:
    handle = VolumeHandle(make_table(NODES))
    handle.put(csi_node("node-a", {"ebs.csi.aws.com": 1}))
    inline = {"name": "disk", "awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}}
    other = {"name": "disk2", "awsElasticBlockStore": {"volumeID": "vol-2"}}
    plugin = NodeVolumeLimits(None, handle.as_handle())
    _, _, one = run(plugin, PodInfo.from_dict(raw_pod("p", inline)))
    assert rejected(one) == []
    _, _, two = run(plugin, PodInfo.from_dict(raw_pod("q", inline, other)))
    assert rejected(two) == ["node-a"]
    _, _, missing = run(plugin, PodInfo.from_dict(raw_pod("r", claim_volume("nope"))))
    assert isinstance(missing, Status)
    assert missing.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert (
        missing.message() == 'looking up PVC default/nope: persistentvolumeclaim "nope" not found'
    )


def test_node_volume_limits_negative_count_rejects_without_crashing() -> None:
    """A CSINode the API server would refuse (count < 0) still costs only that node."""
    handle = VolumeHandle(make_table(NODES))
    handle.put(
        csi_node("node-a", {"ebs.csi.aws.com": -1}),
        storage_class("ebs", provisioner="ebs.csi.aws.com"),
        pvc("new", storage_class="ebs"),
    )
    plugin = NodeVolumeLimits(None, handle.as_handle())
    _, _, result = run(plugin, PodInfo.from_dict(raw_pod("p", claim_volume("new"))))
    assert rejected(result) == ["node-a"]


def test_node_volume_limits_skip_where_no_node_reports_a_limit() -> None:
    handle = VolumeHandle(make_table(NODES))
    handle.put(storage_class("ebs", provisioner="ebs.csi.aws.com"), pvc("new", storage_class="ebs"))
    plugin = NodeVolumeLimits(None, handle.as_handle())
    pod = PodInfo.from_dict(raw_pod("p", claim_volume("new")))
    _, pre, _ = run(plugin, pod)
    assert pre is not None and pre.is_skip()
    handle.put(csi_node("node-c", {"ebs.csi.aws.com": 0}))
    _, pre, result = run(plugin, pod)
    assert pre is None and rejected(result) == ["node-c"]


def test_node_volume_limits_hint_on_raised_limit() -> None:
    plugin, _ = limits_setup(1)
    hints = {(e.event.resource, e.event.action): e.hint for e in plugin.events_to_register()}
    raised = next(h for (r, _), h in hints.items() if r == "CSINode" and h is not None)
    pod = PodInfo.from_dict(raw_pod("p", claim_volume("new")))
    low, high = csi_node("n", {"d": 1}), csi_node("n", {"d": 2})
    assert raised(pod, low, high) is QueueingHint.QUEUE
    assert raised(pod, high, low) is QueueingHint.SKIP


# -- VolumeRestrictions ----------------------------------------------------------------


def test_disk_conflicts() -> None:
    gce = {"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}
    gce_ro = {"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}}
    ebs_ro = {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
    existing = [
        raw_pod("gce-ro", gce_ro, node="node-a"),
        raw_pod("ebs", ebs_ro, node="node-b"),
    ]
    handle = VolumeHandle(make_table(NODES, existing))
    plugin = VolumeRestrictions(None, handle.as_handle())
    _, _, rw = run(plugin, PodInfo.from_dict(raw_pod("p", gce)))
    assert rejected(rw) == ["node-a"]
    assert isinstance(rw, FilterResult) and rw.reasons_at(0) == [ERR_REASON_DISK_CONFLICT]
    _, _, ro = run(plugin, PodInfo.from_dict(raw_pod("q", gce_ro)))
    assert rejected(ro) == []  # both read-only: shared
    _, _, ebs = run(plugin, PodInfo.from_dict(raw_pod("r", ebs_ro)))
    assert rejected(ebs) == ["node-b"]  # EBS never shares
    _, pre, _ = run(plugin, PodInfo.from_dict(raw_pod("s")))
    assert pre is not None and pre.is_skip()


def test_read_write_once_pod_conflict_and_preemption_what_if() -> None:
    holder_raw = raw_pod("holder", claim_volume("exclusive"), node="node-a")
    handle = VolumeHandle(make_table(NODES, [holder_raw]))
    handle.put(pvc("exclusive", modes=["ReadWriteOncePod"], volume="pv", bound=True))
    plugin = VolumeRestrictions(None, handle.as_handle())
    pod = PodInfo.from_dict(raw_pod("p", claim_volume("exclusive")))
    state, _, result = run(plugin, pod)
    assert rejected(result) == ["node-a", "node-b", "node-c"]
    assert isinstance(result, FilterResult)
    assert result.reasons_at(2) == [ERR_REASON_RWOP_CONFLICT]
    assert result.codes[2] == Code.UNSCHEDULABLE  # preemption may evict the holder
    holder = PodInfo.from_dict(holder_raw)
    node = handle.table.node_info(0)
    plugin.pre_filter_remove_pod(state, pod, holder, node)
    assert rejected(plugin.filter(state, pod, handle.table.all_nodes())) == []
    plugin.pre_filter_add_pod(state, pod, holder, node)
    assert len(rejected(plugin.filter(state, pod, handle.table.all_nodes()))) == 3
    # Once the holder is gone from the cluster, the claim is free.
    handle.table.remove_pod(holder.key)
    _, pre, _ = run(plugin, pod)
    assert pre is not None and pre.is_skip()


# -- ReadWriteOncePod and preemption ---------------------------------------------------


class _LateHandle:
    """A handle whose target is set once the preemption kit has built it."""

    target: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def test_preemption_evicts_the_lower_priority_holder_of_a_read_write_once_pod_claim() -> None:
    holder = kpod("holder", node="node1", priority=LOW)
    holder["spec"]["volumes"] = [claim_volume("exclusive")]
    bystander = kpod("bystander", node="node2", priority=LOW)
    late = _LateHandle()
    restrictions = VolumeRestrictions(None, late)  # type: ignore[arg-type]
    claim = pvc("exclusive", modes=["ReadWriteOncePod"], volume="pv", bound=True)
    cluster = build_cluster(
        [knode("node1"), knode("node2")],
        [holder, bystander],
        pdbs=[claim],  # the kit's static stores hold any object given here
        extra=[("VolumeRestrictions", restrictions)],
    )
    late.target = cluster.handle.for_plugin("VolumeRestrictions")
    preemptor_raw = kpod("p", priority=HIGH)
    preemptor_raw["spec"]["volumes"] = [claim_volume("exclusive")]
    preemptor = cluster.pod(preemptor_raw)
    state = cluster.pre_filter(preemptor)
    outcome = cluster.framework.run_filter(state, preemptor, cluster.table.all_nodes())
    assert len(outcome.feasible) == 0
    result = cluster.framework.run_post_filter(state, preemptor, outcome.diagnosis)
    assert result.status.is_success(), result.status
    # Only evicting the holder frees the claim: its node is nominated, not node2.
    assert result.nominated_node_name == "node1"

"""CapacityScheduling's preemption policy on the framework's evaluator (plugin API 2.1).

The contrib plugin's victim rules (scheduler-plugins' ``SelectVictimsOnNode``)
run on the real what-if of the framework, with the plugin's PreFilter and
its AddPod/RemovePod extensions keeping the quota snapshot in step: the
cases are scheduler-plugins' own kinds (reclaim across quotas, within a
quota, pods outside any quota, a lending quota cut back to its min).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler_plugin_capacityscheduling import CapacityScheduling
from scheduler_plugin_capacityscheduling.plugin import NAME

from scheduler.api import Code, CycleState, Diagnosis, Status
from scheduler.framework.handle import FrameworkHandle
from scheduler.state.pod import PodInfo
from tests.plugins.preemption_kit import Cluster, build_cluster, knode, kpod

CPU1 = {"cpu": "1", "memory": "1Gi"}


def quota(namespace: str, min_cpu: int, max_cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": namespace},
        "spec": {
            "min": {"cpu": str(min_cpu), "memory": f"{min_cpu}Gi"},
            "max": {"cpu": str(max_cpu), "memory": f"{max_cpu}Gi"},
        },
    }


def running(prefix: str, namespace: str, count: int, node: str, **kw: Any) -> list[dict[str, Any]]:
    return [
        kpod(f"{prefix}{i}", namespace=namespace, node=node, req=CPU1, start=i, **kw)
        for i in range(count)
    ]


def cluster(
    quotas: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]], cpu: str = "4"
) -> Cluster:
    def factory(handle: FrameworkHandle) -> object:
        return CapacityScheduling(None, handle)

    # The stores hold the ElasticQuotas and the pods (the bound ones are charged).
    return build_cluster(
        [knode("n1", {"cpu": cpu, "memory": "64Gi"})],
        pods,
        pdbs=[*quotas, *pods],
        post_filter=(NAME, factory),
    )


def pre_filter(c: Cluster, pod: PodInfo) -> tuple[CycleState, Status]:
    state = c.framework.new_cycle_state()
    _, status = c.framework.run_pre_filter(state, pod, c.table.all_nodes())
    return state, status


def victims_on_n1(c: Cluster, raw: dict[str, Any]) -> tuple[list[str], Status]:
    """The plugin's victims on n1 for ``raw``, on the evaluator's what-if."""
    plugin: CapacityScheduling = c.plugin
    pod = c.pod(raw)
    state, _ = pre_filter(c, pod)
    with plugin.preemption.what_if(state, pod) as what_if:
        victims, _, status = plugin.select_victims_on_node(
            what_if.state, pod, what_if.node("n1"), what_if, []
        )
    return sorted(v.name for v in victims), status


def test_a_quota_under_its_min_reclaims_exactly_what_it_needs_from_a_borrower() -> None:
    # a (min 2) borrows b's unused min: it runs 4 on the only node.
    c = cluster([quota("a", 2, 4), quota("b", 2, 4)], running("a", "a", 4, "n1"))
    b0 = kpod("b0", namespace="b", req=CPU1)
    _, status = pre_filter(c, c.pod(b0))
    assert status.code is Code.UNSCHEDULABLE
    assert status.message() == (
        "Pod b/b0 is rejected in PreFilter because total ElasticQuota used is more than min"
    )
    victims, status = victims_on_n1(c, b0)
    assert status.is_success()
    assert len(victims) == 1 and victims[0].startswith("a")
    # Two cpus for b: a loses two, and stops at its min.
    big = kpod("b1", namespace="b", req={"cpu": "2", "memory": "2Gi"})
    victims, status = victims_on_n1(c, big)
    assert status.is_success() and len(victims) == 2
    # b wanting more than its min is no reclaim: only b's own lower-priority pods
    # could go, and there are none.
    huge = kpod("b2", namespace="b", req={"cpu": "3", "memory": "3Gi"})
    victims, status = victims_on_n1(c, huge)
    assert victims == [] and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_the_whole_post_filter_nominates_and_remembers_the_victims() -> None:
    c = cluster([quota("a", 2, 4), quota("b", 2, 4)], running("a", "a", 4, "n1"))
    pod = c.pod(kpod("b0", namespace="b", req=CPU1))
    state, _ = pre_filter(c, pod)
    diagnosis = Diagnosis(
        names=c.table.names,
        total_nodes=1,
        pre_filter_message="rejected",
        pre_filter_code=Code.UNSCHEDULABLE,
    )
    result = c.framework.run_post_filter(state, pod, diagnosis)
    assert result.status.is_success(), result.status
    assert result.nominated_node_name == "n1"
    plugin: CapacityScheduling = c.plugin
    assert len(plugin._evicting["b0"]) == 1  # its victim holds b0's room until it is gone


def test_a_quota_at_its_min_is_not_reclaimed_from() -> None:
    # Both quotas at their min: b's new pod is over its own min, so it may only
    # take its own lower-priority pods; equal priority: none.
    pods = [*running("a", "a", 2, "n1"), *running("b", "b", 2, "n1")]
    c = cluster([quota("a", 2, 4), quota("b", 2, 4)], pods)
    victims, status = victims_on_n1(c, kpod("b9", namespace="b", req=CPU1))
    assert victims == []
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "No victims found on node n1 for preemptor pod b9"


def test_within_its_quota_a_pod_preempts_lower_priority_pods_of_that_quota_only() -> None:
    pods = [
        *running("a", "a", 2, "n1", priority=0),
        *running("b", "b", 1, "n1", priority=0),
        *running("bh", "b", 1, "n1", priority=100),
    ]
    c = cluster([quota("a", 2, 4), quota("b", 2, 4)], pods)
    victims, status = victims_on_n1(c, kpod("b9", namespace="b", req=CPU1, priority=50))
    assert status.is_success()
    assert victims == ["b0"]


def test_a_pod_outside_any_quota_preempts_only_lower_priority_pods_outside_quotas() -> None:
    pods = [
        *running("a", "a", 2, "n1", priority=0),
        *running("f", "free", 2, "n1", priority=0),
    ]
    c = cluster([quota("a", 2, 4)], pods)
    victims, status = victims_on_n1(c, kpod("x", namespace="free", req=CPU1, priority=10))
    assert status.is_success()
    assert len(victims) == 1 and victims[0].startswith("f")
    victims, status = victims_on_n1(c, kpod("y", namespace="free", req=CPU1, priority=0))
    assert victims == [] and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_preemption_policy_never_is_not_eligible() -> None:
    c = cluster([quota("a", 2, 4), quota("b", 2, 4)], running("a", "a", 4, "n1"))
    pod = c.pod(kpod("b0", namespace="b", req=CPU1, preemption_policy="Never"))
    state, _ = pre_filter(c, pod)
    diagnosis = Diagnosis(
        names=c.table.names,
        total_nodes=1,
        pre_filter_message="rejected",
        pre_filter_code=Code.UNSCHEDULABLE,
    )
    result = c.framework.run_post_filter(state, pod, diagnosis)
    assert result.nominated_node_name is None
    assert "not eligible due to preemptionPolicy=Never." in result.status.message()


def test_a_terminating_pod_on_the_nominated_node_makes_it_wait_instead_of_preempting() -> None:
    # b0 already preempted on n1; a victim of its quota is still terminating there.
    pods = [
        *running("a", "a", 2, "n1"),
        kpod("bx", namespace="b", node="n1", req=CPU1, priority=0, terminating=True),
        *running("b", "b", 1, "n1", priority=0),
    ]
    c = cluster([quota("a", 2, 4), quota("b", 2, 4)], pods)
    pod = c.pod(kpod("b9", namespace="b", req=CPU1, priority=10, nominated="n1"))
    state, _ = pre_filter(c, pod)
    diagnosis = Diagnosis(
        names=c.table.names,
        total_nodes=1,
        pre_filter_message="rejected",
        pre_filter_code=Code.UNSCHEDULABLE,
    )
    result = c.framework.run_post_filter(state, pod, diagnosis)
    assert result.nominated_node_name is None
    assert "not eligible due to a terminating pod on the nominated node." in (
        result.status.message()
    )

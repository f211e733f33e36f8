"""Gang identity: Coscheduling's PodGroup label and the native ``spec.schedulingGroup``."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

import scheduler.model.gangs as gangs
from scheduler.model.gangs import (
    COSCHEDULING_GROUP,
    COSCHEDULING_PODGROUPS,
    POD_GROUP_LABEL,
    WORKLOAD_GROUP,
    WORKLOAD_PODGROUPS,
    GangError,
    GangRef,
    gang_of,
    gang_policy,
)


def pod(labels: dict[str, str] | None = None, group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": []}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": "p", "namespace": "ns", "labels": labels or {}}, "spec": spec}


def test_doctests() -> None:
    assert doctest.testmod(gangs).failed == 0


def test_a_pod_joins_by_label_or_by_its_scheduling_group() -> None:
    assert gang_of(pod({POD_GROUP_LABEL: "a"})) == GangRef(COSCHEDULING_GROUP, "ns", "a")
    assert gang_of(pod(group="b")) == GangRef(WORKLOAD_GROUP, "ns", "b")
    # Both: the native field wins (kube's GangScheduling reads it).
    assert gang_of(pod({POD_GROUP_LABEL: "a"}, group="b")) == GangRef(WORKLOAD_GROUP, "ns", "b")
    assert gang_of(pod()) is None
    assert gang_of(pod({POD_GROUP_LABEL: ""})) is None
    assert gang_of({"metadata": "junk", "spec": []}) is None
    assert GangRef(COSCHEDULING_GROUP, "ns", "a").resource == COSCHEDULING_PODGROUPS
    assert GangRef(WORKLOAD_GROUP, "ns", "a").resource == WORKLOAD_PODGROUPS


def test_coscheduling_min_member() -> None:
    ref = GangRef(COSCHEDULING_GROUP, "ns", "a")
    assert gang_policy(ref, {"spec": {"minMember": 8}}).min_count == 8
    assert gang_policy(ref, {"spec": {}}).min_count == 1  # omitted: no quorum
    assert gang_policy(ref, {"spec": {"minMember": 0}}).min_count == 1
    with pytest.raises(GangError, match=r"PodGroup \(scheduling.x-k8s.io\) ns/a: spec.minMember"):
        gang_policy(ref, {"spec": {"minMember": "8"}})


def test_native_gang_policy() -> None:
    ref = GangRef(WORKLOAD_GROUP, "ns", "w")
    policy = gang_policy(
        ref,
        {
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": 16}},
                "priority": 500,
                "disruptionMode": "PodGroup",
            }
        },
    )
    assert (policy.min_count, policy.is_gang, policy.priority, policy.disruption_mode) == (
        16,
        True,
        500,
        "PodGroup",
    )
    basic = gang_policy(ref, {"spec": {"schedulingPolicy": {"basic": {}}}})
    assert (basic.is_gang, basic.min_count) == (False, 1)
    for spec, field in (
        ({"schedulingPolicy": {}}, "spec.schedulingPolicy must set basic or gang"),
        ({"schedulingPolicy": {"gang": {}}}, "minCount must be an integer >= 1, got None"),
        ({"schedulingPolicy": {"gang": {"minCount": 2}}, "priority": "x"}, "spec.priority"),
        (
            {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "All"},
            "spec.disruptionMode",
        ),
    ):
        with pytest.raises(GangError, match=field):
            gang_policy(ref, {"spec": spec})
    with pytest.raises(GangError, match="spec must be an object"):
        gang_policy(ref, {})

"""A pod's native scheduling group (kube 1.36's ``spec.schedulingGroup``), read in one place.

The pod names a PodGroup (``scheduling.k8s.io/v1alpha2``) in its own
namespace; the group object may not exist yet. Everything that treats such
pods as a gang (GangScheduling, gang-aware preemption, quotas per gang) keys
the group by :func:`scheduling_group_key` (which is
:func:`scheduler.model.gangs.gang_of`'s identity of native groups), so they
agree on who is in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from scheduler.model.gangs import WORKLOAD_GROUP, WORKLOAD_PODGROUPS, gang_of

__all__ = ["POD_GROUPS", "WORKLOADS", "pod_group_name", "scheduling_group_key"]

#: ``(group, version, plural)`` of the native PodGroups and Workloads kube-apiserver 1.36 serves.
POD_GROUPS: Final = WORKLOAD_PODGROUPS
WORKLOADS: Final = (WORKLOAD_GROUP, "v1alpha2", "workloads")


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    """``spec.schedulingGroup.podGroupName`` of a pod (its API object), or None.

    Examples:
        >>> pod_group_name({"spec": {"schedulingGroup": {"podGroupName": "train-0"}}})
        'train-0'
        >>> pod_group_name({"spec": {}}) is None
        True
    """
    ref = gang_of(pod)
    return ref.name if ref is not None and ref.api_group == WORKLOAD_GROUP else None


def scheduling_group_key(pod: Mapping[str, Any]) -> str | None:
    """``namespace/podGroupName`` of a pod's scheduling group, or None for a pod in none.

    The same group, and key, as :func:`scheduler.model.gangs.gang_of` gives for
    the pod (``GangRef.key``), so gang-aware plugins and GangScheduling agree.

    Examples:
        >>> spec = {"schedulingGroup": {"podGroupName": "g"}}
        >>> scheduling_group_key({"metadata": {"namespace": "ml"}, "spec": spec})
        'ml/g'
    """
    ref = gang_of(pod)
    return ref.key if ref is not None and ref.api_group == WORKLOAD_GROUP else None

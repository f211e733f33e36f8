"""Which gang a pod belongs to, and how many members the gang needs: in one place.

Two APIs put pods in gangs, and a plugin that treats gangs as units (gang
scheduling, gang-aware preemption, quotas per gang) must read both the same
way:

- **Coscheduling's PodGroup** (kubernetes-sigs/scheduler-plugins,
  ``scheduling.x-k8s.io/v1alpha1``): the pod carries the label
  ``scheduling.x-k8s.io/pod-group: <name>``; the PodGroup ``<name>`` in the
  pod's namespace says ``spec.minMember``.
- **The native Workload API** (Kubernetes 1.36, ``scheduling.k8s.io/v1alpha2``):
  the pod's ``spec.schedulingGroup.podGroupName`` names a PodGroup in its
  namespace whose ``spec.schedulingPolicy.gang.minCount`` is the minimum
  (a ``basic`` policy is no gang). The PodGroup may also carry
  ``spec.priority`` and ``spec.disruptionMode`` (WorkloadAwarePreemption).

A pod with both is in the native group: the field is the API's own and kube's
GangScheduling reads it. The group object may not exist yet when its pods do
(both APIs allow it); :func:`gang_of` only needs the pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "COSCHEDULING_GROUP",
    "COSCHEDULING_PODGROUPS",
    "DISRUPTION_MODE_POD",
    "DISRUPTION_MODE_POD_GROUP",
    "POD_GROUP_LABEL",
    "WORKLOAD_GROUP",
    "WORKLOAD_PODGROUPS",
    "GangError",
    "GangPolicy",
    "GangRef",
    "gang_of",
    "gang_policy",
]

COSCHEDULING_GROUP: Final = "scheduling.x-k8s.io"
#: The label naming a pod's Coscheduling PodGroup (in the pod's namespace).
POD_GROUP_LABEL: Final = f"{COSCHEDULING_GROUP}/pod-group"
#: ``(group, version, plural)`` of Coscheduling's PodGroups (a ``watches`` entry).
COSCHEDULING_PODGROUPS: Final = (COSCHEDULING_GROUP, "v1alpha1", "podgroups")

WORKLOAD_GROUP: Final = "scheduling.k8s.io"
#: ``(group, version, plural)`` of the native PodGroups kube-apiserver 1.36 serves.
WORKLOAD_PODGROUPS: Final = (WORKLOAD_GROUP, "v1alpha2", "podgroups")

#: ``spec.disruptionMode`` values of a native PodGroup.
DISRUPTION_MODE_POD: Final = "Pod"
DISRUPTION_MODE_POD_GROUP: Final = "PodGroup"


class GangError(ValueError):
    """A group object whose spec cannot be used; the message names the object and field."""


@dataclass(frozen=True, slots=True)
class GangRef:
    """A pod's group: which API (``api_group``), and the object's namespace and name."""

    api_group: str
    namespace: str
    name: str

    @property
    def key(self) -> str:
        """``namespace/name``, as messages name the group."""
        return f"{self.namespace}/{self.name}"

    @property
    def resource(self) -> tuple[str, str, str]:
        """``(group, version, plural)`` of the group object (what a plugin watches)."""
        return (
            COSCHEDULING_PODGROUPS if self.api_group == COSCHEDULING_GROUP else WORKLOAD_PODGROUPS
        )

    @property
    def kind(self) -> str:
        """How docs and messages name the object: ``PodGroup <api group>``."""
        return f"PodGroup ({self.api_group})"

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"


@dataclass(frozen=True, slots=True)
class GangPolicy:
    """What a group object says about its pods as a gang.

    ``min_count`` is Coscheduling's ``minMember`` or the native gang policy's
    ``minCount`` (1 for a native ``basic`` policy, which is no gang).
    ``priority`` and ``disruption_mode`` are the native PodGroup's (None
    where unset, and always for Coscheduling's, which has neither).
    """

    ref: GangRef
    min_count: int
    is_gang: bool
    priority: int | None = None
    disruption_mode: str | None = None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def gang_of(pod: Mapping[str, Any]) -> GangRef | None:
    """The group of a pod (its API object), or None for a pod in no group.

    Examples:
        >>> gang_of({"metadata": {"namespace": "ml", "labels": {POD_GROUP_LABEL: "train"}}})
        GangRef(api_group='scheduling.x-k8s.io', namespace='ml', name='train')
        >>> str(gang_of({"metadata": {}, "spec": {"schedulingGroup": {"podGroupName": "w"}}}))
        'PodGroup (scheduling.k8s.io) default/w'
        >>> gang_of({"metadata": {"name": "alone"}}) is None
        True
    """
    meta = _meta(pod)
    namespace = str(meta.get("namespace") or "default")
    spec = pod.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, Mapping) else None
    if isinstance(group, Mapping):
        name = group.get("podGroupName")
        if isinstance(name, str) and name:
            return GangRef(WORKLOAD_GROUP, namespace, name)
    labels = meta.get("labels")
    name = labels.get(POD_GROUP_LABEL) if isinstance(labels, Mapping) else None
    if isinstance(name, str) and name:
        return GangRef(COSCHEDULING_GROUP, namespace, name)
    return None


def _count(ref: GangRef, path: str, value: object, *, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise GangError(f"{ref}: {path} must be an integer >= {minimum}, got {value!r}")
    return value


def gang_policy(ref: GangRef, obj: Mapping[str, Any]) -> GangPolicy:
    """Parse the group object ``ref`` names; :class:`GangError` names a bad field.

    Examples:
        >>> ref = GangRef(WORKLOAD_GROUP, "ml", "train")
        >>> spec = {"schedulingPolicy": {"gang": {"minCount": 8}}, "priority": 1000}
        >>> gang_policy(ref, {"spec": spec}).min_count
        8
        >>> gang_policy(ref, {"spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}})
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        scheduler.model.gangs.GangError: PodGroup (...) ml/train: spec...minCount must be ...
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise GangError(f"{ref}: spec must be an object")
    if ref.api_group == COSCHEDULING_GROUP:
        # The CRD allows omitting minMember; scheduler-plugins then needs no quorum (1).
        raw = spec.get("minMember")
        value = 1 if raw is None else _count(ref, "spec.minMember", raw, minimum=0)
        return GangPolicy(ref, max(value, 1), is_gang=True)
    policy = spec.get("schedulingPolicy")
    if not isinstance(policy, Mapping):
        raise GangError(f"{ref}: spec.schedulingPolicy must be an object")
    gang = policy.get("gang")
    priority = spec.get("priority")
    if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
        raise GangError(f"{ref}: spec.priority must be an integer, got {priority!r}")
    mode = spec.get("disruptionMode")
    if mode is not None and mode not in (DISRUPTION_MODE_POD, DISRUPTION_MODE_POD_GROUP):
        raise GangError(
            f"{ref}: spec.disruptionMode must be {DISRUPTION_MODE_POD!r} or "
            f"{DISRUPTION_MODE_POD_GROUP!r}, got {mode!r}"
        )
    if gang is None:
        if "basic" not in policy:
            raise GangError(f"{ref}: spec.schedulingPolicy must set basic or gang")
        return GangPolicy(ref, 1, is_gang=False, priority=priority, disruption_mode=mode)
    if not isinstance(gang, Mapping):
        raise GangError(f"{ref}: spec.schedulingPolicy.gang must be an object")
    count = _count(ref, "spec.schedulingPolicy.gang.minCount", gang.get("minCount"), minimum=1)
    return GangPolicy(ref, count, is_gang=True, priority=priority, disruption_mode=mode)

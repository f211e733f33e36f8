"""The PodGroup custom resource (``scheduling.x-k8s.io/v1alpha1``) as the plugin reads it.

The object shape is the one kubernetes-sigs/scheduler-plugins defines, so
PodGroups written for its Coscheduling plugin work here unchanged: pods join
a group with the ``scheduling.x-k8s.io/pod-group`` label (the group lives in
the pod's namespace), and the group's ``spec`` says how many members must be
placed together (``minMember``), the least resources they need
(``minResources``) and how long members may wait for each other
(``scheduleTimeoutSeconds``).

Parsing happens once per object version: PreFilter and QueueSort run for
every pod, and the informer hands out the same dict until the object changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from scheduler.api import InvalidPodError, PodInfo
from scheduler.model.gangs import COSCHEDULING_PODGROUPS, POD_GROUP_LABEL

# The label and resource are scheduler.model.gangs' (one definition of a pod's gang).
GROUP: Final = COSCHEDULING_PODGROUPS[0]
VERSION: Final = COSCHEDULING_PODGROUPS[1]
PLURAL: Final = COSCHEDULING_PODGROUPS[2]
KIND: Final = "PodGroup"

# Phases of PodGroup.status.phase, as scheduler-plugins names them.
PHASE_PENDING: Final = "Pending"
PHASE_SCHEDULING: Final = "Scheduling"
PHASE_SCHEDULED: Final = "Scheduled"
PHASE_RUNNING: Final = "Running"


class PodGroupError(ValueError):
    """A PodGroup whose spec cannot be used; the message names the group and the field."""


def group_ref(pod: PodInfo) -> str | None:
    """``namespace/name`` of the pod's PodGroup, or None for a pod outside any group."""
    name = pod.labels.get(POD_GROUP_LABEL)
    if not name:
        return None
    return f"{pod.namespace}/{name}"


def raw_group_ref(obj: Mapping[str, Any]) -> str | None:
    """``group_ref`` for a raw pod object (informer payloads and event hints)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    labels = meta.get("labels")
    name = labels.get(POD_GROUP_LABEL) if isinstance(labels, Mapping) else None
    if not name:
        return None
    return f"{meta.get('namespace') or 'default'}/{name}"


def parse_timestamp(value: object) -> float | None:
    """An RFC 3339 timestamp (``metadata.creationTimestamp``) as epoch seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """The parts of a PodGroup the plugin decides on, with quantities in table units.

    ``min_resources`` uses the units of the scheduler's NodeTable (cpu in
    millicores, everything else in whole units), so it compares directly with
    node allocatable and requested resources.
    """

    namespace: str
    name: str
    min_member: int
    schedule_timeout_seconds: int | None
    min_resources: dict[str, int]
    creation_time: float | None
    status: Mapping[str, Any] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> PodGroupInfo:
        """Parse a PodGroup object; raise :class:`PodGroupError` on an unusable spec."""
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        full = f"{namespace}/{name}"
        spec = obj.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise PodGroupError(f"PodGroup {full}: spec must be an object")
        min_member = spec.get("minMember", 1)
        # The CRD defaults nothing and allows omitting minMember: scheduler-plugins
        # then treats the group as needing no quorum, which equals a minimum of 1.
        if min_member is None:
            min_member = 1
        if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member < 0:
            raise PodGroupError(
                f"PodGroup {full}: spec.minMember must be a non-negative integer, "
                f"got {min_member!r}"
            )
        timeout = spec.get("scheduleTimeoutSeconds")
        if timeout is not None and (
            not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0
        ):
            raise PodGroupError(
                f"PodGroup {full}: spec.scheduleTimeoutSeconds must be a non-negative "
                f"integer, got {timeout!r}"
            )
        min_resources = _parse_resources(full, spec.get("minResources"))
        status = obj.get("status")
        return cls(
            namespace=namespace,
            name=name,
            min_member=max(min_member, 1),
            schedule_timeout_seconds=timeout or None,
            min_resources=min_resources,
            creation_time=parse_timestamp(meta.get("creationTimestamp")),
            status=status if isinstance(status, Mapping) else {},
        )


def _parse_resources(full: str, value: object) -> dict[str, int]:
    """Quantities of ``minResources`` in NodeTable units.

    The core's pod parser already converts quantities exactly as
    kube-scheduler does (cpu rounded up to millicores, the rest to units), so
    the resource list is read as the requests of a one-container pod rather
    than with a second quantity parser that could disagree with it.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodGroupError(f"PodGroup {full}: spec.minResources must be an object")
    probe = {
        "metadata": {"name": f"minresources-of-{full.replace('/', '-')}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": dict(value)}}]},
    }
    try:
        requests = PodInfo.from_dict(probe).requests
    except InvalidPodError as err:
        raise PodGroupError(f"PodGroup {full}: spec.minResources: {err}") from err
    # "pods" is replaced by minMember when checking capacity, as scheduler-plugins does.
    return {k: v for k, v in requests.items() if k != "pods" and v > 0}

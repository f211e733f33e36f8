"""Typed, parsed views of pods handed to plugins.

A pod arrives as the API server's raw JSON. Parsing it once into a
:class:`PodInfo` (resource requests summed, tolerations and host ports parsed)
keeps that work out of the per-cycle path; every plugin reads the same parse.
Anything a plugin needs that is not pre-parsed is in ``raw``, and a plugin may
memoise its own derived data in ``cache`` (keyed by its plugin name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from scheduler.model.ports import HostPort, pod_host_ports
from scheduler.model.quantity import QuantityError
from scheduler.model.resources import pod_non_zero_requests, pod_requests
from scheduler.model.taints import Toleration


class InvalidPodError(ValueError):
    """A pod whose spec cannot be scheduled as written; the message names it."""


# Requests depend only on the spec's containers, init containers, pod-level
# resources and overhead (status resources are not used for a PodInfo), and
# pods made from one template share them: parsing quantities (exact
# fractions) is most of the cost of a parse, so it is done once per distinct
# spec. Bounded; cleared when full.
_REQUESTS_CACHE: dict[bytes, tuple[dict[str, int], tuple[int, int]]] = {}
_REQUESTS_CACHE_SIZE = 4096
_REQUEST_FIELDS = ("containers", "initContainers", "resources", "overhead")


def _requests_key(raw: dict[str, Any], spec: dict[str, Any]) -> bytes | None:
    status = raw.get("status")
    if status is not None and not isinstance(status, dict):
        return None  # let the parser report it
    try:
        return orjson.dumps([spec.get(f) for f in _REQUEST_FIELDS])
    except TypeError:
        return None


def _parse_requests(
    raw: dict[str, Any], spec: dict[str, Any]
) -> tuple[dict[str, int], tuple[int, int]]:
    key = _requests_key(raw, spec)
    cached = _REQUESTS_CACHE.get(key) if key is not None else None
    if cached is None:
        cached = (pod_requests(raw), pod_non_zero_requests(raw))
        if key is not None:
            if len(_REQUESTS_CACHE) >= _REQUESTS_CACHE_SIZE:
                _REQUESTS_CACHE.clear()
            _REQUESTS_CACHE[key] = cached
    return dict(cached[0]), cached[1]


@dataclass(slots=True, eq=False)
class PodInfo:
    raw: dict[str, Any]
    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler_name: str
    node_name: str
    priority: int
    creation_timestamp: str
    resource_version: str
    requests: dict[str, int]
    non_zero_requests: tuple[int, int]
    node_selector: dict[str, str]
    affinity: dict[str, Any]
    tolerations: list[Toleration]
    host_ports: list[HostPort]
    scheduling_gates: list[str]
    topology_spread_constraints: list[dict[str, Any]]
    images: list[str]
    pvc_names: list[str]
    nominated_node_name: str
    deleting: bool
    phase: str
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name``, the way kube-scheduler names pods in messages."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PodInfo:
        """Parse a pod; raise :class:`InvalidPodError` naming the pod on bad specs."""
        meta = raw.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or meta.get("generateName") or "")
        key = f"{namespace}/{name}"
        spec = raw.get("spec")
        if not isinstance(spec, dict):
            raise InvalidPodError(f"pod {key}: spec is missing or not an object")
        status = raw.get("status") or {}
        try:
            requests, non_zero = _parse_requests(raw, spec)
            tolerations = [Toleration.from_dict(t) for t in spec.get("tolerations") or ()]
            host_ports = pod_host_ports(raw)
        except (QuantityError, ValueError, TypeError, AttributeError) as err:
            raise InvalidPodError(f"pod {key}: {err}") from err
        priority = spec.get("priority")
        if priority is not None and not isinstance(priority, int):
            raise InvalidPodError(f"pod {key}: spec.priority must be an integer")
        containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        images = [str(c["image"]) for c in containers if isinstance(c, dict) and c.get("image")]
        pvc_names = [
            str(v["persistentVolumeClaim"].get("claimName", ""))
            for v in spec.get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
        ]
        return cls(
            raw=raw,
            namespace=namespace,
            name=name,
            uid=str(meta.get("uid") or ""),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            node_name=str(spec.get("nodeName") or ""),
            priority=int(priority or 0),
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            requests=requests,
            non_zero_requests=non_zero,
            node_selector=dict(spec.get("nodeSelector") or {}),
            affinity=dict(spec.get("affinity") or {}),
            tolerations=tolerations,
            host_ports=host_ports,
            scheduling_gates=[
                str(g.get("name", "")) for g in spec.get("schedulingGates") or () if g
            ],
            topology_spread_constraints=list(spec.get("topologySpreadConstraints") or ()),
            images=images,
            pvc_names=pvc_names,
            nominated_node_name=str(status.get("nominatedNodeName") or ""),
            deleting=bool(meta.get("deletionTimestamp")),
            phase=str(status.get("phase") or ""),
        )


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod waiting in the scheduling queue, as QueueSort and PreEnqueue see it.

    ``timestamp`` is when it last entered the queue (monotonic seconds), which
    is what kube-scheduler's PrioritySort uses to break priority ties;
    ``initial_attempt_timestamp`` is the first time it was tried, for the SLI.
    """

    pod: PodInfo
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    consecutive_errors: int = 0
    cycle: int = 0  # the queue's scheduling cycle number of the latest attempt

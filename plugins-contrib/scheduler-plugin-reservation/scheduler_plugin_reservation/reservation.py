"""Koordinator's Reservation (``scheduling.koordinator.sh/v1alpha1``), as Koordinator reads it.

One parsed object per Reservation: who may use it (``spec.owners``: object
references, controller references, label selectors; ORed, each one's parts
ANDed, as Koordinator's ``MatchReservationOwners``), when it expires
(``spec.expires`` first, else ``creationTimestamp + spec.ttl``; a ttl of 0
never expires), and what it holds once placed (``status.allocatable`` minus
``status.allocated``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scheduler.api import LabelSelector, Pod
from scheduler.model.durations import parse_go_duration
from scheduler.model.quantity import quantity_to_int, quantity_to_milli
from scheduler.model.resources import pod_requests

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"
PLURAL = "reservations"
RESERVATIONS = (GROUP, VERSION, PLURAL)

PHASE_PENDING = "Pending"
PHASE_AVAILABLE = "Available"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"
REASON_EXPIRED = "Expired"
REASON_SUCCEEDED = "Succeeded"
#: Koordinator's default ``spec.ttl`` (the CRD defaults it; objects written
#: without the default, e.g. by a client that skips it, get the same).
DEFAULT_TTL_SECONDS = 24 * 3600.0
#: Annotation on the pseudo-pod a reservation is placed as: it never consumes one.
RESERVE_POD_ANNOTATION = "scheduling.koordinator.sh/reserve-pod"


class ReservationError(ValueError):
    """A Reservation this plugin cannot use; the message names it and the field."""


def parse_time(text: Any) -> float | None:
    """An RFC 3339 timestamp as a POSIX time (None when absent or unreadable)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def format_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resources_to_units(values: Mapping[str, Any], where: str) -> dict[str, int]:
    """A ResourceList as the scheduler counts it (cpu in millicores)."""
    out: dict[str, int] = {}
    for name, value in values.items():
        try:
            out[name] = quantity_to_milli(value) if name == "cpu" else quantity_to_int(value)
        except ValueError as err:
            raise ReservationError(f"{where}.{name}: {err}") from None
    return out


def units_to_resources(values: Mapping[str, int]) -> dict[str, str]:
    """Scheduler units back to a ResourceList (what ``status.allocatable`` holds)."""
    return {
        name: (f"{amount}m" if name == "cpu" else str(amount))
        for name, amount in sorted(values.items())
        if amount
    }


@dataclass(frozen=True, slots=True)
class Owner:
    """One entry of ``spec.owners``: every part given must match (ANDed)."""

    object_ref: Mapping[str, Any] | None
    controller: Mapping[str, Any] | None
    selector: LabelSelector | None

    def matches(self, pod: Pod) -> bool:
        return (
            _object_matches(pod, self.object_ref)
            and _controller_matches(pod, self.controller)
            and (self.selector is None or self.selector.matches(pod.labels))
        )


def _object_matches(pod: Pod, ref: Mapping[str, Any] | None) -> bool:
    if ref is None:
        return True
    return (
        (not ref.get("uid") or ref.get("uid") == pod.uid)
        and (not ref.get("name") or ref.get("name") == pod.name)
        and (not ref.get("namespace") or ref.get("namespace") == pod.namespace)
        and (not ref.get("apiVersion") or ref.get("apiVersion") == pod.raw.get("apiVersion"))
    )


def _controller_matches(pod: Pod, ref: Mapping[str, Any] | None) -> bool:
    if ref is None:
        return True
    if ref.get("namespace") and ref.get("namespace") != pod.namespace:
        return False
    owners = (pod.raw.get("metadata") or {}).get("ownerReferences") or []
    for owner in owners:
        if not isinstance(owner, Mapping):
            continue
        if (
            (ref.get("controller") is None or owner.get("controller") == ref.get("controller"))
            and (not ref.get("uid") or ref.get("uid") == owner.get("uid"))
            and (not ref.get("name") or ref.get("name") == owner.get("name"))
            and (not ref.get("kind") or ref.get("kind") == owner.get("kind"))
            and (not ref.get("apiVersion") or ref.get("apiVersion") == owner.get("apiVersion"))
        ):
            return True
    return False


@dataclass(slots=True)
class Reservation:
    """A Reservation object, parsed; ``status`` fields as last read from the cluster."""

    name: str
    uid: str
    template: Mapping[str, Any]
    owners: Sequence[Owner]
    requests: dict[str, int]
    scheduler_name: str
    allocate_once: bool
    unschedulable: bool
    expires_at: float | None  # POSIX time; None: never
    phase: str
    node_name: str
    allocatable: dict[str, int]
    allocated: dict[str, int]
    current_owners: list[dict[str, Any]] = field(default_factory=list)
    raw_status: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Reservation:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        where = f"Reservation {name or '?'}"
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            raise ReservationError(f"{where}: spec is missing")
        template = spec.get("template")
        if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
            raise ReservationError(f"{where}: spec.template.spec is missing")
        owners_raw = spec.get("owners")
        if not isinstance(owners_raw, list) or not owners_raw:
            raise ReservationError(f"{where}: spec.owners must list at least one owner")
        owners = []
        for i, entry in enumerate(owners_raw):
            if not isinstance(entry, Mapping):
                raise ReservationError(f"{where}: spec.owners[{i}] is not an object")
            selector = None
            if entry.get("labelSelector") is not None:
                try:
                    selector = LabelSelector.from_dict(
                        entry["labelSelector"], f"spec.owners[{i}].labelSelector"
                    )
                except ValueError as err:
                    raise ReservationError(f"{where}: {err}") from None
            owners.append(Owner(entry.get("object"), entry.get("controller"), selector))
        try:
            requests = pod_requests({"spec": template["spec"]})
        except ValueError as err:
            raise ReservationError(f"{where}: spec.template: {err}") from None
        status = obj.get("status") or {}
        return cls(
            name=name,
            uid=str(meta.get("uid") or ""),
            template=template,
            owners=owners,
            requests={k: v for k, v in requests.items() if k != "pods"},
            scheduler_name=str(template["spec"].get("schedulerName") or "default-scheduler"),
            allocate_once=spec.get("allocateOnce") is not False,
            unschedulable=bool(spec.get("unschedulable")),
            expires_at=_expiry(spec, meta, where),
            phase=str(status.get("phase") or PHASE_PENDING),
            node_name=str(status.get("nodeName") or ""),
            allocatable=resources_to_units(
                status.get("allocatable") or {}, f"{where}: status.allocatable"
            ),
            allocated=resources_to_units(
                status.get("allocated") or {}, f"{where}: status.allocated"
            ),
            current_owners=[dict(o) for o in status.get("currentOwners") or []],
            raw_status=status,
        )

    @property
    def terminal(self) -> bool:
        return self.phase in (PHASE_SUCCEEDED, PHASE_FAILED)

    def matches(self, pod: Pod) -> bool:
        """Whether ``pod`` is one of the owners (a reservation's own pseudo-pod never is)."""
        if RESERVE_POD_ANNOTATION in pod.annotations:
            return False
        return any(owner.matches(pod) for owner in self.owners)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def reserve_pod(self) -> dict[str, Any]:
        """The pod the reservation is placed as: its template, named after it."""
        meta = dict(self.template.get("metadata") or {})
        annotations = dict(meta.get("annotations") or {})
        annotations[RESERVE_POD_ANNOTATION] = self.name
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **meta,
                "name": f"reservation-{self.name}",
                "namespace": str(meta.get("namespace") or "default"),
                "uid": self.uid or f"reservation-{self.name}",
                "annotations": annotations,
            },
            "spec": dict(self.template["spec"]),
        }


def _expiry(spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> float | None:
    """Koordinator's rule: ``expires`` first; else creation + ttl (24h by default, 0: never)."""
    ttl_text = spec.get("ttl")
    ttl = DEFAULT_TTL_SECONDS
    if ttl_text is not None:
        try:
            ttl = parse_go_duration(str(ttl_text))
        except ValueError as err:
            raise ReservationError(f"{where}: spec.ttl {ttl_text!r}: {err}") from None
    if ttl == 0 and spec.get("expires") is None:
        return None
    expires = spec.get("expires")
    if expires is not None:
        at = parse_time(expires)
        if at is None:
            raise ReservationError(f"{where}: spec.expires {expires!r} is not an RFC 3339 time")
        return at
    created = parse_time(meta.get("creationTimestamp"))
    return None if created is None else created + ttl

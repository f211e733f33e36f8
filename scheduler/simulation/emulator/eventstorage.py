"""core/v1 and events.k8s.io/v1 Events share one storage, as in kube-apiserver.

Objects are stored in the core/v1 shape; the events.k8s.io/v1 view renames
fields on the way in and out, so an event the scheduler records through
events.k8s.io shows up in ``kubectl get events`` and vice versa.
"""

from __future__ import annotations

from typing import Any

from scheduler.simulation.emulator.resources import Codec

Obj = dict[str, Any]

# events.k8s.io/v1 field -> core/v1 field
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {core: new for new, core in _RENAMES.items()}


def core_to_events_v1(obj: Obj) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        out[_BACK.get(key, key)] = value
    out["apiVersion"] = "events.k8s.io/v1"
    return out


def events_v1_to_core(obj: Obj) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        out[_RENAMES.get(key, key)] = value
    out["apiVersion"] = "v1"
    return out


EVENTS_V1_CODEC = Codec("events.k8s.io/v1", core_to_events_v1, events_v1_to_core)


def event_fields(obj: Obj) -> dict[str, str]:
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    return {
        "involvedObject.kind": str(involved.get("kind", "")),
        "involvedObject.namespace": str(involved.get("namespace", "")),
        "involvedObject.name": str(involved.get("name", "")),
        "involvedObject.uid": str(involved.get("uid", "")),
        "involvedObject.apiVersion": str(involved.get("apiVersion", "")),
        "involvedObject.resourceVersion": str(involved.get("resourceVersion", "")),
        "involvedObject.fieldPath": str(involved.get("fieldPath", "")),
        "reason": str(obj.get("reason", "")),
        "reportingComponent": str(obj.get("reportingComponent", "")),
        "source": str(source.get("component", "")),
        "type": str(obj.get("type", "")),
    }


def events_v1_fields(obj: Obj) -> dict[str, str]:
    fields = event_fields(obj)
    for key in list(fields):
        if key.startswith("involvedObject."):
            fields["regarding." + key.split(".", 1)[1]] = fields[key]
    return fields

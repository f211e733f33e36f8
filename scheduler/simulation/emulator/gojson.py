"""Values as kube-apiserver prints them in ``Invalid value: ...`` messages.

Some validation errors carry a whole struct of the apiserver's *internal* types
(``field is immutable`` on a claim's spec, ``exactly one value must be specified``
on a device attribute). Those types have no JSON tags, so encoding/json writes
every field under its Go name, in declaration order, with zero values and
``null`` for unset pointers, slices and maps, and map keys sorted. This module
renders served (v1 JSON) values that way for the types such messages carry.
"""

from __future__ import annotations

import json
from typing import Any

# Per internal type: (JSON key, Go name, kind, element type). Kinds: s/i/b
# (string, integer, bool with their zero values), p (pointer or other
# nil-able scalar: null when unset), l (slice or map of scalars), S (struct
# value), P (pointer to struct), L (slice of structs), M (map of structs,
# keys sorted), raw (runtime.RawExtension: the JSON as given), inline
# (an embedded struct: its fields at this level).
_Field = tuple[str, str, str, str]
TYPES: dict[str, list[_Field]] = {
    "ResourceClaimSpec": [("devices", "Devices", "S", "DeviceClaim")],
    "DeviceClaim": [
        ("requests", "Requests", "L", "DeviceRequest"),
        ("constraints", "Constraints", "L", "DeviceConstraint"),
        ("config", "Config", "L", "DeviceClaimConfiguration"),
    ],
    "DeviceRequest": [
        ("name", "Name", "s", ""),
        ("exactly", "Exactly", "P", "ExactDeviceRequest"),
        ("firstAvailable", "FirstAvailable", "L", "DeviceSubRequest"),
    ],
    "ExactDeviceRequest": [
        ("deviceClassName", "DeviceClassName", "s", ""),
        ("selectors", "Selectors", "L", "DeviceSelector"),
        ("allocationMode", "AllocationMode", "s", ""),
        ("count", "Count", "i", ""),
        ("adminAccess", "AdminAccess", "p", ""),
        ("tolerations", "Tolerations", "L", "DeviceToleration"),
        ("capacity", "Capacity", "P", "CapacityRequirements"),
    ],
    "DeviceSubRequest": [
        ("name", "Name", "s", ""),
        ("deviceClassName", "DeviceClassName", "s", ""),
        ("selectors", "Selectors", "L", "DeviceSelector"),
        ("allocationMode", "AllocationMode", "s", ""),
        ("count", "Count", "i", ""),
        ("tolerations", "Tolerations", "L", "DeviceToleration"),
        ("capacity", "Capacity", "P", "CapacityRequirements"),
    ],
    "DeviceSelector": [("cel", "CEL", "P", "CELDeviceSelector")],
    "CELDeviceSelector": [("expression", "Expression", "s", "")],
    "DeviceToleration": [
        ("key", "Key", "s", ""),
        ("operator", "Operator", "s", ""),
        ("value", "Value", "s", ""),
        ("effect", "Effect", "s", ""),
        ("tolerationSeconds", "TolerationSeconds", "p", ""),
    ],
    "CapacityRequirements": [("requests", "Requests", "l", "")],
    "DeviceConstraint": [
        ("requests", "Requests", "l", ""),
        ("matchAttribute", "MatchAttribute", "p", ""),
        ("distinctAttribute", "DistinctAttribute", "p", ""),
    ],
    "DeviceClaimConfiguration": [
        ("requests", "Requests", "l", ""),
        ("", "", "inline", "DeviceConfiguration"),
    ],
    "DeviceConfiguration": [("opaque", "Opaque", "P", "OpaqueDeviceConfiguration")],
    "OpaqueDeviceConfiguration": [
        ("driver", "Driver", "s", ""),
        ("parameters", "Parameters", "raw", ""),
    ],
    "AllocationResult": [
        ("devices", "Devices", "S", "DeviceAllocationResult"),
        ("nodeSelector", "NodeSelector", "P", "NodeSelector"),
        ("allocationTimestamp", "AllocationTimestamp", "p", ""),
    ],
    "DeviceAllocationResult": [
        ("results", "Results", "L", "DeviceRequestAllocationResult"),
        ("config", "Config", "L", "DeviceAllocationConfiguration"),
    ],
    "DeviceRequestAllocationResult": [
        ("request", "Request", "s", ""),
        ("driver", "Driver", "s", ""),
        ("pool", "Pool", "s", ""),
        ("device", "Device", "s", ""),
        ("adminAccess", "AdminAccess", "p", ""),
        ("tolerations", "Tolerations", "L", "DeviceToleration"),
        ("bindingConditions", "BindingConditions", "l", ""),
        ("bindingFailureConditions", "BindingFailureConditions", "l", ""),
        ("shareID", "ShareID", "p", ""),
        ("consumedCapacity", "ConsumedCapacity", "l", ""),
    ],
    "DeviceAllocationConfiguration": [
        ("source", "Source", "s", ""),
        ("requests", "Requests", "l", ""),
        ("", "", "inline", "DeviceConfiguration"),
    ],
    "DeviceAttribute": [
        ("int", "IntValue", "p", ""),
        ("bool", "BoolValue", "p", ""),
        ("string", "StringValue", "p", ""),
        ("version", "VersionValue", "p", ""),
        ("ints", "IntValues", "l", ""),
        ("bools", "BoolValues", "l", ""),
        ("strings", "StringValues", "l", ""),
        ("versions", "VersionValues", "l", ""),
    ],
    "NodeSelector": [("nodeSelectorTerms", "NodeSelectorTerms", "L", "NodeSelectorTerm")],
    "NodeSelectorTerm": [
        ("matchExpressions", "MatchExpressions", "L", "NodeSelectorRequirement"),
        ("matchFields", "MatchFields", "L", "NodeSelectorRequirement"),
    ],
    "NodeSelectorRequirement": [
        ("key", "Key", "s", ""),
        ("operator", "Operator", "s", ""),
        ("values", "Values", "l", ""),
    ],
    "PodResourceClaim": [
        ("name", "Name", "s", ""),
        ("resourceClaimName", "ResourceClaimName", "p", ""),
        ("resourceClaimTemplateName", "ResourceClaimTemplateName", "p", ""),
    ],
}
_ZERO: dict[str, Any] = {"s": "", "i": 0, "b": False}


def internal(type_name: str, value: Any) -> Any:
    """``value`` (served JSON of ``type_name``) as encoding/json writes the internal type."""
    if value is None:
        return None
    if type_name not in TYPES or not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, go, kind, elem in TYPES[type_name]:
        if kind == "inline":
            inner = internal(elem, value)
            out.update(inner if isinstance(inner, dict) else {})
            continue
        item = value.get(key)
        if kind in _ZERO:
            out[go] = _ZERO[kind] if item is None else item
        elif kind == "S":
            out[go] = internal(elem, item if item is not None else {})
        elif kind == "L":
            out[go] = None if item is None else [internal(elem, v) for v in item]
        elif kind == "l" and isinstance(item, dict):
            out[go] = dict(sorted(item.items()))
        else:  # p, P, l, raw
            out[go] = internal(elem, item) if kind == "P" else item
    return out


def render(type_name: str, value: Any) -> str:
    """The text ``field.Invalid`` prints for a struct value of ``type_name``."""
    return marshal(internal(type_name, value))


def marshal(value: Any) -> str:
    """json.Marshal's output: compact, and HTML-safe (``<``, ``>``, ``&`` escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _HTML_ESCAPES:
        text = text.replace(char, escaped)
    return text


_HTML_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)

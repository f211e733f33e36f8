"""kube-apiserver's validation of ResourceSlices (resource.k8s.io/v1).

``ValidateResourceSlice(Update)``: driver and pool, exactly one way of selecting
nodes, devices with unique names, attributes and capacities under qualified
names with one value each, counters, taints and binding conditions. Go iterates
maps in random order; the emulator reports map entries in the order given.
"""

from __future__ import annotations

import re
from typing import Any

from scheduler.simulation.emulator import gojson
from scheduler.simulation.emulator.dracapacity import request_policy
from scheduler.simulation.emulator.dracommon import (
    DEVICE_MAX_ID_LENGTH,
    binding_conditions,
    check_list,
    dns_label,
    dns_subdomain,
    immutable,
    items,
    mapping,
    name_of,
    pool_name,
    qualified_name,
    taint,
    too_long,
    too_many,
    truncated,
)
from scheduler.simulation.emulator.validation import (
    Cause,
    csi_driver_name,
    forbidden,
    invalid,
    node_selector,
    required,
)

Obj = dict[str, Any]

SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_ADVANCED = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_VALUES = 48
ATTRIBUTE_VALUE_MAX_LENGTH = 64
QUALIFIED_KEY_MAX = 63 + 1 + DEVICE_MAX_ID_LENGTH
TAINTS_MAX = 16
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)


def resource_slice(obj: Obj, old: Obj | None = None) -> list[Cause]:
    """ValidateResourceSlice(Update)."""
    spec = mapping(obj.get("spec"))
    old_spec = mapping(old.get("spec")) if old is not None else None
    causes = csi_driver_name(str(spec.get("driver") or ""), "spec.driver")
    pool = mapping(spec.get("pool"))
    causes += pool_name(str(pool.get("name") or ""), "spec.pool.name")
    count = pool.get("resourceSliceCount") or 0
    if count <= 0:
        causes.append(invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"))
    generation = pool.get("generation") or 0
    if generation < 0:
        causes.append(
            invalid("spec.pool.generation", generation, "must be greater than or equal to zero")
        )
    if old_spec is not None:
        old_pool = mapping(old_spec.get("pool"))
        if (pool.get("name") or "") != (old_pool.get("name") or ""):
            causes.append(immutable("spec.pool.name", pool.get("name") or ""))
        if (spec.get("driver") or "") != (old_spec.get("driver") or ""):
            causes.append(immutable("spec.driver", spec.get("driver") or ""))
        if spec.get("nodeName") != old_spec.get("nodeName"):
            causes.append(immutable("spec.nodeName", spec.get("nodeName")))
    causes += _node_selection(spec)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        causes.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = items(spec.get("devices"))
    advanced = any(
        mapping(d).get("taints") or mapping(d).get("consumesCounters") or _list_attributes(d)
        for d in devices
    )
    per_device = spec.get("perDeviceNodeSelection") is True
    old_devices = {name_of(d): mapping(d) for d in items((old_spec or {}).get("devices"))}
    causes += check_list(
        spec.get("devices"),
        SLICE_MAX_DEVICES_ADVANCED if advanced else SLICE_MAX_DEVICES,
        lambda device, where: _device(
            mapping(device), old_devices.get(name_of(device)), where, per_device
        ),
        "spec.devices",
        name_of,
    )
    causes += check_list(
        spec.get("sharedCounters"), MAX_COUNTER_SETS, _counter_set, "spec.sharedCounters", name_of
    )
    return causes


def _node_selection(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    chosen: list[str] = []
    node = spec.get("nodeName")
    if node is not None:
        if node:
            chosen.append("`nodeName`")
            causes += dns_subdomain(str(node), "spec.nodeName")
        else:
            causes.append(
                invalid("spec.nodeName", node, "must be either unset or set to a non-empty string")
            )
    selector = spec.get("nodeSelector")
    if selector is not None:
        chosen.append("`nodeSelector`")
        causes += node_selector(selector, "spec.nodeSelector")
        terms = mapping(selector).get("nodeSelectorTerms")
        if len(items(terms)) != 1:
            shown = gojson.marshal(
                None
                if terms is None
                else [gojson.internal("NodeSelectorTerm", t) for t in items(terms)]
            )
            causes.append(
                (
                    "spec.nodeSelector.nodeSelectorTerms",
                    "FieldValueInvalid",
                    f"Invalid value: {shown}: must have exactly one node selector term",
                )
            )
    for key in ("allNodes", "perDeviceNodeSelection"):
        value = spec.get(key)
        if value is True:
            chosen.append(f"`{key}`")
        elif value is not None:
            causes.append(invalid(f"spec.{key}", value, "must be either unset or set to true"))
    fields = "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
    if not chosen:
        causes.append(required("spec", f"exactly one of {fields} is required"))
    elif len(chosen) > 1:
        causes.append(
            invalid(
                "spec",
                "{" + ", ".join(chosen) + "}",
                f"exactly one of {fields} is required, but multiple fields are set",
            )
        )
    return causes


def _list_attributes(device: Any) -> bool:
    return any(
        any(mapping(attr).get(k) is not None for k in ("bools", "ints", "strings", "versions"))
        for attr in mapping(mapping(device).get("attributes")).values()
    )


def _attribute_values(attributes: Obj) -> int:
    total = 0
    for attr in attributes.values():
        attr = mapping(attr)
        lists = [items(attr.get(k)) for k in ("ints", "bools", "strings", "versions")]
        total += sum(len(v) for v in lists) or 1
    return total


def _device(device: Obj, old: Obj | None, path: str, per_device: bool) -> list[Cause]:
    causes = dns_label(str(device.get("name") or ""), f"{path}.name")
    attributes = mapping(device.get("attributes"))
    capacity = mapping(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        causes.append(
            invalid(
                path,
                total,
                "the total number of attributes and capacities must not exceed "
                f"{MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    values = _attribute_values(attributes)
    if values > MAX_ATTRIBUTE_VALUES:
        causes.append(
            invalid(
                path,
                values,
                f"the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES}",
            )
        )
    for key, attr in attributes.items():
        causes += qualified_name(str(key), f"{path}.attributes")
        causes += _attribute(
            mapping(attr), f"{path}.attributes[{truncated(str(key), QUALIFIED_KEY_MAX)}]"
        )
    multiple = device.get("allowMultipleAllocations") is True
    for key, cap in capacity.items():
        causes += qualified_name(str(key), f"{path}.capacity")
        where = f"{path}.capacity[{truncated(str(key), QUALIFIED_KEY_MAX)}].requestPolicy"
        policy = mapping(cap).get("requestPolicy")
        if policy is None:
            continue
        if not multiple:
            causes.append(forbidden(where, "allowMultipleAllocations must be true"))
        else:
            causes += request_policy(mapping(cap).get("value"), mapping(policy), where)
    if old is None or old.get("taints") != device.get("taints"):
        causes += check_list(device.get("taints"), TAINTS_MAX, taint, f"{path}.taints")
    causes += check_list(
        device.get("consumesCounters"),
        MAX_CONSUMPTIONS_PER_DEVICE,
        _counter_consumption,
        f"{path}.consumesCounters",
        lambda c: str(mapping(c).get("counterSet") or ""),
    )
    causes += _device_node_selection(device, path, per_device)
    causes += binding_conditions(device, path)
    return causes


def _device_node_selection(device: Obj, path: str, per_device: bool) -> list[Cause]:
    given = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if not per_device:
        if given:
            return [
                invalid(
                    path,
                    None,
                    "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                )
            ]
        return []
    causes: list[Cause] = []
    chosen: list[str] = []
    node = device.get("nodeName")
    if node is not None:
        if node:
            chosen.append("`nodeName`")
            causes += dns_subdomain(str(node), f"{path}.nodeName")
        else:
            causes.append(invalid(f"{path}.nodeName", node, "must not be empty"))
    if device.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        causes += node_selector(device["nodeSelector"], f"{path}.nodeSelector")
    all_nodes = device.get("allNodes")
    if all_nodes is True:
        chosen.append("`allNodes`")
    elif all_nodes is not None:
        causes.append(invalid(f"{path}.allNodes", all_nodes, "must be either unset or set to true"))
    why = (
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
    )
    if not chosen:
        causes.append(required(path, why))
    elif len(chosen) > 1:
        causes.append(invalid(path, "{" + ", ".join(chosen) + "}", why))
    return causes


def _attribute(attr: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    given = 0
    for key in ("int", "bool"):
        given += attr.get(key) is not None
    if attr.get("string") is not None:
        given += 1
        if len(str(attr["string"])) > ATTRIBUTE_VALUE_MAX_LENGTH:
            causes.append(too_long(f"{path}.string", ATTRIBUTE_VALUE_MAX_LENGTH))
    if attr.get("version") is not None:
        given += 1
        causes += _version(str(attr["version"]), f"{path}.version")
    for key in ("bools", "ints", "strings", "versions"):
        values = attr.get(key)
        if values is None:
            continue
        given += 1
        if not items(values):
            causes.append(invalid(f"{path}.{key}", values, "must not be empty if specified"))
        for i, item in enumerate(items(values)):
            where = f"{path}.{key}[{i}]"
            if key == "strings" and len(str(item)) > ATTRIBUTE_VALUE_MAX_LENGTH:
                causes.append(too_long(where, ATTRIBUTE_VALUE_MAX_LENGTH))
            elif key == "versions":
                causes += _version(str(item), where)
    if given == 0:
        causes.append(invalid(path, "", "exactly one value must be specified"))
    elif given > 1:
        shown = gojson.render("DeviceAttribute", attr)
        causes.append(
            (
                path,
                "FieldValueInvalid",
                f"Invalid value: {shown}: exactly one value must be specified",
            )
        )
    return causes


def _version(value: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not _SEMVER.match(value):
        causes.append(
            invalid(path, value, "must be a string compatible with semver.org spec 2.0.0")
        )
    if len(value) > ATTRIBUTE_VALUE_MAX_LENGTH:
        causes.append(too_long(path, ATTRIBUTE_VALUE_MAX_LENGTH))
    return causes


def _counters(values: Any, path: str) -> list[Cause]:
    counters = mapping(values)
    if not counters:
        return [required(path)]
    if len(counters) > MAX_COUNTERS_PER_SET:
        return [too_many(path, len(counters), MAX_COUNTERS_PER_SET)]
    causes: list[Cause] = []
    for key in counters:
        causes += dns_label(str(key), path)
    return causes


def _counter_set(counter_set: Any, path: str) -> list[Cause]:
    counter_set = mapping(counter_set)
    name = str(counter_set.get("name") or "")
    causes = [required(f"{path}.name")] if not name else dns_label(name, f"{path}.name")
    return causes + _counters(counter_set.get("counters"), f"{path}.counters")


def _counter_consumption(consumption: Any, path: str) -> list[Cause]:
    consumption = mapping(consumption)
    name = str(consumption.get("counterSet") or "")
    causes = [required(f"{path}.counterSet")] if not name else dns_label(name, f"{path}.counterSet")
    return causes + _counters(consumption.get("counters"), f"{path}.counters")


def drop_disabled_slice_fields(obj: Obj, old: Obj | None) -> None:
    """dropDisabledFields: DRANodeAllocatableResources is alpha (off) in kube 1.36,
    so its mappings are dropped unless the stored slice already has them."""
    old_uses = any(
        mapping(d).get("nodeAllocatableResourceMappings")
        for d in items(mapping((old or {}).get("spec")).get("devices"))
    )
    if old_uses:
        return
    for device in items(mapping(obj.get("spec")).get("devices")):
        if isinstance(device, dict):
            device.pop("nodeAllocatableResourceMappings", None)

"""Object builders named after kube's allocatortesting helpers, so ported cases read alike.

Objects are raw ``resource.k8s.io/v1`` JSON dicts, as the API server returns them.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2, REQ3 = "req-0", "req-1", "req-2", "req-3"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3, SLICE4 = "slice-1", "slice-2", "slice-3", "slice-4"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = (f"device-{i}" for i in range(5))
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
ALL_NODES = "nodeSelectionAll"
PER_DEVICE = "nodeSelectionPerDevice"


def node(name: str, region: str = REGION1) -> Obj:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def cel(expression: str) -> Obj:
    return {"cel": {"expression": expression}}


def device_class(name: str, driver: str, *, config: list[Obj] | None = None) -> Obj:
    spec: Obj = {"selectors": [cel(f'device.driver == "{driver}"')]}
    if config is not None:
        spec["config"] = [{"opaque": c["opaque"]} for c in config]
    return {"metadata": {"name": name}, "spec": spec}


def device_configuration(driver: str, attribute: str) -> Obj:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def request(
    name: str,
    class_name: str,
    count: int = 1,
    *selectors: Obj,
    admin_access: bool | None = None,
    tolerations: list[Obj] | None = None,
    capacity: dict[str, str] | None = None,
) -> Obj:
    exactly: Obj = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = list(selectors)
    if admin_access is not None:
        exactly["adminAccess"] = admin_access
    if tolerations:
        exactly["tolerations"] = tolerations
    if capacity is not None:
        exactly["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": exactly}


def all_request(name: str, class_name: str, *selectors: Obj, **extra: Any) -> Obj:
    req = request(name, class_name, 1, *selectors, **extra)
    req["exactly"]["allocationMode"] = "All"
    del req["exactly"]["count"]
    return req


def sub_request(
    name: str,
    class_name: str,
    count: int = 1,
    *selectors: Obj,
    mode: str = "ExactCount",
    tolerations: list[Obj] | None = None,
    capacity: dict[str, str] | None = None,
) -> Obj:
    sub: Obj = {"name": name, "deviceClassName": class_name, "allocationMode": mode}
    if mode == "ExactCount":
        sub["count"] = count
    if selectors:
        sub["selectors"] = list(selectors)
    if tolerations:
        sub["tolerations"] = tolerations
    if capacity is not None:
        sub["capacity"] = {"requests": capacity}
    return sub


def first_available(name: str, *subs: Obj) -> Obj:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str,
    *requests: Obj,
    constraints: list[Obj] | None = None,
    config: list[Obj] | None = None,
) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def claim_with_request(name: str, req: str, class_name: str, **kwargs: Any) -> Obj:
    return claim(name, request(req, class_name, 1), **kwargs)


def claim_config(requests: list[str] | None, configuration: Obj) -> Obj:
    out: Obj = dict(configuration)
    if requests:
        out["requests"] = requests
    return out


def match_attribute(attribute: str, *requests: str) -> Obj:
    out: Obj = {"matchAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def distinct_attribute(attribute: str, *requests: str) -> Obj:
    out: Obj = {"distinctAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def device(
    name: str,
    capacity: dict[str, Any] | None = None,
    attributes: dict[str, Obj] | None = None,
    **extra: Any,
) -> Obj:
    out: Obj = {"name": name}
    if attributes:
        out["attributes"] = attributes
    if capacity:
        out["capacity"] = {
            k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()
        }
    out.update(extra)
    return out


def counter_consumption(counter_set: str, counters: dict[str, str]) -> Obj:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, counters: dict[str, str]) -> Obj:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def pool(name: str, count: int = 1, generation: int = 1) -> Obj:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def slice_(
    name: str,
    node_selection: str | Obj,
    pool_: str | Obj,
    driver: str,
    *devices: Obj,
    shared_counters: list[Obj] | None = None,
) -> Obj:
    spec: Obj = {"driver": driver, "pool": pool(pool_) if isinstance(pool_, str) else pool_}
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == ALL_NODES:
        spec["allNodes"] = True
    elif node_selection == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    if devices:
        spec["devices"] = list(devices)
    if shared_counters:
        spec["sharedCounters"] = shared_counters
    return {"metadata": {"name": name}, "spec": spec}


def slice_with_one_device(
    name: str, node_selection: str | Obj, pool_: str | Obj, driver: str
) -> Obj:
    return slice_(name, node_selection, pool_, driver, device(DEVICE1))


def slice_with_devices(
    name: str, node_selection: str | Obj, pool_: str | Obj, driver: str, count: int
) -> Obj:
    return slice_(
        name, node_selection, pool_, driver, *(device(f"device-{i}") for i in range(count))
    )


def node_label_selector(key: str, *values: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
        ]
    }


def local_node_selector(node_name: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def result(
    req: str,
    driver: str,
    pool_: str,
    dev: str,
    admin_access: bool = False,
    tolerations: list[Obj] | None = None,
    **extra: Any,
) -> Obj:
    out: Obj = {"request": req, "driver": driver, "pool": pool_, "device": dev}
    if admin_access:
        out["adminAccess"] = True
    if tolerations:
        out["tolerations"] = tolerations
    out.update(extra)
    return out


def allocation(selector: Obj | None, *results: Obj, config: list[Obj] | None = None) -> Obj:
    devices: Obj = {}
    if results:
        devices["results"] = list(results)
    if config:
        devices["config"] = config
    out: Obj = {"devices": devices}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def string_attr(value: str) -> Obj:
    return {"string": value}


def int_attr(value: int) -> Obj:
    return {"int": value}


def bool_attr(value: bool) -> Obj:
    return {"bool": value}


def version_attr(value: str) -> Obj:
    return {"version": value}

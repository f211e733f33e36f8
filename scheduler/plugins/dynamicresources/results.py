"""The AllocationResult JSON, shaped exactly as kube's allocator writes it.

Field presence follows Go's ``omitempty`` on ``resource.k8s.io/v1`` types, so a
result compares equal to what kube-scheduler would store in ``status.allocation``:
``adminAccess`` only when true, ``tolerations``/``bindingConditions``/... only when
non-empty, ``config`` only when some config applies, ``nodeSelector`` only when the
devices restrict nodes. The allocator never sets ``allocationTimestamp``; kube's
plugin adds it when it writes the claim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scheduler.plugins._helpers import object_name
from scheduler.plugins.dynamicresources.pools import AllocationError, Obj

if TYPE_CHECKING:
    from scheduler.plugins.dynamicresources.allocator import _Chosen

__all__ = ["build_result"]

_NODE_NAME_FIELD = "metadata.name"


def build_result(
    claim: Obj,
    chosen: Sequence[_Chosen],
    class_for_config: Callable[[int, int], tuple[str, Obj] | None],
    selected_subrequest: Callable[[int, int], str | None],
    claim_index: int,
    node_name: str,
) -> dict[str, Any]:
    """One claim's AllocationResult."""
    results = [_device_result(c) for c in chosen]
    devices: dict[str, Any] = {}
    if results:
        devices["results"] = results
    config = _configs(claim, claim_index, class_for_config, selected_subrequest)
    if config:
        devices["config"] = config
    allocation: dict[str, Any] = {"devices": devices}
    try:
        node_selector = _node_selector(chosen, node_name)
    except AllocationError as err:
        name = (claim.get("metadata") or {}).get("name") or ""
        raise AllocationError(f"create NodeSelector for claim {name}: {err}") from None
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    return allocation


def _device_result(chosen: _Chosen) -> dict[str, Any]:
    device = chosen.device
    result: dict[str, Any] = {
        "request": chosen.request.full_name,
        "driver": device.key[0],
        "pool": device.key[1],
        "device": device.key[2],
    }
    if chosen.request.admin_access:
        result["adminAccess"] = True
    if chosen.request.tolerations:
        result["tolerations"] = [dict(t) for t in chosen.request.tolerations]
    if device.binding_conditions:
        result["bindingConditions"] = list(device.binding_conditions)
    if device.binding_failure_conditions:
        result["bindingFailureConditions"] = list(device.binding_failure_conditions)
    if chosen.share_id is not None:
        result["shareID"] = chosen.share_id
    if chosen.consumed:
        result["consumedCapacity"] = {
            name: chosen.consumed[name].text for name in sorted(chosen.consumed)
        }
    return result


def _configs(
    claim: Obj,
    claim_index: int,
    class_for_config: Callable[[int, int], tuple[str, Obj] | None],
    selected_subrequest: Callable[[int, int], str | None],
) -> list[dict[str, Any]]:
    """Class configs (once per class, for every request using it), then claim configs.

    A claim config naming several requests is repeated once per named request, as
    kube does; one naming a subrequest only applies if that subrequest was chosen.
    """
    devices = (claim.get("spec") or {}).get("devices") or {}
    requests = devices.get("requests") or ()
    configs: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for request_index in range(len(requests)):
        found = class_for_config(claim_index, request_index)
        if found is None:
            continue
        request_name, device_class = found
        class_name = object_name(device_class)
        existing = class_ranges.get(class_name)
        if existing is not None:
            for index in range(*existing):
                configs[index]["requests"].append(request_name)
            continue
        begin = len(configs)
        for config in (device_class.get("spec") or {}).get("config") or ():
            configs.append(_config_entry("FromClass", [request_name], config))
        class_ranges[class_name] = (begin, len(configs))
    for config in devices.get("config") or ():
        named = list(config.get("requests") or ())
        if not named:
            configs.append(_config_entry("FromClaim", None, config))
            continue
        for request_index, request in enumerate(requests):
            if request.get("name") in named:
                configs.append(_config_entry("FromClaim", named, config))
                continue
            subrequest = selected_subrequest(claim_index, request_index)
            if subrequest is not None and subrequest in named:
                configs.append(_config_entry("FromClaim", named, config))
    return configs


def _config_entry(
    source: str, requests: list[str] | None, config: Mapping[str, Any]
) -> dict[str, Any]:
    entry: dict[str, Any] = {"source": source}
    if requests:
        entry["requests"] = list(requests)
    for key, value in config.items():
        if key != "requests":
            entry[key] = value
    return entry


def _node_selector(chosen: Sequence[_Chosen], node_name: str) -> dict[str, Any] | None:
    """kube's ``createNodeSelector``: node-local wins, else the union of selectors."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for c in chosen:
        device = c.device
        if device.slice.per_device_node_selection:
            name, selector = device.node_name, device.raw_node_selector
        else:
            name, selector = device.slice.node_name, device.slice.raw_node_selector
        if name or device.binds_to_node:
            return {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": _NODE_NAME_FIELD, "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            }
        if selector is None:
            continue
        terms = list(selector.get("nodeSelectorTerms") or ())
        if len(terms) == 1:
            _add_new(terms[0].get("matchFields") or (), fields)
            _add_new(terms[0].get("matchExpressions") or (), expressions)
        elif len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [dict(r) for r in expressions]
    if fields:
        term["matchFields"] = [dict(r) for r in fields]
    return {"nodeSelectorTerms": [term]}


def _add_new(source: Sequence[Mapping[str, Any]], target: list[Mapping[str, Any]]) -> None:
    for requirement in source:
        values = set(requirement.get("values") or ())
        if not any(
            existing.get("key") == requirement.get("key")
            and existing.get("operator") == requirement.get("operator")
            and set(existing.get("values") or ()) == values
            for existing in target
        ):
            target.append(requirement)

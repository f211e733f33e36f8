"""kube's extender wire format (``k8s.io/kube-scheduler/extender/v1``) as JSON.

Those Go types have no JSON tags: kube-scheduler sends the Go field names
(``Pod``, ``NodeNames``, ``PodUID``, a nil pointer as ``null``), and Go's
decoder matches an answer's keys case-insensitively (``nodenames`` and
``NodeNames`` are the same field). Requests here are byte-for-byte kube's
shape; answers are read with Go's matching rule and checked field by field,
so an extender that returns garbage fails with a message saying what was
wrong instead of a KeyError deep in the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson


class ExtenderAnswerError(ValueError):
    """An extender's answer is not the JSON its verb defines."""


def json_default(value: Any) -> Any:
    """What orjson cannot encode by itself: other mappings and sequences, as JSON's."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def encode(body: Any) -> bytes:
    """A request body as JSON (orjson: the API objects are dicts and lists, or subclasses)."""
    return orjson.dumps(body, default=json_default, option=orjson.OPT_NON_STR_KEYS)


def field_of(obj: Mapping[str, Any], name: str) -> Any:
    """Go's ``encoding/json`` rule: the exact key, else one equal to it ignoring case."""
    if name in obj:
        return obj[name]
    folded = name.casefold()
    for key, value in obj.items():
        if isinstance(key, str) and key.casefold() == folded:
            return value
    return None


def extender_args(
    pod: Mapping[str, Any],
    names: Sequence[str],
    raws: Sequence[Mapping[str, Any]],
    node_cache_capable: bool,
) -> dict[str, Any]:
    """``ExtenderArgs``: the pod, and the nodes by name or as a ``NodeList`` (the other null)."""
    if node_cache_capable:
        return {"Pod": pod, "Nodes": None, "NodeNames": list(names)}
    node_list = {"metadata": {}, "items": list(raws)}
    return {"Pod": pod, "Nodes": node_list, "NodeNames": None}


def preemption_args(
    pod: Mapping[str, Any],
    victims: Mapping[str, tuple[Sequence[Mapping[str, Any]], int]],
    node_cache_capable: bool,
) -> dict[str, Any]:
    """``ExtenderPreemptionArgs``: per node, the victims' UIDs (``MetaVictims``) when
    nodeCacheCapable, else the victims' pod objects (``Victims``); the other null."""
    if node_cache_capable:
        meta = {
            node: {
                "Pods": [{"UID": (p.get("metadata") or {}).get("uid") or ""} for p in pods],
                "NumPDBViolations": violations,
            }
            for node, (pods, violations) in victims.items()
        }
        return {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    full = {
        node: {"Pods": list(pods), "NumPDBViolations": violations}
        for node, (pods, violations) in victims.items()
    }
    return {"Pod": pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}


@dataclass(frozen=True)
class MetaVictims:
    """One node's entry of an ``ExtenderPreemptionResult``: victims by pod UID."""

    uids: list[str]
    num_pdb_violations: int


def parse_preemption(got: Any) -> dict[str, MetaVictims]:
    """An ``ExtenderPreemptionResult`` (``NodeNameToMetaVictims``), in the answer's order.

    The extender always answers with UIDs, whichever form it was sent. A null
    node entry or pod would crash kube-scheduler (a nil pointer); here it is
    an invalid answer.
    """
    body = _object(got, "ExtenderPreemptionResult")
    nodes = field_of(body, "NodeNameToMetaVictims")
    if nodes is None:
        return {}
    nodes = _object(nodes, "NodeNameToMetaVictims")
    out: dict[str, MetaVictims] = {}
    for node, entry in nodes.items():
        where = f"NodeNameToMetaVictims[{node}]"
        victims = _object(entry, where)
        pods = field_of(victims, "Pods")
        if pods is None:
            pods = []
        if not isinstance(pods, list):
            raise ExtenderAnswerError(f"{where}.Pods: expected a list of pods")
        uids = []
        for i, meta_pod in enumerate(pods):
            uid = field_of(_object(meta_pod, f"{where}.Pods[{i}]"), "UID")
            uid = "" if uid is None else uid
            if not isinstance(uid, str):
                raise ExtenderAnswerError(f"{where}.Pods[{i}].UID: expected a string")
            uids.append(uid)
        violations = field_of(victims, "NumPDBViolations")
        violations = 0 if violations is None else violations
        if isinstance(violations, bool) or not isinstance(violations, int):
            raise ExtenderAnswerError(f"{where}.NumPDBViolations: expected an integer")
        out[str(node)] = MetaVictims(uids, violations)
    return out


def binding_args(namespace: str, name: str, uid: str, node: str) -> dict[str, Any]:
    """``ExtenderBindingArgs``."""
    return {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node}


@dataclass(frozen=True)
class FilterAnswer:
    """``ExtenderFilterResult``: which nodes pass, and why the others do not."""

    #: Passing node names (from ``nodenames`` or ``nodes.items``); None: neither was set.
    node_names: list[str] | None
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


def _object(got: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(got, Mapping):
        raise ExtenderAnswerError(f"{what}: expected a JSON object, got {type(got).__name__}")
    return got


def _failed_map(got: Any, key: str) -> dict[str, str]:
    if got is None:
        return {}
    if not isinstance(got, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in got.items()
    ):
        raise ExtenderAnswerError(f"{key}: expected an object of node name to reason strings")
    return dict(got)


def parse_filter(got: Any, node_cache_capable: bool) -> FilterAnswer:
    """An ``ExtenderFilterResult`` (``NodeNames`` counts only when nodeCacheCapable, as in kube)."""
    body = _object(got, "ExtenderFilterResult")
    error = field_of(body, "Error") or ""
    if not isinstance(error, str):
        raise ExtenderAnswerError("Error: expected a string")
    names: list[str] | None = None
    raw_names = field_of(body, "NodeNames")
    nodes = field_of(body, "Nodes")
    if node_cache_capable and raw_names is not None:
        if not isinstance(raw_names, list) or not set(map(type, raw_names)) <= {str}:
            raise ExtenderAnswerError("NodeNames: expected a list of strings")
        names = list(raw_names)
    elif nodes is not None:
        items = field_of(_object(nodes, "Nodes"), "items") or []
        if not isinstance(items, list):
            raise ExtenderAnswerError("Nodes.items: expected a list of nodes")
        names = []
        for i, item in enumerate(items):
            meta = field_of(_object(item, f"Nodes.items[{i}]"), "metadata")
            name = field_of(meta, "name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str) or not name:
                raise ExtenderAnswerError(f"Nodes.items[{i}].metadata.name: expected a node name")
            names.append(name)
    return FilterAnswer(
        names,
        _failed_map(field_of(body, "FailedNodes"), "FailedNodes"),
        _failed_map(field_of(body, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"),
        error,
    )


def parse_priorities(got: Any) -> list[tuple[str, int]]:
    """A ``HostPriorityList``: ``[{"Host": ..., "Score": ...}]``."""
    if got is None:
        return []
    if not isinstance(got, list):
        raise ExtenderAnswerError(
            f"host priority list: expected a JSON list, got {type(got).__name__}"
        )
    out = []
    for i, item in enumerate(got):
        entry = _object(item, f"[{i}]")
        host, score = field_of(entry, "Host"), field_of(entry, "Score")
        host = "" if host is None else host
        score = 0 if score is None else score
        if not isinstance(host, str):
            raise ExtenderAnswerError(f"[{i}].Host: expected a string")
        if isinstance(score, bool) or not isinstance(score, int):
            raise ExtenderAnswerError(f"[{i}].Score: expected an integer")
        out.append((host, score))
    return out


def parse_binding(got: Any) -> str:
    """An ``ExtenderBindingResult``: its ``error`` ('' when the extender bound the pod)."""
    error = field_of(_object(got, "ExtenderBindingResult"), "Error") or ""
    if not isinstance(error, str):
        raise ExtenderAnswerError("Error: expected a string")
    return error


class ExtenderCallError(Exception):
    """A call that did not give an answer (unreachable, timed out, non-200, bad JSON).

    Defined here, apart from the HTTP client, so that loading the plugin
    (``plugins list``, config checks) does not import aiohttp.
    """

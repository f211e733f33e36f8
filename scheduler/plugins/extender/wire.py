"""kube's extender wire format (``k8s.io/kube-scheduler/extender/v1``) as JSON.

Requests are built from the API objects the scheduler holds; answers are
checked field by field, so an extender that returns garbage fails with a
message saying what was wrong instead of a KeyError deep in the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class ExtenderAnswerError(ValueError):
    """An extender's answer is not the JSON its verb defines."""


def plain(value: Any) -> Any:
    """``value`` with read-only mappings and tuples turned into JSON's dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Sequence):
        return [plain(v) for v in value]
    return value


def extender_args(
    pod: Mapping[str, Any],
    nodes: Sequence[tuple[str, Mapping[str, Any]]],
    node_cache_capable: bool,
) -> dict[str, Any]:
    """``ExtenderArgs``: the pod, and the nodes by name or as a ``NodeList``."""
    body: dict[str, Any] = {"pod": plain(pod)}
    if node_cache_capable:
        body["nodenames"] = [name for name, _ in nodes]
    else:
        body["nodes"] = {
            "kind": "NodeList",
            "apiVersion": "v1",
            "metadata": {},
            "items": [plain(raw) for _, raw in nodes],
        }
    return body


def binding_args(namespace: str, name: str, uid: str, node: str) -> dict[str, Any]:
    """``ExtenderBindingArgs``."""
    return {"podName": name, "podNamespace": namespace, "podUID": uid, "node": node}


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
    """An ``ExtenderFilterResult`` (``nodenames`` counts only when nodeCacheCapable, as in kube)."""
    body = _object(got, "filter result")
    error = body.get("error") or ""
    if not isinstance(error, str):
        raise ExtenderAnswerError("error: expected a string")
    names: list[str] | None = None
    raw_names = body.get("nodenames")
    nodes = body.get("nodes")
    if node_cache_capable and raw_names is not None:
        if not isinstance(raw_names, list) or not all(isinstance(n, str) for n in raw_names):
            raise ExtenderAnswerError("nodenames: expected a list of strings")
        names = list(raw_names)
    elif nodes is not None:
        items = _object(nodes, "nodes").get("items") or []
        if not isinstance(items, list):
            raise ExtenderAnswerError("nodes.items: expected a list of nodes")
        names = []
        for i, item in enumerate(items):
            meta = _object(item, f"nodes.items[{i}]").get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str) or not name:
                raise ExtenderAnswerError(f"nodes.items[{i}].metadata.name: expected a node name")
            names.append(name)
    return FilterAnswer(
        names,
        _failed_map(body.get("failedNodes"), "failedNodes"),
        _failed_map(body.get("failedAndUnresolvableNodes"), "failedAndUnresolvableNodes"),
        error,
    )


def parse_priorities(got: Any) -> list[tuple[str, int]]:
    """A ``HostPriorityList``: ``[{"host": ..., "score": ...}]``."""
    if got is None:
        return []
    if not isinstance(got, list):
        raise ExtenderAnswerError(
            f"host priority list: expected a JSON list, got {type(got).__name__}"
        )
    out = []
    for i, item in enumerate(got):
        entry = _object(item, f"[{i}]")
        host, score = entry.get("host", ""), entry.get("score", 0)
        if not isinstance(host, str):
            raise ExtenderAnswerError(f"[{i}].host: expected a string")
        if isinstance(score, bool) or not isinstance(score, int):
            raise ExtenderAnswerError(f"[{i}].score: expected an integer")
        out.append((host, score))
    return out


def parse_binding(got: Any) -> str:
    """An ``ExtenderBindingResult``: its ``error`` ('' when the extender bound the pod)."""
    error = _object(got, "binding result").get("error") or ""
    if not isinstance(error, str):
        raise ExtenderAnswerError("error: expected a string")
    return error

"""Checks on a pod's metadata before the engine trusts it.

kube-apiserver validates labels (and annotations' size) at admission, so
kube-scheduler never sees a pod whose labels break the rules. An API server
that does not validate (an emulator, a proxy, a buggy aggregated server) can
hand us one anyway, and label selectors, topology keys and the label indexes
all assume those rules. So the daemon applies the same rules on ingest and
turns a violation into a FailedScheduling event naming the field, instead of
feeding plugins data they were never meant to see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.model.names import label_value_errors, qualified_name_errors
from scheduler.state.pod import InvalidPodError

ANNOTATIONS_MAX_BYTES = 256 * 1024  # kube's TotalAnnotationSizeLimitB


def _shown(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label key (kube's IsQualifiedName), or None."""
    errs = qualified_name_errors(key)
    return f"key {_shown(key)}: " + "; ".join(errs) if errs else None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value (kube's IsValidLabelValue), or None."""
    errs = label_value_errors(value)
    return f"value {_shown(value)}: " + "; ".join(errs) if errs else None


def check_pod_metadata(raw: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidPodError` if the pod's metadata breaks kube's rules."""
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        raise InvalidPodError("metadata is missing or not an object")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidPodError("metadata.name is missing or not a string")
    key = f"{meta.get('namespace') or 'default'}/{name}"
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise InvalidPodError(f"pod {key}: metadata.labels must be a map of strings")
        for k, v in labels.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidPodError(f"pod {key}: metadata.labels must map strings to strings")
            problem = label_key_problem(k) or label_value_problem(v)
            if problem is not None:
                raise InvalidPodError(f"pod {key}: invalid label {problem}")
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in annotations.items()
        ):
            raise InvalidPodError(f"pod {key}: metadata.annotations must map strings to strings")
        size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
        if size > ANNOTATIONS_MAX_BYTES:
            raise InvalidPodError(
                f"pod {key}: metadata.annotations total {size} bytes, "
                f"more than the {ANNOTATIONS_MAX_BYTES} allowed"
            )


_TOLERATION_OPERATORS = ("", "Exists", "Equal")
_TAINT_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
_LIST_OF_OBJECTS = (
    "containers",
    "initContainers",
    "tolerations",
    "schedulingGates",
    "topologySpreadConstraints",
    "volumes",
)


def check_pod_spec(raw: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidPodError` naming the field if the spec has the wrong shape.

    kube-apiserver rejects these at decode or validation time; the engine's
    parser and the plugins would otherwise fail on them deep inside a cycle
    with an error that names no field.
    """
    meta = raw.get("metadata") or {}
    key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidPodError(f"pod {key}: spec is missing or not an object")
    problem = (
        _scalar_fields_problem(spec)
        or _lists_problem(spec)
        or _container_resources_problem(spec)
        or _object_fields_problem(spec)
        or _tolerations_problem(spec)
        or _scheduling_gates_problem(spec)
    )
    if problem is not None:
        path, what = problem
        raise InvalidPodError(f"pod {key}: spec.{path} {what}")


# Each check below returns (field path under ``spec``, what is wrong) for the first problem.
_Problem = tuple[str, str] | None


def _scalar_fields_problem(spec: Mapping[str, Any]) -> _Problem:
    for name in ("nodeName", "schedulerName", "priorityClassName"):
        if spec.get(name) is not None and not isinstance(spec[name], str):
            return name, "must be a string"
    return None


def _lists_problem(spec: Mapping[str, Any]) -> _Problem:
    """Containers present, and every list of objects a list of objects."""
    if not isinstance(spec.get("containers"), list) or not spec["containers"]:
        return "containers", "must be a non-empty list of containers"
    for field in _LIST_OF_OBJECTS:
        items = spec.get(field)
        if items is None:
            continue
        if not isinstance(items, list):
            return field, "must be a list"
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                return f"{field}[{i}]", "must be an object"
    return None


def _container_resources_problem(spec: Mapping[str, Any]) -> _Problem:
    for field in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(field) or ()):
            resources = container.get("resources")
            if resources is None:
                continue
            if not isinstance(resources, Mapping):
                return f"{field}[{i}].resources", "must be an object"
            for kind in ("requests", "limits"):
                amounts = resources.get(kind)
                if amounts is not None and not isinstance(amounts, Mapping):
                    return (
                        f"{field}[{i}].resources.{kind}",
                        "must map resource names to quantities",
                    )
    return None


def _object_fields_problem(spec: Mapping[str, Any]) -> _Problem:
    selector = spec.get("nodeSelector")
    if selector is not None and (
        not isinstance(selector, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items())
    ):
        return "nodeSelector", "must map strings to strings"
    for field in ("affinity", "overhead"):
        if spec.get(field) is not None and not isinstance(spec[field], Mapping):
            return field, "must be an object"
    return None


def _tolerations_problem(spec: Mapping[str, Any]) -> _Problem:
    for i, toleration in enumerate(spec.get("tolerations") or ()):
        operator = toleration.get("operator") or ""
        if operator not in _TOLERATION_OPERATORS:
            return (
                f"tolerations[{i}].operator",
                f'{_shown(str(operator))} is not supported: supported values: "Equal", "Exists"',
            )
        effect = toleration.get("effect") or ""
        if effect not in _TAINT_EFFECTS:
            return (
                f"tolerations[{i}].effect",
                f"{_shown(str(effect))} is not supported: supported values: "
                '"NoSchedule", "PreferNoSchedule", "NoExecute"',
            )
    return None


def _scheduling_gates_problem(spec: Mapping[str, Any]) -> _Problem:
    for i, gate in enumerate(spec.get("schedulingGates") or ()):
        if not isinstance(gate.get("name"), str) or not gate["name"]:
            return f"schedulingGates[{i}].name", "must be a non-empty string"
    return None


def check_parsed_requests(key: str, requests: Mapping[str, int]) -> None:
    """Negative requests (which the API server rejects) would free room on a node."""
    for resource, amount in requests.items():
        if amount < 0:
            raise InvalidPodError(
                f"pod {key}: resource requests of {resource} must be greater than or equal to 0"
            )

"""Admission that kube-apiserver runs on API writes and a scheduler can observe.

Only requests through the HTTP API are admitted: objects loaded from a
cluster file are a snapshot of state a real apiserver already admitted (pods
carry their resolved ``spec.priority``) and are stored as they are.

``RuntimeClass`` refuses a pod that sets ``spec.overhead`` itself. The
``Priority`` plugin resolves a pod's ``priorityClassName`` (or the
``globalDefault`` class) to ``spec.priority`` and ``spec.preemptionPolicy``
and refuses (403) a pod that names a missing class or sets either field to
something else; it also keeps a single ``globalDefault`` class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.simulation.emulator import statuserrors, workloads

if TYPE_CHECKING:
    from scheduler.simulation.emulator.resources import ResourceType
    from scheduler.simulation.emulator.store import Store

Obj = dict[str, Any]

SYSTEM_PRIORITY_CLASSES: list[Obj] = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-cluster-critical"},
        "value": 2_000_000_000,
        "description": "Used for system critical pods that must run in the cluster, "
        "but can be moved to another node if necessary.",
        "preemptionPolicy": "PreemptLowerPriority",
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2_000_001_000,
        "description": "Used for system critical pods that must not be moved from their "
        "current node.",
        "preemptionPolicy": "PreemptLowerPriority",
    },
]
SYSTEM_NAMES = frozenset(pc["metadata"]["name"] for pc in SYSTEM_PRIORITY_CLASSES)
DEFAULT_PREEMPTION = "PreemptLowerPriority"


def _classes(store: Store) -> dict[str, Obj]:
    rt = store.type("scheduling.k8s.io", "v1", "priorityclasses")
    return {key[1]: entry.obj for key, entry in store.collection(rt).objects.items()}


def _global_default(classes: dict[str, Obj]) -> Obj | None:
    chosen: Obj | None = None
    for pc in classes.values():
        if pc.get("globalDefault") and (
            chosen is None or pc.get("value", 0) > chosen.get("value", 0)
        ):
            chosen = pc
    return chosen


def admit_create(store: Store, rt: ResourceType, obj: Obj) -> None:
    """Mutating admission for a create (after decoding, before validation)."""
    if not rt.group and rt.kind == "Pod":
        _admit_pod(store, obj)
    elif rt.group == "scheduling.k8s.io" and rt.kind == "PriorityClass":
        _admit_priority_class(store, obj, None)
    elif rt.group == "scheduling.k8s.io" and rt.kind == "PodGroup":
        workloads.admit_pod_group(obj)


def admit_update(store: Store, rt: ResourceType, old: Obj, new: Obj) -> None:
    """Admission for an update: pods keep their admitted priority; one globalDefault class."""
    if not rt.group and rt.kind == "Pod":
        spec, old_spec = new.get("spec"), old.get("spec") or {}
        if isinstance(spec, dict):
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old_spec.get(key) is not None:
                    spec[key] = old_spec[key]
    elif rt.group == "scheduling.k8s.io" and rt.kind == "PriorityClass":
        _admit_priority_class(store, new, old)


def _admit_pod(store: Store, pod: Obj) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    name = pod["metadata"].get("name") or pod["metadata"].get("generateName") or ""
    if spec.get("overhead") and not spec.get("runtimeClassName"):
        # RuntimeClass admission: overhead comes from a RuntimeClass, never from the pod.
        raise statuserrors.forbidden(
            "",
            "pods",
            name,
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        )
    classes = _classes(store)
    class_name = spec.get("priorityClassName") or ""
    if not class_name:
        default = _global_default(classes)
        if default is not None:
            class_name = default["metadata"]["name"]
            spec["priorityClassName"] = class_name
            priority = int(default.get("value", 0))
            policy = default.get("preemptionPolicy") or DEFAULT_PREEMPTION
        else:
            priority, policy = 0, DEFAULT_PREEMPTION
    else:
        pc = classes.get(class_name)
        if pc is None:
            raise statuserrors.forbidden(
                "", "pods", name, f"no PriorityClass with name {class_name} was found"
            )
        priority = int(pc.get("value", 0))
        policy = pc.get("preemptionPolicy") or DEFAULT_PREEMPTION
    given = spec.get("priority")
    if given is not None and given != priority:
        raise statuserrors.forbidden(
            "",
            "pods",
            name,
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {priority} from the given "
            "PriorityClass name",
        )
    spec["priority"] = priority
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != policy:
        raise statuserrors.forbidden(
            "",
            "pods",
            name,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given "
            "PriorityClass name",
        )
    spec["preemptionPolicy"] = policy


def _admit_priority_class(store: Store, pc: Obj, old: Obj | None) -> None:
    if not pc.get("globalDefault"):
        return
    name = pc["metadata"].get("name") or ""
    for other_name, other in _classes(store).items():
        if other_name != name and other.get("globalDefault"):
            raise statuserrors.forbidden(
                "scheduling.k8s.io",
                "priorityclasses",
                name,
                f"PriorityClass {other_name} is already marked as default. "
                "Only one default can exist",
            )


def check_delete(rt: ResourceType, name: str) -> None:
    """The registry refuses to delete the built-in priority classes."""
    if rt.group == "scheduling.k8s.io" and rt.kind == "PriorityClass" and name in SYSTEM_NAMES:
        raise statuserrors.forbidden(
            "scheduling.k8s.io",
            "priorityclasses",
            name,
            "this is a system priority class and cannot be deleted",
        )

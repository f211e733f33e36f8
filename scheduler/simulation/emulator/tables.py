"""Server-side printing: objects as ``meta.k8s.io`` Tables, the way kubectl asks for them.

``kubectl get`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``
and prints whatever columns the server defines; without this it can only
show NAME and AGE. The columns and cells follow kube-apiserver 1.36's
printers (pkg/printers/internalversion) for the kinds that matter when
watching placements (pods, nodes, namespaces, core/v1 events, configmaps,
leases, priorityclasses, poddisruptionbudgets), and its CRD column
convertor for custom resources; other kinds are served as plain objects,
which kubectl prints as NAME and AGE. The server always fills the wide
(priority 1) columns; kubectl shows them with -o wide.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from scheduler.simulation.emulator import statuserrors
from scheduler.simulation.emulator.resources import ResourceType

Obj = dict[str, Any]
Column = tuple[str, str, str, str, int]  # name, type, format, description, priority
Printer = Callable[[Obj], list[Any]]

TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("", "Metadata", "Object", "None")

# Descriptions are kube's (the types' swagger docs), so columnDefinitions match byte for byte.
_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_NAME: Column = ("Name", "string", "name", _NAME_DOC, 0)
_AGE: Column = ("Age", "string", "", _CREATED_DOC, 0)

POD_COLUMNS: list[Column] = [
    _NAME,
    ("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
    ("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
    (
        "Restarts",
        "string",
        "",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
        0,
    ),
    _AGE,
    (
        "IP",
        "string",
        "",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
        "not yet allocated.",
        1,
    ),
    (
        "Node",
        "string",
        "",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
        "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
        "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
        "This field should not be used to express a desire for the pod to be scheduled on a "
        "specific node. "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        1,
    ),
    (
        "Nominated Node",
        "string",
        "",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
        "cannot be scheduled right away as preemption victims receive their graceful "
        "termination periods. This field does not guarantee that the pod will be scheduled on "
        "this node. Scheduler may decide to place the pod elsewhere if other nodes become "
        "available sooner. Scheduler may also decide to give the resources on this node to a "
        "higher priority pod that is created after preemption. As a result, this field may be "
        "different than PodSpec.nodeName when the pod is scheduled.",
        1,
    ),
    (
        "Readiness Gates",
        "string",
        "",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
        "when all its containers are ready AND all conditions specified in the readiness gates "
        'have status equal to "True" More info: '
        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        1,
    ),
]
_ADDRESSES_DOC = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field "
    "is declared as mergeable, but the merge key is not sufficiently unique, which can cause "
    "data corruption when it is merged. Callers should instead use a full-replacement patch. "
    "See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can "
    "change during the lifetime of a Node. However, there are some exceptions where this may "
    "not be possible, such as Pods that inherit a Node's address in its own status or "
    "consumers of the downward API (status.hostIP)."
)
NODE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", "", "The status of the node", 0),
    ("Roles", "string", "", "The roles of the node", 0),
    _AGE,
    ("Version", "string", "", "Kubelet Version reported by the node.", 0),
    ("Internal-IP", "string", "", _ADDRESSES_DOC, 1),
    ("External-IP", "string", "", _ADDRESSES_DOC, 1),
    (
        "OS-Image",
        "string",
        "",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        1,
    ),
    (
        "Kernel-Version",
        "string",
        "",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
    ),
    (
        "Container-Runtime",
        "string",
        "",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
        "containerd://1.4.2).",
        1,
    ),
]
NAMESPACE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", "", "The status of the namespace", 0),
    _AGE,
]

EVENT_COLUMNS: list[Column] = [
    (
        "Last Seen",
        "string",
        "",
        "The time at which the most recent occurrence of this event was recorded.",
        0,
    ),
    (
        "Type",
        "string",
        "",
        "Type of this event (Normal, Warning), new types could be added in the future",
        0,
    ),
    (
        "Reason",
        "string",
        "",
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status.",
        0,
    ),
    ("Object", "string", "", "The object that this event is about.", 0),
    (
        "Subobject",
        "string",
        "",
        "If referring to a piece of an object instead of an entire object, this string should "
        "contain a valid JSON/Go field access statement, such as "
        "desiredState.manifest.containers[2]. For example, if the object reference is to a "
        'container within a pod, this would take on a value like: "spec.containers{name}" '
        '(where "name" refers to the name of the container that triggered the event) or if no '
        'container name is specified "spec.containers[2]" (container with index 2 in this '
        "pod). This syntax is chosen only to have some well-defined way of referencing a part "
        "of an object.",
        1,
    ),
    (
        "Source",
        "string",
        "",
        "The component reporting this event. Should be a short machine understandable string.",
        1,
    ),
    ("Message", "string", "", "A human-readable description of the status of this operation.", 0),
    (
        "First Seen",
        "string",
        "",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    ("Count", "string", "", "The number of times this event has occurred.", 1),
    ("Name", "string", "name", _NAME_DOC, 1),
]
CONFIGMAP_COLUMNS: list[Column] = [
    _NAME,
    (
        "Data",
        "string",
        "",
        "Data contains the configuration data. Each key must consist of alphanumeric "
        "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
        "BinaryData field. The keys stored in Data must not overlap with the keys in the "
        "BinaryData field, this is enforced during validation process.",
        0,
    ),
    _AGE,
]
LEASE_COLUMNS: list[Column] = [
    _NAME,
    (
        "Holder",
        "string",
        "",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated "
        "Leader Election is used, the holder identity must be equal to the elected "
        "LeaseCandidate.metadata.name field.",
        0,
    ),
    _AGE,
]
PRIORITY_CLASS_COLUMNS: list[Column] = [
    _NAME,
    (
        "Value",
        "integer",
        "",
        "value represents the integer value of this priority class. This is the actual "
        "priority that pods receive when they have the name of this class in their pod spec.",
        0,
    ),
    (
        "Global-Default",
        "boolean",
        "",
        "globalDefault specifies whether this PriorityClass should be considered as the "
        "default priority for pods that do not have any priority class. Only one PriorityClass "
        "can be marked as `globalDefault`. However, if more than one PriorityClasses exists "
        "with their `globalDefault` field set to true, the smallest value of such global "
        "default PriorityClasses will be used as the default priority.",
        0,
    ),
    _AGE,
    (
        "PreemptionPolicy",
        "string",
        "",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
        "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        0,
    ),
]
PDB_COLUMNS: list[Column] = [
    _NAME,
    ("Min Available", "string", "", "The minimum number of pods that must be available.", 0),
    ("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0),
    (
        "Allowed Disruptions",
        "integer",
        "",
        "Calculated number of pods that may be disrupted at this time.",
        0,
    ),
    _AGE,
]

_POD_DONE_CONDITIONS = {
    "Succeeded": [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ],
    "Failed": [
        {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
    ],
}


def table_version(accept: str) -> str | None:
    """The Table version ``accept`` asks for first, or None for the plain object.

    Media types are taken in the client's order, as kube's negotiation does;
    conversions we do not serve (PartialObjectMetadata) are skipped.
    """
    for clause in accept.split(","):
        media, *params = (p.strip() for p in clause.split(";"))
        options = dict(p.partition("=")[::2] for p in params)
        target = options.get("as")
        if target is None:
            if media in ("application/json", "application/*", "*/*", ""):
                return None
            continue
        if (
            target == "Table"
            and options.get("g") == "meta.k8s.io"
            and options.get("v") in TABLE_VERSIONS
            and media in ("application/json", "application/*", "*/*")
        ):
            return options["v"]
    return None


def check_include_object(value: str) -> str:
    """The ``includeObject`` query value, validated as kube's ValidateTableOptions does."""
    if value not in INCLUDE_OBJECT:
        raise statuserrors.bad_request(
            "Unable to convert to Table as requested: includeObject: Unsupported value: "
            f'"{value}": supported values: "Metadata", "None", "Object"'
        )
    return value


def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``: the AGE column's text."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{hours // 24 // 365}y"


def _since(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return human_duration((datetime.now(UTC) - when).total_seconds())


def _age(obj: Obj) -> str:
    return _since((obj.get("metadata") or {}).get("creationTimestamp"))


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _restartable(container: Obj | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _last(state: Obj | None) -> Obj | None:
    return ((state or {}).get("terminated")) or None


def _terminated_reason(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _print_pod(pod: Obj) -> list[Any]:
    """kube's printPod, branch for branch (the STATUS text users know)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    containers = spec.get("containers") or []
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(containers) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart = ""
    last_sidecar_restart = ""
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        count = int(cs.get("restartCount") or 0)
        restarts += count
        finished = (_last(cs.get("lastState")) or {}).get("finishedAt") or ""
        last_restart = max(last_restart, finished)
        sidecar = _restartable(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += count
            last_sidecar_restart = max(last_sidecar_restart, finished)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        error_reason = ""
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            finished = (_last(cs.get("lastState")) or {}).get("finishedAt") or ""
            last_restart = max(last_restart, finished)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term is not None:
                reason = _terminated_reason(term)
                if int(term.get("exitCode") or 0) != 0:
                    error_reason = reason
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed":
            pod_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or []
            )
            if has_running and pod_ready:
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({_since(last_restart)} ago)"

    ips = status.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        conditions = status.get("conditions") or []
        true = 0
        for gate in gates:
            for condition in conditions:
                if condition.get("type") == gate.get("conditionType"):
                    true += condition.get("status") == "True"
                    break
        gates_text = f"{true}/{len(gates)}"
    return [
        _name(pod),
        f"{ready}/{total}",
        reason,
        restarts_text,
        _age(pod),
        (ips[0].get("ip") if ips else "") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


def _node_address(status: Obj, kind: str) -> str:
    for address in status.get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _print_node(node: Obj) -> list[Any]:
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    states = []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key[len("node-role.kubernetes.io/") :])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    kernel = info.get("kernelVersion") or "<unknown>"
    if info.get("architecture"):
        kernel += f" ({info['architecture']})"
    return [
        _name(node),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _age(node),
        info.get("kubeletVersion") or "",
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        kernel,
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _print_namespace(ns: Obj) -> list[Any]:
    return [_name(ns), (ns.get("status") or {}).get("phase") or "", _age(ns)]


def _print_event(event: Obj) -> list[Any]:
    """kube's printEvent (core/v1 form): when, what, about which object, how often."""
    first = _since(event.get("firstTimestamp"))
    if not event.get("firstTimestamp"):
        first = _since(event.get("eventTime"))
    last = _since(event.get("lastTimestamp")) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if series is not None:
        last = _since(series.get("lastObservedTime"))
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [
        last,
        event.get("type") or "",
        event.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        f"{component}, {instance}" if instance else component,
        str(event.get("message") or "").strip(),
        first,
        count,
        _name(event),
    ]


def _print_configmap(cm: Obj) -> list[Any]:
    return [_name(cm), len(cm.get("data") or {}) + len(cm.get("binaryData") or {}), _age(cm)]


def _print_lease(lease: Obj) -> list[Any]:
    return [_name(lease), (lease.get("spec") or {}).get("holderIdentity") or "", _age(lease)]


def _print_priority_class(pc: Obj) -> list[Any]:
    return [
        _name(pc),
        int(pc.get("value") or 0),
        bool(pc.get("globalDefault")),
        _age(pc),
        pc.get("preemptionPolicy") or "",
    ]


def _print_pdb(pdb: Obj) -> list[Any]:
    spec = pdb.get("spec") or {}
    least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _name(pdb),
        "N/A" if least is None else str(least),
        "N/A" if most is None else str(most),
        int((pdb.get("status") or {}).get("disruptionsAllowed") or 0),
        _age(pdb),
    ]


_PRINTERS: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("", "pods"): (POD_COLUMNS, _print_pod),
    ("", "nodes"): (NODE_COLUMNS, _print_node),
    ("", "namespaces"): (NAMESPACE_COLUMNS, _print_namespace),
    ("", "events"): (EVENT_COLUMNS, _print_event),
    ("", "configmaps"): (CONFIGMAP_COLUMNS, _print_configmap),
    ("coordination.k8s.io", "leases"): (LEASE_COLUMNS, _print_lease),
    ("scheduling.k8s.io", "priorityclasses"): (PRIORITY_CLASS_COLUMNS, _print_priority_class),
    ("policy", "poddisruptionbudgets"): (PDB_COLUMNS, _print_pdb),
}


def _jsonpath_value(obj: Any, path: str) -> tuple[bool, Any]:
    """The value at a simple JSONPath (``.a.b``, ``.a[0].b``, ``.metadata.labels.x\\.y``)."""
    node = obj
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    parts: list[str | int] = []
    current = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current += text[i + 1]
            i += 2
            continue
        if ch == ".":
            if current:
                parts.append(current)
            current = ""
        elif ch == "[":
            if current:
                parts.append(current)
            end = text.find("]", i)
            index = text[i + 1 : end].strip("'\"")
            parts.append(int(index) if index.lstrip("-").isdigit() else index)
            current, i = "", end
        else:
            current += ch
        i += 1
    if current:
        parts.append(current)
    for part in parts:
        in_list = isinstance(part, int) and isinstance(node, list)
        in_list = in_list and -len(node) <= int(part) < len(node)
        in_map = isinstance(part, str) and isinstance(node, dict) and part in node
        if not (in_list or in_map):
            return False, None
        node = node[part]
    return True, node


def _crd_cell(kind: str, value: Any) -> Any:
    """One custom column's cell, as apiextensions' tableconvertor types it."""
    if value is None:
        return None
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return json.dumps(value, separators=(",", ":"))
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        return _since(value)
    return None


def _crd_printer(columns: list[Obj]) -> tuple[list[Column], Printer]:
    defs: list[Column] = [_NAME]
    for col in columns:
        desc = col.get("description") or (
            f"Custom resource definition column (in JSONPath format): {col.get('jsonPath', '')}"
        )
        defs.append(
            (
                str(col.get("name", "")),
                str(col.get("type", "")),
                str(col.get("format", "")),
                desc,
                int(col.get("priority") or 0),
            )
        )

    def printer(obj: Obj) -> list[Any]:
        cells: list[Any] = [_name(obj)]
        for col in columns:
            found, value = _jsonpath_value(obj, str(col.get("jsonPath", "")))
            cells.append(_crd_cell(str(col.get("type", "")), value) if found else None)
        return cells

    return defs, printer


def printer_for(rt: ResourceType) -> tuple[list[Column], Printer] | None:
    """The columns and row printer of ``rt``; None where we have no printer of kube's.

    For those kinds the plain object is served and kubectl prints its own
    NAME and AGE columns, rather than columns kube-apiserver would not show.
    """
    if rt.custom:
        return _crd_printer(list(rt.extra.get("printer_columns") or DEFAULT_CRD_COLUMNS))
    return _PRINTERS.get((rt.group, rt.plural))


# apiextensions defaults a version without additionalPrinterColumns to this one column.
DEFAULT_CRD_COLUMNS: tuple[Obj, ...] = (
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class TableEncoder:
    """Turns served objects into Table JSON for one request (or one watch).

    A watch sends the column definitions with its first event only, as
    kube-apiserver's watch encoder does.
    """

    def __init__(
        self, printer: tuple[list[Column], Printer], version: str, include_object: str
    ) -> None:
        self.api_version = f"meta.k8s.io/{version}"
        self.include_object = check_include_object(include_object)
        self.columns, self.printer = printer
        self.headers_sent = False

    def _column_defs(self) -> list[Obj] | None:
        if self.headers_sent:
            return None
        return [
            {"name": n, "type": t, "format": f, "description": d, "priority": p}
            for n, t, f, d, p in self.columns
        ]

    def _row(self, obj: Obj) -> Obj:
        row: Obj = {"cells": self.printer(obj)}
        if self.columns is POD_COLUMNS:
            conditions = _POD_DONE_CONDITIONS.get((obj.get("status") or {}).get("phase") or "")
            if conditions:
                row["conditions"] = conditions
        if self.include_object == "Object":
            row["object"] = obj
        elif self.include_object == "None":
            row["object"] = None
        else:
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": self.api_version,
                "metadata": obj.get("metadata") or {},
            }
        return row

    def table(self, items: list[Obj], list_meta: Obj) -> bytes:
        body = {
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": list_meta,
            "columnDefinitions": self._column_defs(),
            "rows": [self._row(item) for item in items],
        }
        return orjson.dumps(body)

    def watch_lines(self, data: bytes) -> bytes:
        """Re-encode a chunk of watch event lines with Table objects (errors pass through)."""
        out: list[bytes] = []
        for line in data.splitlines():
            if not line:
                continue
            event = orjson.loads(line)
            obj = event.get("object")
            if event.get("type") != "ERROR" and isinstance(obj, dict):
                rv = (obj.get("metadata") or {}).get("resourceVersion", "")
                table = self.table([obj], {"resourceVersion": rv} if rv else {})
                self.headers_sent = True
                out.append(b'{"type":"' + event["type"].encode() + b'","object":' + table + b"}\n")
            else:
                out.append(line + b"\n")
        return b"".join(out)

"""Server-side printing: objects as ``meta.k8s.io`` Tables, the way kubectl asks for them.

``kubectl get`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``
and prints whatever columns the server defines; without this it can only
show NAME and AGE. The columns and cells follow kube-apiserver 1.36's
printers (pkg/printers/internalversion) for
the built-in kinds the emulator serves (pods, nodes, namespaces, both
event APIs, configmaps, leases, priorityclasses, poddisruptionbudgets,
services, replicationcontrollers, apps workloads, volumes and storage
classes, CSI objects, resource.k8s.io kinds), and its CRD column convertor
for custom resources. CSIStorageCapacities and CRDs get what kube-apiserver's
storage for them uses, the default convertor (name and creation time). Column
descriptions are kube-apiserver's, taken from the types' swagger docs. The
server always fills the wide (priority 1) columns; kubectl shows them with
-o wide.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from scheduler.simulation.emulator import statuserrors
from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.tablecolumns import (
    _NAME,
    CONFIGMAP_COLUMNS,
    CSI_DRIVER_COLUMNS,
    CSI_NODE_COLUMNS,
    DEFAULT_TABLE_COLUMNS,
    DEPLOYMENT_COLUMNS,
    DEVICE_CLASS_COLUMNS,
    EVENT_COLUMNS,
    LEASE_COLUMNS,
    NAMESPACE_COLUMNS,
    NODE_COLUMNS,
    PDB_COLUMNS,
    POD_COLUMNS,
    POD_GROUP_COLUMNS,
    PRIORITY_CLASS_COLUMNS,
    PV_COLUMNS,
    PVC_COLUMNS,
    REPLICA_SET_COLUMNS,
    REPLICATION_CONTROLLER_COLUMNS,
    RESOURCE_CLAIM_COLUMNS,
    RESOURCE_CLAIM_TEMPLATE_COLUMNS,
    RESOURCE_SLICE_COLUMNS,
    SERVICE_COLUMNS,
    STATEFUL_SET_COLUMNS,
    STORAGE_CLASS_COLUMNS,
    VOLUME_ATTACHMENT_COLUMNS,
    VOLUME_ATTRIBUTES_CLASS_COLUMNS,
    WORKLOAD_COLUMNS,
    Column,
)

Obj = dict[str, Any]
Printer = Callable[[Obj], list[Any]]

TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("", "Metadata", "Object", "None")

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


def _print_events_v1(event: Obj) -> list[Any]:
    """An events.k8s.io/v1 Event, converted to the core form kube prints it in."""
    core = {
        "metadata": event.get("metadata"),
        "involvedObject": event.get("regarding"),
        "source": event.get("deprecatedSource"),
        "message": event.get("note"),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount"),
        "series": event.get("series"),
        "eventTime": event.get("eventTime"),
        "type": event.get("type"),
        "reason": event.get("reason"),
        "reportingComponent": event.get("reportingController"),
        "reportingInstance": event.get("reportingInstance"),
    }
    return _print_event(core)


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


def _print_pod_group(group: Obj) -> list[Any]:
    """printPodGroup: the policy, the Workload, and a status from the conditions."""
    spec = group.get("spec") or {}
    policy = "Gang" if (spec.get("schedulingPolicy") or {}).get("gang") is not None else "Basic"
    conditions = {
        c.get("type"): c for c in (group.get("status") or {}).get("conditions") or [] if c
    }
    status = "Pending"
    scheduled = conditions.get("PodGroupScheduled")
    if scheduled is not None:
        status = "Scheduled" if scheduled.get("status") == "True" else "Unschedulable"
    disruption = conditions.get("DisruptionTarget")
    if disruption is not None:
        status = disruption.get("reason") or ""
    ref = (spec.get("podGroupTemplateRef") or {}).get("workload") or {}
    workload = ref.get("workloadName") or "<none>"
    return [_name(group), policy, workload, status, _age(group)]


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


def _labels_text(labels: Obj | None) -> str:
    """kube's labels.FormatLabels: sorted ``k=v`` pairs, ``<none>`` when empty."""
    text = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
    return text or "<none>"


def _selector_text(selector: Obj | None) -> str | None:
    """A LabelSelector as LabelSelectorAsSelector(...).String() writes it; None if invalid."""
    requirements: list[tuple[str, str]] = []
    for key, value in ((selector or {}).get("matchLabels") or {}).items():
        requirements.append((key, f"{key}={value}"))
    for expr in (selector or {}).get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op))
        if text is None:
            return None
        requirements.append((key, text))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def _or(text: str | None, invalid: str) -> str:
    return invalid if text is None else text


def _containers_text(template: Obj | None) -> tuple[str, str]:
    """kube's layoutContainerCells: container names and images, comma-joined."""
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    return names, ",".join(str(c.get("image", "")) for c in containers)


def _access_modes(modes: list[Any] | None) -> str:
    """kube's GetAccessModesAsString: the short forms, in kube's fixed order."""
    given = set(modes or [])
    short = (
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    )
    return ",".join(text for mode, text in short if mode in given)


_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _annotations(obj: Obj) -> Obj:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _print_pv(pv: Obj) -> list[Any]:
    spec, status = pv.get("spec") or {}, pv.get("status") or {}
    claim = spec.get("claimRef")
    annotations = _annotations(pv)
    klass = annotations[_BETA_CLASS] if _BETA_CLASS in annotations else spec.get("storageClassName")
    mode, vac = spec.get("volumeMode"), spec.get("volumeAttributesClassName")
    return [
        _name(pv),
        str((spec.get("capacity") or {}).get("storage") or "0"),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        "Terminating" if _deleting(pv) else status.get("phase") or "",
        f"{claim.get('namespace') or ''}/{claim.get('name') or ''}" if claim is not None else "",
        klass or "",
        "<unset>" if vac is None else vac,
        status.get("reason") or "",
        _age(pv),
        "<unset>" if mode is None else mode,
    ]


def _print_pvc(pvc: Obj) -> list[Any]:
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = str((status.get("capacity") or {}).get("storage") or "0")
    annotations = _annotations(pvc)
    klass = annotations[_BETA_CLASS] if _BETA_CLASS in annotations else spec.get("storageClassName")
    mode, vac = spec.get("volumeMode"), spec.get("volumeAttributesClassName")
    return [
        _name(pvc),
        "Terminating" if _deleting(pvc) else status.get("phase") or "",
        spec.get("volumeName") or "",
        capacity,
        modes,
        klass or "",
        "<unset>" if vac is None else vac,
        _age(pvc),
        "<unset>" if mode is None else mode,
    ]


_DEFAULT_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _print_storage_class(sc: Obj) -> list[Any]:
    name = _name(sc)
    if any(_annotations(sc).get(key) == "true" for key in _DEFAULT_CLASS):
        name += " (default)"
    expansion = sc.get("allowVolumeExpansion")
    return [
        name,
        sc.get("provisioner") or "",
        sc.get("reclaimPolicy") or "Delete",
        sc.get("volumeBindingMode") or "Immediate",
        bool(expansion) if expansion is not None else False,
        _age(sc),
    ]


def _print_name_age(obj: Obj) -> list[Any]:
    return [_name(obj), _age(obj)]


def _print_resource_claim(claim: Obj) -> list[Any]:
    """kube's resourceClaimState: deleted / pending / allocated / reserved."""
    status = claim.get("status") or {}
    states = []
    if _deleting(claim):
        states.append("deleted")
    if status.get("allocation") is None:
        if not _deleting(claim):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return [_name(claim), ",".join(states), _age(claim)]


def _print_resource_slice(rs: Obj) -> list[Any]:
    spec = rs.get("spec") or {}
    return [
        _name(rs),
        spec.get("nodeName") or "",
        spec.get("driver") or "",
        (spec.get("pool") or {}).get("name") or "",
        _age(rs),
    ]


def _external_ip(service: Obj) -> str:
    """kube's getServiceExternalIP, wide (load-balancer addresses not shortened)."""
    spec = service.get("spec") or {}
    kind = spec.get("type") or ""
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        found = {
            str(i.get("ip") or i.get("hostname"))
            for i in ingress
            if i.get("ip") or i.get("hostname")
        }
        balancer = ",".join(sorted(found))
        if external:
            return ",".join([*([balancer] if balancer else []), *external])
        return balancer or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _print_service(service: Obj) -> list[Any]:
    spec = service.get("spec") or {}
    ports = []
    for port in spec.get("ports") or []:
        number, protocol = int(port.get("port") or 0), port.get("protocol") or ""
        node_port = int(port.get("nodePort") or 0)
        ports.append(
            f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}"
        )
    cluster_ips = spec.get("clusterIPs") or []
    return [
        _name(service),
        spec.get("type") or "",
        cluster_ips[0] if cluster_ips else "<none>",
        _external_ip(service),
        ",".join(ports) or "<none>",
        _age(service),
        _labels_text(spec.get("selector")),
    ]


def _print_deployment(deployment: Obj) -> list[Any]:
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(deployment),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        _age(deployment),
        names,
        images,
        _or(_selector_text(spec.get("selector")), "<invalid>"),
    ]


def _print_replica_set(rs: Obj) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(rs),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(rs),
        names,
        images,
        _or(_selector_text(spec.get("selector")), "<error>") or "<none>",
    ]


def _print_replication_controller(rc: Obj) -> list[Any]:
    spec, status = rc.get("spec") or {}, rc.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(rc),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(rc),
        names,
        images,
        _labels_text(spec.get("selector")),
    ]


def _print_stateful_set(sts: Obj) -> list[Any]:
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(sts),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        _age(sts),
        names,
        images,
    ]


def _print_volume_attachment(va: Obj) -> list[Any]:
    spec = va.get("spec") or {}
    return [
        _name(va),
        spec.get("attacher") or "",
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName") or "",
        bool((va.get("status") or {}).get("attached")),
        _age(va),
    ]


def _print_csi_node(node: Obj) -> list[Any]:
    return [_name(node), len((node.get("spec") or {}).get("drivers") or []), _age(node)]


def _flag(spec: Obj, field: str, default: bool) -> bool:
    value = spec.get(field)
    return default if value is None else bool(value)


def _print_csi_driver(driver: Obj) -> list[Any]:
    spec = driver.get("spec") or {}
    tokens = spec.get("tokenRequests")
    return [
        _name(driver),
        _flag(spec, "attachRequired", True),
        _flag(spec, "podInfoOnMount", False),
        _flag(spec, "storageCapacity", False),
        "<unset>" if tokens is None else ",".join(str(t.get("audience", "")) for t in tokens),
        _flag(spec, "requiresRepublish", False),
        ",".join(str(m) for m in spec.get("volumeLifecycleModes") or []) or "<none>",
        _age(driver),
    ]


def _print_volume_attributes_class(vac: Obj) -> list[Any]:
    return [_name(vac), vac.get("driverName") or "", _age(vac)]


def _print_created_at(obj: Obj) -> list[Any]:
    """kube's default table convertor (kinds without a printer): name and creation time."""
    created = (obj.get("metadata") or {}).get("creationTimestamp") or "0001-01-01T00:00:00Z"
    return [_name(obj), created]


_PRINTERS: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("", "pods"): (POD_COLUMNS, _print_pod),
    ("", "nodes"): (NODE_COLUMNS, _print_node),
    ("", "namespaces"): (NAMESPACE_COLUMNS, _print_namespace),
    ("", "events"): (EVENT_COLUMNS, _print_event),
    ("", "configmaps"): (CONFIGMAP_COLUMNS, _print_configmap),
    ("coordination.k8s.io", "leases"): (LEASE_COLUMNS, _print_lease),
    ("scheduling.k8s.io", "priorityclasses"): (PRIORITY_CLASS_COLUMNS, _print_priority_class),
    ("scheduling.k8s.io", "workloads"): (WORKLOAD_COLUMNS, _print_name_age),
    ("scheduling.k8s.io", "podgroups"): (POD_GROUP_COLUMNS, _print_pod_group),
    ("policy", "poddisruptionbudgets"): (PDB_COLUMNS, _print_pdb),
    ("", "persistentvolumes"): (PV_COLUMNS, _print_pv),
    ("", "persistentvolumeclaims"): (PVC_COLUMNS, _print_pvc),
    ("storage.k8s.io", "storageclasses"): (STORAGE_CLASS_COLUMNS, _print_storage_class),
    ("resource.k8s.io", "deviceclasses"): (DEVICE_CLASS_COLUMNS, _print_name_age),
    ("resource.k8s.io", "resourceclaims"): (RESOURCE_CLAIM_COLUMNS, _print_resource_claim),
    ("resource.k8s.io", "resourceclaimtemplates"): (
        RESOURCE_CLAIM_TEMPLATE_COLUMNS,
        _print_name_age,
    ),
    ("resource.k8s.io", "resourceslices"): (RESOURCE_SLICE_COLUMNS, _print_resource_slice),
    ("", "services"): (SERVICE_COLUMNS, _print_service),
    ("", "replicationcontrollers"): (REPLICATION_CONTROLLER_COLUMNS, _print_replication_controller),
    ("apps", "deployments"): (DEPLOYMENT_COLUMNS, _print_deployment),
    ("apps", "replicasets"): (REPLICA_SET_COLUMNS, _print_replica_set),
    ("apps", "statefulsets"): (STATEFUL_SET_COLUMNS, _print_stateful_set),
    ("storage.k8s.io", "volumeattachments"): (VOLUME_ATTACHMENT_COLUMNS, _print_volume_attachment),
    ("storage.k8s.io", "csinodes"): (CSI_NODE_COLUMNS, _print_csi_node),
    ("storage.k8s.io", "csidrivers"): (CSI_DRIVER_COLUMNS, _print_csi_driver),
    ("storage.k8s.io", "csistoragecapacities"): (DEFAULT_TABLE_COLUMNS, _print_created_at),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        DEFAULT_TABLE_COLUMNS,
        _print_created_at,
    ),
    ("storage.k8s.io", "volumeattributesclasses"): (
        VOLUME_ATTRIBUTES_CLASS_COLUMNS,
        _print_volume_attributes_class,
    ),
    ("events.k8s.io", "events"): (EVENT_COLUMNS, _print_events_v1),
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

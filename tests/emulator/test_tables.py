"""Tables (``Accept: ...;as=Table``) as kubectl get asks for them, and bodies without a type.

Each test runs against both backends with the same expectations, so the real
kube-apiserver 1.36.3 proves the expected columns and cells are kube's and
the emulator run proves ours match them. AGE depends on the clock, so only
its shape is checked.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from kubernetes_asyncio import client

from scheduler.simulation.emulator.tablecolumns import (
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
)
from scheduler.simulation.emulator.tables import human_duration, table_version

from .kube_helpers import binding, pod, raw

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
AGE = re.compile(r"^\d+[smhdy]")
RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


def _defs(columns: list[tuple[str, str, str, str, int]]) -> list[dict[str, Any]]:
    return [
        {"name": n, "type": t, "format": f, "description": d, "priority": p}
        for n, t, f, d, p in columns
    ]


def _cells(table: dict[str, Any], age_at: int) -> dict[str, list[Any]]:
    """Row cells by name, the AGE cell checked for its shape and dropped."""
    out = {}
    for row in table["rows"]:
        cells = list(row["cells"])
        assert AGE.match(cells.pop(age_at)), row["cells"]
        out[cells[0]] = cells
    return out


def _container_status(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": "registry.k8s.io/pause:3.9",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        **fields,
    }


async def _set_status(core: client.CoreV1Api, namespace: str, name: str, status: Any) -> None:
    current = await core.read_namespaced_pod(name, namespace)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "resourceVersion": current.metadata.resource_version},
        "status": status,
    }
    await core.replace_namespaced_pod_status(name, namespace, body)


async def test_pod_table_matches_kube(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("pending"))
    await _set_status(
        core, namespace, "pending", {"phase": "Pending", "nominatedNodeName": "other-node"}
    )
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    await core.create_namespaced_pod(namespace, gated)

    running = pod("running")
    running["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}]
    await core.create_namespaced_pod(namespace, running)
    await core.create_namespaced_pod_binding(
        "running", namespace, binding("running", "table-node"), _preload_content=False
    )
    await _set_status(
        core,
        namespace,
        "running",
        {
            "phase": "Running",
            "podIP": "10.0.0.7",
            "podIPs": [{"ip": "10.0.0.7"}],
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "example.com/lb", "status": "True"},
            ],
            "containerStatuses": [_container_status("c", ready=True, state=RUNNING)],
        },
    )

    done = pod("done")
    await core.create_namespaced_pod(namespace, done)
    await _set_status(
        core,
        namespace,
        "done",
        {
            "phase": "Succeeded",
            "containerStatuses": [
                _container_status(
                    "c",
                    state={
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": "2026-01-01T00:00:00Z",
                            "finishedAt": "2026-01-01T00:00:01Z",
                        }
                    },
                )
            ],
        },
    )

    init = pod("init")
    init["spec"]["initContainers"] = [
        {"name": "setup", "image": "registry.k8s.io/pause:3.9"},
        {"name": "sidecar", "image": "registry.k8s.io/pause:3.9", "restartPolicy": "Always"},
    ]
    await core.create_namespaced_pod(namespace, init)
    await _set_status(
        core,
        namespace,
        "init",
        {
            "phase": "Pending",
            "initContainerStatuses": [
                _container_status(
                    "setup", restartCount=3, state={"waiting": {"reason": "CrashLoopBackOff"}}
                ),
                _container_status("sidecar", state={"waiting": {"reason": "PodInitializing"}}),
            ],
            "containerStatuses": [
                _container_status("c", state={"waiting": {"reason": "PodInitializing"}})
            ],
        },
    )

    await core.create_namespaced_pod(namespace, pod("leaving", finalizers=["example.com/hold"]))
    await core.delete_namespaced_pod("leaving", namespace)
    try:
        path = f"/api/v1/namespaces/{namespace}/pods"
        status, table, _ = await raw(api_client, "GET", path, accept=KUBECTL_ACCEPT)
        assert status == 200, table
        assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
        assert table["metadata"]["resourceVersion"]
        assert table["columnDefinitions"] == _defs(POD_COLUMNS)
        none = "<none>"
        assert _cells(table, 4) == {
            "pending": ["pending", "0/1", "Pending", "0", none, none, "other-node", none],
            "gated": ["gated", "0/1", "SchedulingGated", "0", none, none, none, none],
            "running": [
                "running",
                "1/1",
                "Running",
                "0",
                "10.0.0.7",
                "table-node",
                none,
                "1/1",
            ],
            "done": ["done", "0/1", "Completed", "0", none, none, none, none],
            "init": ["init", "0/2", "Init:CrashLoopBackOff", "3", none, none, none, none],
            "leaving": ["leaving", "0/1", "Terminating", "0", none, none, none, none],
        }
        rows = {row["cells"][0]: row for row in table["rows"]}
        assert rows["done"]["conditions"] == [
            {
                "type": "Completed",
                "status": "True",
                "reason": "Succeeded",
                "message": "The pod has completed successfully.",
            }
        ]
        assert "conditions" not in rows["running"]
        partial = rows["running"]["object"]
        assert partial["kind"] == "PartialObjectMetadata"
        assert partial["apiVersion"] == "meta.k8s.io/v1"
        assert partial["metadata"]["name"] == "running"
        assert "spec" not in partial

        status, full, _ = await raw(
            api_client, "GET", path, accept=KUBECTL_ACCEPT, params={"includeObject": "Object"}
        )
        assert status == 200
        whole = {row["cells"][0]: row["object"] for row in full["rows"]}["running"]
        assert whole["spec"]["nodeName"] == "table-node"
        assert whole["status"]["podIP"] == "10.0.0.7"
        status, bare, _ = await raw(
            api_client, "GET", path, accept=KUBECTL_ACCEPT, params={"includeObject": "None"}
        )
        assert status == 200 and all(row.get("object") is None for row in bare["rows"])
        status, bad, _ = await raw(
            api_client, "GET", path, accept=KUBECTL_ACCEPT, params={"includeObject": "All"}
        )
        assert status == 400 and bad["reason"] == "BadRequest"
        assert "includeObject" in bad["message"]

        status, one, _ = await raw(api_client, "GET", f"{path}/running", accept=TABLE)
        assert status == 200 and one["kind"] == "Table"
        assert one["columnDefinitions"] == _defs(POD_COLUMNS)
        assert [row["cells"][0] for row in one["rows"]] == ["running"]
        assert one["metadata"]["resourceVersion"]

        status, plain, _ = await raw(api_client, "GET", path)
        assert status == 200 and plain["kind"] == "PodList"
    finally:
        await core.patch_namespaced_pod("leaving", namespace, {"metadata": {"finalizers": None}})


async def test_node_and_namespace_tables_match_kube(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    name = f"tbl-{namespace}"
    bare = f"tbl-bare-{namespace}"
    labels = {
        "node-role.kubernetes.io/control-plane": "",
        "node-role.kubernetes.io/infra": "",
        "kubernetes.io/role": "edge",
    }
    await core.create_node(
        {"metadata": {"name": name, "labels": labels}, "spec": {"unschedulable": True}}
    )
    await core.create_node({"metadata": {"name": bare}})
    try:
        node = await core.read_node(name)
        await core.replace_node_status(
            name,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": labels,  # a status update replaces metadata too
                    "resourceVersion": node.metadata.resource_version,
                },
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}
                    ],
                    "addresses": [
                        {"type": "Hostname", "address": name},
                        {"type": "InternalIP", "address": "192.168.1.5"},
                        {"type": "ExternalIP", "address": "203.0.113.5"},
                    ],
                    "nodeInfo": {
                        "machineID": "m",
                        "systemUUID": "s",
                        "bootID": "b",
                        "kernelVersion": "6.1.0-13-amd64",
                        "osImage": "Debian GNU/Linux 12 (bookworm)",
                        "containerRuntimeVersion": "containerd://1.7.0",
                        "kubeletVersion": "v1.36.3",
                        "kubeProxyVersion": "",
                        "operatingSystem": "linux",
                        "architecture": "amd64",
                    },
                },
            },
        )
        status, table, _ = await raw(api_client, "GET", "/api/v1/nodes", accept=KUBECTL_ACCEPT)
        assert status == 200, table
        assert table["columnDefinitions"] == _defs(NODE_COLUMNS)
        cells = _cells(table, 3)
        assert cells[name] == [
            name,
            "NotReady,SchedulingDisabled",
            "control-plane,edge,infra",
            "v1.36.3",
            "192.168.1.5",
            "203.0.113.5",
            "Debian GNU/Linux 12 (bookworm)",
            "6.1.0-13-amd64 (amd64)",
            "containerd://1.7.0",
        ]
        assert cells[bare] == [
            bare,
            "Unknown",
            "<none>",
            "",
            "<none>",
            "<none>",
            "<unknown>",
            "<unknown>",
            "<unknown>",
        ]
        status, table, _ = await raw(
            api_client, "GET", f"/api/v1/namespaces/{namespace}", accept=KUBECTL_ACCEPT
        )
        assert status == 200
        assert table["columnDefinitions"] == _defs(NAMESPACE_COLUMNS)
        assert _cells(table, 2) == {namespace: [namespace, "Active"]}
    finally:
        await core.delete_node(name)
        await core.delete_node(bare)


async def test_watch_as_table_sends_headers_once(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("first"))
    path = f"/api/v1/namespaces/{namespace}/pods"

    async def change_later() -> None:
        await asyncio.sleep(0.5)
        await core.create_namespaced_pod(namespace, pod("second"))

    task = asyncio.create_task(change_later())
    status, body, _ = await raw(
        api_client,
        "GET",
        path,
        accept=KUBECTL_ACCEPT,
        params={"watch": "true", "timeoutSeconds": "2"},
    )
    await task
    assert status == 200
    events = [json.loads(line) for line in body.splitlines()] if isinstance(body, str) else [body]
    assert [(e["type"], e["object"]["rows"][0]["cells"][0]) for e in events] == [
        ("ADDED", "first"),
        ("ADDED", "second"),
    ]
    assert all(e["object"]["kind"] == "Table" for e in events)
    assert events[0]["object"]["columnDefinitions"] == _defs(POD_COLUMNS)
    assert events[1]["object"]["columnDefinitions"] is None
    assert events[1]["object"]["metadata"]["resourceVersion"]


async def test_event_configmap_lease_priorityclass_pdb_tables_match_kube(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map(
        namespace,
        {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}},
    )
    await core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "ev"},
            "involvedObject": {
                "kind": "Pod",
                "name": "p",
                "namespace": namespace,
                "fieldPath": "spec.containers{c}",
            },
            "reason": "FailedScheduling",
            "message": "  0/3 nodes are available  ",
            "type": "Warning",
            "source": {"component": "pluggable-scheduler"},
            "count": 4,
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-02T00:00:00Z",
        },
    )
    coordination = client.CoordinationV1Api(api_client)
    await coordination.create_namespaced_lease(
        namespace, {"metadata": {"name": "lease"}, "spec": {"holderIdentity": "me"}}
    )
    await client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        namespace,
        {"metadata": {"name": "pdb"}, "spec": {"minAvailable": "50%", "selector": {}}},
    )
    scheduling = client.SchedulingV1Api(api_client)
    priority = f"tables-{namespace}"
    await scheduling.create_priority_class(
        {"metadata": {"name": priority}, "value": 1000, "preemptionPolicy": "Never"}
    )
    try:
        base = f"/api/v1/namespaces/{namespace}"
        tables = {}
        for what, path in (
            ("events", f"{base}/events"),
            ("configmaps", f"{base}/configmaps"),
            ("leases", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"),
            ("pdbs", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"),
            ("priorityclasses", f"/apis/scheduling.k8s.io/v1/priorityclasses/{priority}"),
        ):
            status, tables[what], _ = await raw(api_client, "GET", path, accept=KUBECTL_ACCEPT)
            assert status == 200 and tables[what]["kind"] == "Table", tables[what]
        names = {
            what: [c["name"] for c in table["columnDefinitions"]] for what, table in tables.items()
        }
        assert names == {
            "events": [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name",
            ],
            "configmaps": ["Name", "Data", "Age"],
            "leases": ["Name", "Holder", "Age"],
            "pdbs": ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
            "priorityclasses": ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
        }
        (event,) = [row["cells"] for row in tables["events"]["rows"]]
        assert AGE.match(event[0]) and AGE.match(event[7]), event
        assert event[1:7] + event[8:] == [
            "Warning",
            "FailedScheduling",
            "pod/p",
            "spec.containers{c}",
            "pluggable-scheduler",
            "0/3 nodes are available",
            4,
            "ev",
        ]
        assert _cells(tables["configmaps"], 2)["cm"] == ["cm", 3]
        assert _cells(tables["leases"], 2) == {"lease": ["lease", "me"]}
        assert _cells(tables["pdbs"], 4) == {"pdb": ["pdb", "50%", "N/A", 0]}
        assert _cells(tables["priorityclasses"], 3) == {priority: [priority, 1000, False, "Never"]}
        assert {what: table["columnDefinitions"] for what, table in tables.items()} == {
            "events": _defs(EVENT_COLUMNS),
            "configmaps": _defs(CONFIGMAP_COLUMNS),
            "leases": _defs(LEASE_COLUMNS),
            "pdbs": _defs(PDB_COLUMNS),
            "priorityclasses": _defs(PRIORITY_CLASS_COLUMNS),
        }
    finally:
        await scheduling.delete_priority_class(priority)


async def test_create_without_content_type_is_json(
    api_client: client.ApiClient, namespace: str
) -> None:
    """kube-apiserver decodes a body without Content-Type as JSON (kubectl create --raw)."""
    core = client.CoreV1Api(api_client)
    path = f"/api/v1/namespaces/{namespace}/pods"
    data = json.dumps(pod("untyped")).encode()
    status, body, _ = await raw(api_client, "POST", path, data=data, content_type=None)
    assert status == 201, body
    status, body, _ = await raw(
        api_client,
        "POST",
        f"{path}/untyped/binding",
        data=json.dumps(binding("untyped", "node-1")).encode(),
        content_type=None,
    )
    assert status == 201 and body["status"] == "Success", body
    assert (await core.read_namespaced_pod("untyped", namespace)).spec.node_name == "node-1"
    status, body, _ = await raw(
        api_client, "POST", path, data=data, content_type="application/octet-stream"
    )
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_table_negotiation_and_age() -> None:
    assert table_version(KUBECTL_ACCEPT) == "v1"
    assert table_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io") == "v1beta1"
    assert table_version("application/json") is None
    assert table_version("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io") is None
    assert [human_duration(s) for s in (-5, -1, 59, 130, 600, 3 * 3600 + 60, 9 * 3600)] == [
        "<invalid>",
        "0s",
        "59s",
        "2m10s",
        "10m",
        "3h1m",
        "9h",
    ]
    assert [human_duration(s * 86400) for s in (3, 10, 800, 3000)] == ["3d", "10d", "2y70d", "8y"]


async def _establish(api_client: client.ApiClient, crd: dict[str, Any]) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    await ext.create_custom_resource_definition(crd)
    group = crd["spec"]["group"]
    async with asyncio.timeout(30):
        while True:
            got = await ext.read_custom_resource_definition(crd["metadata"]["name"])
            conditions = {c.type: c.status for c in (got.status.conditions or [])}
            status, _, _ = await raw(api_client, "GET", f"/apis/{group}/v1")
            if conditions.get("Established") == "True" and status == 200:
                return
            await asyncio.sleep(0.1)


async def test_custom_resource_table_uses_printer_columns(
    api_client: client.ApiClient, namespace: str
) -> None:
    group = "tables.emulator.example.com"
    plural = f"gadgets{namespace[-6:]}"
    columns = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Zone", "type": "string", "jsonPath": ".spec.where.zone", "priority": 1},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags[1]", "description": "second"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "additionalPrinterColumns": columns,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": f"G{plural}"},
            "versions": [version],
        },
    }
    await _establish(api_client, crd)
    try:
        custom = client.CustomObjectsApi(api_client)
        for name, spec in (
            ("full", {"size": 3, "where": {"zone": "a"}, "tags": ["x", "y"]}),
            ("empty", {}),
        ):
            body = {"apiVersion": f"{group}/v1", "kind": f"G{plural}", "metadata": {"name": name}}
            await custom.create_namespaced_custom_object(
                group, "v1", namespace, plural, {**body, "spec": spec, "status": {"ready": True}}
            )
        path = f"/apis/{group}/v1/namespaces/{namespace}/{plural}"
        status, table, _ = await raw(api_client, "GET", path, accept=KUBECTL_ACCEPT)
        assert status == 200, table
        name_column = _defs(POD_COLUMNS)[0]
        assert table["columnDefinitions"] == [
            name_column,
            {
                "name": "Size",
                "type": "integer",
                "format": "",
                "priority": 0,
                "description": (
                    "Custom resource definition column (in JSONPath format): .spec.size"
                ),
            },
            {
                "name": "Zone",
                "type": "string",
                "format": "",
                "priority": 1,
                "description": (
                    "Custom resource definition column (in JSONPath format): .spec.where.zone"
                ),
            },
            {
                "name": "Ready",
                "type": "boolean",
                "format": "",
                "priority": 0,
                "description": (
                    "Custom resource definition column (in JSONPath format): .status.ready"
                ),
            },
            {
                "name": "Tags",
                "type": "string",
                "format": "",
                "priority": 0,
                "description": "second",
            },
            {
                "name": "Age",
                "type": "date",
                "format": "",
                "priority": 0,
                "description": (
                    "Custom resource definition column (in JSONPath format): "
                    ".metadata.creationTimestamp"
                ),
            },
        ]
        assert _cells(table, 5) == {
            "full": ["full", 3, "a", True, "y"],
            "empty": ["empty", None, None, True, None],
        }
        crd_path = (
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
        )
        status, table, _ = await raw(api_client, "GET", crd_path, accept=KUBECTL_ACCEPT)
        assert status == 200 and table["columnDefinitions"] == _defs(DEFAULT_TABLE_COLUMNS)
        (stored,) = [row["object"] for row in table["rows"]]
        assert [row["cells"] for row in table["rows"]] == [
            [crd["metadata"]["name"], stored["metadata"]["creationTimestamp"]]
        ]
    finally:
        await client.ApiextensionsV1Api(api_client).delete_custom_resource_definition(
            crd["metadata"]["name"]
        )


def _template(app: str, *containers: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app, "tier": "a"}},
        "spec": {"containers": [{"name": n, "image": i} for n, i in containers]},
    }


def _workload_objects(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) for the workload and network kinds, namespaced."""
    core, apps = f"/api/v1/namespaces/{namespace}", f"/apis/apps/v1/namespaces/{namespace}"
    one = (("c", "registry.k8s.io/pause:3.9"),)
    return [
        (
            f"{core}/services",
            {
                "metadata": {"name": "svc"},
                "spec": {
                    "type": "ClusterIP",  # the emulator does not default Services yet
                    "selector": {"tier": "b", "app": "a"},
                    "ports": [
                        {"name": "web", "port": 80, "protocol": "TCP", "targetPort": 8080},
                        {"name": "dns", "port": 53, "protocol": "UDP"},
                    ],
                    "externalIPs": ["203.0.113.9"],
                },
            },
        ),
        (
            f"{core}/services",
            {
                "metadata": {"name": "ext"},
                "spec": {"type": "ExternalName", "externalName": "db.example.com"},
            },
        ),
        (
            f"{core}/replicationcontrollers",
            {
                "metadata": {"name": "rc"},
                "spec": {
                    "replicas": 2,
                    "selector": {"app": "rc"},
                    "template": _template("rc", *one),
                },
            },
        ),
        (
            f"{apps}/deployments",
            {
                "metadata": {"name": "deploy"},
                "spec": {
                    "replicas": 2,
                    "selector": {
                        "matchLabels": {"app": "d"},
                        "matchExpressions": [
                            {"key": "tier", "operator": "In", "values": ["b", "a"]}
                        ],
                    },
                    "template": _template(
                        "d", ("c", "registry.k8s.io/pause:3.9"), ("s", "example.com/side:1")
                    ),
                },
            },
        ),
        (
            f"{apps}/replicasets",
            {
                "metadata": {"name": "rs"},
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "r"}},
                    "template": _template("r", *one),
                },
            },
        ),
        (
            f"{apps}/statefulsets",
            {
                "metadata": {"name": "sts"},
                "spec": {
                    "replicas": 1,
                    "serviceName": "svc",
                    "selector": {"matchLabels": {"app": "s"}},
                    "template": _template("s", *one),
                },
            },
        ),
        (
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            {
                "metadata": {"name": "ev2"},
                "regarding": {"kind": "Pod", "name": "p", "namespace": namespace},
                "reason": "Scheduled",
                "note": " placed ",
                "type": "Normal",
                "action": "Binding",
                "reportingController": "pluggable-scheduler",
                "reportingInstance": "inst-1",
                "eventTime": "2026-01-01T00:00:00.000000Z",
            },
        ),
    ]


def _storage_objects(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) for the storage and DRA kinds; cluster-scoped names unique."""
    core, storage = f"/api/v1/namespaces/{namespace}", "/apis/storage.k8s.io/v1"
    resource = "/apis/resource.k8s.io/v1"
    request = {"name": "r", "exactly": {"deviceClassName": f"dc-{namespace}"}}
    return [
        (
            "/api/v1/persistentvolumes",
            {
                "metadata": {"name": f"pv-{namespace}"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadOnlyMany", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "fast",
                    "hostPath": {"path": "/tmp/tables"},
                    "claimRef": {"namespace": namespace, "name": "other"},
                },
            },
        ),
        (
            f"{core}/persistentvolumeclaims",
            {
                "metadata": {"name": "claim"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "fast",
                },
            },
        ),
        (
            f"{core}/persistentvolumeclaims",
            {
                "metadata": {
                    "name": "named",
                    "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"},
                },
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "volumeName": "elsewhere",
                    "volumeMode": "Block",
                },
            },
        ),
        (
            f"{storage}/storageclasses",
            {
                "metadata": {
                    "name": f"sc-{namespace}",
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                },
                "provisioner": "example.com/tables",
                "volumeBindingMode": "WaitForFirstConsumer",
                "allowVolumeExpansion": True,
            },
        ),
        (
            f"{storage}/volumeattachments",
            {
                "metadata": {"name": f"va-{namespace}"},
                "spec": {
                    "attacher": "csi.example.com",
                    "source": {"persistentVolumeName": "pv1"},
                    "nodeName": "n1",
                },
            },
        ),
        (
            f"{storage}/csinodes",
            {
                "metadata": {"name": f"csinode-{namespace}"},
                "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]},
            },
        ),
        (
            f"{storage}/csidrivers",
            {
                "metadata": {"name": f"csi-{namespace}.example.com"},
                "spec": {
                    "attachRequired": False,
                    "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
                    "volumeLifecycleModes": ["Persistent", "Ephemeral"],
                },
            },
        ),
        (
            f"{storage}/volumeattributesclasses",
            {
                "metadata": {"name": f"vac-{namespace}"},
                "driverName": "csi.example.com",
                "parameters": {"iops": "100"},
            },
        ),
        (
            f"{storage}/namespaces/{namespace}/csistoragecapacities",
            {"metadata": {"name": "cap"}, "storageClassName": "fast", "capacity": "1Gi"},
        ),
        (f"{resource}/deviceclasses", {"metadata": {"name": f"dc-{namespace}"}, "spec": {}}),
        (
            f"{resource}/namespaces/{namespace}/resourceclaims",
            {"metadata": {"name": "claim"}, "spec": {"devices": {"requests": [request]}}},
        ),
        (
            f"{resource}/namespaces/{namespace}/resourceclaimtemplates",
            {
                "metadata": {"name": "template"},
                "spec": {"spec": {"devices": {"requests": [request]}}},
            },
        ),
        (
            f"{resource}/resourceslices",
            {
                "metadata": {"name": f"slice-{namespace}"},
                "spec": {
                    "driver": "example.com",
                    "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
                    "nodeName": "n1",
                    "devices": [],
                },
            },
        ),
    ]


async def _tables_for(
    api_client: client.ApiClient, objects: list[tuple[str, dict[str, Any]]]
) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Create each object; its kind's Table and the object as stored, by collection path + name."""
    out = {}
    for path, obj in objects:
        status, stored, _ = await raw(api_client, "POST", path, body=obj)
        assert status == 201, (path, stored)
        status, table, _ = await raw(api_client, "GET", path, accept=KUBECTL_ACCEPT)
        assert status == 200 and table["kind"] == "Table", (path, table)
        out[f"{path.rsplit('/', 1)[-1]}/{obj['metadata']['name'].split('-')[0]}"] = (table, stored)
    return out


def _row(table: dict[str, Any], name: str, age_at: int | None) -> list[Any]:
    """The cells of ``name``'s row (Age checked for its shape and dropped)."""
    (cells,) = [list(r["cells"]) for r in table["rows"] if r["object"]["metadata"]["name"] == name]
    if age_at is not None:
        assert AGE.match(cells.pop(age_at)), cells
    return cells


async def test_workload_and_event_tables_match_kube(
    api_client: client.ApiClient, namespace: str
) -> None:
    got = await _tables_for(api_client, _workload_objects(namespace))
    assert {key: table["columnDefinitions"] for key, (table, _) in got.items()} == {
        "services/svc": _defs(SERVICE_COLUMNS),
        "services/ext": _defs(SERVICE_COLUMNS),
        "replicationcontrollers/rc": _defs(REPLICATION_CONTROLLER_COLUMNS),
        "deployments/deploy": _defs(DEPLOYMENT_COLUMNS),
        "replicasets/rs": _defs(REPLICA_SET_COLUMNS),
        "statefulsets/sts": _defs(STATEFUL_SET_COLUMNS),
        "events/ev2": _defs(EVENT_COLUMNS),
    }
    svc_table, svc = got["services/svc"]
    pause = "registry.k8s.io/pause:3.9"
    assert _row(svc_table, "svc", 5) == [
        "svc",
        "ClusterIP",
        (svc["spec"].get("clusterIPs") or ["<none>"])[0],  # the emulator allocates none
        "203.0.113.9",
        "80/TCP,53/UDP",
        "app=a,tier=b",
    ]
    none = "<none>"
    assert _row(got["services/ext"][0], "ext", 5) == [
        "ext",
        "ExternalName",
        none,
        "db.example.com",
        none,
        none,
    ]
    assert _row(got["replicationcontrollers/rc"][0], "rc", 4) == [
        "rc", 2, 0, 0, "c", pause, "app=rc"
    ]  # fmt: skip
    assert _row(got["deployments/deploy"][0], "deploy", 4) == [
        "deploy",
        "0/2",
        0,
        0,
        "c,s",
        f"{pause},example.com/side:1",
        "app=d,tier in (a,b)",
    ]
    assert _row(got["replicasets/rs"][0], "rs", 4) == ["rs", 3, 0, 0, "c", pause, "app=r"]
    assert _row(got["statefulsets/sts"][0], "sts", 2) == ["sts", "0/1", "c", pause]
    event = _row(got["events/ev2"][0], "ev2", None)
    assert AGE.match(event[0]) and event[7] == event[0], event
    assert event[1:7] + event[8:] == [
        "Normal",
        "Scheduled",
        "pod/p",
        "",
        "pluggable-scheduler, inst-1",
        "placed",
        1,
        "ev2",
    ]


async def test_storage_and_dra_tables_match_kube(
    api_client: client.ApiClient, namespace: str
) -> None:
    objects = _storage_objects(namespace)
    try:
        got = await _tables_for(api_client, objects)
        assert {key: table["columnDefinitions"] for key, (table, _) in got.items()} == {
            "persistentvolumes/pv": _defs(PV_COLUMNS),
            "persistentvolumeclaims/claim": _defs(PVC_COLUMNS),
            "persistentvolumeclaims/named": _defs(PVC_COLUMNS),
            "storageclasses/sc": _defs(STORAGE_CLASS_COLUMNS),
            "volumeattachments/va": _defs(VOLUME_ATTACHMENT_COLUMNS),
            "csinodes/csinode": _defs(CSI_NODE_COLUMNS),
            "csidrivers/csi": _defs(CSI_DRIVER_COLUMNS),
            "volumeattributesclasses/vac": _defs(VOLUME_ATTRIBUTES_CLASS_COLUMNS),
            "csistoragecapacities/cap": _defs(DEFAULT_TABLE_COLUMNS),
            "deviceclasses/dc": _defs(DEVICE_CLASS_COLUMNS),
            "resourceclaims/claim": _defs(RESOURCE_CLAIM_COLUMNS),
            "resourceclaimtemplates/template": _defs(RESOURCE_CLAIM_TEMPLATE_COLUMNS),
            "resourceslices/slice": _defs(RESOURCE_SLICE_COLUMNS),
        }
        pv_table, pv = got["persistentvolumes/pv"]
        assert _row(pv_table, f"pv-{namespace}", 9) == [
            f"pv-{namespace}",
            "1Gi",
            "RWO,ROX",
            "Retain",
            pv["status"]["phase"],
            f"{namespace}/other",
            "fast",
            "<unset>",
            "",
            "Filesystem",
        ]
        pvc_table, claim = got["persistentvolumeclaims/claim"]
        assert _row(pvc_table, "claim", 7) == [
            "claim", claim["status"]["phase"], "", "", "", "fast", "<unset>", "Filesystem"
        ]  # fmt: skip
        named_table, named = got["persistentvolumeclaims/named"]
        assert _row(named_table, "named", 7) == [
            "named", named["status"]["phase"], "elsewhere", "0", "", "beta", "<unset>", "Block"
        ]  # fmt: skip
        assert _row(got["storageclasses/sc"][0], f"sc-{namespace}", 5) == [
            f"sc-{namespace} (default)",
            "example.com/tables",
            "Delete",
            "WaitForFirstConsumer",
            True,
        ]
        assert _row(got["volumeattachments/va"][0], f"va-{namespace}", 5) == [
            f"va-{namespace}", "csi.example.com", "pv1", "n1", False
        ]  # fmt: skip
        assert _row(got["csinodes/csinode"][0], f"csinode-{namespace}", 2) == [
            f"csinode-{namespace}", 1
        ]  # fmt: skip
        driver = f"csi-{namespace}.example.com"
        assert _row(got["csidrivers/csi"][0], driver, 7) == [
            driver, False, False, False, "a,b", False, "Persistent,Ephemeral"
        ]  # fmt: skip
        assert _row(got["volumeattributesclasses/vac"][0], f"vac-{namespace}", 2) == [
            f"vac-{namespace}", "csi.example.com"
        ]  # fmt: skip
        cap_table, cap = got["csistoragecapacities/cap"]
        assert _row(cap_table, "cap", None) == ["cap", cap["metadata"]["creationTimestamp"]]
        assert _row(got["deviceclasses/dc"][0], f"dc-{namespace}", 1) == [f"dc-{namespace}"]
        assert _row(got["resourceclaims/claim"][0], "claim", 2) == ["claim", "pending"]
        assert _row(got["resourceclaimtemplates/template"][0], "template", 1) == ["template"]
        assert _row(got["resourceslices/slice"][0], f"slice-{namespace}", 4) == [
            f"slice-{namespace}", "n1", "example.com", "p"
        ]  # fmt: skip
    finally:
        for path, obj in objects:
            name = obj["metadata"]["name"]
            if name.endswith(namespace):  # cluster-scoped; the namespace takes the rest
                await raw(api_client, "DELETE", f"{path}/{name}")


async def _put_status(api_client: client.ApiClient, path: str, status: dict[str, Any]) -> None:
    """Replace ``path``'s status through its status subresource."""
    code, current, _ = await raw(api_client, "GET", path)
    assert code == 200, current
    code, body, _ = await raw(
        api_client, "PUT", f"{path}/status", body={**current, "status": status}
    )
    assert code == 200, body


async def test_table_cells_follow_status(api_client: client.ApiClient, namespace: str) -> None:
    """The cells kube takes from status: bound claims, rollout counts, load-balancer addresses."""
    core, apps = f"/api/v1/namespaces/{namespace}", f"/apis/apps/v1/namespaces/{namespace}"
    template = _template("d", ("c", "registry.k8s.io/pause:3.9"))
    created = [
        (
            f"{core}/persistentvolumeclaims",
            {
                "metadata": {"name": "bound"},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "",
                    "volumeName": "pv-bound",
                },
            },
            {
                "phase": "Bound",
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                "capacity": {"storage": "2Gi"},
            },
        ),
        (
            f"{apps}/deployments",
            {
                "metadata": {"name": "rolled"},
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": template,
                },
            },
            {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 1},
        ),
        (
            f"{core}/services",
            {
                "metadata": {"name": "lb"},
                "spec": {
                    "type": "LoadBalancer",
                    "ports": [{"port": 443, "protocol": "TCP"}],
                    "externalIPs": ["203.0.113.10"],
                },
            },
            {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "198.51.100.2"}]}},
        ),
    ]
    stored = {}
    for path, obj, status in created:
        name = obj["metadata"]["name"]
        code, body, _ = await raw(api_client, "POST", path, body=obj)
        assert code == 201, body
        await _put_status(api_client, f"{path}/{name}", status)
        code, stored[name], _ = await raw(api_client, "GET", f"{path}/{name}")
    tables = {}
    for path, obj, _ in created:
        code, table, _ = await raw(api_client, "GET", path, accept=KUBECTL_ACCEPT)
        assert code == 200 and table["kind"] == "Table", table
        tables[obj["metadata"]["name"]] = table
    none = "<none>"
    assert _row(tables["bound"], "bound", 7) == [
        "bound", "Bound", "pv-bound", "2Gi", "RWO,RWX", "", "<unset>", "Filesystem"
    ]  # fmt: skip
    assert _row(tables["rolled"], "rolled", 4) == [
        "rolled", "2/3", 3, 1, "c", "registry.k8s.io/pause:3.9", "app=d"
    ]  # fmt: skip
    lb = stored["lb"]["spec"]
    node_port = lb["ports"][0].get("nodePort")  # the emulator allocates none
    assert _row(tables["lb"], "lb", 5) == [
        "lb",
        "LoadBalancer",
        (lb.get("clusterIPs") or [none])[0],
        "198.51.100.2,lb.example.com,203.0.113.10",
        f"443:{node_port}/TCP" if node_port else "443/TCP",
        none,
    ]


async def test_resource_claim_state_column(api_client: client.ApiClient, namespace: str) -> None:
    """kube's resourceClaimState: pending, allocated, reserved, and deleted when held back."""
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
    allocation = {
        "devices": {
            "results": [
                {"request": "r", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
            ]
        },
    }
    consumer = {"resource": "pods", "name": "p", "uid": "u1"}
    statuses: dict[str, dict[str, Any] | None] = {
        "waiting": None,
        "allocated": {"allocation": allocation},
        "reserved": {"allocation": allocation, "reservedFor": [consumer]},
        "gone": None,
        "gone-held": {"allocation": allocation, "reservedFor": [consumer]},
    }
    request = {"name": "r", "exactly": {"deviceClassName": "gpu.example.com"}}
    held = [name for name in statuses if name.startswith("gone")]
    try:
        for name, status in statuses.items():
            metadata: dict[str, Any] = {"name": name}
            if name in held:
                metadata["finalizers"] = ["example.com/hold"]
            body = {"metadata": metadata, "spec": {"devices": {"requests": [request]}}}
            code, made, _ = await raw(api_client, "POST", path, body=body)
            assert code == 201, made
            if status is not None:
                await _put_status(api_client, f"{path}/{name}", status)
        for name in held:
            code, answer, _ = await raw(api_client, "DELETE", f"{path}/{name}")
            assert code in (200, 202), answer
        code, table, _ = await raw(api_client, "GET", path, accept=KUBECTL_ACCEPT)
        assert code == 200 and table["columnDefinitions"] == _defs(RESOURCE_CLAIM_COLUMNS)
        assert _cells(table, 2) == {
            "waiting": ["waiting", "pending"],
            "allocated": ["allocated", "allocated"],
            "reserved": ["reserved", "allocated,reserved"],
            "gone": ["gone", "deleted"],
            "gone-held": ["gone-held", "deleted,allocated,reserved"],
        }
    finally:
        for name in held:
            await raw(
                api_client,
                "PATCH",
                f"{path}/{name}",
                body={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )

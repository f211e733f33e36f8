"""Emulator-only extras: cluster files, the fake kubelet, the threaded server, built-in CRDs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from scheduler.errors import UserError
from scheduler.simulation.emulator import EmulatorServer
from scheduler.simulation.emulator.clusterfile import load_cluster_file

from .kube_helpers import WatchStream, binding, pod, raw

SNAPSHOT = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, resourceVersion: "4242", uid: 11111111-2222-3333-4444-555555555555}
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
    addresses: [{type: InternalIP, address: 192.168.1.10}]
- apiVersion: v1
  kind: Pod
  metadata: {name: web-1, namespace: shop, resourceVersion: "99"}
  spec:
    nodeName: node-a
    containers: [{name: web, image: nginx}]
  status: {phase: Running, podIP: 10.1.2.3}
"""


async def _api(server: EmulatorServer, tmp_path: Path) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(server.write_kubeconfig(tmp_path / "kc")),
        client_configuration=configuration,
    )
    return client.ApiClient(configuration)


def test_cluster_file_list_and_multi_document(tmp_path: Path) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text(SNAPSHOT)
    assert [o["kind"] for o in load_cluster_file(listed)] == ["Node", "Pod"]
    multi = tmp_path / "multi.yaml"
    multi.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"
    )
    assert [o["metadata"]["name"] for o in load_cluster_file(multi)] == ["a", "x"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n- just\n- a list\n",
            "document 1: expected a Kubernetes object",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n"
            "kind: Pod\nmetadata: {name: b}\n",
            "document 1: missing 'apiVersion'",
        ),
        (
            "kind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {}}\n",
            "document 0, item 0: Pod has no metadata.name",
        ),
        ("key: [unclosed\n", "not valid YAML"),
    ],
)
def test_cluster_file_errors_name_file_and_document(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as exc:
        load_cluster_file(path)
    assert str(path) in exc.value.message and message in exc.value.message


def test_cluster_file_missing_and_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read cluster file"):
        load_cluster_file(tmp_path / "absent.yaml")
    with pytest.raises(UserError, match=r"object 0 \(Gadget x\).*does not serve kind 'Gadget'"):
        EmulatorServer(
            [{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "x"}}]
        )


async def test_loaded_snapshot_keeps_state(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(SNAPSHOT)
    async with EmulatorServer(load_cluster_file(path)) as server:
        async with await _api(server, tmp_path) as api:
            core = client.CoreV1Api(api)
            web = await core.read_namespaced_pod("web-1", "shop")
            node = await core.read_node("node-a")
            namespaces = {n.metadata.name for n in (await core.list_namespace()).items}
        assert web.status.phase == "Running" and web.spec.node_name == "node-a"
        assert web.status.pod_ip == "10.1.2.3"
        assert web.metadata.resource_version != "99"
        assert node.metadata.uid == "11111111-2222-3333-4444-555555555555"
        assert "shop" in namespaces, "namespaces referenced by the snapshot are created"


async def test_fake_kubelet_runs_and_terminates_pods(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(SNAPSHOT)
    async with (
        EmulatorServer(load_cluster_file(path), fake_kubelet=True) as server,
        await _api(server, tmp_path) as api,
    ):
        core = client.CoreV1Api(api)
        await core.create_namespaced_pod("default", pod("p"))
        async with await WatchStream.open(
            api, "/api/v1/namespaces/default/pods", fieldSelector="metadata.name=p"
        ) as stream:
            await core.create_namespaced_pod_binding(
                "p", "default", binding("p", "node-a"), _preload_content=False
            )
            while (event := await stream.next_of({"MODIFIED"}))["object"]["status"][
                "phase"
            ] != "Running":
                pass
            status = event["object"]["status"]
            assert status["hostIP"] == "192.168.1.10" and status["podIP"]
            ready = {c["type"]: c["status"] for c in status["conditions"]}
            assert ready["Ready"] == "True" and ready["PodScheduled"] == "True"
            await core.delete_namespaced_pod("p", "default")
            deleted = await stream.next_of({"DELETED"})
        assert deleted["object"]["metadata"]["deletionTimestamp"]
        with pytest.raises(client.ApiException) as exc:
            await core.read_namespaced_pod("p", "default")
        assert exc.value.status == 404


def test_thread_hosted_server_serves_sync_callers(tmp_path: Path) -> None:
    import urllib.request

    server = EmulatorServer().start_in_thread()
    url = server.url
    try:
        with urllib.request.urlopen(server.url + "/api/v1/namespaces/default") as resp:
            namespace: dict[str, Any] = json.loads(resp.read())
        assert namespace["status"]["phase"] == "Active"
        assert server.call(lambda: server.store.rv) > 0
        assert "server: " + server.url in server.write_kubeconfig(tmp_path / "kc").read_text()
    finally:
        server.stop_thread()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/version", timeout=2)


async def test_builtin_scheduler_plugin_crds(
    api_client: client.ApiClient, emulator: EmulatorServer
) -> None:
    custom = client.CustomObjectsApi(api_client)
    group = await custom.create_namespaced_custom_object(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "default",
        "podgroups",
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "pg-builtin"},
            "spec": {"minMember": 3},
        },
    )
    assert group["spec"]["minMember"] == 3
    await custom.delete_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", "pg-builtin"
    )
    quotas = await custom.list_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", "default", "elasticquotas"
    )
    assert quotas["kind"] == "ElasticQuotaList"
    reservations = await custom.list_cluster_custom_object(
        "scheduling.koordinator.sh", "v1alpha1", "reservations"
    )
    assert reservations["kind"] == "ReservationList"
    metrics = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": "metrics-node"},
        "timestamp": "2024-01-01T00:00:00Z",
        "window": "30s",
        "usage": {"cpu": "250m", "memory": "1Gi"},
    }
    status, created, _ = await raw(
        api_client, "POST", "/apis/metrics.k8s.io/v1beta1/nodes", body=metrics
    )
    assert status == 201 and created["usage"]["cpu"] == "250m"
    status, listed, _ = await raw(api_client, "GET", "/apis/metrics.k8s.io/v1beta1/nodes")
    assert listed["kind"] == "NodeMetricsList" and "metrics-node" in [
        i["metadata"]["name"] for i in listed["items"]
    ]
    await raw(api_client, "DELETE", "/apis/metrics.k8s.io/v1beta1/nodes/metrics-node")

"""PodInfo's shared, read-only parts and compact_pod (what the daemon's pod informer stores)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import orjson
import pytest

from scheduler.state import pod as pod_module
from scheduler.state.labels import LabelIndex
from scheduler.state.pod import FrozenDict, FrozenList, InvalidPodError, PodInfo, compact_pod


def template_pod(name: str, node: str = "", **extra: Any) -> dict[str, Any]:
    """A pod as an API server serves it: defaults and admission's tolerations filled in."""
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                "terminationMessagePolicy": "File",
            }
        ],
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
        "securityContext": {},
        **extra,
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "prod",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": {"app": "web"},
            "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {}}],
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def decoded(obj: dict[str, Any]) -> dict[str, Any]:
    """A fresh decode, as each pod arrives from the API server (no shared objects)."""
    out: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return out


def test_compact_pod_keeps_the_pod_equal_but_drops_managed_fields() -> None:
    original = template_pod("a", "n1")
    raw = decoded(original)
    assert compact_pod(raw) is raw
    del original["metadata"]["managedFields"]
    assert raw == original
    assert orjson.dumps(raw) == orjson.dumps(original), "same JSON, same key order"


def test_pods_of_one_template_share_parts_and_strings() -> None:
    a = compact_pod(decoded(template_pod("a", "node-1")))
    b = compact_pod(decoded(template_pod("b", "node-1")))
    c = compact_pod(decoded(template_pod("c", "node-1")))
    # The first pod's lists share their parts; from the second on, whole lists.
    assert a["spec"]["containers"][0]["resources"] is b["spec"]["containers"][0]["resources"]
    assert a["spec"]["tolerations"][0] is b["spec"]["tolerations"][0]
    assert b["spec"]["containers"] is c["spec"]["containers"]
    assert b["spec"]["tolerations"] is c["spec"]["tolerations"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["spec"]["nodeName"] is b["spec"]["nodeName"]
    assert a["status"]["phase"] is b["status"]["phase"]
    assert a["metadata"] is not b["metadata"] and a["spec"] is not b["spec"]
    assert (a["metadata"]["name"], b["metadata"]["name"]) == ("a", "b")


def test_a_pod_of_its_own_still_shares_what_it_has_in_common() -> None:
    # A service account token volume (and its mount) is named per pod.
    def with_token(name: str, suffix: str) -> dict[str, Any]:
        pod = template_pod(name, volumes=[{"name": f"token-{suffix}"}, {"name": "config"}])
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": f"token-{suffix}"}]
        return pod

    a = compact_pod(decoded(with_token("a", "xk2p9")))
    b = compact_pod(decoded(with_token("b", "q8zt3")))
    assert a["spec"]["containers"] is not b["spec"]["containers"]
    assert a["spec"]["containers"][0]["resources"] is b["spec"]["containers"][0]["resources"]
    assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
    assert a["spec"]["volumes"][1] is b["spec"]["volumes"][1]
    assert a["spec"]["volumes"][0] == {"name": "token-xk2p9"}
    assert b["spec"]["containers"][0]["volumeMounts"] == [{"name": "token-q8zt3"}]


def token_pod(name: str, suffix: str, **extra: Any) -> dict[str, Any]:
    """``template_pod`` as a real cluster has it: a token volume named per pod, mounted."""
    pod = template_pod(name, **extra)
    token = f"kube-api-access-{suffix}"
    pod["spec"]["volumes"] = [
        {"name": "config", "configMap": {"name": "web-config"}},
        {
            "name": token,
            "projected": {
                "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}],
                "defaultMode": 420,
            },
        },
    ]
    for container in pod["spec"]["containers"]:
        container["volumeMounts"] = [
            {"name": "config", "mountPath": "/etc/web"},
            {"name": token, "readOnly": True, "mountPath": "/var/run/secrets/token"},
        ]
    return pod


def test_containers_of_token_pods_share_all_but_the_mount() -> None:
    pods = [compact_pod(decoded(token_pod(f"p{i}", f"s{i:04d}"))) for i in range(3)]
    a, b, c = (p["spec"] for p in pods)
    assert a["containers"][0]["resources"] is c["containers"][0]["resources"]
    assert a["containers"][0]["ports"] is c["containers"][0]["ports"]
    assert b["containers"][0]["volumeMounts"][0] is c["containers"][0]["volumeMounts"][0]
    assert c["containers"][0]["volumeMounts"][1]["name"] == "kube-api-access-s0002"
    # All of the token volume but its name is common.
    assert b["volumes"][1]["projected"] is c["volumes"][1]["projected"]
    assert b["volumes"][0] is c["volumes"][0]
    assert [p["spec"]["volumes"][1]["name"] for p in pods] == [
        "kube-api-access-s0000",
        "kube-api-access-s0001",
        "kube-api-access-s0002",
    ]


def test_pod_info_of_token_pods_hits_the_parse_cache() -> None:
    pod_module._DERIVED_CACHE.clear()
    first = PodInfo.from_dict(decoded(token_pod("p", "first")))
    assert len(pod_module._DERIVED_CACHE) == 1
    raws = [decoded(token_pod(f"p{i}", f"{i:05d}")) for i in range(500)]
    infos = [PodInfo.from_dict(raw) for raw in raws]
    assert len(pod_module._DERIVED_CACHE) == 1
    for info in infos:
        assert info.requests is first.requests
        assert info.non_zero_requests is first.non_zero_requests
        assert info.tolerations is first.tolerations
        assert info.host_ports is first.host_ports
        assert info.images is first.images
    # Shared objects, not equal copies: each pod's derivation came from the cache
    # (how much faster that is, bench perf measures, not a test).


def _set(obj: Any, path: str, value: Any) -> None:
    *parents, last = path.split(" ")
    for name in parents:
        obj = obj[int(name)] if isinstance(obj, list) else obj.setdefault(name, {})
    obj[last] = value


_SIDECAR = {
    "name": "proxy",
    "image": "proxy:1",
    "restartPolicy": "Always",
    "ports": [{"containerPort": 9000, "hostPort": 9000}],
    "resources": {"requests": {"cpu": "50m"}},
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("containers 0 resources requests cpu", "200m"),
        ("containers 0 resources requests memory", "1Gi"),
        ("containers 0 resources limits ephemeral-storage", "1Gi"),
        ("containers 0 resources requests example.com/gpu", "1"),
        ("containers 0 ports 0 hostPort", 9090),
        ("containers 0 ports 0 protocol", "UDP"),
        ("containers 0 ports 0 hostIP", "10.0.0.1"),
        ("containers 0 image", "registry.k8s.io/pause:3.9"),
        ("initContainers", [_SIDECAR]),
        ("initContainers 0 restartPolicy", "OnFailure"),
        ("initContainers 0 resources requests cpu", "2"),
        ("initContainers 0 ports 0 hostPort", 9001),
        ("initContainers 0 image", "proxy:2"),
        ("initContainers", [{**_SIDECAR, "restartPolicy": "OnFailure"}]),
        ("resources", {"requests": {"cpu": "2"}}),
        ("resources", {"limits": {"memory": "2Gi"}}),
        ("overhead", {"cpu": "10m"}),
        ("hostNetwork", True),
        ("tolerations 0 tolerationSeconds", 60),
        ("tolerations 0 effect", "NoSchedule"),
        ("tolerations", []),
    ],
)
def test_pods_differing_in_a_parsed_field_do_not_share_its_parse(path: str, value: Any) -> None:
    with_ports = {"ports": [{"containerPort": 9000}]}
    base = decoded(token_pod("a", "aaaaa", initContainers=[{**_SIDECAR, **with_ports}]))
    if path == "hostNetwork":  # so that it changes the host ports
        base["spec"]["initContainers"] = []
        base["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    changed = decoded(base)
    changed["metadata"]["name"] = "b"
    _set(changed["spec"], path, value)
    a = PodInfo.from_dict(base)
    b = PodInfo.from_dict(changed)
    # Each parse equals a parse without the cache, and they differ.
    pod_module._DERIVED_CACHE.clear()
    fresh_b = PodInfo.from_dict(changed)
    pod_module._DERIVED_CACHE.clear()
    fresh_a = PodInfo.from_dict(base)
    parsed = ("requests", "non_zero_requests", "tolerations", "host_ports", "images")
    assert [getattr(a, f) for f in parsed] == [getattr(fresh_a, f) for f in parsed]
    assert [getattr(b, f) for f in parsed] == [getattr(fresh_b, f) for f in parsed]
    assert [getattr(a, f) for f in parsed] != [getattr(b, f) for f in parsed]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("containers 0 resources requests cpu", "200m"),
        ("containers 0 ports 0 hostPort", 9090),
        ("containers 0 image", "registry.k8s.io/pause:3.9"),
        ("overhead", {"cpu": "10m"}),
        ("tolerations", []),
    ],
)
def test_an_update_reuses_the_earlier_parse_only_when_its_inputs_are_unchanged(
    path: str, value: Any
) -> None:
    """Pods unlike each other overflow the shared cache before their binding comes back;
    the update takes what it may from the pod's own earlier parse instead."""
    before = PodInfo.from_dict(decoded(token_pod("a", "aaaaa")))
    bound = decoded(before.raw)
    bound["spec"]["nodeName"] = "node-1"
    bound["metadata"]["labels"] = {"new": "label"}
    pod_module._DERIVED_CACHE.clear()
    after = PodInfo.from_dict(bound, before)
    parsed = ("requests", "non_zero_requests", "tolerations", "host_ports", "images")
    assert all(getattr(after, f) is getattr(before, f) for f in parsed)
    assert not pod_module._DERIVED_CACHE  # not parsed at all
    assert after.node_name == "node-1" and after.labels == {"new": "label"}
    changed = decoded(bound)
    _set(changed["spec"], path, value)
    pod_module._DERIVED_CACHE.clear()
    fresh = PodInfo.from_dict(decoded(changed))
    pod_module._DERIVED_CACHE.clear()
    reparsed = PodInfo.from_dict(changed, before)
    assert [getattr(reparsed, f) for f in parsed] == [getattr(fresh, f) for f in parsed]
    assert [getattr(reparsed, f) for f in parsed] != [getattr(before, f) for f in parsed]


def test_parse_errors_are_not_hidden_by_the_cache() -> None:
    PodInfo.from_dict(decoded(template_pod("good")))
    for broken in (
        {"containers": [["not", "an", "object"]]},
        {"containers": {"app": {}}},
        {"initContainers": "x"},
    ):
        bad = decoded(template_pod("bad"))
        bad["spec"].update(broken)
        with pytest.raises(InvalidPodError):
            PodInfo.from_dict(bad)
    bad = decoded(template_pod("bad"))
    bad["status"]["conditions"] = {"type": "Ready"}
    with pytest.raises(InvalidPodError, match="conditions"):
        PodInfo.from_dict(bad)
    # A container's name only shows in errors: the message names this pod's.
    PodInfo.from_dict(decoded(template_pod("named")))
    bad = decoded(template_pod("bad"))
    bad["spec"]["containers"][0]["name"] = "other"
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(InvalidPodError, match='"other"'):
        PodInfo.from_dict(bad)


def test_compact_pod_leaves_odd_objects_alone() -> None:
    odd: dict[str, Any] = {"metadata": [], "spec": "x", "status": None}
    assert compact_pod(odd) == {"metadata": [], "spec": "x", "status": None}
    huge = decoded(template_pod("a"))
    huge["spec"]["containers"][0]["x"] = 2**70  # not JSON orjson can write: not shared
    assert compact_pod(huge)["spec"]["containers"][0]["x"] == 2**70


def test_pod_info_parses_a_compacted_pod_as_the_original() -> None:
    plain = PodInfo.from_dict(decoded(template_pod("a", "n1")))
    compacted = PodInfo.from_dict(compact_pod(decoded(template_pod("a", "n1"))))
    for name in (
        "key",
        "labels",
        "requests",
        "non_zero_requests",
        "tolerations",
        "host_ports",
        "images",
        "node_name",
        "phase",
    ):
        assert getattr(plain, name) == getattr(compacted, name), name
    assert plain.key == "prod/a"
    assert plain.requests == {"cpu": 100, "memory": 500 * 2**20}


def test_parsed_parts_are_shared_and_read_only() -> None:
    a = PodInfo.from_dict(decoded(template_pod("a")))
    b = PodInfo.from_dict(decoded(template_pod("b")))
    assert a.requests is b.requests and a.tolerations is b.tolerations
    assert a.annotations is b.annotations and not a.annotations  # the shared empty map
    with pytest.raises(TypeError, match="read-only"):
        a.requests["cpu"] = 1
    with pytest.raises(TypeError, match="read-only"):
        a.tolerations.append(a.tolerations[0])
    with pytest.raises(TypeError, match="read-only"):
        a.annotations["x"] = "y"
    with pytest.raises(TypeError, match="read-only"):
        a.scheduling_gates.append("g")
    # The memo is each pod's own, and made on first use.
    a.cache["plugin"] = 1
    assert b.cache == {} and a.cache == {"plugin": 1}


def test_frozen_collections_copy_into_plain_ones() -> None:
    d: FrozenDict[str, int] = FrozenDict({"cpu": 1})
    items: FrozenList[int] = FrozenList([1, 2])
    for copied in (dict(d), copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
        assert type(copied) is dict and copied == {"cpu": 1}
        copied["memory"] = 2
    for listed in (list(items), copy.copy(items), pickle.loads(pickle.dumps(items))):
        assert type(listed) is list and listed == [1, 2]
    assert d | {"memory": 2} == {"cpu": 1, "memory": 2}
    assert orjson.dumps(d) == b'{"cpu":1}' and orjson.dumps(items) == b"[1,2]"


def test_label_index_rows_without_labels_and_cleared_rows() -> None:
    index = LabelIndex(2)
    index.set_row(0, {"app": "web"})
    index.set_row(1, {})
    assert index.match("app", "In", ["web"], np.arange(2)).tolist() == [True, False]
    index.clear_row(0)
    index.grow(4)
    assert index.match("app", "Exists", [], np.arange(4)).tolist() == [False] * 4
    index.set_row(3, {"app": "db"})
    assert index.match("app", "NotIn", ["web"], np.arange(4)).tolist() == [True] * 4
    assert index.match("app", "In", ["db"], np.arange(4)).tolist() == [False] * 3 + [True]

"""deploy/: every kustomization renders, and what it renders is what we promise.

Offline checks (kubectl kustomize and our own CLI); the same manifests meet a
real kube-apiserver in test_rbac_real.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.conftest import (
    BASE,
    DEPLOY,
    NAMESPACE,
    OVERLAYS,
    REPO,
    SERVICE_ACCOUNT,
    find,
    render,
    scheduler_config_text,
)

# The daemon's requests, as (apiGroup, resource, verbs); see deploy/base/rbac.yaml.
EXPECTED_CLUSTER_RULES = {
    ("", "nodes", frozenset({"list", "watch"})),
    ("", "pods", frozenset({"list", "watch"})),
    ("", "pods", frozenset({"delete"})),
    ("", "pods/binding", frozenset({"create"})),
    ("", "pods/status", frozenset({"patch"})),
    ("", "namespaces", frozenset({"list", "watch"})),
    ("", "services", frozenset({"list", "watch"})),
    ("", "replicationcontrollers", frozenset({"list", "watch"})),
    ("apps", "replicasets", frozenset({"list", "watch"})),
    ("apps", "statefulsets", frozenset({"list", "watch"})),
    ("policy", "poddisruptionbudgets", frozenset({"list", "watch"})),
    ("events.k8s.io", "events", frozenset({"create", "patch"})),
    ("", "persistentvolumes", frozenset({"list", "watch", "update"})),
    ("", "persistentvolumeclaims", frozenset({"list", "watch", "update"})),
    *(
        ("storage.k8s.io", resource, frozenset({"list", "watch"}))
        for resource in (
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "volumeattachments",
        )
    ),
    ("resource.k8s.io", "resourceclaims", frozenset({"get", "list", "watch", "update"})),
    ("resource.k8s.io", "resourceclaims/status", frozenset({"update", "patch"})),
    ("resource.k8s.io", "resourceslices", frozenset({"list", "watch"})),
    ("resource.k8s.io", "deviceclasses", frozenset({"list", "watch"})),
}


def _rules(role: dict[str, Any]) -> set[tuple[str, str, frozenset[str]]]:
    out = set()
    for rule in role["rules"]:
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.add((group, resource, frozenset(rule["verbs"])))
    return out


def test_every_kustomization_renders(kustomization: Path) -> None:
    docs = render(kustomization)
    kinds = {d["kind"] for d in docs}
    assert {"Namespace", "ServiceAccount", "ClusterRole", "Deployment", "ConfigMap"} <= kinds
    for doc in docs:
        cluster_scoped = (
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
        )
        if doc["kind"] not in cluster_scoped:
            assert doc["metadata"].get("namespace") == NAMESPACE, doc["metadata"]


def test_cluster_role_grants_exactly_what_the_daemon_uses() -> None:
    docs = render(BASE)
    role = find(docs, "ClusterRole", "pluggable-scheduler")
    assert _rules(role) == EXPECTED_CLUSTER_RULES
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]
    binding = find(docs, "ClusterRoleBinding", "pluggable-scheduler")
    assert binding["roleRef"]["name"] == "pluggable-scheduler"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    ]


def test_the_secure_port_may_delegate_authentication_and_authorization() -> None:
    """system:auth-delegator (tokenreviews, subjectaccessreviews create), nothing more."""
    docs = render(BASE)
    binding = find(docs, "ClusterRoleBinding", "pluggable-scheduler-auth-delegator")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:auth-delegator",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    ]


def test_lease_role_is_namespaced_and_named_after_the_configured_lease() -> None:
    docs = render(BASE)
    config = yaml.safe_load(scheduler_config_text(docs))
    election = config["leaderElection"]
    assert election["leaderElect"] is True
    assert election["resourceNamespace"] == NAMESPACE
    role = find(docs, "Role", "pluggable-scheduler-leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    by_verbs = {frozenset(r["verbs"]): r for r in role["rules"]}
    assert set(by_verbs) == {frozenset({"create"}), frozenset({"get", "update"})}
    assert "resourceNames" not in by_verbs[frozenset({"create"})]
    assert by_verbs[frozenset({"get", "update"})]["resourceNames"] == [election["resourceName"]]
    for rule in role["rules"]:
        assert rule["apiGroups"] == ["coordination.k8s.io"] and rule["resources"] == ["leases"]
    binding = find(docs, "RoleBinding", "pluggable-scheduler-leader-election")
    assert binding["subjects"][0]["name"] == SERVICE_ACCOUNT


def test_deployment_is_restricted_highly_available_and_probed() -> None:
    docs = render(BASE)
    deployment = find(docs, "Deployment", "pluggable-scheduler")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == SERVICE_ACCOUNT
    assert pod["automountServiceAccountToken"] is True
    assert pod.get("schedulerName", "default-scheduler") == "default-scheduler"
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] == 65532
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["args"] == ["run", "--config", "/etc/pluggable-scheduler/config.yaml"]
    c_security = container["securityContext"]
    assert c_security["readOnlyRootFilesystem"] is True
    assert c_security["allowPrivilegeEscalation"] is False
    assert c_security["capabilities"] == {"drop": ["ALL"]}
    assert c_security["runAsUser"] == 65532
    (port,) = container["ports"]
    assert port["containerPort"] == 10259
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] == port["name"]
        # The secure port, as kube-scheduler's probes: HTTPS, no token.
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
        assert "httpHeaders" not in container[probe]["httpGet"]
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}
    spread = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
    selector = spec["selector"]["matchLabels"]
    for constraint in spread.values():
        assert constraint["labelSelector"]["matchLabels"] == selector
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/etc/pluggable-scheduler" in mounts
    pdb = find(docs, "PodDisruptionBudget", "pluggable-scheduler")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    service = find(docs, "Service", "pluggable-scheduler-metrics")
    assert service["spec"]["selector"] == selector
    assert service["spec"]["ports"][0]["port"] == 10259
    namespace = find(docs, "Namespace", NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_config_map_config_passes_config_validate(kustomization: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(scheduler_config_text(render(kustomization)))
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "config", "validate", str(config)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid (1 profile)" in result.stdout


def test_config_map_config_is_the_file_in_the_repository(kustomization: Path) -> None:
    in_repository = (kustomization / "config.yaml").read_text()
    assert scheduler_config_text(render(kustomization)) == in_repository


def test_coscheduling_overlay_enables_the_plugin_with_its_rbac_crd_and_image() -> None:
    overlay = DEPLOY / "overlays" / "coscheduling"
    assert overlay in OVERLAYS
    docs = render(overlay)
    config = yaml.safe_load(scheduler_config_text(docs))
    (profile,) = config["profiles"]
    assert {"name": "Coscheduling"} in profile["plugins"]["multiPoint"]["enabled"]
    role = find(docs, "ClusterRole", "pluggable-scheduler-coscheduling")
    assert _rules(role) == {
        ("scheduling.x-k8s.io", "podgroups", frozenset({"get", "list", "watch"})),
        ("scheduling.x-k8s.io", "podgroups/status", frozenset({"patch"})),
    }
    binding = find(docs, "ClusterRoleBinding", "pluggable-scheduler-coscheduling")
    assert binding["subjects"][0]["namespace"] == NAMESPACE
    crd = find(docs, "CustomResourceDefinition", "podgroups.scheduling.x-k8s.io")
    assert crd["spec"]["group"] == "scheduling.x-k8s.io"
    assert crd["spec"]["names"]["plural"] == "podgroups"
    image = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "ghcr.io/pluggable-scheduler/pluggable-scheduler-coscheduling:0.1.0"
    assert "pip install" in (overlay / "Dockerfile").read_text()


def test_podgroup_crd_copy_matches_the_plugins_manifest() -> None:
    source = REPO / "plugins-contrib/scheduler-plugin-coscheduling/manifests/podgroup-crd.yaml"
    copy = DEPLOY / "overlays/coscheduling/podgroup-crd.yaml"
    assert list(yaml.safe_load_all(copy.read_text())) == list(
        yaml.safe_load_all(source.read_text())
    ), f"{copy} is out of date: copy {source} over it (keeping its header comment)"


def test_example_pod_uses_our_scheduler() -> None:
    pod = yaml.safe_load((DEPLOY / "examples" / "pod.yaml").read_text())
    assert pod["kind"] == "Pod"
    assert pod["spec"]["schedulerName"] == "pluggable-scheduler"

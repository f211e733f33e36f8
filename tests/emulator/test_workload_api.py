"""kube 1.36.3's Workload API (scheduling.k8s.io/v1alpha2 Workload, PodGroup) and pods'
``spec.schedulingGroup``: what the apiserver stores and what it refuses, in its words.

Asserted on both backends: the real kube-apiserver runs with GenericWorkload on and
the v1alpha2 API enabled (scheduler.tools.controlplane.FEATURE_GATES / RUNTIME_CONFIG).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.model.names import dns1123_label_errors, dns1123_subdomain_errors

from .kube_helpers import pod, raw
from .test_validation import causes

Obj = dict[str, Any]
API = "/apis/scheduling.k8s.io/v1alpha2"
Cause = tuple[str, str, str]


def workload(name: str, *templates: Obj, **spec: Any) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroupTemplates": list(templates), **spec},
    }


def template(name: str = "workers", **policy: Any) -> Obj:
    return {"name": name, "schedulingPolicy": policy or {"gang": {"minCount": 2}}}


def pod_group(name: str, ref: Any = None, **policy: Any) -> Obj:
    spec: Obj = {"schedulingPolicy": policy}
    if ref is not None:
        spec["podGroupTemplateRef"] = ref
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def member(name: str, group: Any) -> Obj:
    body = pod(name)
    body["spec"]["schedulingGroup"] = group
    return body


def bad(path: str, value: str, why: str) -> Cause:
    shown = f'"{value}"' if value != "null" else value
    return (path, "FieldValueInvalid", f"Invalid value: {shown}: {why}")


def need(path: str) -> Cause:
    return (path, "FieldValueRequired", "Required value")


UNION = "must specify one of: `basic`, `gang`"
REF = {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}}

WORKLOAD_CASES: list[tuple[str, Obj, set[Cause]]] = [
    ("no-templates", workload("w"), {need("spec.podGroupTemplates")}),
    (
        "no-policy",
        workload("w", {"name": "t", "schedulingPolicy": {}}),
        {bad("spec.podGroupTemplates[0].schedulingPolicy", "", UNION)},
    ),
    (
        "two-policies",
        workload("w", template("t", basic={}, gang={"minCount": 1})),
        {
            bad(
                "spec.podGroupTemplates[0].schedulingPolicy",
                "{basic, gang}",
                "must specify exactly one of: `basic`, `gang`",
            )
        },
    ),
    (
        "min-count-zero",
        workload("w", template("t", gang={"minCount": 0})),
        {need("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")},
    ),
    (
        "template-name",
        workload("w", template("T_1")),
        {bad("spec.podGroupTemplates[0].name", "T_1", m) for m in dns1123_label_errors("T_1")},
    ),
    (
        "duplicate-template",
        workload("w", template("a", basic={}), template("a", basic={})),
        {
            (
                "spec.podGroupTemplates[1]",
                "FieldValueDuplicate",
                'Duplicate value: {"name":"a","schedulingPolicy":{"basic":{}},'
                '"schedulingConstraints":null}',
            )
        },
    ),
    (
        "nine-templates",
        workload("w", *(template(f"t{i}", basic={}) for i in range(9))),
        {("spec.podGroupTemplates", "FieldValueTooMany", "Too many: 9: must have at most 8 items")},
    ),
    (
        "controller-ref",
        workload("w", template(), controllerRef={"kind": "", "name": "x/y"}),
        {
            need("spec.controllerRef.kind"),
            bad("spec.controllerRef.name", "x/y", "may not contain '/'"),
        },
    ),
]

POD_GROUP_CASES: list[tuple[str, Obj, set[Cause]]] = [
    ("no-policy", pod_group("g"), {bad("spec.schedulingPolicy", "", UNION)}),
    (
        "min-count-negative",
        pod_group("g", gang={"minCount": -1}),
        {
            (
                "spec.schedulingPolicy.gang.minCount",
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 1",
            )
        },
    ),
    ("min-count-missing", pod_group("g", gang={}), {need("spec.schedulingPolicy.gang.minCount")}),
    (
        "ref-without-workload",
        pod_group("g", {}, basic={}),
        {bad("spec.podGroupTemplateRef", "", "must specify one of: `workload`")},
    ),
    (
        "bad-ref",
        pod_group("g", {"workload": {"workloadName": "W_x", "podGroupTemplateName": ""}}, basic={}),
        {
            *(
                bad("spec.podGroupTemplateRef.workload.workloadName", "W_x", m)
                for m in dns1123_subdomain_errors("W_x")
            ),
            need("spec.podGroupTemplateRef.workload.podGroupTemplateName"),
        },
    ),
]


async def refused(api: client.ApiClient, path: str, body: Obj) -> set[Cause]:
    status, answer, _ = await raw(api, "POST", path, body=body)
    assert status == 422, answer
    return causes(answer)


@pytest.mark.parametrize(
    ("case", "body", "expected"), WORKLOAD_CASES, ids=[c[0] for c in WORKLOAD_CASES]
)
async def test_invalid_workloads(
    api_client: client.ApiClient, namespace: str, case: str, body: Obj, expected: set[Cause]
) -> None:
    assert await refused(api_client, f"{API}/namespaces/{namespace}/workloads", body) == expected


@pytest.mark.parametrize(
    ("case", "body", "expected"), POD_GROUP_CASES, ids=[c[0] for c in POD_GROUP_CASES]
)
async def test_invalid_pod_groups(
    api_client: client.ApiClient, namespace: str, case: str, body: Obj, expected: set[Cause]
) -> None:
    assert await refused(api_client, f"{API}/namespaces/{namespace}/podgroups", body) == expected


async def test_stored_forms_defaults_and_immutability(
    api_client: client.ApiClient, namespace: str
) -> None:
    workloads = f"{API}/namespaces/{namespace}/workloads"
    groups = f"{API}/namespaces/{namespace}/podgroups"
    gated = {**template(), "disruptionMode": "PodGroup", "priority": 5}
    status, stored, _ = await raw(api_client, "POST", workloads, body=workload("train", gated))
    assert status == 201, stored
    # WorkloadAwarePreemption is off: its fields are dropped; no template default.
    assert stored["spec"] == {
        "podGroupTemplates": [
            {
                "name": "workers",
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": None,
            }
        ]
    }
    body = pod_group("train-0", REF, gang={"minCount": 2})
    body["status"] = {"conditions": [{"type": "X", "status": "True"}]}
    status, group, _ = await raw(api_client, "POST", groups, body=body)
    assert status == 201, group
    assert group["spec"] == {
        "podGroupTemplateRef": REF,
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "disruptionMode": "Pod",
    }
    assert group["status"] == {}
    assert group["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    status, plain, _ = await raw(api_client, "POST", groups, body=pod_group("solo", basic={}))
    assert status == 201 and plain["spec"]["podGroupTemplateRef"] is None

    # Specs are immutable; metadata is not.
    changed = dict(stored, spec={"podGroupTemplates": [template(basic={})]})
    status, answer, _ = await raw(api_client, "PUT", f"{workloads}/train", body=changed)
    assert status == 422 and causes(answer) == {
        bad("spec.podGroupTemplates", "null", "field is immutable")
    }
    changed = dict(group, spec={**group["spec"], "schedulingPolicy": {"gang": {"minCount": 3}}})
    status, answer, _ = await raw(api_client, "PUT", f"{groups}/train-0", body=changed)
    assert status == 422 and causes(answer) == {
        bad("spec.schedulingPolicy", "null", "field is immutable")
    }
    labelled = dict(group, metadata={**group["metadata"], "labels": {"team": "ml"}})
    status, answer, _ = await raw(api_client, "PUT", f"{groups}/train-0", body=labelled)
    assert status == 200 and answer["metadata"]["labels"] == {"team": "ml"}

    # The status subresource writes the status and nothing else.
    condition = {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "waiting",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    update = dict(
        answer, status={"conditions": [condition]}, spec={"schedulingPolicy": {"basic": {}}}
    )
    status, answer, _ = await raw(api_client, "PUT", f"{groups}/train-0/status", body=update)
    assert status == 200, answer
    assert answer["status"]["conditions"][0]["reason"] == "Unschedulable"
    assert answer["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}

    # PodGroupProtection: deleting leaves the group until its finalizer goes.
    status, answer, _ = await raw(api_client, "DELETE", f"{groups}/solo")
    assert status == 200 and answer["metadata"]["deletionTimestamp"]
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        f"{groups}/solo",
        body={"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert status == 200, answer
    status, _, _ = await raw(api_client, "GET", f"{groups}/solo")
    assert status == 404


async def test_pod_scheduling_group_is_validated_and_immutable(
    api_client: client.ApiClient, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    assert await refused(api_client, pods, member("a", {})) == {
        bad("spec.schedulingGroup.podGroupName", "null", "must specify one of: `podGroupName`")
    }
    assert await refused(api_client, pods, member("b", {"podGroupName": "G_1"})) == {
        bad("spec.schedulingGroup.podGroupName", "G_1", m) for m in dns1123_subdomain_errors("G_1")
    }
    # The group need not exist yet.
    status, stored, _ = await raw(
        api_client, "POST", pods, body=member("c", {"podGroupName": "g1"})
    )
    assert status == 201 and stored["spec"]["schedulingGroup"] == {"podGroupName": "g1"}
    stored["spec"]["schedulingGroup"] = {"podGroupName": "g2"}
    status, answer, _ = await raw(api_client, "PUT", f"{pods}/c", body=stored)
    assert status == 422
    ((path, reason, message),) = causes(answer)
    assert (path, reason) == ("spec", "FieldValueForbidden")
    assert message.startswith("Forbidden: pod updates may not change fields other than ")


async def test_discovery_serves_the_workload_api(api_client: client.ApiClient) -> None:
    status, answer, _ = await raw(api_client, "GET", API)
    assert status == 200
    resources = {r["name"]: r for r in answer["resources"]}
    assert sorted(resources) == ["podgroups", "podgroups/status", "workloads"]
    assert resources["workloads"]["kind"] == "Workload" and resources["workloads"]["namespaced"]
    assert resources["podgroups"]["verbs"] == [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    status, group, _ = await raw(api_client, "GET", "/apis/scheduling.k8s.io")
    assert status == 200 and group["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]


async def test_kubectl_get_tables_match_kube(api_client: client.ApiClient, namespace: str) -> None:
    from scheduler.simulation.emulator.tablecolumns import POD_GROUP_COLUMNS, WORKLOAD_COLUMNS

    from .test_tables import KUBECTL_ACCEPT, _defs, _row

    workloads = f"{API}/namespaces/{namespace}/workloads"
    groups = f"{API}/namespaces/{namespace}/podgroups"
    await raw(api_client, "POST", workloads, body=workload("train", template()))
    await raw(api_client, "POST", groups, body=pod_group("train-0", REF, gang={"minCount": 2}))
    await raw(api_client, "POST", groups, body=pod_group("solo", basic={}))
    condition = {
        "type": "PodGroupScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        f"{groups}/train-0/status",
        body={"status": {"conditions": [condition]}},
        content_type="application/merge-patch+json",
    )
    assert status == 200, answer
    status, table, _ = await raw(api_client, "GET", workloads, accept=KUBECTL_ACCEPT)
    assert status == 200 and table["columnDefinitions"] == _defs(WORKLOAD_COLUMNS)
    assert _row(table, "train", 1) == ["train"]
    status, table, _ = await raw(api_client, "GET", groups, accept=KUBECTL_ACCEPT)
    assert status == 200 and table["columnDefinitions"] == _defs(POD_GROUP_COLUMNS)
    assert _row(table, "train-0", 4) == ["train-0", "Gang", "train", "Scheduled"]
    assert _row(table, "solo", 4) == ["solo", "Basic", "<none>", "Pending"]

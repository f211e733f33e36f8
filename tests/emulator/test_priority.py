"""Priority admission and PriorityClasses, as kube-apiserver's Priority plugin does them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from .kube_helpers import pod, raw

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def priority_class(name: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


@pytest.fixture
async def classes(api_client: client.ApiClient) -> AsyncIterator[list[str]]:
    """Names of priority classes a test creates; deleted afterwards (they are cluster-wide)."""
    created: list[str] = []
    yield created
    for name in created:
        await raw(api_client, "DELETE", f"{PCS}/{name}")


async def make_class(
    api: client.ApiClient, created: list[str], value: Any, **extra: Any
) -> tuple[int, Any]:
    name = f"pc-{uuid.uuid4().hex[:8]}"
    status, answer, _ = await raw(api, "POST", PCS, body=priority_class(name, value, **extra))
    if status == 201:
        created.append(name)
    return status, answer


def with_spec(name: str, **spec: Any) -> dict[str, Any]:
    body = pod(name)
    body["spec"].update(spec)
    return body


async def create(api: client.ApiClient, namespace: str, body: Any) -> tuple[int, Any]:
    status, answer, _ = await raw(api, "POST", f"/api/v1/namespaces/{namespace}/pods", body=body)
    return status, answer


async def test_system_priority_classes_exist(api_client: client.ApiClient) -> None:
    status, answer, _ = await raw(api_client, "GET", PCS)
    assert status == 200
    found = {i["metadata"]["name"]: i for i in answer["items"]}
    assert found["system-cluster-critical"]["value"] == 2000000000
    assert found["system-node-critical"]["value"] == 2000001000
    for name in ("system-cluster-critical", "system-node-critical"):
        assert found[name]["preemptionPolicy"] == "PreemptLowerPriority"
        status, answer, _ = await raw(api_client, "DELETE", f"{PCS}/{name}")
        assert status == 403 and answer["message"] == (
            f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: '
            "this is a system priority class and cannot be deleted"
        )


async def test_pod_without_class_gets_priority_zero(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, answer = await create(api_client, namespace, pod("p0"))
    assert status == 201
    assert answer["spec"]["priority"] == 0
    assert answer["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    status, answer = await create(api_client, namespace, with_spec("p1", priority=0))
    assert status == 201
    status, answer = await create(api_client, namespace, with_spec("p2", priority=5))
    assert status == 403 and answer["reason"] == "Forbidden"
    assert answer["message"] == (
        'pods "p2" is forbidden: the integer value of priority (5) must not be provided in pod '
        "spec; priority admission controller computed 0 from the given PriorityClass name"
    )
    status, answer = await create(api_client, namespace, with_spec("p3", preemptionPolicy="Foo"))
    assert status == 403 and answer["message"] == (
        'pods "p3" is forbidden: the string value of PreemptionPolicy (Foo) must not be '
        "provided in pod spec; priority admission controller computed PreemptLowerPriority "
        "from the given PriorityClass name"
    )


async def test_class_resolves_priority_and_preemption_policy(
    api_client: client.ApiClient, namespace: str, classes: list[str]
) -> None:
    status, answer = await make_class(api_client, classes, 1000, preemptionPolicy="Never")
    assert status == 201, answer
    name = classes[0]
    status, answer = await create(api_client, namespace, with_spec("c1", priorityClassName=name))
    assert status == 201
    assert answer["spec"]["priority"] == 1000 and answer["spec"]["preemptionPolicy"] == "Never"
    status, answer = await create(
        api_client, namespace, with_spec("c2", priorityClassName=name, priority=1000)
    )
    assert status == 201
    status, answer = await create(
        api_client, namespace, with_spec("c3", priorityClassName=name, priority=5)
    )
    assert status == 403 and "computed 1000 from the given PriorityClass name" in answer["message"]
    status, answer = await create(
        api_client,
        namespace,
        with_spec("c4", priorityClassName=name, preemptionPolicy="PreemptLowerPriority"),
    )
    assert status == 403 and answer["message"].endswith(
        "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in "
        "pod spec; priority admission controller computed Never from the given "
        "PriorityClass name"
    )
    status, answer = await create(
        api_client, namespace, with_spec("c5", priorityClassName="system-node-critical")
    )
    assert status == 201 and answer["spec"]["priority"] == 2000001000


async def test_missing_class_is_forbidden_before_validation(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, answer = await create(api_client, namespace, with_spec("m1", priorityClassName="nope"))
    assert status == 403 and answer["message"] == (
        'pods "m1" is forbidden: no PriorityClass with name nope was found'
    )
    # Admission runs before validation: an invalid name still gets the 403.
    status, answer = await create(api_client, namespace, with_spec("M_1", priorityClassName="nope"))
    assert status == 403
    status, answer = await create(api_client, namespace, with_spec("M_2", priority=7))
    assert status == 403


async def test_priority_is_immutable_and_kept_on_update(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, created = await create(api_client, namespace, pod("imm"))
    assert status == 201
    path = f"/api/v1/namespaces/{namespace}/pods/imm"
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        path,
        body={"spec": {"priority": 3}},
        content_type="application/merge-patch+json",
    )
    assert status == 422 and answer["details"]["causes"][0]["field"] == "spec"
    # A PUT without priority keeps the admitted one.
    body = dict(created)
    body["spec"] = {
        k: v for k, v in created["spec"].items() if k not in ("priority", "preemptionPolicy")
    }
    body["metadata"] = {**created["metadata"], "labels": {"x": "y"}}
    status, answer, _ = await raw(api_client, "PUT", path, body=body)
    assert status == 200, answer
    assert answer["spec"]["priority"] == 0 and answer["metadata"]["labels"] == {"x": "y"}


async def test_priority_class_validation(api_client: client.ApiClient, classes: list[str]) -> None:
    status, answer = await make_class(api_client, classes, 2000000000)
    assert status == 422 and {(c["field"], c["message"]) for c in answer["details"]["causes"]} == {
        ("value", "Forbidden: maximum allowed value of a user defined priority is 1000000000")
    }
    assert answer["message"].startswith("PriorityClass.scheduling.k8s.io ")
    status, answer = await make_class(api_client, classes, 10, preemptionPolicy="Foo")
    assert status == 422 and answer["details"]["causes"][0]["field"] == "preemptionPolicy"
    status, answer = await make_class(api_client, classes, "10")
    assert status == 400 and answer["message"] == (
        'PriorityClass in version "v1" cannot be handled as a PriorityClass: json: cannot '
        "unmarshal string into Go struct field PriorityClass.value of type int32"
    )
    name = f"system-x{uuid.uuid4().hex[:6]}"
    status, answer, _ = await raw(api_client, "POST", PCS, body=priority_class(name, 10))
    assert status == 422 and answer["details"]["causes"][0]["message"] == (
        "Forbidden: priority class names with 'system-' prefix are reserved for system use "
        f"only. error: {name} is not a known system priority class"
    )
    status, answer = await make_class(api_client, classes, 10)
    assert status == 201 and answer["preemptionPolicy"] == "PreemptLowerPriority"
    answer["value"] = 11
    status, answer, _ = await raw(api_client, "PUT", f"{PCS}/{classes[-1]}", body=answer)
    assert status == 422 and (
        answer["details"]["causes"][0]["field"],
        answer["details"]["causes"][0]["message"],
    ) == ("value", "Forbidden: may not be changed in an update.")


async def test_global_default_class(
    api_client: client.ApiClient, namespace: str, classes: list[str]
) -> None:
    status, _ = await make_class(api_client, classes, 77, globalDefault=True)
    assert status == 201
    default = classes[0]
    status, answer = await make_class(api_client, classes, 78, globalDefault=True)
    assert status == 403 and answer["message"].endswith(
        f"is forbidden: PriorityClass {default} is already marked as default. "
        "Only one default can exist"
    )
    status, answer = await create(api_client, namespace, pod("gd"))
    assert status == 201
    assert answer["spec"]["priority"] == 77 and answer["spec"]["priorityClassName"] == default
    status, answer = await create(api_client, namespace, with_spec("gd0", priority=0))
    assert status == 403 and "computed 77 from the given PriorityClass name" in answer["message"]

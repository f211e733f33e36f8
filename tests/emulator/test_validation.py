"""What kube-apiserver refuses before storing a pod or node: decoding (400), validation (422).

Asserted on both backends; the expected values are the real apiserver's answers.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from .kube_helpers import pod, raw

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
QUANTITY_MSG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def with_spec(name: str, **spec: Any) -> dict[str, Any]:
    body = pod(name)
    body["spec"].update(spec)
    return body


def with_resources(name: str, resources: Any) -> dict[str, Any]:
    return with_spec(name, containers=[{"name": "c", "image": "i", "resources": resources}])


async def create(api: client.ApiClient, namespace: str, body: Any) -> tuple[int, Any]:
    status, answer, _ = await raw(api, "POST", f"/api/v1/namespaces/{namespace}/pods", body=body)
    return status, answer


def causes(answer: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(c["field"], c["reason"], c["message"]) for c in answer["details"].get("causes") or []}


DECODE_ERRORS = [
    (
        with_spec("a", containers="x"),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers "
        "of type []v1.Container",
    ),
    (
        with_spec("a", containers=["x"]),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers "
        "of type v1.Container",
    ),
    (
        with_spec("a", tolerations="x"),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.tolerations "
        "of type []v1.Toleration",
    ),
    (
        with_resources("a", {"requests": ["1"]}),
        "json: cannot unmarshal array into Go struct field "
        "ResourceRequirements.spec.containers.resources.requests of type v1.ResourceList",
    ),
    (
        with_resources("a", "x"),
        "json: cannot unmarshal string into Go struct field "
        "Container.spec.containers.resources of type v1.ResourceRequirements",
    ),
    (
        {**pod("a"), "metadata": {"name": "a", "labels": {"a": 1}}},
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels "
        "of type string",
    ),
    (
        {**pod("a"), "metadata": {"name": "a", "labels": {"a": True}}},
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels "
        "of type string",
    ),
    (
        {**pod("a"), "metadata": {"name": "a", "annotations": ["x"]}},
        "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations "
        "of type map[string]string",
    ),
    (
        {**pod("a"), "metadata": {"name": 5}},
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name "
        "of type string",
    ),
    (
        {**pod("a"), "spec": "x"},
        "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
    ),
    (
        with_spec("a", nodeSelector={"zone": 1}),
        "json: cannot unmarshal number into Go struct field PodSpec.spec.nodeSelector "
        "of type string",
    ),
    (
        with_spec("a", priority="x"),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32",
    ),
    (
        with_spec("a", priority=1.5),
        "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority "
        "of type int32",
    ),
    (
        with_spec(
            "a",
            tolerations=[
                {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": "5"}
            ],
        ),
        "json: cannot unmarshal string into Go struct field "
        "Toleration.spec.tolerations.tolerationSeconds of type int64",
    ),
    (
        with_spec("a", affinity="x"),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.affinity "
        "of type v1.Affinity",
    ),
    (with_resources("a", {"requests": {"cpu": "abc"}}), QUANTITY_MSG),
    (with_resources("a", {"limits": {"memory": ""}}), QUANTITY_MSG),
    # A bad quantity wins over an earlier type error, as in encoding/json.
    (
        {
            **with_resources("a", {"requests": {"cpu": "abc"}}),
            "metadata": {"name": "a", "labels": {"x": 1}},
        },
        QUANTITY_MSG,
    ),
]


@pytest.mark.parametrize(("body", "message"), DECODE_ERRORS)
async def test_wrongly_typed_fields_are_400(
    api_client: client.ApiClient, namespace: str, body: dict[str, Any], message: str
) -> None:
    status, answer = await create(api_client, namespace, body)
    assert status == 400, answer
    assert answer["reason"] == "BadRequest"
    assert answer["message"] == f'Pod in version "v1" cannot be handled as a Pod: {message}'


async def test_decoding_comes_before_namespace_and_validation(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, answer = await create(
        api_client, "no-such-namespace-d1", with_spec("B_1", priority="x")
    )
    assert status == 400 and answer["reason"] == "BadRequest"
    status, answer = await create(api_client, "no-such-namespace-d1", pod("B_1"))
    assert status == 404 and answer["reason"] == "NotFound"


async def test_quantities_are_stored_canonical(
    api_client: client.ApiClient, namespace: str
) -> None:
    cases = {
        "q1": ({"cpu": 1, "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"}),
        "q2": ({"cpu": 0.5, "memory": "1.5Gi"}, {"cpu": "500m", "memory": "1536Mi"}),
        "q3": ({"cpu": "1000m", "memory": "1e3"}, {"cpu": "1", "memory": "1e3"}),
        "q4": ({"cpu": None, "memory": "0.0001"}, {"cpu": "0", "memory": "1m"}),
        "q5": (
            {"cpu": "100m", "memory": "129M", "ephemeral-storage": "1.1Gi"},
            {"cpu": "100m", "memory": "129M", "ephemeral-storage": "1181116006400m"},
        ),
        "q6": ({"cpu": "0.1", "memory": "1000Ki"}, {"cpu": "100m", "memory": "1000Ki"}),
    }
    for name, (given, stored) in cases.items():
        status, answer = await create(
            api_client, namespace, with_resources(name, {"requests": given})
        )
        assert status == 201, answer
        assert answer["spec"]["containers"][0]["resources"]["requests"] == stored, name
        assert answer["status"]["qosClass"] == "Burstable"


def test_a_quantity_text_is_parsed_once_and_a_bad_one_fails_each_time() -> None:
    from scheduler.simulation.emulator import quantity

    first = quantity.parse("250m")
    assert quantity.parse("250m") is first  # remembered
    assert str(first) == "250m" and first.milli == 250
    assert str(quantity.parse("1000m").round_up_milli()) == "1"
    messages = []
    for _ in range(2):
        with pytest.raises(quantity.QuantityError) as info:
            quantity.parse("1.2.3")
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "quantit" in messages[0]


async def test_null_label_value_is_empty_string(
    api_client: client.ApiClient, namespace: str
) -> None:
    body = {**pod("nl"), "metadata": {"name": "nl", "labels": {"a": None}}}
    status, answer = await create(api_client, namespace, body)
    assert status == 201 and answer["metadata"]["labels"] == {"a": ""}


INVALID = [
    (
        with_resources("v1", {"requests": {"cpu": "-1"}}),
        {
            (
                "spec.containers[0].resources.requests[cpu]",
                "FieldValueInvalid",
                'Invalid value: "-1": must be greater than or equal to 0',
            )
        },
    ),
    (
        with_resources("v2", {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        {
            (
                "spec.containers[0].resources.requests",
                "FieldValueInvalid",
                'Invalid value: "2": must be less than or equal to cpu limit of 1',
            )
        },
    ),
    (
        with_resources("v3", {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}),
        {
            (
                "spec.containers[0].resources.requests",
                "FieldValueInvalid",
                'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
            )
        },
    ),
    (
        with_resources("v4", {"requests": {"example.com/foo": "1"}}),
        {
            (
                "spec.containers[0].resources.limits",
                "FieldValueRequired",
                "Required value: Limit must be set for non overcommitable resources",
            )
        },
    ),
    (
        with_resources(
            "v5", {"requests": {"example.com/foo": "500m"}, "limits": {"example.com/foo": "500m"}}
        ),
        {
            (
                "spec.containers[0].resources.limits[example.com/foo]",
                "FieldValueInvalid",
                'Invalid value: "500m": must be an integer',
            ),
            (
                "spec.containers[0].resources.requests[example.com/foo]",
                "FieldValueInvalid",
                'Invalid value: "500m": must be an integer',
            ),
        },
    ),
    (
        with_resources("v6", {"requests": {"foo": "1"}}),
        {
            (
                "spec.containers[0].resources.requests[foo]",
                "FieldValueInvalid",
                'Invalid value: "foo": must be a standard resource type or fully qualified',
            ),
            (
                "spec.containers[0].resources.requests[foo]",
                "FieldValueInvalid",
                'Invalid value: "foo": must be a standard resource for containers',
            ),
        },
    ),
    (
        {**pod("v7"), "metadata": {"name": "v7", "labels": {"a" * 64: "v"}}},
        {
            (
                "metadata.labels",
                "FieldValueInvalid",
                f'Invalid value: "{"a" * 64}": name part must be no more than 63 bytes',
            )
        },
    ),
    (
        {**pod("v8"), "metadata": {"name": "v8", "labels": {"k": "a" * 64}}},
        {
            (
                "metadata.labels",
                "FieldValueInvalid",
                f'Invalid value: "{"a" * 64}": must be no more than 63 bytes',
            )
        },
    ),
    (
        {**pod("v9"), "metadata": {"name": "v9", "labels": {"k": "a b"}}},
        {("metadata.labels", "FieldValueInvalid", f'Invalid value: "a b": {LABEL_VALUE_MSG}')},
    ),
    (
        {**pod("v10"), "metadata": {"name": "v10", "labels": {"Foo_/x": "v"}}},
        {
            (
                "metadata.labels",
                "FieldValueInvalid",
                f'Invalid value: "Foo_/x": prefix part {SUBDOMAIN_MSG}',
            )
        },
    ),
    (
        {**pod("v10b"), "metadata": {"name": "v10b", "labels": {"a/b/c": "v"}}},
        {
            (
                "metadata.labels",
                "FieldValueInvalid",
                'Invalid value: "a/b/c": a valid label key must consist of alphanumeric '
                "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            )
        },
    ),
    (
        {**pod("v10c"), "metadata": {"name": "v10c", "labels": {"a" * 254 + "/b": "v"}}},
        {
            (
                "metadata.labels",
                "FieldValueInvalid",
                f'Invalid value: "{"a" * 254}/b": prefix part must be no more than 253 bytes',
            )
        },
    ),
    (
        {**pod("v10d"), "metadata": {"name": "A" * 254}},
        {
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{"A" * 254}": must be no more than 253 characters',
            ),
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{"A" * 254}": {SUBDOMAIN_MSG}',
            ),
        },
    ),
    (
        {**pod("v11"), "metadata": {"name": "v11", "annotations": {"k": "x" * 262144}}},
        {
            (
                "metadata.annotations",
                "FieldValueTooLong",
                "Too long: may not be more than 262144 bytes",
            )
        },
    ),
    (
        with_spec("v12", tolerations=[{"key": "k", "operator": "Foo", "effect": "NoSchedule"}]),
        {
            (
                "spec.tolerations[0].operator",
                "FieldValueNotSupported",
                'Unsupported value: "Foo": supported values: "Equal", "Exists"',
            )
        },
    ),
    (
        with_spec("v13", tolerations=[{"key": "k", "operator": "Exists", "effect": "Foo"}]),
        {
            (
                "spec.tolerations[0].effect",
                "FieldValueNotSupported",
                'Unsupported value: "Foo": supported values: "NoSchedule", '
                '"PreferNoSchedule", "NoExecute"',
            )
        },
    ),
    (
        with_spec("v14", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        {
            (
                "spec.tolerations[0].operator",
                "FieldValueInvalid",
                "Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
            )
        },
    ),
    (
        with_spec(
            "v15",
            tolerations=[
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
            ],
        ),
        {
            (
                "spec.tolerations[0].effect",
                "FieldValueInvalid",
                "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
                "`tolerationSeconds` is set",
            )
        },
    ),
    (
        with_spec("v16", containers=[{"image": "i"}]),
        {("spec.containers[0].name", "FieldValueRequired", "Required value")},
    ),
    (
        with_spec("v17", containers=[{"name": "c"}]),
        {("spec.containers[0].image", "FieldValueRequired", "Required value")},
    ),
    (
        with_spec("v18", containers=[{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]),
        {("spec.containers[1].name", "FieldValueDuplicate", 'Duplicate value: "c"')},
    ),
    (
        with_spec("v19", initContainers=[{"name": "c", "image": "i"}]),
        {("spec.initContainers[0].name", "FieldValueDuplicate", 'Duplicate value: "c"')},
    ),
    (
        with_spec("v20", nodeName="A B"),
        {("spec.nodeName", "FieldValueInvalid", f'Invalid value: "A B": {SUBDOMAIN_MSG}')},
    ),
    (
        with_spec("v21", restartPolicy="Foo"),
        {
            (
                "spec.restartPolicy",
                "FieldValueNotSupported",
                'Unsupported value: "Foo": supported values: "Always", "OnFailure", "Never"',
            )
        },
    ),
    (
        with_spec(
            "v22",
            topologySpreadConstraints=[
                {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Foo"}
            ],
        ),
        {
            (
                "spec.topologySpreadConstraints[0].maxSkew",
                "FieldValueInvalid",
                "Invalid value: 0: must be greater than zero",
            ),
            (
                "spec.topologySpreadConstraints[0].topologyKey",
                "FieldValueRequired",
                "Required value: can not be empty",
            ),
            (
                "spec.topologySpreadConstraints[0].whenUnsatisfiable",
                "FieldValueNotSupported",
                'Unsupported value: "Foo": supported values: "DoNotSchedule", "ScheduleAnyway"',
            ),
        },
    ),
    (
        with_spec(
            "v23",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "a", "operator": "Foo"}]}
                        ]
                    }
                }
            },
        ),
        {
            (
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[0].matchExpressions[0].operator",
                "FieldValueInvalid",
                'Invalid value: "Foo": not a valid selector operator',
            )
        },
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID)
async def test_invalid_pods_are_422(
    api_client: client.ApiClient,
    namespace: str,
    body: dict[str, Any],
    expected: set[tuple[str, str, str]],
) -> None:
    status, answer = await create(api_client, namespace, body)
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert causes(answer) == expected
    name = body["metadata"]["name"]
    assert answer["message"].startswith(f'Pod "{name}" is invalid: ')
    if len(expected) == 1:
        ((field, _, message),) = expected
        assert answer["message"] == f'Pod "{name}" is invalid: {field}: {message}'


async def test_invalid_name_and_generate_name(api_client: client.ApiClient, namespace: str) -> None:
    status, answer = await create(
        api_client, namespace, {**pod("x"), "metadata": {"generateName": "A_"}}
    )
    assert status == 422
    fields = [c["field"] for c in answer["details"]["causes"]]
    assert fields == ["metadata.generateName", "metadata.name"]
    status, answer = await create(
        api_client, namespace, {**pod("x"), "metadata": {"generateName": "ok-"}}
    )
    assert status == 201 and answer["metadata"]["name"].startswith("ok-")


async def test_namespace_names_are_dns_labels(api_client: client.ApiClient) -> None:
    status, answer, _ = await raw(
        api_client, "POST", "/api/v1/namespaces", body={"metadata": {"name": "not.a.label"}}
    )
    assert status == 422, answer
    assert causes(answer) == {
        (
            "metadata.name",
            "FieldValueInvalid",
            'Invalid value: "not.a.label": must not contain dots',
        )
    }


async def test_updates_are_validated_too(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("u"))
    base = f"/api/v1/namespaces/{namespace}/pods/u"
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        base,
        body={"metadata": {"labels": {"a": "b c"}}},
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 422 and {c["field"] for c in answer["details"]["causes"]} == {
        "metadata.labels"
    }
    # A patch that leaves a wrongly typed field is refused on the field "patch".
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        base,
        body={"metadata": {"labels": {"a": 1}}},
        content_type="application/merge-patch+json",
    )
    assert status == 422 and answer["reason"] == "Invalid"
    (cause,) = answer["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels "
        "of type string"
    )
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        base + "/status",
        body={"status": {"nominatedNodeName": "A B"}},
        content_type="application/merge-patch+json",
    )
    assert status == 422
    assert causes(answer) == {
        ("status.nominatedNodeName", "FieldValueInvalid", f'Invalid value: "A B": {SUBDOMAIN_MSG}')
    }
    current = (await raw(api_client, "GET", base))[1]
    current["metadata"]["labels"] = {"a": 1}
    status, answer, _ = await raw(api_client, "PUT", base, body=current)
    assert status == 400 and answer["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into '
        "Go struct field ObjectMeta.metadata.labels of type string"
    )


async def test_pod_overhead_is_refused_without_runtime_class(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, answer = await create(api_client, namespace, with_spec("oh", overhead={"cpu": "1"}))
    assert status == 403 and answer["message"] == (
        'pods "oh" is forbidden: pod rejected: Pod Overhead set without corresponding '
        "RuntimeClass defined Overhead"
    )


# -- nodes ------------------------------------------------------------------------


def node(name: str, *, spec: Any = None, status: Any = None, labels: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec if spec is not None else {},
        "status": status if status is not None else {},
    }


async def create_node(api: client.ApiClient, body: Any) -> tuple[int, Any]:
    status, answer, _ = await raw(api, "POST", "/api/v1/nodes", body=body)
    if status == 201:
        await raw(api, "DELETE", f"/api/v1/nodes/{body['metadata']['name']}")
    return status, answer


async def test_node_capacity_defaults_allocatable_and_is_canonical(
    api_client: client.ApiClient, namespace: str
) -> None:
    status, answer = await create_node(
        api_client,
        node(f"{namespace}-a", status={"capacity": {"cpu": 4, "pods": 110, "memory": "4096Mi"}}),
    )
    assert status == 201
    expected = {"cpu": "4", "pods": "110", "memory": "4Gi"}
    assert answer["status"]["capacity"] == expected
    assert answer["status"]["allocatable"] == expected


NODE_INVALID = [
    (
        {"status": {"capacity": {"cpu": "-1"}}},
        {
            (
                "status.capacity.cpu",
                "FieldValueInvalid",
                'Invalid value: "-1": must be greater than or equal to 0',
            ),
            (
                "status.allocatable.cpu",
                "FieldValueInvalid",
                'Invalid value: "-1": must be greater than or equal to 0',
            ),
        },
    ),
    (
        {"status": {"capacity": {"pods": "1.5"}}},
        {
            (
                "status.capacity.pods",
                "FieldValueInvalid",
                'Invalid value: "1500m": must be an integer',
            ),
            (
                "status.allocatable.pods",
                "FieldValueInvalid",
                'Invalid value: "1500m": must be an integer',
            ),
        },
    ),
    (
        {"spec": {"taints": [{"key": "k", "effect": "Foo"}]}},
        {
            (
                "metadata.taints[0].effect",
                "FieldValueNotSupported",
                'Unsupported value: "Foo": supported values: "NoSchedule", '
                '"PreferNoSchedule", "NoExecute"',
            )
        },
    ),
    (
        {"spec": {"taints": [{"key": "k"}]}},
        {("metadata.taints[0].effect", "FieldValueRequired", "Required value")},
    ),
    (
        {"spec": {"taints": [{"key": "k", "value": "a b", "effect": "NoSchedule"}]}},
        {
            (
                "metadata.taints[0].value",
                "FieldValueInvalid",
                f'Invalid value: "a b": {LABEL_VALUE_MSG}',
            )
        },
    ),
    (
        {
            "spec": {
                "taints": [
                    {"key": "k", "effect": "NoSchedule"},
                    {"key": "k", "effect": "NoSchedule"},
                ]
            }
        },
        {
            (
                "metadata.taints[1]",
                "FieldValueDuplicate",
                'Duplicate value: {"Key":"k","Value":"","Effect":"NoSchedule","TimeAdded":null}: '
                "taints must be unique by key and effect pair",
            )
        },
    ),
]


@pytest.mark.parametrize(("parts", "expected"), NODE_INVALID)
async def test_invalid_nodes_are_422(
    api_client: client.ApiClient,
    namespace: str,
    parts: dict[str, Any],
    expected: set[tuple[str, str, str]],
) -> None:
    status, answer = await create_node(api_client, node(f"{namespace}-n", **parts))
    assert status == 422, answer
    assert causes(answer) == expected


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ({"status": {"capacity": {"cpu": "abc"}}}, QUANTITY_MSG),
        (
            {"spec": {"taints": "x"}},
            "json: cannot unmarshal string into Go struct field NodeSpec.spec.taints "
            "of type []v1.Taint",
        ),
        (
            {"spec": {"unschedulable": "yes"}},
            "json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable "
            "of type bool",
        ),
    ],
)
async def test_wrongly_typed_nodes_are_400(
    api_client: client.ApiClient, namespace: str, parts: dict[str, Any], message: str
) -> None:
    status, answer = await create_node(api_client, node(f"{namespace}-t", **parts))
    assert status == 400
    assert answer["message"] == f'Node in version "v1" cannot be handled as a Node: {message}'


# -- the other kinds a scheduler writes or reads ----------------------------------


async def test_pod_disruption_budgets(api_client: client.ApiClient, namespace: str) -> None:
    base = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"

    def pdb(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": spec,
        }

    status, answer, _ = await raw(api_client, "POST", base, body=pdb("ok", {"minAvailable": 1}))
    assert status == 201
    assert answer["status"] == {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
    status, answer, _ = await raw(
        api_client, "POST", base, body=pdb("d1", {"minAvailable": 1, "maxUnavailable": 1})
    )
    assert status == 422 and answer["message"] == (
        'PodDisruptionBudget.policy "d1" is invalid: spec: Invalid value: '
        '{"MinAvailable":1,"Selector":null,"MaxUnavailable":1,'
        '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set'
    )
    for spec, expected in (
        (
            {"minAvailable": -1},
            ("spec.minAvailable", "Invalid value: -1: must be greater than or equal to 0"),
        ),
        (
            {"minAvailable": "150%"},
            ("spec.minAvailable", 'Invalid value: "150%": must not be greater than 100%'),
        ),
        (
            {"selector": {"matchExpressions": [{"key": "a", "operator": "Foo"}]}},
            (
                "spec.selector.matchExpressions[0].operator",
                'Invalid value: "Foo": not a valid selector operator',
            ),
        ),
    ):
        status, answer, _ = await raw(api_client, "POST", base, body=pdb("bad", spec))
        assert status == 422
        assert [(c["field"], c["message"]) for c in answer["details"]["causes"]] == [expected]
    status, answer, _ = await raw(api_client, "POST", base, body=pdb("d4", {"minAvailable": True}))
    assert status == 400 and answer["message"] == (
        'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: '
        "json: cannot unmarshal bool into Go struct field "
        "PodDisruptionBudgetSpec.spec.minAvailable of type int32"
    )


async def test_leases(api_client: client.ApiClient, namespace: str) -> None:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    def lease(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name},
            "spec": spec,
        }

    status, answer, _ = await raw(
        api_client, "POST", base, body=lease("l1", {"leaseDurationSeconds": "5"})
    )
    assert status == 400 and answer["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal string '
        "into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
    )
    status, answer, _ = await raw(
        api_client, "POST", base, body=lease("l2", {"leaseDurationSeconds": 0})
    )
    assert status == 422 and answer["message"] == (
        'Lease.coordination.k8s.io "l2" is invalid: spec.leaseDurationSeconds: '
        "Invalid value: 0: must be greater than 0"
    )


async def test_events(api_client: client.ApiClient, namespace: str) -> None:
    core_event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "elsewhere"},
        "reason": "R",
        "message": "m",
        "type": "Normal",
    }
    status, answer, _ = await raw(
        api_client, "POST", f"/api/v1/namespaces/{namespace}/events", body=core_event
    )
    assert status == 422 and answer["message"] == (
        'Event "e1" is invalid: involvedObject.namespace: Invalid value: "elsewhere": '
        "does not match event.namespace"
    )
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e2"},
        "regarding": {"kind": "Pod", "name": "p", "namespace": namespace},
        "reason": "R",
        "note": "m",
        "type": "Normal",
        "action": "A",
        "reportingController": "example.com/sched",
        "reportingInstance": "i",
        "eventTime": "2024-01-01T00:00:00.000000Z",
    }
    base = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    no_time = {k: v for k, v in event.items() if k != "eventTime"}
    status, answer, _ = await raw(api_client, "POST", base, body=no_time)
    assert status == 422 and answer["message"] == 'Event "e2" is invalid: eventTime: Required value'
    no_controller = {k: v for k, v in event.items() if k != "reportingController"}
    status, answer, _ = await raw(api_client, "POST", base, body=no_controller)
    assert status == 422
    assert [(c["field"], c["reason"]) for c in answer["details"]["causes"]] == [
        ("reportingController", "FieldValueRequired"),
        ("reportingController", "FieldValueInvalid"),
        ("reportingController", "FieldValueInvalid"),
    ]
    status, _, _ = await raw(api_client, "POST", base, body=event)
    assert status == 201


async def test_pod_condition_type_is_required(api_client: client.ApiClient, namespace: str) -> None:
    status, _ = await create(api_client, namespace, pod("pc"))
    assert status == 201
    status, answer, _ = await raw(
        api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/pc/status",
        body={"status": {"conditions": [{"status": "True"}]}},
        content_type="application/merge-patch+json",
    )
    assert status == 422
    assert {c["field"] for c in answer["details"]["causes"]} == {"status.conditions[0].Type"}


async def test_node_without_spec_or_status_gets_defaults(
    api_client: client.ApiClient, namespace: str
) -> None:
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"{namespace}-bare"}}
    status, answer = await create_node(api_client, body)
    assert status == 201
    assert answer["spec"] == {}
    assert answer["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert answer["status"]["nodeInfo"]["kubeletVersion"] == ""
    assert "capacity" not in answer["status"] and "allocatable" not in answer["status"]

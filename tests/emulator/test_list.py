"""List: kinds, resourceVersions, label and field selectors, pagination."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from .kube_helpers import binding, error, pod, raw, read_json


async def _names(core: client.CoreV1Api, namespace: str, **kwargs: str) -> list[str]:
    result = await core.list_namespaced_pod(namespace, **kwargs)
    return sorted(p.metadata.name for p in result.items)


async def test_list_shape(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    last = await core.create_namespaced_pod(namespace, pod("a"))
    body = await read_json(await core.list_namespaced_pod(namespace, _preload_content=False))
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert int(body["metadata"]["resourceVersion"]) >= int(last.metadata.resource_version)
    assert [item["metadata"]["name"] for item in body["items"]] == ["a"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["w1", "w2"]),
        ("app==web", ["w1", "w2"]),
        ("app!=web", ["d1", "plain"]),
        ("app in (web,db)", ["d1", "w1", "w2"]),
        ("app notin (web)", ["d1", "plain"]),
        ("tier", ["w1"]),
        ("!tier", ["d1", "plain", "w2"]),
        ("app=web,!tier", ["w2"]),
    ],
)
async def test_label_selectors(
    api_client: client.ApiClient, namespace: str, selector: str, expected: list[str]
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("w1", labels={"app": "web", "tier": "front"}))
    await core.create_namespaced_pod(namespace, pod("w2", labels={"app": "web"}))
    await core.create_namespaced_pod(namespace, pod("d1", labels={"app": "db"}))
    await core.create_namespaced_pod(namespace, pod("plain"))
    assert await _names(core, namespace, label_selector=selector) == expected


async def test_bad_label_selector_is_400(api_client: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as exc:
        await client.CoreV1Api(api_client).list_namespaced_pod(namespace, label_selector="a in (")
    assert exc.value.status == 400


LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_RULE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


async def _refusal(api_client: client.ApiClient, namespace: str, selector: str) -> str:
    """The message of the 400 a pod list with ``selector`` gets."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    status, answer, _ = await raw(api_client, "GET", path, params={"labelSelector": selector})
    assert status == 400, answer
    return str(answer["message"])


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("!A_", f'<nil>: Invalid value: "A_": {NAME_PART_RULE}'),
        ("A_==-a", f'<nil>: Invalid value: "A_": {NAME_PART_RULE}'),
        ("k!=-a", f'values[0][k]: Invalid value: "-a": {LABEL_VALUE_RULE}'),
        ("k in (-a,-a)", f'values[0][k]: Invalid value: "-a": {LABEL_VALUE_RULE}'),
        (
            "k in (-b,-a)",
            f'[values[0][k]: Invalid value: "-a": {LABEL_VALUE_RULE}, '
            f'values[1][k]: Invalid value: "-b": {LABEL_VALUE_RULE}]',
        ),
        ("x>-1", f'values[0][x]: Invalid value: "-1": {LABEL_VALUE_RULE}'),
        (
            "x>99999999999999999999",
            'values[0]: Invalid value: "99999999999999999999": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
)
async def test_bad_label_selector_texts(
    api_client: client.ApiClient, namespace: str, selector: str, message: str
) -> None:
    """The apiserver's 400 names the bad key or value with the label rules' own texts."""
    assert await _refusal(api_client, namespace, selector) == (
        "unable to parse requirement: " + message
    )


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        (",x=a", "found ',', expected: !, identifier, or 'end of string'"),
        ("x=a,,y=b", "found ',', expected: identifier after ','"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
        ("x notin", "unable to parse requirement: found '' expected: '('"),
        ("x=(a)", "unable to parse requirement: found '(', expected: identifier"),
        ("x!", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        (
            "x>a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
)
async def test_bad_label_selector_grammar(
    api_client: client.ApiClient, namespace: str, selector: str, message: str
) -> None:
    """Where the text is not a selector, the 400 says which token came instead of what."""
    assert await _refusal(api_client, namespace, selector) == message


async def test_empty_entries_of_a_set_are_the_empty_value(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("blank", labels={"k": ""}))
    await core.create_namespaced_pod(namespace, pod("a", labels={"k": "a"}))
    await core.create_namespaced_pod(namespace, pod("c", labels={"k": "c"}))
    assert await _names(core, namespace, label_selector="k in (a,,b)") == ["a", "blank"]


async def test_empty_set_is_the_empty_value(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("blank", labels={"k": ""}))
    await core.create_namespaced_pod(namespace, pod("set", labels={"k": "v"}))
    assert await _names(core, namespace, label_selector="k in ()") == ["blank"]
    assert await _names(core, namespace, label_selector="k notin ()") == ["set"]


async def test_field_selectors(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("bound", scheduler="custom"))
    await core.create_namespaced_pod(namespace, pod("pending"))
    await core.create_namespaced_pod_binding(
        "bound", namespace, binding("bound", "node-1"), _preload_content=False
    )
    assert await _names(core, namespace, field_selector="spec.nodeName=node-1") == ["bound"]
    assert await _names(core, namespace, field_selector="spec.nodeName=") == ["pending"]
    assert await _names(core, namespace, field_selector="metadata.name=pending") == ["pending"]
    assert await _names(core, namespace, field_selector=f"metadata.namespace={namespace}") == [
        "bound",
        "pending",
    ]
    assert await _names(core, namespace, field_selector="spec.schedulerName=custom") == ["bound"]
    kube_scheduler = "status.phase!=Succeeded,status.phase!=Failed"
    assert await _names(core, namespace, field_selector=kube_scheduler) == ["bound", "pending"]
    assert await _names(core, namespace, field_selector="status.phase=Pending,spec.nodeName!=") == [
        "bound"
    ]
    nodes = await client.CoreV1Api(api_client).list_node(
        field_selector="metadata.name=no-such-node-zz"
    )
    assert nodes.items == []


async def test_unsupported_field_selector_is_400(
    api_client: client.ApiClient, namespace: str
) -> None:
    with pytest.raises(client.ApiException) as exc:
        await client.CoreV1Api(api_client).list_namespaced_pod(
            namespace, field_selector="spec.notAField=x"
        )
    assert exc.value.status == 400 and error(exc.value)["reason"] == "BadRequest"
    assert "field label not supported: spec.notAField" in error(exc.value)["message"]


async def test_limit_and_continue(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    names = [f"p{i:02d}" for i in range(7)]
    for name in names:
        await core.create_namespaced_pod(namespace, pod(name))
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await read_json(
            await core.list_namespaced_pod(
                namespace, limit=3, _continue=token or None, _preload_content=False
            )
        )
        pages += 1
        seen += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
        assert page["metadata"]["remainingItemCount"] == 7 - len(seen)
    assert seen == names and pages == 3


async def test_continue_is_a_consistent_snapshot(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    for name in ("a", "b", "c"):
        await core.create_namespaced_pod(namespace, pod(name))
    first = await read_json(
        await core.list_namespaced_pod(namespace, limit=1, _preload_content=False)
    )
    await core.create_namespaced_pod(namespace, pod("d"))
    await core.delete_namespaced_pod("c", namespace)
    rest = await read_json(
        await core.list_namespaced_pod(
            namespace, limit=10, _continue=first["metadata"]["continue"], _preload_content=False
        )
    )
    assert [p["metadata"]["name"] for p in rest["items"]] == ["b", "c"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_resource_version_match(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("old"))
    listed = await read_json(await core.list_namespaced_pod(namespace, _preload_content=False))
    rv = listed["metadata"]["resourceVersion"]
    await core.create_namespaced_pod(namespace, pod("new"))
    exact = await read_json(
        await core.list_namespaced_pod(
            namespace, resource_version=rv, resource_version_match="Exact", _preload_content=False
        )
    )
    assert [p["metadata"]["name"] for p in exact["items"]] == ["old"]
    assert exact["metadata"]["resourceVersion"] == rv
    newer = await read_json(
        await core.list_namespaced_pod(
            namespace,
            resource_version=rv,
            resource_version_match="NotOlderThan",
            _preload_content=False,
        )
    )
    assert sorted(p["metadata"]["name"] for p in newer["items"]) == ["new", "old"]
    any_version = await core.list_namespaced_pod(namespace, resource_version="0")
    assert len(any_version.items) == 2
    status, body, _ = await raw(
        api_client,
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        params={"resourceVersionMatch": "Exact"},
    )
    assert status == 422 and body["reason"] == "Invalid"

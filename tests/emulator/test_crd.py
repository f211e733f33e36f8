"""CustomResourceDefinitions: POST one, then serve its kind like any resource."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from .kube_helpers import raw

GROUP = "contract.emulator.example.com"


@pytest.fixture
async def widget_crd(api_client: client.ApiClient) -> AsyncIterator[dict[str, Any]]:
    plural = f"widgets{uuid.uuid4().hex[:6]}"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": plural[:-1],
                "kind": "Widget" + plural[-6:],
                "listKind": "",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    crd["spec"]["names"].pop("listKind")
    ext = client.ApiextensionsV1Api(api_client)
    await ext.create_custom_resource_definition(crd)
    async with asyncio.timeout(30):
        while True:
            got = await ext.read_custom_resource_definition(crd["metadata"]["name"])
            conditions = (
                {c.type: c.status for c in (got.status.conditions or [])} if got.status else {}
            )
            status, _, _ = await raw(api_client, "GET", f"/apis/{GROUP}/v1")
            if conditions.get("Established") == "True" and status == 200:
                break
            await asyncio.sleep(0.1)
    try:
        yield crd
    finally:
        try:
            await ext.delete_custom_resource_definition(crd["metadata"]["name"])
        except client.ApiException as exc:
            if exc.status != 404:
                raise


async def test_custom_resources_crud(
    api_client: client.ApiClient, namespace: str, widget_crd: dict[str, Any]
) -> None:
    names = widget_crd["spec"]["names"]
    plural, kind = names["plural"], names["kind"]
    _, discovery, _ = await raw(api_client, "GET", f"/apis/{GROUP}/v1")
    listed = {r["name"]: r for r in discovery["resources"]}
    assert listed[plural]["kind"] == kind and listed[plural]["namespaced"] is True
    assert f"{plural}/status" in listed

    custom = client.CustomObjectsApi(api_client)
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": "w1"},
        "spec": {"size": 1},
    }
    created = await custom.create_namespaced_custom_object(GROUP, "v1", namespace, plural, body)
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]
    patched = await custom.patch_namespaced_custom_object(
        GROUP,
        "v1",
        namespace,
        plural,
        "w1",
        {"spec": {"size": 2}},
        _content_type="application/merge-patch+json",
    )
    assert patched["spec"]["size"] == 2 and patched["metadata"]["generation"] == 2
    status = await custom.patch_namespaced_custom_object_status(
        GROUP,
        "v1",
        namespace,
        plural,
        "w1",
        {"status": {"ready": True}},
        _content_type="application/merge-patch+json",
    )
    assert status["status"] == {"ready": True} and status["metadata"]["generation"] == 2
    items = await custom.list_namespaced_custom_object(GROUP, "v1", namespace, plural)
    assert items["kind"] == f"{kind}List" and [i["metadata"]["name"] for i in items["items"]] == [
        "w1"
    ]
    code, body_, _ = await raw(
        api_client,
        "PATCH",
        f"/apis/{GROUP}/v1/namespaces/{namespace}/{plural}/w1",
        body={"spec": {}},
        content_type="application/strategic-merge-patch+json",
    )
    assert code == 415 and body_["reason"] == "UnsupportedMediaType"
    await custom.delete_namespaced_custom_object(GROUP, "v1", namespace, plural, "w1")
    with pytest.raises(client.ApiException) as exc:
        await custom.get_namespaced_custom_object(GROUP, "v1", namespace, plural, "w1")
    assert exc.value.status == 404


async def test_invalid_crd_is_422(api_client: client.ApiClient) -> None:
    bad = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "wrongname.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    with pytest.raises(client.ApiException) as exc:
        await client.ApiextensionsV1Api(api_client).create_custom_resource_definition(bad)
    assert exc.value.status == 422

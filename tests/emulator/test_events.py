"""Events: events.k8s.io/v1 and core/v1 are two views of the same objects."""

from __future__ import annotations

import json

from kubernetes_asyncio import client


async def test_event_recorded_via_events_api_is_visible_in_core(
    api_client: client.ApiClient, namespace: str
) -> None:
    events = client.EventsV1Api(api_client)
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.scheduled"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "pluggable-scheduler",
        "reportingInstance": "pluggable-scheduler-1",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "Successfully assigned p to node-1",
        "regarding": {"kind": "Pod", "namespace": namespace, "name": "p", "apiVersion": "v1"},
    }
    created = await events.create_namespaced_event(namespace, body)
    assert created.note == "Successfully assigned p to node-1" and created.regarding.name == "p"
    core = await client.CoreV1Api(api_client).read_namespaced_event("p.scheduled", namespace)
    assert core.message == "Successfully assigned p to node-1"
    assert core.involved_object.name == "p" and core.reason == "Scheduled"
    assert core.reporting_component == "pluggable-scheduler"
    found = await client.CoreV1Api(api_client).list_namespaced_event(
        namespace, field_selector="involvedObject.name=p,reason=Scheduled"
    )
    assert [e.metadata.name for e in found.items] == ["p.scheduled"]


async def test_core_event_visible_via_events_api(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": "q"},
            "reason": "FailedScheduling",
            "message": "0/3 nodes are available",
            "type": "Warning",
            "source": {"component": "default-scheduler"},
        },
    )
    # eventTime is null for core events, which the generated model rejects: read raw.
    resp = await client.EventsV1Api(api_client).read_namespaced_event(
        "e1", namespace, _preload_content=False
    )
    viewed = json.loads(await resp.read())
    assert viewed["apiVersion"] == "events.k8s.io/v1"
    assert viewed["note"] == "0/3 nodes are available" and viewed["regarding"]["name"] == "q"
    assert viewed["deprecatedSource"]["component"] == "default-scheduler"

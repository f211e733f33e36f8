"""EventRecorder against the emulator: creation, series aggregation, queue bounds, priority."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from scheduler.api import bind_pod
from scheduler.kube.client import KubeClient
from scheduler.kube.events import EventRecorder, object_reference
from scheduler.simulation.emulator import EmulatorServer
from scheduler.state.pod import PodInfo
from tests.kube.conftest import ClientFactory
from tests.kube.helpers import pod

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


async def created_pod(client: KubeClient, name: str = "p") -> dict[str, Any]:
    result = await client.request("POST", "/api/v1/namespaces/default/pods", body=pod(name))
    assert isinstance(result, dict)
    return result


async def events(client: KubeClient) -> list[dict[str, Any]]:
    items, _ = await client.list(EVENTS)
    return items


async def flushed(recorder: EventRecorder) -> None:
    async with asyncio.timeout(5):
        await recorder.flush()


async def test_records_an_events_k8s_io_event(client: KubeClient) -> None:
    target = await created_pod(client)
    recorder = EventRecorder(client, reporting_instance="sched-1")
    recorder.record(
        target,
        "Warning",
        "FailedScheduling",
        "0/3 nodes are available: 3 Insufficient cpu.",
        "Scheduling",
    )
    await flushed(recorder)

    [event] = await events(client)
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["type"] == "Warning" and event["reason"] == "FailedScheduling"
    assert event["action"] == "Scheduling"
    assert event["note"] == "0/3 nodes are available: 3 Insufficient cpu."
    assert event["reportingController"] == "pluggable-scheduler"
    assert event["reportingInstance"] == "sched-1"
    assert MICRO.match(event["eventTime"])
    assert event["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": target["metadata"]["uid"],
        "resourceVersion": target["metadata"]["resourceVersion"],
    }
    assert event["metadata"]["name"].startswith("p.")
    assert "series" not in event
    assert recorder.created == 1 and recorder.failed == 0
    await recorder.close()


async def test_repeats_become_a_series(client: KubeClient, emulator: EmulatorServer) -> None:
    target = await created_pod(client)
    recorder = EventRecorder(client)
    note = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity."
    for _ in range(3):
        recorder.record(target, "Warning", "FailedScheduling", note, "Scheduling")
        await flushed(recorder)  # each repeat reaches the server on its own
    recorder.record(target, "Warning", "FailedScheduling", "a different note", "Scheduling")
    await flushed(recorder)

    found = {e["note"]: e for e in await events(client)}
    assert len(found) == 2, "a different note is a different event"
    series = found[note]["series"]
    assert series["count"] == 3 and MICRO.match(series["lastObservedTime"])
    assert "series" not in found["a different note"]
    assert recorder.created == 2 and recorder.patched == 2
    patches = [r for r in emulator.request_log if r.method == "PATCH" and "/events/" in r.path]
    assert len(patches) == 2
    await recorder.close()


async def test_queued_repeats_coalesce_into_one_write(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    target = await created_pod(client)
    recorder = EventRecorder(client)
    for _ in range(50):  # a retry storm between two turns of the event loop
        recorder.record(target, "Warning", "FailedScheduling", "no fit", "Scheduling")
    assert recorder.pending == 1
    await flushed(recorder)

    [event] = await events(client)
    assert event["series"]["count"] == 50
    writes = [r for r in emulator.request_log if "/events" in r.path and r.method != "GET"]
    assert len(writes) == 1
    await recorder.close()


async def test_full_queue_drops_oldest_and_counts(client: KubeClient) -> None:
    recorder = EventRecorder(client, queue_size=3)
    for i in range(5):
        recorder.record(
            {"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"}},
            "Normal",
            "Scheduled",
            f"assigned p{i}",
            "Binding",
        )
    assert recorder.dropped == 2 and recorder.pending == 3
    await flushed(recorder)
    assert sorted(e["regarding"]["name"] for e in await events(client)) == ["p2", "p3", "p4"]
    await recorder.close()


async def test_record_never_blocks(client: KubeClient) -> None:
    recorder = EventRecorder(client, queue_size=100)
    started = time.perf_counter()
    for i in range(5000):
        recorder.record(
            {"metadata": {"name": f"p{i}", "namespace": "default"}},
            "Normal",
            "Scheduled",
            "assigned",
            "Binding",
        )
    elapsed = time.perf_counter() - started
    assert recorder.pending == 100 and recorder.dropped == 4900
    assert elapsed < 1.0, f"record() took {elapsed:.3f}s for 5000 events"
    await recorder.close(grace=0.0)
    assert recorder.pending == 0


async def test_expired_event_is_recreated_with_its_series(client: KubeClient) -> None:
    target = await created_pod(client)
    recorder = EventRecorder(client)
    recorder.record(target, "Warning", "FailedScheduling", "no fit", "Scheduling")
    await flushed(recorder)
    [event] = await events(client)
    await client.request("DELETE", f"{EVENTS}/{event['metadata']['name']}")  # the event TTL

    recorder.record(target, "Warning", "FailedScheduling", "no fit", "Scheduling")
    await flushed(recorder)
    [again] = await events(client)
    assert again["series"]["count"] == 2
    assert recorder.failed == 0
    await recorder.close()


async def test_window_expiry_starts_a_new_event(client: KubeClient) -> None:
    now = [0.0]
    target = await created_pod(client)
    recorder = EventRecorder(client, series_window=10.0, clock=lambda: now[0])
    recorder.record(target, "Normal", "Scheduled", "assigned", "Binding")
    await flushed(recorder)
    now[0] = 11.0
    recorder.record(target, "Normal", "Scheduled", "assigned", "Binding")
    await flushed(recorder)
    found = await events(client)
    assert len(found) == 2 and all("series" not in e for e in found)
    await recorder.close()


async def test_bindings_overtake_queued_events(
    make_client: ClientFactory, emulator: EmulatorServer
) -> None:
    client = await make_client(qps=20.0, burst=1)
    pods = [await created_pod(client, f"p{i}") for i in range(3)]
    recorder = EventRecorder(client)
    for i in range(6):
        recorder.record(pods[0], "Warning", "FailedScheduling", f"attempt {i}", "Scheduling")
    await asyncio.sleep(0)  # the sender now waits on the (empty) bucket
    # A binding cycle binding one pod after another, as the engine does. With
    # a FIFO bucket each binding would queue behind the event the sender
    # re-queued meanwhile: event, bind, event, bind, ...
    for target in pods:
        outcome = await bind_pod(client, PodInfo.from_dict(target), "n1")
        assert outcome.bound, outcome
    await flushed(recorder)

    order = [
        "bind" if r.path.endswith("/binding") else "event"
        for r in emulator.request_log
        if r.path.endswith("/binding") or r.path == EVENTS
    ]
    assert order.count("event") == 6 and order.count("bind") == 3
    assert order[:4].count("bind") == 3, f"bindings waited behind events: {order}"
    assert client.limiter.granted["low"] >= 6
    await recorder.close()


async def test_close_flushes_then_drops_later_records(client: KubeClient) -> None:
    target = await created_pod(client)
    recorder = EventRecorder(client)
    recorder.record(target, "Normal", "Scheduled", "assigned", "Binding")
    await recorder.close()
    assert len(await events(client)) == 1
    recorder.record(target, "Normal", "Scheduled", "assigned", "Binding")
    assert recorder.dropped == 1 and recorder.pending == 0


def test_object_reference_defaults() -> None:
    assert object_reference({"metadata": {"name": "n1"}, "kind": "Node", "apiVersion": "v1"}) == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "n1",
    }
    ref = {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u"}
    assert object_reference(ref) == ref


async def test_an_event_the_api_server_refuses_is_counted_and_logged_not_raised(
    client: KubeClient, emulator: EmulatorServer
) -> None:
    target = await created_pod(client, "refused")
    emulator.faults.fail(403, verb="create", resource="events", count=None)
    recorder = EventRecorder(client, reporting_instance="sched-1")
    try:
        recorder.record(target, "Normal", "Scheduled", "assigned", "Binding")
        await flushed(recorder)
        assert recorder.failed == 1 and recorder.created == 0
    finally:
        emulator.faults.clear()
        await recorder.close()

"""Malformed pods cost one pod, never the daemon.

A real kube-apiserver refuses these pods at create time, so the first test is
emulator-only and runs with the emulator's validation switched off
(``without_validation``: an API server that stores what it is given). The fuzz
test is backend-agnostic: whatever the API server accepts, the daemon must bind
or explain.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.kube.apierrors import ApiError
from scheduler.simulation.emulator import EmulatorServer
from tests.e2e.conftest import (
    Cluster,
    RunningDaemon,
    StartDaemon,
    pod_body,
    scheduler_config,
    wait_until,
)

MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    # name: (changes to the spec or metadata, expected part of the message)
    "bad-quantity": (
        {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]},
        "lots",
    ),
    "negative-memory": (
        {
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"memory": "-1Gi"}}}
            ]
        },
        "requests of memory must be greater than or equal to 0",
    ),
    "bad-priority": ({"priority": "high"}, "spec.priority must be an integer"),
    "bad-node-selector": ({"nodeSelector": ["zone"]}, "spec.nodeSelector must map strings"),
    "bad-toleration": (
        {"tolerations": [{"key": "k", "operator": "Sometimes"}]},
        "spec.tolerations[0].operator 'Sometimes' is not supported",
    ),
    "bad-affinity": ({"affinity": "close"}, "spec.affinity must be an object"),
    "bad-gates": ({"schedulingGates": [{"name": ""}]}, "spec.schedulingGates[0].name"),
}


def invalid_message(name: str, namespace: str) -> str:
    return f"invalid pod: pod {namespace}/{name}"


async def test_malformed_pods_get_a_clear_failed_scheduling_event(
    cluster: Cluster, emulator: EmulatorServer, start_daemon: StartDaemon
) -> None:
    await cluster.create_node("n1")
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    # The whole exchange happens with a server that stores what it is given: the
    # daemon's own status patches of these pods go through, as they would there.
    with emulator.without_validation():
        for name, (changes, _) in MALFORMED.items():
            body = pod_body(name, cluster.scheduler_name)
            body["spec"].update(copy.deepcopy(changes))
            await cluster.create_raw_pod(body)
        huge = pod_body("huge-label", cluster.scheduler_name, labels={"app": "x" * 100_000})
        await cluster.create_raw_pod(huge)
        unknown = pod_body("unknown-fields", cluster.scheduler_name)
        unknown["spec"]["notAField"] = {"nested": True}
        unknown["spec"]["containers"][0]["alsoNotAField"] = 1
        unknown["metadata"]["whatever"] = "x"
        await cluster.create_raw_pod(unknown)
        await cluster.create_pod("valid")

        # Unknown fields are ignored, as kube's decoder drops them: the pod is bound.
        await cluster.wait_bound(["unknown-fields", "valid"])
        expected = {name: part for name, (_, part) in MALFORMED.items()}
        expected["huge-label"] = "invalid label value 'xxxx"
        for name, part in expected.items():
            event = await cluster.wait_event(name, "FailedScheduling")
            assert event["note"].startswith(invalid_message(name, cluster.namespace)), event["note"]
            assert part in event["note"], (name, event["note"])
            assert len(event["note"]) <= 1024
        placed = await cluster.placements()
        assert all(placed[name] == "" for name in expected)
        # Said once: our own status patch coming back must not start a patch/event loop.
        await wait_until(lambda: not running.daemon.scheduler.busy, message="patches to finish")
        patches = [
            r.name
            for r in emulator.request_log.find(
                verb="patch", resource="pods/status", namespace=cluster.namespace
            )
        ]
        assert sorted(patches) == sorted(expected)
        assert not running.task.done()
        await cluster.create_pod("after")
        await cluster.wait_bound(["after"])


# -- fuzz ------------------------------------------------------------------------------

QUANTITIES = st.one_of(
    st.sampled_from(["0", "1m", "50m", "100m", "250m", "1", "1500m", "2", "64Mi", "1Gi", "3G"]),
    st.sampled_from(["", "abc", "1.5.5", "-1", "1e400", "0x10", "\u0661", "Infinity"]),
    st.integers(min_value=-5, max_value=10),
)
LABEL_VALUES = st.one_of(
    st.sampled_from(["a", "b", "zone-1", "", "x" * 63]),
    st.text(alphabet="ab-_.!/ ", max_size=70),
)


@st.composite
def pod_specs(draw: st.DrawFn) -> dict[str, Any]:
    requests = draw(
        st.dictionaries(
            st.sampled_from(["cpu", "memory", "pods", "example.com/gpu"]), QUANTITIES, max_size=3
        )
    )
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]
    }
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(
            st.dictionaries(st.sampled_from(["pool", "zone"]), LABEL_VALUES, max_size=2)
        )
    if draw(st.booleans()):
        spec["priority"] = draw(st.one_of(st.integers(-10, 10**6), st.just("high")))
    if draw(st.booleans()):
        spec["tolerations"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "key": st.sampled_from(["dedicated", "gpu"]),
                        "operator": st.sampled_from(["Exists", "Equal", "Bogus"]),
                        "effect": st.sampled_from(["", "NoSchedule", "Sometimes"]),
                    }
                ),
                max_size=2,
            )
        )
    labels = draw(
        st.dictionaries(st.sampled_from(["app", "tier", "bad key"]), LABEL_VALUES, max_size=2)
    )
    return {"spec": spec, "labels": labels}


async def bound_or_explained(cluster: Cluster, name: str) -> bool:
    pod = await cluster.pod(name)
    if (pod.get("spec") or {}).get("nodeName"):
        return True
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return bool(cond.get("reason")) and bool(cond.get("message"))
    return False


class FuzzState:
    def __init__(self, cluster: Cluster, running: RunningDaemon) -> None:
        self.cluster = cluster
        self.running = running
        self.count = 0
        self.created = 0


@pytest.fixture
async def fuzz(cluster: Cluster, start_daemon: StartDaemon) -> FuzzState:
    await cluster.create_node("plain", cpu="4", memory="8Gi", labels={"pool": "a", "zone": "b"})
    await cluster.create_node(
        "tainted",
        cpu="2",
        memory="4Gi",
        labels={"pool": "b"},
        taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
    )
    running = await start_daemon(scheduler_config([{"schedulerName": cluster.scheduler_name}]))
    return FuzzState(cluster, running)


@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=pod_specs())
async def test_fuzzed_pods_are_bound_or_explained(fuzz: FuzzState, case: dict[str, Any]) -> None:
    cluster = fuzz.cluster
    fuzz.count += 1
    name = f"fuzz-{fuzz.count}"
    body = pod_body(name, cluster.scheduler_name, labels=case["labels"])
    body["spec"].update(case["spec"])
    try:
        await cluster.create_raw_pod(body)
    except ApiError as err:
        # A real API server refuses what it cannot validate (400/422) or admit
        # (403: e.g. Priority admission refuses an explicit spec.priority).
        assert err.status in (400, 403, 422), err
        return
    fuzz.created += 1
    await wait_until(
        lambda: bound_or_explained(cluster, name),
        within=10,
        message=f"{name} to be bound or explained: {case}",
        every=0.02,
    )
    assert not fuzz.running.task.done()
    # Keep the nodes from filling up across examples.
    await cluster.client.request(
        "DELETE",
        f"/api/v1/namespaces/{cluster.namespace}/pods/{name}",
        query={"gracePeriodSeconds": "0"},
    )

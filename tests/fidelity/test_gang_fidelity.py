"""GangScheduling against kube-scheduler 1.36.3's, on the same Workload API objects.

kube's side: a real kube-apiserver and kube-scheduler, both with GenericWorkload and
GangScheduling on (scheduler.tools.controlplane.FEATURE_GATES), kube's default
profile (which then includes GangScheduling). Ours: the emulator and our daemon with
the same gates and the default profile. Three gangs on two 4-CPU nodes:

- ``fits``: 4 x 500m, minCount 4 - bound whole;
- ``too-big``: 3 x 3 CPU, minCount 3 - two members fit, the third never: none bound,
  each member attempted and refused;
- ``incomplete``: minCount 3 but only 2 pods exist - held at PreEnqueue: never
  attempted, so no PodScheduled condition at all.

Compared: which pods end bound, which unbound pods were attempted (PodScheduled
False) and which were never tried, the refusal messages, and the PodGroups'
PodGroupScheduled conditions. Where a gang is
bound, the nodes may differ (scores depend on what the refused gang held at that
moment on either side).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.plugins.gangscheduling import GangScheduling
from scheduler.testing.cluster import EmulatedCluster
from scheduler.testing.harness import RunningScheduler, build_catalog, build_config
from scheduler.tools.controlplane import (
    KUBE_SCHEDULER,
    RestClient,
    run_kube_scheduler,
    start_control_plane,
)
from tests.fidelity.scenarios import node, pod

pytestmark = pytest.mark.fidelity

Obj = dict[str, Any]
NAMESPACE = "gang-fidelity"
API = "/apis/scheduling.k8s.io/v1alpha2"
GANGS = {"fits": (4, 4, "500m"), "too-big": (3, 3, "3"), "incomplete": (3, 2, "100m")}
SETTLE = 3.0  # seconds of no change that count as settled
TIMEOUT = 60.0


def objects() -> tuple[list[Obj], list[Obj], list[Obj]]:
    """(nodes, Workload + PodGroups, pods) of the scenario."""
    nodes = [node(name, cpu="4", memory="8Gi") for name in ("gang-a", "gang-b")]
    templates = [
        {"name": name, "schedulingPolicy": {"gang": {"minCount": count}}}
        for name, (count, _, _) in GANGS.items()
    ]
    groups: list[Obj] = [
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "Workload",
            "metadata": {"name": "train", "namespace": NAMESPACE},
            "spec": {"podGroupTemplates": templates},
        }
    ]
    pods: list[Obj] = []
    for name, (count, members, cpu) in GANGS.items():
        groups.append(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {
                    "podGroupTemplateRef": {
                        "workload": {"workloadName": "train", "podGroupTemplateName": name}
                    },
                    "schedulingPolicy": {"gang": {"minCount": count}},
                },
            }
        )
        for i in range(members):
            member = pod(f"{name}-{i}", cpu=cpu, memory="64Mi")
            member["metadata"]["namespace"] = NAMESPACE
            member["spec"]["schedulingGroup"] = {"podGroupName": name}
            pods.append(member)
    return nodes, groups, pods


def outcome(pods: list[Obj]) -> dict[str, str]:
    """Pod -> "bound", "refused" (PodScheduled False) or "untried" (no condition)."""
    out: dict[str, str] = {}
    for obj in pods:
        name = obj["metadata"]["name"]
        if (obj.get("spec") or {}).get("nodeName"):
            out[name] = "bound"
            continue
        conditions = (obj.get("status") or {}).get("conditions") or []
        scheduled = [c for c in conditions if c.get("type") == "PodScheduled"]
        out[name] = "refused" if scheduled and scheduled[0].get("status") == "False" else "untried"
    return out


MESSAGES: dict[str, dict[str, str]] = {}
GROUP_STATUS: dict[str, dict[str, tuple[str, str, str]]] = {}


def group_conditions(groups: list[Obj]) -> dict[str, tuple[str, str, str]]:
    """PodGroup -> its PodScheduled condition's (status, reason, message), or ()."""
    out: dict[str, tuple[str, str, str]] = {}
    for obj in groups:
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodGroupScheduled":
                out[obj["metadata"]["name"]] = (
                    str(c.get("status")),
                    str(c.get("reason")),
                    str(c.get("message") or ""),
                )
    return out


def messages(pods: list[Obj]) -> dict[str, str]:
    """Pod -> its PodScheduled=False message (for the report)."""
    out = {}
    for obj in pods:
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                out[obj["metadata"]["name"]] = str(c.get("message") or "")
    return out


def settled(read: Any, side: str = "") -> dict[str, str]:
    """Poll ``read()`` until its outcome has not changed for SETTLE seconds (and every
    pod that can be bound is); returns the outcome."""
    deadline = time.monotonic() + TIMEOUT
    last: dict[str, str] = {}
    since = time.monotonic()
    while time.monotonic() < deadline:
        current = outcome(read())
        if current != last:
            last, since = current, time.monotonic()
        elif time.monotonic() - since >= SETTLE and "fits-0" in current:
            MESSAGES[side] = messages(read())
            return current
        time.sleep(0.2)
    raise AssertionError(f"did not settle within {TIMEOUT}s: {last}")


@pytest.fixture(scope="module")
def kube_outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    nodes, groups, pods = objects()
    workdir: Path = tmp_path_factory.mktemp("kube-scheduler-gang")
    with start_control_plane() as plane:
        client: RestClient = plane.client()
        kubeconfig = plane.write_user_kubeconfig(KUBE_SCHEDULER.name)
        with run_kube_scheduler(kubeconfig, workdir=workdir):
            client.post(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            )
            for obj in nodes:
                body = {k: v for k, v in obj.items() if k != "status"}
                client.post("/api/v1/nodes", body)
                client.patch_status(
                    f"/api/v1/nodes/{obj['metadata']['name']}", {"status": obj["status"]}
                )
            for obj in groups:
                plural = "workloads" if obj["kind"] == "Workload" else "podgroups"
                client.post(f"{API}/namespaces/{NAMESPACE}/{plural}", obj)
            for obj in pods:
                client.post(f"/api/v1/namespaces/{NAMESPACE}/pods", obj)
            result = settled(
                lambda: client.get(f"/api/v1/namespaces/{NAMESPACE}/pods").body["items"], "kube"
            )
            GROUP_STATUS["kube"] = group_conditions(
                client.get(f"{API}/namespaces/{NAMESPACE}/podgroups").body["items"]
            )
            yield result


async def _our_outcome(directory: Path) -> dict[str, str]:
    nodes, groups, pods = objects()
    config = build_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler"}],
            "pluggableScheduler": {
                "featureGates": {"GenericWorkload": True, "GangScheduling": True}
            },
        }
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    async with await EmulatedCluster.start(
        [namespace, *nodes, *groups], directory=directory
    ) as cluster:
        running = await RunningScheduler.start(
            cluster, config=config, catalog=build_catalog({"GangScheduling": GangScheduling})
        )
        try:
            for obj in pods:
                cluster.create(copy.deepcopy(obj))
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(
                None, settled, lambda: cluster.list("v1", "Pod", NAMESPACE), "ours"
            )
            GROUP_STATUS["ours"] = group_conditions(
                cluster.list("scheduling.k8s.io/v1alpha2", "PodGroup", NAMESPACE)
            )
            return result
        finally:
            await running.stop()


def test_gang_outcome_matches_kube_scheduler(kube_outcome: dict[str, str], tmp_path: Path) -> None:
    ours = asyncio.run(_our_outcome(tmp_path))
    print(f"\nkube-scheduler: {kube_outcome}\nours:           {ours}")
    print(f"PodGroupScheduled: {GROUP_STATUS}")
    for side, found in MESSAGES.items():
        for name, message in sorted(found.items()):
            print(f"{side} {name}: {message}")
    expected = {f"fits-{i}": "bound" for i in range(4)}
    expected |= {f"too-big-{i}": "refused" for i in range(3)}
    expected |= {f"incomplete-{i}": "untried" for i in range(2)}
    assert kube_outcome == expected
    assert ours == kube_outcome
    # The same refusals, in kube's words: the member that fits nowhere gets the
    # "0/N nodes are available" sentence, the placed ones the pod group's. Which
    # member is which depends on the order the members were tried.
    assert sorted(MESSAGES["ours"].values()) == sorted(MESSAGES["kube"].values())
    # The PodGroups' PodGroupScheduled conditions, as kube-scheduler writes them.
    assert GROUP_STATUS["ours"] == GROUP_STATUS["kube"]

"""Test harness: the real daemon with Coscheduling enabled, against the emulator over HTTP.

Self-contained on purpose: the distribution's tests must pass when it is
installed alone next to the core, so nothing here comes from the core's own
test suite; the daemon and the emulator are driven through the plugin
author's test kit (scheduler.testing), as any third-party plugin's tests
would. Objects are created through the API, as a user would, and the daemon
sees them only through its informers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from scheduler.testing.cluster import EmulatedCluster
from scheduler.testing.harness import RunningScheduler, build_catalog, build_config

from scheduler_plugin_coscheduling import POD_GROUP_LABEL, Coscheduling, crd_manifest

SCHEDULER_NAME = "pluggable-scheduler"
NAMESPACE = "default"
PODGROUPS_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"


def make_node(name: str, *, cpu: str = "1", memory: str = "4Gi", pods: int = 110) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def make_pod(
    name: str,
    *,
    group: str | None = None,
    cpu: str = "1",
    priority: int | None = None,
    gates: Sequence[str] = (),
    namespace: str = NAMESPACE,
) -> dict[str, Any]:
    labels = {POD_GROUP_LABEL: group} if group else {}
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def make_podgroup(
    name: str,
    min_member: int,
    *,
    timeout: int | None = None,
    min_resources: Mapping[str, str] | None = None,
    namespace: str = NAMESPACE,
    created: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources:
        spec["minResources"] = dict(min_resources)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
    }


def scheduler_config(
    args: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A KubeSchedulerConfiguration enabling Coscheduling, as the README tells users to."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        # Retries within the test's patience; the backoff rules are the core's.
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    },
                },
                "pluginConfig": [{"name": "Coscheduling", "args": dict(args or {})}],
            }
        ],
    }


class GangCluster:
    """A running daemon and the API it schedules against, with helpers to observe both."""

    def __init__(self, cluster: EmulatedCluster, scheduler: RunningScheduler) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.server = cluster.server
        self.client = scheduler.client

    # -- API ----------------------------------------------------------------------------

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        kind = obj["kind"]
        namespace = obj["metadata"].get("namespace", NAMESPACE)
        if kind == "Node":
            path = "/api/v1/nodes"
        elif kind == "Pod":
            path = f"/api/v1/namespaces/{namespace}/pods"
        elif kind == "PodGroup":
            path = PODGROUPS_PATH.format(ns=namespace)
        else:
            raise ValueError(f"the harness does not create {kind} objects")
        created: dict[str, Any] = await self.client.request("POST", path, body=dict(obj))
        return created

    async def pod(self, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        pod: dict[str, Any] = await self.client.request(
            "GET", f"/api/v1/namespaces/{namespace}/pods/{name}"
        )
        return pod

    async def podgroup(self, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        group: dict[str, Any] = await self.client.request(
            "GET", f"{PODGROUPS_PATH.format(ns=namespace)}/{name}"
        )
        return group

    async def node_of(self, name: str) -> str:
        return str(((await self.pod(name)).get("spec") or {}).get("nodeName") or "")

    async def condition_message(self, name: str) -> str:
        """The message of the pod's PodScheduled=False condition ("" if none)."""
        for cond in ((await self.pod(name)).get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return str(cond.get("message") or "")
        return ""

    # -- scheduler state ----------------------------------------------------------------

    @property
    def plugin(self) -> Coscheduling:
        plugin = self.scheduler.plugin("Coscheduling")
        assert isinstance(plugin, Coscheduling)
        return plugin

    def usage(self) -> dict[str, dict[str, int]]:
        """Requested resources per node as the scheduler counts them (assumed pods too)."""
        return self.scheduler.requested()

    def waiting(self) -> list[str]:
        return sorted(key.rpartition("/")[2] for key in self.scheduler.waiting_pods())

    def assumed(self) -> list[str]:
        return sorted(key.rpartition("/")[2] for key in self.scheduler.assumed_pods())

    # -- waiting ------------------------------------------------------------------------

    async def eventually(
        self,
        check: Callable[[], Awaitable[bool]],
        what: str,
        *,
        within: float = 15.0,
        interval: float = 0.02,
    ) -> None:
        """Poll ``check`` until it holds; fail naming ``what`` and the scheduler's state."""
        deadline = time.monotonic() + within
        while True:
            if await check():
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {within:g}s waiting for {what}; waiting={self.waiting()} "
                    f"assumed={self.assumed()} queue={self.scheduler.queue_counts()}"
                )
            await asyncio.sleep(interval)

    async def bound(self, names: Sequence[str]) -> dict[str, str]:
        return {name: await self.node_of(name) for name in names}


@contextlib.asynccontextmanager
async def gang_cluster(
    tmp_path: Path,
    *,
    nodes: Sequence[Mapping[str, Any]] = (),
    args: Mapping[str, Any] | None = None,
    install_crd: bool = False,
) -> AsyncIterator[GangCluster]:
    """Start the emulator with ``nodes``, run the daemon.

    The emulator serves the PodGroup CRD built in; with ``install_crd`` it
    starts without it and the distribution's manifest is applied instead, as
    the README's install step does on a real cluster (before the daemon
    starts, so its PodGroup informer finds the resource).
    """
    async with await EmulatedCluster.start(
        nodes, directory=tmp_path, builtin_crds=not install_crd
    ) as cluster:
        if install_crd:
            cluster.create(yaml.safe_load(crd_manifest()))
        scheduler = await RunningScheduler.start(
            cluster,
            config=build_config(scheduler_config(args)),
            catalog=build_catalog(),
            seed=0,
        )
        try:
            yield GangCluster(cluster, scheduler)
        finally:
            await scheduler.stop()

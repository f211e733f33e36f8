"""A fake kubelet for every node: bound pods start Running, deleted pods go away.

Without it a bound pod stays Pending and a graceful delete never completes,
which is right for contract tests but not for a simulation, where the next
scheduling decision depends on pods having started. It reacts to store
commits but acts on the next loop iteration, outside the write in progress.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from typing import Any

from scheduler.simulation.emulator.resources import ResourceType
from scheduler.simulation.emulator.statuserrors import ApiError
from scheduler.simulation.emulator.store import Store
from scheduler.simulation.emulator.watch import Change

Obj = dict[str, Any]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class FakeKubelet:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.pods = store.type("", "v1", "pods")
        self.nodes = store.type("", "v1", "nodes")
        self._pending: dict[tuple[str, str], str] = {}
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next_ip = int(ipaddress.IPv4Address("10.244.0.2"))

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.store.listeners.append(self._on_change)
        for key, entry in list(self.store.collection(self.pods).objects.items()):
            self._consider(key, entry.obj)

    def stop(self) -> None:
        if self._on_change in self.store.listeners:
            self.store.listeners.remove(self._on_change)
        self._loop = None

    def _on_change(self, rt: ResourceType, change: Change) -> None:
        if rt.storage_key == self.pods.storage_key and change.type != "DELETED":
            self._consider(change.key, change.entry.obj)

    def _consider(self, key: tuple[str, str], pod: Obj) -> None:
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._pending[key] = "kill"
        elif (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            self._pending[key] = "start"
        else:
            return
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        work, self._pending = self._pending, {}
        for (namespace, name), action in work.items():
            try:
                if action == "kill":
                    self.store.delete_entry(self.pods, namespace, name, {"gracePeriodSeconds": 0})
                else:
                    self.store.mutate(
                        self.pods, namespace, name, self._started, subresource="status"
                    )
            except ApiError:
                continue  # deleted or changed meanwhile; a later commit re-queues it

    def _host_ip(self, node_name: str) -> str:
        node = self.store.collection(self.nodes).objects.get(("", node_name))
        for address in ((node.obj.get("status") or {}).get("addresses") or []) if node else []:
            if address.get("type") == "InternalIP":
                return str(address.get("address"))
        return "10.0.0.1"

    def _started(self, pod: Obj) -> Obj:
        if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            return pod
        now = _now()
        spec = pod.get("spec") or {}
        status = dict(pod.get("status") or {})
        pod_ip = str(ipaddress.IPv4Address(self._next_ip))
        self._next_ip += 1
        host_ip = self._host_ip(spec.get("nodeName", ""))
        uid = pod["metadata"].get("uid", "")
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        for kind in (
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ):
            conditions.setdefault(
                kind,
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now},
            )
            if kind != "PodScheduled":
                conditions[kind] = {**conditions[kind], "status": "True", "lastTransitionTime": now}
        status.update(
            phase="Running",
            conditions=list(conditions.values()),
            hostIP=host_ip,
            hostIPs=[{"ip": host_ip}],
            podIP=pod_ip,
            podIPs=[{"ip": pod_ip}],
            startTime=now,
            containerStatuses=[
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "containerID": f"emulated://{uid}/{c.get('name', '')}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
                for c in spec.get("containers") or []
            ],
        )
        return {**pod, "status": status}

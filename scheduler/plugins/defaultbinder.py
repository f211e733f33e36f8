"""DefaultBinder: bind the pod by creating its ``pods/binding`` subresource.

This is the one write kube-scheduler makes per scheduled pod. The request and
the reading of the API server's answer live in :mod:`scheduler.api.binding`,
shared with the engine, which acts on the outcome.
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.api import CycleState, Plugin, Status, bind_pod, hookimpl
from scheduler.state.pod import PodInfo


class DefaultBinder(Plugin):
    api_version: ClassVar[str] = "1.0"
    name: ClassVar[str] = "DefaultBinder"

    @hookimpl
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        outcome = await bind_pod(self.handle.client, pod, node_name)
        return outcome.status(pod)

"""DefaultBinder: bind the pod by creating its ``pods/binding`` subresource.

This is the one write kube-scheduler makes per scheduled pod. The binding
carries the pod's UID so the API server refuses it if the pod was deleted and
re-created under the same name in the meantime.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scheduler.api import Code, CycleState, Plugin, Status, hookimpl
from scheduler.state.pod import PodInfo


def binding_body(pod: PodInfo, node_name: str) -> dict[str, Any]:
    """The ``v1.Binding`` kube-scheduler posts for ``pod`` onto ``node_name``."""
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        metadata["uid"] = pod.uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


class DefaultBinder(Plugin):
    api_version: ClassVar[str] = "1.0"
    name: ClassVar[str] = "DefaultBinder"

    @hookimpl
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        try:
            await self.handle.client.request("POST", path, body=binding_body(pod, node_name))
        except Exception as err:
            # The framework turns an Error into backoff + event; the message must
            # say which pod failed, since the client error alone often does not.
            message = f"binding pod {pod.key} to node {node_name}: {err or type(err).__name__}"
            return Status(Code.ERROR, (message,), error=err)
        return Status.success()

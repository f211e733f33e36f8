"""What the engine needs from the API server besides binding (which plugins do)."""

from __future__ import annotations

from typing import Any, Protocol

from scheduler.state.pod import PodInfo


class ClusterIO(Protocol):
    def record_event(
        self, pod: PodInfo, event_type: str, reason: str, note: str, action: str
    ) -> None:
        """Queue an Event about ``pod``; must never block the scheduling loop."""

    async def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Strategic-merge ``patch`` into the pod's status subresource."""

"""PrioritySort: kube-scheduler's default QueueSort.

kube orders the active queue with ``Less(a, b)``: the higher ``spec.priority``
first, and among equals the pod that entered the queue earlier. As a sort key
(smaller first) that is ``(-priority, timestamp)``.
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.api import Plugin, hookimpl
from scheduler.state.pod import QueuedPodInfo


class PrioritySort(Plugin):
    api_version: ClassVar[str] = "1.0"
    name: ClassVar[str] = "PrioritySort"

    @hookimpl
    def queue_sort_key(self, queued: QueuedPodInfo) -> tuple[int, float]:
        return (-queued.pod.priority, queued.timestamp)

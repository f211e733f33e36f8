"""Kube-backed implementations of what the engine and plugins ask for.

The engine talks to the cluster through :class:`scheduler.engine.io.ClusterIO`
and plugins read watched objects through :class:`scheduler.api.ObjectStore`;
here both are served by the kube adapter (the API client, the event
recorder, informers), so neither the engine nor a plugin depends on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.kube.client import KubeClient
from scheduler.kube.eventrecorder import EventRecorder
from scheduler.kube.informer import Informer
from scheduler.model.selectors import has_labels
from scheduler.state.pod import PodInfo


class KubeIO:
    """The engine's ClusterIO over our kube adapter; remembers each pod's last failure."""

    def __init__(self, client: KubeClient, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder
        self.last_failure: dict[str, str] = {}

    def record_event(
        self, pod: PodInfo, event_type: str, reason: str, note: str, action: str
    ) -> None:
        if reason == "FailedScheduling":
            self.last_failure[pod.key] = note
        elif reason == "Scheduled":
            self.last_failure.pop(pod.key, None)
        self.recorder.record(pod, event_type, reason, note, action)

    async def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        await self.client.patch_pod_status(namespace, name, patch)


class InformerStore:
    """A plugin's read-only view of an informer's objects (``handle.store``)."""

    def __init__(self, informer: Informer) -> None:
        self._informer = informer

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = f"{namespace}/{name}" if namespace else name
        return self._informer.store.get(key)

    def revision(self) -> int:
        return self._informer.revision

    def changed_since(self, revision: int) -> set[tuple[str, str]] | None:
        keys = self._informer.changed_since(revision)
        if keys is None:
            return None
        # Keys are "namespace/name", or "name" for cluster-scoped objects.
        return {
            (ns, name) if sep else ("", ns) for ns, sep, name in (k.partition("/") for k in keys)
        }

    def list(
        self, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> list[Mapping[str, Any]]:
        objs: list[Mapping[str, Any]]
        if labels:
            key, value = next(iter(labels.items()))
            objs = list(self._informer.by_label(key, value))
            if len(labels) > 1:
                objs = [o for o in objs if has_labels(o, labels)]
        else:
            objs = list(self._informer.store.values())
        if namespace is None:
            return objs
        return [o for o in objs if (o.get("metadata") or {}).get("namespace") == namespace]


#: Kinds of built-in resources plugins watch. Items of a list response carry
#: no ``kind`` (only watch events do), so an event from a (re-)list is named
#: from here, as the kind plugins register for.
LIST_ITEM_KINDS: dict[str, str] = {
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "resourceclaims": "ResourceClaim",
    "resourceslices": "ResourceSlice",
    "deviceclasses": "DeviceClass",
}


def resource_path(group: str, version: str, plural: str) -> str:
    return f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"

"""In-tree volume plugins migrated to CSI drivers (kube's csi-translation-lib).

NodeVolumeLimits counts an in-tree volume (an ``awsElasticBlockStore`` PV,
a ``kubernetes.io/gce-pd`` class, ...) against its CSI driver's
``allocatable.count`` once the node runs the driver: kube-scheduler 1.36
treats migration as on for AWS EBS, GCE PD, Azure Disk, Cinder and Portworx
wherever the node has a CSINode object. The volume handle a translated
volume gets only has to name the same disk the same way, because volumes
are counted once per ``driver/handle``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    plugin: str  # e.g. kubernetes.io/aws-ebs
    driver: str  # e.g. ebs.csi.aws.com
    source: str  # the volume source field, e.g. awsElasticBlockStore
    id_field: str  # the field naming the disk


PLUGINS: Final = (
    InTreePlugin("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "awsElasticBlockStore", "volumeID"),
    InTreePlugin("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "gcePersistentDisk", "pdName"),
    InTreePlugin("kubernetes.io/azure-disk", "disk.csi.azure.com", "azureDisk", "diskURI"),
    InTreePlugin("kubernetes.io/cinder", "cinder.csi.openstack.org", "cinder", "volumeID"),
    InTreePlugin("kubernetes.io/portworx-volume", "pxd.portworx.com", "portworxVolume", "volumeID"),
)
#: Migratable but never counted by NodeVolumeLimits (migration is not "on" for them there).
UNCOUNTED_SOURCES: Final = frozenset({"azureFile", "vsphereVolume"})
BY_PLUGIN: Final = {p.plugin: p for p in PLUGINS}
BY_SOURCE: Final = {p.source: p for p in PLUGINS}


def migrated_source(volume_source: Mapping[str, Any]) -> tuple[InTreePlugin, str] | None:
    """The in-tree plugin and disk id of a volume (or PV) source that migrates to CSI."""
    for source, plugin in BY_SOURCE.items():
        value = volume_source.get(source)
        if isinstance(value, Mapping):
            disk = str(value.get(plugin.id_field) or "")
            if plugin.source == "awsElasticBlockStore" and disk.startswith("aws://"):
                disk = disk.rsplit("/", 1)[-1]  # aws://zone/vol-id names vol-id
            return plugin, disk
    return None


def is_inline_migratable(volume: Mapping[str, Any]) -> bool:
    """kube's IsInlineMigratable: an inline in-tree source a CSI driver replaces."""
    return any(isinstance(volume.get(s), Mapping) for s in (*BY_SOURCE, *UNCOUNTED_SOURCES))

"""kube-scheduler's four volume plugins: VolumeBinding, VolumeZone, NodeVolumeLimits
and VolumeRestrictions.

They read storage objects (PersistentVolumeClaims, PersistentVolumes,
StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments)
through informer-fed stores the daemon starts only when a profile enables one
of them (each plugin's ``watches``). :mod:`.objects` holds the shared reading
of those objects, :mod:`.assume` the in-memory bindings VolumeBinding makes at
Reserve, :mod:`.migration` the in-tree to CSI names; each plugin has a module
of its own.
"""

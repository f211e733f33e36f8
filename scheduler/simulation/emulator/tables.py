"""Server-side printing: objects as ``meta.k8s.io`` Tables, the way kubectl asks for them.

``kubectl get`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``
and prints whatever columns the server defines; without this it can only
show NAME and AGE. The columns and cells follow kube-apiserver 1.36's
printers (pkg/printers/internalversion) for
the built-in kinds the emulator serves (pods, nodes, namespaces, both
event APIs, configmaps, leases, priorityclasses, poddisruptionbudgets,
services, replicationcontrollers, apps workloads, volumes and storage
classes, CSI objects, resource.k8s.io kinds), and its CRD column convertor
for custom resources. CSIStorageCapacities and CRDs get what kube-apiserver's
storage for them uses, the default convertor (name and creation time). Column
descriptions are kube-apiserver's, taken from the types' swagger docs. The
server always fills the wide (priority 1) columns; kubectl shows them with
-o wide.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from scheduler.simulation.emulator import statuserrors
from scheduler.simulation.emulator.resources import ResourceType

Obj = dict[str, Any]
Column = tuple[str, str, str, str, int]  # name, type, format, description, priority
Printer = Callable[[Obj], list[Any]]

TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT = ("", "Metadata", "Object", "None")

# Descriptions are kube's (the types' swagger docs), so columnDefinitions match byte for byte.
_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_NAME: Column = ("Name", "string", "name", _NAME_DOC, 0)
_AGE: Column = ("Age", "string", "", _CREATED_DOC, 0)

POD_COLUMNS: list[Column] = [
    _NAME,
    ("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
    ("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
    (
        "Restarts",
        "string",
        "",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
        0,
    ),
    _AGE,
    (
        "IP",
        "string",
        "",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
        "not yet allocated.",
        1,
    ),
    (
        "Node",
        "string",
        "",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
        "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
        "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
        "This field should not be used to express a desire for the pod to be scheduled on a "
        "specific node. "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        1,
    ),
    (
        "Nominated Node",
        "string",
        "",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
        "cannot be scheduled right away as preemption victims receive their graceful "
        "termination periods. This field does not guarantee that the pod will be scheduled on "
        "this node. Scheduler may decide to place the pod elsewhere if other nodes become "
        "available sooner. Scheduler may also decide to give the resources on this node to a "
        "higher priority pod that is created after preemption. As a result, this field may be "
        "different than PodSpec.nodeName when the pod is scheduled.",
        1,
    ),
    (
        "Readiness Gates",
        "string",
        "",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
        "when all its containers are ready AND all conditions specified in the readiness gates "
        'have status equal to "True" More info: '
        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        1,
    ),
]
_ADDRESSES_DOC = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field "
    "is declared as mergeable, but the merge key is not sufficiently unique, which can cause "
    "data corruption when it is merged. Callers should instead use a full-replacement patch. "
    "See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can "
    "change during the lifetime of a Node. However, there are some exceptions where this may "
    "not be possible, such as Pods that inherit a Node's address in its own status or "
    "consumers of the downward API (status.hostIP)."
)
NODE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", "", "The status of the node", 0),
    ("Roles", "string", "", "The roles of the node", 0),
    _AGE,
    ("Version", "string", "", "Kubelet Version reported by the node.", 0),
    ("Internal-IP", "string", "", _ADDRESSES_DOC, 1),
    ("External-IP", "string", "", _ADDRESSES_DOC, 1),
    (
        "OS-Image",
        "string",
        "",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        1,
    ),
    (
        "Kernel-Version",
        "string",
        "",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
    ),
    (
        "Container-Runtime",
        "string",
        "",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
        "containerd://1.4.2).",
        1,
    ),
]
NAMESPACE_COLUMNS: list[Column] = [
    _NAME,
    ("Status", "string", "", "The status of the namespace", 0),
    _AGE,
]

EVENT_COLUMNS: list[Column] = [
    (
        "Last Seen",
        "string",
        "",
        "The time at which the most recent occurrence of this event was recorded.",
        0,
    ),
    (
        "Type",
        "string",
        "",
        "Type of this event (Normal, Warning), new types could be added in the future",
        0,
    ),
    (
        "Reason",
        "string",
        "",
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status.",
        0,
    ),
    ("Object", "string", "", "The object that this event is about.", 0),
    (
        "Subobject",
        "string",
        "",
        "If referring to a piece of an object instead of an entire object, this string should "
        "contain a valid JSON/Go field access statement, such as "
        "desiredState.manifest.containers[2]. For example, if the object reference is to a "
        'container within a pod, this would take on a value like: "spec.containers{name}" '
        '(where "name" refers to the name of the container that triggered the event) or if no '
        'container name is specified "spec.containers[2]" (container with index 2 in this '
        "pod). This syntax is chosen only to have some well-defined way of referencing a part "
        "of an object.",
        1,
    ),
    (
        "Source",
        "string",
        "",
        "The component reporting this event. Should be a short machine understandable string.",
        1,
    ),
    ("Message", "string", "", "A human-readable description of the status of this operation.", 0),
    (
        "First Seen",
        "string",
        "",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    ("Count", "string", "", "The number of times this event has occurred.", 1),
    ("Name", "string", "name", _NAME_DOC, 1),
]
CONFIGMAP_COLUMNS: list[Column] = [
    _NAME,
    (
        "Data",
        "string",
        "",
        "Data contains the configuration data. Each key must consist of alphanumeric "
        "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
        "BinaryData field. The keys stored in Data must not overlap with the keys in the "
        "BinaryData field, this is enforced during validation process.",
        0,
    ),
    _AGE,
]
LEASE_COLUMNS: list[Column] = [
    _NAME,
    (
        "Holder",
        "string",
        "",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated "
        "Leader Election is used, the holder identity must be equal to the elected "
        "LeaseCandidate.metadata.name field.",
        0,
    ),
    _AGE,
]
PRIORITY_CLASS_COLUMNS: list[Column] = [
    _NAME,
    (
        "Value",
        "integer",
        "",
        "value represents the integer value of this priority class. This is the actual "
        "priority that pods receive when they have the name of this class in their pod spec.",
        0,
    ),
    (
        "Global-Default",
        "boolean",
        "",
        "globalDefault specifies whether this PriorityClass should be considered as the "
        "default priority for pods that do not have any priority class. Only one PriorityClass "
        "can be marked as `globalDefault`. However, if more than one PriorityClasses exists "
        "with their `globalDefault` field set to true, the smallest value of such global "
        "default PriorityClasses will be used as the default priority.",
        0,
    ),
    _AGE,
    (
        "PreemptionPolicy",
        "string",
        "",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
        "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        0,
    ),
]
PDB_COLUMNS: list[Column] = [
    _NAME,
    ("Min Available", "string", "", "The minimum number of pods that must be available.", 0),
    ("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0),
    (
        "Allowed Disruptions",
        "integer",
        "",
        "Calculated number of pods that may be disrupted at this time.",
        0,
    ),
    _AGE,
]

PV_COLUMNS: list[Column] = [
    _NAME,
    (
        "Capacity",
        "string",
        "",
        "capacity is the description of the persistent volume's resources and capacity. "
        "More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
        0,
    ),
    (
        "Access Modes",
        "string",
        "",
        "accessModes contains all ways the volume can be mounted. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
        0,
    ),
    (
        "Reclaim Policy",
        "string",
        "",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when "
        "released from its claim. Valid options are Retain (default for manually created "
        "PersistentVolumes), Delete (default for dynamically provisioned "
        "PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the "
        "volume plugin underlying this PersistentVolume. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
        0,
    ),
    (
        "Status",
        "string",
        "",
        "phase indicates if a volume is available, bound to a claim, or released by a "
        "claim. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
        0,
    ),
    (
        "Claim",
        "string",
        "",
        "claimRef is part of a bi-directional binding between PersistentVolume and "
        "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the "
        "authoritative bind between PV and PVC. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
        0,
    ),
    (
        "StorageClass",
        "string",
        "",
        "StorageClass of the pv",
        0,
    ),
    (
        "VolumeAttributesClass",
        "string",
        "",
        "VolumeAttributesClass of the pv",
        0,
    ),
    (
        "Reason",
        "string",
        "",
        "reason is a brief CamelCase string that describes any failure and is meant for "
        "machine parsing and tidy display in the CLI.",
        0,
    ),
    _AGE,
    (
        "VolumeMode",
        "string",
        "",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem "
        "or to remain in raw block state. Value of Filesystem is implied when not included "
        "in spec.",
        1,
    ),
]
PVC_COLUMNS: list[Column] = [
    _NAME,
    (
        "Status",
        "string",
        "",
        "phase represents the current phase of PersistentVolumeClaim.",
        0,
    ),
    (
        "Volume",
        "string",
        "",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
        0,
    ),
    (
        "Capacity",
        "string",
        "",
        "capacity represents the actual resources of the underlying volume.",
        0,
    ),
    (
        "Access Modes",
        "string",
        "",
        "accessModes contains the actual access modes the volume backing the PVC has. More "
        "info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
        0,
    ),
    (
        "StorageClass",
        "string",
        "",
        "StorageClass of the pvc",
        0,
    ),
    (
        "VolumeAttributesClass",
        "string",
        "",
        "VolumeAttributesClass of the pvc",
        0,
    ),
    _AGE,
    (
        "VolumeMode",
        "string",
        "",
        "volumeMode defines what type of volume is required by the claim. Value of "
        "Filesystem is implied when not included in claim spec.",
        1,
    ),
]
STORAGE_CLASS_COLUMNS: list[Column] = [
    _NAME,
    (
        "Provisioner",
        "string",
        "",
        "provisioner indicates the type of the provisioner.",
        0,
    ),
    (
        "ReclaimPolicy",
        "string",
        "",
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
        "PersistentVolumes of this storage class. Defaults to Delete.",
        0,
    ),
    (
        "VolumeBindingMode",
        "string",
        "",
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and "
        "bound.  When unset, VolumeBindingImmediate is used. This field is only honored by "
        "servers that enable the VolumeScheduling feature.",
        0,
    ),
    (
        "AllowVolumeExpansion",
        "string",
        "",
        "allowVolumeExpansion shows whether the storage class allow volume expand.",
        0,
    ),
    _AGE,
]
DEVICE_CLASS_COLUMNS: list[Column] = [
    _NAME,
    _AGE,
]
RESOURCE_CLAIM_COLUMNS: list[Column] = [
    _NAME,
    (
        "State",
        "string",
        "",
        "A summary of the current state (allocated, pending, reserved, etc.).",
        0,
    ),
    _AGE,
]
RESOURCE_CLAIM_TEMPLATE_COLUMNS: list[Column] = [
    _NAME,
    _AGE,
]
RESOURCE_SLICE_COLUMNS: list[Column] = [
    _NAME,
    (
        "Node",
        "string",
        "",
        "NodeName identifies the node which provides the resources in this pool. A field "
        "selector can be used to list only ResourceSlice objects belonging to a certain "
        "node.\n\nThis field can be used to limit access from nodes to ResourceSlices with "
        "the same node name. It also indicates to autoscalers that adding new nodes of the "
        "same type as some old node might also make new resources available.\n\nExactly one "
        "of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This "
        "field is immutable.",
        0,
    ),
    (
        "Driver",
        "string",
        "",
        "Driver identifies the DRA driver providing the capacity information. A field "
        "selector can be used to list only ResourceSlice objects with a certain driver "
        "name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the "
        "vendor of the driver. It should use only lower case characters. This field is "
        "immutable.",
        0,
    ),
    (
        "Pool",
        "string",
        "",
        "Name is used to identify the pool. For node-local devices, this is often the node "
        "name, but this is not required.\n\nIt must not be longer than 253 characters and "
        "must consist of one or more DNS sub-domains separated by slashes. This field is "
        "immutable.",
        0,
    ),
    _AGE,
]
SERVICE_COLUMNS: list[Column] = [
    _NAME,
    (
        "Type",
        "string",
        "",
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options "
        'are ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a '
        "cluster-internal IP address for load-balancing to endpoints. Endpoints are "
        "determined by the selector or if that is not specified, by manual construction of "
        'an Endpoints object or EndpointSlice objects. If clusterIP is "None", no virtual '
        "IP is allocated and the endpoints are published as a set of endpoints rather than "
        'a virtual IP. "NodePort" builds on ClusterIP and allocates a port on every node '
        'which routes to the same endpoints as the clusterIP. "LoadBalancer" builds on '
        "NodePort and creates an external load-balancer (if supported in the current cloud) "
        'which routes to the same endpoints as the clusterIP. "ExternalName" aliases this '
        "service to the specified externalName. Several other fields do not apply to "
        "ExternalName services. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
        0,
    ),
    (
        "Cluster-IP",
        "string",
        "",
        "clusterIP is the IP address of the service and is usually assigned randomly. If an "
        "address is specified manually, is in-range (as per system configuration), and is "
        "not in use, it will be allocated to the service; otherwise creation of the service "
        "will fail. This field may not be changed through updates unless the type field is "
        "also being changed to ExternalName (which requires this field to be blank) or the "
        "type field is being changed from ExternalName (in which case this field may "
        'optionally be specified, as describe above).  Valid values are "None", empty '
        'string (""), or a valid IP address. Setting this to "None" makes a "headless '
        'service" (no virtual IP), which is useful when direct endpoint connections are '
        "preferred and proxying is not required.  Only applies to types ClusterIP, "
        "NodePort, and LoadBalancer. If this field is specified when creating a Service of "
        "type ExternalName, creation will fail. This field will be wiped when updating a "
        "Service to type ExternalName. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        0,
    ),
    (
        "External-IP",
        "string",
        "",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also "
        "accept traffic for this service.  These IPs are not managed by Kubernetes.  The "
        "user is responsible for ensuring that traffic arrives at a node with this IP.  A "
        "common example is external load-balancers that are not part of the Kubernetes "
        "system.",
        0,
    ),
    (
        "Port(s)",
        "string",
        "",
        "The list of ports that are exposed by this service. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        0,
    ),
    _AGE,
    (
        "Selector",
        "string",
        "",
        "Route service traffic to pods with label keys and values matching this selector. "
        "If empty or not present, the service is assumed to have an external process "
        "managing its endpoints, which Kubernetes will not modify. Only applies to types "
        "ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/",
        1,
    ),
]
DEPLOYMENT_COLUMNS: list[Column] = [
    _NAME,
    (
        "Ready",
        "string",
        "",
        "Number of the pod with ready state",
        0,
    ),
    (
        "Up-to-date",
        "string",
        "",
        "Total number of non-terminating pods targeted by this deployment that have the "
        "desired template spec.",
        0,
    ),
    (
        "Available",
        "string",
        "",
        "Total number of available non-terminating pods (ready for at least "
        "minReadySeconds) targeted by this deployment.",
        0,
    ),
    _AGE,
    (
        "Containers",
        "string",
        "",
        "Names of each container in the template.",
        1,
    ),
    (
        "Images",
        "string",
        "",
        "Images referenced by each container in the template.",
        1,
    ),
    (
        "Selector",
        "string",
        "",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will "
        "be the ones affected by this deployment. It must match the pod template's labels.",
        1,
    ),
]
REPLICA_SET_COLUMNS: list[Column] = [
    _NAME,
    (
        "Desired",
        "integer",
        "",
        "Replicas is the number of desired pods. This is a pointer to distinguish between "
        "explicit zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        0,
    ),
    (
        "Current",
        "integer",
        "",
        "Replicas is the most recently observed number of non-terminating pods. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        0,
    ),
    (
        "Ready",
        "integer",
        "",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
        0,
    ),
    _AGE,
    (
        "Containers",
        "string",
        "",
        "Names of each container in the template.",
        1,
    ),
    (
        "Images",
        "string",
        "",
        "Images referenced by each container in the template.",
        1,
    ),
    (
        "Selector",
        "string",
        "",
        "Selector is a label query over pods that should match the replica count. Label "
        "keys and values that must match in order to be controlled by this replica set. It "
        "must match the pod template's labels. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
]
STATEFUL_SET_COLUMNS: list[Column] = [
    _NAME,
    (
        "Ready",
        "string",
        "",
        "Number of the pod with ready state",
        0,
    ),
    _AGE,
    (
        "Containers",
        "string",
        "",
        "Names of each container in the template.",
        1,
    ),
    (
        "Images",
        "string",
        "",
        "Images referenced by each container in the template.",
        1,
    ),
]
VOLUME_ATTACHMENT_COLUMNS: list[Column] = [
    _NAME,
    (
        "Attacher",
        "string",
        "name",
        "attacher indicates the name of the volume driver that MUST handle this request. "
        "This is the name returned by GetPluginName().",
        0,
    ),
    (
        "PV",
        "string",
        "",
        "persistentVolumeName represents the name of the persistent volume to attach.",
        0,
    ),
    (
        "Node",
        "string",
        "",
        "nodeName represents the node that the volume should be attached to.",
        0,
    ),
    (
        "Attached",
        "boolean",
        "",
        "attached indicates the volume is successfully attached. This field must only be "
        "set by the entity completing the attach operation, i.e. the external-attacher.",
        0,
    ),
    _AGE,
]
CSI_NODE_COLUMNS: list[Column] = [
    _NAME,
    (
        "Drivers",
        "integer",
        "",
        "Drivers indicates the number of CSI drivers registered on the node",
        0,
    ),
    _AGE,
]
CSI_DRIVER_COLUMNS: list[Column] = [
    _NAME,
    (
        "AttachRequired",
        "boolean",
        "",
        "attachRequired indicates this CSI volume driver requires an attach operation "
        "(because it implements the CSI ControllerPublishVolume() method), and that the "
        "Kubernetes attach detach controller should call the attach volume interface which "
        "checks the volumeattachment status and waits until the volume is attached before "
        "proceeding to mounting. The CSI external-attacher coordinates with CSI volume "
        "driver and updates the volumeattachment status when the attach operation is "
        "complete. If the value is specified to false, the attach operation will be "
        "skipped. Otherwise the attach operation will be called.\n\nThis field is "
        "immutable.",
        0,
    ),
    (
        "PodInfoOnMount",
        "boolean",
        "",
        "podInfoOnMount indicates this CSI volume driver requires additional pod "
        "information (like podName, podUID, etc.) during mount operations, if set to true. "
        "If set to false, pod information will not be passed on mount. Default is "
        "false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If "
        "true, Kubelet will pass pod information as VolumeContext in the CSI "
        "NodePublishVolume() calls. The CSI driver is responsible for parsing and "
        "validating the information passed in as VolumeContext.\n\nThe following "
        "VolumeContext will be passed if podInfoOnMount is set to true. This list might "
        'grow, but the prefix will be used. "csi.storage.k8s.io/pod.name": pod.Name '
        '"csi.storage.k8s.io/pod.namespace": pod.Namespace "csi.storage.k8s.io/pod.uid": '
        'string(pod.UID) "csi.storage.k8s.io/ephemeral": "true" if the volume is an '
        "ephemeral inline volume\n                                defined by a "
        'CSIVolumeSource, otherwise "false"\n\n"csi.storage.k8s.io/ephemeral" is a new '
        "feature in Kubernetes 1.16. It is only required for drivers which support both the "
        '"Persistent" and "Ephemeral" VolumeLifecycleMode. Other drivers can leave pod info '
        "disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, "
        "drivers can only support one mode when deployed on such a cluster and the "
        "deployment determines which mode that is, for example via a command line parameter "
        "of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is "
        "mutable.",
        0,
    ),
    (
        "StorageCapacity",
        "boolean",
        "",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to "
        "consider the storage capacity that the driver deployment will report by creating "
        "CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check "
        "can be enabled immediately when deploying a driver. In that case, provisioning new "
        "volumes with late binding will pause until the driver deployment has published "
        "some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be "
        "deployed with the field unset or false and it can be flipped later when storage "
        "capacity information has been published.\n\nThis field was immutable in Kubernetes "
        "<= 1.22 and now is mutable.",
        0,
    ),
    (
        "TokenRequests",
        "string",
        "",
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is "
        "mounting volume for to do necessary authentication. Kubelet will pass the tokens "
        "in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse "
        "and validate the following VolumeContext: "
        '"csi.storage.k8s.io/serviceAccount.tokens": {\n  "<audience>": {\n    "token": '
        '<token>,\n    "expirationTimestamp": <expiration timestamp in RFC3339>,\n  },\n  '
        "...\n}\n\nNote: Audience in each TokenRequest should be different and at most one "
        "token is empty string. To receive a new token after expiry, RequiresRepublish can "
        "be used to trigger NodePublishVolume periodically.",
        0,
    ),
    (
        "RequiresRepublish",
        "boolean",
        "",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being "
        "periodically called to reflect any possible change in the mounted volume. This "
        "field defaults to false.\n\nNote: After a successful initial NodePublishVolume "
        "call, subsequent calls to NodePublishVolume should only update the contents of the "
        "volume. New mount points will not be seen by a running container.",
        0,
    ),
    (
        "Modes",
        "string",
        "",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. "
        'The default if the list is empty is "Persistent", which is the usage defined by '
        "the CSI specification and implemented in Kubernetes via the usual PV/PVC "
        'mechanism.\n\nThe other mode is "Ephemeral". In this mode, volumes are defined '
        "inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the "
        "lifecycle of that pod. A driver has to be aware of this because it is only going "
        "to get a NodePublishVolume call for such a volume.\n\nFor more information about "
        "implementing this mode, see "
        "https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can "
        "support one or more of these modes and more modes may be added in the "
        "future.\n\nThis field is beta. This field is immutable.",
        0,
    ),
    _AGE,
]
REPLICATION_CONTROLLER_COLUMNS: list[Column] = [
    _NAME,
    (
        "Desired",
        "integer",
        "",
        "Replicas is the number of desired replicas. This is a pointer to distinguish "
        "between explicit zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    (
        "Current",
        "integer",
        "",
        "Replicas is the most recently observed number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    (
        "Ready",
        "integer",
        "",
        "The number of ready replicas for this replication controller.",
        0,
    ),
    _AGE,
    (
        "Containers",
        "string",
        "",
        "Names of each container in the template.",
        1,
    ),
    (
        "Images",
        "string",
        "",
        "Images referenced by each container in the template.",
        1,
    ),
    (
        "Selector",
        "string",
        "",
        "Selector is a label query over pods that should match the Replicas count. If "
        "Selector is empty, it is defaulted to the labels present on the Pod template. "
        "Label keys and values that must match in order to be controlled by this "
        "replication controller, if empty defaulted to labels on Pod template. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
]
# apiserver's default convertor, for the kinds kube registers no printer for.
DEFAULT_TABLE_COLUMNS: list[Column] = [
    _NAME,
    (
        "Created At",
        "date",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was "
        "created. It is not guaranteed to be set in happens-before order across separate "
        "operations. Clients may not set this value. It is represented in RFC3339 form and "
        "is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        0,
    ),
]
VOLUME_ATTRIBUTES_CLASS_COLUMNS: list[Column] = [
    _NAME,
    (
        "DriverName",
        "string",
        "",
        "Name of the CSI driver This field is immutable.",
        0,
    ),
    _AGE,
]

_POD_DONE_CONDITIONS = {
    "Succeeded": [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ],
    "Failed": [
        {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
    ],
}


def table_version(accept: str) -> str | None:
    """The Table version ``accept`` asks for first, or None for the plain object.

    Media types are taken in the client's order, as kube's negotiation does;
    conversions we do not serve (PartialObjectMetadata) are skipped.
    """
    for clause in accept.split(","):
        media, *params = (p.strip() for p in clause.split(";"))
        options = dict(p.partition("=")[::2] for p in params)
        target = options.get("as")
        if target is None:
            if media in ("application/json", "application/*", "*/*", ""):
                return None
            continue
        if (
            target == "Table"
            and options.get("g") == "meta.k8s.io"
            and options.get("v") in TABLE_VERSIONS
            and media in ("application/json", "application/*", "*/*")
        ):
            return options["v"]
    return None


def check_include_object(value: str) -> str:
    """The ``includeObject`` query value, validated as kube's ValidateTableOptions does."""
    if value not in INCLUDE_OBJECT:
        raise statuserrors.bad_request(
            "Unable to convert to Table as requested: includeObject: Unsupported value: "
            f'"{value}": supported values: "Metadata", "None", "Object"'
        )
    return value


def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``: the AGE column's text."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{hours // 24 // 365}y"


def _since(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return human_duration((datetime.now(UTC) - when).total_seconds())


def _age(obj: Obj) -> str:
    return _since((obj.get("metadata") or {}).get("creationTimestamp"))


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _restartable(container: Obj | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _last(state: Obj | None) -> Obj | None:
    return ((state or {}).get("terminated")) or None


def _terminated_reason(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _print_pod(pod: Obj) -> list[Any]:
    """kube's printPod, branch for branch (the STATUS text users know)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    containers = spec.get("containers") or []
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(containers) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart = ""
    last_sidecar_restart = ""
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        count = int(cs.get("restartCount") or 0)
        restarts += count
        finished = (_last(cs.get("lastState")) or {}).get("finishedAt") or ""
        last_restart = max(last_restart, finished)
        sidecar = _restartable(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += count
            last_sidecar_restart = max(last_sidecar_restart, finished)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        error_reason = ""
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            finished = (_last(cs.get("lastState")) or {}).get("finishedAt") or ""
            last_restart = max(last_restart, finished)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term is not None:
                reason = _terminated_reason(term)
                if int(term.get("exitCode") or 0) != 0:
                    error_reason = reason
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed":
            pod_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or []
            )
            if has_running and pod_ready:
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({_since(last_restart)} ago)"

    ips = status.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        conditions = status.get("conditions") or []
        true = 0
        for gate in gates:
            for condition in conditions:
                if condition.get("type") == gate.get("conditionType"):
                    true += condition.get("status") == "True"
                    break
        gates_text = f"{true}/{len(gates)}"
    return [
        _name(pod),
        f"{ready}/{total}",
        reason,
        restarts_text,
        _age(pod),
        (ips[0].get("ip") if ips else "") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


def _node_address(status: Obj, kind: str) -> str:
    for address in status.get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _print_node(node: Obj) -> list[Any]:
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    states = []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key[len("node-role.kubernetes.io/") :])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    kernel = info.get("kernelVersion") or "<unknown>"
    if info.get("architecture"):
        kernel += f" ({info['architecture']})"
    return [
        _name(node),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _age(node),
        info.get("kubeletVersion") or "",
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        kernel,
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _print_namespace(ns: Obj) -> list[Any]:
    return [_name(ns), (ns.get("status") or {}).get("phase") or "", _age(ns)]


def _print_event(event: Obj) -> list[Any]:
    """kube's printEvent (core/v1 form): when, what, about which object, how often."""
    first = _since(event.get("firstTimestamp"))
    if not event.get("firstTimestamp"):
        first = _since(event.get("eventTime"))
    last = _since(event.get("lastTimestamp")) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if series is not None:
        last = _since(series.get("lastObservedTime"))
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [
        last,
        event.get("type") or "",
        event.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        f"{component}, {instance}" if instance else component,
        str(event.get("message") or "").strip(),
        first,
        count,
        _name(event),
    ]


def _print_events_v1(event: Obj) -> list[Any]:
    """An events.k8s.io/v1 Event, converted to the core form kube prints it in."""
    core = {
        "metadata": event.get("metadata"),
        "involvedObject": event.get("regarding"),
        "source": event.get("deprecatedSource"),
        "message": event.get("note"),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount"),
        "series": event.get("series"),
        "eventTime": event.get("eventTime"),
        "type": event.get("type"),
        "reason": event.get("reason"),
        "reportingComponent": event.get("reportingController"),
        "reportingInstance": event.get("reportingInstance"),
    }
    return _print_event(core)


def _print_configmap(cm: Obj) -> list[Any]:
    return [_name(cm), len(cm.get("data") or {}) + len(cm.get("binaryData") or {}), _age(cm)]


def _print_lease(lease: Obj) -> list[Any]:
    return [_name(lease), (lease.get("spec") or {}).get("holderIdentity") or "", _age(lease)]


def _print_priority_class(pc: Obj) -> list[Any]:
    return [
        _name(pc),
        int(pc.get("value") or 0),
        bool(pc.get("globalDefault")),
        _age(pc),
        pc.get("preemptionPolicy") or "",
    ]


def _print_pdb(pdb: Obj) -> list[Any]:
    spec = pdb.get("spec") or {}
    least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _name(pdb),
        "N/A" if least is None else str(least),
        "N/A" if most is None else str(most),
        int((pdb.get("status") or {}).get("disruptionsAllowed") or 0),
        _age(pdb),
    ]


def _labels_text(labels: Obj | None) -> str:
    """kube's labels.FormatLabels: sorted ``k=v`` pairs, ``<none>`` when empty."""
    text = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
    return text or "<none>"


def _selector_text(selector: Obj | None) -> str | None:
    """A LabelSelector as LabelSelectorAsSelector(...).String() writes it; None if invalid."""
    requirements: list[tuple[str, str]] = []
    for key, value in ((selector or {}).get("matchLabels") or {}).items():
        requirements.append((key, f"{key}={value}"))
    for expr in (selector or {}).get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op))
        if text is None:
            return None
        requirements.append((key, text))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def _or(text: str | None, invalid: str) -> str:
    return invalid if text is None else text


def _containers_text(template: Obj | None) -> tuple[str, str]:
    """kube's layoutContainerCells: container names and images, comma-joined."""
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    return names, ",".join(str(c.get("image", "")) for c in containers)


def _access_modes(modes: list[Any] | None) -> str:
    """kube's GetAccessModesAsString: the short forms, in kube's fixed order."""
    given = set(modes or [])
    short = (
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    )
    return ",".join(text for mode, text in short if mode in given)


_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _annotations(obj: Obj) -> Obj:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _print_pv(pv: Obj) -> list[Any]:
    spec, status = pv.get("spec") or {}, pv.get("status") or {}
    claim = spec.get("claimRef")
    annotations = _annotations(pv)
    klass = annotations[_BETA_CLASS] if _BETA_CLASS in annotations else spec.get("storageClassName")
    mode, vac = spec.get("volumeMode"), spec.get("volumeAttributesClassName")
    return [
        _name(pv),
        str((spec.get("capacity") or {}).get("storage") or "0"),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        "Terminating" if _deleting(pv) else status.get("phase") or "",
        f"{claim.get('namespace') or ''}/{claim.get('name') or ''}" if claim is not None else "",
        klass or "",
        "<unset>" if vac is None else vac,
        status.get("reason") or "",
        _age(pv),
        "<unset>" if mode is None else mode,
    ]


def _print_pvc(pvc: Obj) -> list[Any]:
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = str((status.get("capacity") or {}).get("storage") or "0")
    annotations = _annotations(pvc)
    klass = annotations[_BETA_CLASS] if _BETA_CLASS in annotations else spec.get("storageClassName")
    mode, vac = spec.get("volumeMode"), spec.get("volumeAttributesClassName")
    return [
        _name(pvc),
        "Terminating" if _deleting(pvc) else status.get("phase") or "",
        spec.get("volumeName") or "",
        capacity,
        modes,
        klass or "",
        "<unset>" if vac is None else vac,
        _age(pvc),
        "<unset>" if mode is None else mode,
    ]


_DEFAULT_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _print_storage_class(sc: Obj) -> list[Any]:
    name = _name(sc)
    if any(_annotations(sc).get(key) == "true" for key in _DEFAULT_CLASS):
        name += " (default)"
    expansion = sc.get("allowVolumeExpansion")
    return [
        name,
        sc.get("provisioner") or "",
        sc.get("reclaimPolicy") or "Delete",
        sc.get("volumeBindingMode") or "Immediate",
        bool(expansion) if expansion is not None else False,
        _age(sc),
    ]


def _print_name_age(obj: Obj) -> list[Any]:
    return [_name(obj), _age(obj)]


def _print_resource_claim(claim: Obj) -> list[Any]:
    """kube's resourceClaimState: deleted / pending / allocated / reserved."""
    status = claim.get("status") or {}
    states = []
    if _deleting(claim):
        states.append("deleted")
    if status.get("allocation") is None:
        if not _deleting(claim):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return [_name(claim), ",".join(states), _age(claim)]


def _print_resource_slice(rs: Obj) -> list[Any]:
    spec = rs.get("spec") or {}
    return [
        _name(rs),
        spec.get("nodeName") or "",
        spec.get("driver") or "",
        (spec.get("pool") or {}).get("name") or "",
        _age(rs),
    ]


def _external_ip(service: Obj) -> str:
    """kube's getServiceExternalIP, wide (load-balancer addresses not shortened)."""
    spec = service.get("spec") or {}
    kind = spec.get("type") or ""
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        found = {
            str(i.get("ip") or i.get("hostname"))
            for i in ingress
            if i.get("ip") or i.get("hostname")
        }
        balancer = ",".join(sorted(found))
        if external:
            return ",".join([*([balancer] if balancer else []), *external])
        return balancer or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _print_service(service: Obj) -> list[Any]:
    spec = service.get("spec") or {}
    ports = []
    for port in spec.get("ports") or []:
        number, protocol = int(port.get("port") or 0), port.get("protocol") or ""
        node_port = int(port.get("nodePort") or 0)
        ports.append(
            f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}"
        )
    cluster_ips = spec.get("clusterIPs") or []
    return [
        _name(service),
        spec.get("type") or "",
        cluster_ips[0] if cluster_ips else "<none>",
        _external_ip(service),
        ",".join(ports) or "<none>",
        _age(service),
        _labels_text(spec.get("selector")),
    ]


def _print_deployment(deployment: Obj) -> list[Any]:
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(deployment),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        _age(deployment),
        names,
        images,
        _or(_selector_text(spec.get("selector")), "<invalid>"),
    ]


def _print_replica_set(rs: Obj) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(rs),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(rs),
        names,
        images,
        _or(_selector_text(spec.get("selector")), "<error>") or "<none>",
    ]


def _print_replication_controller(rc: Obj) -> list[Any]:
    spec, status = rc.get("spec") or {}, rc.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(rc),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(rc),
        names,
        images,
        _labels_text(spec.get("selector")),
    ]


def _print_stateful_set(sts: Obj) -> list[Any]:
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    names, images = _containers_text(spec.get("template"))
    return [
        _name(sts),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        _age(sts),
        names,
        images,
    ]


def _print_volume_attachment(va: Obj) -> list[Any]:
    spec = va.get("spec") or {}
    return [
        _name(va),
        spec.get("attacher") or "",
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName") or "",
        bool((va.get("status") or {}).get("attached")),
        _age(va),
    ]


def _print_csi_node(node: Obj) -> list[Any]:
    return [_name(node), len((node.get("spec") or {}).get("drivers") or []), _age(node)]


def _flag(spec: Obj, field: str, default: bool) -> bool:
    value = spec.get(field)
    return default if value is None else bool(value)


def _print_csi_driver(driver: Obj) -> list[Any]:
    spec = driver.get("spec") or {}
    tokens = spec.get("tokenRequests")
    return [
        _name(driver),
        _flag(spec, "attachRequired", True),
        _flag(spec, "podInfoOnMount", False),
        _flag(spec, "storageCapacity", False),
        "<unset>" if tokens is None else ",".join(str(t.get("audience", "")) for t in tokens),
        _flag(spec, "requiresRepublish", False),
        ",".join(str(m) for m in spec.get("volumeLifecycleModes") or []) or "<none>",
        _age(driver),
    ]


def _print_volume_attributes_class(vac: Obj) -> list[Any]:
    return [_name(vac), vac.get("driverName") or "", _age(vac)]


def _print_created_at(obj: Obj) -> list[Any]:
    """kube's default table convertor (kinds without a printer): name and creation time."""
    created = (obj.get("metadata") or {}).get("creationTimestamp") or "0001-01-01T00:00:00Z"
    return [_name(obj), created]


_PRINTERS: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("", "pods"): (POD_COLUMNS, _print_pod),
    ("", "nodes"): (NODE_COLUMNS, _print_node),
    ("", "namespaces"): (NAMESPACE_COLUMNS, _print_namespace),
    ("", "events"): (EVENT_COLUMNS, _print_event),
    ("", "configmaps"): (CONFIGMAP_COLUMNS, _print_configmap),
    ("coordination.k8s.io", "leases"): (LEASE_COLUMNS, _print_lease),
    ("scheduling.k8s.io", "priorityclasses"): (PRIORITY_CLASS_COLUMNS, _print_priority_class),
    ("policy", "poddisruptionbudgets"): (PDB_COLUMNS, _print_pdb),
    ("", "persistentvolumes"): (PV_COLUMNS, _print_pv),
    ("", "persistentvolumeclaims"): (PVC_COLUMNS, _print_pvc),
    ("storage.k8s.io", "storageclasses"): (STORAGE_CLASS_COLUMNS, _print_storage_class),
    ("resource.k8s.io", "deviceclasses"): (DEVICE_CLASS_COLUMNS, _print_name_age),
    ("resource.k8s.io", "resourceclaims"): (RESOURCE_CLAIM_COLUMNS, _print_resource_claim),
    ("resource.k8s.io", "resourceclaimtemplates"): (
        RESOURCE_CLAIM_TEMPLATE_COLUMNS,
        _print_name_age,
    ),
    ("resource.k8s.io", "resourceslices"): (RESOURCE_SLICE_COLUMNS, _print_resource_slice),
    ("", "services"): (SERVICE_COLUMNS, _print_service),
    ("", "replicationcontrollers"): (REPLICATION_CONTROLLER_COLUMNS, _print_replication_controller),
    ("apps", "deployments"): (DEPLOYMENT_COLUMNS, _print_deployment),
    ("apps", "replicasets"): (REPLICA_SET_COLUMNS, _print_replica_set),
    ("apps", "statefulsets"): (STATEFUL_SET_COLUMNS, _print_stateful_set),
    ("storage.k8s.io", "volumeattachments"): (VOLUME_ATTACHMENT_COLUMNS, _print_volume_attachment),
    ("storage.k8s.io", "csinodes"): (CSI_NODE_COLUMNS, _print_csi_node),
    ("storage.k8s.io", "csidrivers"): (CSI_DRIVER_COLUMNS, _print_csi_driver),
    ("storage.k8s.io", "csistoragecapacities"): (DEFAULT_TABLE_COLUMNS, _print_created_at),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        DEFAULT_TABLE_COLUMNS,
        _print_created_at,
    ),
    ("storage.k8s.io", "volumeattributesclasses"): (
        VOLUME_ATTRIBUTES_CLASS_COLUMNS,
        _print_volume_attributes_class,
    ),
    ("events.k8s.io", "events"): (EVENT_COLUMNS, _print_events_v1),
}


def _jsonpath_value(obj: Any, path: str) -> tuple[bool, Any]:
    """The value at a simple JSONPath (``.a.b``, ``.a[0].b``, ``.metadata.labels.x\\.y``)."""
    node = obj
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    parts: list[str | int] = []
    current = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current += text[i + 1]
            i += 2
            continue
        if ch == ".":
            if current:
                parts.append(current)
            current = ""
        elif ch == "[":
            if current:
                parts.append(current)
            end = text.find("]", i)
            index = text[i + 1 : end].strip("'\"")
            parts.append(int(index) if index.lstrip("-").isdigit() else index)
            current, i = "", end
        else:
            current += ch
        i += 1
    if current:
        parts.append(current)
    for part in parts:
        in_list = isinstance(part, int) and isinstance(node, list)
        in_list = in_list and -len(node) <= int(part) < len(node)
        in_map = isinstance(part, str) and isinstance(node, dict) and part in node
        if not (in_list or in_map):
            return False, None
        node = node[part]
    return True, node


def _crd_cell(kind: str, value: Any) -> Any:
    """One custom column's cell, as apiextensions' tableconvertor types it."""
    if value is None:
        return None
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return json.dumps(value, separators=(",", ":"))
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        return _since(value)
    return None


def _crd_printer(columns: list[Obj]) -> tuple[list[Column], Printer]:
    defs: list[Column] = [_NAME]
    for col in columns:
        desc = col.get("description") or (
            f"Custom resource definition column (in JSONPath format): {col.get('jsonPath', '')}"
        )
        defs.append(
            (
                str(col.get("name", "")),
                str(col.get("type", "")),
                str(col.get("format", "")),
                desc,
                int(col.get("priority") or 0),
            )
        )

    def printer(obj: Obj) -> list[Any]:
        cells: list[Any] = [_name(obj)]
        for col in columns:
            found, value = _jsonpath_value(obj, str(col.get("jsonPath", "")))
            cells.append(_crd_cell(str(col.get("type", "")), value) if found else None)
        return cells

    return defs, printer


def printer_for(rt: ResourceType) -> tuple[list[Column], Printer] | None:
    """The columns and row printer of ``rt``; None where we have no printer of kube's.

    For those kinds the plain object is served and kubectl prints its own
    NAME and AGE columns, rather than columns kube-apiserver would not show.
    """
    if rt.custom:
        return _crd_printer(list(rt.extra.get("printer_columns") or DEFAULT_CRD_COLUMNS))
    return _PRINTERS.get((rt.group, rt.plural))


# apiextensions defaults a version without additionalPrinterColumns to this one column.
DEFAULT_CRD_COLUMNS: tuple[Obj, ...] = (
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class TableEncoder:
    """Turns served objects into Table JSON for one request (or one watch).

    A watch sends the column definitions with its first event only, as
    kube-apiserver's watch encoder does.
    """

    def __init__(
        self, printer: tuple[list[Column], Printer], version: str, include_object: str
    ) -> None:
        self.api_version = f"meta.k8s.io/{version}"
        self.include_object = check_include_object(include_object)
        self.columns, self.printer = printer
        self.headers_sent = False

    def _column_defs(self) -> list[Obj] | None:
        if self.headers_sent:
            return None
        return [
            {"name": n, "type": t, "format": f, "description": d, "priority": p}
            for n, t, f, d, p in self.columns
        ]

    def _row(self, obj: Obj) -> Obj:
        row: Obj = {"cells": self.printer(obj)}
        if self.columns is POD_COLUMNS:
            conditions = _POD_DONE_CONDITIONS.get((obj.get("status") or {}).get("phase") or "")
            if conditions:
                row["conditions"] = conditions
        if self.include_object == "Object":
            row["object"] = obj
        elif self.include_object == "None":
            row["object"] = None
        else:
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": self.api_version,
                "metadata": obj.get("metadata") or {},
            }
        return row

    def table(self, items: list[Obj], list_meta: Obj) -> bytes:
        body = {
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": list_meta,
            "columnDefinitions": self._column_defs(),
            "rows": [self._row(item) for item in items],
        }
        return orjson.dumps(body)

    def watch_lines(self, data: bytes) -> bytes:
        """Re-encode a chunk of watch event lines with Table objects (errors pass through)."""
        out: list[bytes] = []
        for line in data.splitlines():
            if not line:
                continue
            event = orjson.loads(line)
            obj = event.get("object")
            if event.get("type") != "ERROR" and isinstance(obj, dict):
                rv = (obj.get("metadata") or {}).get("resourceVersion", "")
                table = self.table([obj], {"resourceVersion": rv} if rv else {})
                self.headers_sent = True
                out.append(b'{"type":"' + event["type"].encode() + b'","object":' + table + b"}\n")
            else:
                out.append(line + b"\n")
        return b"".join(out)

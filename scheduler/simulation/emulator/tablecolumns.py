"""The columns kube-apiserver 1.36 prints for each kind, as ``columnDefinitions``.

Data only, apart from the printers in :mod:`.tables` that fill the cells:
names, types, formats, priorities (1: shown by ``-o wide``) and the
descriptions, which are the types' swagger docs, so that a Table's
definitions match kube-apiserver's byte for byte.
"""

from __future__ import annotations

Column = tuple[str, str, str, str, int]  # name, type, format, description, priority

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
WORKLOAD_COLUMNS: list[Column] = [
    _NAME,
    _AGE,
]
POD_GROUP_COLUMNS: list[Column] = [
    _NAME,
    (
        "Policy",
        "string",
        "",
        "SchedulingPolicy defines the scheduling policy for this instance of the PodGroup. "
        "Controllers are expected to fill this field by copying it from a PodGroupTemplate. "
        "This field is immutable.",
        0,
    ),
    ("Workload", "string", "", "Name of the referenced Workload object", 0),
    ("Status", "string", "", "Status of the PodGroup", 0),
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

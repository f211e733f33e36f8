"""Decoding request bodies into the apiserver's Go types, as far as clients can tell.

kube-apiserver unmarshals a body into typed structs before anything else, so
a wrongly typed field (``containers: "x"``, a number as a label value) is a
400 BadRequest naming the Go struct field, and a bad quantity string is a 400
with the quantity parser's message. This module walks the fields the
emulator's clients use with the same outcome and wording, and normalizes what
decoding normalizes: quantities in canonical form, ``null`` map values as
empty strings. Fields it does not describe are passed through unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.simulation.emulator import quantity, statuserrors
from scheduler.simulation.emulator.resources import ResourceType

Obj = dict[str, Any]


@dataclass(frozen=True)
class Type:
    """A Go type: ``kind`` is scalar/struct/list/map/quantity/intorstr/any."""

    kind: str
    go: str = ""
    elem: Type | None = None
    fields: dict[str, Type] = field(default_factory=dict)
    # Quantities in ResourceLists are rounded up to milli precision
    # (SetDefaults_ResourceList).
    round_milli: bool = False

    @property
    def struct_name(self) -> str:
        return self.go.rsplit(".", 1)[-1]


ANY = Type("any")
STR = Type("scalar", "string")
BOOL = Type("scalar", "bool")
INT32 = Type("scalar", "int32")
INT64 = Type("scalar", "int64")
QUANTITY = Type("quantity", "resource.Quantity")
INT_OR_STR = Type("intorstr", "intstr.IntOrString")
STRINGS = Type("list", "[]string", STR)
STRING_MAP = Type("map", "map[string]string", STR)
RESOURCE_LIST = Type(
    "map", "v1.ResourceList", Type("quantity", "resource.Quantity", round_milli=True)
)


def struct(go: str, **fields: Type) -> Type:
    return Type("struct", go, fields=fields)


def list_of(elem: Type) -> Type:
    return Type("list", "[]" + elem.go, elem)


OBJECT_META = struct(
    "v1.ObjectMeta",
    name=STR,
    generateName=STR,
    namespace=STR,
    uid=STR,
    resourceVersion=STR,
    generation=INT64,
    deletionGracePeriodSeconds=INT64,
    labels=STRING_MAP,
    annotations=STRING_MAP,
    finalizers=STRINGS,
    ownerReferences=list_of(
        struct(
            "v1.OwnerReference",
            apiVersion=STR,
            kind=STR,
            name=STR,
            uid=STR,
            controller=BOOL,
            blockOwnerDeletion=BOOL,
        )
    ),
)
OBJECT_REFERENCE = struct(
    "v1.ObjectReference",
    kind=STR,
    namespace=STR,
    name=STR,
    uid=STR,
    apiVersion=STR,
    resourceVersion=STR,
    fieldPath=STR,
)
LABEL_SELECTOR = struct(
    "v1.LabelSelector",
    matchLabels=STRING_MAP,
    matchExpressions=list_of(
        struct("v1.LabelSelectorRequirement", key=STR, operator=STR, values=STRINGS)
    ),
)
_NODE_SELECTOR_TERM = struct(
    "v1.NodeSelectorTerm",
    matchExpressions=list_of(
        struct("v1.NodeSelectorRequirement", key=STR, operator=STR, values=STRINGS)
    ),
    matchFields=list_of(
        struct("v1.NodeSelectorRequirement", key=STR, operator=STR, values=STRINGS)
    ),
)
_POD_AFFINITY_TERM = struct(
    "v1.PodAffinityTerm",
    labelSelector=LABEL_SELECTOR,
    namespaces=STRINGS,
    topologyKey=STR,
    namespaceSelector=LABEL_SELECTOR,
    matchLabelKeys=STRINGS,
    mismatchLabelKeys=STRINGS,
)
_WEIGHTED_POD_AFFINITY_TERM = struct(
    "v1.WeightedPodAffinityTerm", weight=INT32, podAffinityTerm=_POD_AFFINITY_TERM
)
AFFINITY = struct(
    "v1.Affinity",
    nodeAffinity=struct(
        "v1.NodeAffinity",
        requiredDuringSchedulingIgnoredDuringExecution=struct(
            "v1.NodeSelector", nodeSelectorTerms=list_of(_NODE_SELECTOR_TERM)
        ),
        preferredDuringSchedulingIgnoredDuringExecution=list_of(
            struct("v1.PreferredSchedulingTerm", weight=INT32, preference=_NODE_SELECTOR_TERM)
        ),
    ),
    podAffinity=struct(
        "v1.PodAffinity",
        requiredDuringSchedulingIgnoredDuringExecution=list_of(_POD_AFFINITY_TERM),
        preferredDuringSchedulingIgnoredDuringExecution=list_of(_WEIGHTED_POD_AFFINITY_TERM),
    ),
    podAntiAffinity=struct(
        "v1.PodAntiAffinity",
        requiredDuringSchedulingIgnoredDuringExecution=list_of(_POD_AFFINITY_TERM),
        preferredDuringSchedulingIgnoredDuringExecution=list_of(_WEIGHTED_POD_AFFINITY_TERM),
    ),
)
RESOURCES = struct(
    "v1.ResourceRequirements",
    limits=RESOURCE_LIST,
    requests=RESOURCE_LIST,
    claims=list_of(struct("v1.ResourceClaim", name=STR, request=STR)),
)
CONTAINER = struct(
    "v1.Container",
    name=STR,
    image=STR,
    command=STRINGS,
    args=STRINGS,
    workingDir=STR,
    ports=list_of(
        struct(
            "v1.ContainerPort",
            name=STR,
            hostPort=INT32,
            containerPort=INT32,
            protocol=STR,
            hostIP=STR,
        )
    ),
    resources=RESOURCES,
    imagePullPolicy=STR,
    terminationMessagePath=STR,
    terminationMessagePolicy=STR,
    stdin=BOOL,
    tty=BOOL,
)
TOLERATION = struct(
    "v1.Toleration", key=STR, operator=STR, value=STR, effect=STR, tolerationSeconds=INT64
)
POD_SPEC = struct(
    "v1.PodSpec",
    initContainers=list_of(CONTAINER),
    containers=list_of(CONTAINER),
    restartPolicy=STR,
    terminationGracePeriodSeconds=INT64,
    activeDeadlineSeconds=INT64,
    dnsPolicy=STR,
    nodeSelector=STRING_MAP,
    serviceAccountName=STR,
    serviceAccount=STR,
    automountServiceAccountToken=BOOL,
    nodeName=STR,
    hostNetwork=BOOL,
    hostPID=BOOL,
    hostIPC=BOOL,
    shareProcessNamespace=BOOL,
    hostname=STR,
    subdomain=STR,
    affinity=AFFINITY,
    schedulerName=STR,
    tolerations=list_of(TOLERATION),
    priorityClassName=STR,
    priority=INT32,
    runtimeClassName=STR,
    enableServiceLinks=BOOL,
    preemptionPolicy=STR,
    overhead=RESOURCE_LIST,
    topologySpreadConstraints=list_of(
        struct(
            "v1.TopologySpreadConstraint",
            maxSkew=INT32,
            topologyKey=STR,
            whenUnsatisfiable=STR,
            labelSelector=LABEL_SELECTOR,
            minDomains=INT32,
            nodeAffinityPolicy=STR,
            nodeTaintsPolicy=STR,
            matchLabelKeys=STRINGS,
        )
    ),
    setHostnameAsFQDN=BOOL,
    hostUsers=BOOL,
    schedulingGates=list_of(struct("v1.PodSchedulingGate", name=STR)),
    schedulingGroup=struct("v1.PodSchedulingGroup", podGroupName=STR),
    resources=RESOURCES,
    resourceClaims=list_of(
        struct(
            "v1.PodResourceClaim",
            name=STR,
            resourceClaimName=STR,
            resourceClaimTemplateName=STR,
        )
    ),
)
_CONDITION_FIELDS = {"type": STR, "status": STR, "reason": STR, "message": STR}
POD = struct(
    "v1.Pod",
    metadata=OBJECT_META,
    spec=POD_SPEC,
    status=struct(
        "v1.PodStatus",
        phase=STR,
        conditions=list_of(Type("struct", "v1.PodCondition", fields=_CONDITION_FIELDS)),
        message=STR,
        reason=STR,
        nominatedNodeName=STR,
        hostIP=STR,
        podIP=STR,
        qosClass=STR,
        resourceClaimStatuses=list_of(
            struct("v1.PodResourceClaimStatus", name=STR, resourceClaimName=STR)
        ),
    ),
)
NODE = struct(
    "v1.Node",
    metadata=OBJECT_META,
    spec=struct(
        "v1.NodeSpec",
        podCIDR=STR,
        podCIDRs=STRINGS,
        providerID=STR,
        unschedulable=BOOL,
        taints=list_of(struct("v1.Taint", key=STR, value=STR, effect=STR)),
    ),
    status=struct(
        "v1.NodeStatus",
        capacity=RESOURCE_LIST,
        allocatable=RESOURCE_LIST,
        phase=STR,
        conditions=list_of(Type("struct", "v1.NodeCondition", fields=_CONDITION_FIELDS)),
        addresses=list_of(struct("v1.NodeAddress", type=STR, address=STR)),
    ),
)
NAMESPACE = struct(
    "v1.Namespace",
    metadata=OBJECT_META,
    spec=struct("v1.NamespaceSpec", finalizers=STRINGS),
    status=struct("v1.NamespaceStatus", phase=STR),
)
BINDING = struct("v1.Binding", metadata=OBJECT_META, target=OBJECT_REFERENCE)
CORE_EVENT = struct(
    "v1.Event",
    metadata=OBJECT_META,
    involvedObject=OBJECT_REFERENCE,
    reason=STR,
    message=STR,
    count=INT32,
    type=STR,
    action=STR,
    reportingComponent=STR,
    reportingInstance=STR,
    related=OBJECT_REFERENCE,
)
EVENTS_V1_EVENT = struct(
    "v1.Event",
    metadata=OBJECT_META,
    reportingController=STR,
    reportingInstance=STR,
    action=STR,
    reason=STR,
    regarding=OBJECT_REFERENCE,
    related=OBJECT_REFERENCE,
    note=STR,
    type=STR,
    deprecatedCount=INT32,
)
LEASE = struct(
    "v1.Lease",
    metadata=OBJECT_META,
    spec=struct(
        "v1.LeaseSpec",
        holderIdentity=STR,
        leaseDurationSeconds=INT32,
        leaseTransitions=INT32,
        strategy=STR,
        preferredHolder=STR,
    ),
)
PDB = struct(
    "v1.PodDisruptionBudget",
    metadata=OBJECT_META,
    spec=struct(
        "v1.PodDisruptionBudgetSpec",
        minAvailable=INT_OR_STR,
        maxUnavailable=INT_OR_STR,
        selector=LABEL_SELECTOR,
        unhealthyPodEvictionPolicy=STR,
    ),
    status=struct(
        "v1.PodDisruptionBudgetStatus",
        observedGeneration=INT64,
        currentHealthy=INT32,
        desiredHealthy=INT32,
        disruptionsAllowed=INT32,
        expectedPods=INT32,
    ),
)
PRIORITY_CLASS = struct(
    "v1.PriorityClass",
    metadata=OBJECT_META,
    value=INT32,
    globalDefault=BOOL,
    description=STR,
    preemptionPolicy=STR,
)
_NODE_SELECTOR = struct("v1.NodeSelector", nodeSelectorTerms=list_of(_NODE_SELECTOR_TERM))
_PVC_SPEC = struct(
    "v1.PersistentVolumeClaimSpec",
    accessModes=STRINGS,
    selector=LABEL_SELECTOR,
    resources=struct("v1.VolumeResourceRequirements", limits=RESOURCE_LIST, requests=RESOURCE_LIST),
    volumeName=STR,
    storageClassName=STR,
    volumeMode=STR,
)
PERSISTENT_VOLUME = struct(
    "v1.PersistentVolume",
    metadata=OBJECT_META,
    spec=struct(
        "v1.PersistentVolumeSpec",
        capacity=RESOURCE_LIST,
        accessModes=STRINGS,
        claimRef=OBJECT_REFERENCE,
        persistentVolumeReclaimPolicy=STR,
        storageClassName=STR,
        volumeMode=STR,
        nodeAffinity=struct("v1.VolumeNodeAffinity", required=_NODE_SELECTOR),
        hostPath=struct("v1.HostPathVolumeSource", path=STR, type=STR),
        local=struct("v1.LocalVolumeSource", path=STR, fsType=STR),
        nfs=struct("v1.NFSVolumeSource", server=STR, path=STR, readOnly=BOOL),
        csi=struct(
            "v1.CSIPersistentVolumeSource",
            driver=STR,
            volumeHandle=STR,
            readOnly=BOOL,
            fsType=STR,
            volumeAttributes=STRING_MAP,
        ),
    ),
    status=struct("v1.PersistentVolumeStatus", phase=STR, message=STR, reason=STR),
)
PERSISTENT_VOLUME_CLAIM = struct(
    "v1.PersistentVolumeClaim",
    metadata=OBJECT_META,
    spec=_PVC_SPEC,
    status=struct(
        "v1.PersistentVolumeClaimStatus",
        phase=STR,
        accessModes=STRINGS,
        capacity=RESOURCE_LIST,
    ),
)
STORAGE_CLASS = struct(
    "v1.StorageClass",
    metadata=OBJECT_META,
    provisioner=STR,
    parameters=STRING_MAP,
    reclaimPolicy=STR,
    mountOptions=STRINGS,
    allowVolumeExpansion=BOOL,
    volumeBindingMode=STR,
    allowedTopologies=list_of(
        struct(
            "v1.TopologySelectorTerm",
            matchLabelExpressions=list_of(
                struct("v1.TopologySelectorLabelRequirement", key=STR, values=STRINGS)
            ),
        )
    ),
)
CSI_NODE = struct(
    "v1.CSINode",
    metadata=OBJECT_META,
    spec=struct(
        "v1.CSINodeSpec",
        drivers=list_of(
            struct(
                "v1.CSINodeDriver",
                name=STR,
                nodeID=STR,
                topologyKeys=STRINGS,
                allocatable=struct("v1.VolumeNodeResources", count=INT32),
            )
        ),
    ),
)
CSI_DRIVER = struct(
    "v1.CSIDriver",
    metadata=OBJECT_META,
    spec=struct(
        "v1.CSIDriverSpec",
        attachRequired=BOOL,
        podInfoOnMount=BOOL,
        storageCapacity=BOOL,
        requiresRepublish=BOOL,
        seLinuxMount=BOOL,
        fsGroupPolicy=STR,
        volumeLifecycleModes=STRINGS,
        nodeAllocatableUpdatePeriodSeconds=INT64,
    ),
)
CSI_STORAGE_CAPACITY = struct(
    "v1.CSIStorageCapacity",
    metadata=OBJECT_META,
    nodeTopology=LABEL_SELECTOR,
    storageClassName=STR,
    capacity=QUANTITY,
    maximumVolumeSize=QUANTITY,
)
GENERIC = struct("v1.Object", metadata=OBJECT_META)

# -- resource.k8s.io/v1: dynamic resource allocation ----------------------------
_NODE_SELECTOR_V1 = struct("v1.NodeSelector", nodeSelectorTerms=list_of(_NODE_SELECTOR_TERM))
_DEVICE_SELECTOR = struct("v1.DeviceSelector", cel=struct("v1.CELDeviceSelector", expression=STR))
_DEVICE_TOLERATION = struct(
    "v1.DeviceToleration",
    key=STR,
    operator=STR,
    value=STR,
    effect=STR,
    tolerationSeconds=INT64,
)
_QUANTITY_MAP = Type("map", "map[v1.QualifiedName]resource.Quantity", QUANTITY)
_CAPACITY_REQUIREMENTS = struct("v1.CapacityRequirements", requests=_QUANTITY_MAP)
_OPAQUE = struct("v1.OpaqueDeviceConfiguration", driver=STR, parameters=ANY)
_DEVICE_CLAIM = struct(
    "v1.DeviceClaim",
    requests=list_of(
        struct(
            "v1.DeviceRequest",
            name=STR,
            exactly=struct(
                "v1.ExactDeviceRequest",
                deviceClassName=STR,
                selectors=list_of(_DEVICE_SELECTOR),
                allocationMode=STR,
                count=INT64,
                adminAccess=BOOL,
                tolerations=list_of(_DEVICE_TOLERATION),
                capacity=_CAPACITY_REQUIREMENTS,
            ),
            firstAvailable=list_of(
                struct(
                    "v1.DeviceSubRequest",
                    name=STR,
                    deviceClassName=STR,
                    selectors=list_of(_DEVICE_SELECTOR),
                    allocationMode=STR,
                    count=INT64,
                    tolerations=list_of(_DEVICE_TOLERATION),
                    capacity=_CAPACITY_REQUIREMENTS,
                )
            ),
        )
    ),
    constraints=list_of(
        struct(
            "v1.DeviceConstraint",
            requests=STRINGS,
            matchAttribute=STR,
            distinctAttribute=STR,
        )
    ),
    config=list_of(struct("v1.DeviceClaimConfiguration", requests=STRINGS, opaque=_OPAQUE)),
)
_CLAIM_SPEC = struct("v1.ResourceClaimSpec", devices=_DEVICE_CLAIM)
DEVICE_CLASS = struct(
    "v1.DeviceClass",
    metadata=OBJECT_META,
    spec=struct(
        "v1.DeviceClassSpec",
        selectors=list_of(_DEVICE_SELECTOR),
        config=list_of(struct("v1.DeviceClassConfiguration", opaque=_OPAQUE)),
        extendedResourceName=STR,
    ),
)
_COUNTERS = Type("map", "map[string]v1.Counter", struct("v1.Counter", value=QUANTITY))
RESOURCE_SLICE = struct(
    "v1.ResourceSlice",
    metadata=OBJECT_META,
    spec=struct(
        "v1.ResourceSliceSpec",
        driver=STR,
        pool=struct("v1.ResourcePool", name=STR, generation=INT64, resourceSliceCount=INT64),
        nodeName=STR,
        nodeSelector=_NODE_SELECTOR_V1,
        allNodes=BOOL,
        devices=list_of(
            struct(
                "v1.Device",
                name=STR,
                attributes=Type(
                    "map",
                    "map[v1.QualifiedName]v1.DeviceAttribute",
                    struct(
                        "v1.DeviceAttribute",
                        int=INT64,
                        bool=BOOL,
                        string=STR,
                        version=STR,
                        ints=list_of(INT64),
                        bools=list_of(BOOL),
                        strings=STRINGS,
                        versions=STRINGS,
                    ),
                ),
                capacity=Type(
                    "map",
                    "map[v1.QualifiedName]v1.DeviceCapacity",
                    struct(
                        "v1.DeviceCapacity",
                        value=QUANTITY,
                        requestPolicy=struct(
                            "v1.CapacityRequestPolicy",
                            default=QUANTITY,
                            validValues=list_of(QUANTITY),
                            validRange=struct(
                                "v1.CapacityRequestPolicyRange",
                                min=QUANTITY,
                                max=QUANTITY,
                                step=QUANTITY,
                            ),
                        ),
                    ),
                ),
                consumesCounters=list_of(
                    struct("v1.DeviceCounterConsumption", counterSet=STR, counters=_COUNTERS)
                ),
                nodeName=STR,
                nodeSelector=_NODE_SELECTOR_V1,
                allNodes=BOOL,
                taints=list_of(
                    struct("v1.DeviceTaint", key=STR, value=STR, effect=STR, timeAdded=STR)
                ),
                bindsToNode=BOOL,
                bindingConditions=STRINGS,
                bindingFailureConditions=STRINGS,
                allowMultipleAllocations=BOOL,
            )
        ),
        perDeviceNodeSelection=BOOL,
        sharedCounters=list_of(struct("v1.CounterSet", name=STR, counters=_COUNTERS)),
    ),
)
RESOURCE_CLAIM = struct(
    "v1.ResourceClaim",
    metadata=OBJECT_META,
    spec=_CLAIM_SPEC,
    status=struct(
        "v1.ResourceClaimStatus",
        allocation=struct(
            "v1.AllocationResult",
            devices=struct(
                "v1.DeviceAllocationResult",
                results=list_of(
                    struct(
                        "v1.DeviceRequestAllocationResult",
                        request=STR,
                        driver=STR,
                        pool=STR,
                        device=STR,
                        adminAccess=BOOL,
                        tolerations=list_of(_DEVICE_TOLERATION),
                        bindingConditions=STRINGS,
                        bindingFailureConditions=STRINGS,
                        shareID=STR,
                        consumedCapacity=_QUANTITY_MAP,
                    )
                ),
                config=list_of(
                    struct(
                        "v1.DeviceAllocationConfiguration",
                        source=STR,
                        requests=STRINGS,
                        opaque=_OPAQUE,
                    )
                ),
            ),
            nodeSelector=_NODE_SELECTOR_V1,
            allocationTimestamp=STR,
        ),
        reservedFor=list_of(
            struct(
                "v1.ResourceClaimConsumerReference",
                apiGroup=STR,
                resource=STR,
                name=STR,
                uid=STR,
            )
        ),
    ),
)
RESOURCE_CLAIM_TEMPLATE = struct(
    "v1.ResourceClaimTemplate",
    metadata=OBJECT_META,
    spec=struct("v1.ResourceClaimTemplateSpec", metadata=OBJECT_META, spec=_CLAIM_SPEC),
)

_SCHEDULING_POLICY = struct(
    "v1alpha2.PodGroupSchedulingPolicy",
    basic=struct("v1alpha2.BasicSchedulingPolicy"),
    gang=struct("v1alpha2.GangSchedulingPolicy", minCount=INT32),
)
WORKLOAD = struct(
    "v1alpha2.Workload",
    metadata=OBJECT_META,
    spec=struct(
        "v1alpha2.WorkloadSpec",
        controllerRef=struct(
            "v1alpha2.TypedLocalObjectReference", apiGroup=STR, kind=STR, name=STR
        ),
        podGroupTemplates=list_of(
            struct(
                "v1alpha2.PodGroupTemplate",
                name=STR,
                schedulingPolicy=_SCHEDULING_POLICY,
                priorityClassName=STR,
                priority=INT32,
                disruptionMode=STR,
            )
        ),
    ),
)
POD_GROUP = struct(
    "v1alpha2.PodGroup",
    metadata=OBJECT_META,
    spec=struct(
        "v1alpha2.PodGroupSpec",
        podGroupTemplateRef=struct(
            "v1alpha2.PodGroupTemplateReference",
            workload=struct(
                "v1alpha2.WorkloadPodGroupTemplateReference",
                workloadName=STR,
                podGroupTemplateName=STR,
            ),
        ),
        schedulingPolicy=_SCHEDULING_POLICY,
        priorityClassName=STR,
        priority=INT32,
        disruptionMode=STR,
    ),
)

_SCHEMAS: dict[tuple[str, str], Type] = {
    ("scheduling.k8s.io", "Workload"): WORKLOAD,
    ("scheduling.k8s.io", "PodGroup"): POD_GROUP,
    ("", "Pod"): POD,
    ("", "Node"): NODE,
    ("", "Namespace"): NAMESPACE,
    ("", "Binding"): BINDING,
    ("", "Event"): CORE_EVENT,
    ("events.k8s.io", "Event"): EVENTS_V1_EVENT,
    ("coordination.k8s.io", "Lease"): LEASE,
    ("policy", "PodDisruptionBudget"): PDB,
    ("scheduling.k8s.io", "PriorityClass"): PRIORITY_CLASS,
    ("", "PersistentVolume"): PERSISTENT_VOLUME,
    ("", "PersistentVolumeClaim"): PERSISTENT_VOLUME_CLAIM,
    ("storage.k8s.io", "StorageClass"): STORAGE_CLASS,
    ("storage.k8s.io", "CSINode"): CSI_NODE,
    ("storage.k8s.io", "CSIDriver"): CSI_DRIVER,
    ("storage.k8s.io", "CSIStorageCapacity"): CSI_STORAGE_CAPACITY,
    ("resource.k8s.io", "DeviceClass"): DEVICE_CLASS,
    ("resource.k8s.io", "ResourceSlice"): RESOURCE_SLICE,
    ("resource.k8s.io", "ResourceClaim"): RESOURCE_CLAIM,
    ("resource.k8s.io", "ResourceClaimTemplate"): RESOURCE_CLAIM_TEMPLATE,
}

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class _Failure(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


class _Decoder:
    """encoding/json semantics: the first type error is reported after the whole
    document is read; an error from a custom unmarshaler (Quantity) aborts at once."""

    def __init__(self) -> None:
        self.first: str | None = None

    def mismatch(self, value: Any, owner: str, path: str, go: str, number: bool = False) -> None:
        if self.first is None:
            what = _describe(value)
            if number and what == "number":
                what = f"number {_number_text(value)}"
            self.first = (
                f"json: cannot unmarshal {what} into Go struct field {owner}.{path} of type {go}"
            )

    def value(self, typ: Type, value: Any, owner: str, path: str) -> Any:
        """Checked and normalized ``value``; ``owner.path`` names the field for statuserrors."""
        if value is None or typ.kind == "any":
            if typ.kind == "quantity" and value is None:
                return "0"
            return value
        kind = typ.kind
        if kind == "scalar":
            return self.scalar(typ, value, owner, path)
        if kind == "quantity":
            try:
                parsed = quantity.from_json(value)
            except quantity.QuantityError as exc:
                raise _Failure(str(exc)) from exc
            return str(parsed.round_up_milli() if typ.round_milli else parsed)
        if kind == "intorstr":
            if not isinstance(value, str):
                self.scalar(INT32, value, owner, path)
            return value
        if kind == "struct":
            if not isinstance(value, dict):
                self.mismatch(value, owner, path, typ.go)
                return value
            out = dict(value)
            for key, item in value.items():
                sub = typ.fields.get(key)
                if sub is None:
                    continue
                out[key] = self.value(sub, item, typ.struct_name, f"{path}.{key}" if path else key)
            return out
        assert typ.elem is not None
        if kind == "list":
            if not isinstance(value, list):
                self.mismatch(value, owner, path, typ.go)
                return value
            return [
                self.value(typ.elem, item, owner, path) if item is not None else item
                for item in value
            ]
        if not isinstance(value, dict):
            self.mismatch(value, owner, path, typ.go)
            return value
        out = {}
        for key, item in value.items():
            if item is None and typ.elem.kind == "scalar" and typ.elem.go == "string":
                out[key] = ""
            else:
                out[key] = self.value(typ.elem, item, owner, path)
        return out

    def scalar(self, typ: Type, value: Any, owner: str, path: str) -> Any:
        go = typ.go
        if go == "string":
            if not isinstance(value, str):
                self.mismatch(value, owner, path, go)
        elif go == "bool":
            if not isinstance(value, bool):
                self.mismatch(value, owner, path, go)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            self.mismatch(value, owner, path, go)
        else:
            low, high = _INT_RANGES[go]
            if isinstance(value, float) or not low <= value <= high:
                self.mismatch(value, owner, path, go, number=True)
        return value


def decode_error(kind: str, message: str) -> statuserrors.ApiError:
    return statuserrors.bad_request(
        f'{kind} in version "v1" cannot be handled as a {kind}: {message}'
    )


def decode(kind_group: tuple[str, str], body: Obj) -> Obj:
    """``body`` as the apiserver decodes it, or an error message (see :func:`check`)."""
    typ = _SCHEMAS.get(kind_group, GENERIC)
    decoder = _Decoder()
    out = decoder.value(typ, body, typ.struct_name, "")
    if decoder.first is not None:
        raise _Failure(decoder.first)
    result: Obj = out
    return result


def check(rt: ResourceType, body: Obj, *, kind: str = "") -> Obj:
    """Decode a create/update body: a type error is 400 BadRequest like the apiserver's."""
    kind = kind or rt.kind
    try:
        return decode((rt.group, kind), body)
    except _Failure as exc:
        raise decode_error(kind, exc.message) from exc


def check_patched(rt: ResourceType, body: Obj) -> Obj:
    """Decode a patched object: kube-apiserver answers 422 on the field ``patch``."""
    try:
        return decode((rt.group, rt.kind), body)
    except _Failure as exc:
        import orjson

        shown = orjson.dumps(body).decode()
        raise statuserrors.invalid(
            "",
            "",
            "",
            [("patch", "FieldValueInvalid", f"Invalid value: {_quote(shown)}: {exc.message}")],
        ) from exc


def _quote(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)

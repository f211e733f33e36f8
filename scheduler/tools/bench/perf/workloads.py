"""The workloads, after kube-scheduler's ``test/integration/scheduler_perf``.

Object shapes follow scheduler_perf's templates (``config/templates/``):
nodes as ``node-default.yaml`` (4 cpu, 32Gi, 110 pods, Ready), pods as
``pod-default.yaml`` (one pause container, port 80, 100m cpu / 500Mi
requested and limited) and its variants. Every node also carries a
``kubernetes.io/hostname`` label, as a kubelet would set it, so hostname
topology keys mean one domain per node.

Each workload is a list of pod-creation phases, as scheduler_perf's
``createPods`` ops: ``init`` phases fill the cluster first (and are waited
for unless scheduler_perf skips the wait), the one ``measure`` phase is what
throughput is collected over. Sizes are scheduler_perf's ``5000Nodes``
(``--scale full``) and ``500Nodes`` (``--scale small``) variants; the brief
for this project sets SchedulingBasic's full run to 10,000 measured pods.

The volume workloads (``volumes/performance-config.yaml`` upstream) give a
phase's pods a ``volume`` source: as ``createPods`` with
``persistentVolumeTemplatePath``/``persistentVolumeClaimTemplatePath`` (test/utils'
``CreatePodWithPersistentVolume``), every pod gets its own PVC and a PV
pre-bound to it, created through the API just before the pod, inside the
measured window when the phase is measured. Their nodes may carry CSINode
objects (``nodeAllocatableStrategy``).

The DRA workloads (``dra/performance-config.yaml`` upstream) give every node a
ResourceSlice of ``test-driver.cdi.k8s.io`` devices (``createResourceDriver``),
create the DeviceClass ``test-class`` and a ResourceClaimTemplate in each pod
namespace, and create pods that name the template
(``pod-with-claim-template.yaml``). Their claims are made by a claim controller
running beside the API server, as scheduler_perf runs kube's in-process (see
:mod:`scheduler.tools.bench.perf.runner`). A steady-state phase (``createPods`` with
``steadyState``) creates ``count`` pods, waits for them to be scheduled, deletes
them and starts again until its duration is over.

The batch workloads have no scheduler_perf counterpart (upstream has no gang
or quota workload); they are shaped the same way and run the contrib plugins
they are about in the profile of both schedulers, the peer being
scheduler-plugins' own kube-scheduler (:mod:`scheduler.tools.schedulerplugins`).
**SchedulingGangs** creates its measured pods in Coscheduling PodGroups
(``scheduling.x-k8s.io/v1alpha1``, ``minMember`` the gang size, the pods
labelled ``scheduling.x-k8s.io/pod-group``), the groups before the window,
their members one after the other in it, so members wait in Permit for
siblings that do not exist yet, as a Job's pods arrive. A gang counts when its
last member is bound. **SchedulingElasticQuota** spreads its measured pods
over namespaces with an ElasticQuota each (CapacityScheduling): every second
quota has a ``min`` below its demand and a ``max`` below it too, borrowing the
unused ``min`` of the others up to ``max``; the rest of its pods stay pending.
How many get scheduled follows from the quotas alone (:func:`quota_admitted`),
and the harness checks that no quota's ``used`` ever exceeds its ``max``.

Everything here is plain data, so a workload can cross a process boundary
(the emulator builds its preloaded objects from it in its own process).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from typing import Any

SCHEDULER_NAME = "perf-scheduler"
HIGH_PRIORITY_CLASS = "perf-high"
HIGH_PRIORITY = 10
INIT_NAMESPACE = "sched-0"
EBS_CSI_DRIVER = "ebs.csi.aws.com"
AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
VOLUME_SOURCES = ("aws", "csi")  # pv-aws.yaml, pv-csi.yaml
DRA_DRIVER = "test-driver.cdi.k8s.io"
DEVICE_CLASS = "test-class"
CLAIM_TEMPLATE = "test-claim-template"
POD_CLAIM = "resource"  # the pod's spec.resourceClaims[].name in pod-with-claim-template.yaml
DRA_NODE_LABEL = "node-with-dra"
STEADY_SECONDS = 10.0  # the steady-state workloads' ``duration: 10s``
MEASURE_NAMESPACE = "sched-1"
CHURN_NAMESPACE = "churn"
NAMESPACES = (INIT_NAMESPACE, MEASURE_NAMESPACE, CHURN_NAMESPACE)
BATCH_API = "scheduling.x-k8s.io/v1alpha1"  # scheduler-plugins' PodGroup and ElasticQuota
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING = "Coscheduling"
CAPACITY_SCHEDULING = "CapacityScheduling"
GANG_SIZE = 10
QUOTA_NAMESPACES = 10
QUOTA_NAME = "quota"
DEFAULT_POD_MILLI_CPU = 100  # pod-default.yaml's requests
DEFAULT_POD_MEMORY = 500 * 1024**2

Obj = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Phase:
    """One ``createPods`` op: ``count`` pods from ``template`` in ``namespace``."""

    name: str
    count: int
    template: str
    namespace: str
    wait: bool = True  # wait until all are scheduled before the next phase
    measure: bool = False
    # "aws" (pv-aws.yaml) or "csi" (pv-csi.yaml): each pod gets its own PVC
    # (pvc.yaml) and a PV of that source bound to it, created right before it.
    volume: str | None = None
    # scheduler_perf's ``steadyState: true`` with ``duration``: batches of `count`
    # pods, each deleted once all of it is scheduled, until this many seconds pass.
    steady_seconds: float | None = None
    # Coscheduling: pods come in PodGroups of this many (minMember), in order.
    gang_size: int | None = None
    # Pods spread round-robin over this many namespaces ``<namespace>-<i>`` (one
    # ElasticQuota each) instead of all in `namespace`.
    spread: int | None = None
    # How many of the pods can be scheduled at all (quotas leave the rest pending);
    # None: all of them.
    admitted: int | None = None
    # HeteroBasic: the workload-wide number of the phase's first pod, so that no
    # pod of any phase shares its requests with another (:func:`hetero_requests`).
    index_base: int = 0

    @property
    def namespaces(self) -> tuple[str, ...]:
        if self.spread is None:
            return (self.namespace,)
        return tuple(f"{self.namespace}-{i}" for i in range(self.spread))

    def namespace_of(self, i: int) -> str:
        """The namespace of the phase's `i`-th pod."""
        return self.namespace if self.spread is None else f"{self.namespace}-{i % self.spread}"

    @property
    def expected(self) -> int:
        """The pods a correct scheduler schedules in this phase."""
        return self.count if self.admitted is None else self.admitted

    def gang_of(self, i: int) -> str | None:
        """The PodGroup of the phase's `i`-th pod, if it has gangs."""
        return None if self.gang_size is None else gang_name(i // self.gang_size)


@dataclasses.dataclass(frozen=True)
class DRADriver:
    """scheduler_perf's ``createResourceDriver`` (and ``allocResourceClaims``).

    Every node gets one ResourceSlice of driver ``test-driver.cdi.k8s.io`` with
    ``devices_per_node`` devices (upstream's ``maxClaimsPerNode``). ``init_claims``
    ResourceClaims (``resourceclaim.yaml``) are created in the init namespace and
    allocated before the scheduler starts, on random nodes, as ``allocResourceClaims``
    does: the steady-state workloads' ``initClaims`` (half_*, full_* variants).
    """

    devices_per_node: int = 10
    init_claims: int = 0


@dataclasses.dataclass(frozen=True)
class CSINodeTemplate:
    """scheduler_perf's ``nodeAllocatableStrategy``: a CSINode per node.

    Upstream's strategy also merge-patches ``attachable-volumes-csi-*`` into
    ``status.allocatable``, but it patches the node's main resource, where
    kube-apiserver keeps the old status (nodeStrategy.PrepareForUpdate), so
    the nodes end up without it; only the CSINode counts, and only it is made.
    """

    driver: str = EBS_CSI_DRIVER
    count: int = 39
    migrated_plugins: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ElasticQuota:
    """One namespace's ElasticQuota: ``min`` and ``max`` of cpu (millicores) and memory."""

    namespace: str
    min_milli_cpu: int
    max_milli_cpu: int
    min_memory: int
    max_memory: int


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    nodes: int
    phases: tuple[Phase, ...]
    zones: tuple[str, ...] = ()  # node zone labels, assigned round-robin
    churn: bool = False  # scheduler_perf's ``churn`` op, mode recreate, every second
    bound_pods: int = 0  # pods that exist already bound before the scheduler starts
    memory_only: bool = False  # measure the scheduler's memory after sync, no scheduling
    csi_nodes: CSINodeTemplate | None = None  # a CSINode object for every node
    dra: DRADriver | None = None  # a ResourceSlice per node, DeviceClass, claim templates
    # Contrib plugins both schedulers' profile runs (Coscheduling, CapacityScheduling);
    # their peer is scheduler-plugins' kube-scheduler instead of kube's.
    plugins: tuple[str, ...] = ()
    quotas: tuple[ElasticQuota, ...] = ()

    @property
    def measured(self) -> Phase | None:
        return next((p for p in self.phases if p.measure), None)

    def describe(self) -> str:
        parts = [f"{self.nodes} nodes"]
        if self.bound_pods:
            parts.append(f"{self.bound_pods} bound pods")
        if self.csi_nodes is not None:
            migrated = ",".join(self.csi_nodes.migrated_plugins) or "none migrated"
            parts.append(f"CSINodes {self.csi_nodes.driver}={self.csi_nodes.count} ({migrated})")
        if self.dra is not None:
            parts.append(f"{self.dra.devices_per_node} devices per node")
            if self.dra.init_claims:
                parts.append(f"{self.dra.init_claims} allocated claims")
        for phase in self.phases:
            extra = f" with {phase.volume} PV+PVC" if phase.volume else ""
            if phase.template == "claim-template":
                extra = " with a claim template"
            if phase.gang_size is not None:
                extra = f" in {phase.count // phase.gang_size} gangs of {phase.gang_size}"
            if phase.spread is not None:
                extra = (
                    f" over {phase.spread} ElasticQuotas ({phase.expected} within max, "
                    "the rest pending)"
                )
            if phase.steady_seconds is not None:
                parts.append(
                    f"{phase.name} batches of {phase.count} pods{extra} "
                    f"for {phase.steady_seconds:g} s (steady state)"
                )
            else:
                parts.append(f"{phase.count} {phase.name} pods{extra}")
        if self.churn:
            parts.append("churn 1/s")
        return ", ".join(parts)


def _basic(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "SchedulingBasic",
        nodes,
        (
            Phase("init", init, "default", INIT_NAMESPACE),
            Phase("measured", measure, "default", MEASURE_NAMESPACE, measure=True),
        ),
    )


def _hetero(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "HeteroBasic",
        nodes,
        (
            Phase("init", init, "hetero", INIT_NAMESPACE),
            Phase("measured", measure, "hetero", MEASURE_NAMESPACE, measure=True, index_base=init),
        ),
    )


def _anti_affinity(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "SchedulingPodAntiAffinity",
        nodes,
        (
            Phase("init", init, "anti-affinity", INIT_NAMESPACE),
            Phase("measured", measure, "anti-affinity", MEASURE_NAMESPACE, measure=True),
        ),
    )


def _spreading(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "TopologySpreading",
        nodes,
        (
            Phase("init", init, "default", INIT_NAMESPACE),
            Phase("measured", measure, "topology-spreading", MEASURE_NAMESPACE, measure=True),
        ),
        zones=("moon-1", "moon-2", "moon-3"),
    )


def _node_affinity(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "SchedulingNodeAffinity",
        nodes,
        (
            Phase("init", init, "node-affinity", INIT_NAMESPACE),
            Phase("measured", measure, "node-affinity", MEASURE_NAMESPACE, measure=True),
        ),
        zones=("zone1",),
    )


def _unschedulable(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "Unschedulable",
        nodes,
        (
            Phase("init", init, "large-cpu", INIT_NAMESPACE, wait=False),
            Phase("measured", measure, "default", MEASURE_NAMESPACE, measure=True),
        ),
    )


def _preemption(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "PreemptionBasic",
        nodes,
        (
            Phase("init", init, "low-priority", INIT_NAMESPACE),
            Phase("measured", measure, "high-priority", MEASURE_NAMESPACE, measure=True),
        ),
    )


def _mixed_churn(nodes: int, init: int, measure: int) -> Workload:
    del init  # scheduler_perf's churn workload has no init pods
    return Workload(
        "SchedulingWithMixedChurn",
        nodes,
        (Phase("measured", measure, "default", MEASURE_NAMESPACE, measure=True),),
        churn=True,
    )


def _memory(nodes: int, init: int, measure: int) -> Workload:
    del measure
    return Workload("Memory", nodes, (), bound_pods=init, memory_only=True)


def _pv_workload(
    name: str,
    nodes: int,
    init: int,
    measure: int,
    volume: str,
    csi_nodes: CSINodeTemplate | None,
) -> Workload:
    return Workload(
        name,
        nodes,
        (
            Phase("init", init, "default", INIT_NAMESPACE, volume=volume),
            Phase("measured", measure, "default", MEASURE_NAMESPACE, measure=True, volume=volume),
        ),
        csi_nodes=csi_nodes,
    )


def _in_tree_pvs(nodes: int, init: int, measure: int) -> Workload:
    # No nodeAllocatableStrategy upstream: the nodes have no CSINode at all.
    return _pv_workload("SchedulingInTreePVs", nodes, init, measure, "aws", None)


def _migrated_in_tree_pvs(nodes: int, init: int, measure: int) -> Workload:
    csi = CSINodeTemplate(migrated_plugins=(AWS_EBS_PLUGIN,))
    return _pv_workload("SchedulingMigratedInTreePVs", nodes, init, measure, "aws", csi)


def _csi_pvs(nodes: int, init: int, measure: int) -> Workload:
    # Upstream lists no migratedPlugins: the annotation is there, empty.
    return _pv_workload("SchedulingCSIPVs", nodes, init, measure, "csi", CSINodeTemplate())


def _preemption_pvs(nodes: int, init: int, measure: int) -> Workload:
    return Workload(
        "PreemptionPVs",
        nodes,
        (
            Phase("init", init, "low-priority", INIT_NAMESPACE),
            Phase(
                "measured", measure, "high-priority", MEASURE_NAMESPACE, measure=True, volume="aws"
            ),
        ),
    )


def _claim_template(nodes: int, init: int, measure: int) -> Workload:
    # Upstream sizes maxClaimsPerNode so that the pods fill the cluster exactly
    # (10 per node, 20 for 2000pods_100nodes); never fewer than its 10.
    devices = max(10, -(-(init + measure) // max(nodes, 1)))
    return Workload(
        "SchedulingWithResourceClaimTemplate",
        nodes,
        (
            Phase("init", init, "claim-template", INIT_NAMESPACE),
            Phase("measured", measure, "claim-template", MEASURE_NAMESPACE, measure=True),
        ),
        dra=DRADriver(devices_per_node=devices),
    )


def _steady_claim_template(
    nodes: int, init: int, measure: int, duration: float = STEADY_SECONDS
) -> Workload:
    # "init" is upstream's initClaims (allocated up front), "measure" the batch size.
    return Workload(
        "SteadyStateClusterResourceClaimTemplate",
        nodes,
        (
            Phase(
                "measured",
                measure,
                "claim-template",
                MEASURE_NAMESPACE,
                measure=True,
                steady_seconds=duration,
            ),
        ),
        dra=DRADriver(devices_per_node=10, init_claims=init),
    )


def _gangs(nodes: int, init: int, measure: int) -> Workload:
    if measure % GANG_SIZE:
        raise ValueError(
            f"SchedulingGangs creates gangs of {GANG_SIZE}: the measured pods ({measure}) "
            f"must be a multiple of {GANG_SIZE}"
        )
    return Workload(
        "SchedulingGangs",
        nodes,
        (
            Phase("init", init, "default", INIT_NAMESPACE),
            Phase(
                "measured", measure, "default", MEASURE_NAMESPACE, measure=True, gang_size=GANG_SIZE
            ),
        ),
        plugins=(COSCHEDULING,),
    )


def elastic_quotas(pods: int, spread: int, namespace: str = "quota") -> tuple[ElasticQuota, ...]:
    """The quotas of `spread` namespaces sharing `pods` default pods round-robin.

    With ``d`` the cpu a namespace's pods request, even namespaces get
    ``min = d/2, max = 0.8 d`` (they borrow, and max leaves a fifth pending) and
    odd ones ``min = 1.5 d, max = 2 d`` (they lend what they do not use). Memory
    never binds: ``min = max = twice the demand``.
    """
    quotas = []
    for i in range(spread):
        count = pods // spread + (1 if i < pods % spread else 0)
        demand = count * DEFAULT_POD_MILLI_CPU
        low, high = (demand // 2, demand * 4 // 5) if i % 2 == 0 else (demand * 3 // 2, demand * 2)
        memory = 2 * count * DEFAULT_POD_MEMORY
        quotas.append(ElasticQuota(f"{namespace}-{i}", low, high, memory, memory))
    return tuple(quotas)


def quota_admitted(pods: int, quotas: Sequence[ElasticQuota]) -> int:
    """How many of `pods` default pods (round-robin over `quotas`' namespaces)
    CapacityScheduling schedules, whatever the order it tries them in.

    Each namespace gets pods until one more would exceed its ``max``. That is
    order-independent only if the aggregate check (a quota above its ``min``
    may borrow only while the sum of all ``used`` stays within the sum of all
    ``min``) never binds, which is checked here.
    """
    spread = len(quotas)
    admitted = 0
    used_cpu = 0
    used_memory = 0
    for i, quota in enumerate(quotas):
        count = pods // spread + (1 if i < pods % spread else 0)
        fits = min(
            count,
            quota.max_milli_cpu // DEFAULT_POD_MILLI_CPU,
            quota.max_memory // DEFAULT_POD_MEMORY,
        )
        admitted += fits
        used_cpu += fits * DEFAULT_POD_MILLI_CPU
        used_memory += fits * DEFAULT_POD_MEMORY
    if used_cpu > sum(q.min_milli_cpu for q in quotas) or used_memory > sum(
        q.min_memory for q in quotas
    ):
        raise ValueError("the quotas' aggregate min binds: the admitted pods depend on the order")
    return admitted


def _elastic_quota(nodes: int, init: int, measure: int) -> Workload:
    quotas = elastic_quotas(measure, QUOTA_NAMESPACES)
    return Workload(
        "SchedulingElasticQuota",
        nodes,
        (
            Phase("init", init, "default", INIT_NAMESPACE),
            Phase(
                "measured",
                measure,
                "default",
                "quota",
                measure=True,
                spread=QUOTA_NAMESPACES,
                admitted=quota_admitted(measure, quotas),
            ),
        ),
        plugins=(CAPACITY_SCHEDULING,),
        quotas=quotas,
    )


_BUILDERS = {
    "SchedulingBasic": _basic,
    "HeteroBasic": _hetero,
    "SchedulingPodAntiAffinity": _anti_affinity,
    "TopologySpreading": _spreading,
    "SchedulingNodeAffinity": _node_affinity,
    "Unschedulable": _unschedulable,
    "PreemptionBasic": _preemption,
    "SchedulingWithMixedChurn": _mixed_churn,
    "Memory": _memory,
    "SchedulingInTreePVs": _in_tree_pvs,
    "SchedulingMigratedInTreePVs": _migrated_in_tree_pvs,
    "SchedulingCSIPVs": _csi_pvs,
    "PreemptionPVs": _preemption_pvs,
    "SchedulingWithResourceClaimTemplate": _claim_template,
    "SteadyStateClusterResourceClaimTemplate": _steady_claim_template,
    "SchedulingGangs": _gangs,
    "SchedulingElasticQuota": _elastic_quota,
}
VOLUME_WORKLOADS: tuple[str, ...] = (
    "SchedulingInTreePVs",
    "SchedulingMigratedInTreePVs",
    "SchedulingCSIPVs",
    "PreemptionPVs",
)
DRA_WORKLOADS: tuple[str, ...] = (
    "SchedulingWithResourceClaimTemplate",
    "SteadyStateClusterResourceClaimTemplate",
)
# Contrib plugins against scheduler-plugins' kube-scheduler (``--workload batch``).
BATCH_WORKLOADS: tuple[str, ...] = ("SchedulingGangs", "SchedulingElasticQuota")

# (nodes, init pods, measured pods) per scale. "full" is scheduler_perf's
# 5000Nodes variant (PreemptionBasic has only a 500Nodes one upstream);
# "small" its 500Nodes variant. Memory's "init" is the number of bound pods.
# The DRA workloads have no 5000-node variants upstream: "full" is the one
# labelled ``performance`` there (5000pods_500nodes, empty_500nodes), "small"
# the smallest besides the 2-node integration tests (2000pods_100nodes,
# empty_100nodes). For SteadyStateClusterResourceClaimTemplate "init" is
# initClaims (0: the "empty" variants) and "measured" the batch size (10).
SCALES: dict[str, dict[str, tuple[int, int, int]]] = {
    "full": {
        "SchedulingBasic": (5000, 1000, 10000),
        "HeteroBasic": (5000, 1000, 10000),
        "SchedulingPodAntiAffinity": (5000, 1000, 1000),
        "TopologySpreading": (5000, 5000, 2000),
        "SchedulingNodeAffinity": (5000, 5000, 1000),
        "Unschedulable": (5000, 200, 5000),
        "PreemptionBasic": (500, 2000, 500),
        "SchedulingWithMixedChurn": (5000, 0, 2000),
        "Memory": (5000, 150000, 0),
        "SchedulingInTreePVs": (5000, 5000, 1000),
        "SchedulingMigratedInTreePVs": (5000, 5000, 1000),
        "SchedulingCSIPVs": (5000, 5000, 1000),
        "PreemptionPVs": (1000, 4000, 1000),
        "SchedulingWithResourceClaimTemplate": (500, 2500, 2500),
        "SteadyStateClusterResourceClaimTemplate": (500, 0, 10),
        "SchedulingGangs": (5000, 1000, 1000),  # 100 gangs of 10
        "SchedulingElasticQuota": (5000, 1000, 1000),  # 10 quotas, 900 within max
    },
    "small": {
        "SchedulingBasic": (500, 500, 1000),
        "HeteroBasic": (500, 500, 1000),
        "SchedulingPodAntiAffinity": (500, 100, 400),
        "TopologySpreading": (500, 1000, 1000),
        "SchedulingNodeAffinity": (500, 500, 1000),
        "Unschedulable": (500, 200, 1000),
        "PreemptionBasic": (500, 2000, 500),
        "SchedulingWithMixedChurn": (500, 0, 1000),
        "Memory": (500, 15000, 0),
        "SchedulingInTreePVs": (500, 500, 1000),
        "SchedulingMigratedInTreePVs": (500, 500, 1000),
        "SchedulingCSIPVs": (500, 500, 1000),
        "PreemptionPVs": (1000, 4000, 1000),
        "SchedulingWithResourceClaimTemplate": (100, 1000, 1000),
        "SteadyStateClusterResourceClaimTemplate": (100, 0, 10),
        "SchedulingGangs": (500, 500, 500),  # 50 gangs of 10
        "SchedulingElasticQuota": (500, 500, 500),  # 10 quotas, 450 within max
    },
    # Larger clusters (issue #22; upstream has no variant above 5000 nodes): the
    # 5000Nodes variant's pods on 3x and 13x the nodes, so that a change in
    # throughput against "full" is the node count's alone, and a 15k run of one
    # workload (both schedulers) stays within a few minutes on two cores.
    "15k": {
        "SchedulingBasic": (15000, 1000, 10000),
        "HeteroBasic": (15000, 1000, 10000),
        "SchedulingPodAntiAffinity": (15000, 1000, 1000),
        "TopologySpreading": (15000, 5000, 2000),
        "SchedulingCSIPVs": (15000, 5000, 1000),
        "SchedulingWithResourceClaimTemplate": (15000, 2500, 2500),
    },
    "65k": {
        "SchedulingBasic": (65000, 1000, 10000),
        "HeteroBasic": (65000, 1000, 10000),
        "SchedulingPodAntiAffinity": (65000, 1000, 1000),
        "TopologySpreading": (65000, 5000, 2000),
        "SchedulingCSIPVs": (65000, 5000, 1000),
        "SchedulingWithResourceClaimTemplate": (65000, 2500, 2500),
        "Memory": (65000, 200000, 0),
    },
}

WORKLOAD_NAMES: tuple[str, ...] = tuple(_BUILDERS)
# What ``--workload all`` runs; Memory is a mode of its own (``--workload Memory``), and
# the batch workloads need contrib plugins and their own peer (``--workload batch``).
DEFAULT_WORKLOADS: tuple[str, ...] = tuple(
    n for n in WORKLOAD_NAMES if n != "Memory" and n not in BATCH_WORKLOADS
)


def build(
    name: str,
    scale: str = "full",
    *,
    nodes: int | None = None,
    init_pods: int | None = None,
    pods: int | None = None,
    duration: float | None = None,
) -> Workload:
    """The workload `name` at `scale`, with optional overrides of its sizes (and of
    the steady-state workloads' duration)."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose from: {', '.join(SCALES)}")
    if name not in SCALES[scale]:
        raise ValueError(f"no {scale} variant of {name}; {scale} has: {', '.join(SCALES[scale])}")
    default_nodes, default_init, default_pods = SCALES[scale][name]
    sizes = (
        default_nodes if nodes is None else nodes,
        default_init if init_pods is None else init_pods,
        default_pods if pods is None else pods,
    )
    if name == "SteadyStateClusterResourceClaimTemplate" and duration is not None:
        return _steady_claim_template(*sizes, duration=duration)
    return _BUILDERS[name](*sizes)


# -- objects ---------------------------------------------------------------------------


def node_name(i: int) -> str:
    return f"perf-node-{i:05d}"


def node(i: int, zones: tuple[str, ...] = (), name: str | None = None, dra: bool = False) -> Obj:
    """``node-default.yaml``: 4 cpu, 32Gi, 110 pods, Ready.

    With `dra`, ``node-with-dra-test-driver.yaml``: the same capacity, labelled
    ``node-with-dra: "true"``.
    """
    name = name or node_name(i)
    labels = {"kubernetes.io/hostname": name}
    if zones:
        labels["topology.kubernetes.io/zone"] = zones[i % len(zones)]
    if dra:
        labels[DRA_NODE_LABEL] = "true"
    capacity = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


#: HeteroBasic's pods: ``app`` takes one of this many values, as a few Deployments'
#: pods would; the cpu requests cycle through HETERO_CPU_STEPS millicore values.
HETERO_APPS = 5
HETERO_CPU_STEPS = 200
HETERO_LABEL = "hetero-id"


def hetero_requests(index: int) -> tuple[int, int]:
    """Millicores and MiB of memory HeteroBasic's pod number `index` requests.

    cpu is 50m..249m, stepping by 37m modulo 200 (37 is prime to 200, so the
    200 values come in a scrambled order); memory is 64Mi plus 4Mi for every
    200 pods. ``index -> (index % 200, index // 200)`` is one-to-one, so no
    two pods of a workload request the same pair, and even 100,000 pods stay
    under 2.1Gi and 250m each: every pod fits every node, room left.
    """
    step, block = index % HETERO_CPU_STEPS, index // HETERO_CPU_STEPS
    return 50 + (step * 37) % HETERO_CPU_STEPS, 64 + 4 * block


def _container(cpu: str, limits: bool = True, memory: str = "500Mi") -> Obj:
    requests = {"cpu": cpu, "memory": memory}
    resources: Obj = {"requests": requests}
    if limits:
        resources["limits"] = dict(requests)
    return {
        "image": "registry.k8s.io/pause:3.10",
        "name": "pause",
        "ports": [{"containerPort": 80}],
        "resources": resources,
    }


def pod(
    template: str,
    name: str,
    namespace: str,
    node: str | None = None,
    claim: str | None = None,
    group: str | None = None,
    index: int = 0,
) -> Obj:
    """A pod from one of scheduler_perf's templates (by short name).

    With `claim`, the one volume ``CreatePodWithPersistentVolume`` adds: ``vol``
    from that PVC. With `group`, the label that makes it a member of that
    Coscheduling PodGroup. ``hetero`` (HeteroBasic, no upstream template) is
    ``pod-default.yaml`` with labels and requests of its own, from `index`
    (:func:`hetero_requests`).
    """
    labels: dict[str, str] = {}
    spec: Obj = {"schedulerName": SCHEDULER_NAME}
    cpu = "100m"
    memory = "500Mi"
    if template == "anti-affinity":  # pod-with-pod-anti-affinity.yaml
        labels = {"color": "green", "name": "test"}
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": "kubernetes.io/hostname",
                        "namespaces": [MEASURE_NAMESPACE, INIT_NAMESPACE],
                    }
                ]
            }
        }
    elif template == "topology-spreading":  # pod-with-topology-spreading.yaml
        labels = {"color": "blue"}
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    elif template == "node-affinity":  # pod-with-node-affinity.yaml
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["zone1", "zone2"],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    elif template == "hetero":
        milli, mebi = hetero_requests(index)
        cpu, memory = f"{milli}m", f"{mebi}Mi"
        labels = {HETERO_LABEL: str(index), "app": f"hetero-{index % HETERO_APPS}"}
    elif template == "large-cpu":  # pod-large-cpu.yaml: fits no 4-cpu node
        cpu = "9"
    elif template == "low-priority":  # pod-low-priority.yaml
        cpu = "900m"
        spec["terminationGracePeriodSeconds"] = 0
    elif template in ("high-priority", "high-priority-large-cpu"):
        # pod-high-priority.yaml / pod-high-priority-large-cpu.yaml. The value is
        # also given as a PriorityClass so a real API server's Priority
        # admission accepts it.
        cpu = "3000m" if template == "high-priority" else "9"
        spec["priority"] = HIGH_PRIORITY
        spec["priorityClassName"] = HIGH_PRIORITY_CLASS
    elif template == "claim-template":  # pod-with-claim-template.yaml: no requests, no ports
        spec["containers"] = [
            {
                "image": "registry.k8s.io/pause:3.10.1",
                "name": "pause",
                "resources": {"claims": [{"name": POD_CLAIM}]},
            }
        ]
        spec["resourceClaims"] = [{"name": POD_CLAIM, "resourceClaimTemplateName": CLAIM_TEMPLATE}]
    elif template != "default":  # the default template adds nothing
        raise ValueError(f"unknown pod template {template!r}")
    spec.setdefault(
        "containers",
        [_container(cpu, limits=template != "high-priority-large-cpu", memory=memory)],
    )
    if claim is not None:
        spec["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]
    if node is not None:
        spec["nodeName"] = node
    metadata: Obj = {"name": name, "namespace": namespace}
    if group is not None:
        labels[POD_GROUP_LABEL] = group
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod_name(phase: str, i: int) -> str:
    return f"{phase}-{i:06d}"


def namespaces() -> list[Obj]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in NAMESPACES]


def priority_class() -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HIGH_PRIORITY_CLASS},
        "value": HIGH_PRIORITY,
    }


def nodes(workload: Workload) -> Iterator[Obj]:
    for i in range(workload.nodes):
        yield node(i, workload.zones, dra=workload.dra is not None)


def csi_node(name: str, template: CSINodeTemplate) -> Obj:
    """What ``NodeAllocatableStrategy.createCSINode`` creates for node `name`.

    The migrated-plugins annotation is always set, empty when nothing is
    migrated (``strings.Join`` of no plugins), as upstream does.
    """
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "annotations": {MIGRATED_PLUGINS_ANNOTATION: ",".join(template.migrated_plugins)},
        },
        "spec": {
            "drivers": [
                {"name": template.driver, "nodeID": name, "allocatable": {"count": template.count}}
            ]
        },
    }


def csi_nodes(workload: Workload) -> Iterator[Obj]:
    if workload.csi_nodes is None:
        return
    for i in range(workload.nodes):
        yield csi_node(node_name(i), workload.csi_nodes)


# -- DRA ---------------------------------------------------------------------------------


def device_class() -> Obj:
    """``templates/deviceclass.yaml``: every device of the test driver."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }


def resource_slice(node: str, devices: int) -> Obj:
    """What ``createResourceDriver``'s ``resourceSlice()`` makes for `node`: one
    slice, named and pooled after the node, ``instance-<i>`` devices with the
    same four attributes and 1Gi of memory each."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def _device_requests() -> Obj:
    return {"requests": [{"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}]}


def resource_claim_template(namespace: str) -> Obj:
    """``templates/resourceclaimtemplate.yaml``: one device of ``test-class``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE, "namespace": namespace},
        "spec": {"spec": {"devices": _device_requests()}},
    }


def dra_objects(workload: Workload) -> list[Obj]:
    """What the DRA ops create before any pod: the DeviceClass, a ResourceSlice per
    node and the claim template in every namespace a phase creates pods in."""
    if workload.dra is None:
        return []
    namespaces = dict.fromkeys(p.namespace for p in workload.phases)
    return [
        device_class(),
        *(
            resource_slice(node_name(i), workload.dra.devices_per_node)
            for i in range(workload.nodes)
        ),
        *(resource_claim_template(n) for n in namespaces),
    ]


def allocated_claims(workload: Workload, seed: int = 0) -> list[Obj]:
    """``createAny resourceclaim.yaml`` + ``allocResourceClaims``: ``test-claim-<i>``
    in the init namespace, each allocated (status written after the create) one
    device on a node picked at random among those with a device left, as
    upstream's allocator, trying nodes in shuffled order, ends up doing. Not
    reserved for anyone; no finalizer, as upstream writes them."""
    if workload.dra is None or not workload.dra.init_claims:
        return []
    per_node = workload.dra.devices_per_node
    if workload.dra.init_claims > workload.nodes * per_node:
        raise ValueError(
            f"{workload.dra.init_claims} claims do not fit {workload.nodes} nodes "
            f"of {per_node} devices"
        )
    rng = random.Random(seed)
    used = [0] * workload.nodes
    free = list(range(workload.nodes))
    claims: list[Obj] = []
    for i in range(workload.dra.init_claims):
        slot = rng.randrange(len(free))
        index = free[slot]
        device = used[index]
        used[index] += 1
        if used[index] == per_node:
            free[slot] = free[-1]
            free.pop()
        node = node_name(index)
        allocation = {
            "devices": {
                "results": [
                    {
                        "request": "req-0",
                        "driver": DRA_DRIVER,
                        "pool": node,
                        "device": f"instance-{device}",
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"test-claim-{i}", "namespace": INIT_NAMESPACE},
                "spec": {"devices": _device_requests()},
                "status": {"allocation": allocation},
            }
        )
    return claims


def claim_name(i: int) -> str:
    return f"pvc-{i}"


def volume_name(namespace: str, i: int) -> str:
    """The PV's name: the factory's ``vol-<i>``, prefixed with the namespace
    because PVs are cluster-wide."""
    return f"{namespace}-vol-{i}"


def persistent_volume_claim(namespace: str, i: int) -> Obj:
    """``pvc.yaml`` bound to its PV: ``spec.volumeName`` and phase Bound (the
    status is sent on create and again with a status update, as upstream)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(i),
            "namespace": namespace,
            "annotations": {BIND_COMPLETED_ANNOTATION: "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume_name(namespace, i),
        },
        "status": {"phase": "Bound"},
    }


def persistent_volume(source: str, namespace: str, i: int) -> Obj:
    """``pv-aws.yaml`` or ``pv-csi.yaml`` as ``getCustomVolumeFactory`` and
    ``CreatePodWithPersistentVolume`` fill them in: the AWS volume ID stays
    ``vol-<i>`` (so the init and measured phases share IDs, as upstream), the
    CSI handle is the PV's name; a claimRef to ``pvc-<i>`` and phase Bound."""
    name = volume_name(namespace, i)
    spec: Obj = {
        "accessModes": ["ReadOnlyMany"],
        "capacity": {"storage": "1Gi"},
        "persistentVolumeReclaimPolicy": "Retain",
        "claimRef": {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": claim_name(i),
            "apiVersion": "v1",
        },
    }
    if source == "aws":
        spec["awsElasticBlockStore"] = {"volumeID": f"vol-{i}"}
    elif source == "csi":
        spec["csi"] = {"driver": EBS_CSI_DRIVER, "volumeHandle": name}
    else:
        raise ValueError(f"unknown volume source {source!r}")
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"phase": "Bound"},
    }


def phase_objects(phase: Phase, batch: int = 0) -> list[list[Obj]]:
    """What a phase creates, one group per pod, each group created in order.

    A volume phase's group is upstream's order: the PVC first (the PV refers
    to it), then the PV, then the pod. Objects of kinds in
    ``STATUS_UPDATE_KINDS`` get their status written again after the create,
    since creating resets it. A steady-state phase creates `count` pods per
    `batch`, numbered on from the batches before it.
    """
    groups: list[list[Obj]] = []
    for i in range(batch * phase.count, (batch + 1) * phase.count):
        name = pod_name(phase.name, i)
        if phase.volume is None:
            namespace = phase.namespace_of(i)
            groups.append(
                [
                    pod(
                        phase.template,
                        name,
                        namespace,
                        group=phase.gang_of(i),
                        index=phase.index_base + i,
                    )
                ]
            )
            continue
        groups.append(
            [
                persistent_volume_claim(phase.namespace, i),
                persistent_volume(phase.volume, phase.namespace, i),
                pod(phase.template, name, phase.namespace, claim=claim_name(i)),
            ]
        )
    return groups


def gang_name(i: int) -> str:
    return f"gang-{i:04d}"


def pod_group(name: str, namespace: str, min_member: int) -> Obj:
    """A Coscheduling PodGroup as a Job author writes it: ``minMember`` only."""
    return {
        "apiVersion": BATCH_API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


def elastic_quota(quota: ElasticQuota) -> Obj:
    """scheduler-plugins' ElasticQuota for `quota`'s namespace."""
    return {
        "apiVersion": BATCH_API,
        "kind": "ElasticQuota",
        "metadata": {"name": QUOTA_NAME, "namespace": quota.namespace},
        "spec": {
            "min": {"cpu": f"{quota.min_milli_cpu}m", "memory": str(quota.min_memory)},
            "max": {"cpu": f"{quota.max_milli_cpu}m", "memory": str(quota.max_memory)},
        },
    }


def batch_objects(workload: Workload) -> list[Obj]:
    """What the batch workloads create before the scheduler starts: the quota
    namespaces and their ElasticQuotas, and every PodGroup of a gang phase."""
    objects: list[Obj] = []
    for phase in workload.phases:
        if phase.spread is not None:
            objects += [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                for n in phase.namespaces
            ]
        if phase.gang_size is not None:
            gangs = -(-phase.count // phase.gang_size)
            objects += [
                pod_group(gang_name(g), phase.namespace, phase.gang_size) for g in range(gangs)
            ]
    objects += [elastic_quota(q) for q in workload.quotas]
    return objects


def scheduler_profile(workload: Workload) -> Obj:
    """The ``perf-scheduler`` profile: kube's defaults, plus the workload's contrib
    plugins configured as scheduler-plugins documents them (its
    ``manifests/<plugin>/scheduler-config.yaml``), the same for both schedulers."""
    profile: Obj = {"schedulerName": SCHEDULER_NAME}
    plugins: Obj = {}
    if COSCHEDULING in workload.plugins:
        plugins.setdefault("multiPoint", {"enabled": []})["enabled"].append({"name": COSCHEDULING})
        plugins["queueSort"] = {"enabled": [{"name": COSCHEDULING}], "disabled": [{"name": "*"}]}
    if CAPACITY_SCHEDULING in workload.plugins:
        plugins.setdefault("multiPoint", {"enabled": []})["enabled"].append(
            {"name": CAPACITY_SCHEDULING}
        )
        plugins["postFilter"] = {
            "enabled": [{"name": CAPACITY_SCHEDULING}],
            "disabled": [{"name": "*"}],
        }
    if plugins:
        profile["plugins"] = plugins
    return profile


STATUS_UPDATE_KINDS = frozenset({"PersistentVolumeClaim", "PersistentVolume", "ResourceClaim"})


def bound_pods(workload: Workload) -> Iterator[Obj]:
    """Memory mode: pods already on nodes, spread evenly (30 a node at 150k/5k)."""
    for i in range(workload.bound_pods):
        yield pod("default", pod_name("bound", i), INIT_NAMESPACE, node_name(i % workload.nodes))


def preloaded_objects(workload: Workload) -> list[Obj]:
    """What an emulator can hold before the run starts (no scheduling involved)."""
    return [
        *namespaces(),
        priority_class(),
        *nodes(workload),
        *csi_nodes(workload),
        *dra_objects(workload),
        *bound_pods(workload),
    ]


def churn_service(i: int) -> Obj:
    """``config/churn/service-default.yaml``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"churn-svc-{i}", "namespace": CHURN_NAMESPACE},
        "spec": {
            "selector": {"app": "churn"},
            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }

"""The fidelity scenario library: small clusters, each with pods to place one at a time.

Every scenario is plain Kubernetes objects (dicts), loaded the same way into the
real kube-apiserver (for kube-scheduler) and, read back from it, into our
``explain``. A scenario holds nodes, pods already bound to them (``nodeName``
set, so no scheduler is involved), cluster-scoped extras (a RuntimeClass for
pod overhead) and one or more :class:`Step`\\ s: pods placed in order, each by
kube-scheduler, before the next step is compared.

Rules that keep the two sides comparable:

- All pods have the default priority (0): no preemption victims can exist, so
  a pod that fits nowhere changes nothing.
- No owner references, no Services: the default PodTopologySpread constraints
  and InterPodAffinity do not depend on controllers that are not running.
- No PVCs in :data:`SCENARIOS`: volume scenarios are :data:`VOLUME_SCENARIOS`,
  run with kube-controller-manager's volume controllers next to kube-scheduler
  (see ``harness.py``). Their storage objects are in ``Scenario.storage``;
  every PV has ``persistentVolumeReclaimPolicy: Retain`` (nothing to reclaim)
  and every name (classes, drivers, PVs) is unique across scenarios.
- DRA scenarios (:data:`DRA_SCENARIOS`) run with kube-controller-manager's
  ResourceClaim controller; their objects are in ``Scenario.dra`` and their
  class names are unique across scenarios.
- The node created last must accept a pod with no labels, no requests and a
  toleration for every taint (the harness's sync pod, see ``harness.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

PAUSE = "registry.k8s.io/pause:3.10"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
MB = 1024 * 1024


# -- builders ----------------------------------------------------------------------------


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    zone: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    extended: Mapping[str, str] | None = None,
    images: Sequence[tuple[Sequence[str], int]] = (),
) -> Obj:
    """A node as a kubelet registers it; ``status`` is applied through ``/status``."""
    all_labels = {HOSTNAME: name, **({ZONE: zone} if zone else {}), **(labels or {})}
    spec: Obj = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extended or {})}
    status: Obj = {
        "capacity": dict(allocatable),
        "allocatable": allocatable,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
    }
    if images:
        status["images"] = [{"names": list(names), "sizeBytes": size} for names, size in images]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": status,
    }


def container(
    name: str = "main",
    *,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    image: str = PAUSE,
    extended: Mapping[str, str] | None = None,
    ports: Sequence[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extended or {})
    out: Obj = {"name": name, "image": image}
    if requests:
        out["resources"] = {"requests": requests}
        if extended:  # extended resources cannot be overcommitted: limits == requests
            out["resources"]["limits"] = dict(extended)
    if ports:
        out["ports"] = [dict(p) for p in ports]
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def pod(
    name: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    labels: Mapping[str, str] | None = None,
    on: str | None = None,
    containers: Sequence[Obj] | None = None,
    init_containers: Sequence[Obj] = (),
    **spec: Any,
) -> Obj:
    """A pod for kube-scheduler; ``on`` binds it (an existing pod); ``spec`` adds fields."""
    pod_spec: Obj = {
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 0,
        "containers": list(containers or [container(cpu=cpu, memory=memory)]),
    }
    if init_containers:
        pod_spec["initContainers"] = list(init_containers)
    if on:
        pod_spec["nodeName"] = on
    pod_spec.update(spec)
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


def taint(key: str, value: str | None = None, effect: str = "NoSchedule") -> dict[str, str]:
    out = {"key": key, "effect": effect}
    if value is not None:
        out["value"] = value
    return out


def term(key: str, operator: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def selector(**labels: str) -> Obj:
    return {"matchLabels": dict(labels)}


def spread(
    key: str,
    when: str,
    labels: Mapping[str, str],
    *,
    max_skew: int = 1,
    **extra: Any,
) -> Obj:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": dict(labels)},
        **extra,
    }


# -- scenarios ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One pod to place. ``expect`` states the intent ("bound"/"unschedulable"), so a
    scenario that silently stops testing what it claims fails instead of passing."""

    pod: Obj
    expect: str = "bound"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    nodes: list[Obj]
    steps: list[Step]
    existing: list[Obj] = field(default_factory=list)
    cluster_objects: list[Obj] = field(default_factory=list)  # RuntimeClasses, ...
    #: More namespaces (name -> labels), for pods placed with ``metadata.namespace``;
    #: names are global to the session, so prefix them with the scenario's name.
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Labels of the scenario's own namespace (where the placed pods live).
    labels: dict[str, str] = field(default_factory=dict)
    #: Storage objects (StorageClass, CSIDriver, PersistentVolume, CSINode, and,
    #: in the scenario's namespace, PersistentVolumeClaim, CSIStorageCapacity).
    storage: list[Obj] = field(default_factory=list)
    #: Provisioners the harness plays (see ``harness.TestProvisioner``): a claim
    #: of theirs that kube-scheduler annotates with a selected node gets a PV.
    provisioners: tuple[str, ...] = ()
    #: Dynamic Resource Allocation objects (resource.k8s.io/v1): DeviceClasses and
    #: ResourceSlices, and, in the scenario's namespace, ResourceClaims (one with a
    #: ``status`` is allocated by the harness) and ResourceClaimTemplates.
    dra: list[Obj] = field(default_factory=list)
    #: A difference from kube-scheduler that is known and not fixed yet: the test
    #: is then expected to fail (a strict xfail, so the fix shows up as XPASS).
    known_difference: str = ""

    #: A sampling scenario (:data:`SAMPLING_SCENARIOS`): hundreds of nodes, compared
    #: without probes (``harness.run_sampling_step``).
    sampling: bool = False

    def __post_init__(self) -> None:
        if self.sampling:
            assert len(self.nodes) >= 200, f"{self.name}: sampling needs hundreds of nodes"
        else:
            assert 4 <= len(self.nodes) <= 12, f"{self.name}: 4-12 nodes"
        assert self.steps, f"{self.name}: nothing to place"


def _resources() -> Scenario:
    return Scenario(
        "resources",
        "cpu/memory/pod-count fit, LeastAllocated + BalancedAllocation, scheduling gates",
        nodes=[
            node("res-1", cpu="2", memory="4Gi"),
            node("res-2", cpu="4", memory="8Gi"),
            node("res-3", cpu="8", memory="16Gi"),
            node("res-4", cpu="4", memory="8Gi"),
            node("res-5", cpu="4", memory="2Gi"),
            node("res-6", cpu="16", memory="64Gi", pods="2"),
            node("res-7", cpu="6", memory="3Gi"),
        ],
        existing=[
            pod("busy-4", cpu="3500m", memory="1Gi", on="res-4"),
            pod("busy-5", cpu="500m", memory="1536Mi", on="res-5"),
            pod("full-6a", cpu="100m", memory="64Mi", on="res-6"),
            pod("full-6b", cpu="100m", memory="64Mi", on="res-6"),
            pod("half-3", cpu="3", memory="2Gi", on="res-3"),
            pod("no-requests", cpu=None, memory=None, on="res-2"),
        ],
        steps=[
            Step(pod("web-1", cpu="1", memory="1Gi")),
            Step(pod("web-2", cpu="1500m", memory="512Mi")),
            Step(pod("best-effort", cpu=None, memory=None)),
            # Held by a scheduling gate first: neither scheduler may place it until
            # the gate is removed.
            Step(pod("gated", cpu="1500m", schedulingGates=[{"name": "example.com/quota"}])),
        ],
    )


def _init_sidecar_overhead() -> Scenario:
    # Sidecar first, then a big init container: the init container runs beside the
    # sidecar, so the pod needs max(500m + 1500m, 500m + 700m) + 250m overhead.
    sidecar_first = pod(
        "sidecar-first",
        containers=[container(cpu="700m", memory="256Mi")],
        init_containers=[
            container("proxy", cpu="500m", memory="64Mi", restart_policy="Always"),
            container("migrate", cpu="1500m", memory="1Gi"),
        ],
        runtimeClassName="fidelity-kata",
    )
    # Init container first: it runs alone, so max(1500m, 700m + 500m) + 250m.
    init_first = pod(
        "init-first",
        containers=[container(cpu="700m", memory="256Mi")],
        init_containers=[
            container("migrate", cpu="1500m", memory="1Gi"),
            container("proxy", cpu="500m", memory="64Mi", restart_policy="Always"),
        ],
        runtimeClassName="fidelity-kata",
    )
    return Scenario(
        "init-sidecar-overhead",
        "effective requests with init containers, restartable sidecars and RuntimeClass overhead",
        nodes=[
            node("iso-1", cpu="1", memory="2Gi"),
            node("iso-2", cpu="2", memory="2Gi"),
            node("iso-3", cpu="2250m", memory="2Gi"),
            node("iso-4", cpu="3", memory="2Gi"),
            node("iso-5", cpu="4", memory="1Gi"),
            node("iso-6", cpu="4", memory="4Gi"),
        ],
        existing=[pod("tenant-6", cpu="1800m", memory="1Gi", on="iso-6")],
        cluster_objects=[
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": "fidelity-kata"},
                "handler": "kata",
                "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
            }
        ],
        steps=[Step(sidecar_first), Step(init_first)],
    )


def _extended_resources() -> Scenario:
    gpu = "example.com/gpu"
    return Scenario(
        "extended-resources",
        "an extended resource: absent, zero, too few, enough after existing use",
        nodes=[
            node("gpu-none", cpu="8"),
            node("gpu-0", cpu="8", extended={gpu: "0"}),
            node("gpu-1", cpu="8", extended={gpu: "1"}),
            node("gpu-2", cpu="8", extended={gpu: "2"}),
            node("gpu-4", cpu="8", extended={gpu: "4"}),
            node("gpu-4b", cpu="2", extended={gpu: "4"}),
        ],
        existing=[
            pod("trainer", containers=[container(cpu="1", extended={gpu: "3"})], on="gpu-4"),
        ],
        steps=[
            Step(pod("infer", containers=[container(cpu="1", extended={gpu: "2"})])),
            Step(pod("infer-2", containers=[container(cpu="1", extended={gpu: "2"})])),
        ],
    )


def _node_affinity() -> Scenario:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [term(ZONE, "In", "a", "b"), term("gen", "Gt", "3")]},
            {"matchExpressions": [term("special", "Exists"), term("retired", "DoesNotExist")]},
        ]
    }
    preferred = [
        {"weight": 80, "preference": {"matchExpressions": [term(ZONE, "In", "a")]}},
        {"weight": 20, "preference": {"matchExpressions": [term("gen", "In", "5")]}},
        {"weight": 5, "preference": {"matchExpressions": [term("disk", "NotIn", "hdd")]}},
    ]
    return Scenario(
        "node-affinity",
        "nodeSelector; required terms (In, Gt, Exists, DoesNotExist; ORed); preferences",
        nodes=[
            node("aff-1", zone="a", labels={"gen": "4", "disk": "hdd"}),
            node("aff-2", zone="a", labels={"gen": "5", "disk": "ssd"}),
            node("aff-3", zone="b", labels={"gen": "5", "disk": "hdd"}),
            node("aff-4", zone="b", labels={"gen": "3", "disk": "ssd"}),
            node("aff-5", zone="c", labels={"gen": "9"}),
            node("aff-6", zone="c", labels={"special": "true"}),
            node("aff-7", zone="c", labels={"special": "true", "retired": "yes"}),
            node("aff-8", zone="a", labels={"gen": "x", "disk": "ssd", "gpu": "yes"}),
        ],
        steps=[
            Step(pod("db", cpu="500m", nodeSelector={"disk": "ssd", ZONE: "a"})),
            Step(
                pod(
                    "picky",
                    affinity={
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": required,
                            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
                        }
                    },
                )
            ),
            Step(
                pod(
                    "prefers-only",
                    affinity={
                        "nodeAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": preferred
                        }
                    },
                )
            ),
        ],
    )


def _taints() -> Scenario:
    return Scenario(
        "taints",
        "NoSchedule/NoExecute filtering and PreferNoSchedule scoring",
        nodes=[
            node("tnt-1"),
            node("tnt-2", taints=[taint("dedicated", "gpu")]),
            node("tnt-3", taints=[taint("dedicated", "infra")]),
            node("tnt-4", taints=[taint("maint", "true", "NoExecute")]),
            node("tnt-5", taints=[taint("flaky", "yes", "PreferNoSchedule")]),
            node(
                "tnt-6",
                taints=[
                    taint("flaky", "yes", "PreferNoSchedule"),
                    taint("slow", None, "PreferNoSchedule"),
                ],
            ),
            node("tnt-7", taints=[taint("other", "x", "PreferNoSchedule")]),
        ],
        steps=[
            Step(
                pod(
                    "tolerant",
                    tolerations=[
                        {
                            "key": "dedicated",
                            "operator": "Equal",
                            "value": "gpu",
                            "effect": "NoSchedule",
                        },
                        {"key": "maint", "operator": "Exists", "effect": "NoExecute"},
                        {"key": "other", "operator": "Exists", "effect": "PreferNoSchedule"},
                    ],
                )
            ),
            Step(pod("plain")),
            Step(
                pod(
                    "tolerates-soft",
                    tolerations=[{"operator": "Exists", "effect": "PreferNoSchedule"}],
                )
            ),
        ],
    )


def _host_ports() -> Scenario:
    def with_port(port: int, protocol: str = "TCP", host_ip: str | None = None) -> Obj:
        entry: Obj = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            entry["hostIP"] = host_ip
        return container(ports=[entry])

    return Scenario(
        "host-ports",
        "hostPort conflicts by protocol and hostIP",
        nodes=[node(f"hp-{i}") for i in range(1, 7)],
        existing=[
            pod("tcp", containers=[with_port(8080)], on="hp-1"),
            pod("udp", containers=[with_port(8080, "UDP")], on="hp-2"),
            pod("ip1", containers=[with_port(8080, host_ip="10.0.0.1")], on="hp-3"),
            pod("other", containers=[with_port(9090)], on="hp-4"),
            pod("sctp", containers=[with_port(8080, "SCTP")], on="hp-5"),
        ],
        steps=[
            Step(pod("any-ip", containers=[with_port(8080)])),
            Step(pod("ip2", containers=[with_port(8080, host_ip="10.0.0.2")])),
            Step(pod("udp-2", containers=[with_port(8080, "UDP")])),
        ],
    )


def _unschedulable_nodes() -> Scenario:
    return Scenario(
        "unschedulable-nodes",
        "cordoned nodes (spec.unschedulable) and the toleration that overrides it",
        nodes=[
            node("cord-1", unschedulable=True),
            node("cord-2", unschedulable=True, cpu="16"),
            node("cord-3", cpu="2"),
            node("cord-4", cpu="3"),
            node("cord-5", cpu="2"),
        ],
        existing=[pod("load-5", cpu="1500m", on="cord-5")],
        steps=[
            Step(pod("regular", cpu="1")),
            Step(
                pod(
                    "daemon-like",
                    cpu="1",
                    tolerations=[
                        {
                            "key": "node.kubernetes.io/unschedulable",
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        }
                    ],
                )
            ),
        ],
    )


WEB = {"app": "web"}


def _zonal_nodes(prefix: str, zones: str, per_zone: int, **kwargs: Any) -> list[Obj]:
    return [
        node(f"{prefix}-{z}{i}", zone=z, **kwargs) for z in zones for i in range(1, per_zone + 1)
    ]


def _spread_do_not_schedule() -> Scenario:
    constraints = [
        spread(ZONE, "DoNotSchedule", WEB),
        spread(HOSTNAME, "DoNotSchedule", WEB, max_skew=2),
    ]
    return Scenario(
        "spread-do-not-schedule",
        "zone skew 1 and hostname skew 2, hard; placed one after another",
        nodes=_zonal_nodes("sdn", "abc", 2),
        existing=[
            pod("web-a1", labels=WEB, on="sdn-a1"),
            pod("web-a2", labels=WEB, on="sdn-a1"),
            pod("web-b1", labels=WEB, on="sdn-b2"),
            pod("other-c", labels={"app": "db"}, on="sdn-c1"),
        ],
        steps=[
            Step(pod(f"web-new-{i}", labels=WEB, topologySpreadConstraints=constraints))
            for i in range(1, 4)
        ],
    )


def _spread_schedule_anyway() -> Scenario:
    constraints = [
        spread(ZONE, "ScheduleAnyway", WEB),
        spread(HOSTNAME, "ScheduleAnyway", WEB),
    ]
    return Scenario(
        "spread-schedule-anyway",
        "soft zone and hostname spreading decides the score",
        nodes=_zonal_nodes("ssa", "abcd", 2),
        existing=[
            pod("web-1", labels=WEB, on="ssa-a1"),
            pod("web-2", labels=WEB, on="ssa-a2"),
            pod("web-3", labels=WEB, on="ssa-b1"),
            pod("web-4", labels=WEB, on="ssa-b1"),
            pod("web-5", labels=WEB, on="ssa-c2"),
        ],
        steps=[
            Step(pod(f"web-new-{i}", labels=WEB, topologySpreadConstraints=constraints))
            for i in range(1, 3)
        ],
    )


def _spread_min_domains() -> Scenario:
    constraints = [spread(ZONE, "DoNotSchedule", WEB, minDomains=4)]
    return Scenario(
        "spread-min-domains",
        "minDomains above the number of zones makes the global minimum 0",
        nodes=[
            *_zonal_nodes("smd", "ab", 2),
            node("smd-c1", zone="c"),
        ],
        existing=[
            pod("web-a", labels=WEB, on="smd-a1"),
            pod("web-b", labels=WEB, on="smd-b2"),
        ],
        steps=[
            Step(pod("web-new-1", labels=WEB, topologySpreadConstraints=constraints)),
            Step(
                pod("web-new-2", labels=WEB, topologySpreadConstraints=constraints),
                expect="unschedulable",
            ),
        ],
    )


def _spread_node_affinity_policy() -> Scenario:
    gold = {"tier": "gold"}

    def web(name: str, **policies: str) -> Obj:
        return pod(
            name,
            labels=WEB,
            nodeSelector=gold,
            topologySpreadConstraints=[{**spread(ZONE, "DoNotSchedule", WEB), **policies}],
        )

    return Scenario(
        "spread-node-affinity-policy",
        "nodeAffinityPolicy and nodeTaintsPolicy decide which zones count",
        nodes=[
            *_zonal_nodes("snap", "ab", 2, labels=gold),
            *_zonal_nodes("snap", "c", 2),
            *_zonal_nodes("snap", "d", 2, taints=[taint("zone-d", "drain")]),
        ],
        existing=[
            pod("web-a1", labels=WEB, on="snap-a1"),
            pod("web-a2", labels=WEB, on="snap-a2"),
            pod("web-b1", labels=WEB, on="snap-b1"),
            pod("web-b2", labels=WEB, on="snap-b1"),
            pod("web-c1", labels=WEB, on="snap-c1"),
            pod("web-c2", labels=WEB, on="snap-c2"),
        ],
        steps=[
            Step(web("honor")),
            Step(
                web("ignore-affinity", nodeAffinityPolicy="Ignore"),
                expect="unschedulable",
            ),
            Step(
                web(
                    "ignore-affinity-honor-taints",
                    nodeAffinityPolicy="Ignore",
                    nodeTaintsPolicy="Honor",
                )
            ),
        ],
    )


def _pod_affinity() -> Scenario:
    return Scenario(
        "pod-affinity",
        "required and preferred pod affinity, and the first pod of a self-affine group",
        nodes=_zonal_nodes("pa", "abc", 2),
        existing=[
            pod("db", labels={"app": "db"}, on="pa-a1"),
            pod("cache", labels={"app": "cache"}, on="pa-b2"),
            pod("cache-2", labels={"app": "cache"}, on="pa-a2"),
        ],
        steps=[
            Step(
                pod(
                    "api",
                    labels={"app": "api"},
                    affinity={
                        "podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": selector(app="db"), "topologyKey": ZONE}
                            ],
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 50,
                                    "podAffinityTerm": {
                                        "labelSelector": selector(app="cache"),
                                        "topologyKey": HOSTNAME,
                                    },
                                }
                            ],
                        }
                    },
                )
            ),
            Step(
                pod(
                    "solo",
                    labels={"app": "solo"},
                    affinity={
                        "podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": selector(app="solo"), "topologyKey": ZONE}
                            ],
                        }
                    },
                )
            ),
        ],
    )


def _pod_anti_affinity() -> Scenario:
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector(**WEB), "topologyKey": HOSTNAME}
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {"labelSelector": selector(**WEB), "topologyKey": ZONE},
                }
            ],
        }
    }
    return Scenario(
        "pod-anti-affinity",
        "required hostname and preferred zone anti-affinity against the pod's own group",
        nodes=_zonal_nodes("paa", "abc", 2),
        existing=[
            pod("web-1", labels=WEB, on="paa-a1"),
            pod("web-2", labels=WEB, on="paa-b1"),
        ],
        steps=[Step(pod(f"web-new-{i}", labels=WEB, affinity=affinity)) for i in range(1, 4)],
    )


def _existing_anti_affinity() -> Scenario:
    def existing(name: str, on: str, affinity: Obj) -> Obj:
        return pod(name, labels={"app": name}, on=on, affinity=affinity)

    return Scenario(
        "existing-pods-affinity-symmetry",
        "existing pods' required anti-affinity filters, their preferred terms score",
        nodes=[*_zonal_nodes("sym", "abc", 2), node("sym-d1", zone="d")],
        existing=[
            existing(
                "loner",
                "sym-a1",
                {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": selector(**WEB), "topologyKey": ZONE}
                        ]
                    }
                },
            ),
            existing(
                "friend",
                "sym-b2",
                {
                    "podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 100,
                                "podAffinityTerm": {
                                    "labelSelector": selector(**WEB),
                                    "topologyKey": HOSTNAME,
                                },
                            }
                        ]
                    }
                },
            ),
            existing(
                "grump",
                "sym-c1",
                {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "podAffinityTerm": {
                                    "labelSelector": selector(**WEB),
                                    "topologyKey": ZONE,
                                },
                            }
                        ]
                    }
                },
            ),
            existing(
                "hard-friend",
                "sym-d1",
                {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": selector(**WEB), "topologyKey": HOSTNAME}
                        ]
                    }
                },
            ),
        ],
        steps=[Step(pod("web", labels=WEB)), Step(pod("web-2", labels=WEB))],
    )


def _image_locality() -> Scenario:
    big = "registry.example/app/big:1.0"
    mid = "registry.example/app/mid"
    small = "registry.example/app/small:2"
    models = "registry.example/vol/models:v3"
    tools = "registry.example/vol/tools"
    # imgs-*: kube's scheduler cache keeps one size per image name, the size
    # reported by the node that brought the name in (nodes are created in list
    # order, which is also name order, the order of the LIST our side reads).
    # Node names are not normalized: "webx" (no tag) never matches a pod, whose
    # "webx" is looked up as "webx:latest"; "docker.io/library/webx:latest" is a
    # name of its own. 12 nodes; one container maps 100 * (MB - 23) / 977, two
    # 100 * (MB - 23) / 1977:
    # - "webx:latest": imgs-1 (1800MB, first), imgs-2 -> 1800 * 2/12 = 300MB;
    # - "docker.io/library/webx:latest": imgs-1 (1800MB, first), imgs-3 -> 300MB;
    # - "dbx:1.0": imgs-2 (1600MB, its first entry; its second says 50MB), imgs-4,
    #   imgs-5 -> 1600 * 3/12 = 400MB;
    # - image volumes (kube 1.36 adds spec.volumes[].image.reference, normalized,
    #   to the sum but not to the container count): models imgs-1 (1500MB, first),
    #   imgs-2 -> 250MB; tools (":latest" added) imgs-3, imgs-6 (900MB) -> 150MB.
    return Scenario(
        "image-locality",
        "image sizes scaled by spread, one image used by two containers; one size per "
        "image name (the first node's), names with and without registry/tag, image volumes",
        nodes=[
            node("img-1", images=[([big], 800 * MB), ([f"{mid}:latest"], 300 * MB)]),
            node("img-2", images=[([big, "registry.example/app/big@sha256:aa"], 800 * MB)]),
            node("img-3", images=[([f"{mid}:latest"], 300 * MB), ([small], 30 * MB)]),
            node("img-4", images=[([small], 30 * MB)]),
            node("img-5"),
            node("img-6", images=[([f"{mid}:latest"], 300 * MB)]),
            node(
                "imgs-1",
                images=[
                    (["docker.io/library/webx:latest", "webx:latest"], 1800 * MB),
                    ([models], 1500 * MB),
                ],
            ),
            node(
                "imgs-2",
                images=[
                    (["webx:latest"], 150 * MB),
                    (["dbx:1.0"], 1600 * MB),
                    (["dbx:1.0", "dbx:stable"], 50 * MB),
                    ([models], 200 * MB),
                ],
            ),
            node(
                "imgs-3",
                images=[
                    (["webx"], 700 * MB),
                    (["docker.io/library/webx:latest"], 200 * MB),
                    ([f"{tools}:latest"], 900 * MB),
                ],
            ),
            node("imgs-4", images=[(["dbx:1.0"], 100 * MB)]),
            node("imgs-5", images=[(["dbx:1.0", "docker.io/library/dbx:1.0"], 400 * MB)]),
            node("imgs-6", images=[([f"{tools}:latest"], 300 * MB)]),
        ],
        steps=[
            Step(
                pod(
                    "app",
                    containers=[
                        container("a", image=big),
                        container("b", image=mid),
                        container("c", image=mid),
                    ],
                )
            ),
            Step(pod("small", containers=[container("a", image=small)])),
            # imgs-1, imgs-2: 300MB -> 28 (imgs-2's own 150MB would give 0).
            Step(pod("web", containers=[container("a", image="webx")])),
            # imgs-1, imgs-3: 300MB -> 28 (imgs-3's own 200MB would give 1).
            Step(pod("web-full", containers=[container("a", image="docker.io/library/webx")])),
            # imgs-2, imgs-4, imgs-5: 400MB -> 38 (imgs-5's own 400MB would give 7).
            Step(pod("db", containers=[container("a", image="dbx:1.0")])),
            # imgs-1 300MB -> 14; imgs-2 700MB -> 34; imgs-4, imgs-5 400MB -> 19.
            Step(
                pod(
                    "web-db",
                    containers=[container("a", image="webx"), container("b", image="dbx:1.0")],
                )
            ),
            # One container (pause, on no node): imgs-1, imgs-2 250MB -> 23; imgs-3,
            # imgs-6 150MB -> 12.
            Step(
                pod(
                    "reader",
                    volumes=[
                        {"name": "models", "image": {"reference": models}},
                        {"name": "tools", "image": {"reference": tools}},
                    ],
                )
            ),
            # The same image as a container and as a volume counts twice: imgs-1,
            # imgs-2 500MB -> 48.
            Step(
                pod(
                    "model-server",
                    containers=[container("a", image=models)],
                    volumes=[{"name": "models", "image": {"reference": models}}],
                )
            ),
        ],
    )


def _fits_nowhere() -> Scenario:
    return Scenario(
        "fits-nowhere",
        "every node fails for a different reason: the FailedScheduling counts must match",
        nodes=[
            node("nw-1", cpu="1", labels={"pool": "app"}),
            node("nw-2", cpu="1", memory="1Gi", labels={"pool": "app"}),
            node("nw-3", labels={"pool": "app"}, taints=[taint("dedicated", "ml")]),
            node("nw-4", labels={"pool": "batch"}),
            node("nw-5", labels={"pool": "app"}, unschedulable=True),
            node("nw-6", labels={"pool": "app"}),
            node("nw-7", labels={"pool": "app"}, pods="1"),
            node("nw-8", labels={"pool": "app"}),
            node("nw-9", labels={"pool": "app"}, taints=[taint("gone", "yes", "NoExecute")]),
        ],
        existing=[
            pod(
                "port-holder",
                containers=[container(ports=[{"containerPort": 80, "hostPort": 80}])],
                on="nw-6",
            ),
            pod("tenant-7", on="nw-7"),
            pod("hog-8", cpu="3", memory="7Gi", on="nw-8"),
        ],
        steps=[
            Step(
                pod(
                    "homeless",
                    containers=[
                        container(
                            cpu="2",
                            memory="2Gi",
                            ports=[{"containerPort": 80, "hostPort": 80}],
                        )
                    ],
                    nodeSelector={"pool": "app"},
                ),
                expect="unschedulable",
            ),
            Step(
                pod(
                    "anti-everyone",
                    labels={"app": "x"},
                    affinity={
                        "podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": selector(app="nobody"), "topologyKey": ZONE}
                            ]
                        }
                    },
                ),
                expect="unschedulable",
            ),
        ],
    )


def _pod_level_resources() -> Scenario:
    return Scenario(
        "pod-level-resources",
        "pod-level spec.resources (PodLevelResources, on by default) instead of containers'",
        nodes=[
            node("plr-1", cpu="1", memory="4Gi"),
            node("plr-2", cpu="2", memory="4Gi"),
            node("plr-3", cpu="2", memory="1Gi"),
            node("plr-4", cpu="4", memory="8Gi"),
            node("plr-5", cpu="3", memory="8Gi"),
        ],
        existing=[
            pod(
                "placed",
                cpu="100m",
                memory="64Mi",
                on="plr-4",
                resources={"requests": {"cpu": "2500m", "memory": "1Gi"}},
            )
        ],
        steps=[
            Step(
                pod(
                    "pod-requests",
                    cpu="200m",
                    memory="128Mi",
                    resources={"requests": {"cpu": "1500m", "memory": "2Gi"}},
                )
            ),
            Step(
                pod(
                    "pod-limits-only",
                    cpu=None,
                    memory=None,
                    resources={"limits": {"cpu": "1200m", "memory": "1536Mi"}},
                )
            ),
        ],
    )


def _spread_edge_cases() -> Scenario:
    v2 = {"app": "web", "version": "v2"}
    return Scenario(
        "spread-edge-cases",
        "nodes without the topology label, matchLabelKeys narrowing the selector",
        nodes=[
            *_zonal_nodes("sec", "ab", 2),
            node("sec-nolabel-1"),
            node("sec-nolabel-2"),
        ],
        existing=[
            pod("web-v1-a", labels={"app": "web", "version": "v1"}, on="sec-a1"),
            pod("web-v1-a2", labels={"app": "web", "version": "v1"}, on="sec-a2"),
            pod("web-v2-b", labels=v2, on="sec-b1"),
            pod("web-v2-x", labels=v2, on="sec-nolabel-1"),
        ],
        steps=[
            Step(
                pod(
                    "by-version",
                    labels=v2,
                    topologySpreadConstraints=[
                        spread(ZONE, "DoNotSchedule", WEB, matchLabelKeys=["version"])
                    ],
                )
            ),
            Step(
                pod(
                    "all-versions",
                    labels=v2,
                    topologySpreadConstraints=[spread(ZONE, "DoNotSchedule", WEB)],
                )
            ),
            Step(
                pod(
                    "soft",
                    labels=v2,
                    topologySpreadConstraints=[
                        spread(ZONE, "ScheduleAnyway", WEB),
                        spread(HOSTNAME, "ScheduleAnyway", WEB, max_skew=2),
                    ],
                )
            ),
        ],
    )


def _affinity_namespaces() -> Scenario:
    shop, bank = "fid-affinity-namespaces-shop", "fid-affinity-namespaces-bank"

    def in_ns(namespace: str, obj: Obj) -> Obj:
        obj["metadata"]["namespace"] = namespace
        return obj

    def required(kind: str, **term_fields: Any) -> Obj:
        return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term_fields]}}

    return Scenario(
        "affinity-namespaces",
        "namespaces, namespaceSelector (incl. for existing pods' anti-affinity), matchLabelKeys",
        labels={"team": "shop"},
        namespaces={shop: {"team": "shop"}, bank: {"team": "bank"}},
        nodes=_zonal_nodes("ans", "abc", 2),
        existing=[
            in_ns(
                bank,
                pod(
                    "guard",
                    labels={"app": "guard"},
                    on="ans-a1",
                    affinity=required(
                        "podAntiAffinity",
                        labelSelector=selector(**WEB),
                        namespaceSelector=selector(team="shop"),
                        topologyKey=ZONE,
                    ),
                ),
            ),
            in_ns(shop, pod("db-shop", labels={"app": "db"}, on="ans-b1")),
            in_ns(bank, pod("db-bank", labels={"app": "db"}, on="ans-c1")),
            pod("web-rev2", labels={"app": "web", "rev": "2"}, on="ans-c2"),
        ],
        steps=[
            Step(
                pod(
                    "near-bank-db",
                    labels=WEB,
                    affinity=required(
                        "podAffinity",
                        labelSelector=selector(app="db"),
                        namespaces=[bank],
                        topologyKey=ZONE,
                    ),
                )
            ),
            Step(
                pod(
                    "near-any-db",
                    labels=WEB,
                    affinity=required(
                        "podAffinity",
                        labelSelector=selector(app="db"),
                        namespaceSelector={},
                        topologyKey=ZONE,
                    ),
                )
            ),
            Step(
                pod(
                    "api",
                    labels={"app": "api"},
                    affinity={
                        "podAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": selector(app="db"),
                                        "namespaceSelector": selector(team="bank"),
                                        "topologyKey": HOSTNAME,
                                    },
                                }
                            ]
                        },
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 30,
                                    "podAffinityTerm": {
                                        "labelSelector": selector(**WEB),
                                        "topologyKey": ZONE,
                                    },
                                }
                            ]
                        },
                    },
                )
            ),
            Step(
                pod(
                    "web-rev2-new",
                    labels={"app": "web", "rev": "2"},
                    affinity=required(
                        "podAntiAffinity",
                        labelSelector=selector(**WEB),
                        matchLabelKeys=["rev"],
                        topologyKey=HOSTNAME,
                    ),
                )
            ),
        ],
    )


def _tolerations_and_storage() -> Scenario:
    hugepages = "hugepages-2Mi"
    return Scenario(
        "tolerations-and-storage",
        "valueless taints, wildcard tolerations, ephemeral-storage and hugepages",
        nodes=[
            node("tas-1", taints=[taint("gpu")], extended={"ephemeral-storage": "10Gi"}),
            node(
                "tas-2",
                taints=[taint("gpu", "", "NoExecute")],
                extended={"ephemeral-storage": "100Gi", hugepages: "1Gi"},
            ),
            node("tas-3", extended={"ephemeral-storage": "1Gi", hugepages: "1Gi"}),
            node("tas-4", extended={"ephemeral-storage": "50Gi", hugepages: "256Mi"}),
            node(
                "tas-5",
                taints=[taint("spot", "true", "PreferNoSchedule")],
                extended={"ephemeral-storage": "50Gi", hugepages: "2Gi"},
            ),
        ],
        steps=[
            Step(
                pod(
                    "scratch",
                    containers=[
                        container(extended={"ephemeral-storage": "5Gi"}),
                    ],
                    tolerations=[
                        {"key": "gpu", "operator": "Equal", "value": "", "effect": "NoSchedule"},
                        {
                            "key": "gpu",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 60,
                        },
                    ],
                )
            ),
            Step(
                pod(
                    "huge",
                    containers=[container(extended={hugepages: "512Mi"})],
                    tolerations=[{"operator": "Exists"}],
                )
            ),
        ],
    )


SCENARIOS: list[Scenario] = [
    _resources(),
    _init_sidecar_overhead(),
    _extended_resources(),
    _node_affinity(),
    _taints(),
    _host_ports(),
    _unschedulable_nodes(),
    _spread_do_not_schedule(),
    _spread_schedule_anyway(),
    _spread_min_domains(),
    _spread_node_affinity_policy(),
    _pod_affinity(),
    _pod_anti_affinity(),
    _existing_anti_affinity(),
    _image_locality(),
    _fits_nowhere(),
    _pod_level_resources(),
    _spread_edge_cases(),
    _affinity_namespaces(),
    _tolerations_and_storage(),
]


# -- volume scenarios --------------------------------------------------------------------

LEGACY_ZONE = "failure-domain.beta.kubernetes.io/zone"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WFFC = "WaitForFirstConsumer"
STORAGE_V1 = "storage.k8s.io/v1"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def storage_class(
    name: str,
    provisioner: str = NO_PROVISIONER,
    *,
    mode: str = WFFC,
    allowed_zones: Sequence[str] = (),
) -> Obj:
    out: Obj = {
        "apiVersion": STORAGE_V1,
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": "Retain",
    }
    if allowed_zones:
        out["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": list(allowed_zones)}]}
        ]
    return out


def volume(
    name: str,
    size: str,
    klass: str,
    *,
    on: str | None = None,
    driver: str | None = None,
    labels: Mapping[str, str] | None = None,
    claim: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
) -> Obj:
    """A PV: local (``on`` a node, by hostname node affinity) or CSI (``driver``);
    ``claim`` pre-binds it (``claimRef``), for claims that are bound before any pod."""
    pv_spec: Obj = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": klass,
        "volumeMode": "Filesystem",
    }
    if driver:
        pv_spec["csi"] = {"driver": driver, "volumeHandle": f"handle-{name}"}
    else:
        pv_spec["local"] = {"path": f"/mnt/disks/{name}"}
    if on:
        pv_spec["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": [term(HOSTNAME, "In", on)]}]}
        }
    if claim:
        pv_spec["claimRef"] = {"kind": "PersistentVolumeClaim", "name": claim}
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": pv_spec}


def claim(
    name: str,
    size: str,
    klass: str,
    *,
    volume_name: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    """A PVC in the scenario's namespace; ``volume_name`` binds it to that (pre-bound) PV."""
    pvc_spec: Obj = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "storageClassName": klass,
        "volumeMode": "Filesystem",
    }
    if volume_name:
        pvc_spec["volumeName"] = volume_name
    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": pvc_spec}


def csi_driver(name: str, *, storage_capacity: bool = False) -> Obj:
    return {
        "apiVersion": STORAGE_V1,
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"attachRequired": True, "storageCapacity": storage_capacity},
    }


def csi_node(node_name: str, drivers: Mapping[str, int | None]) -> Obj:
    """A CSINode; each driver with its ``allocatable.count`` (None: no limit)."""
    entries = []
    for driver, count in drivers.items():
        entry: Obj = {"name": driver, "nodeID": f"{node_name}-id", "topologyKeys": [HOSTNAME]}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {
        "apiVersion": STORAGE_V1,
        "kind": "CSINode",
        "metadata": {"name": node_name},
        "spec": {"drivers": entries},
    }


def capacity(name: str, klass: str, zone: str, size: str, *, maximum: str | None = None) -> Obj:
    out: Obj = {
        "apiVersion": STORAGE_V1,
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": klass,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": size,
    }
    if maximum:
        out["maximumVolumeSize"] = maximum
    return out


def with_claims(name: str, *claims: str, **kwargs: Any) -> Obj:
    """A pod mounting the named PVCs (volumes ``v0``, ``v1``, ...)."""
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return pod(name, volumes=volumes, **kwargs)


def with_ephemeral(name: str, size: str, klass: str, **kwargs: Any) -> Obj:
    """A pod with one generic ephemeral volume ``scratch`` (claim ``<name>-scratch``)."""
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": klass,
        }
    }
    return pod(
        name,
        volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}],
        **kwargs,
    )


def _local_pvs() -> Scenario:
    sc = "fid-local"
    return Scenario(
        "local-pvs",
        "static local PVs (node affinity), WaitForFirstConsumer: the smallest fitting PV "
        "of the class on the node, several claims per pod, a claim no PV fits",
        nodes=[
            node("loc-1", cpu="8", memory="16Gi", zone="a"),
            node("loc-2", zone="a"),
            node("loc-3", zone="b"),
            node("loc-4", zone="b"),
        ],
        storage=[
            storage_class(sc),
            storage_class("fid-local-other"),
            volume("loc-1-5g", "5Gi", sc, on="loc-1"),
            volume("loc-1-20g", "20Gi", sc, on="loc-1"),
            volume("loc-2-10g", "10Gi", sc, on="loc-2"),
            volume("loc-2-20g", "20Gi", sc, on="loc-2"),
            volume("loc-3-50g", "50Gi", sc, on="loc-3"),
            volume("loc-4-rwx", "500Gi", sc, on="loc-4", modes=["ReadWriteMany"]),
            volume("loc-4-other", "500Gi", "fid-local-other", on="loc-4"),
            claim("small", "4Gi", sc),
            claim("huge", "100Gi", sc),
            claim("big", "40Gi", sc),
            claim("mid", "8Gi", sc),
            claim("large", "18Gi", sc),
        ],
        steps=[
            Step(with_claims("small", "small")),
            Step(with_claims("huge", "huge"), expect="unschedulable"),
            Step(with_claims("big", "big")),
            Step(with_claims("pair", "mid", "large")),
        ],
    )


def _allowed_topologies() -> Scenario:
    provisioner = "topology.csi.example.com"
    return Scenario(
        "allowed-topologies",
        "WaitForFirstConsumer classes of a provisioner with allowedTopologies: the "
        "selected-node annotation; a claim already pinned to a node; no allowed zone",
        nodes=[
            node("topo-1", zone="a"),
            node("topo-2", zone="a"),
            node("topo-3", zone="b"),
            node("topo-4", zone="b"),
            node("topo-5", zone="c"),
        ],
        storage=[
            storage_class("fid-topo-ab", provisioner, allowed_zones=["a", "b"]),
            storage_class("fid-topo-c", provisioner, allowed_zones=["c"]),
            storage_class("fid-topo-x", provisioner, allowed_zones=["x"]),
            storage_class("fid-topo-any", provisioner),
            claim("ab", "1Gi", "fid-topo-ab"),
            claim("c", "1Gi", "fid-topo-c"),
            claim("ab-2", "1Gi", "fid-topo-ab"),
            claim("x", "1Gi", "fid-topo-x"),
            claim("any", "1Gi", "fid-topo-any"),
            claim("pinned", "1Gi", "fid-topo-any", annotations={SELECTED_NODE: "topo-3"}),
        ],
        provisioners=(provisioner,),
        steps=[
            Step(with_claims("ab", "ab")),
            Step(with_claims("c", "c")),
            Step(with_claims("ab-and-x", "ab-2", "x"), expect="unschedulable"),
            Step(with_claims("any", "any")),
            Step(with_claims("pinned", "pinned")),
        ],
    )


def _storage_capacity() -> Scenario:
    driver = "capacity.csi.example.com"
    sc = "fid-capacity"
    return Scenario(
        "storage-capacity",
        "CSIDriver storageCapacity: CSIStorageCapacity with room in one zone only, "
        "maximumVolumeSize in the other",
        nodes=[
            node("cap-1", zone="a"),
            node("cap-2", zone="a"),
            node("cap-3", zone="b"),
            node("cap-4", zone="b"),
        ],
        storage=[
            csi_driver(driver, storage_capacity=True),
            storage_class(sc, driver),
            capacity("cap-zone-a", sc, "a", "10Gi"),
            capacity("cap-zone-b", sc, "b", "100Gi", maximum="2Gi"),
            claim("fits", "5Gi", sc),
            claim("too-big", "20Gi", sc),
            claim("tiny", "1Gi", sc),
        ],
        provisioners=(driver,),
        steps=[
            Step(with_claims("fits", "fits")),
            Step(with_claims("too-big", "too-big"), expect="unschedulable"),
            Step(with_claims("tiny", "tiny")),
        ],
    )


def _volume_zone() -> Scenario:
    driver = "zone.csi.example.com"
    sc = "fid-zone"
    return Scenario(
        "volume-zone",
        "bound PVs labelled with a zone (GA, legacy beta, multi-zone a__c): nodes of "
        "other zones are rejected, a node without zone labels is not",
        nodes=[
            node("vz-1", zone="a"),
            node("vz-2", zone="a"),
            node("vz-3", zone="b"),
            node("vz-4", zone="c"),
            node("vz-5"),
        ],
        storage=[
            storage_class(sc, driver, mode="Immediate"),
            volume("vz-pv-a", "1Gi", sc, driver=driver, labels={ZONE: "a"}, claim="in-a"),
            volume("vz-pv-b", "1Gi", sc, driver=driver, labels={LEGACY_ZONE: "b"}, claim="in-b"),
            volume("vz-pv-ac", "1Gi", sc, driver=driver, labels={ZONE: "a__c"}, claim="in-ac"),
            claim("in-a", "1Gi", sc, volume_name="vz-pv-a"),
            claim("in-b", "1Gi", sc, volume_name="vz-pv-b"),
            claim("in-ac", "1Gi", sc, volume_name="vz-pv-ac"),
        ],
        steps=[
            Step(with_claims("in-a", "in-a")),
            Step(with_claims("in-b", "in-b")),
            Step(with_claims("in-ac", "in-ac")),
            Step(with_claims("a-and-b", "in-a", "in-b")),
        ],
    )


def _attach_limits() -> Scenario:
    driver = "limits.csi.example.com"
    sc = "fid-limits"
    pvs = [volume(f"lim-pv-{i}", "1Gi", sc, driver=driver, claim=f"c{i}") for i in range(1, 12)]
    claims = [claim(f"c{i}", "1Gi", sc, volume_name=f"lim-pv-{i}") for i in range(1, 12)]
    return Scenario(
        "attach-limits",
        "CSINode allocatable.count per driver, with running pods using bound CSI PVs: "
        "full nodes are rejected, a volume already attached there does not count twice",
        nodes=[
            node("lim-1", zone="a"),
            node("lim-2", zone="a"),
            node("lim-3", zone="b"),
            node("lim-4", zone="b"),
        ],
        storage=[
            csi_driver(driver),
            storage_class(sc, driver, mode="Immediate"),
            *pvs,
            *claims,
            csi_node("lim-1", {driver: 2}),
            csi_node("lim-2", {driver: 1}),
            csi_node("lim-3", {driver: 4}),
            csi_node("lim-4", {driver: 3}),
        ],
        existing=[
            with_claims("full-1", "c1", "c2", on="lim-1"),
            with_claims("full-2", "c3", on="lim-2"),
            with_claims("part-3", "c4", on="lim-3"),
            with_claims("part-4", "c5", on="lim-4"),
        ],
        steps=[
            Step(with_claims("one", "c6")),
            Step(with_claims("shared", "c1")),
            Step(with_claims("wide", "c7", "c8", "c9", "c10"), expect="unschedulable"),
        ],
    )


def _read_write_once_pod() -> Scenario:
    driver = "rwop.csi.example.com"
    sc = "fid-rwop"
    rwop = ["ReadWriteOncePod"]
    return Scenario(
        "read-write-once-pod",
        "a ReadWriteOncePod claim in use by a running pod: no node for a second user; "
        "an unused one fits anywhere",
        nodes=[node(f"rwop-{i}", zone="ab"[i % 2]) for i in range(1, 5)],
        storage=[
            storage_class(sc, driver, mode="Immediate"),
            volume("rwop-pv-used", "1Gi", sc, driver=driver, claim="used", modes=rwop),
            volume("rwop-pv-free", "1Gi", sc, driver=driver, claim="free", modes=rwop),
            claim("used", "1Gi", sc, volume_name="rwop-pv-used", modes=rwop),
            claim("free", "1Gi", sc, volume_name="rwop-pv-free", modes=rwop),
        ],
        existing=[with_claims("holder", "used", on="rwop-2")],
        steps=[
            Step(with_claims("second", "used"), expect="unschedulable"),
            Step(with_claims("free", "free")),
        ],
    )


def _ephemeral_volumes() -> Scenario:
    sc = "fid-ephemeral"
    return Scenario(
        "ephemeral-volumes",
        "generic ephemeral volumes: the ephemeral-volume controller's <pod>-<volume> "
        "claim binds to a local PV where the pod goes",
        nodes=[
            node("eph-1", zone="a"),
            node("eph-2", zone="a"),
            node("eph-3", zone="b"),
            node("eph-4", zone="b"),
        ],
        storage=[
            storage_class(sc),
            volume("eph-1-10g", "10Gi", sc, on="eph-1"),
            volume("eph-2-10g", "10Gi", sc, on="eph-2"),
            volume("eph-3-1g", "1Gi", sc, on="eph-3"),
        ],
        steps=[
            Step(with_ephemeral("scratch", "5Gi", sc)),
            Step(with_ephemeral("tiny", "500Mi", sc)),
            Step(with_ephemeral("vast", "50Gi", sc), expect="unschedulable"),
        ],
    )


#: Run with kube-controller-manager's volume controllers (``test_fidelity.py``).
VOLUME_SCENARIOS: list[Scenario] = [
    _local_pvs(),
    _allowed_topologies(),
    _storage_capacity(),
    _volume_zone(),
    _attach_limits(),
    _read_write_once_pod(),
    _ephemeral_volumes(),
]


# -- Dynamic Resource Allocation ------------------------------------------------------------

RESOURCE_V1 = "resource.k8s.io/v1"
DRA_DRIVER = "gpu.fidelity.test"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def device_class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def gpu(name: str, model: str, memory: str, *, healthy: bool = True) -> Obj:
    """One device of :data:`DRA_DRIVER` with a ``model``/``healthy`` attribute and memory."""
    return {
        "name": name,
        "attributes": {"model": {"string": model}, "healthy": {"bool": healthy}},
        "capacity": {"memory": {"value": memory}},
    }


def resource_slice(on: str, *devices: Obj) -> Obj:
    """A node-local ResourceSlice: the node's own pool (named after it), one slice."""
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{on}-{DRA_DRIVER}"},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": on,
            "pool": {"name": on, "generation": 1, "resourceSliceCount": 1},
            "devices": list(devices),
        },
    }


def exactly(
    klass: str,
    *selectors: str,
    count: int | None = None,
    mode: str | None = None,
    admin: bool = False,
) -> Obj:
    """An ``exactly`` device request (``mode``: ``All``; default ExactCount, ``count``)."""
    out: Obj = {"deviceClassName": klass}
    if selectors:
        out["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if mode:
        out["allocationMode"] = mode
    if count is not None:
        out["count"] = count
    if admin:
        out["adminAccess"] = True
    return out


def claim_spec(*requests: Obj, constraints: Sequence[Obj] = ()) -> Obj:
    """A claim spec from requests, each ``{"name": ..., "exactly"|"firstAvailable": ...}``."""
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = [dict(c) for c in constraints]
    return {"devices": devices}


def resource_claim(name: str, spec: Obj, *, allocation: Obj | None = None) -> Obj:
    """A ResourceClaim; with ``allocation`` the harness writes it as ``status.allocation``."""
    out: Obj = {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": spec,
    }
    if allocation is not None:
        out["status"] = {"allocation": allocation}
    return out


def claim_template(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": spec},
    }


def node_allocation(on: str, *results: tuple[str, str]) -> Obj:
    """``status.allocation`` of devices of `on`'s pool, (request, device) each, as kube
    writes it: results plus a node selector for that node."""
    return {
        "devices": {
            "results": [
                {"request": request, "driver": DRA_DRIVER, "pool": on, "device": device}
                for request, device in results
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [on]}]}
            ]
        },
    }


def with_resource_claims(
    name: str, *claims: str, templates: Mapping[str, str] | None = None, **kwargs: Any
) -> Obj:
    """A pod using ResourceClaims by name (entry named after the claim) and through
    templates (entry name -> template); its container uses every entry."""
    entries: list[Obj] = [{"name": c, "resourceClaimName": c} for c in claims]
    entries += [
        {"name": entry, "resourceClaimTemplateName": template}
        for entry, template in (templates or {}).items()
    ]
    main = container()
    main["resources"]["claims"] = [{"name": e["name"]} for e in entries]
    return pod(name, containers=[main], resourceClaims=entries, **kwargs)


def _model(model: str) -> str:
    return f'device.attributes["{DRA_DRIVER}"].model == "{model}"'


def _memory(operator: str, quantity: str) -> str:
    return f'device.capacity["{DRA_DRIVER}"].memory.compareTo(quantity("{quantity}")) {operator} 0'


def _dra_devices() -> Scenario:
    klass = "fid-dra-gpu"
    return Scenario(
        "dra-devices",
        "DRA on node-local slices (two nodes without any): a class CEL selector (healthy "
        "devices), claim selectors on attributes and on capacity (quantity/compareTo), "
        "allocationMode All, count 2, firstAvailable (the first alternative scores higher), "
        "matchAttribute across two requests (backtracking), a pre-allocated claim (its device "
        "taken, its pod pinned; and nowhere with a node selector elsewhere), admin access, "
        "a missing class",
        nodes=[
            node("dra-1"),
            node("dra-2", cpu="8", memory="16Gi"),
            node("dra-3"),
            node("dra-4"),
            node("dra-5"),
            node("dra-6"),
        ],
        labels={ADMIN_ACCESS_LABEL: "true"},
        dra=[
            device_class(
                klass,
                f'device.driver == "{DRA_DRIVER}" && device.attributes["{DRA_DRIVER}"].healthy',
            ),
            resource_slice(
                "dra-1", gpu("gpu-0", "a100", "40Gi"), gpu("gpu-1", "a100", "40Gi", healthy=False)
            ),
            resource_slice(
                "dra-2",
                gpu("gpu-0", "a100", "80Gi"),
                gpu("gpu-1", "a100", "80Gi"),
                gpu("gpu-2", "h100", "80Gi"),
                gpu("gpu-3", "h100", "80Gi"),
            ),
            resource_slice(
                "dra-3",
                gpu("gpu-0", "t4", "16Gi"),
                gpu("gpu-1", "t4", "16Gi"),
                gpu("gpu-2", "t4", "16Gi"),
            ),
            resource_slice(
                "dra-4",
                gpu("gpu-0", "l4", "24Gi"),
                gpu("gpu-1", "l4", "24Gi"),
                gpu("gpu-2", "t4", "16Gi"),
            ),
            resource_claim(
                "pinned",
                claim_spec({"name": "gpu", "exactly": exactly(klass)}),
                allocation=node_allocation("dra-3", ("gpu", "gpu-0")),
            ),
            resource_claim(
                "all-a100",
                claim_spec({"name": "gpu", "exactly": exactly(klass, _model("a100"), mode="All")}),
            ),
            resource_claim(
                "a100", claim_spec({"name": "gpu", "exactly": exactly(klass, _model("a100"))})
            ),
            resource_claim(
                "first-available",
                claim_spec(
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {
                                "name": "h100",
                                "deviceClassName": klass,
                                "selectors": [{"cel": {"expression": _model("h100")}}],
                            },
                            {
                                "name": "t4",
                                "deviceClassName": klass,
                                "selectors": [{"cel": {"expression": _model("t4")}}],
                            },
                        ],
                    }
                ),
            ),
            resource_claim(
                "big-memory",
                claim_spec({"name": "gpu", "exactly": exactly(klass, _memory(">=", "64Gi"))}),
            ),
            resource_claim(
                "all-h100",
                claim_spec({"name": "gpu", "exactly": exactly(klass, _model("h100"), mode="All")}),
            ),
            resource_claim(
                "same-model",
                claim_spec(
                    {"name": "any", "exactly": exactly(klass)},
                    {"name": "small", "exactly": exactly(klass, _memory("<", "20Gi"))},
                    constraints=[
                        {"requests": ["any", "small"], "matchAttribute": f"{DRA_DRIVER}/model"}
                    ],
                ),
            ),
            resource_claim("two", claim_spec({"name": "gpus", "exactly": exactly(klass, count=2)})),
            resource_claim(
                "admin",
                claim_spec({"name": "gpu", "exactly": exactly(klass, _model("t4"), admin=True)}),
            ),
            resource_claim(
                "no-class", claim_spec({"name": "gpu", "exactly": exactly("fid-dra-missing")})
            ),
        ],
        steps=[
            # dra-1 has one healthy a100, dra-2 two: both feasible, All takes every one.
            Step(with_resource_claims("all-a100", "all-a100")),
            Step(with_resource_claims("a100", "a100")),
            # h100 (dra-2) is the first alternative, t4 (dra-3, dra-4) the second.
            Step(with_resource_claims("first-available", "first-available")),
            Step(with_resource_claims("big-memory", "big-memory")),
            # One h100 is taken now: All cannot have every one anywhere.
            Step(with_resource_claims("all-h100", "all-h100"), expect="unschedulable"),
            # A small (t4) device and another of its model: dra-4's only t4 has no twin.
            Step(with_resource_claims("same-model", "same-model")),
            Step(with_resource_claims("two", "two")),
            Step(with_resource_claims("uses-pinned", "pinned")),
            # Its claim is allocated on dra-3, its node selector wants dra-4.
            Step(
                with_resource_claims(
                    "pinned-elsewhere", "pinned", nodeSelector={HOSTNAME: "dra-4"}
                ),
                expect="unschedulable",
            ),
            # Admin access may use a device another claim has (dra-3's gpu-0).
            Step(with_resource_claims("admin", "admin")),
            Step(with_resource_claims("no-class", "no-class"), expect="unschedulable"),
        ],
    )


def _dra_shared() -> Scenario:
    klass = "fid-dra-shared-gpu"
    one_gpu = claim_spec({"name": "gpu", "exactly": exactly(klass)})
    return Scenario(
        "dra-shared",
        "DRA: a claim shared by two pods (the second follows the first's allocation), "
        "pods with ResourceClaimTemplates (the ResourceClaim controller creates their claims) "
        "until no device is left (one node tainted)",
        nodes=[
            node("drs-1", cpu="8", memory="16Gi"),
            node("drs-2"),
            node("drs-3", taints=[taint("fidelity.test/dra", "x")]),
            node("drs-4"),
        ],
        dra=[
            device_class(klass, f'device.driver == "{DRA_DRIVER}"'),
            resource_slice("drs-1", gpu("gpu-0", "a100", "40Gi")),
            resource_slice("drs-2", gpu("gpu-0", "a100", "40Gi")),
            resource_claim("shared", one_gpu),
            claim_template("one-gpu", one_gpu),
        ],
        steps=[
            Step(with_resource_claims("share-a", "shared")),
            Step(with_resource_claims("share-b", "shared")),
            Step(with_resource_claims("template-a", templates={"gpu": "one-gpu"})),
            Step(
                with_resource_claims("template-b", templates={"gpu": "one-gpu"}),
                expect="unschedulable",
            ),
        ],
    )


def _dra_unavailable_claim() -> Scenario:
    klass = "fid-dra-unavailable-gpu"
    one_gpu = claim_spec({"name": "gpu", "exactly": exactly(klass)})
    return Scenario(
        "dra-unavailable-claim",
        "DRA: a pod with a claim allocated on another node (in use there) and a claim to "
        "allocate fits nowhere: which reason each node gets (kube runs the allocator "
        "before it reports the allocated claim unavailable)",
        nodes=[
            node("dru-1", cpu="8", memory="16Gi"),
            node("dru-2"),
            node("dru-3", taints=[taint("fidelity.test/dra", "x")]),
            node("dru-4"),
        ],
        dra=[
            device_class(klass, f'device.driver == "{DRA_DRIVER}"'),
            resource_slice("dru-1", gpu("gpu-0", "a100", "40Gi")),
            resource_slice("dru-2", gpu("gpu-0", "a100", "40Gi")),
            resource_claim("shared", one_gpu),
            resource_claim("extra", one_gpu),
        ],
        steps=[
            Step(with_resource_claims("user", "shared")),
            # dru-1 (where "shared" is) has no device left for "extra"; dru-2 has one
            # but is not where "shared" is; dru-4 has neither.
            Step(
                with_resource_claims("shared-and-extra", "shared", "extra"), expect="unschedulable"
            ),
        ],
    )


def _dra_counters_and_taints() -> Scenario:
    klass = "fid-dra-partition-gpu"
    counters = {"memory": {"value": "40Gi"}}

    def part(name: str, size: str, memory: str, **extra: Any) -> Obj:
        device = gpu(name, "a100", memory)
        device["attributes"]["size"] = {"string": size}
        device.update(extra)
        return device

    def half(name: str, *, tolerate: bool = False) -> Obj:
        request = exactly(klass, f'device.attributes["{DRA_DRIVER}"].size == "half"')
        if tolerate:
            request["tolerations"] = [
                {"key": "fidelity.test/broken", "operator": "Exists", "effect": "NoSchedule"}
            ]
        return resource_claim(name, claim_spec({"name": "gpu", "exactly": request}))

    def consumes(memory: str) -> list[Obj]:
        return [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]

    pool = {"name": "drp-1", "generation": 1, "resourceSliceCount": 2}
    return Scenario(
        "dra-counters-taints",
        "DRA partitionable devices (one GPU's memory counter shared by a whole and two "
        "halves, in a counters slice of the same pool) and device taints (a tainted device "
        "only for a claim that tolerates it)",
        nodes=[node(f"drp-{i}") for i in range(1, 5)],
        dra=[
            device_class(klass, f'device.driver == "{DRA_DRIVER}"'),
            {
                "apiVersion": RESOURCE_V1,
                "kind": "ResourceSlice",
                "metadata": {"name": "drp-1-counters"},
                "spec": {
                    "driver": DRA_DRIVER,
                    "nodeName": "drp-1",
                    "pool": pool,
                    "sharedCounters": [{"name": "gpu-0", "counters": counters}],
                },
            },
            {
                "apiVersion": RESOURCE_V1,
                "kind": "ResourceSlice",
                "metadata": {"name": "drp-1-devices"},
                "spec": {
                    "driver": DRA_DRIVER,
                    "nodeName": "drp-1",
                    "pool": pool,
                    "devices": [
                        part("whole", "whole", "40Gi", consumesCounters=consumes("40Gi")),
                        part("half-0", "half", "20Gi", consumesCounters=consumes("20Gi")),
                        part("half-1", "half", "20Gi", consumesCounters=consumes("20Gi")),
                    ],
                },
            },
            resource_slice(
                "drp-2",
                part(
                    "gpu-0",
                    "half",
                    "20Gi",
                    taints=[
                        {"key": "fidelity.test/broken", "value": "yes", "effect": "NoSchedule"}
                    ],
                ),
            ),
            half("half"),
            resource_claim(
                "whole",
                claim_spec(
                    {
                        "name": "gpu",
                        "exactly": exactly(
                            klass, f'device.attributes["{DRA_DRIVER}"].size == "whole"'
                        ),
                    }
                ),
            ),
            half("half-again"),
            half("tolerant", tolerate=True),
            half("intolerant"),
        ],
        steps=[
            Step(with_resource_claims("half", "half")),
            # Half of the counter is used up: the whole GPU does not fit any more.
            Step(with_resource_claims("whole", "whole"), expect="unschedulable"),
            Step(with_resource_claims("half-again", "half-again")),
            # drp-1 has no counter left; drp-2's device is tainted.
            Step(with_resource_claims("tolerant", "tolerant")),
            Step(with_resource_claims("intolerant", "intolerant"), expect="unschedulable"),
        ],
    )


def _dra_extended_resources() -> Scenario:
    resource = "fidelity.test/gpu"
    klass = device_class("fid-dra-extended-gpu", f'device.driver == "{DRA_DRIVER}"')
    klass["spec"]["extendedResourceName"] = resource

    def wants(name: str, count: int) -> Obj:
        return pod(name, containers=[container(extended={resource: str(count)})])

    return Scenario(
        "dra-extended-resources",
        "DRA-backed extended resources: a DeviceClass with extendedResourceName; pods "
        "asking for the resource get kube's special claim where the node does not "
        "advertise it, and fit a node whose device plugin advertises it without one",
        nodes=[
            node("dre-1", cpu="8", memory="16Gi"),
            node("dre-2"),
            node("dre-3", extended={resource: "1"}),
            node("dre-4"),
        ],
        dra=[
            klass,
            resource_slice(
                "dre-1",
                gpu("gpu-0", "a100", "40Gi"),
                gpu("gpu-1", "a100", "40Gi"),
                gpu("gpu-2", "a100", "40Gi"),
            ),
            resource_slice("dre-2", gpu("gpu-0", "a100", "40Gi")),
        ],
        steps=[
            Step(wants("one", 1)),
            Step(wants("two", 2)),
            # dre-2's device or dre-3's device plugin: a tie, then the other one.
            Step(wants("one-more", 1)),
            Step(wants("last-one", 1)),
            Step(wants("none-left", 1), expect="unschedulable"),
        ],
    )


def _dra_consumable_capacity() -> Scenario:
    klass = "fid-dra-consumable-gpu"

    def share(name: str, memory: str | None) -> Obj:
        request = exactly(klass)
        if memory is not None:
            request["capacity"] = {"requests": {"memory": memory}}
        return resource_claim(name, claim_spec({"name": "gpu", "exactly": request}))

    shared_gpu = gpu("shared-gpu", "a100", "40Gi")
    shared_gpu["allowMultipleAllocations"] = True
    shared_gpu["capacity"]["memory"]["requestPolicy"] = {
        "default": "10Gi",
        "validRange": {"min": "5Gi"},
    }
    return Scenario(
        "dra-consumable-capacity",
        "DRA consumable capacity: a device that allows multiple allocations hands out its "
        "memory (requested, or the policy's default) until none is left; a plain device "
        "with enough memory takes one claim",
        nodes=[node("drc-1", cpu="8", memory="16Gi"), node("drc-2"), node("drc-3"), node("drc-4")],
        dra=[
            device_class(klass, f'device.driver == "{DRA_DRIVER}"'),
            resource_slice("drc-1", shared_gpu),
            resource_slice("drc-2", gpu("gpu-0", "a100", "40Gi")),
            share("twenty", "20Gi"),
            share("default", None),
            share("big", "20Gi"),
            share("more", "10Gi"),
            share("none-left", "5Gi"),
        ],
        steps=[
            Step(with_resource_claims("twenty", "twenty")),
            Step(with_resource_claims("default", "default")),
            # 10Gi left on the shared device.
            Step(with_resource_claims("big", "big")),
            Step(with_resource_claims("more", "more")),
            Step(with_resource_claims("none-left", "none-left"), expect="unschedulable"),
        ],
    )


def _dra_pool_order() -> Scenario:
    klass = "fid-dra-any-driver"

    def one_slice(name: str, driver: str, pool: str, count: int, *devices: str) -> Obj:
        return {
            "apiVersion": RESOURCE_V1,
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": driver,
                "nodeName": "dro-1",
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
                "devices": [gpu(d, "a100", "40Gi") for d in devices],
            },
        }

    def wants(name: str, count: int) -> Obj:
        return resource_claim(
            name, claim_spec({"name": "devs", "exactly": exactly(klass, count=count)})
        )

    return Scenario(
        "dra-pool-order",
        "DRA device order on one node: pools by driver then pool name, a pool's slices by "
        "name (created in the other order), devices in slice order",
        nodes=[node(f"dro-{i}") for i in range(1, 5)],
        dra=[
            device_class(klass, 'device.driver.endsWith("fidelity.test")'),
            one_slice("dro-1-x", DRA_DRIVER, "dro-1-b", 1, "gpu-0"),
            one_slice("dro-1-a-2", DRA_DRIVER, "dro-1-a", 2, "d-0"),
            one_slice("dro-1-a-1", DRA_DRIVER, "dro-1-a", 2, "d-1"),
            one_slice("dro-1-y", "accel.fidelity.test", "dro-1-z", 1, "acc-1", "acc-0"),
            wants("first", 1),
            wants("rest", 4),
            wants("none-left", 1),
        ],
        steps=[
            Step(with_resource_claims("first", "first")),
            Step(with_resource_claims("rest", "rest")),
            Step(with_resource_claims("none-left", "none-left"), expect="unschedulable"),
        ],
    )


def _dra_network_attached() -> Scenario:
    klass = "fid-dra-network"

    def device(name: str, kind: str) -> Obj:
        out = gpu(name, "a100", "40Gi")
        out["attributes"]["kind"] = {"string": kind}
        return out

    def kind_claim(name: str, kind: str, count: int = 1) -> Obj:
        request = exactly(klass, f'device.attributes["{DRA_DRIVER}"].kind == "{kind}"', count=count)
        return resource_claim(name, claim_spec({"name": "dev", "exactly": request}))

    rack = "fidelity.test/rack"
    return Scenario(
        "dra-network-attached",
        "DRA devices not local to one node: a pool for the nodes of a rack (nodeSelector; "
        "its allocation follows the slice's selector) and one for all nodes (no selector)",
        nodes=[
            node("drn-1", labels={rack: "r1"}),
            node("drn-2", labels={rack: "r1"}),
            node("drn-3", labels={rack: "r2"}),
            node("drn-4"),
        ],
        dra=[
            device_class(klass, f'device.driver == "{DRA_DRIVER}"'),
            {
                "apiVersion": RESOURCE_V1,
                "kind": "ResourceSlice",
                "metadata": {"name": "drn-rack-r1"},
                "spec": {
                    "driver": DRA_DRIVER,
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": rack, "operator": "In", "values": ["r1"]}
                                ]
                            }
                        ]
                    },
                    "pool": {"name": "rack-r1", "generation": 1, "resourceSliceCount": 1},
                    "devices": [device("rack-0", "rack"), device("rack-1", "rack")],
                },
            },
            {
                "apiVersion": RESOURCE_V1,
                "kind": "ResourceSlice",
                "metadata": {"name": "drn-fabric"},
                "spec": {
                    "driver": DRA_DRIVER,
                    "allNodes": True,
                    "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
                    "devices": [device("fabric-0", "fabric")],
                },
            },
            kind_claim("rack", "rack"),
            kind_claim("fabric", "fabric"),
            kind_claim("fabric-again", "fabric"),
            kind_claim("rack-two", "rack", count=2),
        ],
        steps=[
            Step(with_resource_claims("rack", "rack")),
            # Follows the allocation's node selector: either node of rack r1.
            Step(with_resource_claims("rack-user", "rack")),
            Step(with_resource_claims("fabric", "fabric")),
            Step(with_resource_claims("fabric-again", "fabric-again"), expect="unschedulable"),
            Step(with_resource_claims("rack-two", "rack-two"), expect="unschedulable"),
        ],
    )


def _dra_prioritized_list() -> Scenario:
    klass = "fid-dra-prioritized"

    def sub(name: str, model: str | None, count: int = 1) -> Obj:
        out: Obj = {"name": name, "deviceClassName": klass, "count": count}
        if model is not None:
            out["selectors"] = [{"cel": {"expression": _model(model)}}]
        return out

    return Scenario(
        "dra-prioritized-list",
        "DRA firstAvailable with counts (two h100s, else any one device), a firstAvailable "
        "request in a matchAttribute constraint (backtracking to the second alternative), "
        "two alternatives of two devices that fit nowhere",
        nodes=[node(f"drq-{i}") for i in range(1, 5)],
        dra=[
            device_class(klass, f'device.driver == "{DRA_DRIVER}"'),
            resource_slice("drq-1", gpu("gpu-0", "h100", "80Gi"), gpu("gpu-1", "h100", "80Gi")),
            resource_slice("drq-2", gpu("gpu-0", "h100", "80Gi"), gpu("gpu-1", "a100", "40Gi")),
            resource_slice("drq-3", gpu("gpu-0", "a100", "40Gi"), gpu("gpu-1", "a100", "40Gi")),
            resource_claim(
                "prefers-two",
                claim_spec(
                    {
                        "name": "gpu",
                        "firstAvailable": [sub("two-h100", "h100", 2), sub("any", None)],
                    }
                ),
            ),
            resource_claim(
                "same-model",
                claim_spec(
                    {"name": "a", "firstAvailable": [sub("h100", "h100"), sub("a100", "a100")]},
                    {"name": "b", "exactly": exactly(klass)},
                    constraints=[{"requests": ["a", "b"], "matchAttribute": f"{DRA_DRIVER}/model"}],
                ),
            ),
            resource_claim(
                "two-of-a-kind",
                claim_spec(
                    {
                        "name": "gpu",
                        "firstAvailable": [sub("h100", "h100", 2), sub("a100", "a100", 2)],
                    }
                ),
            ),
        ],
        steps=[
            Step(with_resource_claims("prefers-two", "prefers-two")),
            # drq-2: an h100 has no twin, nor the a100: only drq-3's two a100s.
            Step(with_resource_claims("same-model", "same-model")),
            Step(with_resource_claims("two-of-a-kind", "two-of-a-kind"), expect="unschedulable"),
        ],
    )


#: Run with kube-controller-manager's ResourceClaim controller (``test_fidelity.py``).
DRA_SCENARIOS: list[Scenario] = [
    _dra_prioritized_list(),
    _dra_network_attached(),
    _dra_pool_order(),
    _dra_consumable_capacity(),
    _dra_extended_resources(),
    _dra_devices(),
    _dra_shared(),
    _dra_unavailable_claim(),
    _dra_counters_and_taints(),
]


# -- node sampling (percentageOfNodesToScore) --------------------------------------------

#: The kube-scheduler profile (and ours) that sets ``percentageOfNodesToScore``
#: explicitly; the default profile leaves it unset (kube: adaptive, ours: every node).
SAMPLING_PROFILE = "fidelity-sampling-50"
SAMPLING_PERCENTAGE = 50
FAVOURITE = "fidelity.test/favourite"
SAMPLING_NODES = 500
SAMPLING_PODS = 10


def favourite_of(index: int) -> int:
    """The position (in creation and name order) of the node pod `index` prefers:
    spread over the node list, so that kube-scheduler's sample window, which
    moves on by the same stride every cycle, covers some of them and not others."""
    return (37 + 97 * index) % SAMPLING_NODES


def _prefers(name: str, index: int, **spec: Any) -> Obj:
    """A pod whose preferred node affinity matches one node only: NodeAffinity gives
    that node 100 (x2 weight) and every other node 0, so it is the single best node."""
    preference = {"matchExpressions": [term(FAVOURITE, "In", str(index))]}
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": preference}
            ]
        }
    }
    return pod(name, affinity=affinity, **spec)


def _sampling() -> Scenario:
    favourites = {favourite_of(i): i for i in range(SAMPLING_PODS)}
    assert len(favourites) == SAMPLING_PODS
    nodes = [
        node(
            f"smp-{n:03d}",  # zero-padded: name order (ours) is creation order (kube's)
            labels={FAVOURITE: str(favourites[n])} if n in favourites else None,
        )
        for n in range(SAMPLING_NODES)
    ]
    return Scenario(
        "sampling",
        f"{SAMPLING_NODES} identical empty nodes; each pod prefers one of them. With "
        "percentageOfNodesToScore unset kube-scheduler scores an adaptive sample "
        f"(max(5, 50 - N/125) = {50 - SAMPLING_NODES // 125}% here) and can miss the "
        "preferred node, we score every node; with it set on both sides both score "
        f"{SAMPLING_PERCENTAGE}%",
        nodes=nodes,
        steps=[
            *(Step(_prefers(f"adaptive-{i}", i)) for i in range(SAMPLING_PODS)),
            *(
                Step(_prefers(f"sampled-{i}", i, schedulerName=SAMPLING_PROFILE))
                for i in range(SAMPLING_PODS)
            ),
        ],
        sampling=True,
    )


#: Hundreds of nodes, run without probes (``test_fidelity.py``, ``harness.run_sampling_step``).
SAMPLING_SCENARIOS: list[Scenario] = [_sampling()]

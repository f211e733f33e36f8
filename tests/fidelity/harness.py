"""Run a scenario on both sides: the real kube-scheduler (the reference) and our explain.

kube-scheduler only says which node it chose, so its *feasible set* is measured
with probes: for every node N a copy of the pod that can only go to N is
submitted, and whether kube-scheduler binds it (feasible) or reports
FailedScheduling (infeasible) is recorded; the probe is then deleted so it
changes nothing. Two probe kinds:

``pin``
    a required node affinity ``matchFields metadata.name In [N]`` is ANDed to
    every node-selector term of the pod: NodeAffinity's PreFilter narrows the
    cycle to N and every other filter still runs. Pinned probes of a pod without
    inter-pod (anti-)affinity are independent of each other (each on its own
    node, nothing else counts them), so they are submitted all at once;
    otherwise one at a time.
``nominate``
    for pods with topology spread constraints, where a pin would change the
    answer (``nodeAffinityPolicy: Honor`` counts only nodes matching the pod's
    node affinity, so a pinned probe sees one domain): the probe is created
    gated, ``status.nominatedNodeName`` is set to N, and the gate is removed.
    Both schedulers try a pod's nominated node first and take it if it passes
    every filter, so "bound to N" means feasible; anything else (bound
    elsewhere, or unschedulable) means infeasible. One at a time.

``pin`` with claim copies (DRA pods, ``run_dra_step``)
    a probe kube-scheduler binds allocates the claims it uses, so each probe
    gets its own copy of every unallocated ResourceClaim the pod names (a
    template's claim is one per probe anyway); allocated claims are shared by
    the probes and held by a non-pod ``reservedFor`` entry meanwhile, so that
    PostFilter does not deallocate them. The probes and their claims are deleted
    after, and a sync pod with a claim of its own waits until kube-scheduler has
    seen that.

``none`` (sampling scenarios, ``run_sampling_step``)
    hundreds of nodes, every one feasible for every pod: probes would cost a
    cycle per node and pod on each side and tell nothing. Only kube-scheduler's
    cycle for the pod itself is read (its log: the nodes it scored, how many it
    evaluated, the node it chose) and compared with ours.

Our side gets the same probes through ``explain`` and, directly, the pod
itself: ``explain``'s feasible set must equal both probe-derived sets. Then
kube-scheduler places the real pod; its node must be one of our tied best, and
its per-plugin weighted scores (logged by ``schedule_one.go`` at ``-v=10``) must
equal ours. A pod that fits nowhere must give the same "0/N nodes are
available: ..." text in kube-scheduler's FailedScheduling event as ours.

State sync: kube-scheduler sees the API through informers, one per resource.
Before probing, a *sync pod* (no labels, no requests, tolerates everything) is
pinned to the node created last and must require the label put on that node by
the very last node write: once it is bound, kube-scheduler's node cache has
every node event of the scenario, and its pod cache every pod event before the
sync pod's (one watch per resource delivers events in order). Pod deletions are
seen before later pod creations for the same reason.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.api import CycleState
from scheduler.config import load_config
from scheduler.config.models import DEFAULT_SCHEDULER_NAME, SchedulerConfiguration
from scheduler.framework.cycle import Algorithm, num_feasible_nodes_to_find
from scheduler.framework.explain import (
    Explanation,
    build_table,
    explain,
    parse_pod,
    resolve_priority,
)
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.plugins.dynamicresources.plugin import STATE_KEY as DRA_STATE_KEY
from scheduler.plugins.dynamicresources.plugin import DynamicResources
from scheduler.plugins.dynamicresources.plugin import _State as DraState
from scheduler.plugins.volumes.binding import NAME as VOLUME_BINDING
from scheduler.plugins.volumes.binding import VolumeBinding
from scheduler.state.pod import PodInfo
from scheduler.tools.controlplane import RestClient
from tests.fidelity.scenarios import (
    SAMPLING_PERCENTAGE,
    SAMPLING_PROFILE,
    Obj,
    Scenario,
    Step,
)

HOLD_GATE = "fidelity.test/hold"
SYNC_LABEL = "fidelity.test/sync"
MERGE_PATCH = "application/merge-patch+json"
POLL = 0.03
#: Cluster-scoped kinds a scenario may add, by their resource name.
CLUSTER_PLURALS = {
    "RuntimeClass": "runtimeclasses",
    "StorageClass": "storageclasses",
    "CSIDriver": "csidrivers",
    "PersistentVolume": "persistentvolumes",
    "CSINode": "csinodes",
    "DeviceClass": "deviceclasses",
    "ResourceSlice": "resourceslices",
}
#: Namespaced storage kinds a volume scenario may add (in its own namespace).
NAMESPACED_PLURALS = {
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "CSIStorageCapacity": "csistoragecapacities",
}
#: What ``KubeSide.objects(volumes=True)`` reads besides nodes, pods and namespaces.
STORAGE_KINDS = (
    ("v1", "PersistentVolume", "persistentvolumes"),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses"),
    ("storage.k8s.io/v1", "CSINode", "csinodes"),
    ("storage.k8s.io/v1", "CSIDriver", "csidrivers"),
    ("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities"),
    ("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments"),
)
#: What ``KubeSide.objects(dra=True)`` reads besides nodes, pods and namespaces.
DRA_KINDS = (
    ("resource.k8s.io/v1", "DeviceClass", "deviceclasses"),
    ("resource.k8s.io/v1", "ResourceSlice", "resourceslices"),
    ("resource.k8s.io/v1", "ResourceClaim", "resourceclaims"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates"),
)
#: Namespaced DRA kinds a DRA scenario may add (in its own namespace).
DRA_NAMESPACED_PLURALS = {
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
}
RESOURCE_API = "/apis/resource.k8s.io/v1"
#: A ``reservedFor`` consumer that is not a pod, on probes' copies of allocated claims
#: (see ``KubeSide.probe_dra``): the ResourceClaim controller keeps entries it cannot
#: check, and kube-scheduler's PostFilter deallocates only claims nobody else uses.
PROBE_HOLD = {"apiGroup": "fidelity.test", "resource": "holds", "name": "probe"}
DECISION_TIMEOUT = 30.0
#: Seconds kube-scheduler's storage informers get after the API has settled.
VOLUME_SETTLE = 0.5

#: kube-scheduler's ``-v=10`` line for one plugin's weighted score of one node.
_PLUGIN_SCORE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)'
)
_FINAL_SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="(?P<pod>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)'
)
#: kube-scheduler's ``-v=2`` line for a bound pod: how many nodes its cycle filtered
#: (``evaluatedNodes``) and found feasible (``feasibleNodes``, the ones it scored).
_BOUND = re.compile(
    r'"Successfully bound pod to node" pod="(?P<pod>[^"]+)" node="(?P<node>[^"]+)" '
    r"evaluatedNodes=(?P<evaluated>\d+) feasibleNodes=(?P<feasible>\d+)"
)


#: kube-scheduler's profiles: its default one, and one that sets
#: ``percentageOfNodesToScore`` (for the sampling scenario; no other pod names it).
KUBE_DEFAULT_SCHEDULER = "default-scheduler"
PROFILES: list[Obj] = [
    {"schedulerName": KUBE_DEFAULT_SCHEDULER},
    {"schedulerName": SAMPLING_PROFILE, "percentageOfNodesToScore": SAMPLING_PERCENTAGE},
]


def default_config() -> SchedulerConfiguration:
    """Our side's config: our default profile (which every scenario's pods get from
    ``explain``, whatever their schedulerName) and the same sampling profile as kube's."""
    return load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": DEFAULT_SCHEDULER_NAME}, copy.deepcopy(PROFILES[1])],
        }
    )


# -- kube-scheduler's side ----------------------------------------------------------------


@dataclass
class KubeDecision:
    """Where kube-scheduler put a pod, or why it did not."""

    node: str | None
    message: str = ""  # PodScheduled=False message (the FailedScheduling text)


class KubeSide:
    """The real kube-apiserver + kube-scheduler, driven through the REST API."""

    def __init__(self, client: RestClient, scheduler_log: Path) -> None:
        self.client = client
        self.scheduler_log = scheduler_log
        self.namespaces: list[str] = []
        self.cluster_objects: list[str] = []

    # set-up and tear-down

    def reset(self) -> None:
        """Delete every pod of earlier scenarios and every node: the next one starts empty."""
        for namespace in self.namespaces:
            self.client.delete(
                f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0", check=False
            )
            self.client.delete(
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", check=False
            )
            claims = self.client.get(f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims")
            self.delete_claims(namespace, [c["metadata"]["name"] for c in claims.body["items"]])
            self.client.delete(
                f"{RESOURCE_API}/namespaces/{namespace}/resourceclaimtemplates", check=False
            )
        self.client.delete("/api/v1/nodes", check=False)
        for path in self.cluster_objects:
            self.client.delete(path, check=False)
        self.cluster_objects.clear()
        deadline = time.monotonic() + DECISION_TIMEOUT
        while self.client.get("/api/v1/nodes").body["items"] or any(
            self.client.get(f"/api/v1/namespaces/{ns}/pods").body["items"] for ns in self.namespaces
        ):
            if time.monotonic() > deadline:
                raise AssertionError("nodes or pods of an earlier scenario were not deleted")
            time.sleep(POLL)

    def load(self, scenario: Scenario, namespace: str) -> None:
        """Create the scenario's objects and wait until kube-scheduler has seen all of them."""
        self.reset()
        for name, labels in {namespace: scenario.labels, **scenario.namespaces}.items():
            self.client.post(
                "/api/v1/namespaces",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": {**labels, "fidelity.test/ns": name}},
                },
            )
            self.namespaces.append(name)
        storage = [_in_namespace(obj, namespace) for obj in scenario.storage]
        for obj in [
            *scenario.cluster_objects,
            *(o for o in storage if o["kind"] != "CSINode"),
            *scenario.dra,
        ]:
            if obj["kind"] in CLUSTER_PLURALS:
                self.create_cluster_object(obj)
        for node in scenario.nodes:
            body = {k: v for k, v in node.items() if k != "status"}
            self.client.post("/api/v1/nodes", body)
            self.client.patch_status(
                f"/api/v1/nodes/{node['metadata']['name']}", {"status": node["status"]}
            )
        for obj in storage:
            if obj["kind"] == "CSINode":
                self.create_cluster_object(obj)
            elif obj["kind"] in NAMESPACED_PLURALS:
                path = f"{_api_root(obj)}/namespaces/{namespace}/{NAMESPACED_PLURALS[obj['kind']]}"
                self.client.post(path, obj)
        if storage:
            self.settle_volumes()
        for obj in scenario.dra:
            if obj["kind"] in DRA_NAMESPACED_PLURALS:
                self.create_dra_object(namespace, obj)
        for existing in scenario.existing:
            self.create_pod(existing["metadata"].get("namespace") or namespace, existing)
        if scenario.dra:
            # Classes and slices have informers of their own, which the sync pod does
            # not cover (claims it does): they were written before the nodes, and get
            # the time the node writes and the sync take, and VOLUME_SETTLE more.
            time.sleep(VOLUME_SETTLE)
        self.sync(namespace, scenario.nodes[-1]["metadata"]["name"], claims=bool(scenario.dra))

    def create_cluster_object(self, obj: Obj) -> None:
        path = f"{_api_root(obj)}/{CLUSTER_PLURALS[obj['kind']]}"
        self.client.post(path, obj)
        self.cluster_objects.append(f"{path}/{obj['metadata']['name']}")

    def create_dra_object(self, namespace: str, obj: Obj) -> Obj:
        """A ResourceClaim or ResourceClaimTemplate in `namespace`; a claim's ``status``
        (an allocation, ``reservedFor``) is written through ``/status`` after it.

        An allocation gets an ``allocationTimestamp`` (now) if it has none, as every
        allocation kube-scheduler writes has: its PreBind sets a missing one when it
        adds a pod to ``reservedFor``, and the API server refuses that (the
        allocation is immutable), so a pod could never use the claim."""
        path = f"{RESOURCE_API}/namespaces/{namespace}/{DRA_NAMESPACED_PLURALS[obj['kind']]}"
        body = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
        body["metadata"] = {**body["metadata"], "namespace": namespace}
        created: Obj = self.client.post(path, body).body
        if obj.get("status"):
            status = copy.deepcopy(obj["status"])
            if status.get("allocation") is not None:
                status["allocation"].setdefault(
                    "allocationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                )
            created = self.client.patch_status(
                f"{path}/{obj['metadata']['name']}", {"status": status}
            ).body
        return created

    def delete_claims(self, namespace: str, names: Iterable[str]) -> None:
        """Delete ResourceClaims now, whatever they hold: their finalizers are dropped
        (the harness stands in for the ResourceClaim controller, which keeps the
        finalizer of a claim still reserved for a pod, a non-pod hold, or not yet
        processed). kube-scheduler sees them deleted, so their devices are free."""
        base = f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims"
        pending = set(names)
        for name in pending:
            self.client.delete(f"{base}/{name}", check=False)
        deadline = time.monotonic() + DECISION_TIMEOUT
        while pending:
            for name in sorted(pending):
                got = self.client.get(f"{base}/{name}", check=False)
                if got.status == 404:
                    pending.discard(name)
                elif got.body["metadata"].get("finalizers"):
                    self.client.request(
                        "PATCH",
                        f"{base}/{name}",
                        {"metadata": {"finalizers": None}},
                        content_type=MERGE_PATCH,
                        check=False,
                    )
            if not pending:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"claims {sorted(pending)} in {namespace} were not deleted")
            time.sleep(POLL)

    def settle_volumes(self, timeout: float = DECISION_TIMEOUT) -> None:
        """Wait until the PV controller is done with every PV and claim, then a little more.

        Done: every PV is Available or Bound (Bound if it has a ``claimRef`` whose
        claim exists), every claim with a ``volumeName`` is Bound. kube-scheduler's
        PV/PVC informers are not ordered with its node and pod informers (which
        ``sync`` covers), so after the API settles it gets VOLUME_SETTLE seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            pvs = self.client.get("/api/v1/persistentvolumes").body["items"]
            pvcs = self.client.get("/api/v1/persistentvolumeclaims").body["items"]
            claims = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in pvcs}
            pending = [
                f"pv {pv['metadata']['name']}: {(pv.get('status') or {}).get('phase')}"
                for pv in pvs
                if (pv.get("status") or {}).get("phase")
                != (
                    "Bound"
                    if (ref := pv["spec"].get("claimRef"))
                    and (ref.get("namespace"), ref.get("name")) in claims
                    else "Available"
                )
                and (pv.get("status") or {}).get("phase") != "Released"
            ] + [
                f"pvc {c['metadata']['namespace']}/{c['metadata']['name']}: "
                f"{(c.get('status') or {}).get('phase')}"
                for c in pvcs
                if c["spec"].get("volumeName") and (c.get("status") or {}).get("phase") != "Bound"
            ]
            if not pending:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"the PV controller did not settle: {pending}")
            time.sleep(POLL)
        time.sleep(VOLUME_SETTLE)

    def sync(self, namespace: str, last_node: str, *, claims: bool = False) -> None:
        """Wait until kube-scheduler's caches hold everything written so far (module doc).

        With `claims`, the sync pod also uses a ResourceClaim created just before it
        (one without requests: it allocates no device, on any node), so once it is
        bound kube-scheduler's claim cache holds every claim event before it too.
        """
        token = uuid.uuid4().hex[:10]
        self.client.request(
            "PATCH",
            f"/api/v1/nodes/{last_node}",
            {"metadata": {"labels": {SYNC_LABEL: token}}},
            content_type=MERGE_PATCH,
        )
        name = f"sync-{token}"
        sync_pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "schedulerName": "default-scheduler",
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                "tolerations": [{"operator": "Exists"}],
                "nodeSelector": {SYNC_LABEL: token},
                "affinity": _pinned_affinity(None, last_node),
            },
        }
        if claims:
            self.create_dra_object(
                namespace,
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": name},
                    "spec": {"devices": {}},
                },
            )
            sync_pod["spec"]["resourceClaims"] = [{"name": "sync", "resourceClaimName": name}]
        self.create_pod(namespace, sync_pod)
        decision = self.wait(namespace, [name])[name]
        assert decision.node == last_node, f"sync pod not bound to {last_node}: {decision}"
        self.delete_pod(namespace, name)
        if claims:
            self.delete_claims(namespace, [name])

    # pods

    def create_pod(self, namespace: str, pod: Obj) -> Obj:
        body = copy.deepcopy(pod)
        body["metadata"]["namespace"] = namespace
        created: Obj = self.client.post(f"/api/v1/namespaces/{namespace}/pods", body).body
        return created

    def delete_pod(self, namespace: str, name: str) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        self.client.delete(f"{path}?gracePeriodSeconds=0", check=False)
        deadline = time.monotonic() + DECISION_TIMEOUT
        while self.client.get(path, check=False).status != 404:
            if time.monotonic() > deadline:
                raise AssertionError(f"pod {namespace}/{name} was not deleted")
            time.sleep(POLL)

    def set_gates(self, namespace: str, name: str, gates: list[Obj]) -> None:
        self.client.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}",
            {"spec": {"schedulingGates": gates}},
            content_type=MERGE_PATCH,
        )

    def wait(
        self,
        namespace: str,
        names: Iterable[str],
        timeout: float = DECISION_TIMEOUT,
        poll: Callable[[], None] | None = None,
    ) -> dict[str, KubeDecision]:
        """Wait until each pod is bound or marked Unschedulable by kube-scheduler
        (calling `poll`, if given, on each round)."""
        wanted = set(names)
        decided: dict[str, KubeDecision] = {}
        deadline = time.monotonic() + timeout
        while True:
            if poll is not None:
                poll()
            for item in self.client.get(f"/api/v1/namespaces/{namespace}/pods").body["items"]:
                name = item["metadata"]["name"]
                if name not in wanted or name in decided:
                    continue
                if item["spec"].get("nodeName"):
                    decided[name] = KubeDecision(item["spec"]["nodeName"])
                    continue
                condition = _pod_scheduled(item)
                if condition and condition.get("reason") == "Unschedulable":
                    decided[name] = KubeDecision(None, str(condition.get("message") or ""))
            if set(decided) >= wanted:
                return decided
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"kube-scheduler did not decide {sorted(wanted - set(decided))} "
                    f"within {timeout} s"
                )
            time.sleep(POLL)

    def failed_scheduling_note(self, namespace: str, name: str) -> str:
        """The newest FailedScheduling event's note for the pod (events.k8s.io/v1)."""
        deadline = time.monotonic() + 10
        while True:
            items = self.client.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events").body[
                "items"
            ]
            notes = [
                (e["metadata"].get("creationTimestamp") or "", str(e.get("note") or ""))
                for e in items
                if e.get("reason") == "FailedScheduling"
                and (e.get("regarding") or {}).get("name") == name
            ]
            if notes:
                return max(notes)[1]
            if time.monotonic() > deadline:
                raise AssertionError(f"no FailedScheduling event for {namespace}/{name}")
            time.sleep(POLL)

    def objects(self, *, volumes: bool = False, dra: bool = False) -> list[Obj]:
        """Nodes, pods and namespaces (with `volumes` the storage objects, with `dra`
        the resource.k8s.io ones) as the API server holds them, as a cluster file
        lists them."""
        kinds = [
            ("v1", "Node", "nodes"),
            ("v1", "Pod", "pods"),
            ("v1", "Namespace", "namespaces"),
            *(STORAGE_KINDS if volumes else ()),
            *(DRA_KINDS if dra else ()),
        ]
        out: list[Obj] = []
        for api_version, kind, plural in kinds:
            obj = {"apiVersion": api_version, "kind": kind}
            for item in self.client.get(f"{_api_root(obj)}/{plural}").body["items"]:
                out.append({"apiVersion": api_version, "kind": kind, **item})
        return out

    def scores(self, pod_key: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
        """kube-scheduler's weighted score per node and plugin, and totals, of the last cycle."""
        text = self.scheduler_log.read_text(errors="replace")
        per_node: dict[str, dict[str, int]] = {}
        totals: dict[str, int] = {}
        for match in _PLUGIN_SCORE.finditer(text):
            if match["pod"] == pod_key:
                per_node.setdefault(match["node"], {})[match["plugin"]] = int(match["score"])
        for match in _FINAL_SCORE.finditer(text):
            if match["pod"] == pod_key:
                totals[match["node"]] = int(match["score"])
        return per_node, totals

    # probes

    def probe_pin(
        self, namespace: str, base: Obj, nodes: list[str], *, parallel: bool
    ) -> dict[str, KubeDecision]:
        probes = {
            node: pin_probe(base, node, f"{base['metadata']['name']}-pin-{i}")
            for i, node in enumerate(nodes)
        }
        out: dict[str, KubeDecision] = {}
        if parallel:
            for probe in probes.values():
                self.create_pod(namespace, probe)
            names = {node: probe["metadata"]["name"] for node, probe in probes.items()}
            decided = self.wait(namespace, names.values())
            for node, name in names.items():
                out[node] = decided[name]
                self.delete_pod(namespace, name)
            return out
        for node, probe in probes.items():
            name = probe["metadata"]["name"]
            self.create_pod(namespace, probe)
            out[node] = self.wait(namespace, [name])[name]
            self.delete_pod(namespace, name)
        return out

    def probe_nominate(
        self, namespace: str, base: Obj, nodes: list[str]
    ) -> dict[str, KubeDecision]:
        out: dict[str, KubeDecision] = {}
        for i, node in enumerate(nodes):
            probe = plain_copy(base, f"{base['metadata']['name']}-nom-{i}")
            probe["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
            name = probe["metadata"]["name"]
            self.create_pod(namespace, probe)
            self.client.patch_status(
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                {"status": {"nominatedNodeName": node}},
            )
            self.set_gates(namespace, name, [])
            out[node] = self.wait(namespace, [name])[name]
            self.delete_pod(namespace, name)
        return out


def _api_root(obj: Obj) -> str:
    version = obj["apiVersion"]
    return "/api/v1" if version == "v1" else f"/apis/{version}"


def _in_namespace(obj: Obj, namespace: str) -> Obj:
    """A scenario's storage object for the API: a PV's ``claimRef`` gets the namespace."""
    out = copy.deepcopy(obj)
    ref = (out.get("spec") or {}).get("claimRef")
    if out["kind"] == "PersistentVolume" and ref is not None:
        ref.setdefault("namespace", namespace)
    return out


def _pod_scheduled(pod: Obj) -> Obj | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            return dict(condition)
    return None


# -- probes (shared by both sides) --------------------------------------------------------


def plain_copy(pod: Obj, name: str) -> Obj:
    """A creatable copy of a pod read from the API server, under a new name, ungated."""
    meta = pod["metadata"]
    out: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            **({"labels": dict(meta["labels"])} if meta.get("labels") else {}),
        },
        "spec": copy.deepcopy(pod["spec"]),
    }
    out["spec"].pop("schedulingGates", None)
    out["spec"].pop("nodeName", None)
    return out


def _pinned_affinity(affinity: Obj | None, node: str) -> Obj:
    """`affinity` with ``matchFields metadata.name In [node]`` ANDed into every term."""
    out = copy.deepcopy(affinity) if affinity else {}
    node_affinity = out.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]}
    )
    pin = {"key": "metadata.name", "operator": "In", "values": [node]}
    for node_term in required["nodeSelectorTerms"]:
        node_term["matchFields"] = [*(node_term.get("matchFields") or []), pin]
    return out


def pin_probe(base: Obj, node: str, name: str) -> Obj:
    probe = plain_copy(base, name)
    probe["spec"]["affinity"] = _pinned_affinity(probe["spec"].get("affinity"), node)
    return probe


def nominate_probe(base: Obj, node: str, name: str) -> Obj:
    probe = plain_copy(base, name)
    probe["status"] = {"nominatedNodeName": node}
    return probe


def probe_kind(pod: Obj) -> tuple[str, bool]:
    """``(kind, parallel)`` for a pod: see the module docstring."""
    spec = pod["spec"]
    if spec.get("topologySpreadConstraints"):
        return "nominate", False
    affinity = spec.get("affinity") or {}
    interacts = bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))
    return "pin", not interacts


# -- our side ------------------------------------------------------------------------------


class OurSide:
    def __init__(self) -> None:
        self.config = default_config()
        self.catalog = PluginCatalog.discover()

    def explain(
        self, objects: list[Obj], pod: Obj, profile: str = DEFAULT_SCHEDULER_NAME
    ) -> Explanation:
        return explain(objects, pod, self.config, self.catalog, profile_name=profile)

    def probe(self, objects: list[Obj], base: Obj, nodes: list[str], kind: str) -> set[str]:
        feasible: set[str] = set()
        for i, node in enumerate(nodes):
            name = f"{base['metadata']['name']}-ours-{i}"
            probe = (
                pin_probe(base, node, name) if kind == "pin" else nominate_probe(base, node, name)
            )
            result = self.explain(objects, probe)
            if result.node == node:
                feasible.add(node)
        return feasible


# -- comparison ----------------------------------------------------------------------------


#: The first sentence of a FailedScheduling message: what each node failed on. What
#: follows it comes from PostFilter plugins (kube 1.36's DynamicResources adds "no
#: new claims to deallocate", DefaultPreemption "preemption: ..."), not compared.
_AVAILABILITY = re.compile(r"^0/\d+ nodes are available:.*?\.(?= |$)")


def availability(message: str) -> str:
    """The "0/N nodes are available: ..." sentence, without PostFilter's additions."""
    match = _AVAILABILITY.match(message.strip())
    return match.group(0) if match else message.strip()


def score_table(
    explanation: Explanation,
    kube_scores: Mapping[str, Mapping[str, int]],
    kube_totals: Mapping[str, int],
    kube_node: str | None,
) -> str:
    """Ours and kube-scheduler's weighted scores side by side, one row per node and plugin."""
    lines = [f"{'node':<28} {'plugin':<34} {'ours':>6} {'kube':>6}"]
    nodes = sorted(set(kube_scores) | {n for n, r in explanation.nodes.items() if r.scored})
    for node in nodes:
        report = explanation.nodes.get(node)
        ours = {p: s.weighted for p, s in (report.score.items() if report else ())}
        theirs = kube_scores.get(node, {})
        marks = []
        if node in explanation.tied:
            marks.append("our-tied")
        if node == kube_node:
            marks.append("kube-chosen")
        for plugin in sorted(set(ours) | set(theirs)):
            mine = str(ours[plugin]) if plugin in ours else "-"
            kube = str(theirs[plugin]) if plugin in theirs else "-"
            flag = (
                ""
                if mine == kube or (mine in ("-", "0") and kube in ("-", "0"))
                else "  <-- differs"
            )
            lines.append(f"{node:<28} {plugin:<34} {mine:>6} {kube:>6}{flag}")
        total = report.total if report and report.total is not None else "-"
        lines.append(
            f"{node:<28} {'TOTAL':<34} {total!s:>6} {kube_totals.get(node, '-')!s:>6} "
            f"{' '.join(marks)}"
        )
    return "\n".join(lines)


@dataclass
class StepReport:
    pod: str
    probe_kind: str
    kube_feasible: set[str]
    our_feasible: set[str]
    our_probe_feasible: set[str]
    kube_node: str | None
    our_tied: list[str]
    problems: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


def compare_scores(
    explanation: Explanation,
    kube_scores: Mapping[str, Mapping[str, int]],
    kube_totals: Mapping[str, int],
) -> list[str]:
    """Per-plugin weighted scores that differ (a plugin absent on one side counts as 0)."""
    problems: list[str] = []
    for node, theirs in sorted(kube_scores.items()):
        report = explanation.nodes.get(node)
        if report is None or not report.scored:
            problems.append(f"kube-scheduler scored {node}, we did not")
            continue
        ours = {p: s.weighted for p, s in report.score.items()}
        for plugin in sorted(set(ours) | set(theirs)):
            if ours.get(plugin, 0) != theirs.get(plugin, 0):
                problems.append(
                    f"{node} {plugin}: ours {ours.get(plugin, '-')}, kube {theirs.get(plugin, '-')}"
                )
        if node in kube_totals and report.total != kube_totals[node]:
            problems.append(f"{node} total: ours {report.total}, kube {kube_totals[node]}")
    return problems


def run_step(
    kube: KubeSide, ours: OurSide, scenario: Scenario, namespace: str, index: int, step: Step
) -> StepReport:
    """Compare one pod's placement; the pod stays where kube-scheduler put it."""
    node_names = [n["metadata"]["name"] for n in scenario.nodes]
    user_gates = list(step.pod["spec"].get("schedulingGates") or [])
    held = copy.deepcopy(step.pod)
    held["spec"]["schedulingGates"] = [{"name": HOLD_GATE}, *user_gates]
    # Create it held, to read back what admission made of it (defaults, RuntimeClass
    # overhead, priority): that is the pod kube-scheduler will see.
    server_pod = kube.create_pod(namespace, held)
    name = server_pod["metadata"]["name"]
    base = plain_copy(server_pod, name)
    objects = kube.objects()
    kind, parallel = probe_kind(base)

    explanation = ours.explain(objects, base)
    # kube's probes start from the manifest: admission makes of them what it made of
    # the pod, and a read-back pod cannot be re-created as is (the API server has
    # merged matchLabelKeys into the label selectors, and then rejects the keys).
    manifest = plain_copy({**step.pod, "metadata": {**step.pod["metadata"]}}, name)
    if kind == "pin":
        kube_probes = kube.probe_pin(namespace, manifest, node_names, parallel=parallel)
    else:
        kube_probes = kube.probe_nominate(namespace, manifest, node_names)
    report = StepReport(
        pod=name,
        probe_kind=f"{kind}{' (parallel)' if parallel else ''}",
        kube_feasible={n for n, d in kube_probes.items() if d.node == n},
        our_feasible=set(explanation.feasible),
        our_probe_feasible=ours.probe(objects, base, node_names, kind),
        kube_node=None,
        our_tied=list(explanation.tied),
    )
    if report.our_feasible != report.our_probe_feasible:
        report.problems.append(
            f"our probes disagree with our own cycle: cycle {sorted(report.our_feasible)}, "
            f"probes {sorted(report.our_probe_feasible)}"
        )
    _compare_feasible(report, explanation, "", lambda node: f"; kube probe: {kube_probes[node]}")

    if user_gates:
        # Let go of our own gate only: the user's gates must keep kube-scheduler away.
        kube.set_gates(namespace, name, user_gates)
        time.sleep(1.0)
        pending = kube.client.get(f"/api/v1/namespaces/{namespace}/pods/{name}").body
        condition = _pod_scheduled(pending) or {}
        if pending["spec"].get("nodeName") or condition.get("reason") != "SchedulingGated":
            report.problems.append(f"kube-scheduler did not hold the gated pod: {condition}")
        gated = ours.explain(
            objects, {**base, "spec": {**base["spec"], "schedulingGates": user_gates}}
        )
        if not any("PreEnqueue would keep the pod out" in note for note in gated.notes):
            report.problems.append(f"our PreEnqueue let the gated pod in: {gated.notes}")

    kube.set_gates(namespace, name, [])
    decision = kube.wait(namespace, [name])[name]
    report.kube_node = decision.node
    if (decision.node is None) != (step.expect == "unschedulable"):
        report.problems.append(
            f"scenario intent: expected {step.expect}, kube-scheduler said {decision}"
        )
    pod_key = f"{namespace}/{name}"
    if decision.node is None:
        note = availability(kube.failed_scheduling_note(namespace, name))
        mine = availability(explanation.message)
        if explanation.node is not None:
            report.problems.append(f"kube-scheduler found no node, we chose {explanation.node}")
        elif note != mine:
            report.problems.append(f"FailedScheduling differs:\n  ours: {mine}\n  kube: {note}")
        return report
    if decision.node not in explanation.tied:
        report.problems.append(
            f"kube-scheduler chose {decision.node}, not among our tied best {explanation.tied}"
        )
    if len(report.kube_feasible) > 1:
        kube_scores, kube_totals = kube.scores(pod_key)
        if not kube_scores:
            report.problems.append("no score lines for the pod in kube-scheduler's log (-v=10)")
        else:
            problems = compare_scores(explanation, kube_scores, kube_totals)
            report.problems.extend(f"score: {p}" for p in problems)
            if problems or decision.node not in explanation.tied:
                report.details.append(
                    score_table(explanation, kube_scores, kube_totals, decision.node)
                )
    return report


# -- sampling scenarios --------------------------------------------------------------------


@dataclass
class SamplingReport:
    """One pod of a sampling scenario: which nodes each side evaluated and scored."""

    pod: str
    profile: str
    percentage: int  # the profile's percentageOfNodesToScore (0: unset)
    kube_node: str | None
    kube_scored: set[str]  # the nodes in kube-scheduler's score lines: its sample
    kube_evaluated: int | None  # evaluatedNodes of its "Successfully bound" line
    our_scored: set[str]  # the nodes our cycle for this profile scored
    our_evaluated: int
    our_tied: list[str]  # our tied best, this profile
    best: list[str]  # our tied best when every node is scored
    problems: list[str] = field(default_factory=list)

    @property
    def kube_picked_our_best(self) -> bool:
        return self.kube_node in self.our_tied

    @property
    def kube_sample_had_best(self) -> bool:
        return bool(self.kube_scored & set(self.best))


def bound_counts(log_text: str, pod_key: str) -> tuple[int, int] | None:
    """``(evaluatedNodes, feasibleNodes)`` of kube-scheduler's bind line for the pod."""
    found = [m for m in _BOUND.finditer(log_text) if m["pod"] == pod_key]
    return (int(found[-1]["evaluated"]), int(found[-1]["feasible"])) if found else None


def run_sampling_step(
    kube: KubeSide, ours: OurSide, scenario: Scenario, namespace: str, step: Step
) -> SamplingReport:
    """Compare one pod of a sampling scenario: no probes, kube's own cycle only.

    With hundreds of nodes, per-node probes (one kube-scheduler cycle and one
    ``explain`` per node and pod) would take minutes, and they would tell
    nothing here: every node of a sampling scenario is feasible for every pod.
    What is compared is kube-scheduler's cycle for the pod itself, read from its
    log: the nodes it scored (its sample, ``-v=10`` score lines), how many it
    evaluated (``evaluatedNodes`` of its bind line), the node it chose.

    Checked (problems): kube scored ``num_feasible_nodes_to_find(N, p)`` nodes
    (kube's formula, adaptive for p = 0); its per-plugin scores on those nodes
    equal ours with every node scored (this scenario's scores do not depend on
    which nodes are scored together: the only normalizing plugin that scores
    differently is NodeAffinity, where every node but the preferred one has 0);
    its node is one of the best of its own sample by those scores; with p set,
    our cycle for the profile evaluated and scored as many nodes as kube (both
    stop filtering once that many nodes are feasible). Recorded, not
    checked: whether kube's node is among our tied best (with p unset ours are
    the best of every node, so a sample without the preferred node misses it).
    """
    profile = str(step.pod["spec"].get("schedulerName") or KUBE_DEFAULT_SCHEDULER)
    percentage = next(
        int(p.get("percentageOfNodesToScore") or 0)
        for p in PROFILES
        if p["schedulerName"] == profile
    )
    held = copy.deepcopy(step.pod)
    held["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    server_pod = kube.create_pod(namespace, held)
    name = server_pod["metadata"]["name"]
    base = plain_copy(server_pod, name)
    objects = kube.objects()
    mine = ours.explain(
        objects, base, DEFAULT_SCHEDULER_NAME if profile == KUBE_DEFAULT_SCHEDULER else profile
    )
    everything = mine if percentage == 0 else ours.explain(objects, base)

    kube.set_gates(namespace, name, [])
    decision = kube.wait(namespace, [name])[name]
    pod_key = f"{namespace}/{name}"
    log_text = kube.scheduler_log.read_text(errors="replace")
    kube_scores, kube_totals = last_cycle_scores(log_text, pod_key)
    counts = bound_counts(log_text, pod_key)
    report = SamplingReport(
        pod=name,
        profile=profile,
        percentage=percentage,
        kube_node=decision.node,
        kube_scored=set(kube_scores),
        kube_evaluated=counts[0] if counts else None,
        our_scored={n for n, r in mine.nodes.items() if r.scored},
        our_evaluated=mine.evaluated_nodes,
        our_tied=list(mine.tied),
        best=list(everything.tied),
    )
    if decision.node is None:
        report.problems.append(f"kube-scheduler did not bind the pod: {decision.message}")
        return report
    if everything.feasible_nodes != len(scenario.nodes):
        # What the skipped probes would have checked; here every node must fit.
        report.problems.append(
            f"only {everything.feasible_nodes} of our {len(scenario.nodes)} nodes are feasible"
        )
    want = num_feasible_nodes_to_find(len(scenario.nodes), percentage)
    if len(report.kube_scored) != want:
        report.problems.append(
            f"kube-scheduler scored {len(report.kube_scored)} nodes, its formula says {want}"
        )
    if counts is not None and counts[1] != len(report.kube_scored):
        report.problems.append(
            f"kube-scheduler's feasibleNodes={counts[1]}, but it scored "
            f"{len(report.kube_scored)} nodes"
        )
    problems = compare_scores(everything, kube_scores, kube_totals)
    report.problems.extend(f"score: {p}" for p in problems)
    totals = {n: everything.nodes[n].total for n in report.kube_scored if n in everything.nodes}
    top = max((t for t in totals.values() if t is not None), default=None)
    if totals.get(decision.node) != top:
        report.problems.append(
            f"kube-scheduler chose {decision.node} ({totals.get(decision.node)}), not a best "
            f"node of its own sample ({top})"
        )
    if percentage and len(report.our_scored) != len(report.kube_scored):
        report.problems.append(
            f"percentageOfNodesToScore {percentage}: we scored {len(report.our_scored)} "
            f"nodes, kube-scheduler {len(report.kube_scored)}"
        )
    if percentage and counts is not None and report.our_evaluated != counts[0]:
        report.problems.append(
            f"percentageOfNodesToScore {percentage}: we evaluated {report.our_evaluated} "
            f"nodes, kube-scheduler {counts[0]} (both stop once enough nodes are feasible)"
        )
    return report


# -- volume scenarios ----------------------------------------------------------------------

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_LABEL = "fidelity.test/provisioned"
_ATTEMPT = re.compile(r'"Attempting to schedule pod" pod="(?P<pod>[^"]+)"')

#: What VolumeBinding writes for a pod on its node: per PV, the claim its ``claimRef``
#: names (namespace, name, uid) and its ``bound-by-controller`` annotation; per claim
#: (namespace/name), the ``selected-node`` annotation.
PvWrites = dict[str, tuple[str, str, str, str | None]]
ClaimWrites = dict[str, str | None]


def claim_names(pod: Obj) -> list[str]:
    """The pod's claims: ``persistentVolumeClaim`` volumes and ``<pod>-<volume>`` ephemerals."""
    out = []
    for vol in pod["spec"].get("volumes") or []:
        if vol.get("persistentVolumeClaim"):
            out.append(vol["persistentVolumeClaim"]["claimName"])
        elif vol.get("ephemeral"):
            out.append(f"{pod['metadata']['name']}-{vol['name']}")
    return out


def last_cycle_scores(
    log_text: str, pod_key: str
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """kube-scheduler's weighted scores of the pod's last scheduling attempt only.

    A volume pod may take more than one attempt (an attempt that failed leaves
    its lines behind), so only the lines after its last "Attempting to schedule
    pod" count. With at most 100 nodes kube-scheduler scores every feasible node,
    so the scored nodes are its feasible set (none when only one node is feasible).
    """
    starts = [m.end() for m in _ATTEMPT.finditer(log_text) if m["pod"] == pod_key]
    text = log_text[starts[-1] :] if starts else log_text
    per_node: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for match in _PLUGIN_SCORE.finditer(text):
        if match["pod"] == pod_key:
            per_node.setdefault(match["node"], {})[match["plugin"]] = int(match["score"])
    for match in _FINAL_SCORE.finditer(text):
        if match["pod"] == pod_key:
            totals[match["node"]] = int(match["score"])
    return per_node, totals


class TestProvisioner:
    """Plays an external provisioner for the scenario's ``provisioners``: a claim of
    the pod being placed that kube-scheduler annotated with ``selected-node`` gets a
    CSI PV pre-bound to it (``claimRef`` with the claim's uid) with node affinity
    for that node, as external-provisioner creates it. The PV controller then binds
    the two and kube-scheduler's PreBind, which waits for that, completes."""

    __test__ = False  # not a pytest class

    def __init__(self, kube: KubeSide, provisioners: Iterable[str]) -> None:
        self.kube = kube
        self.provisioners = set(provisioners)
        self.done: set[str] = set()

    def poll(self, namespace: str, claims: Iterable[str]) -> None:
        if not self.provisioners:
            return
        classes = {
            sc["metadata"]["name"]: sc["provisioner"]
            for sc in self.kube.client.get("/apis/storage.k8s.io/v1/storageclasses").body["items"]
        }
        for claim in claims:
            pvc = self.kube.client.get(
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}", check=False
            )
            if pvc.status != 200:
                continue
            body = pvc.body
            uid = body["metadata"]["uid"]
            selected = (body["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
            driver = classes.get(body["spec"].get("storageClassName") or "")
            if uid in self.done or not selected or body["spec"].get("volumeName"):
                continue
            if driver not in self.provisioners:
                continue
            name = f"pvc-{uid}"
            self.kube.create_cluster_object(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": name, "labels": {PROVISIONED_LABEL: "true"}},
                    "spec": {
                        "capacity": dict(body["spec"]["resources"]["requests"]),
                        "accessModes": list(body["spec"]["accessModes"]),
                        "persistentVolumeReclaimPolicy": "Retain",
                        "storageClassName": body["spec"]["storageClassName"],
                        "volumeMode": "Filesystem",
                        "csi": {"driver": driver, "volumeHandle": name},
                        "claimRef": {
                            "kind": "PersistentVolumeClaim",
                            "apiVersion": "v1",
                            "namespace": namespace,
                            "name": claim,
                            "uid": uid,
                        },
                        "nodeAffinity": {
                            "required": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchFields": [
                                            {
                                                "key": "metadata.name",
                                                "operator": "In",
                                                "values": [selected],
                                            }
                                        ]
                                    }
                                ]
                            }
                        },
                    },
                }
            )
            self.done.add(uid)


def kube_writes(before: list[Obj], after: list[Obj], pod: Obj) -> tuple[PvWrites, ClaimWrites]:
    """What kube-scheduler's VolumeBinding wrote for the pod, from the API before and after.

    PVs (not the test provisioner's) whose ``claimRef`` now names one of the pod's
    claims and did not before; the pod's claims that were unbound before and now
    carry ``selected-node``. The PV controller writes neither: it only completes a
    binding whose ``claimRef`` is set (without touching ``bound-by-controller`` on
    the PV) and sets the claim's own annotations.
    """
    namespace = pod["metadata"]["namespace"]
    wanted = set(claim_names(pod))

    def refs(objects: list[Obj]) -> dict[str, Obj]:
        return {
            o["metadata"]["name"]: o
            for o in objects
            if o["kind"] == "PersistentVolume"
            and PROVISIONED_LABEL not in (o["metadata"].get("labels") or {})
        }

    old_pvs = refs(before)
    pvs: PvWrites = {}
    for pv_name, pv in refs(after).items():
        ref = pv["spec"].get("claimRef") or {}
        if ref.get("namespace") != namespace or ref.get("name") not in wanted:
            continue
        old_ref = (old_pvs.get(pv_name) or {}).get("spec", {}).get("claimRef") or {}
        if old_ref.get("uid") == ref.get("uid") and old_ref.get("name") == ref.get("name"):
            continue
        annotation = (pv["metadata"].get("annotations") or {}).get(ANN_BOUND_BY_CONTROLLER)
        pvs[pv_name] = (ref["namespace"], ref["name"], ref.get("uid") or "", annotation)
    unbound_before = {
        o["metadata"]["name"]
        for o in before
        if o["kind"] == "PersistentVolumeClaim"
        and o["metadata"]["namespace"] == namespace
        and o["metadata"]["name"] in wanted
        and not o["spec"].get("volumeName")
    }
    claims: ClaimWrites = {}
    for o in after:
        if o["kind"] != "PersistentVolumeClaim" or o["metadata"]["namespace"] != namespace:
            continue
        if o["metadata"]["name"] not in unbound_before:
            continue
        bound_static = o["spec"].get("volumeName") in {p for p in pvs}
        selected = (o["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected is not None and not bound_static:
            claims[f"{namespace}/{o['metadata']['name']}"] = selected
    return pvs, claims


def our_writes(
    ours: OurSide, objects: list[Obj], pod: Obj, node: str
) -> tuple[PvWrites, ClaimWrites]:
    """What our VolumeBinding's Reserve assumes for the pod on `node`: one cycle of
    our default profile (the pod pinned to `node`, so its Reserve is for that node)
    run to Reserve, then the PVs and claims its assume caches changed."""
    framework, state, info = _pinned_cycle(ours, objects, pod, node)
    status = framework.run_reserve(state, info, node)
    if not status.is_success():
        raise AssertionError(f"our Reserve on {node} failed: {status}")
    plugin = framework.plugins[VOLUME_BINDING]
    assert isinstance(plugin, VolumeBinding)
    pvs: PvWrites = {}
    claims: ClaimWrites = {}
    # Reserve assumes a new object for each PV and claim it would write (and
    # only those): whatever the caches now return instead of the informer's copy.
    for o in objects:
        meta = o["metadata"]
        if o["kind"] == "PersistentVolume":
            pv = plugin.pvs.get("", meta["name"])
            if pv is not None and pv is not plugin.pvs.api_object("", meta["name"]):
                ref = pv["spec"]["claimRef"]
                bound_by = (pv["metadata"].get("annotations") or {}).get(ANN_BOUND_BY_CONTROLLER)
                pvs[meta["name"]] = (ref["namespace"], ref["name"], ref.get("uid") or "", bound_by)
        elif o["kind"] == "PersistentVolumeClaim":
            pvc = plugin.pvcs.get(meta["namespace"], meta["name"])
            if pvc is not None and pvc is not plugin.pvcs.api_object(
                meta["namespace"], meta["name"]
            ):
                annotations = pvc["metadata"].get("annotations") or {}
                claims[f"{meta['namespace']}/{meta['name']}"] = annotations.get(ANN_SELECTED_NODE)
    framework.run_unreserve(state, info, node)
    return pvs, claims


def volume_base(server_pod: Obj) -> Obj:
    """The pod as read back, creatable, keeping its uid (ephemeral claims are owned by it)."""
    base = plain_copy(server_pod, server_pod["metadata"]["name"])
    base["metadata"]["uid"] = server_pod["metadata"]["uid"]
    return base


def run_volume_step(
    kube: KubeSide,
    ours: OurSide,
    scenario: Scenario,
    namespace: str,
    step: Step,
) -> StepReport:
    """Compare one volume pod's placement without probes (see ``test_fidelity.py``).

    A pinned probe would consume the PV it binds (and a provisioned claim), so
    kube-scheduler's feasible set is read from its own cycle for the pod: the
    nodes it scored in its last attempt (all feasible nodes, with at most 100
    nodes), or just the chosen node when it scored none (one feasible node); for
    a pod that fits nowhere, the per-reason node counts of its FailedScheduling
    message. Then VolumeBinding's writes are compared.
    """
    held = copy.deepcopy(step.pod)
    held["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    server_pod = kube.create_pod(namespace, held)
    name = server_pod["metadata"]["name"]
    claims = claim_names(server_pod)
    ephemeral = {
        f"{name}-{v['name']}" for v in server_pod["spec"].get("volumes") or [] if v.get("ephemeral")
    }
    deadline = time.monotonic() + DECISION_TIMEOUT
    while any(
        kube.client.get(
            f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{c}", check=False
        ).status
        != 200
        for c in ephemeral
    ):
        if time.monotonic() > deadline:
            raise AssertionError(f"the ephemeral-volume controller did not create {ephemeral}")
        time.sleep(POLL)
    kube.settle_volumes()
    base = volume_base(server_pod)
    before = kube.objects(volumes=True)
    explanation = ours.explain(before, base)
    report = StepReport(
        pod=name,
        probe_kind="kube's own cycle",
        kube_feasible=set(),
        our_feasible=set(explanation.feasible),
        our_probe_feasible=set(),
        kube_node=None,
        our_tied=list(explanation.tied),
    )

    provisioner = TestProvisioner(kube, scenario.provisioners)
    kube.set_gates(namespace, name, [])
    decision = kube.wait(namespace, [name], poll=lambda: provisioner.poll(namespace, claims))[name]
    report.kube_node = decision.node
    if (decision.node is None) != (step.expect == "unschedulable"):
        report.problems.append(
            f"scenario intent: expected {step.expect}, kube-scheduler said {decision}"
        )
    if decision.node is None:
        note = availability(kube.failed_scheduling_note(namespace, name))
        mine = availability(explanation.message)
        if explanation.node is not None:
            report.problems.append(f"kube-scheduler found no node, we chose {explanation.node}")
        elif note != mine:
            report.problems.append(f"FailedScheduling differs:\n  ours: {mine}\n  kube: {note}")
        report.details.append(f"  kube: {note}")
        return report

    kube_scores, kube_totals = last_cycle_scores(
        kube.scheduler_log.read_text(errors="replace"), f"{namespace}/{name}"
    )
    report.kube_feasible = set(kube_scores) or {decision.node}
    _compare_feasible(report, explanation, " (the nodes kube-scheduler scored)", lambda _: "")
    if decision.node not in explanation.tied:
        report.problems.append(
            f"kube-scheduler chose {decision.node}, not among our tied best {explanation.tied}"
        )
    if kube_scores:
        problems = compare_scores(explanation, kube_scores, kube_totals)
        report.problems.extend(f"score: {p}" for p in problems)
        if problems or decision.node not in explanation.tied:
            report.details.append(score_table(explanation, kube_scores, kube_totals, decision.node))

    kube.settle_volumes()
    theirs = kube_writes(before, kube.objects(volumes=True), base)
    mine_writes = our_writes(ours, before, base, decision.node)
    if theirs != mine_writes:
        report.problems.append(
            f"VolumeBinding writes on {decision.node} differ:\n"
            f"  ours (PVs, claims): {mine_writes}\n  kube (PVs, claims): {theirs}"
        )
    report.details.append(f"  writes on {decision.node}: {theirs}")
    return report


def _compare_feasible(
    report: StepReport, explanation: Explanation, kube_note: str, kube_detail: Callable[[str], str]
) -> None:
    """Record a difference between our feasible set and kube's, node by node."""
    if report.our_feasible == report.kube_feasible:
        return
    report.problems.append(
        f"feasible sets differ: ours {sorted(report.our_feasible)}, "
        f"kube {sorted(report.kube_feasible)}{kube_note}"
    )
    for node in sorted(report.our_feasible ^ report.kube_feasible):
        verdict = explanation.nodes[node]
        report.details.append(
            f"  {node}: ours rejected_by={verdict.rejected_by} "
            f"{ {p: v.reasons for p, v in verdict.filter.items() if v.reasons} }"
            f"{kube_detail(node)}"
        )


# -- DRA scenarios -------------------------------------------------------------------------

#: Per claim name: ``status.allocation`` without ``allocationTimestamp`` (None: unallocated).
Allocations = dict[str, Obj | None]
#: The special claim of a pod's DRA-backed extended resources (its name is generated).
EXTENDED_CLAIM = "<extended resources>"
EXTENDED_MAPPINGS = "<extended resources: pod status requestMappings>"
SHARE_ID = "<generated share ID>"


def pod_claims(pod: Obj) -> dict[str, str | None]:
    """The pod's ResourceClaims per ``spec.resourceClaims`` entry: the named claim, or
    the one the ResourceClaim controller recorded for a template (None: not yet)."""
    recorded = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    out: dict[str, str | None] = {}
    for entry in pod["spec"].get("resourceClaims") or []:
        if entry.get("resourceClaimName"):
            out[entry["name"]] = entry["resourceClaimName"]
        else:
            out[entry["name"]] = recorded.get(entry["name"])
    return out


def dra_base(server_pod: Obj) -> Obj:
    """The pod as read back, creatable, keeping its uid and the claims the ResourceClaim
    controller recorded for it (a generated claim must be owned by the pod)."""
    base = plain_copy(server_pod, server_pod["metadata"]["name"])
    base["metadata"]["uid"] = server_pod["metadata"]["uid"]
    statuses = (server_pod.get("status") or {}).get("resourceClaimStatuses")
    if statuses:
        base["status"] = {"resourceClaimStatuses": copy.deepcopy(statuses)}
    return base


def _allocation(claim: Obj | None) -> Obj | None:
    found = ((claim or {}).get("status") or {}).get("allocation")
    return None if found is None else _comparable(found)


def _comparable(allocation: Mapping[str, Any]) -> Obj:
    """An allocation without ``allocationTimestamp``, a result's ``shareID`` (a random
    UID, for a device allocated more than once) as :data:`SHARE_ID`."""
    out = {k: copy.deepcopy(v) for k, v in allocation.items() if k != "allocationTimestamp"}
    for result in (out.get("devices") or {}).get("results") or []:
        if "shareID" in result:
            result["shareID"] = SHARE_ID
    return out


def wait_for_claims(kube: KubeSide, namespace: str, name: str) -> Obj:
    """The pod once the ResourceClaim controller has created the claims of its templates
    (recorded in its status) and they exist; the pod as read then."""
    deadline = time.monotonic() + DECISION_TIMEOUT
    while True:
        pod = kube.client.get(f"/api/v1/namespaces/{namespace}/pods/{name}").body
        claims = pod_claims(pod)
        if all(
            c is not None
            and kube.client.get(
                f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims/{c}", check=False
            ).status
            == 200
            for c in claims.values()
        ):
            return dict(pod)
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the ResourceClaim controller made no claims for {name}: {claims}"
            )
        time.sleep(POLL)


def probe_dra(
    kube: KubeSide, namespace: str, manifest: Obj, nodes: list[str], *, parallel: bool
) -> dict[str, KubeDecision]:
    """kube-scheduler's pinned probes of a pod with ResourceClaims (see ``run_dra_step``):
    each probe gets its own copy of every unallocated claim the pod names; allocated
    ones are shared by the probes, held by :data:`PROBE_HOLD` meanwhile."""
    claims_path = f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims"
    claims = {c["metadata"]["name"]: c for c in kube.client.get(claims_path).body["items"]}
    prefix = f"{manifest['metadata']['name']}-pin-"
    hold = {**PROBE_HOLD, "uid": str(uuid.uuid4())}
    held: set[str] = set()
    probes: dict[str, Obj] = {}
    for i, node in enumerate(nodes):
        probe = pin_probe(manifest, node, f"{prefix}{i}")
        for entry in probe["spec"].get("resourceClaims") or []:
            original = claims.get(entry.get("resourceClaimName") or "")
            if original is None:
                continue  # a template (the controller makes each probe its own claim)
            if (original.get("status") or {}).get("allocation") is not None:
                held.add(original["metadata"]["name"])
                continue
            copied: Obj = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"{prefix}{i}-{entry['name']}"},
                "spec": copy.deepcopy(original["spec"]),
            }
            kube.create_dra_object(namespace, copied)
            entry["resourceClaimName"] = copied["metadata"]["name"]
        probes[node] = probe
    for name in sorted(held):
        _change_reserved_for(kube, namespace, name, lambda entries: [*entries, hold])
    if held:
        kube.sync(namespace, nodes[-1], claims=True)  # kube-scheduler has seen the holds
    out: dict[str, KubeDecision] = {}
    uids: set[str] = set()
    if parallel:
        for probe in probes.values():
            uids.add(kube.create_pod(namespace, probe)["metadata"]["uid"])
        decided = kube.wait(namespace, [p["metadata"]["name"] for p in probes.values()])
        out = {node: decided[probe["metadata"]["name"]] for node, probe in probes.items()}
    else:
        for node, probe in probes.items():
            uids.add(kube.create_pod(namespace, probe)["metadata"]["uid"])
            name = probe["metadata"]["name"]
            out[node] = kube.wait(namespace, [name])[name]
            kube.delete_pod(namespace, name)
            # Its claims' devices must be free for the next probe, in kube-scheduler too.
            kube.delete_claims(namespace, _claims_named(kube, namespace, f"{name}-"))
            kube.sync(namespace, nodes[-1], claims=True)
    for probe in probes.values():
        kube.delete_pod(namespace, probe["metadata"]["name"])
    uids.add(hold["uid"])
    for name in sorted(held):
        _change_reserved_for(
            kube, namespace, name, lambda entries: [e for e in entries if e.get("uid") not in uids]
        )
    # The copies, and the claims the controller made from templates for the probes
    # (``<probe>-<entry>-<suffix>``; no garbage collector runs to delete them).
    kube.delete_claims(namespace, _claims_named(kube, namespace, prefix))
    return out


def _claims_named(kube: KubeSide, namespace: str, prefix: str) -> list[str]:
    """The names of the namespace's ResourceClaims that start with `prefix`."""
    items = kube.client.get(f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims").body["items"]
    return [c["metadata"]["name"] for c in items if c["metadata"]["name"].startswith(prefix)]


def _change_reserved_for(
    kube: KubeSide, namespace: str, name: str, change: Callable[[list[Obj]], list[Obj]]
) -> None:
    """Rewrite a claim's ``status.reservedFor`` (a read-modify-write: the ResourceClaim
    controller may update it at the same time)."""
    path = f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims/{name}"
    for _ in range(20):
        claim = kube.client.get(path).body
        status = claim.setdefault("status", {})
        entries = change(list(status.get("reservedFor") or []))
        if entries:
            status["reservedFor"] = entries
        else:
            status.pop("reservedFor", None)
        reply = kube.client.request("PUT", f"{path}/status", claim, check=False)
        if reply.status == 409:
            continue
        if reply.status >= 400:
            raise AssertionError(f"reservedFor of {namespace}/{name}: {reply.body}")
        return
    raise AssertionError(f"reservedFor of {namespace}/{name}: conflicts without end")


def _pinned_cycle(
    ours: OurSide, objects: list[Obj], pod: Obj, node: str
) -> tuple[Any, CycleState, PodInfo]:
    """One cycle of our default profile for `pod` pinned to `node` (so Reserve and the
    plugins' per-node state are for that node): the framework, its state, the pod."""
    pinned = copy.deepcopy(pod)
    pinned["spec"]["affinity"] = _pinned_affinity(pod["spec"].get("affinity"), node)
    pod_raw, _ = resolve_priority(pinned, objects)
    info = parse_pod(pod_raw)
    table, _ = build_table(objects)
    stores = StaticStores(list[Mapping[str, Any]](objects))
    profiles = build_profiles(
        ours.config,
        ours.catalog,
        lambda name: FrameworkHandle(name, table, store_provider=stores),
    )
    profile = profiles[DEFAULT_SCHEDULER_NAME]
    framework = profile.framework
    state = framework.new_cycle_state()
    result = Algorithm(framework, seed=0).schedule(
        state, info, table, profile.resolved.percentage_of_nodes_to_score
    )
    if result.node != node:
        raise AssertionError(f"our cycle pinned to {node} chose {result.node}: {result.status}")
    return framework, state, info


def our_allocations(ours: OurSide, objects: list[Obj], pod: Obj, node: str) -> Allocations:
    """What our DynamicResources would write for the pod on `node`: per claim of the pod,
    the allocation its Filter found there (``_State.node_allocations``, what Reserve
    keeps and PreBind writes), or the claim's own when it is allocated already."""
    framework, state, _ = _pinned_cycle(ours, objects, pod, node)
    data = state.get(DRA_STATE_KEY)
    assert isinstance(data, DraState), f"no DynamicResources state for {pod['metadata']['name']}"
    plugin = framework.plugins[DRA_STATE_KEY]
    assert isinstance(plugin, DynamicResources)
    found = plugin.node_allocation(data, node) or []
    new = {
        (
            EXTENDED_CLAIM
            if index == data.extended_index
            else data.claims[index]["metadata"]["name"]
        ): _comparable(result)
        for index, result in zip(data.to_allocate, found, strict=False)
    }
    namespace = pod["metadata"]["namespace"]
    by_name = {
        o["metadata"]["name"]: o
        for o in objects
        if o["kind"] == "ResourceClaim" and o["metadata"]["namespace"] == namespace
    }
    out: Allocations = {}
    for claim in pod_claims(pod).values():
        assert claim is not None
        out[claim] = new[claim] if claim in new else _allocation(by_name.get(claim))
    if EXTENDED_CLAIM in new:
        out[EXTENDED_CLAIM] = new[EXTENDED_CLAIM]
        variant = data.node_extended.get(node)
        mappings = [dict(m) for m in variant[1]] if variant is not None else []
        out[EXTENDED_MAPPINGS] = {"requestMappings": mappings}
    return out


def kube_allocations(kube: KubeSide, namespace: str, pod: Obj) -> Allocations:
    """The allocation of each of the pod's claims as kube-scheduler wrote it; for the
    special claim of DRA-backed extended resources (named in the bound pod's
    ``status.extendedResourceClaimStatus``) under :data:`EXTENDED_CLAIM`, with the
    status's container request mappings under :data:`EXTENDED_MAPPINGS`."""
    out: Allocations = {}
    claims_path = f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims"
    for claim in pod_claims(pod).values():
        assert claim is not None
        out[claim] = _allocation(kube.client.get(f"{claims_path}/{claim}").body)
    bound = kube.client.get(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}")
    extended = (bound.body.get("status") or {}).get("extendedResourceClaimStatus")
    if extended:
        got = kube.client.get(f"{claims_path}/{extended['resourceClaimName']}")
        out[EXTENDED_CLAIM] = _allocation(got.body)
        out[EXTENDED_MAPPINGS] = {"requestMappings": extended.get("requestMappings") or []}
    return out


def run_dra_step(
    kube: KubeSide, ours: OurSide, scenario: Scenario, namespace: str, step: Step
) -> StepReport:
    """Compare one pod with ResourceClaims (see ``test_fidelity.py``).

    Probes: a pinned probe that kube-scheduler binds allocates the claims it uses
    (and joins their ``reservedFor``), so probes cannot share the pod's unallocated
    claims: each probe gets its own copy of every unallocated claim the pod names
    (``<probe>-<entry>``, the same spec). A template's claim is the ResourceClaim
    controller's, one per probe anyway. With only node-local slices a probe's
    allocation is on its own node, so the probes of a pod without inter-pod
    affinity still run all at once; with a slice that is not node-local
    (``nodeSelector``, ``allNodes``) they run one at a time, and each probe's
    claims are deleted (and kube-scheduler synced) before the next. An
    *allocated* claim is not copied: the same devices in two claims would
    corrupt kube-scheduler's allocated-device set (a set of device IDs: deleting
    the copy frees the device the original still holds). The probes share it
    instead (it stays allocated; a probe kube binds only joins ``reservedFor``),
    and while they run it is held by
    :data:`PROBE_HOLD`, a non-pod consumer: kube-scheduler's PostFilter
    deallocates an allocated claim nobody else uses when the pod cannot go where
    it is allocated, which would change the scenario (and let the probe's next
    attempt succeed anywhere). Afterwards the probes are deleted, their copies
    and generated claims too (finalizers dropped), the hold and the probes are
    taken out of ``reservedFor``, and a sync pod with a claim of its own waits
    until kube-scheduler has seen all that, before the pod itself is let go.

    Our side needs no copies (``explain`` writes nothing): our probes are the pod
    pinned to each node, with its uid and claims. For a pod kube-scheduler binds,
    the ``status.allocation`` kube wrote for each of its claims (the API after
    binding, ``allocationTimestamp`` left out) must equal what our plugin's Filter
    found for kube's node (``our_allocations``). A pod that fits nowhere is deleted
    after the comparison, so that it cannot take devices later.
    """
    node_names = [n["metadata"]["name"] for n in scenario.nodes]
    last_node = node_names[-1]
    held = copy.deepcopy(step.pod)
    held["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    name = kube.create_pod(namespace, held)["metadata"]["name"]
    server_pod = wait_for_claims(kube, namespace, name)
    base = dra_base(server_pod)
    objects = kube.objects(dra=True)
    kind, parallel = probe_kind(base)
    assert kind == "pin", "DRA scenarios use pinned probes only"
    # Devices of a slice that is not node-local can go to probes on several nodes:
    # then one probe at a time, each one's claims deleted before the next.
    parallel = parallel and all(
        o["spec"].get("nodeName") for o in objects if o["kind"] == "ResourceSlice"
    )

    explanation = ours.explain(objects, base)
    manifest = plain_copy({**step.pod, "metadata": {**step.pod["metadata"]}}, name)
    kube_probes = probe_dra(kube, namespace, manifest, node_names, parallel=parallel)
    kube.sync(namespace, last_node, claims=True)
    our_probes = set()
    for node in node_names:
        pinned = copy.deepcopy(base)
        pinned["spec"]["affinity"] = _pinned_affinity(base["spec"].get("affinity"), node)
        if ours.explain(objects, pinned).node == node:
            our_probes.add(node)
    report = StepReport(
        pod=name,
        probe_kind=f"pin with claim copies{' (parallel)' if parallel else ''}",
        kube_feasible={n for n, d in kube_probes.items() if d.node == n},
        our_feasible=set(explanation.feasible),
        our_probe_feasible=our_probes,
        kube_node=None,
        our_tied=list(explanation.tied),
    )
    if report.our_feasible != report.our_probe_feasible:
        report.problems.append(
            f"our probes disagree with our own cycle: cycle {sorted(report.our_feasible)}, "
            f"probes {sorted(report.our_probe_feasible)}"
        )
    _compare_feasible(report, explanation, "", lambda node: f"; kube probe: {kube_probes[node]}")

    kube.set_gates(namespace, name, [])
    decision = kube.wait(namespace, [name])[name]
    report.kube_node = decision.node
    if (decision.node is None) != (step.expect == "unschedulable"):
        report.problems.append(
            f"scenario intent: expected {step.expect}, kube-scheduler said {decision}"
        )
    if decision.node is None:
        note = availability(kube.failed_scheduling_note(namespace, name))
        mine = availability(explanation.message)
        if explanation.node is not None:
            report.problems.append(f"kube-scheduler found no node, we chose {explanation.node}")
        elif note != mine:
            report.problems.append(f"FailedScheduling differs:\n  ours: {mine}\n  kube: {note}")
        report.details.append(f"  kube: {note}")
        full = kube.failed_scheduling_note(namespace, name)
        if full != explanation.message:
            # Shown, not compared: what follows the first sentence is PostFilter's.
            report.details.append(f"  full message, kube: {full}")
            report.details.append(f"  full message, ours: {explanation.message}")
        kube.delete_pod(namespace, name)
        return report
    if decision.node not in explanation.tied:
        report.problems.append(
            f"kube-scheduler chose {decision.node}, not among our tied best {explanation.tied}"
        )
    if len(report.kube_feasible) > 1:
        kube_scores, kube_totals = kube.scores(f"{namespace}/{name}")
        if not kube_scores:
            report.problems.append("no score lines for the pod in kube-scheduler's log (-v=10)")
        else:
            problems = compare_scores(explanation, kube_scores, kube_totals)
            report.problems.extend(f"score: {p}" for p in problems)
            if problems or decision.node not in explanation.tied:
                report.details.append(
                    score_table(explanation, kube_scores, kube_totals, decision.node)
                )
    kube_wrote = kube_allocations(kube, namespace, base)
    try:
        we_write = our_allocations(ours, objects, base, decision.node)
    except AssertionError as err:
        report.problems.append(f"no allocation of ours on {decision.node}: {err}")
        report.details.append(f"  allocations on {decision.node}: {_short(kube_wrote)}")
        return report
    if kube_wrote != we_write:
        report.problems.append(
            f"allocations on {decision.node} differ:\n  ours: {we_write}\n  kube: {kube_wrote}"
        )
    report.details.append(f"  allocations on {decision.node}: {_short(kube_wrote)}")
    return report


def _short(allocations: Allocations) -> str:
    """Claim -> request=pool/device, ... and the node selector's node, for the log."""
    parts = []
    for claim, found in allocations.items():
        if claim == EXTENDED_MAPPINGS:
            continue
        if found is None:
            parts.append(f"{claim}: -")
            continue
        results = found.get("devices", {}).get("results") or []
        devices = ", ".join(
            f"{r['request']}={r['pool']}/{r['device']}"
            f"{' (admin)' if r.get('adminAccess') else ''}"
            f"{' ' + str(r['consumedCapacity']) if r.get('consumedCapacity') else ''}"
            for r in results
        )
        parts.append(f"{claim}: [{devices}]")
    return "; ".join(parts)

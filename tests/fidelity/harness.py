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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.config import load_config
from scheduler.config.models import DEFAULT_SCHEDULER_NAME, SchedulerConfiguration
from scheduler.framework.explain import Explanation, explain
from scheduler.framework.loader import PluginCatalog
from scheduler.testing.controlplane import RestClient
from tests.fidelity.scenarios import Obj, Scenario, Step

HOLD_GATE = "fidelity.test/hold"
SYNC_LABEL = "fidelity.test/sync"
MERGE_PATCH = "application/merge-patch+json"
POLL = 0.03
#: Cluster-scoped kinds a scenario may add, by their resource name.
CLUSTER_PLURALS = {"RuntimeClass": "runtimeclasses"}
DECISION_TIMEOUT = 30.0

#: kube-scheduler's ``-v=10`` line for one plugin's weighted score of one node.
_PLUGIN_SCORE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)'
)
_FINAL_SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="(?P<pod>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)'
)


def default_config() -> SchedulerConfiguration:
    return load_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
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
        for obj in scenario.cluster_objects:
            group_version = obj["apiVersion"]
            path = f"/apis/{group_version}/{CLUSTER_PLURALS[obj['kind']]}"
            self.client.post(path, obj)
            self.cluster_objects.append(f"{path}/{obj['metadata']['name']}")
        for node in scenario.nodes:
            body = {k: v for k, v in node.items() if k != "status"}
            self.client.post("/api/v1/nodes", body)
            self.client.patch_status(
                f"/api/v1/nodes/{node['metadata']['name']}", {"status": node["status"]}
            )
        for existing in scenario.existing:
            self.create_pod(existing["metadata"].get("namespace") or namespace, existing)
        self.sync(namespace, scenario.nodes[-1]["metadata"]["name"])

    def sync(self, namespace: str, last_node: str) -> None:
        """Wait until kube-scheduler's caches hold everything written so far (module doc)."""
        token = uuid.uuid4().hex[:10]
        self.client.request(
            "PATCH",
            f"/api/v1/nodes/{last_node}",
            {"metadata": {"labels": {SYNC_LABEL: token}}},
            content_type=MERGE_PATCH,
        )
        name = f"sync-{token}"
        sync_pod = {
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
        self.create_pod(namespace, sync_pod)
        decision = self.wait(namespace, [name])[name]
        assert decision.node == last_node, f"sync pod not bound to {last_node}: {decision}"
        self.delete_pod(namespace, name)

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
        self, namespace: str, names: Iterable[str], timeout: float = DECISION_TIMEOUT
    ) -> dict[str, KubeDecision]:
        """Wait until each pod is bound or marked Unschedulable by kube-scheduler."""
        wanted = set(names)
        decided: dict[str, KubeDecision] = {}
        deadline = time.monotonic() + timeout
        while True:
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

    def objects(self) -> list[Obj]:
        """Nodes, pods and namespaces as the API server holds them, as a cluster file lists them."""
        out: list[Obj] = []
        for kind, path in (
            ("Node", "/api/v1/nodes"),
            ("Pod", "/api/v1/pods"),
            ("Namespace", "/api/v1/namespaces"),
        ):
            for item in self.client.get(path).body["items"]:
                out.append({"apiVersion": "v1", "kind": kind, **item})
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

    def explain(self, objects: list[Obj], pod: Obj) -> Explanation:
        return explain(objects, pod, self.config, self.catalog, profile_name=DEFAULT_SCHEDULER_NAME)

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
    if report.our_feasible != report.kube_feasible:
        report.problems.append(
            f"feasible sets differ: ours {sorted(report.our_feasible)}, "
            f"kube {sorted(report.kube_feasible)}"
        )
        for node in sorted(report.our_feasible ^ report.kube_feasible):
            verdict = explanation.nodes[node]
            report.details.append(
                f"  {node}: ours rejected_by={verdict.rejected_by} "
                f"{ {p: v.reasons for p, v in verdict.filter.items() if v.reasons} }; "
                f"kube probe: {kube_probes[node]}"
            )

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

"""``explain``: one scheduling cycle for one pod, reported per node and per plugin.

The cluster file is loaded straight into a :class:`NodeTable` (no API server),
the profiles are built exactly as the daemon builds them, and the pod goes
through :meth:`Algorithm.schedule` once: the same code path as a real
scheduling cycle, so what is shown is what the daemon would decide. Nothing
here prints or reads files; the command renders the :class:`Explanation`.

PostFilter (preemption) runs only as a dry run: the plugins get a handle
without an API client, so they can compute what they would do but cannot act.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import yaml

from scheduler.api.cyclestate import CycleState
from scheduler.api.results import Diagnosis, PostFilterResult
from scheduler.api.status import Code, Status
from scheduler.config.models import DEFAULT_SCHEDULER_NAME, SchedulerConfiguration
from scheduler.errors import UserError
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.extenders import FILTER_KEY as EXTENDER_FILTER_KEY
from scheduler.framework.extenders import SCORES_KEY as EXTENDER_SCORES_KEY
from scheduler.framework.extenders import (
    ExtenderFilterOutcome,
    ExtenderRunner,
    ExtenderScores,
    schedule_with_extenders,
)
from scheduler.framework.guard import IgnoredFailure
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.framework.runtime import IGNORED_KEY, PREFILTER_NARROWING_KEY
from scheduler.state.nodetable import InvalidNodeError, NodeTable
from scheduler.state.pod import InvalidPodError, PodInfo

Obj = dict[str, Any]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
TIE_NOTE = "kube-scheduler picks one of the tied nodes at random"


# -- result ---------------------------------------------------------------------------


@dataclass(slots=True)
class FilterVerdict:
    """One Filter plugin's verdict on one node (``Success`` when it let the node through)."""

    code: Code
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.title, "reasons": list(self.reasons)}


@dataclass(slots=True)
class PluginScore:
    raw: int
    normalized: int
    weighted: int

    def to_json(self) -> dict[str, int]:
        return {"raw": self.raw, "normalized": self.normalized, "weighted": self.weighted}


@dataclass(slots=True)
class NodeReport:
    """Everything the cycle said about one node.

    ``filter`` holds, in plugin order, the Filter plugins that saw the node:
    ``Success`` (or ``Skip``) for the ones it passed and, for a rejected node,
    the verdict of the plugin that rejected it (later plugins never see it).
    A node dropped by a PreFilter result has only that plugin's verdict.
    """

    name: str
    evaluated: bool = False
    feasible: bool = False
    scored: bool = False
    rejected_by: str | None = None
    stage: str = ""  # "PreFilter" or "Filter" for rejected nodes
    filter: dict[str, FilterVerdict] = field(default_factory=dict)
    score: dict[str, PluginScore] = field(default_factory=dict)
    total: int | None = None
    #: What the rejecting plugin adds about why (its ``explain_rejected_nodes``).
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "evaluated": self.evaluated,
            "feasible": self.feasible,
            "rejected_by": self.rejected_by,
            "filter": {p: v.to_json() for p, v in self.filter.items()},
            "score": {p: s.to_json() for p, s in self.score.items()},
            "total": self.total,
            "details": list(self.details),
        }


@dataclass(slots=True)
class ScorePlugin:
    name: str
    weight: int
    skipped: bool = False  # PreScore returned Skip for this pod

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "weight": self.weight, "skipped": self.skipped}


@dataclass(slots=True)
class PluginTime:
    """Time one plugin took at one extension point in this cycle (all its calls)."""

    point: str
    plugin: str
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"extension_point": self.point, "plugin": self.plugin, "seconds": self.seconds}


@dataclass(slots=True)
class PostFilterReport:
    """What PostFilter (preemption) would do, from a dry run; ``ran`` False says why not."""

    ran: bool
    explanation: str
    code: Code | None = None
    plugin: str | None = None
    nominated_node: str | None = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "explanation": self.explanation,
            "code": self.code.title if self.code is not None else None,
            "plugin": self.plugin,
            "nominated_node": self.nominated_node,
            "message": self.message,
        }


@dataclass(slots=True)
class SkippedObject:
    """An object of the cluster file left out of the table, and why."""

    kind: str
    name: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "reason": self.reason}


@dataclass
class Explanation:
    pod: str
    profile: str
    node: str | None
    tied: list[str]
    status: Status
    message: str
    nodes: dict[str, NodeReport]  # feasible first (by total, best first), then the rest
    filter_plugins: list[str]
    score_plugins: list[ScorePlugin]
    total_nodes: int
    evaluated_nodes: int
    feasible_nodes: int
    pre_filter_message: str = ""
    post_filter: PostFilterReport | None = None
    skipped: list[SkippedObject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plugin_times: list[PluginTime] = field(default_factory=list)
    """Slowest first; PostFilter's dry run included."""
    ignored: list[IgnoredFailure] = field(default_factory=list)
    """Plugin failures that only left the plugin out (``failurePolicy: Ignore``)."""

    @property
    def feasible(self) -> list[str]:
        return [n for n, r in self.nodes.items() if r.feasible]

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "node": self.node,
            "tied": list(self.tied),
            "tie_break": TIE_NOTE if len(self.tied) > 1 else None,
            "status": {
                "code": self.status.code.title,
                "plugin": self.status.plugin,
                "message": self.status.message(),
            },
            "message": self.message,
            "summary": {
                "nodes": self.total_nodes,
                "evaluated": self.evaluated_nodes,
                "feasible": self.feasible_nodes,
            },
            "feasible": self.feasible,
            "filter_plugins": list(self.filter_plugins),
            "score_plugins": [p.to_json() for p in self.score_plugins],
            "pre_filter_message": self.pre_filter_message,
            "post_filter": self.post_filter.to_json() if self.post_filter is not None else None,
            "nodes": {name: report.to_json() for name, report in self.nodes.items()},
            "skipped": [s.to_json() for s in self.skipped],
            "notes": list(self.notes),
            "plugin_times": [t.to_json() for t in self.plugin_times],
            "ignored_failures": [f.to_json() for f in self.ignored],
        }


# -- inputs ---------------------------------------------------------------------------


def parse_pod_text(text: str, source: str) -> Obj:
    """The one Pod in a YAML or JSON document (a ``List`` holding one Pod is accepted)."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise UserError(f"{source}: not valid YAML or JSON: {exc}") from exc
    if len(documents) == 1 and isinstance(documents[0], dict):
        doc = documents[0]
        kind = doc.get("kind")
        items = doc.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            documents = items
    if len(documents) != 1:
        raise UserError(f"{source}: expected exactly one Pod, found {len(documents)} objects")
    obj = documents[0]
    if not isinstance(obj, dict):
        raise UserError(f"{source}: expected a Pod object (a mapping), got {type(obj).__name__}")
    kind = obj.get("kind")
    if kind != "Pod":
        got = repr(kind) if kind else "no kind"
        raise UserError(f"{source}: expected a Pod (kind: Pod), got {got}")
    api_version = obj.get("apiVersion", "v1")
    if api_version != "v1":
        raise UserError(f"{source}: a Pod has apiVersion v1, got {api_version!r}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        raise UserError(f"{source}: the Pod has no metadata.name")
    if not isinstance(obj.get("spec"), dict):
        raise UserError(f"{source}: the Pod has no spec")
    return obj


def _object_error(kind: str, name: str, err: Exception) -> str:
    """``node n: status.allocatable.cpu: ...`` (drop the parser's repeated kind word)."""
    text = str(err)
    prefix = f"{kind} {name}: "
    if text.startswith(prefix):
        rest = text[len(prefix) :]
        if rest.startswith(f"{kind} "):
            rest = rest[len(kind) + 1 :]
        return prefix + rest
    return text


def parse_pod(raw: Obj) -> PodInfo:
    try:
        return PodInfo.from_dict(raw)
    except InvalidPodError as err:
        meta = raw.get("metadata") or {}
        name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        raise UserError(_object_error("pod", name, err)) from err


def build_table(objects: list[Obj]) -> tuple[NodeTable, list[SkippedObject]]:
    """Nodes and bound, non-terminal pods of a cluster file; broken objects are skipped."""
    table = NodeTable()
    skipped: list[SkippedObject] = []
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        name = str((obj.get("metadata") or {}).get("name") or "")
        try:
            table.upsert_node(obj)
        except InvalidNodeError as err:
            skipped.append(SkippedObject("Node", name, _object_error("node", name, err)))
    for obj in objects:
        if obj.get("kind") != "Pod":
            continue
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not isinstance(spec, dict) or not spec.get("nodeName") or phase in TERMINAL_PHASES:
            continue
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        try:
            pod = PodInfo.from_dict(obj)
        except InvalidPodError as err:
            skipped.append(SkippedObject("Pod", key, _object_error("pod", key, err)))
            continue
        table.add_pod(pod)
    return table, skipped


SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}


def resolve_priority(pod_raw: Obj, objects: list[Obj]) -> tuple[Obj, str]:
    """Fill ``spec.priority`` from the PriorityClasses, as the API server's admission does.

    Pods read from a cluster already carry it; a hand-written pod file usually
    names only ``priorityClassName`` (or relies on a ``globalDefault`` class).
    Returns the pod (a copy when changed) and a note ("" when nothing changed).
    """
    spec = pod_raw.get("spec") or {}
    if spec.get("priority") is not None:
        return pod_raw, ""
    classes: dict[str, Obj] = {
        str((o.get("metadata") or {}).get("name") or ""): o
        for o in objects
        if o.get("kind") == "PriorityClass"
    }
    name = spec.get("priorityClassName")
    if name:
        if name in classes:
            value = classes[name].get("value")
        elif name in SYSTEM_PRIORITY_CLASSES:
            value = SYSTEM_PRIORITY_CLASSES[name]
        else:
            raise UserError(
                f"pod's spec.priorityClassName: no PriorityClass named {name!r} in the cluster file"
            )
    else:
        defaults = [o for o in classes.values() if o.get("globalDefault")]
        if not defaults:
            return pod_raw, ""
        name = str((defaults[0].get("metadata") or {}).get("name") or "")
        value = defaults[0].get("value")
    if not isinstance(value, int):
        raise UserError(f"PriorityClass {name}: value must be an integer, got {value!r}")
    return (
        {**pod_raw, "spec": {**spec, "priority": value}},
        f"spec.priority={value} from PriorityClass {name}",
    )


def choose_profile(profiles: Mapping[str, Profile], pod_raw: Obj, requested: str | None) -> str:
    """``--profile``, else the pod's ``schedulerName``, else our default name."""
    spec = pod_raw.get("spec") or {}
    name = requested or str(spec.get("schedulerName") or "") or DEFAULT_SCHEDULER_NAME
    if name not in profiles:
        where = "--profile" if requested else "the pod's schedulerName"
        available = ", ".join(sorted(profiles))
        raise UserError(
            f"no profile named {name!r} ({where}); the configuration has: {available}",
            details=["pick one with --profile NAME"] if not requested else None,
        )
    return name


# -- the cycle --------------------------------------------------------------------------


def explain(
    objects: list[Obj],
    pod_raw: Obj,
    config: SchedulerConfiguration,
    catalog: PluginCatalog,
    *,
    profile_name: str | None = None,
    seed: int | None = 0,
) -> Explanation:
    """Run one scheduling cycle for ``pod_raw`` against ``objects`` and report it.

    Raises :class:`UserError` for a bad pod, an unknown profile or plugins that
    fail to load; broken nodes and pods of the cluster file are reported as
    skipped instead.
    """
    pod_raw, priority_note = resolve_priority(pod_raw, objects)
    pod = parse_pod(pod_raw)
    table, skipped = build_table(objects)
    stores = StaticStores(list[Mapping[str, Any]](objects))

    def make_handle(name: str) -> FrameworkHandle:
        # No client: a plugin cannot act on the cluster (PostFilter is a dry run).
        return FrameworkHandle(name, table, store_provider=stores)

    profiles = build_profiles(config, catalog, make_handle)
    chosen_profile = choose_profile(profiles, pod_raw, profile_name)
    profile = profiles[chosen_profile]
    framework = profile.framework

    notes: list[str] = [priority_note] if priority_note else []
    if pod.node_name:
        notes.append(
            f"the pod already has spec.nodeName={pod.node_name}: a scheduler would not "
            "schedule it (explained as if it were pending)"
        )
    bound_to = table.node_of_pod(pod.key)
    if bound_to is not None:
        table.remove_pod(pod.key)
        notes.append(
            f"the cluster file has pod {pod.key} bound to {bound_to}; it is left out of "
            "the cluster so it does not count against itself"
        )
    gate = framework.run_pre_enqueue(pod)
    if not gate.is_success():
        notes.append(
            f"PreEnqueue would keep the pod out of the scheduling queue ({gate}); "
            "the cycle below shows what would happen once it is let in"
        )

    state = framework.new_cycle_state()
    algorithm = Algorithm(framework, seed=seed)
    percentage = profile.resolved.percentage_of_nodes_to_score
    runner = framework.extenders
    awaited: PostFilterResult | None = None
    if runner is not None and runner.interested(pod):
        result, awaited = _with_extenders(profile, algorithm, runner, state, pod, table, percentage)
    else:
        result = algorithm.schedule(state, pod, table, percentage)

    post_filter = _post_filter(profile, state, pod, result, awaited)
    plugin_times = sorted(
        (
            PluginTime(point, plugin, seconds)
            for (point, plugin), seconds in framework.cycle_plugin_seconds().items()
        ),
        key=lambda t: -t.seconds,
    )
    diagnosis = result.diagnosis
    if result.node is not None:
        message = f"Successfully assigned {pod.key} to {result.node}"
    elif result.status.code is Code.ERROR:
        message = result.status.message() or "scheduler error"
    elif diagnosis.total_nodes:
        message = diagnosis.message()
    else:
        message = result.status.message()

    score_plugins = [
        ScorePlugin(c.plugin, c.weight, c.plugin in state.skip_score_plugins)
        for c in framework.score_calls
    ]
    filter_plugins = [c.plugin for c in framework.filter_calls]
    # The extenders that answered, after the plugins (kube calls them after Filter).
    called: ExtenderFilterOutcome | None = state.get(EXTENDER_FILTER_KEY)
    if called is not None:
        filter_plugins += [v.extender for v in called.verdicts]
        notes += [
            f"extender {name} failed and is ignorable: skipped ({error})"
            for name, error in called.skipped
        ]
    extender_scores: list[ExtenderScores] = state.get(EXTENDER_SCORES_KEY, [])
    score_plugins += [ScorePlugin(e.extender, e.weight) for e in extender_scores]
    nodes = _node_reports(table, result, state, filter_plugins)
    _add_details(framework.plugins, nodes, state, pod)
    if result.score_outcome is None and result.node is not None and result.feasible_nodes == 1:
        notes.append("only one node is feasible: scoring is skipped, as kube-scheduler does")
    nominated_only = result.node is not None and result.node == pod.nominated_node_name
    if nominated_only and result.evaluated_nodes == 1 and len(table) > 1:
        notes.append(
            f"the pod is nominated to {result.node} and fits there: no other node was evaluated"
        )
    unevaluated = sum(1 for r in nodes.values() if not r.evaluated)
    if unevaluated and not nominated_only and result.filter_outcome is not None:
        notes.append(
            f"percentageOfNodesToScore: Filter stopped once {result.feasible_nodes} feasible "
            f"nodes were found; {unevaluated} of {len(table)} nodes were not evaluated"
        )

    return Explanation(
        pod=pod.key,
        profile=chosen_profile,
        node=result.node,
        tied=result.tied,
        status=result.status,
        message=message,
        nodes=nodes,
        filter_plugins=filter_plugins,
        score_plugins=score_plugins,
        total_nodes=len(table),
        evaluated_nodes=result.evaluated_nodes,
        feasible_nodes=result.feasible_nodes,
        pre_filter_message=diagnosis.pre_filter_message,
        post_filter=post_filter,
        skipped=skipped,
        notes=notes,
        plugin_times=plugin_times,
        ignored=list(state.get(IGNORED_KEY, [])),
    )


def _with_extenders(
    profile: Profile,
    algorithm: Algorithm,
    runner: ExtenderRunner,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    percentage: int | None,
) -> tuple[ScheduleResult, PostFilterResult | None]:
    """The cycle with the HTTP extenders called, as the daemon calls them; and
    PostFilter's result when an extender's ``preemptVerb`` made it await.

    ``explain`` is synchronous: the calls run on an event loop of their own
    (on a thread when the caller already runs one), and their connection
    pools are closed with it.
    """
    framework = profile.framework

    async def cycle() -> tuple[ScheduleResult, PostFilterResult | None]:
        try:
            result = await schedule_with_extenders(algorithm, runner, state, pod, table, percentage)
            post = None
            if runner.preempts(pod) and _post_filter_runs(profile, result) is None:
                post = await framework.run_post_filter_async(state, pod, result.diagnosis)
            return result, post
        finally:
            await runner.step.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(cycle())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, cycle()).result()


def _add_details(
    plugins: Mapping[str, object], nodes: dict[str, NodeReport], state: CycleState, pod: PodInfo
) -> None:
    """Let each rejecting plugin say more about its nodes than its verdict's reason.

    A plugin may define ``explain_rejected_nodes(state, pod, node_names)``
    returning lines per node name (plugin API 1.3): kube's reasons are terse
    ("cannot allocate all claims") because they are counted across nodes.
    """
    rejected: dict[str, list[str]] = {}
    for report in nodes.values():
        if report.rejected_by is not None and report.stage == "Filter":
            rejected.setdefault(report.rejected_by, []).append(report.name)
    for plugin_name, names in rejected.items():
        hook = getattr(plugins.get(plugin_name), "explain_rejected_nodes", None)
        if not callable(hook):
            continue
        found = hook(state, pod, names)
        if isinstance(found, Mapping):
            for name, lines in found.items():
                if name in nodes and isinstance(lines, list):
                    nodes[name].details = [str(line) for line in lines]


def _post_filter_runs(profile: Profile, result: ScheduleResult) -> PostFilterReport | None:
    """None when PostFilter runs after ``result``; else the report saying why not."""
    if result.node is not None:
        return None
    # As the daemon (and kube): PostFilter runs on every rejection of a cycle
    # that saw nodes, UnschedulableAndUnresolvable and PreFilter ones included.
    if not result.status.is_rejected() or not result.diagnosis.total_nodes:
        why = {
            Code.ERROR: "the attempt failed with an error, PostFilter does not run",
        }.get(result.status.code, f"PostFilter does not run on {result.status.code.title}")
        return PostFilterReport(False, why)
    if not profile.framework.post_filter_calls:
        why = (
            f"no PostFilter plugin is enabled in profile {profile.scheduler_name!r} "
            "(DefaultPreemption is not installed): nothing would be preempted"
        )
        if result.diagnosis.rejections and not len(result.diagnosis.resolvable_rows()):
            why += (
                "; every node was rejected as UnschedulableAndUnresolvable, "
                "so preemption could not help anyway"
            )
        return PostFilterReport(False, why)
    return None


def _post_filter(
    profile: Profile,
    state: CycleState,
    pod: PodInfo,
    result: ScheduleResult,
    awaited: PostFilterResult | None = None,
) -> PostFilterReport | None:
    """PostFilter as the daemon would run it, without the power to act (``awaited``:
    its result already, when the extenders' preemptVerb made it await)."""
    if result.node is not None:
        return None
    not_run = _post_filter_runs(profile, result)
    if not_run is not None:
        return not_run
    got: PostFilterResult = (
        awaited
        if awaited is not None
        else profile.framework.run_post_filter(state, pod, result.diagnosis)
    )
    status = got.status
    if status.is_success() and got.nominated_node_name:
        explanation = (
            f"{status.plugin or 'PostFilter'} would nominate node {got.nominated_node_name} "
            "(dry run: nothing was evicted)"
        )
    elif status.code is Code.ERROR:
        explanation = f"PostFilter failed: {status.message()}"
    else:
        explanation = "PostFilter found no node where preemption would help"
    return PostFilterReport(
        True, explanation, status.code, status.plugin, got.nominated_node_name, status.message()
    )


def _pre_filter_rejection_index(diagnosis: Diagnosis, state: CycleState) -> int:
    """Index of the rejection made by PreFilter node narrowing (-1 if none)."""
    narrowing = state.get(PREFILTER_NARROWING_KEY, [])
    if not narrowing or not diagnosis.rejections:
        return -1
    first = diagnosis.rejections[0]
    marker = f"node(s) didn't satisfy plugin(s) [{', '.join(narrowing)}]"
    return 0 if first.reasons == [marker] else -1


def _node_reports(
    table: NodeTable, result: ScheduleResult, state: CycleState, filter_plugins: list[str]
) -> dict[str, NodeReport]:
    names = table.names
    reports: dict[str, NodeReport] = {}
    order: list[str] = [names[r] for r in table.rows().tolist()]
    for name in order:
        reports[name] = NodeReport(name)
    skip = state.skip_filter_plugins
    passed_all = {
        p: FilterVerdict(Code.SKIP if p in skip else Code.SUCCESS) for p in filter_plugins
    }

    outcome = result.filter_outcome
    if outcome is not None:
        for row in outcome.feasible.rows.tolist():
            report = reports[names[row]]
            report.evaluated = report.feasible = True
            report.filter = {p: FilterVerdict(v.code) for p, v in passed_all.items()}

    diagnosis = result.diagnosis
    pre_index = _pre_filter_rejection_index(diagnosis, state)
    for i, rej in enumerate(diagnosis.rejections):
        stage = "PreFilter" if i == pre_index else "Filter"
        before: list[str] = []
        if stage == "Filter" and rej.plugin in filter_plugins:
            before = filter_plugins[: filter_plugins.index(rej.plugin)]
        for row, code, bits in zip(
            rej.rows.tolist(), rej.codes.tolist(), rej.reason_bits.tolist(), strict=True
        ):
            report = reports[names[row]]
            report.evaluated = True
            report.rejected_by = rej.plugin
            report.stage = stage
            report.filter = {p: FilterVerdict(passed_all[p].code) for p in before}
            reasons = [r for b, r in enumerate(rej.reasons) if bits >> b & 1]
            report.filter[rej.plugin] = FilterVerdict(Code(code), reasons)

    scores = result.score_outcome
    if scores is not None:
        scored_names = scores.nodes.names
        totals = scores.total.tolist()
        per_plugin = {
            p: (s.raw.tolist(), s.normalized.tolist(), s.weighted.tolist())
            for p, s in scores.by_plugin.items()
        }
        for i, name in enumerate(scored_names):
            report = reports[name]
            report.scored = True
            report.total = int(totals[i])
            report.score = {
                p: PluginScore(int(raw[i]), int(norm[i]), int(weighted[i]))
                for p, (raw, norm, weighted) in per_plugin.items()
            }
    elif result.node is not None:
        reports[result.node].scored = False

    position = {name: i for i, name in enumerate(order)}

    def key(report: NodeReport) -> tuple[int, int, int]:
        if report.feasible:
            group = 0 if report.total is not None else 1
            return (group, -(report.total or 0), position[report.name])
        return (2 if report.evaluated else 3, 0, position[report.name])

    return {r.name: r for r in sorted(reports.values(), key=key)}

"""The what-if API: which pending pods would fit on which hypothetical nodes, and why not.

An autoscaler (Cluster Autoscaler, Karpenter) decides which node group to
grow by simulating scheduling, with the in-tree plugins only: pods of a
scheduler with other plugins then trigger no scale-up, or the wrong one.
Here the scheduler answers for itself, with every PreFilter and Filter
plugin of each pod's profile, for all pending pods and all node templates in
one request.

Node templates become extra rows of a :class:`ScenarioTable` (a what-if copy
of the node table; the live table is never touched), ``count`` copies each,
named ``<template>-<i>`` with their own ``kubernetes.io/hostname``; removed
nodes leave the copy with their pods. Each pod then runs PreFilter and
Filter once over every row (:meth:`Algorithm.feasibility`), and the answer
says, per template and per existing node, whether it passed, or which plugin
rejected it with what code and reasons. Pods that differ only in identity
(a ReplicaSet's replicas) share the batching signature the scheduling cycle
already uses for identical pods (:func:`.batching.pod_signature`) and are
answered once.

The request and answer formats are documented in docs/whatif.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.status import Code
from scheduler.errors import UserError
from scheduler.framework.batching import pod_signature
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.handle import Nominator
from scheduler.framework.profile import Profile
from scheduler.model.names import dns1123_subdomain_errors
from scheduler.state.nodetable import InvalidNodeError, NodeTable, ParsedNode
from scheduler.state.pod import InvalidPodError, PodInfo
from scheduler.state.scenario import ScenarioTable

Obj = dict[str, Any]

#: Template copies a request may add in all (each is a row Filter runs over).
MAX_TEMPLATE_NODES = 10_000

HOSTNAME_LABEL = "kubernetes.io/hostname"

_REQUEST_FIELDS = ("pods", "profile", "nodeTemplates", "removeNodes")
_TEMPLATE_FIELDS = ("name", "count", "node")
_POD_REF = re.compile(r"^[^/\s]+/[^/\s]+$")


# -- request ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeTemplate:
    """A kind of node the autoscaler could add: ``count`` copies of ``node``."""

    name: str
    count: int
    node: Obj

    def copy_name(self, i: int) -> str:
        return f"{self.name}-{i}"

    def copy(self, i: int) -> Obj:
        """The ``i``-th copy's Node object: its own name and hostname label."""
        name = self.copy_name(i)
        meta = dict(self.node.get("metadata") or {})
        meta["name"] = name
        meta["labels"] = {**(meta.get("labels") or {}), HOSTNAME_LABEL: name}
        return {**self.node, "metadata": meta}


@dataclass(slots=True)
class WhatIfRequest:
    """A parsed request; ``pods`` None means every pending pod the answerer knows."""

    pods: list[Obj | str] | None = None
    profile: str | None = None
    templates: list[NodeTemplate] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)


def _unknown_fields(obj: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    unknown = sorted(set(obj) - set(known))
    if unknown:
        raise UserError(f"{where}: unknown field {unknown[0]!r} (known fields: {', '.join(known)})")


def _list_of(body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UserError(f"{key}: must be a list, got {type(value).__name__}")
    return value


def parse_template(item: Any, where: str) -> NodeTemplate:
    if not isinstance(item, Mapping):
        raise UserError(f"{where}: must be an object with name, count and node")
    _unknown_fields(item, _TEMPLATE_FIELDS, where)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}.name: required, a non-empty string")
    errors = dns1123_subdomain_errors(name)
    if errors:
        raise UserError(f"{where}.name: {name!r}: {errors[0]}")
    count = item.get("count", 1)
    if type(count) is not int or count < 1:
        raise UserError(f"{where}.count: must be a positive integer, got {count!r}")
    node = item.get("node")
    if not isinstance(node, Mapping):
        raise UserError(f"{where}.node: required, a Node object (labels, taints, allocatable)")
    kind = node.get("kind", "Node")
    if kind != "Node":
        raise UserError(f"{where}.node.kind: must be Node, got {kind!r}")
    template = NodeTemplate(name, count, dict(node))
    try:
        ParsedNode.from_dict(template.copy(0))
    except InvalidNodeError as err:
        text = str(err).removeprefix(f"node {template.copy_name(0)}: ")
        raise UserError(f"{where}.node: {text}") from err
    return template


def parse_request(body: Any) -> WhatIfRequest:
    """Check a request's shape; every error names the field (``nodeTemplates[2].count``)."""
    if not isinstance(body, Mapping):
        raise UserError(f"request: must be a JSON object, got {type(body).__name__}")
    _unknown_fields(body, _REQUEST_FIELDS, "request")
    request = WhatIfRequest()
    if body.get("pods") is not None:
        request.pods = []
        for i, item in enumerate(_list_of(body, "pods")):
            if isinstance(item, str):
                if not _POD_REF.match(item):
                    raise UserError(f"pods[{i}]: {item!r}: a pod reference is namespace/name")
            elif not isinstance(item, Mapping):
                raise UserError(f"pods[{i}]: must be a Pod object or a namespace/name string")
            request.pods.append(item if isinstance(item, str) else dict(item))
    profile = body.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile):
        raise UserError(f"profile: must be a profile's schedulerName, got {profile!r}")
    request.profile = profile
    names: dict[str, int] = {}
    total = 0
    for i, item in enumerate(_list_of(body, "nodeTemplates")):
        template = parse_template(item, f"nodeTemplates[{i}]")
        if template.name in names:
            raise UserError(
                f"nodeTemplates[{i}].name: {template.name!r} is also "
                f"nodeTemplates[{names[template.name]}]'s name"
            )
        names[template.name] = i
        total += template.count
        request.templates.append(template)
    if total > MAX_TEMPLATE_NODES:
        raise UserError(
            f"nodeTemplates: {total} copies in all; at most {MAX_TEMPLATE_NODES} per request"
        )
    for i, item in enumerate(_list_of(body, "removeNodes")):
        if not isinstance(item, str) or not item:
            raise UserError(f"removeNodes[{i}]: must be a node name, got {item!r}")
        request.remove.append(item)
    return request


# -- answer -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a node was rejected: the first plugin that did, its code and reasons."""

    plugin: str
    code: str
    reasons: tuple[str, ...]

    def to_json(self) -> Obj:
        return {"plugin": self.plugin, "code": self.code, "reasons": list(self.reasons)}


@dataclass(slots=True)
class TemplateAnswer:
    name: str
    count: int
    feasible: int  # copies the pod passed on
    rejected: Verdict | None  # the first copy's verdict when no copy passed

    def to_json(self) -> Obj:
        out: Obj = {"name": self.name, "fits": self.feasible > 0, "feasibleCopies": self.feasible}
        if self.rejected is not None:
            out.update(self.rejected.to_json())
        return out


@dataclass(slots=True)
class PodAnswer:
    """The answer for one group of identical pods."""

    pods: list[str]
    profile: str
    templates: list[TemplateAnswer]
    feasible_nodes: list[str]
    rejected_nodes: list[tuple[Verdict, list[str]]]
    error: str | None = None

    @property
    def fits(self) -> bool:
        return bool(self.feasible_nodes) or any(t.feasible for t in self.templates)

    def to_json(self) -> Obj:
        return {
            "pods": list(self.pods),
            "profile": self.profile,
            "fits": self.fits,
            "error": self.error,
            "templates": [t.to_json() for t in self.templates],
            "nodes": {
                "feasible": list(self.feasible_nodes),
                "rejected": [
                    {**verdict.to_json(), "count": len(names), "nodes": names}
                    for verdict, names in self.rejected_nodes
                ],
            },
        }


@dataclass(slots=True)
class WhatIfAnswer:
    answers: list[PodAnswer]
    pods: int
    nodes: int
    template_nodes: int
    removed: list[str]
    seconds: float = 0.0

    def to_json(self) -> Obj:
        return {
            "summary": {
                "pods": self.pods,
                "answers": len(self.answers),
                "nodes": self.nodes,
                "templateNodes": self.template_nodes,
                "removedNodes": list(self.removed),
                "seconds": round(self.seconds, 6),
            },
            "answers": [a.to_json() for a in self.answers],
        }


# -- computing --------------------------------------------------------------------------

PodLookup = Callable[[str], PodInfo | None]


def _parse_pod(raw: Obj, where: str) -> PodInfo:
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise UserError(f"{where}.metadata.name: required")
    if not isinstance(raw.get("spec"), Mapping):
        raise UserError(f"{where}.spec: required, the Pod's spec")
    kind = raw.get("kind", "Pod")
    if kind != "Pod":
        raise UserError(f"{where}.kind: must be Pod, got {kind!r}")
    try:
        return PodInfo.from_dict(raw)
    except InvalidPodError as err:
        raise UserError(f"{where}: {err}") from err


def resolve_pods(
    request: WhatIfRequest,
    lookup: PodLookup,
    pending: Callable[[], list[PodInfo]],
    prepare: Callable[[Obj, str], Obj] | None = None,
) -> list[PodInfo]:
    """The request's pods: objects parsed, references looked up, or every pending pod.

    ``prepare`` may complete a pod object first (``explain``'s priority lookup).
    """
    if request.pods is None:
        return pending()
    out: list[PodInfo] = []
    for i, item in enumerate(request.pods):
        where = f"pods[{i}]"
        if isinstance(item, str):
            found = lookup(item)
            if found is None:
                raise UserError(f"{where}: no pod {item!r} is known to the scheduler")
            out.append(found)
        else:
            out.append(_parse_pod(prepare(item, where) if prepare else item, where))
    return out


def _as_pending(pod: PodInfo) -> PodInfo:
    """The pod without its ``spec.nodeName`` (NodeName would hold it to that node)."""
    spec = {k: v for k, v in (pod.raw.get("spec") or {}).items() if k != "nodeName"}
    return PodInfo.from_dict({**pod.raw, "spec": spec})


def _profile_name(pod: PodInfo, index: int | None, request: WhatIfRequest, profiles: Any) -> str:
    name = request.profile or pod.scheduler_name
    if name in profiles:
        return name
    available = ", ".join(sorted(profiles))
    if request.profile:
        raise UserError(f"profile: no profile named {name!r} (profiles: {available})")
    where = f"pods[{index}]" if index is not None else f"pod {pod.key}"
    raise UserError(
        f"{where}.spec.schedulerName: {name!r} is not a profile of this scheduler "
        f"(profiles: {available}); set the request's profile to ask for another one"
    )


class _Rows:
    """The scenario's rows, split into existing nodes and template copies."""

    def __init__(self, table: ScenarioTable, templates: list[NodeTemplate]) -> None:
        self.table = table
        self.templates: list[npt.NDArray[np.int64]] = []
        for template in templates:
            rows = [table.add_node(template.copy(i)) for i in range(template.count)]
            self.templates.append(np.asarray(rows, dtype=np.int64))
        is_template = np.zeros(table.capacity, dtype=np.bool_)
        for rows_t in self.templates:
            is_template[rows_t] = True
        alive = table.rows()
        self.existing = alive[~is_template[alive]]


def _verdicts(result: ScheduleResult, capacity: int) -> tuple[npt.NDArray[np.int32], list[Verdict]]:
    """Per row: -1 when feasible, else an index into the verdicts returned."""
    out = np.full(capacity, -2, dtype=np.int32)  # -2: no verdict (the cycle failed)
    verdicts: list[Verdict] = []
    outcome = result.filter_outcome
    if outcome is not None and outcome.status.is_success():
        out[outcome.feasible.rows] = -1
    for rej in result.diagnosis.rejections:
        pairs = np.stack([rej.codes.astype(np.uint64), rej.reason_bits.astype(np.uint64)])
        for code, bits in np.unique(pairs, axis=1).T.tolist():
            same = (pairs[0] == code) & (pairs[1] == bits)
            reasons = tuple(r for b, r in enumerate(rej.reasons) if bits >> b & 1)
            out[rej.rows[same]] = len(verdicts)
            verdicts.append(Verdict(rej.plugin, Code(code).title, reasons))
    if outcome is None and result.status.is_rejected():
        # PreFilter (or the profile) refused the pod: every node, for the same reason.
        out[:] = len(verdicts)
        plugin = result.status.plugin or "PreFilter"
        verdicts.append(Verdict(plugin, result.status.code.title, tuple(result.status.reasons)))
    return out, verdicts


def _answer_one(
    rows: _Rows, algorithm: Algorithm, pod: PodInfo, profile: str, templates: list[NodeTemplate]
) -> PodAnswer:
    table = rows.table
    state = algorithm.framework.new_cycle_state()
    state.record_plugin_metrics = False  # what-ifs are not scheduling attempts
    result = algorithm.feasibility(state, pod, table)
    if result.status.code is Code.ERROR:
        return PodAnswer([], profile, [], [], [], error=result.status.message())
    per_row, verdicts = _verdicts(result, table.capacity)
    names = table.names
    answers = []
    for template, t_rows in zip(templates, rows.templates, strict=True):
        got = per_row[t_rows]
        feasible = int(np.count_nonzero(got == -1))
        first = int(got[0]) if len(got) else -1
        rejected = verdicts[first] if feasible == 0 and first >= 0 else None
        answers.append(TemplateAnswer(template.name, template.count, feasible, rejected))
    existing = per_row[rows.existing]
    feasible_nodes = [names[r] for r in rows.existing[existing == -1].tolist()]
    rejected_nodes: list[tuple[Verdict, list[str]]] = []
    for i, verdict in enumerate(verdicts):
        hit = rows.existing[existing == i]
        if len(hit):
            rejected_nodes.append((verdict, [names[r] for r in hit.tolist()]))
    rejected_nodes.sort(key=lambda item: -len(item[1]))
    return PodAnswer([], profile, answers, feasible_nodes, rejected_nodes)


def answer(
    request: WhatIfRequest,
    profiles: Mapping[str, Profile],
    table: NodeTable,
    pods: Sequence[PodInfo],
    *,
    nominator: Nominator | None = None,
    indexed: bool = True,
) -> WhatIfAnswer:
    """Answer ``request`` for ``pods`` against a what-if copy of ``table``.

    ``indexed``: ``pods`` are the request's own list, so errors say
    ``pods[i]``; else they came from the queue and errors name the pod.
    Raises :class:`UserError` for a node to remove that does not exist, a
    template copy whose name is taken, or a pod no profile schedules.
    """
    start = time.perf_counter()
    if request.profile is not None and request.profile not in profiles:
        available = ", ".join(sorted(profiles))
        raise UserError(f"profile: no profile named {request.profile!r} (profiles: {available})")
    chosen = [
        _profile_name(pod, i if indexed else None, request, profiles) for i, pod in enumerate(pods)
    ]
    scenario = ScenarioTable(table)
    for i, name in enumerate(request.remove):
        if not scenario.drop_node(name):
            raise UserError(f"removeNodes[{i}]: no node named {name!r} in the cluster")
    for i, template in enumerate(request.templates):
        for c in range(template.count):
            if template.copy_name(c) in scenario.index:
                raise UserError(
                    f"nodeTemplates[{i}].name: its copy {template.copy_name(c)!r} would "
                    "have the name of a node of the cluster"
                )
    # Pods given with a node (the pods of a node to drain, say) are asked about
    # as if pending: they must not count against themselves.
    for pod in pods:
        if scenario.has_pod(pod.key):
            scenario.remove_pod(pod.key)
    pods = [_as_pending(pod) if pod.node_name else pod for pod in pods]
    rows = _Rows(scenario, request.templates)
    groups: dict[tuple[str, bytes | str], PodAnswer] = {}
    algorithms: dict[str, Algorithm] = {}
    for pod, profile_name in zip(pods, chosen, strict=True):
        signature = pod_signature(pod)
        key = (profile_name, signature if signature is not None else pod.key)
        got = groups.get(key)
        if got is None:
            algorithm = algorithms.get(profile_name)
            if algorithm is None:
                framework = profiles[profile_name].framework
                algorithm = algorithms[profile_name] = Algorithm(framework, nominator=nominator)
            got = groups[key] = _answer_one(rows, algorithm, pod, profile_name, request.templates)
        got.pods.append(pod.key)
    return WhatIfAnswer(
        answers=list(groups.values()),
        pods=len(pods),
        nodes=len(rows.existing),
        template_nodes=sum(t.count for t in request.templates),
        removed=list(request.remove),
        seconds=time.perf_counter() - start,
    )

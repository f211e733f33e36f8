"""Replaying a decision recording (:mod:`.recording`) under the same or another config.

The node table is rebuilt record by record from the recording's deltas, and
each recorded decision is made again with :meth:`Algorithm.schedule` by the
profile it was made by (or the one ``--profile`` names), on exactly the
table the recorded one saw. A decision is *changed* when the replayed
profile would not pick the recorded node (it is not among its best, tied
nodes), or only one of the two places the pod; it is reported with the
plugin that explains it, by the rule shadow profiles use
(:func:`.shadow.explaining_plugin`) against the recorded configuration's
own replay of the decision.

A tie is broken as recorded when the recorded node is among the replayed
tied nodes: the record holds the outcome of the seeded tie-break, so a
replay under the recorded configuration gives every recorded node.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scheduler.config.models import SchedulerConfiguration
from scheduler.engine.shadow import explaining_plugin, node_report
from scheduler.errors import UserError
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.state.nodetable import InvalidNodeError, NodeTable
from scheduler.state.pod import InvalidPodError, PodInfo


@dataclass(slots=True)
class Change:
    """A decision the replayed configuration makes differently."""

    pod: str
    recorded: str | None
    replayed: str | None
    tied: list[str]
    plugin: str
    nodes: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "replayed_tied": list(self.tied),
            "plugin": self.plugin,
            "nodes": self.nodes,
        }


@dataclass(slots=True)
class ReplayReport:
    decisions: int = 0
    reproduced: int = 0
    changes: list[Change] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "decisions": self.decisions,
            "same": self.reproduced,
            "changed": len(self.changes),
            "changes": [c.to_json() for c in self.changes],
            "skipped": list(self.skipped),
        }


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a recording, numbered from 1; a UserError names a bad line."""
    try:
        handle = path.open("rb")
    except OSError as err:
        raise UserError(f"cannot read recording {path}: {err.strerror or err}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                raise UserError(f"{path}:{number}: not a recording line: {err}") from None
            if not isinstance(record, dict) or "kind" not in record:
                raise UserError(f"{path}:{number}: not a recording record (no kind)")
            yield number, record


def recorded_config(path: Path) -> dict[str, Any]:
    for number, record in read_records(path):
        if record["kind"] != "start" or not isinstance(record.get("config"), dict):
            raise UserError(f"{path}:{number}: a recording starts with its configuration")
        config: dict[str, Any] = record["config"]
        return config
    raise UserError(f"{path}: the recording is empty")


class _Replayer:
    def __init__(self, config: SchedulerConfiguration, catalog: PluginCatalog) -> None:
        self.table = NodeTable()
        stores = StaticStores()
        self.profiles: Mapping[str, Profile] = build_profiles(
            config,
            catalog,
            lambda name: FrameworkHandle(name, self.table, store_provider=stores),
        )
        self.algorithms = {
            name: Algorithm(p.framework, seed=0, batching=True) for name, p in self.profiles.items()
        }

    def apply(self, record: Mapping[str, Any], where: str) -> None:
        table = self.table
        for name in record.get("nodes_gone", ()):
            table.remove_node(str(name))
        for raw in record.get("nodes", ()):
            try:
                table.upsert_node(raw)
            except InvalidNodeError as err:
                raise UserError(f"{where}: {err}") from None
        for key in record.get("pods_gone", ()):
            table.remove_pod(str(key))
        for raw in record.get("pods", ()):
            node = raw.get("_node")
            pod = {k: v for k, v in raw.items() if k != "_node"}
            try:
                table.add_pod(PodInfo.from_dict(pod), str(node) if node else None)
            except (InvalidPodError, ValueError) as err:
                raise UserError(f"{where}: {err}") from None

    def decide(
        self, name: str, pod: PodInfo, recorded: str | None, start: int | None = None
    ) -> ScheduleResult:
        """``start``: where the recorded cycle's node sample began (recordings made
        before it was recorded have none: the replay's own rotation then applies)."""
        profile = self.profiles[name]
        algorithm = self.algorithms[name]
        if start is not None:
            algorithm.next_start = start
        state = profile.framework.new_cycle_state()
        result = algorithm.schedule(
            state, pod, self.table, profile.resolved.percentage_of_nodes_to_score
        )
        if recorded is not None and result.node is not None and recorded in result.tied:
            result.node = recorded  # the recorded tie-break
        return result


def _same(result: ScheduleResult, recorded: str | None) -> bool:
    if recorded is None:
        return result.node is None
    return result.node is not None and recorded in result.tied


def replay(
    path: Path,
    catalog: PluginCatalog,
    *,
    config: SchedulerConfiguration,
    recorded: SchedulerConfiguration,
    profile: str | None = None,
) -> ReplayReport:
    """Replay ``path`` under ``config``; ``recorded`` is the recording's own configuration.

    Where ``config`` is another one, the recorded configuration replays each
    decision too, to say which plugin explains a change.
    """
    new = _Replayer(config, catalog)
    old = _Replayer(recorded, catalog) if config is not recorded else None
    if profile is not None and profile not in new.profiles:
        known = ", ".join(sorted(new.profiles))
        raise UserError(f"--profile: no profile named {profile!r} (profiles: {known})")
    report = ReplayReport()
    for number, record in read_records(path):
        where = f"{path}:{number}"
        kind = record["kind"]
        if kind == "start":
            continue
        if kind not in ("snapshot", "decision"):
            raise UserError(f"{where}: unknown record kind {kind!r}")
        for replayer in (new, old):
            if replayer is not None:
                replayer.apply(record, where)
        if kind != "decision":
            continue
        try:
            pod = PodInfo.from_dict(record["pod"])
        except (InvalidPodError, KeyError, TypeError) as err:
            raise UserError(f"{where}: the decision's pod: {err}") from None
        name = profile or str(record.get("profile") or "")
        if name not in new.profiles:
            report.skipped.append(f"{pod.key}: no profile {name!r} in the replayed configuration")
            continue
        report.decisions += 1
        recorded_node = record.get("node")
        start = record.get("sample_start")
        start = start if isinstance(start, int) else None
        result = new.decide(name, pod, recorded_node, start)
        if _same(result, recorded_node):
            report.reproduced += 1
            continue
        report.changes.append(_change(new, old, name, pod, recorded_node, result, start))
    return report


def _change(
    new: _Replayer,
    old: _Replayer | None,
    name: str,
    pod: PodInfo,
    recorded: str | None,
    result: ScheduleResult,
    start: int | None,
) -> Change:
    table = new.table
    r_row = table.row_of(recorded) if recorded is not None else None
    n_row = table.row_of(result.node) if result.node is not None else None
    rows = sorted(r for r in (r_row, n_row) if r is not None)
    filters = [c.plugin for c in new.profiles[name].framework.filter_calls]
    nodes = {table.names[r]: {"replayed": node_report(result, r, filters)} for r in rows}
    plugin = result.status.plugin or "Score"
    if old is not None and name in old.profiles:
        before = old.decide(name, pod, recorded, start)
        plugin = explaining_plugin(before, result, r_row, n_row)
        old_filters = [c.plugin for c in old.profiles[name].framework.filter_calls]
        for r in rows:
            nodes[table.names[r]]["recorded_config"] = node_report(before, r, old_filters)
    elif r_row is not None:
        rejected = [rej.plugin for rej in result.diagnosis.rejections if np.any(rej.rows == r_row)]
        plugin = rejected[0] if rejected else plugin
    return Change(pod.key, recorded, result.node, result.tied, plugin, nodes)

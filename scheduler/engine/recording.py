"""Decision recording: the inputs of every scheduling decision, compactly, to a rotating file.

``run --record FILE`` writes one JSON line per record. A file starts with a
``start`` record (the configuration, so a replay can use the same one) and a
``snapshot`` of every node and bound pod; each decision then carries only
what changed in the node table since the previous record (node objects
added, changed or removed; pods added to or taken off a node) before the
pod, its profile and the node chosen, with every tied node and where the
cycle's node sample started (``percentageOfNodesToScore``). Deltas are found
from the table's row generations, so recording needs no informer hook and
costs a vector compare plus the changed rows per decision.

The tie-break is recorded as the node it picked (the seeded RNG's outcome):
a replay under the same configuration that finds the same tied nodes picks
the same one. What is not recorded: objects other than nodes and bound pods
that plugins read through stores (PVCs, ResourceClaims, PodGroups...), and
the room nominated pods hold; a decision that depended on them can replay
differently.

Rotation: past ``max_bytes`` the file is renamed ``FILE.1`` (older ones move
up to ``FILE.<backups>``, the oldest dropped) and a new file starts with a
new snapshot, so every file replays on its own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import orjson

from scheduler.framework.cycle import ScheduleResult
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_BACKUPS = 3
FORMAT = 1


class DecisionRecorder:
    """Writes decision records for one scheduler (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        config: dict[str, Any],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
    ) -> None:
        self.path = path
        self.config = config
        self.max_bytes = max_bytes
        self.backups = backups
        self._file: IO[bytes] | None = None
        self._size = 0
        self._generation: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._nodes: dict[int, object] = {}  # row -> the ParsedNode last written
        self._names: dict[int, str] = {}
        self._pods: dict[int, frozenset[str]] = {}  # row -> pod keys last written
        self.decisions = 0

    # -- file ---------------------------------------------------------------------

    def _write(self, record: dict[str, Any]) -> None:
        assert self._file is not None
        line = orjson.dumps(record) + b"\n"
        self._file.write(line)
        self._size += len(line)

    def _open(self, table: NodeTable) -> None:
        self._file = self.path.open("wb")
        self._size = 0
        self._generation = np.zeros(0, dtype=np.int64)
        self._nodes, self._names, self._pods = {}, {}, {}
        self._write({"kind": "start", "format": FORMAT, "config": self.config})
        self._write({"kind": "snapshot", **self._delta(table)})

    def _rotate(self) -> None:
        self.close()
        for i in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            newer = self.path if i == 1 else self.path.with_name(f"{self.path.name}.{i - 1}")
            if newer.exists():
                if i == self.backups:
                    older.unlink(missing_ok=True)
                os.replace(newer, older)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    # -- deltas -------------------------------------------------------------------

    def _delta(self, table: NodeTable) -> dict[str, Any]:
        """What changed in ``table`` since the last record (everything, the first time)."""
        size = table.size
        generation = table.generation[:size]
        known = len(self._generation)
        changed = np.flatnonzero(generation[:known] != self._generation[: min(known, size)])
        rows = [*changed.tolist(), *range(known, size)]
        nodes: list[dict[str, Any]] = []
        gone: list[str] = []
        added: list[dict[str, Any]] = []
        removed: list[str] = []
        for row in rows:
            node = table.nodes[row]
            old_name = self._names.get(row)
            if node is None:
                if old_name is not None:
                    gone.append(old_name)
                    del self._names[row]
                    self._nodes.pop(row, None)
                    self._pods.pop(row, None)
                continue
            if old_name is not None and old_name != node.name:
                gone.append(old_name)
                self._pods.pop(row, None)
            last = self._nodes.get(row)
            if last is not node and not (
                isinstance(last, type(node)) and last.same_scheduling_view(node)
            ):
                nodes.append(node.raw)
            self._nodes[row] = node
            self._names[row] = node.name
            pods = table.pods[row]
            before = self._pods.get(row, frozenset())
            now = frozenset(pods)
            if now != before:
                added.extend(pods[k].raw | {"_node": node.name} for k in now - before)
                removed.extend(before - now)
                self._pods[row] = now
        self._generation = generation.copy()
        out: dict[str, Any] = {}
        if nodes:
            out["nodes"] = nodes
        if gone:
            out["nodes_gone"] = gone
        if added:
            out["pods"] = added
        if removed:
            out["pods_gone"] = removed
        return out

    # -- decisions ------------------------------------------------------------------

    def decision(
        self, profile: str, pod: PodInfo, result: ScheduleResult, table: NodeTable
    ) -> None:
        """Record a decision made on ``table`` (before the pod is assumed)."""
        if self._file is None:
            self._open(table)
        elif self._size >= self.max_bytes:
            self._rotate()
            self._open(table)
        delta = self._delta(table)
        self._write(
            {
                "kind": "decision",
                **delta,
                "profile": profile,
                "pod": pod.raw,
                "node": result.node,
                "tied": result.tied if result.node is not None else [],
                "status": result.status.code.title,
                "sample_start": result.sample_start,
            }
        )
        assert self._file is not None
        self._file.flush()
        self.decisions += 1

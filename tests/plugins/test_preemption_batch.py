"""DefaultPreemption's dry run: nominated pods keep their room, and the batched
(many nodes at once) evaluation decides exactly as the node-by-node walk.

kube's SelectVictimsOnNode filters with RunFilterPluginsWithNominatedPods:
pods nominated to the node with a priority at least the preemptor's are
counted as if running (pass 1), then Filter runs again without them (pass 2).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from scheduler.api import Code, CycleState, Status, hookimpl
from scheduler.framework.handle import FrameworkHandle
from scheduler.framework.preemption import Candidate, Evaluator
from scheduler.plugins.defaultpreemption import DefaultPreemption
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.plugins.preemption_kit import (
    HIGH,
    LOW,
    MID,
    VERY_HIGH,
    Cluster,
    FakeClient,
    StaticNominator,
    build_cluster,
    knode,
    kpod,
    pdb,
    snapshot,
    spread_exists,
)

CPU2 = {"cpu": "2", "memory": "2Gi"}
CPU1 = {"cpu": "1", "memory": "1Gi"}


class LabelFilter:
    """Rejects nodes labelled ``reject`` (its value is the code) and errs on ``error=true``."""

    pods_via_requested = True  # reads node labels only

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> Any:
        from scheduler.api import FilterResult

        result = FilterResult(len(nodes))
        labels = [n.labels for n in nodes]
        if any(lab.get("error") == "true" for lab in labels):
            return Status.error_status("label filter broke")
        result.reject([lab.get("reject") == "u" for lab in labels], "node(s) labelled reject")
        result.reject(
            [lab.get("reject") == "uu" for lab in labels],
            "node(s) labelled reject for good",
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        )
        return result


def allow_batching(cluster: Cluster, on: bool = True) -> None:
    """Turn the batched evaluation on; the kit's counting filter takes part (it is node-local)."""
    cluster.plugin.evaluator.dry_run.batching = on
    cluster.counter.pods_via_requested = on


def dry_run(
    cluster: Cluster,
    raw: dict[str, Any],
    offset: int = 0,
    num: int | None = None,
    now_ns: int = 10**18,
) -> tuple[dict[str, tuple[list[str], int]], dict[str, Any], list[str]]:
    plugin = cluster.plugin
    preemptor = cluster.pod(raw)
    state = cluster.pre_filter(preemptor)
    rows = cluster.table.rows()
    before = snapshot(cluster.table)
    requested = cluster.table.requested.copy()
    candidates, statuses, errors = plugin.evaluator.dry_run_preemption(
        state,
        preemptor,
        rows,
        plugin.evaluator.disruption_budgets(),
        offset % max(len(rows), 1),
        len(rows) if num is None else num,
        now_ns,
    )
    assert snapshot(cluster.table) == before
    assert (cluster.table.requested == requested).all()
    return (
        _candidates(candidates),
        {n: (s.code, s.reasons, s.plugin) for n, s in statuses.items()},
        [e.message() for e in errors],
    )


def _candidates(candidates: list[Candidate]) -> dict[str, tuple[list[str], int]]:
    return {c.node: ([v.name for v in c.victims], c.num_pdb_violations) for c in candidates}


# -- nominated pods in the dry run ---------------------------------------------------------


def two_full_nodes() -> Cluster:
    """node1 and node2 (2 cpu each) full of low-priority pods."""
    return build_cluster(
        [knode("node1", CPU2), knode("node2", CPU2)],
        [
            kpod("low1", node="node1", priority=LOW, req=CPU2, start=1),
            kpod("low2", node="node2", priority=LOW, req=CPU2, start=2),
        ],
    )


@pytest.mark.parametrize("batching", [False, True])
@pytest.mark.parametrize("nominee_priority", [HIGH, VERY_HIGH])
def test_room_held_by_an_equal_or_higher_priority_nominee_is_not_a_candidate(
    batching: bool, nominee_priority: int
) -> None:
    cluster = two_full_nodes()
    allow_batching(cluster, batching)
    cluster.nominator.nominate(
        cluster.pod(kpod("nominee", priority=nominee_priority, req=CPU2)), "node1"
    )
    candidates, statuses, errors = dry_run(cluster, kpod("p", priority=HIGH, req=CPU2))
    assert candidates == {"node2": (["low2"], 0)}
    reasons = ("Insufficient cpu", "Insufficient memory")
    assert statuses == {"node1": (Code.UNSCHEDULABLE, reasons, "NodeResourcesFit")}
    assert not errors


@pytest.mark.parametrize("batching", [False, True])
def test_a_lower_priority_nominee_is_ignored(batching: bool) -> None:
    cluster = two_full_nodes()
    allow_batching(cluster, batching)
    cluster.nominator.nominate(cluster.pod(kpod("nominee", priority=MID, req=CPU2)), "node1")
    candidates, _, _ = dry_run(cluster, kpod("p", priority=HIGH, req=CPU2))
    assert candidates == {"node1": (["low1"], 0), "node2": (["low2"], 0)}


@pytest.mark.parametrize("batching", [False, True])
def test_the_preemptors_own_and_already_placed_nominations_are_ignored(batching: bool) -> None:
    cluster = two_full_nodes()
    allow_batching(cluster, batching)
    preemptor = kpod("p", priority=HIGH, req=CPU2, nominated="node1")
    cluster.nominator.nominate(cluster.pod(preemptor), "node1")
    # Assumed on node2 already: its requests are in the table, not counted twice.
    placed = cluster.pod(kpod("placed", priority=VERY_HIGH, req={"cpu": "0"}))
    cluster.table.add_pod(placed, "node2")
    cluster.nominator.nominate(placed, "node2")
    candidates, _, _ = dry_run(cluster, preemptor)
    assert candidates == {"node1": (["low1"], 0), "node2": (["low2"], 0)}


@pytest.mark.parametrize("batching", [False, True])
def test_a_nominee_changes_which_pods_are_reprieved(batching: bool) -> None:
    # node1: 3 cpu full of 1-cpu pods; a 1-cpu nominee takes the room of one reprieve.
    cluster = build_cluster(
        [knode("node1", {"cpu": "3", "memory": "3Gi"})],
        [
            kpod("a", node="node1", priority=LOW, req=CPU1, start=1),
            kpod("b", node="node1", priority=LOW, req=CPU1, start=2),
            kpod("c", node="node1", priority=MID, req=CPU1, start=3),
        ],
    )
    allow_batching(cluster, batching)
    p = kpod("p", priority=HIGH, req=CPU1)
    assert dry_run(cluster, p)[0] == {"node1": (["b"], 0)}
    cluster.nominator.nominate(cluster.pod(kpod("n", priority=HIGH, req=CPU1)), "node1")
    assert dry_run(cluster, p)[0] == {"node1": (["a", "b"], 0)}


def test_pass_two_runs_without_the_nominees() -> None:
    """A nominee the pod would need (here: for its pod affinity) does not make a candidate."""
    cluster = two_full_nodes()
    p = kpod("p", priority=HIGH, req=CPU2)
    p["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                    "topologyKey": "hostname",
                }
            ]
        }
    }
    nominee = kpod("n", priority=HIGH, req={"cpu": "0"}, labels={"foo": ""})
    cluster.nominator.nominate(cluster.pod(nominee), "node2")
    candidates, statuses, _ = dry_run(cluster, p)
    assert candidates == {}, "pass 1 (with the nominee) passes on node2, pass 2 does not"
    assert statuses["node2"][2] == "InterPodAffinity"
    # Were the nominee placed there, node2 would be the candidate.
    cluster.table.add_pod(cluster.pod(nominee), "node2")
    assert dry_run(cluster, p)[0] == {"node2": (["low2"], 0)}


def test_an_add_pod_extension_failure_on_a_nominee_is_an_error() -> None:
    from tests.plugins.preemption_kit import ErroringExtensions

    cluster = build_cluster(
        [{**knode("node1", CPU2), "metadata": {"name": "node1", "labels": {"error": "true"}}}],
        [kpod("low1", node="node1", priority=LOW, req=CPU2)],
        extra=[("Erroring", ErroringExtensions())],
    )
    cluster.nominator.nominate(cluster.pod(kpod("n", priority=HIGH)), "node1")
    candidates, statuses, errors = dry_run(cluster, kpod("p", priority=HIGH, req=CPU2))
    assert candidates == {}
    assert statuses["node1"][0] is Code.ERROR
    assert errors


def test_the_handle_shares_its_nominator_with_the_plugin_copies() -> None:
    handle = FrameworkHandle("p", NodeTable())
    copy = handle.for_plugin("DefaultPreemption")
    assert copy.nominated_pods() == {}
    nominator = StaticNominator()
    nominee = PodInfo.from_dict(kpod("n", priority=HIGH))
    nominator.nominate(nominee, "node1")
    handle.set_nominator(nominator)
    assert copy.nominated_pods() == {"node1": [nominee]}
    handle.set_nominator(None)
    assert copy.nominated_pods() == {}


def test_handles_without_nominations_still_work() -> None:
    class Bare:
        table = NodeTable()

    plugin = DefaultPreemption.__new__(DefaultPreemption)
    evaluator = Evaluator("DefaultPreemption", Bare(), plugin)  # type: ignore[arg-type]
    assert evaluator.nominated_by_node(PodInfo.from_dict(kpod("p"))) == {}


# -- when batching applies -------------------------------------------------------------------


def test_batching_needs_node_local_filters_and_no_extensions() -> None:
    cluster = two_full_nodes()
    plugin = cluster.plugin
    plain = cluster.pre_filter(cluster.pod(kpod("p", priority=HIGH, req=CPU2)))
    assert not plugin.evaluator.dry_run.chunked(plain), (
        "the kit's counting filter is not known to be node-local"
    )
    allow_batching(cluster)
    assert plugin.evaluator.dry_run.chunked(plain)
    spread = kpod("s", priority=HIGH, labels={"foo": ""}, spread=[spread_exists(1, "zone", "foo")])
    assert not plugin.evaluator.dry_run.chunked(cluster.pre_filter(cluster.pod(spread))), (
        "an AddPod extension"
    )


# -- batched == node by node -------------------------------------------------------------------


def random_cluster(rng: random.Random) -> tuple[Cluster, list[dict[str, Any]]]:
    priorities = [LOW, MID, HIGH, VERY_HIGH, -5]
    nodes = []
    for i in range(rng.randint(1, 9)):
        capacity = {
            "cpu": str(rng.choice([1, 2, 3, 4])),
            "memory": f"{rng.choice([1, 2, 4])}Gi",
            "pods": str(rng.choice([2, 3, 4, 32])),
        }
        if rng.random() < 0.3:
            capacity["example.com/gpu"] = str(rng.randint(0, 2))
        raw = knode(f"node{i}", capacity)
        labels = raw["metadata"]["labels"]
        if rng.random() < 0.15:
            labels["reject"] = rng.choice(["u", "uu"])
        if rng.random() < 0.04:
            labels["error"] = "true"
        if rng.random() < 0.1:
            raw["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        nodes.append(raw)
    pods = []
    for i in range(rng.randint(0, 5 * len(nodes))):
        req: dict[str, str] = {
            "cpu": f"{rng.choice([0, 100, 250, 500, 1000])}m",
            "memory": f"{rng.choice([0, 128, 512, 1024])}Mi",
        }
        if rng.random() < 0.2:
            req["example.com/gpu"] = "1"
        pods.append(
            kpod(
                f"pod{i}",
                node=f"node{rng.randrange(len(nodes))}",
                priority=rng.choice(priorities),
                req=req,
                start=rng.choice([None, 1, 2, 3, 4, 5]),
                labels=rng.choice([{}, {"app": "a"}, {"app": "b"}]),
            )
        )
    budgets = []
    if rng.random() < 0.5:
        budgets.append(pdb({"app": "a"}, rng.randint(0, 2), name="a"))
    if rng.random() < 0.3:
        budgets.append(pdb({"app": "b"}, rng.randint(0, 1), name="b"))
    cluster = build_cluster(nodes, pods, pdbs=budgets, extra=[("LabelFilter", LabelFilter())])
    for i in range(rng.choice([0, 0, 1, 3])):
        nominee = kpod(
            f"nominee{i}",
            priority=rng.choice(priorities),
            req={"cpu": f"{rng.choice([100, 500, 1000])}m"},
        )
        cluster.nominator.nominate(cluster.pod(nominee), f"node{rng.randrange(len(nodes))}")
    preemptors = []
    for i in range(3):
        req = {"cpu": f"{rng.choice([0, 200, 500, 1000, 2000, 5000])}m"}
        if rng.random() < 0.2:
            req["example.com/gpu"] = "1"
        preemptors.append(kpod(f"p{i}", priority=rng.choice(priorities), req=req))
    return cluster, preemptors


@pytest.mark.parametrize("seed", range(300))
def test_batched_dry_run_equals_the_node_by_node_walk(seed: int) -> None:
    rng = random.Random(seed)
    cluster, preemptors = random_cluster(rng)
    n = len(cluster.table)
    for raw in preemptors:
        offset = rng.randrange(n)
        num = rng.randint(1, n)
        # Pods not started yet count as started "now": before some started pods, or after all.
        now = rng.choice([10**18, 3 * 10**9])
        allow_batching(cluster, True)
        batched = dry_run(cluster, raw, offset, num, now)
        allow_batching(cluster, False)
        walked = dry_run(cluster, raw, offset, num, now)
        assert batched == walked


def test_a_filter_error_in_a_batch_falls_back_to_node_by_node() -> None:
    cluster = build_cluster(
        [
            {**knode("node1", CPU2), "metadata": {"name": "node1", "labels": {"error": "true"}}},
            knode("node2", CPU2),
        ],
        [
            kpod("low1", node="node1", priority=LOW, req=CPU2),
            kpod("low2", node="node2", priority=LOW, req=CPU2),
        ],
        extra=[("LabelFilter", LabelFilter())],
    )
    allow_batching(cluster)
    candidates, statuses, errors = dry_run(cluster, kpod("p", priority=HIGH, req=CPU2))
    assert candidates == {"node2": (["low2"], 0)}
    assert statuses["node1"][0] is Code.ERROR
    assert errors == ['running "LabelFilter" filter plugin: label filter broke']


# -- eviction order --------------------------------------------------------------------------


async def test_the_pod_stops_preempting_before_its_last_victim_is_deleted() -> None:
    """kube's order: otherwise the victims' deletion events could all be handled while the
    pod still counts as preempting, its retries turned away, and it would wait forever."""
    seen: list[tuple[str, bool]] = []

    class Client(FakeClient):
        async def request(self, method: str, path: str, **kwargs: Any) -> Any:
            if method == "DELETE":
                await asyncio.sleep(0)
                seen.append((path.rsplit("/", 1)[1], cluster.plugin.executor.is_preempting("p")))
            return await super().request(method, path, **kwargs)

    cluster = build_cluster(
        [knode("node1", {"cpu": "3", "memory": "3Gi"})],
        [kpod(f"v{i}", node="node1", priority=LOW, req=CPU1, start=i) for i in range(3)],
        client=Client(),
    )
    preemptor = cluster.pod(kpod("p", priority=HIGH, req={"cpu": "3"}))
    state = cluster.pre_filter(preemptor)
    diagnosis = cluster.diagnosis({"node1": Code.UNSCHEDULABLE})
    result = cluster.framework.run_post_filter(state, preemptor, diagnosis)
    assert result.nominated_node_name == "node1"
    assert cluster.plugin.executor.is_preempting("p")
    await asyncio.gather(*cluster.plugin.executor.background_tasks)
    # Victims are most important first; the least important one goes last.
    assert sorted(seen[:2]) == [("v0", True), ("v1", True)]
    assert seen[2] == ("v2", False)
    assert not cluster.plugin.executor.is_preempting("p")


def test_batched_results_follow_changes_to_the_nodes_pods() -> None:
    """The per-node memo of the batched path is not stale after pods come and go."""
    cluster = two_full_nodes()
    allow_batching(cluster)
    p = kpod("p", priority=HIGH, req=CPU2)
    assert dry_run(cluster, p)[0] == {"node1": (["low1"], 0), "node2": (["low2"], 0)}
    cluster.table.add_pod(cluster.pod(kpod("big", node="node1", priority=VERY_HIGH, req=CPU1)))
    assert dry_run(cluster, p)[0] == {"node2": (["low2"], 0)}
    cluster.table.remove_pod("default/big")
    cluster.table.remove_pod("default/low2")
    cluster.table.add_pod(cluster.pod(kpod("low3", node="node2", priority=LOW, req=CPU1)))
    assert dry_run(cluster, p)[0] == {"node1": (["low1"], 0), "node2": (["low3"], 0)}


# -- what-ifs never touch the live table ------------------------------------------------------


class LiveTableWatcher:
    """A Filter passing every node that records, at each call, what it was shown and
    whether the live table still reads as before the dry run."""

    pods_via_requested = True

    def __init__(self) -> None:
        self.live: NodeTable | None = None
        self.before: Any = None
        self.before_generation: Any = None
        self.shown_live = 0
        self.live_changed = 0
        self.calls = 0

    @hookimpl
    def filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
        if self.live is None:
            return
        self.calls += 1
        self.shown_live += nodes.table is self.live
        self.live_changed += snapshot(self.live) != self.before
        self.live_changed += bool((self.live.generation != self.before_generation).any())


@pytest.mark.parametrize("batching", [False, True])
@pytest.mark.parametrize("spread", [False, True])
def test_the_dry_run_works_on_a_copy_and_never_edits_the_live_table(
    batching: bool, spread: bool
) -> None:
    """Chunked, node by node, and node by node with PreFilter extensions (spread)."""
    watcher = LiveTableWatcher()
    cluster = build_cluster(
        [knode("node1/z1", CPU2), knode("node2/z2", CPU2), knode("node3/z1", CPU2)],
        [
            kpod("low1", node="node1", priority=LOW, req=CPU1, start=1, labels={"foo": ""}),
            kpod("low2", node="node1", priority=LOW, req=CPU1, start=2),
            kpod("low3", node="node2", priority=LOW, req=CPU2, start=3, labels={"foo": ""}),
            kpod("mid", node="node3", priority=MID, req=CPU2, start=4),
        ],
        extra=[("Watcher", watcher)],
    )
    allow_batching(cluster, batching)
    cluster.nominator.nominate(cluster.pod(kpod("nominee", priority=VERY_HIGH, req=CPU1)), "node3")
    constraints = [spread_exists(1, "zone", "foo")] if spread else []
    raw = kpod("p", priority=HIGH, req=CPU2, labels={"foo": ""}, spread=constraints)
    watcher.live = cluster.table
    watcher.before = snapshot(cluster.table)
    watcher.before_generation = cluster.table.generation.copy()
    order_before = [list(p) for p in cluster.table.pods]
    candidates, statuses, errors = dry_run(cluster, raw)
    assert errors == []
    assert sorted(candidates) == ["node1", "node2"], statuses
    assert watcher.calls > 0
    assert watcher.shown_live == 0, "Filter saw the live table in a what-if"
    assert watcher.live_changed == 0, "the live table changed during the dry run"
    assert [list(p) for p in cluster.table.pods] == order_before, "pod order kept"

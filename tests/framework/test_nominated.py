"""Pods nominated by a preemption keep the room they freed (RunFilterPluginsWithNominatedPods)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from scheduler.api import CycleState
from scheduler.framework.cycle import Algorithm
from scheduler.framework.nominated import Failures, filter_with_nominated
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from scheduler.state.whatif import WhatIfTable
from tests.framework.helpers import handle, make_framework, node, pod, table_of
from tests.framework.test_batching import _templates, default_profile, random_node, replica


class StaticNominator:
    def __init__(self, nominated: Mapping[str, list[PodInfo]]) -> None:
        self._nominated = dict(nominated)

    def nominated_pods(self) -> Mapping[str, list[PodInfo]]:
        return self._nominated


def setup(nominee_priority: int):
    table = table_of(node("n1", cpu="4"), node("n2", cpu="4"))
    table.add_pod(pod("busy", cpu="1", nodeName="n2"))
    fit = NodeResourcesFit(NodeResourcesFit.Args.model_validate({}), handle(table))
    framework = make_framework([("NodeResourcesFit", fit)])
    nominee = pod("preemptor", cpu="3", priority=nominee_priority)
    return table, framework, {"n1": [nominee]}


def test_higher_priority_nominee_keeps_its_room() -> None:
    table, framework, nominated = setup(nominee_priority=100)
    algorithm = Algorithm(framework, seed=0, nominator=StaticNominator(nominated))
    result = algorithm.schedule(CycleState(), pod("newcomer", cpu="2"), table)
    assert result.node == "n2"
    verdict = result.diagnosis.node_verdicts["n1"]
    assert verdict.reasons == ["Insufficient cpu"]
    assert not table.has_pod("default/preemptor"), "the nominee was only added for the check"
    assert int(table.requested[table.row_of("n1"), 0]) == 0


def test_lower_priority_nominee_is_ignored() -> None:
    table, framework, nominated = setup(nominee_priority=-5)
    algorithm = Algorithm(framework, seed=0, nominator=StaticNominator(nominated))
    result = algorithm.schedule(CycleState(), pod("newcomer", cpu="2"), table)
    assert result.filter_outcome is not None
    assert sorted(result.filter_outcome.feasible.names) == ["n1", "n2"]


def test_the_nominee_itself_is_not_blocked_by_its_own_nomination() -> None:
    table, framework, nominated = setup(nominee_priority=100)
    algorithm = Algorithm(framework, seed=0, nominator=StaticNominator(nominated))
    nominee = nominated["n1"][0]
    result = algorithm.schedule(CycleState(), nominee, table)
    assert result.filter_outcome is not None
    assert "n1" in result.filter_outcome.feasible.names


def verdicts(failures: Failures) -> dict[int, tuple[Any, ...]]:
    out: dict[int, tuple[Any, ...]] = {}
    for row in failures.rows():
        status = failures.status(row)
        assert status is not None
        out[row] = (status.code, status.reasons, status.plugin)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_nominated_check_at_once_equals_node_by_node(seed: int) -> None:
    """One Filter run over every loaded node decides as one run per node."""
    rng = random.Random(seed)
    table = NodeTable()
    for i in range(25):
        table.upsert_node(random_node(rng, i))
    framework = default_profile(table).framework
    templates = [t for t in _templates() if not t["spec"]["containers"][0].get("ports")]
    names = list(table.index)
    for i in range(40):
        table.add_pod(replica(rng.choice(templates), f"placed-{i}"), rng.choice(names))
    loads: dict[int, list[PodInfo]] = {}
    for name in rng.sample(names, 12):
        loads[table.index[name]] = [
            replica(rng.choice(templates), f"nominee-{name}-{j}") for j in range(rng.randint(1, 3))
        ]
    rows = np.fromiter(loads, dtype=np.int64, count=len(loads))
    requested = table.requested.copy()
    compared = 0
    for k, template in enumerate(templates):
        incoming = replica(template, f"incoming-{k}")
        state = framework.new_cycle_state()
        framework.run_pre_filter(state, incoming, table.all_nodes())
        assert framework.filters_read_requested_only(state)
        whatif = WhatIfTable(table)
        at_once = filter_with_nominated(framework, state, incoming, whatif, rows, loads)
        one = Failures()
        for i in range(len(rows)):
            one.update(
                filter_with_nominated(framework, state, incoming, whatif, rows[i : i + 1], loads)
            )
        assert verdicts(at_once) == verdicts(one), template["spec"]
        compared += len(one.rows())
        assert (table.requested == requested).all()
        assert (whatif.requested == requested).all(), "the what-if is left as it was given"
    assert compared > 0, "some nominee must have been in the way"


def test_host_ports_make_the_check_node_by_node() -> None:
    """NodePorts reads the ports on a node, not ``requested``: no one-run shortcut."""
    table = table_of(node("n1"))
    framework = default_profile(table).framework
    incoming = pod(
        "web", containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]
    )
    state = framework.new_cycle_state()
    framework.run_pre_filter(state, incoming, table.all_nodes())
    assert not framework.filters_read_requested_only(state)


def test_the_nominated_node_shortcut_counts_other_nominees() -> None:
    """A nominee retried on its nominated node leaves room a higher-priority nominee holds."""
    table = table_of(node("n1", cpu="4"), node("n2", cpu="4"))
    fit = NodeResourcesFit(NodeResourcesFit.Args.model_validate({}), handle(table))
    framework = make_framework([("NodeResourcesFit", fit)])
    high = pod("high", cpu="3", priority=100)
    low = pod("low", cpu="2", priority=10)
    low_nominated = PodInfo.from_dict({**low.raw, "status": {"nominatedNodeName": "n1"}})
    nominator = StaticNominator({"n1": [high, low_nominated]})
    algorithm = Algorithm(framework, seed=0, nominator=nominator)
    result = algorithm.schedule(CycleState(), low_nominated, table)
    assert result.node == "n2", "n1's room is held by the higher-priority nominee"

"""Pods nominated by a preemption keep the room they freed (RunFilterPluginsWithNominatedPods)."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api import CycleState, PodInfo
from scheduler.framework.cycle import Algorithm
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from tests.framework.helpers import handle, make_framework, node, pod, table_of


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

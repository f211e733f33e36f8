"""The fidelity harness's own logic, without a control plane: probes, parsing, scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.tools.controlplane import RestClient
from tests.fidelity.harness import (
    KubeSide,
    availability,
    bound_counts,
    claim_names,
    last_cycle_scores,
    nominate_probe,
    pin_probe,
    plain_copy,
    probe_kind,
)
from tests.fidelity.scenarios import (
    SAMPLING_NODES,
    SAMPLING_PODS,
    SAMPLING_SCENARIOS,
    SCENARIOS,
    VOLUME_SCENARIOS,
    ZONE,
    pod,
    spread,
    term,
    with_claims,
    with_ephemeral,
)

pytestmark = pytest.mark.fidelity

LOG = """\
I1121 13:35:25.359645   19111 schedule_one.go:982] "Plugin scored node for pod" \
pod="ns/web-1" plugin="TaintToleration" node="n-7" score=300
I1121 13:35:25.359657   19111 schedule_one.go:982] "Plugin scored node for pod" \
pod="ns/web-1" plugin="NodeResourcesFit" node="n-7" score=74
I1121 13:35:25.359700   19111 schedule_one.go:982] "Plugin scored node for pod" \
pod="ns/web-10" plugin="NodeResourcesFit" node="n-7" score=1
I1121 13:35:25.359765   19111 schedule_one.go:1050] "Calculated node's final score for pod" \
pod="ns/web-1" node="n-7" score=374
"""


def test_scores_are_parsed_per_pod_from_kube_scheduler_log(tmp_path: Path) -> None:
    log = tmp_path / "kube-scheduler.log"
    log.write_text(LOG)
    kube = KubeSide(RestClient("http://127.0.0.1:1"), log)
    per_node, totals = kube.scores("ns/web-1")
    assert per_node == {"n-7": {"TaintToleration": 300, "NodeResourcesFit": 74}}
    assert totals == {"n-7": 374}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "0/5 nodes are available: 5 Insufficient example.com/gpu. no new claims to "
            "deallocate, preemption: 0/5 nodes are available: 5 No preemption victims found.",
            "0/5 nodes are available: 5 Insufficient example.com/gpu.",
        ),
        (
            "0/3 nodes are available: 1 Too many pods, 2 Insufficient cpu.",
            "0/3 nodes are available: 1 Too many pods, 2 Insufficient cpu.",
        ),
    ],
)
def test_availability_keeps_only_the_filter_sentence(message: str, expected: str) -> None:
    assert availability(message) == expected


def test_pin_is_anded_into_every_required_term() -> None:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [term(ZONE, "In", "a")]},
            {"matchFields": [term("metadata.name", "NotIn", "x")]},
        ]
    }
    base = pod(
        "p",
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    )
    probe = pin_probe(base, "n1", "p-pin-0")
    terms = probe["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    pin = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    assert terms[0] == {"matchExpressions": [term(ZONE, "In", "a")], "matchFields": [pin]}
    assert terms[1]["matchFields"] == [term("metadata.name", "NotIn", "x"), pin]
    assert "matchFields" not in required["nodeSelectorTerms"][0]  # the base is untouched


def test_probes_drop_gates_and_binding() -> None:
    base = pod("p", on="n9", schedulingGates=[{"name": "g"}])
    copy = plain_copy(base, "q")
    assert copy["metadata"]["name"] == "q"
    assert "schedulingGates" not in copy["spec"] and "nodeName" not in copy["spec"]
    assert nominate_probe(base, "n1", "q")["status"] == {"nominatedNodeName": "n1"}


def test_probe_kind() -> None:
    assert probe_kind(pod("p")) == ("pin", True)
    anti_term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti_term]}}
    assert probe_kind(pod("p", affinity=anti)) == ("pin", False)
    spreading = [spread(ZONE, "DoNotSchedule", {"app": "web"})]
    assert probe_kind(pod("p", topologySpreadConstraints=spreading)) == ("nominate", False)


def test_scenario_library_shape() -> None:
    assert 10 <= len(SCENARIOS) <= 20
    names = [s.name for s in SCENARIOS]
    assert len(set(names)) == len(names)
    nodes = [
        n["metadata"]["name"]
        for s in [*SCENARIOS, *VOLUME_SCENARIOS, *SAMPLING_SCENARIOS]
        for n in s.nodes
    ]
    assert len(set(nodes)) == len(nodes), "node names are unique across scenarios"
    for scenario in SCENARIOS:
        names_here = {n["metadata"]["name"] for n in scenario.nodes}
        for existing in scenario.existing:
            assert existing["spec"]["nodeName"] in names_here, existing["metadata"]["name"]
        for step in scenario.steps:
            assert "nodeName" not in step.pod["spec"]


def test_last_cycle_scores_ignore_earlier_attempts() -> None:
    attempt = (
        'I1121 13:35:25.3 1 schedule_one.go:100] "Attempting to schedule pod" pod="ns/web-1"\n'
    )
    text = attempt + LOG + attempt + LOG.replace('node="n-7"', 'node="n-8"')
    per_node, totals = last_cycle_scores(text, "ns/web-1")
    assert per_node == {"n-8": {"TaintToleration": 300, "NodeResourcesFit": 74}}
    assert totals == {"n-8": 374}


def test_claim_names_of_a_volume_pod() -> None:
    assert claim_names(with_claims("p", "a", "b")) == ["a", "b"]
    assert claim_names(with_ephemeral("p", "1Gi", "sc")) == ["p-scratch"]


def test_volume_scenarios_use_unique_storage_names() -> None:
    cluster = [
        (o["kind"], o["metadata"]["name"])
        for s in VOLUME_SCENARIOS
        for o in s.storage
        if o["kind"] not in ("PersistentVolumeClaim", "CSIStorageCapacity")
    ]
    assert len(set(cluster)) == len(cluster)


def test_bound_counts_are_the_last_bind_line_of_the_pod() -> None:
    log = (
        'I1125 00:00:57.1 1 schedule_one.go:330] "Successfully bound pod to node" '
        'pod="ns/p-1" node="n-2" evaluatedNodes=230 feasibleNodes=230\n'
        'I1125 00:00:57.2 1 schedule_one.go:330] "Successfully bound pod to node" '
        'pod="ns/p-10" node="n-3" evaluatedNodes=1 feasibleNodes=1\n'
    )
    assert bound_counts(log, "ns/p-1") == (230, 230)
    assert bound_counts(log, "ns/p-2") is None


def test_sampling_scenario_has_one_best_node_per_pod() -> None:
    """Each pod's preferred node affinity matches exactly one node, so the best node
    is unique, and the nodes are named in creation order (kube's node order)."""
    (scenario,) = SAMPLING_SCENARIOS
    names = [n["metadata"]["name"] for n in scenario.nodes]
    assert len(names) == SAMPLING_NODES and names == sorted(names)
    assert len(scenario.steps) == 2 * SAMPLING_PODS
    for step in scenario.steps:
        preferred = step.pod["spec"]["affinity"]["nodeAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        (expression,) = preferred[0]["preference"]["matchExpressions"]
        matching = [
            n
            for n in scenario.nodes
            if n["metadata"]["labels"].get(expression["key"]) in expression["values"]
        ]
        assert len(matching) == 1, step.pod["metadata"]["name"]

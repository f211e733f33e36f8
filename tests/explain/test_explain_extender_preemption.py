"""An extender's ``preemptVerb`` in preemption (kube's ``callExtenders``), through ``explain``.

The cluster: node ``a`` holds two victims (priority 3 and 1, 1 CPU each),
node ``b`` one (priority 2, 2 CPU), node ``c`` one (priority 2, 2 CPU, a
later node). The preemptor (priority 100) needs 2 CPU: every node is a
candidate. kube's choice among them prefers the lowest highest-priority
victim, so ``b`` or ``c`` (2 < 3) wins without an extender; an extender that
spares ``a``'s priority-3 victim makes ``a`` the best (1 < 2).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, load_config
from scheduler.framework.explain import Explanation, explain
from scheduler.framework.loader import PluginCatalog
from scheduler.testing.extender import ThreadedExtender, ToyExtender
from scheduler.testing.objects import make_node, make_pod


def victim(name: str, node: str, priority: int, cpu: str) -> dict[str, Any]:
    pod = make_pod(name, cpu=cpu, node_name=node, priority=priority)
    pod["metadata"]["uid"] = f"uid-{name}"
    return pod


def cluster() -> list[dict[str, Any]]:
    return [
        make_node("a", cpu="2"),
        make_node("b", cpu="2"),
        make_node("c", cpu="2"),
        victim("a-high", "a", 3, "1"),
        victim("a-low", "a", 1, "1"),
        victim("b-mid", "b", 2, "2"),
        victim("c-mid", "c", 2, "2"),
    ]


def preemptor() -> dict[str, Any]:
    pod = make_pod("big", cpu="2", priority=100)
    pod["metadata"]["uid"] = "uid-big"
    return pod


def config(url: str, **fields: Any) -> Any:
    ext = {"urlPrefix": url, "preemptVerb": "preempt", **fields}
    return load_config({"apiVersion": API_VERSION, "kind": KIND, "extenders": [ext]})


def run(toy: ToyExtender, **fields: Any) -> tuple[Explanation, str]:
    with ThreadedExtender(toy) as ext:
        got = explain(cluster(), preemptor(), config(ext.url, **fields), PluginCatalog.discover())
    return got, ext.url


def nominated(got: Explanation) -> str | None:
    assert got.post_filter is not None and got.post_filter.ran
    return got.post_filter.nominated_node


def test_without_narrowing_the_extender_sees_every_candidate_and_kube_picks() -> None:
    toy = ToyExtender()
    got, _ = run(toy, nodeCacheCapable=True)
    assert nominated(got) in {"b", "c"}
    [(verb, body)] = toy.calls
    assert verb == "preempt"
    assert body["NodeNameToVictims"] is None
    assert body["Pod"]["metadata"]["name"] == "big"
    # nodeCacheCapable: MetaVictims, the victims' UIDs, most important first.
    assert body["NodeNameToMetaVictims"] == {
        "a": {"Pods": [{"UID": "uid-a-high"}, {"UID": "uid-a-low"}], "NumPDBViolations": 0},
        "b": {"Pods": [{"UID": "uid-b-mid"}], "NumPDBViolations": 0},
        "c": {"Pods": [{"UID": "uid-c-mid"}], "NumPDBViolations": 0},
    }


def test_narrowed_victims_change_the_choice() -> None:
    toy = ToyExtender(spare={"uid-a-high"})
    got, _ = run(toy, nodeCacheCapable=True)
    assert nominated(got) == "a"


def test_dropped_nodes_are_no_candidates_and_full_victims_are_sent() -> None:
    toy = ToyExtender(drop_nodes={"b"}, spare={"a-low", "a-high"})
    got, _ = run(toy)
    assert nominated(got) == "c"
    [(_, body)] = toy.calls
    assert body["NodeNameToMetaVictims"] is None
    sent = body["NodeNameToVictims"]
    assert sorted(sent) == ["a", "b", "c"]
    assert [p["metadata"]["name"] for p in sent["a"]["Pods"]] == ["a-high", "a-low"]
    assert sent["b"]["Pods"][0]["spec"]["nodeName"] == "b"


def test_no_candidate_left() -> None:
    toy = ToyExtender(drop_nodes={"a", "b", "c"})
    got, _ = run(toy)
    assert nominated(got) is None
    assert got.post_filter is not None
    assert got.post_filter.message == "preemption: no candidate node for preemption"
    assert got.post_filter.code is not None and got.post_filter.code.name == "UNSCHEDULABLE"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "nope"}]}}},
            "extender: {url} claims to preempt pod (UID: &{{nope}}) on node: a, but the pod is "
            "not found on that node",
        ),
        (
            {"NodeNameToMetaVictims": {"zz": {"Pods": [{"UID": "uid-a-low"}]}}},
            'nodeinfo not found for node name "zz"',
        ),
        (
            {"NodeNameToMetaVictims": {"a": {"Pods": []}}},
            'expected at least one victim pod on node "a"',
        ),
        (
            {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": 5}]}}},
            "extender {url} answered preempt with an invalid ExtenderPreemptionResult: "
            "NodeNameToMetaVictims[a].Pods[0].UID: expected a string",
        ),
    ],
)
def test_a_bad_answer_fails_the_preemption_unless_ignorable(answer: Any, error: str) -> None:
    got, url = run(ToyExtender(preempt_answer=answer))
    assert got.post_filter is not None
    assert got.post_filter.code is not None and got.post_filter.code.name == "ERROR"
    assert got.post_filter.message == "preemption: " + error.format(url=url)
    assert nominated(got) is None
    # kube's FitError carries PostFilter's error message too.
    assert got.message.endswith(" preemption: " + error.format(url=url))
    lenient, _ = run(ToyExtender(preempt_answer=answer), ignorable=True)
    if "expected at least one victim" in error:
        # Ignorable: kube drops that node; none is left.
        assert lenient.post_filter is not None
        assert lenient.post_filter.message == "preemption: no candidate node for preemption"
    else:
        assert nominated(lenient) in {"b", "c"}


def test_an_unreachable_extender_fails_the_preemption_unless_ignorable() -> None:
    toy = ToyExtender(mode="error")
    got, url = run(toy)
    assert got.post_filter is not None
    assert got.post_filter.message == (
        f"preemption: failed preempt with extender at URL {url}/preempt, code 500"
    )
    assert nominated(got) is None
    lenient, _ = run(ToyExtender(mode="error"), ignorable=True)
    assert nominated(lenient) in {"b", "c"}


def test_a_pod_the_extender_does_not_manage_is_preempted_without_it() -> None:
    toy = ToyExtender(drop_nodes={"a", "b", "c"})
    got, _ = run(toy, managedResources=[{"name": "example.com/vgpu"}])
    assert nominated(got) in {"b", "c"}
    assert toy.calls == []

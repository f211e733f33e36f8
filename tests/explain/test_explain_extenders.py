"""``explain`` with HTTP extenders: their verdicts and scores per node, like a plugin's."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, load_config
from scheduler.framework.explain import explain
from scheduler.framework.loader import PluginCatalog
from scheduler.testing.extender import ThreadedExtender, ToyExtender
from scheduler.testing.objects import make_node


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
        },
    }


def nodes() -> list[dict[str, Any]]:
    return [
        make_node("a", labels={"ok": "true", "extender-score": "3"}),
        make_node("b", labels={"ok": "true", "extender-score": "9"}),
        make_node("c", labels={"extender-score": "10"}),
        make_node("d", labels={"ok": "true"}),
    ]


def config(url: str, **fields: Any) -> Any:
    ext = {"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 2}
    return load_config({"apiVersion": API_VERSION, "kind": KIND, "extenders": [{**ext, **fields}]})


def test_each_extenders_verdict_and_score_per_node() -> None:
    toy = ToyExtender(require_label="ok", unresolvable={"d": "node(s) have no vGPU"})
    with ThreadedExtender(toy) as ext:
        result = explain(nodes(), pod(), config(ext.url), PluginCatalog.discover())
    name = ext.url
    assert result.node == "b"
    assert result.filter_plugins[-1] == name
    assert [(s.name, s.weight) for s in result.score_plugins][-1] == (name, 2)
    b, a, c, d = (result.nodes[n] for n in "bacd")
    # kube's finalscore = score * weight * (MaxNodeScore / MaxExtenderPriority)
    assert (b.score[name].raw, b.score[name].weighted) == (9, 9 * 2 * 10)
    assert (a.score[name].raw, a.score[name].weighted) == (3, 3 * 2 * 10)
    assert b.total - b.score[name].weighted == sum(
        s.weighted for p, s in b.score.items() if p != name
    )
    assert b.filter[name].code.name == "SUCCESS"
    assert (c.rejected_by, c.filter[name].reasons) == (
        name,
        ["node(s) refused by the toy extender"],
    )
    assert c.filter[name].code.name == "UNSCHEDULABLE"
    assert d.filter[name].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert d.filter[name].reasons == ["node(s) have no vGPU"]
    # Every Filter plugin passed (or skipped) it before the extender saw it.
    assert list(c.filter) == result.filter_plugins
    assert all(v.code.name in ("SUCCESS", "SKIP") for p, v in c.filter.items() if p != name)
    assert [verb for verb, _ in toy.calls] == ["filter", "prioritize"]


def test_an_ignorable_extender_that_fails_is_noted_and_skipped() -> None:
    toy = ToyExtender(mode="error")
    with ThreadedExtender(toy) as ext:
        result = explain(nodes(), pod(), config(ext.url, ignorable=True), PluginCatalog.discover())
    assert result.node is not None
    assert any(
        n.startswith(f"extender {ext.url} failed and is ignorable: skipped (failed filter")
        for n in result.notes
    )


def test_a_failing_extender_is_the_message() -> None:
    toy = ToyExtender(mode="error")
    with ThreadedExtender(toy) as ext:
        result = explain(nodes(), pod(), config(ext.url), PluginCatalog.discover())
    assert result.node is None
    assert result.message == f"failed filter with extender at URL {ext.url}/filter, code 500"


@pytest.mark.parametrize(
    ("nominated", "chosen", "filtered"),
    [("a", "a", [["a"]]), ("c", "b", [["c"], ["a", "b", "c", "d"]])],
)
def test_a_nominated_node_is_tried_first_through_the_extenders(
    nominated: str, chosen: str, filtered: list[list[str]]
) -> None:
    """kube's evaluateNominatedNode: the nominated node alone, plugins then extenders."""
    toy = ToyExtender(require_label="ok")
    waiting = {**pod(), "status": {"nominatedNodeName": nominated}}
    with ThreadedExtender(toy) as ext:
        result = explain(nodes(), waiting, config(ext.url), PluginCatalog.discover())
    assert result.node == chosen
    sent = [
        sorted(n["metadata"]["name"] for n in body["Nodes"]["items"])
        for verb, body in toy.calls
        if verb == "filter"
    ]
    assert sent == filtered


@pytest.mark.parametrize(("percentage", "sent"), [(None, 230), (100, 500), (20, 100)])
def test_extenders_get_the_node_lists_kube_samples(percentage: int | None, sent: int) -> None:
    """percentageOfNodesToScore unset: a cycle with extenders samples with kube's adaptive
    rule (46% of 500 nodes), though without extenders it would score all 500."""
    many = [make_node(f"n-{i:03}", labels={"ok": "true"}) for i in range(500)]
    toy = ToyExtender()
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "extenders": [{"urlPrefix": "", "filterVerb": "filter", "nodeCacheCapable": True}],
    }
    if percentage is not None:
        doc["percentageOfNodesToScore"] = percentage
    with ThreadedExtender(toy) as ext:
        doc["extenders"][0]["urlPrefix"] = ext.url
        result = explain(many, pod(), load_config(doc), PluginCatalog.discover())
    assert result.node is not None and result.feasible_nodes == sent
    [(verb, body)] = toy.calls
    assert verb == "filter" and len(body["NodeNames"]) == sent
    if percentage is None:
        plain = explain(
            many,
            pod(),
            load_config({"apiVersion": API_VERSION, "kind": KIND}),
            PluginCatalog.discover(),
        )
        assert plain.feasible_nodes == 500

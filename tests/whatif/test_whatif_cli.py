"""``pluggable-scheduler whatif`` over the example cluster file, and the request's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli.main import main
from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.errors import UserError
from scheduler.framework.explain import build_table
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import build_profiles
from scheduler.framework.whatif import answer, parse_request
from scheduler.simulation.emulator.clusterfile import load_cluster_file
from scheduler.state.pod import PodInfo

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "small-cluster.yaml"

BIG = {"status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}
TINY = {"status": {"allocatable": {"cpu": "100m", "memory": "1Gi", "pods": "110"}}}
REQUEST: dict[str, Any] = {
    "nodeTemplates": [
        {"name": "big", "count": 2, "node": BIG},
        {"name": "tiny", "node": TINY},
    ],
    "removeNodes": ["node-a1"],
}


def run_json(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: Any) -> dict[str, Any]:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    code = main(
        ["whatif", "--cluster", str(CLUSTER), "--request", str(request), "--output", "json"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return data


def by_first_pod(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["pods"][0]: a for a in data["answers"]}


def test_pending_pods_against_templates_and_a_removed_node(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = run_json(capsys, tmp_path, REQUEST)
    assert data["summary"] == {
        "pods": 7,
        "answers": 4,  # web-1..3 and cache-1..2 are each answered once
        "nodes": 3,
        "templateNodes": 3,
        "removedNodes": ["node-a1"],
        "seconds": data["summary"]["seconds"],
    }
    answers = by_first_pod(data)
    assert answers["shop/web-1"]["pods"] == ["shop/web-1", "shop/web-2", "shop/web-3"]
    huge = answers["ml/huge-batch"]
    assert huge["nodes"]["feasible"] == []
    big, tiny = huge["templates"]
    assert big == {"name": "big", "fits": True, "feasibleCopies": 2}
    assert tiny["fits"] is False and tiny["plugin"] == "NodeResourcesFit"
    assert "Insufficient cpu" in tiny["reasons"]
    trainer = answers["ml/trainer"]
    assert trainer["nodes"]["feasible"] == ["gpu-1"]
    assert {t["plugin"] for t in trainer["templates"]} == {"NodeAffinity"}
    # The removed node is gone from every answer.
    for item in data["answers"]:
        names = item["nodes"]["feasible"] + [
            n for group in item["nodes"]["rejected"] for n in group["nodes"]
        ]
        assert "node-a1" not in names


def test_without_templates_the_answer_matches_explain(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No template: the feasible nodes are explain's feasible nodes for the same pod."""
    data = run_json(capsys, tmp_path, {"pods": ["ml/huge-batch", "shop/web-1"]})
    answers = by_first_pod(data)
    for key in ("ml/huge-batch", "shop/web-1"):
        pod_file = tmp_path / "pod.json"
        raw = next(
            o
            for o in load_cluster_file(CLUSTER)
            if o.get("kind") == "Pod"
            and f"{o['metadata']['namespace']}/{o['metadata']['name']}" == key
        )
        pod_file.write_text(json.dumps(raw))
        assert (
            main(["explain", "--cluster", str(CLUSTER), "--pod", str(pod_file), "--output", "json"])
            == 0
        )
        explained = json.loads(capsys.readouterr().out)
        assert sorted(answers[key]["nodes"]["feasible"]) == sorted(explained["feasible"])
        for group in answers[key]["nodes"]["rejected"]:
            for node in group["nodes"]:
                assert explained["nodes"][node]["rejected_by"] == group["plugin"]


def test_text_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    request = tmp_path / "request.yaml"
    request.write_text(json.dumps(REQUEST))
    assert main(["whatif", "--cluster", str(CLUSTER), "--request", str(request)]) == 0
    out = capsys.readouterr().out
    assert "template big: fits (2 of 2 copies)" in out
    assert "template tiny: no - NodeResourcesFit: Insufficient cpu" in out
    assert out.rstrip().splitlines()[-1].startswith("7/7 pods fit somewhere (4 distinct pods")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"nodeTemplate": []}, "request: unknown field 'nodeTemplate'"),
        ({"nodeTemplates": [{"name": "x", "count": 0, "node": BIG}]}, "nodeTemplates[0].count"),
        ({"nodeTemplates": [{"name": "X_y", "node": BIG}]}, "nodeTemplates[0].name: 'X_y'"),
        ({"nodeTemplates": [{"name": "x"}]}, "nodeTemplates[0].node: required"),
        (
            {
                "nodeTemplates": [
                    {"name": "x", "node": {"status": {"allocatable": {"cpu": "lots"}}}}
                ]
            },
            "nodeTemplates[0].node: ",
        ),
        (
            {"nodeTemplates": [{"name": "x", "node": BIG}, {"name": "x", "node": BIG}]},
            "nodeTemplates[1].name: 'x' is also nodeTemplates[0]'s name",
        ),
        ({"removeNodes": [3]}, "removeNodes[0]: must be a node name"),
        ({"removeNodes": ["nope"]}, "removeNodes[0]: no node named 'nope'"),
        ({"pods": ["nope"]}, "pods[0]: 'nope': a pod reference is namespace/name"),
        ({"pods": ["shop/nope"]}, "pods[0]: no pod 'shop/nope'"),
        ({"pods": [{"kind": "Pod", "metadata": {"name": "p"}}]}, "pods[0].spec: required"),
        (
            {"pods": [{"metadata": {"name": "p"}, "spec": {"schedulerName": "other"}}]},
            "pods[0].spec.schedulerName: 'other' is not a profile",
        ),
        ({"profile": "nope"}, "profile: no profile named 'nope'"),
        (
            {"nodeTemplates": [{"name": "gpu", "count": 2, "node": BIG}]},
            "nodeTemplates[0].name: its copy 'gpu-1'",
        ),
    ],
)
def test_bad_requests_name_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: Any, expected: str
) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    code = main(["whatif", "--cluster", str(CLUSTER), "--request", str(request)])
    err = capsys.readouterr().err
    assert code == 1
    assert expected in err, err
    assert "Traceback" not in err


def test_the_live_table_is_never_touched() -> None:
    objects = load_cluster_file(CLUSTER)
    table, _ = build_table(objects)
    stores = StaticStores(objects)
    profiles = build_profiles(
        load_config(DEFAULT_CONFIG),
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=stores),
    )
    before = (
        list(table.index),
        table.node_epoch,
        table.requested.copy(),
        list(table.resources),
        table.taint_matrix.shape,
    )
    pending = [
        PodInfo.from_dict(o)
        for o in objects
        if o.get("kind") == "Pod" and not o["spec"].get("nodeName")
    ]
    request = parse_request(
        {
            **REQUEST,
            "nodeTemplates": [
                *REQUEST["nodeTemplates"],
                {
                    "name": "odd",
                    "count": 100,  # more rows than the table has room for: it grows
                    "node": {
                        "spec": {"taints": [{"key": "new", "effect": "NoSchedule"}]},
                        "status": {"allocatable": {"cpu": "1", "example.com/fpga": "2"}},
                    },
                },
            ],
        }
    )
    got = answer(request, profiles, table, pending)
    assert got.template_nodes == 103
    assert (list(table.index), table.node_epoch, list(table.resources)) == (
        before[0],
        before[1],
        before[3],
    )
    assert (table.requested == before[2]).all() and table.taint_matrix.shape == before[4]
    with pytest.raises(UserError, match="removeNodes"):
        answer(parse_request({"removeNodes": ["gone"]}), profiles, table, pending)

"""``bench decision``: the HeteroBasic workload and the percentage and clock options."""

from __future__ import annotations

import pytest

from scheduler.tools.bench.decision import WORKLOADS, build, main, run_pods


def test_hetero_pods_are_all_different() -> None:
    pods = [WORKLOADS["HeteroBasic"](f"pod-{i}", "sched-1", None) for i in range(200)]
    sizes = {(p.requests["cpu"], p.requests["memory"]) for p in pods}
    assert len({tuple(sorted(p.labels.items())) for p in pods}) == 200
    assert len(sizes) > 150  # neighbours differ; a few sizes repeat over 200 pods


def test_an_explicit_percentage_samples_and_unset_filters_every_node() -> None:
    setup = build(300, 10, WORKLOADS["HeteroBasic"])
    pods = [WORKLOADS["HeteroBasic"](f"pod-{i}", "sched-1", None) for i in range(3)]
    assert len(run_pods(setup, pods, percentage=40)) == 3
    assert setup.algorithm.next_start != 0  # 120 of 300 nodes found per pod
    start = setup.algorithm.next_start
    more = [WORKLOADS["HeteroBasic"](f"pod-{i}", "sched-1", None) for i in range(3, 6)]
    run_pods(setup, more, percentage=None)
    assert setup.algorithm.next_start == start  # every node: the start stays


def test_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--nodes", "200", "--init-pods", "10", "--pods", "5", "--workload", "HeteroBasic"]
    assert main([*argv, "--batching", "off", "--percentage", "30", "--clock", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "percentageOfNodesToScore 30, cpu time" in out
    assert "HeteroBasic" in out
    with pytest.raises(SystemExit):
        main([*argv, "--percentage", "101"])
    assert "--percentage must be profile, unset or 0..100, not '101'" in capsys.readouterr().err

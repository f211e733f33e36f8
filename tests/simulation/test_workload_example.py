"""examples/workload-cluster.yaml: the Workload API gang example, as `simulate` runs it.

The command line in the example's header (``--feature-gates``) is what this test
runs, through the same option parsing and the same ``simulate``; GangScheduling
comes from the catalog of installed plugins (given here as a class, so the test
does not depend on which entry points the environment's metadata has).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scheduler.cli.common import load_config_option
from scheduler.plugins.gangscheduling import GROUP_UNSCHEDULABLE, GangScheduling
from scheduler.simulation.emulator.clusterfile import load_cluster_file
from scheduler.simulation.simulate import simulate
from scheduler.testing.harness import build_catalog

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workload-cluster.yaml"


async def test_the_example_binds_the_gang_that_fits_and_nothing_of_the_others() -> None:
    assert "--feature-gates GenericWorkload=true,GangScheduling=true" in EXAMPLE.read_text()
    args = argparse.Namespace(config=None, feature_gates="GenericWorkload=true,GangScheduling=true")
    config = load_config_option(args)
    catalog = build_catalog({"GangScheduling": GangScheduling})
    result = await simulate(list(load_cluster_file(EXAMPLE)), config, catalog)
    placed = {p.pod: p for p in result.placements}
    workers = [f"ml/worker-{i}" for i in range(4)]
    assert all(placed[w].node for w in workers), placed
    big = [f"ml/big-{i}" for i in range(3)]
    assert not any(placed[b].node for b in big)
    reasons = sorted(placed[b].reason for b in big)
    assert reasons[1:] == [GROUP_UNSCHEDULABLE, GROUP_UNSCHEDULABLE]
    assert reasons[0].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    for name in ("ml/eval-0", "ml/eval-1"):
        assert placed[name].node is None
        assert placed[name].reason == (
            "not tried: held at PreEnqueue by GangScheduling: "
            "waiting for minCount pods from a gang to appear in scheduling queue"
        )


async def test_without_the_gates_the_gangs_are_ordinary_pods() -> None:
    args = argparse.Namespace(config=None, feature_gates="")
    config = load_config_option(args)
    catalog = build_catalog({"GangScheduling": GangScheduling})
    result = await simulate(list(load_cluster_file(EXAMPLE)), config, catalog)
    placed = {p.pod: p.node for p in result.placements}
    # No gang: two big pods and both eval pods get a node, a partial "gang".
    assert sum(1 for i in range(3) if placed[f"ml/big-{i}"]) == 2
    assert placed["ml/eval-0"] and placed["ml/eval-1"]

"""Our placement against kube-scheduler 1.36's, scenario by scenario (see harness.py).

For each pod of each scenario: our feasible set (``explain``) equals the one
kube-scheduler's probes reveal, and equals our own probes'; kube-scheduler's
chosen node is among our tied best; its per-plugin weighted scores equal ours;
a pod that fits nowhere gets the same "0/N nodes are available: ..." counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.testing.controlplane import KUBE_SCHEDULER, run_kube_scheduler, start_control_plane
from tests.fidelity.harness import KubeSide, OurSide, run_step
from tests.fidelity.scenarios import SCENARIOS, Scenario

pytestmark = pytest.mark.fidelity


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KubeSide, OurSide]]:
    """One control plane and one kube-scheduler for every scenario of the session."""
    workdir: Path = tmp_path_factory.mktemp("kube-scheduler")
    with start_control_plane() as plane:
        kubeconfig = plane.write_user_kubeconfig(KUBE_SCHEDULER.name)
        # schedule_one.go logs every plugin's weighted score per node at -v=10.
        with run_kube_scheduler(
            kubeconfig, workdir=workdir, extra_args=["--vmodule=schedule_one=10"]
        ) as scheduler:
            yield KubeSide(plane.client(), scheduler.log_path), OurSide()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_placement_matches_kube_scheduler(
    sides: tuple[KubeSide, OurSide], scenario: Scenario
) -> None:
    kube, ours = sides
    namespace = f"fid-{scenario.name}"
    kube.load(scenario, namespace)
    failures: list[str] = []
    for index, step in enumerate(scenario.steps):
        report = run_step(kube, ours, scenario, namespace, index, step)
        print(
            f"{scenario.name}/{report.pod} [{report.probe_kind}]: "
            f"feasible kube={sorted(report.kube_feasible)} ours={sorted(report.our_feasible)}; "
            f"kube chose {report.kube_node}, our tied {report.our_tied}"
        )
        if report.problems:
            failures.append("\n".join([f"{report.pod}:", *report.problems, *report.details]))
    assert not failures, f"{scenario.name}: {scenario.description}\n" + "\n\n".join(failures)

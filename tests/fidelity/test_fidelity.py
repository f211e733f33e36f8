"""Our placement against kube-scheduler 1.36's, scenario by scenario (see harness.py).

For each pod of each scenario: our feasible set (``explain``) equals the one
kube-scheduler's probes reveal, and equals our own probes'; kube-scheduler's
chosen node is among our tied best; its per-plugin weighted scores equal ours;
a pod that fits nowhere gets the same "0/N nodes are available: ..." counts.

Volume scenarios (``VOLUME_SCENARIOS``) run with kube-controller-manager's
PersistentVolume binder and ephemeral-volume controllers next to kube-scheduler
(started for them only; they act on PVs, PVCs and pods with ephemeral volumes,
so the other scenarios would not notice them either). They are compared
without probes, because a pinned probe that fits binds, and so uses up, the
PV or claim it was meant to test (``harness.run_volume_step``):

- feasible set: kube-scheduler's own cycle for the pod at ``-v=10`` scores
  every feasible node (fewer than 100 nodes: no sampling), so the nodes it
  scored in its last attempt are its feasible set, and when it scored none
  exactly one node was feasible, the chosen one. That must equal our
  ``explain``'s feasible set; its node must be among our tied best, its scores
  equal ours (VolumeBinding itself does not score by default).
- a pod that fits nowhere: kube's FailedScheduling "0/N nodes are available:
  ..." sentence (the reason per node, counted) must equal ours.
- writes: the PV ``claimRef`` (namespace/name/uid) plus ``bound-by-controller``
  annotation, and the claims' ``selected-node`` annotation, that kube-scheduler
  wrote (the API before and after its binding) must equal what our
  VolumeBinding's Reserve assumes for the same pod on kube's node (one cycle of
  our default profile pinned to that node), which is what our PreBind writes.

A WaitForFirstConsumer claim of a provisioner gets its PV from the harness's
``TestProvisioner`` (as external-provisioner would create it), so the PV
controller binds it and kube-scheduler's PreBind completes.

DRA scenarios (``DRA_SCENARIOS``) run with kube-controller-manager's
ResourceClaim controller (it makes template pods' claims and releases claims of
deleted pods). They are probed like the others, but each kube-side probe gets
its own copies of the pod's claims (``harness.run_dra_step``). Besides the
feasible sets, scores and FailedScheduling sentence, the ``status.allocation``
kube-scheduler wrote for each claim of a pod it bound (devices: request,
driver, pool, device; node selector) must equal what our DynamicResources found
for that node.

Sampling scenarios (``SAMPLING_SCENARIOS``) have hundreds of nodes, where
``percentageOfNodesToScore`` matters: kube-scheduler (``PROFILES``: its
default profile, and one with the percentage set) and our ``explain`` run the
same profiles. They are compared without probes (every node is feasible for
every pod; ``harness.run_sampling_step``): kube's sample size and scores must
agree with ours, its node must be a best one of its own sample, and how often
it is not among our tied best is printed (the figure in docs/configuration.md,
percentageOfNodesToScore).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.tools.controlplane import (
    DRA_CONTROLLERS,
    KUBE_SCHEDULER,
    ControlPlane,
    run_kube_scheduler,
    start_control_plane,
)
from tests.fidelity.harness import (
    PROFILES,
    KubeSide,
    OurSide,
    SamplingReport,
    StepReport,
    run_dra_step,
    run_sampling_step,
    run_step,
    run_volume_step,
)
from tests.fidelity.scenarios import (
    DRA_SCENARIOS,
    SAMPLING_SCENARIOS,
    SCENARIOS,
    VOLUME_SCENARIOS,
    Scenario,
)

pytestmark = pytest.mark.fidelity


@pytest.fixture(scope="module")
def plane_and_sides(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ControlPlane, KubeSide, OurSide]]:
    """One control plane and one kube-scheduler for every scenario of the session."""
    workdir: Path = tmp_path_factory.mktemp("kube-scheduler")
    with start_control_plane() as plane:
        kubeconfig = plane.write_user_kubeconfig(KUBE_SCHEDULER.name)
        # schedule_one.go logs every plugin's weighted score per node at -v=10.
        with run_kube_scheduler(
            kubeconfig,
            {"profiles": PROFILES},
            workdir=workdir,
            extra_args=["--vmodule=schedule_one=10"],
        ) as scheduler:
            yield plane, KubeSide(plane.client(), scheduler.log_path), OurSide()


@pytest.fixture(scope="module")
def sides(
    plane_and_sides: tuple[ControlPlane, KubeSide, OurSide],
) -> tuple[KubeSide, OurSide]:
    _, kube, ours = plane_and_sides
    return kube, ours


@pytest.fixture(scope="module")
def volume_sides(
    plane_and_sides: tuple[ControlPlane, KubeSide, OurSide],
) -> Iterator[tuple[KubeSide, OurSide]]:
    """The same sides with kube-controller-manager's volume controllers running too
    (the claim binder resyncs every second instead of 15, so a pre-bound PV
    created after its claim binds without a long wait)."""
    plane, kube, ours = plane_and_sides
    with plane.run_controller_manager(extra_args=["--pvclaimbinder-sync-period=1s"]):
        yield kube, ours


@pytest.fixture(scope="module")
def dra_sides(
    plane_and_sides: tuple[ControlPlane, KubeSide, OurSide],
) -> Iterator[tuple[KubeSide, OurSide]]:
    """The same sides with kube-controller-manager's ResourceClaim controller running."""
    plane, kube, ours = plane_and_sides
    with plane.run_controller_manager(DRA_CONTROLLERS):
        yield kube, ours


def _print(scenario: Scenario, report: StepReport) -> None:
    print(
        f"{scenario.name}/{report.pod} [{report.probe_kind}]: "
        f"feasible kube={sorted(report.kube_feasible)} ours={sorted(report.our_feasible)}; "
        f"kube chose {report.kube_node}, our tied {report.our_tied}"
    )


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
        _print(scenario, report)
        if report.problems:
            failures.append("\n".join([f"{report.pod}:", *report.problems, *report.details]))
    assert not failures, f"{scenario.name}: {scenario.description}\n" + "\n\n".join(failures)


@pytest.mark.parametrize("scenario", VOLUME_SCENARIOS, ids=[s.name for s in VOLUME_SCENARIOS])
def test_volume_placement_matches_kube_scheduler(
    volume_sides: tuple[KubeSide, OurSide], scenario: Scenario
) -> None:
    kube, ours = volume_sides
    namespace = f"fid-{scenario.name}"
    kube.load(scenario, namespace)
    failures: list[str] = []
    for step in scenario.steps:
        report = run_volume_step(kube, ours, scenario, namespace, step)
        _print(scenario, report)
        for line in report.details:
            print(line)
        if report.problems:
            failures.append("\n".join([f"{report.pod}:", *report.problems, *report.details]))
    assert not failures, f"{scenario.name}: {scenario.description}\n" + "\n\n".join(failures)


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(
            s,
            id=s.name,
            marks=[pytest.mark.xfail(strict=True, reason=s.known_difference)]
            if s.known_difference
            else [],
        )
        for s in DRA_SCENARIOS
    ],
)
def test_dra_placement_matches_kube_scheduler(
    dra_sides: tuple[KubeSide, OurSide], scenario: Scenario
) -> None:
    kube, ours = dra_sides
    namespace = f"fid-{scenario.name}"
    kube.load(scenario, namespace)
    failures: list[str] = []
    for step in scenario.steps:
        report = run_dra_step(kube, ours, scenario, namespace, step)
        _print(scenario, report)
        for line in report.details:
            print(line)
        if report.problems:
            failures.append("\n".join([f"{report.pod}:", *report.problems, *report.details]))
    assert not failures, f"{scenario.name}: {scenario.description}\n" + "\n\n".join(failures)


def _print_sampling(scenario: Scenario, report: SamplingReport) -> None:
    kube_evaluated = "?" if report.kube_evaluated is None else report.kube_evaluated
    print(
        f"{scenario.name}/{report.pod} [{report.profile}, "
        f"percentageOfNodesToScore={report.percentage or 'unset'}]: "
        f"kube evaluated {kube_evaluated}, scored {len(report.kube_scored)}, chose "
        f"{report.kube_node} (its sample had our best: {report.kube_sample_had_best}); "
        f"we evaluated {report.our_evaluated}, scored {len(report.our_scored)} "
        f"({len(report.our_scored & report.kube_scored)} of them in kube's sample), "
        f"tied best {report.our_tied[:3]}{'...' if len(report.our_tied) > 3 else ''}; "
        f"kube's node among our tied best: {report.kube_picked_our_best}"
    )


@pytest.mark.parametrize("scenario", SAMPLING_SCENARIOS, ids=[s.name for s in SAMPLING_SCENARIOS])
def test_sampling_matches_kube_scheduler(
    sides: tuple[KubeSide, OurSide], scenario: Scenario
) -> None:
    """With percentageOfNodesToScore unset, kube's adaptive sample sometimes lacks the
    one best node, which we (scoring every node) always find; with it set on both
    sides, both score as many nodes (but from different starts: ours from the
    first node in each ``explain``, kube's from where its previous cycle stopped)."""
    kube, ours = sides
    namespace = f"fid-{scenario.name}"
    kube.load(scenario, namespace)
    failures: list[str] = []
    reports = []
    for step in scenario.steps:
        report = run_sampling_step(kube, ours, scenario, namespace, step)
        _print_sampling(scenario, report)
        reports.append(report)
        if report.problems:
            failures.append("\n".join([f"{report.pod}:", *report.problems]))
    for profile in dict.fromkeys(r.profile for r in reports):
        mine = [r for r in reports if r.profile == profile]
        missed = sum(not r.kube_picked_our_best for r in mine)
        print(
            f"{scenario.name} [{profile}]: kube-scheduler's node was not among our tied "
            f"best for {missed} of {len(mine)} pods"
        )
    adaptive = [r for r in reports if r.percentage == 0]
    if adaptive and not any(not r.kube_picked_our_best for r in adaptive):
        failures.append(
            "kube-scheduler's adaptive sample never missed the best node: the scenario no "
            "longer shows the difference docs/configuration.md states"
        )
    assert not failures, f"{scenario.name}: {scenario.description}\n" + "\n\n".join(failures)

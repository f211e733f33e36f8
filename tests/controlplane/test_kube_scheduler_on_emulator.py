"""kube-scheduler against our emulator: the strongest check of its fidelity to client-go.

An unmodified kube-scheduler lists and watches a dozen collections through
client-go informers, refuses to become ready until all of them have synced,
binds through the ``binding`` subresource, patches ``PodScheduled`` conditions
with strategic merge patches and reports through ``events.k8s.io/v1``. The
scenario and the expected outcome are exactly those of the real-apiserver test
in ``test_kube_scheduler.py``: where the emulator disagrees, the emulator is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from scheduler.simulation.emulator import EmulatorServer
from scheduler.tools.controlplane import RestClient, ensure_binaries, run_kube_scheduler

if TYPE_CHECKING:
    from conftest import SpreadScenario


@pytest.fixture
def own_emulator() -> Iterator[EmulatorServer]:
    """A fresh emulator rather than the session one: kube-scheduler must see only this
    test's nodes and pods, whatever other tests left behind, and whatever --backend is."""
    server = EmulatorServer(cluster_objects=None, port=0)
    server.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


def test_kube_scheduler_schedules_pods_on_the_emulator(
    own_emulator: EmulatorServer, spread_scenario: SpreadScenario, tmp_path: Path
) -> None:
    bin_dir = ensure_binaries()  # before the scenario, so a cold build does not age it
    kubeconfig = tmp_path / "emulator.kubeconfig"
    own_emulator.write_kubeconfig(kubeconfig)
    client = RestClient(own_emulator.url)
    spread_scenario.create(client)
    # --v=6 logs every request with its status: on failure, the log tail names the
    # request the emulator answered wrongly.
    with run_kube_scheduler(
        kubeconfig, workdir=tmp_path, bin_dir=bin_dir, verbosity=6, ready_timeout=60
    ) as scheduler:
        try:
            pods = spread_scenario.wait_for_outcome(client)
            spread_scenario.check(pods)
            spread_scenario.wait_for_events(client)
        except AssertionError as error:
            failed = "\n  ".join(scheduler.failed_requests()) or "none"
            raise AssertionError(
                f"{error}\nrequests the emulator answered with an error:\n  {failed}\n"
                f"kube-scheduler log:\n{scheduler.log_tail()}"
            ) from None
        assert scheduler.running(), scheduler.log_tail()

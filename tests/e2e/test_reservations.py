"""Reservations end to end: Koordinator's CRD, the Reservation contrib plugin, the real daemon.

On both backends: reservations are placed on nodes and hold their room,
their owners consume them and other pods do not, an expired one is released
and the pod that waited for its room is then bound; every pod bound once.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import yaml
from scheduler_plugin_reservation import crd_manifest

from scheduler.kube.apierrors import Conflict, NotFound
from tests.e2e.conftest import Cluster, StartDaemon, scheduler_config, wait_until

RESERVATIONS = "/apis/scheduling.koordinator.sh/v1alpha1/reservations"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def install_crd(cluster: Cluster) -> None:
    """Koordinator's CRD as shipped (cluster-wide: created once per API server)."""
    with contextlib.suppress(Conflict):
        await cluster.client.request("POST", CRD, body=yaml.safe_load(crd_manifest()))

    async def served() -> bool:
        try:
            await cluster.client.list(RESERVATIONS)
        except NotFound:
            return False
        return True

    await wait_until(served, within=30, message="the Reservation CRD to be served", every=0.2)


def reservation(cluster: Cluster, short: str, *, cpu: str, owner_label: str, ttl: str) -> Any:
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": f"{cluster.namespace}-{short}"},
        "spec": {
            "template": {
                "metadata": {"namespace": cluster.namespace},
                "spec": {
                    "schedulerName": cluster.scheduler_name,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu}},
                        }
                    ],
                },
            },
            "owners": [{"labelSelector": {"matchLabels": {"app": owner_label}}}],
            "ttl": ttl,
        },
    }


async def status_of(cluster: Cluster, name: str) -> dict[str, Any]:
    got = await cluster.client.get(f"{RESERVATIONS}/{name}")
    assert isinstance(got, dict)
    return dict(got.get("status") or {})


async def wait_phase(cluster: Cluster, name: str, phase: str, within: float) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        seen.update(await status_of(cluster, name))
        return seen.get("phase") == phase

    await wait_until(reached, within=within, message=f"{name} to be {phase}", every=0.1)
    return seen


async def test_reservations_are_placed_consumed_by_owners_and_expire(
    cluster: Cluster, start_daemon: StartDaemon
) -> None:
    await install_crd(cluster)
    n1 = await cluster.create_node("n1", cpu="2")
    n2 = await cluster.create_node("n2", cpu="2")
    points = ("filter", "score", "reserve", "postBind")
    profile = {
        "schedulerName": cluster.scheduler_name,
        "plugins": {p: {"enabled": [{"name": "Reservation"}]} for p in points},
        "pluginConfig": [{"name": "Reservation", "args": {"syncIntervalSeconds": 0.2}}],
    }
    await start_daemon(scheduler_config([profile]))
    owner_label = f"owner-{cluster.namespace}"
    kept = reservation(cluster, "kept", cpu="1500m", owner_label=owner_label, ttl="1h")
    brief = reservation(cluster, "brief", cpu="1500m", owner_label="nobody", ttl="6s")
    names = [kept["metadata"]["name"], brief["metadata"]["name"]]
    try:
        for body in (kept, brief):
            await cluster.client.request("POST", RESERVATIONS, body=body)
        placed = [await wait_phase(cluster, name, "Available", 15) for name in names]
        # Placed like pods: each reservation's 1.5 cpu fits only where the other is not.
        assert {s["nodeName"] for s in placed} == {n1, n2}
        assert placed[0]["allocatable"] == {"cpu": "1500m"}
        kept_node = placed[0]["nodeName"]
        brief_node = placed[1]["nodeName"]

        # A pod that is not an owner finds 0.5 cpu free on each node: it waits.
        await cluster.create_pod("stranger", cpu="1500m")
        await cluster.wait_event("stranger", "FailedScheduling", within=15)
        # The owner fits in its reservation and goes there.
        owner = await cluster.create_pod("owner", cpu="1", labels={"app": owner_label})
        bound = await cluster.wait_bound(["owner"], within=15)
        assert bound == {"owner": kept_node}
        consumed = await wait_phase(cluster, names[0], "Succeeded", 15)
        assert consumed["currentOwners"][0]["uid"] == owner["metadata"]["uid"]
        assert consumed["allocated"] == {"cpu": "1000m"}  # the reserved resources only
        ready = [c for c in consumed["conditions"] if c["type"] == "Ready"]
        assert ready[0]["reason"] == "Succeeded"
        assert (await cluster.placements())["stranger"] == ""

        # The brief one expires; its room goes to the stranger that waited for it.
        expired = await wait_phase(cluster, names[1], "Failed", 20)
        ready = [c for c in expired["conditions"] if c["type"] == "Ready"]
        assert (ready[0]["status"], ready[0]["reason"]) == ("False", "Expired")
        assert await cluster.wait_bound(["stranger"], within=20) == {"stranger": brief_node}
        await cluster.assert_bound_exactly_once(["owner", "stranger"])
    finally:
        for name in names:
            with contextlib.suppress(NotFound):
                await cluster.client.request("DELETE", f"{RESERVATIONS}/{name}")
        await asyncio.sleep(0)

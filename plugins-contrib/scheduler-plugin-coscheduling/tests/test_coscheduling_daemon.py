"""Gang scheduling end to end: the real daemon, the emulator over HTTP, Coscheduling enabled."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from coscheduling_harness import (
    GangCluster,
    gang_cluster,
    make_node,
    make_pod,
    make_podgroup,
)


async def _all_released(cluster: GangCluster, baseline: dict[str, dict[str, int]]) -> bool:
    """Nothing waits at Permit, nothing is assumed, the NodeTable is back to ``baseline``."""
    return not cluster.waiting() and not cluster.assumed() and cluster.usage() == baseline


async def test_gang_without_room_stays_pending_then_binds_together(tmp_path: Path) -> None:
    nodes = [make_node(f"node-{i}", cpu="1") for i in range(3)]
    async with gang_cluster(tmp_path, nodes=nodes) as cluster:
        baseline = cluster.usage()
        names = [f"gang-{i}" for i in range(4)]
        await cluster.create(make_podgroup("gang", 4))
        for name in names:
            await cluster.create(make_pod(name, group="gang", cpu="1"))

        # Three members fit and were held at Permit with their resources reserved;
        # the fourth fit nowhere, so PostFilter released all three at once.
        async def three_released() -> bool:
            messages = [await cluster.condition_message(n) for n in names]
            return any("released 3 waiting member(s)" in m for m in messages)

        await cluster.eventually(three_released, "the fourth member to release three")
        messages = {n: await cluster.condition_message(n) for n in names}
        rejected = [n for n, m in messages.items() if "PodGroup default/gang rejected" in m]
        assert len(rejected) == 4, messages
        failing = [n for n, m in messages.items() if "0/3 nodes are available" in m]
        assert len(failing) == 1, messages
        assert "Insufficient cpu" in messages[failing[0]]

        # Entirely pending: the reservations are gone and the table is as before.
        await cluster.eventually(
            lambda: _all_released(cluster, baseline), "the gang's reservations to be released"
        )
        await asyncio.sleep(1.5)  # further attempts of the gang fail the same way
        assert await cluster.bound(names) == dict.fromkeys(names, "")
        binds = cluster.server.request_log.find(verb="create", resource="pods")
        assert not [r for r in binds if r.path.endswith("/binding")]

        # Room for the fourth: all four are bound, each on its own node.
        await cluster.create(make_node("node-3", cpu="1"))

        async def all_bound() -> bool:
            return all((await cluster.bound(names)).values())

        await cluster.eventually(all_bound, "all four members to be bound")
        placement = await cluster.bound(names)
        assert sorted(placement.values()) == ["node-0", "node-1", "node-2", "node-3"]
        records = list(cluster.server.request_log)
        node_created = max(
            i for i, r in enumerate(records) if r.method == "POST" and r.path == "/api/v1/nodes"
        )
        bindings = [i for i, r in enumerate(records) if r.path.endswith("/binding")]
        assert len(bindings) == 4
        assert min(bindings) > node_created
        assert all(records[i].status == 201 for i in bindings)

        # PostBind reported the group's progress on the PodGroup.
        async def reported() -> bool:
            status = (await cluster.podgroup("gang")).get("status") or {}
            return status.get("phase") == "Scheduled" and status.get("scheduled") == 4

        await cluster.eventually(reported, "PodGroup status phase Scheduled, scheduled 4")
        status = (await cluster.podgroup("gang"))["status"]
        assert status["scheduleStartTime"]


async def test_permit_timeout_unreserves_the_whole_group(tmp_path: Path) -> None:
    nodes = [make_node(f"node-{i}", cpu="1") for i in range(3)]
    async with gang_cluster(tmp_path, nodes=nodes) as cluster:
        baseline = cluster.usage()
        await cluster.create(make_podgroup("slow", 3, timeout=1))
        # The third member exists (so the quorum count passes PreFilter) but is
        # gated: it never reaches Permit, so the two others time out there.
        await cluster.create(make_pod("slow-0", group="slow"))
        await cluster.create(make_pod("slow-1", group="slow"))
        await cluster.create(make_pod("slow-2", group="slow", gates=["example.com/hold"]))

        async def both_waiting() -> bool:
            return cluster.waiting() == ["slow-0", "slow-1"]

        await cluster.eventually(both_waiting, "two members waiting at Permit")
        assert cluster.assumed() == ["slow-0", "slow-1"]
        assert cluster.usage() != baseline

        async def timed_out() -> bool:
            messages = [await cluster.condition_message(n) for n in ("slow-0", "slow-1")]
            return any("timeout" in m for m in messages) and all(messages)

        await cluster.eventually(timed_out, "the Permit timeout to reject the group")
        messages = [await cluster.condition_message(n) for n in ("slow-0", "slow-1")]
        assert all("Coscheduling" in m or "PodGroup default/slow" in m for m in messages)
        await cluster.eventually(
            lambda: _all_released(cluster, baseline), "the timed-out members to be unreserved"
        )
        assert await cluster.bound(["slow-0", "slow-1", "slow-2"]) == dict.fromkeys(
            ["slow-0", "slow-1", "slow-2"], ""
        )

        # Lift the gate: the third member completes the gang and all three bind.
        await cluster.client.request(
            "PATCH",
            "/api/v1/namespaces/default/pods/slow-2",
            body={"spec": {"schedulingGates": None}},
            content_type="application/merge-patch+json",
        )

        async def all_bound() -> bool:
            return all((await cluster.bound(["slow-0", "slow-1", "slow-2"])).values())

        await cluster.eventually(all_bound, "the completed gang to be bound")


async def test_prefilter_rejects_group_below_quorum_until_member_arrives(tmp_path: Path) -> None:
    nodes = [make_node(f"node-{i}", cpu="2") for i in range(2)]
    async with gang_cluster(tmp_path, nodes=nodes) as cluster:
        await cluster.create(make_podgroup("trio", 3))
        await cluster.create(make_pod("trio-0", group="trio"))
        await cluster.create(make_pod("trio-1", group="trio"))

        # Each was rejected with the count of members that existed at its attempt;
        # PostFilter plugins then add their verdicts (they run after a PreFilter
        # rejection too, as in kube-scheduler).
        quorum = re.compile(
            r"0/2 nodes are available: PodGroup default/trio has [12] pod\(s\), "
            r"fewer than its minMember 3: waiting for more members before scheduling any\."
            r"( .*)?"
        )

        async def rejected() -> bool:
            messages = [await cluster.condition_message(n) for n in ("trio-0", "trio-1")]
            return all(quorum.fullmatch(m) for m in messages)

        await cluster.eventually(rejected, "PreFilter's quorum rejection")
        assert not cluster.assumed()  # rejected before any node was even considered

        # The third member arrives: its Pod event requeues the two, all three bind.
        await cluster.create(make_pod("trio-2", group="trio"))

        async def all_bound() -> bool:
            return all((await cluster.bound(["trio-0", "trio-1", "trio-2"])).values())

        await cluster.eventually(all_bound, "the trio to be bound")


async def test_pods_outside_groups_are_scheduled_as_usual(tmp_path: Path) -> None:
    async with gang_cluster(tmp_path, nodes=[make_node("node-0", cpu="2")]) as cluster:
        await cluster.create(make_pod("solo"))

        async def bound() -> bool:
            return await cluster.node_of("solo") == "node-0"

        await cluster.eventually(bound, "a pod without a PodGroup to be bound")


async def test_works_with_the_shipped_crd_manifest(tmp_path: Path) -> None:
    nodes = [make_node(f"node-{i}", cpu="1") for i in range(2)]
    async with gang_cluster(tmp_path, nodes=nodes, install_crd=True) as cluster:
        await cluster.create(make_podgroup("pair", 2, timeout=30))
        await cluster.create(make_pod("pair-0", group="pair"))
        await cluster.create(make_pod("pair-1", group="pair"))

        async def all_bound() -> bool:
            return all((await cluster.bound(["pair-0", "pair-1"])).values())

        await cluster.eventually(all_bound, "the pair to be bound")

        async def reported() -> bool:
            status = (await cluster.podgroup("pair")).get("status") or {}
            return status.get("phase") == "Scheduled" and status.get("scheduled") == 2

        await cluster.eventually(reported, "the pair's PodGroup status")

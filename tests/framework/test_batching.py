"""Batching identical pods must decide exactly as full cycles do.

Two Algorithms over the default profile, one with the batching cache and
one without, each over its own copy of a random cluster, see the same
sequence of pods and cluster changes; every decision (node, tied set,
status) must be equal, and the cache must actually have been used.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.config import load_config
from scheduler.config.loading import DEFAULT_CONFIG
from scheduler.framework.batching import pod_signature
from scheduler.framework.cycle import Algorithm, ScheduleResult
from scheduler.framework.handle import FrameworkHandle, StaticStores
from scheduler.framework.loader import PluginCatalog
from scheduler.framework.profile import Profile, build_profiles
from scheduler.state.nodetable import NodeTable
from scheduler.state.pod import PodInfo
from tests.plugins.builders import container, make_node, make_pod

ZONES = ("a", "b", "c")
IMAGES = ("img/one:1", "img/two:2")


def random_node(rng: random.Random, i: int) -> dict[str, Any]:
    taints = []
    if rng.random() < 0.2:
        taints.append({"key": "soft", "value": "x", "effect": "PreferNoSchedule"})
    if rng.random() < 0.1:
        taints.append({"key": "hard", "value": "x", "effect": "NoSchedule"})
    sizes = (50 * 2**20, 300 * 2**20, 900 * 2**20)
    images = [([img], rng.choice(sizes)) for img in IMAGES if rng.random() < 0.3]
    return make_node(
        f"node-{i}",
        cpu=rng.choice(("2", "4", "8")),
        memory=rng.choice(("4Gi", "16Gi")),
        pods=rng.choice((3, 10, 110)),
        labels={
            "kubernetes.io/hostname": f"node-{i}",
            "topology.kubernetes.io/zone": rng.choice(ZONES),
            "tier": rng.choice(("gold", "silver")),
        },
        taints=taints,
        unschedulable=rng.random() < 0.05,
        images=images,
    )


# Pod templates: replicas of one template share a signature.
def _templates() -> list[dict[str, Any]]:
    prefer_gold = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "preference": {
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]
                    },
                }
            ]
        }
    }
    return [
        make_pod("t", requests=[{"cpu": "500m", "memory": "1Gi"}]),
        make_pod("t", requests=[{"cpu": "1", "memory": "256Mi"}], affinity=prefer_gold),
        make_pod(
            "t",
            requests=[{"cpu": "200m"}],
            tolerations=[{"key": "soft", "operator": "Exists"}],
            node_selector={"topology.kubernetes.io/zone": "a"},
        ),
        make_pod("t", containers=[container("c", requests={"cpu": "300m"}, image=IMAGES[0])]),
        make_pod(
            "t",
            requests=[{"cpu": "100m"}],
            host_ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
        ),
        make_pod("t", requests=[{"cpu": "3", "memory": "8Gi"}]),  # often unschedulable
    ]


def replica(template: dict[str, Any], name: str) -> PodInfo:
    raw = {**template, "metadata": {**template["metadata"], "name": name, "uid": f"uid-{name}"}}
    return PodInfo.from_dict(raw)


def default_profile(table: NodeTable) -> Profile:
    profiles = build_profiles(
        load_config(DEFAULT_CONFIG),
        PluginCatalog.discover(),
        lambda name: FrameworkHandle(name, table, store_provider=StaticStores()),
    )
    return profiles["pluggable-scheduler"]


class Side:
    """One table, one profile, one Algorithm."""

    def __init__(self, nodes: list[dict[str, Any]], batching: bool) -> None:
        self.table = NodeTable()
        for node in nodes:
            self.table.upsert_node(node)
        self.profile = default_profile(self.table)
        self.algorithm = Algorithm(self.profile.framework, seed=7, batching=batching)

    def decide(self, pod: PodInfo) -> ScheduleResult:
        state = self.profile.framework.new_cycle_state()
        result = self.algorithm.schedule(state, pod, self.table)
        if result.node is not None:
            self.table.add_pod(pod, result.node)
        return result


@pytest.mark.parametrize("seed", range(6))
def test_batched_decisions_equal_full_cycles(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(5, 40))]
    full, batched = Side(nodes, batching=False), Side(nodes, batching=True)
    templates = _templates()
    placed: list[str] = []
    next_node = len(nodes)
    for step in range(300):
        roll = rng.random()
        if roll < 0.08 and placed:
            key = placed.pop(rng.randrange(len(placed)))
            for side in (full, batched):
                side.table.remove_pod(key)
            continue
        if roll < 0.11:
            # A node changes (labels, taints, capacity) or a new one joins.
            i = rng.randrange(next_node + 1)
            node = random_node(rng, i)
            next_node = max(next_node, i + 1)
            for side in (full, batched):
                side.table.upsert_node(node)
            continue
        if roll < 0.115:
            # A heartbeat: the node object changes, but not what other nodes see.
            name = rng.choice(list(full.table.index))
            raw = full.table.nodes[full.table.index[name]].raw
            beat = {**raw, "status": {**raw["status"], "conditions": [{"step": step}]}}
            for side in (full, batched):
                side.table.upsert_node(beat)
            continue
        if roll < 0.12 and len(full.table) > 1:
            name = rng.choice(list(full.table.index))
            for side in (full, batched):
                side.table.remove_node(name)
            continue
        pod = replica(rng.choice(templates), f"p-{step}")
        a, b = full.decide(pod), batched.decide(pod)
        where = f"step {step}, pod {pod.key}"
        assert (a.node, a.status.code, a.status.reasons) == (
            b.node,
            b.status.code,
            b.status.reasons,
        ), where
        assert sorted(a.tied) == sorted(b.tied), where
        assert a.feasible_nodes == b.feasible_nodes, where
        if a.node is not None:
            placed.append(pod.key)
    cache = batched.algorithm.batch
    assert cache is not None and cache.hits > 50


def test_replicas_share_a_signature_and_other_specs_do_not() -> None:
    template = make_pod("t", requests=[{"cpu": "100m"}], labels={"app": "web"})
    one, two = replica(template, "one"), replica(template, "two")
    assert pod_signature(one) == pod_signature(two)
    other = make_pod("t", requests=[{"cpu": "200m"}], labels={"app": "web"})
    assert pod_signature(replica(other, "three")) != pod_signature(one)
    relabelled = make_pod("t", requests=[{"cpu": "100m"}], labels={"app": "db"})
    assert pod_signature(replica(relabelled, "four")) != pod_signature(one)


def test_a_pod_with_active_non_local_plugins_is_not_batched() -> None:
    """Required anti-affinity makes InterPodAffinity run: every decision is a full one."""
    rng = random.Random(1)
    side = Side([random_node(rng, i) for i in range(10)], batching=True)
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    template = make_pod("t", requests=[{"cpu": "100m"}], labels={"app": "x"}, affinity=anti)
    for i in range(5):
        side.decide(replica(template, f"a-{i}"))
    cache = side.algorithm.batch
    assert cache is not None and cache.hits == 0 and len(cache) == 0


def test_replicas_with_their_own_token_volume_share_a_signature() -> None:
    """A real API server names each pod's service-account volume differently."""

    def with_token_volume(name: str, volume: str) -> PodInfo:
        raw = make_pod(name, requests=[{"cpu": "100m"}])
        raw["spec"]["volumes"] = [
            {"name": volume, "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}
        ]
        raw["spec"]["containers"][0]["volumeMounts"] = [{"name": volume, "mountPath": "/var/run"}]
        return PodInfo.from_dict(raw)

    one = with_token_volume("one", "kube-api-access-abcde")
    two = with_token_volume("two", "kube-api-access-vwxyz")
    assert pod_signature(one) == pod_signature(two)
    other = with_token_volume("three", "kube-api-access-12345")
    other.raw["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] = "/elsewhere"
    assert pod_signature(other) != pod_signature(one)


def test_node_heartbeats_keep_the_cache_and_label_changes_drop_it() -> None:
    rng = random.Random(3)
    nodes = [random_node(rng, i) for i in range(8)]
    side = Side(nodes, batching=True)
    template = make_pod("t", requests=[{"cpu": "10m"}])
    side.decide(replica(template, "zeroth"))  # seen: the next one stores
    side.decide(replica(template, "first"))
    cache = side.algorithm.batch
    assert cache is not None
    epoch = side.table.node_epoch
    heartbeat = {**nodes[0], "status": {**nodes[0]["status"], "conditions": [{"type": "Ready"}]}}
    side.table.upsert_node(heartbeat)
    assert side.table.node_epoch == epoch
    hits = cache.hits
    side.decide(replica(template, "second"))
    assert cache.hits == hits + 1
    relabelled = {**nodes[1], "metadata": {**nodes[1]["metadata"], "labels": {"x": "y"}}}
    side.table.upsert_node(relabelled)
    assert side.table.node_epoch == epoch + 1
    side.decide(replica(template, "third"))
    assert cache.hits == hits + 1


def test_pods_unlike_any_other_are_not_stored_and_a_second_replica_is() -> None:
    """Storing costs array copies: only a signature's second pod stores, for the third."""
    rng = random.Random(5)
    side = Side([random_node(rng, i) for i in range(20)], batching=True)
    cache = side.algorithm.batch
    assert cache is not None
    for i in range(10):
        side.decide(PodInfo.from_dict(make_pod(f"own-{i}", requests=[{"cpu": f"{10 + i}m"}])))
    assert len(cache) == 0 and cache.hits == 0
    template = make_pod("t", requests=[{"cpu": "100m"}])
    side.decide(replica(template, "one"))
    assert len(cache) == 0
    side.decide(replica(template, "two"))
    assert len(cache) == 1 and cache.hits == 0
    side.decide(replica(template, "three"))
    assert cache.hits == 1

"""SchedulerCache: assume / confirm / forget, node removal, deletes during binding."""

from __future__ import annotations

import pytest

from scheduler.engine.cache import SchedulerCache
from tests.engine.helpers import pod, raw_node


def cpu_requested(cache: SchedulerCache, node: str) -> int:
    row = cache.table.row_of(node)
    assert row is not None
    return cache.table.node_info(row).requested.get("cpu", 0)


@pytest.fixture
def cache() -> SchedulerCache:
    c = SchedulerCache()
    c.upsert_node(raw_node("n1"))
    c.upsert_node(raw_node("n2"))
    return c


def test_assume_accounts_the_pod_at_once(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    assert cache.is_assumed("default/a")
    assert cpu_requested(cache, "n1") == 1000
    with pytest.raises(ValueError, match="already in the cache"):
        cache.assume(pod("a", cpu="1"), "n2")


def test_confirm_replaces_the_assumption_without_double_counting(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    cache.finish_binding("default/a")
    cache.add_pod(pod("a", cpu="1", node="n1"))
    assert not cache.is_assumed("default/a")
    assert cpu_requested(cache, "n1") == 1000


def test_confirm_swaps_in_the_informers_copy_and_counts_it_once(cache: SchedulerCache) -> None:
    assumed = pod("a", cpu="1", labels={"app": "x"})
    cache.assume(assumed, "n1")
    generation = cache.table.version
    bound = pod("a", cpu="1", labels={"app": "x"}, node="n1")
    cache.add_pod(bound)
    table = cache.table
    assert table.pod("default/a") is bound
    assert table.pod_table.infos[table.pod_table.index["default/a"]] is bound
    assert cpu_requested(cache, "n1") == 1000
    assert table.version > generation  # readers of the row see a change
    # A copy whose labels changed is indexed again, not swapped in.
    relabelled = pod("a", cpu="1", labels={"app": "y"}, node="n1")
    cache.add_pod(relabelled)
    row = table.pod_table.index["default/a"]
    assert table.pod_table.infos[row] is relabelled
    labels = table.pod_table.labels
    rows = table.pod_table.rows()
    assert rows[labels.match("app", "In", ["y"], rows)].tolist() == [row]
    assert not labels.match("app", "In", ["x"], rows).any()
    # So is one asking for more.
    cache.add_pod(pod("a", cpu="2", labels={"app": "y"}, node="n1"))
    assert cpu_requested(cache, "n1") == 2000


def test_confirm_on_another_node_moves_the_pod(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    cache.add_pod(pod("a", cpu="1", node="n2"))  # someone else bound it
    assert cpu_requested(cache, "n1") == 0
    assert cpu_requested(cache, "n2") == 1000
    assert cache.table.node_of_pod("default/a") == "n2"


def test_forget_releases_the_assumption(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    cache.forget("default/a")
    assert not cache.is_assumed("default/a")
    assert not cache.table.has_pod("default/a")
    assert cpu_requested(cache, "n1") == 0
    cache.forget("default/a")  # idempotent


def test_forget_leaves_confirmed_pods_alone(cache: SchedulerCache) -> None:
    cache.add_pod(pod("a", cpu="1", node="n1"))
    cache.forget("default/a")
    assert cpu_requested(cache, "n1") == 1000


def test_node_removal_forgets_pods_assumed_there(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    cache.assume(pod("b", cpu="1"), "n2")
    cache.add_pod(pod("c", cpu="1", node="n1"))
    lost = cache.remove_node("n1")
    assert [p.key for p in lost] == ["default/a"]
    assert not cache.is_assumed("default/a") and cache.is_assumed("default/b")
    assert cache.table.row_of("n1") is None
    # The bound pod is kept aside and counted again if the node comes back.
    cache.upsert_node(raw_node("n1"))
    assert cpu_requested(cache, "n1") == 1000


def test_delete_during_binding_is_deferred_to_the_binding_cycle(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    assert cache.remove_pod("default/a") is False
    assert cpu_requested(cache, "n1") == 1000  # the binding cycle still owns it
    cache.finish_binding("default/a")  # bound after all, but the pod is gone
    assert not cache.is_assumed("default/a")
    assert cpu_requested(cache, "n1") == 0


def test_delete_during_binding_then_binding_failure(cache: SchedulerCache) -> None:
    cache.assume(pod("a", cpu="1"), "n1")
    cache.remove_pod("default/a")
    cache.forget("default/a")
    assert cpu_requested(cache, "n1") == 0


def test_delete_of_bound_but_unconfirmed_pod_releases_it(cache: SchedulerCache) -> None:
    # After a 410 re-list the informer may report the bind + delete only as a delete.
    cache.assume(pod("a", cpu="1"), "n1")
    cache.finish_binding("default/a")
    assert cache.remove_pod("default/a") is True
    assert not cache.is_assumed("default/a")
    assert cpu_requested(cache, "n1") == 0


def test_remove_confirmed_pod(cache: SchedulerCache) -> None:
    cache.add_pod(pod("a", cpu="1", node="n1"))
    assert cache.remove_pod("default/a") is True
    assert cache.remove_pod("default/a") is False
    assert cpu_requested(cache, "n1") == 0

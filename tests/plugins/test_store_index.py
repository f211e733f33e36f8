"""StoreIndex: grouped by a value read from each object, kept current from the store's changes.

Whatever sequence of objects added, moved between groups, replaced under
the same name and deleted, and whether the store names what changed or
forgets (a re-list), each group must hold exactly the objects a scan of the
store finds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from scheduler.plugins._helpers import StoreIndex
from tests.plugins.builders import ChangingStore


def _group(obj: Mapping[str, Any]) -> str | None:
    value = (obj.get("spec") or {}).get("group")
    return str(value) if value is not None else None


def test_groups_equal_a_scan_of_the_store_through_changes_and_relists() -> None:
    rng = random.Random(11)
    store = ChangingStore(rng)
    index = StoreIndex(lambda: store, _group)
    groups = ("g1", "g2", "g3", None)
    for step in range(500):
        namespace, name = rng.choice(("a", "b")), f"o{rng.randrange(8)}"
        if rng.random() < 0.25:
            store.delete(namespace, name)
        else:
            group = rng.choice(groups)
            spec = {"group": group} if group is not None else {}
            store.put({"metadata": {"namespace": namespace, "name": name}, "spec": spec})
        if rng.random() < 0.5:
            continue  # several changes between two lookups
        for group in groups[:-1]:
            expected = {k: o for k, o in store.objects.items() if _group(o) == group}
            got = index.get(group)
            assert dict(got) == expected, f"step {step}, group {group}"
            assert all(got[k] is o for k, o in expected.items()), "the store's own objects"


def test_an_unchanged_store_is_not_read_again() -> None:
    store = ChangingStore(random.Random(1), forget=0.0)
    store.put({"metadata": {"namespace": "a", "name": "x"}, "spec": {"group": "g"}})
    reads: list[int] = []
    listed = store.list

    def counting_list(*args: Any, **kwargs: Any) -> list[Mapping[str, Any]]:
        reads.append(1)
        return listed(*args, **kwargs)

    store.list = counting_list  # type: ignore[method-assign]
    index = StoreIndex(lambda: store, _group)
    assert list(index.get("g")) == [("a", "x")]
    store.put({"metadata": {"namespace": "a", "name": "y"}, "spec": {"group": "g"}})
    assert sorted(index.get("g")) == [("a", "x"), ("a", "y")]
    assert index.get("other") == {}
    assert len(reads) == 1, "listed once; later lookups apply the changes only"

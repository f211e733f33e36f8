"""Stores handed to plugins where no informers run (explain, tests)."""

from __future__ import annotations

from scheduler.framework.handle import StaticStores


def test_objects_are_grouped_by_group_and_resource_name() -> None:
    stores = StaticStores(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "NodeMetrics",
                "metadata": {"name": "n1"},
            },
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "pdb", "namespace": "shop"},
            },
        ]
    )
    assert [o["metadata"]["name"] for o in stores("", "v1", "namespaces").list()] == ["shop"]
    assert stores("metrics.k8s.io", "v1beta1", "nodes").get("", "n1") is not None
    assert stores("policy", "v1", "poddisruptionbudgets").get("shop", "pdb") is not None
    assert stores("policy", "v1", "poddisruptionbudgets").list("other") == []
    assert stores("apps", "v1", "replicasets").list() == []

"""What the transformer hooks (API 2.1) hand back: an adjusted view of the pod or of nodes.

Koordinator's FrameworkExtender lets a plugin change what the rest of a
scheduling cycle sees before PreFilter, Filter and Score run: a pod with its
requests rewritten, a node with the resources of a reservation given back to
the pod allowed to use it. Here the live node table is never written: a
:class:`NodeAdjustment` says, per node, how much more or less is in use for
*this* pod, and the framework applies it to a what-if copy of the affected
rows (``scheduler.state.whatif``) that only this cycle's Filter (or Score)
plugins see. An adjusted pod is a new parsed pod (``handle.framework.pod_from_object``)
used for this cycle's PreFilter .. Score; Reserve, Permit and the binding
cycle still get the pod as it is in the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class NodeAdjustment:
    """Per-node changes to the resources in use, as one cycle's plugins should see them.

    Indexes are positions in the ``nodes`` the hook was given; amounts are in
    the units of ``nodes.requested`` (cpu in millicores, memory and storage in
    bytes, ``pods`` in pods, extended resources as counted). A resource no
    node has is ignored. Several adjustments of one node add up; the view
    never goes below zero in use.

    Examples:
        >>> adjust = NodeAdjustment().release(0, {"cpu": 2000, "memory": 4 << 30})
        >>> adjust = adjust.hold(2, {"cpu": 500})
        >>> sorted(adjust.changes())
        [(0, {'cpu': -2000, 'memory': -4294967296}), (2, {'cpu': 500})]
        >>> bool(NodeAdjustment())
        False
    """

    __slots__ = ("_changes",)

    def __init__(self) -> None:
        self._changes: dict[int, dict[str, int]] = {}

    def _add(self, index: int, resources: Mapping[str, int], sign: int) -> NodeAdjustment:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"node index must be a non-negative int, got {index!r}")
        row = self._changes.setdefault(index, {})
        for name, amount in resources.items():
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                raise ValueError(
                    f"amount of {name!r} on node index {index} must be a non-negative int, "
                    f"got {amount!r}"
                )
            if amount:
                row[name] = row.get(name, 0) + sign * amount
        return self

    def hold(self, index: int, resources: Mapping[str, int]) -> NodeAdjustment:
        """Count ``resources`` as in use on node ``index`` (e.g. held by a reservation)."""
        return self._add(index, resources, +1)

    def release(self, index: int, resources: Mapping[str, int]) -> NodeAdjustment:
        """Count ``resources`` as free on node ``index`` (given back to this pod)."""
        return self._add(index, resources, -1)

    def changes(self) -> Iterator[tuple[int, dict[str, int]]]:
        """(node index, resource -> signed amount) for each adjusted node; + held, - released."""
        for index, row in self._changes.items():
            if row:
                yield index, dict(row)

    def __bool__(self) -> bool:
        return any(self._changes.values())

    def __repr__(self) -> str:
        return f"NodeAdjustment({dict(self.changes())!r})"

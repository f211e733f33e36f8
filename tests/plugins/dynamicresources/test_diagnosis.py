"""The per-node funnel `explain` shows for a node whose devices did not fit."""

from __future__ import annotations

from scheduler.model.devicecel import SelectorCache
from scheduler.plugins.dynamicresources.allocator import Allocator
from scheduler.plugins.dynamicresources.diagnosis import explain_node
from scheduler.plugins.dynamicresources.pools import SliceIndex
from scheduler.plugins.dynamicresources.state import AllocatedState
from tests.plugins.dynamicresources.test_plugin import DRIVER, claim, device_class, slice_on


def allocator(taken: set[tuple[str, str, str]] = set()) -> Allocator:  # noqa: B006
    classes = {DRIVER: device_class(), "broken": device_class("broken", "device.nope == 1")}
    slices = SliceIndex([slice_on("node-a", 2, memory="40Gi"), slice_on("node-b", 1)])
    return Allocator(slices, classes, AllocatedState(devices=set(taken)), SelectorCache())


def node(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": {}}}


def test_funnel_counts_class_selectors_and_free_devices() -> None:
    big = claim(
        "big",
        count=2,
        selectors=[f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0'],
    )
    lines = explain_node(allocator(), node("node-a"), [big])
    assert lines == [
        "claim default/big, request gpu: wants 2; the node sees 2 device(s), "
        f"2 in class {DRIVER}, 0 matching the request's selectors, 0 of them free"
    ]
    lines = explain_node(
        allocator({(DRIVER, "node-a", "gpu-0")}), node("node-a"), [claim("c", count=2)]
    )
    assert lines[0].endswith(
        f"2 in class {DRIVER}, 2 matching the request's selectors, 1 of them free"
    )


def test_a_node_without_slices_and_broken_selectors() -> None:
    (line,) = explain_node(allocator(), node("node-c"), [claim("c")])
    assert "the node sees 0 device(s)" in line
    (line,) = explain_node(allocator(), node("node-a"), [claim("c", klass="broken")])
    assert line.startswith("claim default/c, request gpu: CEL ")
    (line,) = explain_node(allocator(), node("node-a"), [claim("c", klass="absent")])
    assert line == "claim default/c, request gpu: device class absent does not exist"

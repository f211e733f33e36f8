"""kube's shared allocator test cases (allocatortesting/allocator_testing.go), ported.

Case names are kube's; inputs and expected results are the same, with the fake
"features" switches dropped (kube 1.36's defaults are all on here).
"""

from __future__ import annotations

import pytest

from tests.plugins.dynamicresources.builders import (
    ALL_NODES,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    all_request,
    allocation,
    bool_attr,
    cel,
    claim,
    claim_config,
    claim_with_request,
    device,
    device_class,
    device_configuration,
    first_available,
    int_attr,
    local_node_selector,
    match_attribute,
    node,
    node_label_selector,
    pool,
    request,
    result,
    slice_,
    slice_with_devices,
    slice_with_one_device,
    string_attr,
    sub_request,
    version_attr,
)
from tests.plugins.dynamicresources.harness import Case, run_case

A = device_class(CLASS_A, DRIVER_A)
B = device_class(CLASS_B, DRIVER_B)
LOCAL1 = local_node_selector(NODE1)
MEM_1GI = cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1Gi")) >= 0')
MEM_2GI = cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0')
INT_ATTR = f"{DRIVER_A}/numa"
VERSION_ATTR = f"{DRIVER_A}/driverVersion"
STRING_ATTR = f"{DRIVER_A}/stringAttribute"
BOOL_ATTR = f"{DRIVER_A}/boolAttribute"


def _incomplete(s: dict) -> dict:  # type: ignore[type-arg]
    s["spec"]["pool"]["resourceSliceCount"] += 1
    return s


def _with_generation(s: dict, generation: int) -> dict:  # type: ignore[type-arg]
    s["spec"]["pool"]["generation"] = generation
    return s


def _admin(req: dict) -> dict:  # type: ignore[type-arg]
    req["exactly"]["adminAccess"] = True
    return req


def _all_sub(name: str, class_name: str) -> dict:  # type: ignore[type-arg]
    return sub_request(name, class_name, mode="All")


CASES: dict[str, Case] = {
    "empty": Case(),
    "simple": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "other-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A),
        ],
        node=node(NODE2, REGION2),
        expect=[allocation(local_node_selector(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "small-and-large": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI), request(REQ1, CLASS_A, 1, MEM_2GI))
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "1Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI), request(REQ1, CLASS_A, 1, MEM_2GI))
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE1, {"memory": "1Gi"}),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM_1GI)),
            claim(CLAIM1, request(REQ1, CLASS_A, 1, MEM_2GI)),
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE1, {"memory": "1Gi"}),
            )
        ],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "obsolete-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_("slice-1-obsolete", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_("slice-1-obsolete", NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)),
        ],
        expect=None,
    ),
    "duplicate-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A),
            slice_with_one_device(SLICE1 + "-2", NODE1, pool(POOL1, 2), DRIVER_A),
        ],
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        expect=None,
    ),
    "not-enough-suitable-devices": Case(
        claims=[
            claim_with_request(CLAIM0, REQ0, CLASS_A),
            claim_with_request(CLAIM0, REQ1, CLASS_A),
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=None,
    ),
    "no-classes": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "unknown-class")],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "")],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "no-claims-to-allocate": Case(
        classes=[A], slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]
    ),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[_incomplete(slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A))],
        error=(
            "claim claim-0, request req-0: asks for all devices, but resource pool "
            "driver-a/pool-1 is currently being updated"
        ),
    ),
    "all-devices-plus-another": Case(
        claims=[
            claim(CLAIM0, all_request(REQ0, CLASS_A)),
            claim(CLAIM1, request(REQ0, CLASS_B, 1)),
        ],
        classes=[A, B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "all-devices-no-solution": Case(
        claims=[
            claim(CLAIM1, request(REQ0, CLASS_A, 1)),
            claim(CLAIM0, all_request(REQ0, CLASS_A)),
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=None,
    ),
    "all-devices-no-solution-reversed": Case(
        claims=[
            claim(CLAIM0, all_request(REQ0, CLASS_A)),
            claim(CLAIM1, request(REQ0, CLASS_A, 1)),
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=None,
    ),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=None,
    ),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=None,
    ),
    "all-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, _admin(all_request(REQ0, CLASS_A)))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            )
        ],
    ),
    "all-devices-some-allocating-admin-access": Case(
        claims=[
            claim(CLAIM0, _admin(request(REQ0, CLASS_A, 1)), _admin(all_request(REQ1, CLASS_A)))
        ],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=None,
    ),
    "count-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, _admin(request(REQ0, CLASS_A, 2)))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": Case(
        claims=[
            claim(CLAIM0, _admin(request(REQ0, CLASS_A, 1))),
            claim(CLAIM1, _admin(request(REQ0, CLASS_A, 1))),
        ],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[
            claim_with_request(CLAIM0, REQ0, CLASS_A),
            claim(CLAIM1, _admin(request(REQ0, CLASS_A, 1))),
        ],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
        ],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0, first_available(REQ0, _all_sub(SUB0, CLASS_A), sub_request(SUB1, CLASS_B))
            )
        ],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        expect=[allocation(LOCAL1, result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1))],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0, first_available(REQ0, _all_sub(SUB0, CLASS_A), sub_request(SUB1, CLASS_B))
            )
        ],
        classes=[A, B],
        slices=[slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation(LOCAL1, result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1))],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0, first_available(REQ0, _all_sub(SUB0, CLASS_A), sub_request(SUB1, CLASS_B))
            )
        ],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        expect=[allocation(LOCAL1, result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1))],
    ),
    "network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A)
        ],
        expect=[
            allocation(
                node_label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1)
            )
        ],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A)
        ],
        node=node(NODE2, REGION2),
        expect=None,
    ),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 4))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
            slice_with_one_device(SLICE1, node_label_selector("planet", "earth"), POOL3, DRIVER_A),
            slice_with_one_device(SLICE1, LOCAL1, POOL4, DRIVER_A),
        ],
        expect=[
            allocation(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": [REGION1]},
                                {"key": "planet", "operator": "In", "values": ["earth"]},
                            ],
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [NODE1]}
                            ],
                        }
                    ]
                },
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, POOL3, DEVICE1),
                result(REQ0, DRIVER_A, POOL4, DEVICE1),
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            slice_with_one_device(SLICE1, node_label_selector("region", REGION1), POOL1, DRIVER_A),
            slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
    ),
    "several-different-drivers": Case(
        claims=[
            claim_with_request(CLAIM0, REQ0, CLASS_A),
            claim_with_request(CLAIM0, REQ0, CLASS_B),
        ],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(LOCAL1, result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "already-allocated-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=None,
    ),
    "admin-access-enabled": Case(
        claims=[claim(CLAIM0, _admin(request(REQ0, CLASS_A, 1)))],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))],
    ),
    "with-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[
                    match_attribute(INT_ATTR),
                    match_attribute(VERSION_ATTR),
                    match_attribute(STRING_ATTR),
                    match_attribute(BOOL_ATTR),
                ],
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                *(
                    device(
                        name,
                        attributes={
                            "driverVersion": version_attr("1.0.0"),
                            "numa": int_attr(1),
                            "stringAttribute": string_attr("stringAttributeValue"),
                            "boolAttribute": bool_attr(True),
                        },
                    )
                    for name in (DEVICE1, DEVICE2)
                ),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                constraints=[match_attribute(f"{DRIVER_A}/NonExistentAttribute")],
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match_attribute(INT_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes={"numa": int_attr(1)}),
                device(DEVICE2, attributes={"numa": int_attr(2)}),
            )
        ],
        expect=None,
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A), constraints=[match_attribute(INT_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes={"numa": int_attr(1)}),
                device(DEVICE2, attributes={"numa": int_attr(2)}),
            )
        ],
        error=(
            "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
            "because a claim constraint would not be satisfied"
        ),
    ),
    "with-constraint-for-request": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[match_attribute(VERSION_ATTR, REQ0)],
            )
        ],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes={"driverVersion": version_attr("1.0.0")}),
                device(DEVICE2, attributes={"driverVersion": version_attr("2.0.0")}),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "with-constraint-for-request-retry": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[match_attribute(VERSION_ATTR, REQ0), match_attribute(STRING_ATTR)],
            )
        ],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1,
                    attributes={
                        "driverVersion": version_attr("1.0.0"),
                        "stringAttribute": string_attr("a"),
                    },
                ),
                device(
                    DEVICE2,
                    attributes={
                        "driverVersion": version_attr("2.0.0"),
                        "stringAttribute": string_attr("b"),
                    },
                ),
                device(
                    "device-3",
                    attributes={
                        "driverVersion": version_attr("3.0.0"),
                        "stringAttribute": string_attr("b"),
                    },
                ),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, "device-3"),
            )
        ],
    ),
    "with-class-device-config": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[
            device_class(
                CLASS_A, DRIVER_A, config=[device_configuration(DRIVER_A, "classAttribute")]
            )
        ],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[
                    {
                        "source": "FromClass",
                        "requests": [REQ0],
                        **device_configuration(DRIVER_A, "classAttribute"),
                    }
                ],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                request(REQ2, CLASS_B, 1),
            )
        ],
        classes=[
            device_class(
                CLASS_A, DRIVER_A, config=[device_configuration(DRIVER_A, "classAttribute-A")]
            ),
            device_class(
                CLASS_B, DRIVER_B, config=[device_configuration(DRIVER_B, "classAttribute-B")]
            ),
        ],
        slices=[
            slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
            slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_B, POOL1, DEVICE1),
                config=[
                    {
                        "source": "FromClass",
                        "requests": [REQ0, REQ1],
                        **device_configuration(DRIVER_A, "classAttribute-A"),
                    },
                    {
                        "source": "FromClass",
                        "requests": [REQ2],
                        **device_configuration(DRIVER_B, "classAttribute-B"),
                    },
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                config=[claim_config(None, device_configuration(DRIVER_A, "deviceAttribute"))],
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[
                    {"source": "FromClaim", **device_configuration(DRIVER_A, "deviceAttribute")}
                ],
            )
        ],
    ),
    "unknown-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, {}))],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-allocation-mode": Case(
        claims=[
            claim(
                CLAIM0,
                {
                    "name": REQ0,
                    "exactly": {"deviceClassName": CLASS_A, "allocationMode": "future-mode"},
                },
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), constraints=[{}])],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)",
    ),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))],
        classes=[A],
        error="exceeds the claim limit",
    ),
    "many-devices-okay": Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32))], classes=[A]),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32), request(REQ1, CLASS_A, 1))],
        classes=[A],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33)],
        error="exceeds the claim limit",
    ),
    "prioritized-list-first-unavailable": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-non-available": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B, 2), sub_request(SUB1, CLASS_A, 2)),
            )
        ],
        classes=[A, B],
        slices=[
            slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        expect=None,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kube_case(name: str) -> None:
    run_case(CASES[name])

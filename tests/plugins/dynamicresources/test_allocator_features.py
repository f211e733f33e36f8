"""More of kube's shared allocator cases: prioritized lists, search counts, pools,
partitionable devices, taints, binding conditions and consumable capacity.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.plugins.dynamicresources.allocator import AllocatedState
from tests.plugins.dynamicresources.builders import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DEVICE4,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    PER_DEVICE,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    SUB0,
    SUB1,
    allocation,
    cel,
    claim,
    claim_config,
    claim_with_request,
    counter_consumption,
    counter_set,
    device,
    device_class,
    device_configuration,
    distinct_attribute,
    first_available,
    local_node_selector,
    node,
    node_label_selector,
    pool,
    request,
    result,
    slice_,
    slice_with_one_device,
    string_attr,
    sub_request,
)
from tests.plugins.dynamicresources.harness import Case, run_case

A = device_class(CLASS_A, DRIVER_A)
B = device_class(CLASS_B, DRIVER_B)
LOCAL1 = local_node_selector(NODE1)


def mem(size: str) -> dict:  # type: ignore[type-arg]
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0')


def of_type(kind: str) -> dict:  # type: ignore[type-arg]
    return cel(f'device.attributes["{DRIVER_A}"].type == "{kind}"')


def typed(name: str, kind: str, **extra: object) -> dict:  # type: ignore[type-arg]
    return device(name, attributes={"type": string_attr(kind)}, **extra)


def from_counters(name: str, memory: str, **extra: object) -> dict:  # type: ignore[type-arg]
    """kube's ``device(name, fromCounters, nil).withDeviceCounterConsumption(...)``."""
    return device(
        name,
        {"memory": memory},
        consumesCounters=[counter_consumption(COUNTER_SET1, {"memory": memory})],
        **extra,
    )


TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TOLERATE_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOLERATE_NO_EXECUTE = {
    "operator": "Equal",
    "key": "taint-key",
    "value": "taint-value-2",
    "effect": "NoExecute",
}

MULTI_A = {
    "metadata": {"name": CLASS_A},
    "spec": {
        "selectors": [
            cel(f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == true')
        ]
    },
}


def range_policy_device(name: str, total: str) -> dict:  # type: ignore[type-arg]
    """kube's ``withAllowMultipleAllocations().withCapacityRequestPolicyRange``."""
    return device(
        name,
        allowMultipleAllocations=True,
        capacity={
            "capacity-0": {
                "value": total,
                "requestPolicy": {
                    "default": "2",
                    "validRange": {"min": "2", "step": "2", "max": "4"},
                },
            }
        },
    )


CASES: dict[str, Case] = {
    "prioritized-list-device-config": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 2)),
                config=[
                    claim_config([f"{REQ0}/{SUB0}"], device_configuration(DRIVER_A, "foo")),
                    claim_config([f"{REQ0}/{SUB1}"], device_configuration(DRIVER_B, "bar")),
                ],
            )
        ],
        classes=[A, B],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))],
        expect=[
            allocation(
                LOCAL1,
                result(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEVICE1),
                result(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEVICE2),
                config=[
                    {
                        "source": "FromClaim",
                        "requests": [f"{REQ0}/{SUB1}"],
                        **device_configuration(DRIVER_B, "bar"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-class-config": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_B, 2)),
            )
        ],
        classes=[
            device_class(CLASS_A, DRIVER_A, config=[device_configuration(DRIVER_A, "foo")]),
            device_class(CLASS_B, DRIVER_B, config=[device_configuration(DRIVER_B, "bar")]),
        ],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2)),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE3)),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEVICE1),
                result(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEVICE2),
                config=[
                    {
                        "source": "FromClass",
                        "requests": [f"{REQ0}/{SUB1}"],
                        **device_configuration(DRIVER_B, "bar"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, mem("1Gi")),
                first_available(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, mem("4Gi")),
                    sub_request(SUB1, CLASS_A, 2, mem("2Gi")),
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "2Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE3, {"memory": "1Gi"}),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE1),
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "prioritized-list-multi-request": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, 1, mem("8Gi")),
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem("8Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem("4Gi")),
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"})),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"})),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEVICE2),
            )
        ],
    ),
    "prioritized-list-with-backtracking": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem("8Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem("4Gi")),
                ),
                request(REQ1, CLASS_A, 1, mem("8Gi")),
            )
        ],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"})),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"})),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(REQ0, sub_request(SUB0, CLASS_B, 500), sub_request(SUB1, CLASS_A)),
            )
        ],
        classes=[A, B],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL1, result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_(SLICE3, NODE1, pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL2, DEVICE2))],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_(SLICE3, NODE1, pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
        ],
        allocated=[(DRIVER_A, POOL2, DEVICE2)],
        error="invalid resource pools were encountered",
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1))],
    ),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1),
                device(DEVICE2),
                device(DEVICE3),
                device(DEVICE4),
            )
        ],
        invocations=16,
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1), device(DEVICE2)),
            slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE3), device(DEVICE4)),
        ],
        invocations=16,
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
            slice_(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE3), device(DEVICE4)),
        ],
        invocations=16,
    ),
    "check-combinations-within-single-request-many-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1)),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
            slice_(SLICE3, NODE1, POOL3, DRIVER_A, device(DEVICE3)),
            slice_(SLICE4, NODE1, POOL4, DRIVER_A, device(DEVICE4)),
        ],
        invocations=16,
    ),
    "check-combinations-with-backtracking": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, of_type("X")))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                typed(DEVICE1, "X"),
                typed(DEVICE2, "Y"),
                typed(DEVICE3, "Y"),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        invocations=12,
    ),
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, of_type("X")))],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, typed(DEVICE1, "X")),
            slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, typed(DEVICE2, "Y")),
            slice_(
                SLICE3,
                NODE1,
                POOL2,
                DRIVER_A,
                typed(DEVICE3, "Y", bindingConditions=["IsPrepare"], bindingFailureConditions=[]),
            ),
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL2, DEVICE3, bindingConditions=["IsPrepare"]),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        invocations=12,
    ),
    "check-combinations-with-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ1, sub_request(SUB0, CLASS_A, 3, of_type("Y")), sub_request(SUB1, CLASS_A, 2)
                ),
                first_available(
                    REQ2, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_A, 1, of_type("X"))
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                typed(DEVICE1, "X"),
                typed(DEVICE2, "Y"),
                typed(DEVICE3, "Y"),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE2),
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE3),
                result(f"{REQ2}/{SUB1}", DRIVER_A, POOL1, DEVICE1),
            )
        ],
        invocations=26,
    ),
    "partitionable-devices-single-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(
                    DEVICE1,
                    consumesCounters=[counter_consumption(COUNTER_SET1, {"memory": "4Gi"})],
                ),
            ),
            slice_(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, {"memory": "8Gi"})],
            ),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-taint-releases-counter": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(
                    DEVICE1,
                    taints=[TAINT_NO_SCHEDULE],
                    consumesCounters=[counter_consumption(COUNTER_SET1, {"c": "1"})],
                ),
                device(DEVICE2, consumesCounters=[counter_consumption(COUNTER_SET1, {"c": "1"})]),
            ),
            slice_(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, {"c": "1"})],
            ),
        ],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-no-capacity-available": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                from_counters(DEVICE1, "4Gi"),
                from_counters(DEVICE2, "16Gi"),
            ),
            slice_(
                SLICE2,
                NODE1,
                POOL1,
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, {"memory": "18Gi"})],
            ),
        ],
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, mem("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, mem("4Gi")),
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(DEVICE1, "4Gi", nodeName=NODE1),
                from_counters(DEVICE2, "6Gi", nodeName=NODE2),
            ),
            slice_(
                SLICE2,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, {"memory": "18Gi"})],
            ),
        ],
        expect=[allocation(LOCAL1, result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(DEVICE1, "4Gi", nodeSelector=node_label_selector("region", REGION1)),
            ),
            slice_(
                SLICE2,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, {"memory": "18Gi"})],
            ),
        ],
        expect=[
            allocation(
                node_label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1)
            )
        ],
    ),
    "tainted-two-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                device(DEVICE2, taints=[TAINT_NO_EXECUTE]),
            )
        ],
    ),
    "tainted-one-device-two-taints": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
            )
        ],
    ),
    "tainted-two-devices-tolerated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, tolerations=[TOLERATE_NO_EXECUTE]))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                device(DEVICE2, taints=[TAINT_NO_EXECUTE]),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(REQ0, DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_NO_EXECUTE]),
            )
        ],
    ),
    "tainted-no-effect": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NONE]))],
        expect=[allocation(LOCAL1, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=[
            claim(
                CLAIM0,
                request(
                    REQ0,
                    CLASS_A,
                    1,
                    tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE],
                ),
            )
        ],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE],
                ),
            )
        ],
    ),
    "tainted-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub_request(SUB0, CLASS_B, tolerations=[TOLERATE_NO_SCHEDULE]),
                    sub_request(SUB1, CLASS_A),
                ),
            )
        ],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
            )
        ],
    ),
    "tainted-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin_access=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[A],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))
        ],
    ),
    "device-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1,
                    bindingConditions=["IsPrepare"],
                    bindingFailureConditions=["BindingFailed"],
                ),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    bindingConditions=["IsPrepare"],
                    bindingFailureConditions=["BindingFailed"],
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, capacity={"capacity-0": "2"}))],
        allocated_state=AllocatedState(
            aggregated_capacity={(DRIVER_A, POOL1, DEVICE1): {"capacity-0": Fraction(2)}}
        ),
        classes=[MULTI_A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, range_policy_device(DEVICE1, "4"))],
        expect=[
            allocation(
                LOCAL1,
                result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE1,
                    shareID="fixed",
                    consumedCapacity={"capacity-0": "2"},
                ),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, capacity={"capacity-0": "2"}))],
        allocated_state=AllocatedState(
            aggregated_capacity={(DRIVER_A, POOL1, DEVICE1): {"capacity-0": Fraction(2)}}
        ),
        classes=[MULTI_A],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                range_policy_device(DEVICE1, "2"),
                range_policy_device(DEVICE2, "2"),
            )
        ],
        expect=[
            allocation(
                LOCAL1,
                result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE2,
                    shareID="fixed",
                    consumedCapacity={"capacity-0": "2"},
                ),
            )
        ],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                constraints=[distinct_attribute(f"{DRIVER_A}/NonExistentAttribute")],
            )
        ],
        classes=[A],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kube_case(name: str) -> None:
    run_case(CASES[name])


def test_devices_on_other_nodes_are_not_seen() -> None:
    """Node-local slices of another node never reach the search."""
    run_case(
        Case(
            claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
            classes=[A],
            slices=[slice_with_one_device(SLICE1, NODE2, POOL1, DRIVER_A)],
            node=node(NODE1),
        )
    )

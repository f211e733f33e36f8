"""Resource vectors as scheduler-plugins' ElasticQuota code compares them.

scheduler-plugins keeps min, max and used in kube-scheduler's
``framework.Resource``: cpu in millicores, memory, ephemeral-storage and the
pod count as integers, and "scalar" resources (``nvidia.com/gpu``,
``hugepages-*`` ...) by name. Names kube-scheduler does not track are
dropped. A vector here is a plain ``dict[str, int]`` in the same units (the
units of :attr:`scheduler.api.Pod.requests`), so quota arithmetic and pod
requests combine directly.

The comparison (:func:`over`) reproduces scheduler-plugins' ``cmp2``: the four
base resources are always compared (a base resource a quota does not name
counts as 0), a scalar resource only where the left-hand side has it, against
``bound`` when the quota does not name it (unlimited for max, 0 for min).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from scheduler.model.quantity import QuantityError, quantity_to_int, quantity_to_milli
from scheduler.model.resources import is_scalar_resource_name

Vector = dict[str, int]

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
BASE: Final = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)

#: scheduler-plugins' ``UpperBoundOfMax`` (math.MaxInt64): "no limit".
UNLIMITED: Final = 2**63 - 1
#: scheduler-plugins' ``LowerBoundOfMin``.
NO_GUARANTEE: Final = 0


class ResourceListError(ValueError):
    """A resource list that cannot be read; the message names the field."""


def tracked(name: str) -> bool:
    """Whether kube-scheduler's ``Resource`` keeps ``name`` (others are dropped)."""
    return name in BASE or is_scalar_resource_name(name)


def parse_resource_list(value: object, where: str) -> Vector:
    """A ``ResourceList`` (name -> quantity) as a vector; errors name ``where`` and the entry."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ResourceListError(f"{where} must be an object (resource name -> quantity)")
    out: Vector = {}
    for name, quantity in value.items():
        if not isinstance(name, str) or not tracked(name):
            continue
        try:
            amount = quantity_to_milli(quantity) if name == CPU else quantity_to_int(quantity)
        except QuantityError as err:
            raise ResourceListError(f"{where}.{name}: {err}") from None
        if amount < 0:
            raise ResourceListError(f"{where}.{name}: must not be negative, got {quantity!r}")
        out[name] = amount
    return out


def pod_vector(requests: Mapping[str, int]) -> Vector:
    """A pod's requests as scheduler-plugins charges them to its quota.

    ``computePodResourceRequest`` sums container requests, so the pod count
    (which no container requests) is never charged.
    """
    return {k: int(v) for k, v in requests.items() if k != PODS and v and tracked(k)}


def add_into(total: Vector, more: Mapping[str, int]) -> None:
    """``total += more`` in place."""
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def sub_from(total: Vector, less: Mapping[str, int]) -> None:
    """``total -= less`` in place; entries that reach 0 are removed."""
    for name, amount in less.items():
        left = total.get(name, 0) - amount
        if left:
            total[name] = left
        else:
            total.pop(name, None)


def over(x1: Mapping[str, int], x2: Mapping[str, int], y: Mapping[str, int], bound: int) -> bool:
    """Whether ``x1 + x2`` exceeds ``y`` in any resource (scheduler-plugins' ``cmp2``).

    Examples:
        >>> over({"cpu": 500}, {"cpu": 600}, {"cpu": 1000, "memory": 10}, UNLIMITED)
        True
        >>> over({"nvidia.com/gpu": 1}, {}, {"cpu": 1000}, UNLIMITED)  # gpu not limited
        False
        >>> over({"nvidia.com/gpu": 1}, {}, {"cpu": 1000}, NO_GUARANTEE)  # nor guaranteed
        True
        >>> over({"memory": 1}, {}, {"cpu": 1000}, UNLIMITED)  # a base resource counts as 0
        True
    """
    for name in BASE:
        if x1.get(name, 0) + x2.get(name, 0) > y.get(name, 0):
            return True
    for name, amount in x1.items():
        if name in BASE:
            continue
        if amount + x2.get(name, 0) > y.get(name, bound):
            return True
    return False


def format_quantity(name: str, amount: int) -> str:
    """An amount as the canonical quantity text kube would print.

    Examples:
        >>> format_quantity("cpu", 1500), format_quantity("cpu", 2000)
        ('1500m', '2')
        >>> format_quantity("memory", 1024)
        '1024'
    """
    if name == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    return str(amount)


def format_resource_list(vector: Mapping[str, int]) -> dict[str, str]:
    """A vector as a ``ResourceList`` (sorted names, quantity strings)."""
    return {name: format_quantity(name, vector[name]) for name in sorted(vector)}


def describe(vector: Mapping[str, int]) -> str:
    """``cpu=1500m, memory=1024`` for messages."""
    return ", ".join(f"{k}={v}" for k, v in format_resource_list(vector).items()) or "nothing"

"""The ElasticQuota custom resource (``scheduling.x-k8s.io/v1alpha1``) and its accounting.

The object is the one kubernetes-sigs/scheduler-plugins defines, read
unchanged: one ElasticQuota per namespace, ``spec.min`` (guaranteed) and
``spec.max`` (ceiling) as resource lists, ``status.used`` what the
namespace's pods use. :class:`QuotaInfo` is scheduler-plugins'
``ElasticQuotaInfo`` (min, max, used and the pods charged), :class:`QuotaSet`
its ``ElasticQuotaInfos`` with the aggregate check that lets a namespace
borrow what others do not use of their min.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from scheduler_plugin_capacityscheduling.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NO_GUARANTEE,
    UNLIMITED,
    ResourceListError,
    Vector,
    add_into,
    over,
    parse_resource_list,
    sub_from,
)

GROUP: Final = "scheduling.x-k8s.io"
VERSION: Final = "v1alpha1"
PLURAL: Final = "elasticquotas"
KIND: Final = "ElasticQuota"

# scheduler-plugins' makeResourceListForBound: an omitted min or max names
# exactly these three resources.
_BOUND_RESOURCES: Final = (CPU, MEMORY, EPHEMERAL_STORAGE)


class QuotaError(ValueError):
    """An ElasticQuota whose spec cannot be used; the message names the quota and the field."""


@dataclass(frozen=True, slots=True)
class QuotaSpec:
    """The parts of an ElasticQuota the plugin decides on, in pod-request units.

    ``min``/``max`` are what scheduler-plugins builds with ``newElasticQuotaInfo``:
    an omitted ``spec.min`` is 0 and an omitted ``spec.max`` unlimited for cpu,
    memory and ephemeral-storage. ``max_names`` are the resources the object's
    own ``spec.max`` names (what ``status.used`` must never exceed).
    """

    namespace: str
    name: str
    min: Vector
    max: Vector
    max_names: frozenset[str]
    reported_names: frozenset[str]

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> QuotaSpec:
        """Parse an ElasticQuota; raise :class:`QuotaError` naming what is wrong."""
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        full = f"ElasticQuota {namespace}/{name}"
        spec = obj.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise QuotaError(f"{full}: spec must be an object")
        try:
            raw_min = spec.get("min")
            raw_max = spec.get("max")
            min_ = parse_resource_list(raw_min, f"{full}: spec.min")
            max_ = parse_resource_list(raw_max, f"{full}: spec.max")
        except ResourceListError as err:
            raise QuotaError(str(err)) from None
        if raw_min is None:
            min_ = dict.fromkeys(_BOUND_RESOURCES, NO_GUARANTEE)
        if raw_max is None:
            max_ = dict.fromkeys(_BOUND_RESOURCES, UNLIMITED)
        else:
            for resource, low in min_.items():
                high = max_.get(resource)
                if high is not None and low > high:
                    given = (raw_min or {}).get(resource)
                    raise QuotaError(
                        f"{full}: spec.min.{resource} ({given}) is greater than "
                        f"spec.max.{resource} ({raw_max[resource]})"
                    )
        names = {str(k) for k in (raw_min or {})} | {str(k) for k in (raw_max or {})}
        return cls(
            namespace=namespace,
            name=name,
            min=min_,
            max=max_,
            max_names=frozenset(str(k) for k in (raw_max or {})),
            reported_names=frozenset(names),
        )


class QuotaInfo:
    """One namespace's quota with its usage: scheduler-plugins' ``ElasticQuotaInfo``.

    ``used`` is the sum of the requests of the pods in ``pods`` (uid -> requests):
    pods bound to a node and pods assumed by this scheduler but not bound yet.
    """

    __slots__ = ("pods", "spec", "used")

    def __init__(
        self, spec: QuotaSpec, used: Vector | None = None, pods: dict[str, Vector] | None = None
    ) -> None:
        self.spec = spec
        self.used: Vector = used if used is not None else {}
        self.pods: dict[str, Vector] = pods if pods is not None else {}

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    def clone(self) -> QuotaInfo:
        return QuotaInfo(self.spec, dict(self.used), dict(self.pods))

    def add_pod(self, uid: str, requests: Mapping[str, int]) -> bool:
        """Charge a pod (``addPodIfNotPresent``); False if it was already charged."""
        if uid in self.pods:
            return False
        self.pods[uid] = dict(requests)
        add_into(self.used, requests)
        return True

    def remove_pod(self, uid: str) -> bool:
        """Release a pod (``deletePodIfPresent``); False if it was not charged."""
        requests = self.pods.pop(uid, None)
        if requests is None:
            return False
        sub_from(self.used, requests)
        return True

    def used_over_min_with(self, request: Mapping[str, int]) -> bool:
        return over(request, self.used, self.spec.min, NO_GUARANTEE)

    def used_over_max_with(self, request: Mapping[str, int]) -> bool:
        return over(request, self.used, self.spec.max, UNLIMITED)

    def used_over_min(self) -> bool:
        return over(self.used, {}, self.spec.min, NO_GUARANTEE)


class QuotaSet(dict[str, QuotaInfo]):
    """Quotas by namespace: scheduler-plugins' ``ElasticQuotaInfos``."""

    def clone(self) -> QuotaSet:
        """A deep copy for one scheduling cycle (what-if changes must not leak)."""
        return QuotaSet((ns, info.clone()) for ns, info in self.items())

    def aggregated_used_over_min_with(self, request: Mapping[str, int]) -> bool:
        """Whether all quotas' used plus ``request`` exceeds the sum of all min.

        What a pod may borrow is what other quotas do not use of their min:
        the cluster-wide guaranteed total is the pool everybody shares.
        """
        used: Vector = {}
        minimum: Vector = {}
        for info in self.values():
            add_into(used, info.used)
            add_into(minimum, info.spec.min)
        add_into(used, request)
        return over(used, {}, minimum, NO_GUARANTEE)

    def charge(self, namespace: str, uid: str, requests: Mapping[str, int]) -> None:
        info = self.get(namespace)
        if info is not None:
            info.add_pod(uid, requests)

    def release(self, namespace: str, uid: str) -> None:
        info = self.get(namespace)
        if info is not None:
            info.remove_pod(uid)


def choose_quota(objects: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The ElasticQuota that governs a namespace: the oldest (then by name).

    scheduler-plugins supports one ElasticQuota per namespace and keeps the first
    it saw; the oldest is the same choice, made the same way by every replica.
    """
    best: tuple[str, str] | None = None
    chosen: Mapping[str, Any] | None = None
    for obj in objects:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
        if best is None or key < best:
            best, chosen = key, obj
    return chosen

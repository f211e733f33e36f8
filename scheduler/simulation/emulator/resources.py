"""The resource registry: which kinds exist, where they are served, how they behave.

Discovery, URL routing and the store all read this one table, so adding a
resource (built-in or from a CustomResourceDefinition) is a single
registration and the three can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
EMPTY_LIST_VERBS: tuple[str, ...] = ALL_VERBS


@dataclass(frozen=True, slots=True)
class Codec:
    """Converts between the stored form and the form one API version serves.

    Two resource types that share a storage (core/v1 and events.k8s.io/v1
    events, or the served versions of one CRD) differ only by their codec.
    """

    name: str
    to_served: Callable[[Obj], Obj]
    from_served: Callable[[Obj], Obj]


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: frozenset[str] = frozenset()
    # Collection the objects live in; types sharing it see the same objects.
    storage: str = ""
    # Field selector labels beyond metadata.name / metadata.namespace.
    field_labels: Callable[[Obj], dict[str, str]] | None = None
    codec: Codec | None = None
    # kube-apiserver strategy knobs that clients can observe.
    create_keeps_status: bool = False
    allow_unconditional_update: bool = True
    allow_create_on_update: bool = False
    return_deleted_object: bool = False
    strategic_merge: bool = True
    custom: bool = False
    list_kind: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def list_kind_name(self) -> str:
        return self.list_kind or f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def group_version(self) -> tuple[str, str]:
        return (self.group, self.version)


class Registry:
    """Resource types indexed by (group, version, plural) and by group."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        for rt in types:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._by_path[(rt.group, rt.version, rt.plural)] = rt

    def remove(self, group: str, version: str, plural: str) -> None:
        self._by_path.pop((group, version, plural), None)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        return list(self._by_path.values())

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_path.values() if rt.group == group and rt.version == version]

    def group_versions(self) -> dict[str, list[str]]:
        """Group -> served versions, preferred first, in registration order."""
        out: dict[str, list[str]] = {}
        for rt in self._by_path.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for versions in out.values():
            versions.sort(key=_version_priority)
        return out

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        for rt in self._by_path.values():
            if rt.api_version == api_version and rt.kind == kind:
                return rt
        return None


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version order: GA > beta > alpha, higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)

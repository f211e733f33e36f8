"""AnnotationGate: refuse to schedule pods that carry a configured annotation.

The smallest useful plugin, and the tutorial's example: one PreFilter hook,
an args model validated before the scheduler starts, and a clear reason.

A pod is rejected when it has the annotation ``key`` and, if ``values`` is
set, its value is one of them. The rejection is UnschedulableAndUnresolvable:
no node and no preemption can change a pod's annotations, so the pod waits
until it is edited (an update of the pod requeues it) or deleted.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduler.api import CycleState, NodeSet, Plugin, PodInfo, Status, hookimpl

# Kubernetes qualified names (apimachinery IsQualifiedName): [prefix/]name.
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid annotation key (empty list when it is)."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return ["prefix part must be non-empty"]
    if "/" in prefix:
        return [
            "a qualified name must consist of an optional DNS subdomain prefix and a name, "
            "separated by one '/' (e.g. 'example.com/MyName')"
        ]
    errors = []
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    elif not _NAME.match(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName', 'my.name', '123-abc')"
        )
    if prefix:
        if len(prefix) > 253:
            errors.append("prefix part must be no more than 253 characters")
        elif not _DNS_SUBDOMAIN.match(prefix):
            errors.append(
                "prefix part must be a lowercase RFC 1123 subdomain: lowercase alphanumeric "
                "characters, '-' or '.', starting and ending with an alphanumeric character "
                "(e.g. 'example.com')"
            )
    return errors


class AnnotationGateArgs(BaseModel):
    """``pluginConfig`` args of AnnotationGate."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    key: str = Field(
        description="Annotation key to look for, e.g. mycompany.com/environment.",
    )
    values: list[str] = Field(
        default_factory=list,
        description="Reject only pods whose annotation value is one of these; "
        "empty (the default) rejects any value.",
    )
    message: str = Field(
        default="",
        description="Extra text appended to the rejection reason (e.g. whom to ask).",
    )

    @field_validator("key")
    @classmethod
    def _valid_key(cls, key: str) -> str:
        errors = qualified_name_errors(key)
        if errors:
            raise ValueError(f"invalid annotation key {key!r}: {'; '.join(errors)}")
        return key

    @field_validator("values")
    @classmethod
    def _unique_values(cls, values: list[str]) -> list[str]:
        if len(set(values)) != len(values):
            raise ValueError("values must not repeat")
        return values


class AnnotationGate(Plugin):
    """PreFilter: pods with the configured annotation (and value) are not scheduled."""

    api_version = "1.0"
    Args = AnnotationGateArgs
    args: AnnotationGateArgs

    @hookimpl
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeSet) -> Status | None:
        value = pod.annotations.get(self.args.key)
        if value is None:
            return None  # nothing to say: the pod goes on to Filter
        if self.args.values and value not in self.args.values:
            return None
        reason = f"pod has annotation {self.args.key}={value!r}, which this scheduler refuses"
        if self.args.message:
            reason = f"{reason}: {self.args.message}"
        return Status.unresolvable(reason)

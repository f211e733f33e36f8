"""AnnotationGate: refuse to schedule pods that carry a configured annotation.

The smallest useful plugin, and the tutorial's example: one PreFilter hook,
an args model validated before the scheduler starts, and a clear reason.

A pod is rejected when it has the annotation ``key`` and, if ``values`` is
set, its value is one of them. The rejection is UnschedulableAndUnresolvable:
no node and no preemption can change a pod's annotations, so the pod waits
until it is edited (an update of the pod requeues it) or deleted.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduler.api import CycleState, NodeSet, Plugin, PodInfo, Status, hookimpl

# Annotation keys follow Kubernetes' qualified-name rule (apimachinery's
# IsQualifiedName), in the API server's own words.
from scheduler.model.names import qualified_name_errors


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

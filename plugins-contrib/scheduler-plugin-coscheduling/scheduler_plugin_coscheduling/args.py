"""``pluginConfig`` args of Coscheduling, with scheduler-plugins' names and defaults.

A ``CoschedulingArgs`` block written for scheduler-plugins' kube-scheduler
build loads unchanged, so a cluster can switch schedulers without rewriting
its configuration. scheduler-plugins' obsolete connection fields
(``kubeConfigPath``, ``kubeMaster``) are not accepted: this scheduler has
one API connection, set by ``clientConnection``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CoschedulingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    permit_waiting_time_seconds: int = Field(
        default=60,
        gt=0,
        alias="permitWaitingTimeSeconds",
        description=(
            "How long members of a PodGroup wait at Permit for the rest of the group "
            "when the PodGroup sets no scheduleTimeoutSeconds."
        ),
    )
    pod_group_backoff_seconds: int = Field(
        default=0,
        ge=0,
        alias="podGroupBackoffSeconds",
        description=(
            "After a member fails and the group is released, PreFilter rejects the whole "
            "group for this long so other workloads can use the room; 0 disables it."
        ),
    )

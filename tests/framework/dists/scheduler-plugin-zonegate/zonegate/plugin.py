"""Filters nodes to allowed zones and prefers the first allowed zone."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from scheduler.api import FilterResult, Plugin, hookimpl

ZONE = "topology.kubernetes.io/zone"


class ZoneGateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    allowed_zones: list[str] = Field(default_factory=lambda: ["a"], alias="allowedZones")


class ZoneGate(Plugin):
    api_version = "1.0"
    Args = ZoneGateArgs
    priority = 5

    @hookimpl
    def filter(self, state, pod, nodes):
        labels = nodes.table.labels
        ids = [labels.value_id(ZONE, z) for z in self.args.allowed_zones]
        ok = np.isin(nodes.label_values(ZONE), ids)
        return FilterResult.from_mask(ok, "node(s) are outside the allowed zones")

    @hookimpl
    def score(self, state, pod, nodes):
        first = nodes.table.labels.value_id(ZONE, self.args.allowed_zones[0])
        return np.where(nodes.label_values(ZONE) == first, 100, 0).astype(np.int64)

"""Gang scheduling for pluggable-scheduler, compatible with scheduler-plugins' Coscheduling.

Install the distribution, install the PodGroup CRD (``manifests/podgroup-crd.yaml``),
enable ``Coscheduling`` in a profile (it must replace PrioritySort as the
QueueSort plugin), and label each member pod with
``scheduling.x-k8s.io/pod-group: <PodGroup name>``.
"""

from scheduler_plugin_coscheduling.args import CoschedulingArgs
from scheduler_plugin_coscheduling.plugin import Coscheduling
from scheduler_plugin_coscheduling.podgroup import (
    POD_GROUP_LABEL,
    PodGroupError,
    PodGroupInfo,
    group_ref,
)

__all__ = [
    "POD_GROUP_LABEL",
    "Coscheduling",
    "CoschedulingArgs",
    "PodGroupError",
    "PodGroupInfo",
    "group_ref",
]

"""Gang-aware preemption for pluggable-scheduler: gangs are evicted whole, and preempt whole.

Install the distribution and enable ``GangPreemption`` in a profile in place
of ``DefaultPreemption``. Gangs are Coscheduling PodGroups
(``scheduling.x-k8s.io/pod-group`` label) and native Workload-API PodGroups
(``spec.schedulingGroup.podGroupName``); see :mod:`scheduler.model.gangs`.
"""

from pathlib import Path

from scheduler_plugin_gangpreemption.args import GangPreemptionArgs
from scheduler_plugin_gangpreemption.plugin import GangPreemption

__all__ = ["GangPreemption", "GangPreemptionArgs", "crd_manifest"]

_CRD_FILE = "podgroup-crd.yaml"


def crd_manifest() -> str:
    """Coscheduling's PodGroup CRD (scheduler-plugins' manifest, unchanged), as YAML.

    Only needed for Coscheduling PodGroups; the native PodGroups are built in
    to kube-apiserver 1.36 (feature gate GenericWorkload).
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / _CRD_FILE, here.parent / "manifests" / _CRD_FILE):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise FileNotFoundError(f"{_CRD_FILE} is missing from this installation of {__name__}")

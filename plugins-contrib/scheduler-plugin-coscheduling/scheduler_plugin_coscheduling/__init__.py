"""Gang scheduling for pluggable-scheduler, compatible with scheduler-plugins' Coscheduling.

Install the distribution, install the PodGroup CRD (``manifests/podgroup-crd.yaml``),
enable ``Coscheduling`` in a profile (it must replace PrioritySort as the
QueueSort plugin), and label each member pod with
``scheduling.x-k8s.io/pod-group: <PodGroup name>``.
"""

from pathlib import Path

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
    "crd_manifest",
    "group_ref",
]

_CRD_FILE = "podgroup-crd.yaml"


def crd_manifest() -> str:
    """The PodGroup CRD manifest this plugin needs, as YAML (for ``kubectl apply -f -``).

    Installed wheels carry it inside the package; a source checkout (or an
    editable install) has it in ``manifests/``.
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / _CRD_FILE, here.parent / "manifests" / _CRD_FILE):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise FileNotFoundError(f"{_CRD_FILE} is missing from this installation of {__name__}")

"""Elastic quotas for pluggable-scheduler, compatible with scheduler-plugins' CapacityScheduling.

Install the distribution, install the ElasticQuota CRD
(``manifests/elasticquota-crd.yaml``, scheduler-plugins' own), enable
``CapacityScheduling`` in a profile (at postFilter in place of
DefaultPreemption), and give namespaces an ElasticQuota with ``min`` and
``max``.
"""

from pathlib import Path

from scheduler_plugin_capacityscheduling.book import QuotaBook
from scheduler_plugin_capacityscheduling.plugin import CapacityScheduling
from scheduler_plugin_capacityscheduling.quota import QuotaError, QuotaInfo, QuotaSet, QuotaSpec

__all__ = [
    "CapacityScheduling",
    "QuotaBook",
    "QuotaError",
    "QuotaInfo",
    "QuotaSet",
    "QuotaSpec",
    "crd_manifest",
]

_CRD_FILE = "elasticquota-crd.yaml"


def crd_manifest() -> str:
    """The ElasticQuota CRD manifest this plugin reads, as YAML (for ``kubectl apply -f -``).

    Installed wheels carry it inside the package; a source checkout (or an
    editable install) has it in ``manifests/``.
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / _CRD_FILE, here.parent / "manifests" / _CRD_FILE):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise FileNotFoundError(f"{_CRD_FILE} is missing from this installation of {__name__}")

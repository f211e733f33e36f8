"""Reservations for pluggable-scheduler, with Koordinator's ``scheduling.koordinator.sh`` CRD.

Install the distribution, install the Reservation CRD
(``manifests/reservation-crd.yaml``, Koordinator's, unchanged), and enable
``Reservation`` in a profile. A Reservation whose ``spec.template.spec.schedulerName``
names the profile is placed on a node like a pod, holds its resources for
the pods its ``spec.owners`` match, and is released when consumed
(``allocateOnce``) or expired.
"""

from pathlib import Path

from scheduler_plugin_reservation.plugin import ReservationArgs, ReservationPlugin
from scheduler_plugin_reservation.reservation import (
    RESERVATIONS,
    Reservation,
    ReservationError,
)

__all__ = [
    "RESERVATIONS",
    "Reservation",
    "ReservationArgs",
    "ReservationError",
    "ReservationPlugin",
    "crd_manifest",
]

_CRD_FILE = "reservation-crd.yaml"


def crd_manifest() -> str:
    """The Reservation CRD manifest this plugin needs, as YAML (for ``kubectl apply -f -``).

    Installed wheels carry it inside the package; a source checkout (or an
    editable install) has it in ``manifests/``.
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / _CRD_FILE, here.parent / "manifests" / _CRD_FILE):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise FileNotFoundError(f"{_CRD_FILE} is missing from this installation of {__name__}")

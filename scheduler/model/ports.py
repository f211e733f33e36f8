"""Host ports a pod claims on its node, and kube-scheduler's NodePorts conflict rule.

Facts reproduced from kube-scheduler 1.36 (``GetHostPorts``, ``HostPortInfo``):

* only ports with ``hostPort > 0`` count;
* they come from regular containers and from *sidecar* init containers
  (``restartPolicy: Always``); ordinary init containers have exited before the pod
  runs, so their host ports are not reserved;
* with ``spec.hostNetwork`` the API server defaults a missing ``hostPort`` to the
  ``containerPort``; that defaulting is re-applied here for objects that did not go
  through an API server;
* an empty protocol means TCP and an empty hostIP means 0.0.0.0;
* two host ports conflict when protocol and port are equal and the IPs are equal
  strings or either is 0.0.0.0 (no address normalisation: ``::`` is not a wildcard).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "BIND_ALL_HOST_IP",
    "HostPort",
    "HostPortSet",
    "PortSpecError",
    "pod_host_ports",
    "ports_conflict",
]

#: The wildcard address: a port bound here conflicts with the same port on any IP.
BIND_ALL_HOST_IP: Final = "0.0.0.0"
_DEFAULT_PROTOCOL: Final = "TCP"


class PortSpecError(ValueError):
    """A container port entry whose fields have the wrong JSON types."""


@dataclass(frozen=True, slots=True)
class HostPort:
    """One (hostIP, protocol, hostPort) reservation, with defaults already applied."""

    host_ip: str
    protocol: str
    port: int


def ports_conflict(a: HostPort, b: HostPort) -> bool:
    """Whether two reservations cannot coexist on one node."""
    if a.protocol != b.protocol or a.port != b.port:
        return False
    return a.host_ip == b.host_ip or BIND_ALL_HOST_IP in (a.host_ip, b.host_ip)


def pod_host_ports(pod: Mapping[str, Any]) -> list[HostPort]:
    """The host ports ``pod`` reserves, sidecar init containers first, then containers.

    Duplicates are kept (kube-scheduler does not check a pod against itself).
    """
    spec = pod.get("spec") or {}
    host_network = bool(spec.get("hostNetwork"))
    ports: list[HostPort] = []
    for field in ("initContainers", "containers"):
        for c_index, container in enumerate(spec.get(field) or []):
            if field == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            for index, port in enumerate(container.get("ports") or []):
                where = f"spec.{field}[{c_index}].ports[{index}]"
                host_port = _host_port(port, host_network, where)
                if host_port is not None:
                    ports.append(host_port)
    return ports


class HostPortSet:
    """The host ports in use on one node, with kube-scheduler's conflict lookup.

    Reservations are reference-counted, so removing one of two pods that (through
    scheduling outside this scheduler) hold the same port keeps the port in use.
    Lookups are O(1) per port: reservations are indexed by (protocol, port).
    """

    __slots__ = ("_by_port",)

    def __init__(self, ports: Iterable[HostPort] = ()) -> None:
        self._by_port: dict[tuple[str, int], Counter[str]] = {}
        for port in ports:
            self.add(port)

    def add(self, port: HostPort) -> None:
        """Reserve ``port`` (ports <= 0 are ignored, as kube-scheduler does)."""
        if port.port <= 0:
            return
        self._by_port.setdefault((port.protocol, port.port), Counter())[port.host_ip] += 1

    def remove(self, port: HostPort) -> None:
        """Release one reservation of ``port``; releasing an unknown port is a no-op."""
        ips = self._by_port.get((port.protocol, port.port))
        if ips is None or ips[port.host_ip] <= 0:
            return
        ips[port.host_ip] -= 1
        if ips[port.host_ip] == 0:
            del ips[port.host_ip]
        if not ips:
            del self._by_port[(port.protocol, port.port)]

    def conflicts(self, port: HostPort) -> bool:
        """Whether reserving ``port`` would conflict with a reservation in the set."""
        if port.port <= 0:
            return False
        ips = self._by_port.get((port.protocol, port.port))
        if not ips:
            return False
        if port.host_ip == BIND_ALL_HOST_IP:
            return True
        return port.host_ip in ips or BIND_ALL_HOST_IP in ips

    def fits(self, ports: Iterable[HostPort]) -> bool:
        """Whether none of ``ports`` conflicts with the set (the NodePorts filter)."""
        return not any(self.conflicts(p) for p in ports)

    def __len__(self) -> int:
        return sum(len(ips) for ips in self._by_port.values())

    def __iter__(self) -> Iterator[HostPort]:
        for (protocol, number), ips in self._by_port.items():
            for ip in ips:
                yield HostPort(ip, protocol, number)

    def __contains__(self, port: object) -> bool:
        if not isinstance(port, HostPort):
            return False
        ips = self._by_port.get((port.protocol, port.port))
        return ips is not None and port.host_ip in ips


def _host_port(port: object, host_network: bool, where: str) -> HostPort | None:
    if not isinstance(port, Mapping):
        raise PortSpecError(f"{where}: expected an object, got {type(port).__name__}")
    host_port = _int_field(port, "hostPort", where)
    if host_network and host_port == 0:
        host_port = _int_field(port, "containerPort", where)
    if host_port <= 0:
        return None
    protocol = port.get("protocol") or _DEFAULT_PROTOCOL
    host_ip = port.get("hostIP") or BIND_ALL_HOST_IP
    if not isinstance(protocol, str) or not isinstance(host_ip, str):
        raise PortSpecError(f"{where}: protocol and hostIP must be strings")
    return HostPort(host_ip, protocol, host_port)


def _int_field(port: Mapping[str, Any], name: str, where: str) -> int:
    value = port.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise PortSpecError(f"{where}.{name}: expected an integer, got {value!r}")
    return value

"""Host ports and the NodePorts conflict rule, with cases from kube-scheduler's tests."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.ports import (
    BIND_ALL_HOST_IP,
    HostPort,
    HostPortSet,
    PortSpecError,
    pod_host_ports,
    ports_conflict,
)


def port(spec: str) -> HostPort:
    """'TCP/127.0.0.1/8080' -> HostPort."""
    protocol, ip, number = spec.split("/")
    return HostPort(ip, protocol, int(number))


def pod_with(
    *ports: dict[str, Any], host_network: bool = False, init: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": list(ports)}]}
    if host_network:
        spec["hostNetwork"] = True
    if init is not None:
        spec["initContainers"] = init
    return {"spec": spec}


def test_defaults_and_filtering() -> None:
    p = pod_with(
        {"containerPort": 80},
        {"containerPort": 80, "hostPort": 8080},
        {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
        {"containerPort": 81, "hostPort": 0},
    )
    assert pod_host_ports(p) == [HostPort("0.0.0.0", "TCP", 8080), HostPort("10.0.0.1", "UDP", 53)]


def test_host_network_defaults_host_port_to_container_port() -> None:
    p = pod_with(
        {"containerPort": 9100}, {"containerPort": 80, "hostPort": 8080}, host_network=True
    )
    assert pod_host_ports(p) == [HostPort("0.0.0.0", "TCP", 9100), HostPort("0.0.0.0", "TCP", 8080)]


def test_only_sidecar_init_containers_reserve_ports() -> None:
    init = [
        {"name": "setup", "ports": [{"containerPort": 1, "hostPort": 1000}]},
        {
            "name": "proxy",
            "restartPolicy": "Always",
            "ports": [{"containerPort": 2, "hostPort": 2000}],
        },
    ]
    p = pod_with({"containerPort": 3, "hostPort": 3000}, init=init)
    assert [hp.port for hp in pod_host_ports(p)] == [2000, 3000]


def test_no_ports() -> None:
    assert pod_host_ports({}) == []
    assert pod_host_ports({"spec": {"containers": [{"name": "c"}]}}) == []


def test_bad_port_types() -> None:
    with pytest.raises(PortSpecError):
        pod_host_ports(pod_with({"containerPort": 80, "hostPort": "80"}))
    with pytest.raises(PortSpecError):
        pod_host_ports(pod_with({"containerPort": 80, "hostPort": 80, "protocol": 6}))


# Cases from NodePorts' filter tests: (existing ports, wanted ports, fits).
FIT_CASES = [
    ([], ["UDP/127.0.0.1/8080"], True),
    (["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
    (["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    (["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    (["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    (
        ["UDP/127.0.0.1/8080", "UDP/127.0.0.1/8081"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        False,
    ),
    (
        ["UDP/127.0.0.1/8080", "UDP/127.0.0.1/8081"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.2/8081"],
        True,
    ),
    (["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
    (["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    (["TCP/127.0.0.1/8001"], ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"], False),
    (["TCP/10.0.10.10/8001"], ["TCP/0.0.0.0/8001"], False),
    (["TCP/0.0.0.0/8001"], ["UDP/127.0.0.1/8001"], True),
    (["UDP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], True),
    (["TCP/10.0.10.10/8001"], ["TCP/10.0.10.11/8001"], True),
    (["TCP/0.0.0.0/8001"], ["TCP/0.0.0.0/8001"], False),
    (["TCP/::/8001"], ["TCP/127.0.0.1/8001"], True),
]


@pytest.mark.parametrize(("existing", "wanted", "fits"), FIT_CASES)
def test_fits(existing: list[str], wanted: list[str], fits: bool) -> None:
    used = HostPortSet(port(p) for p in existing)
    assert used.fits(port(w) for w in wanted) is fits
    pairwise = not any(ports_conflict(port(e), port(w)) for e in existing for w in wanted)
    assert pairwise is fits


def test_set_bookkeeping() -> None:
    a = port("TCP/10.0.0.1/80")
    used = HostPortSet([a, a, port("UDP/0.0.0.0/53"), HostPort(BIND_ALL_HOST_IP, "TCP", 0)])
    assert len(used) == 2
    assert a in used and "x" not in used
    used.remove(a)
    assert a in used  # still held by the second reservation
    used.remove(a)
    assert a not in used
    used.remove(a)  # no-op
    assert set(used) == {port("UDP/0.0.0.0/53")}
    assert not used.conflicts(HostPort("0.0.0.0", "UDP", 0))
    assert used.conflicts(port("UDP/1.2.3.4/53"))

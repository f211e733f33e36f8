"""The extender plugin's wire format and HTTP client, against the toy extender on loopback."""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.config.extenders import Extender
from scheduler.observability.tls import self_signed_pem
from scheduler.plugins.extender import wire
from scheduler.plugins.extender.client import ExtenderClient
from scheduler.plugins.extender.wire import ExtenderCallError
from scheduler.testing.extender import RunningExtender, ToyExtender


def config(url: str, **fields: Any) -> Extender:
    return Extender.model_validate({"urlPrefix": url, **fields})


def test_answers_are_read_as_go_decodes_them() -> None:
    got = wire.parse_filter(
        {"nodenames": ["a"], "failednodes": {"b": "no"}, "FailedAndUnresolvableNodes": None},
        node_cache_capable=True,
    )
    assert (got.node_names, got.failed, got.failed_and_unresolvable) == (["a"], {"b": "no"}, {})
    # NodeNames counts only for a nodeCacheCapable extender (kube's rule).
    assert wire.parse_filter({"NodeNames": ["a"]}, node_cache_capable=False).node_names is None
    items = {"Nodes": {"Items": [{"Metadata": {"Name": "x"}}]}}
    assert wire.parse_filter(items, node_cache_capable=False).node_names == ["x"]
    assert wire.parse_priorities([{"host": "a", "score": 3}, {"Host": "b"}]) == [("a", 3), ("b", 0)]
    assert wire.parse_binding({"error": ""}) == ""


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([], "ExtenderFilterResult: expected a JSON object, got list"),
        ({"NodeNames": "a"}, "NodeNames: expected a list of strings"),
        ({"FailedNodes": {"a": 1}}, "FailedNodes: expected an object of node name to reason"),
        ({"Nodes": {"items": [{}]}}, "Nodes.items[0].metadata.name: expected a node name"),
        ({"Error": 5}, "Error: expected a string"),
    ],
)
def test_garbage_filter_answers_say_what_is_wrong(answer: Any, message: str) -> None:
    with pytest.raises(wire.ExtenderAnswerError, match=message.replace("[", r"\[")):
        wire.parse_filter(answer, node_cache_capable=True)


def test_garbage_priorities() -> None:
    with pytest.raises(wire.ExtenderAnswerError, match=r"\[0\].Score: expected an integer"):
        wire.parse_priorities([{"Host": "a", "Score": 1.5}])
    with pytest.raises(wire.ExtenderAnswerError, match="expected a JSON list, got dict"):
        wire.parse_priorities({"Host": "a"})


def test_requests_have_kubes_shape() -> None:
    pod = {"metadata": {"name": "p"}}
    by_name = wire.extender_args(pod, ["a"], [{"metadata": {"name": "a"}}], True)
    assert by_name == {"Pod": pod, "Nodes": None, "NodeNames": ["a"]}
    full = wire.extender_args(pod, ["a"], [{"metadata": {"name": "a"}}], False)
    assert full["NodeNames"] is None and full["Nodes"]["items"] == [{"metadata": {"name": "a"}}]
    assert wire.binding_args("ns", "p", "u", "n") == {
        "PodName": "p",
        "PodNamespace": "ns",
        "PodUID": "u",
        "Node": "n",
    }


@pytest.fixture
def pem(tmp_path: Path) -> tuple[Path, Path, str]:
    cert, key = self_signed_pem()
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert)
    key_path.write_bytes(key)
    return cert_path, key_path, cert.decode()


@pytest.fixture
async def https_toy(pem: tuple[Path, Path, str]) -> AsyncIterator[RunningExtender]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pem[0], pem[1])
    running = await RunningExtender(ToyExtender(), tls=context).start()
    try:
        yield running
    finally:
        await running.stop()


BODY = {"Pod": {}, "Nodes": None, "NodeNames": ["a", "b"]}


async def test_https_without_a_ca_does_not_verify(https_toy: RunningExtender) -> None:
    client = ExtenderClient(config(https_toy.url, enableHTTPS=True))
    try:
        got = await client.send("filter", BODY, None)
    finally:
        await client.close()
    assert got["NodeNames"] == ["a", "b"]


async def test_https_with_a_ca_verifies(
    https_toy: RunningExtender, pem: tuple[Path, Path, str]
) -> None:
    trusted = ExtenderClient(
        config(
            https_toy.url,
            enableHTTPS=True,
            tlsConfig={"caData": pem[2], "serverName": "localhost"},
        )
    )
    other_cert, _ = self_signed_pem()
    untrusted = ExtenderClient(
        config(https_toy.url, enableHTTPS=True, tlsConfig={"caData": other_cert.decode()})
    )
    try:
        assert (await trusted.send("filter", BODY, None))["NodeNames"] == ["a", "b"]
        with pytest.raises(ExtenderCallError, match="certificate verify failed"):
            await untrusted.send("filter", BODY, None)
    finally:
        await trusted.close()
        await untrusted.close()


async def test_a_call_ends_at_the_pods_deadline_before_its_timeout() -> None:
    # The answer comes after 1s, well within httpTimeout: only the deadline can cut it.
    running = await RunningExtender(ToyExtender(mode="slow", delay=1.0)).start()
    client = ExtenderClient(config(running.url, httpTimeout="30s"))
    try:
        with pytest.raises(ExtenderCallError, match="context deadline exceeded"):
            await client.send("filter", BODY, time.monotonic() + 0.2)
    finally:
        await client.close()
        await running.stop()


async def test_one_connection_pool_per_extender() -> None:
    running = await RunningExtender(ToyExtender()).start()
    client = ExtenderClient(config(running.url))
    try:
        await client.send("filter", BODY, None)
        pool = client._session
        await client.send("filter", BODY, None)
        assert client._session is pool and pool is not None
        assert pool.connector is not None and len(pool.connector._conns) == 1
    finally:
        await client.close()
        await running.stop()


def test_preemption_args_send_uids_or_pods_as_kube_does() -> None:
    victim = {"metadata": {"name": "v", "uid": "u1"}, "spec": {}}
    cached = wire.preemption_args({"metadata": {}}, {"n1": ([victim], 2)}, node_cache_capable=True)
    assert cached["NodeNameToVictims"] is None
    assert cached["NodeNameToMetaVictims"] == {
        "n1": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 2}
    }
    full = wire.preemption_args({"metadata": {}}, {"n1": ([victim], 0)}, node_cache_capable=False)
    assert full["NodeNameToMetaVictims"] is None
    assert full["NodeNameToVictims"] == {"n1": {"Pods": [victim], "NumPDBViolations": 0}}


def test_preemption_answers_are_read_as_go_decodes_them() -> None:
    got = wire.parse_preemption(
        {"nodenametometavictims": {"n1": {"pods": [{"uid": "a"}], "numpdbviolations": 1}}}
    )
    assert got == {"n1": wire.MetaVictims(["a"], 1)}
    assert wire.parse_preemption({"NodeNameToMetaVictims": None}) == {}
    assert wire.parse_preemption({"NodeNameToMetaVictims": {"n1": {}}}) == {
        "n1": wire.MetaVictims([], 0)
    }


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([], "ExtenderPreemptionResult: expected a JSON object, got list"),
        ({"NodeNameToMetaVictims": {"n1": None}}, "NodeNameToMetaVictims[n1]: expected a JSON"),
        ({"NodeNameToMetaVictims": {"n1": {"Pods": {}}}}, "Pods: expected a list of pods"),
        ({"NodeNameToMetaVictims": {"n1": {"Pods": [None]}}}, r"Pods\[0\]: expected a JSON"),
        (
            {"NodeNameToMetaVictims": {"n1": {"NumPDBViolations": "1"}}},
            "NumPDBViolations: expected an integer",
        ),
    ],
)
def test_garbage_preemption_answers_say_what_is_wrong(answer: Any, message: str) -> None:
    with pytest.raises(wire.ExtenderAnswerError, match=message.replace("[n1]", r"\[n1\]")):
        wire.parse_preemption(answer)

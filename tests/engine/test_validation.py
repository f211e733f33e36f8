"""check_pod_spec names the first malformed field under ``spec`` and passes a sound pod."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.engine.validation import check_pod_spec
from scheduler.state.pod import InvalidPodError

SOUND: dict[str, Any] = {
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    "nodeSelector": {"zone": "a"},
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    "schedulingGates": [{"name": "gate"}],
}


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {**SOUND, **spec}}


def test_a_sound_spec_passes() -> None:
    check_pod_spec(pod())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"nodeName": 3}, "spec.nodeName must be a string"),
        ({"containers": []}, "spec.containers must be a non-empty list of containers"),
        ({"volumes": {}}, "spec.volumes must be a list"),
        ({"tolerations": ["x"]}, "spec.tolerations[0] must be an object"),
        (
            {"containers": [{"name": "c", "resources": []}]},
            "spec.containers[0].resources must be an object",
        ),
        (
            {"initContainers": [{"resources": {"limits": ["cpu"]}}]},
            "spec.initContainers[0].resources.limits must map resource names to quantities",
        ),
        ({"nodeSelector": {"zone": 1}}, "spec.nodeSelector must map strings to strings"),
        ({"overhead": "none"}, "spec.overhead must be an object"),
        (
            {"tolerations": [{"operator": "Sometimes"}]},
            "spec.tolerations[0].operator 'Sometimes' is not supported",
        ),
        ({"tolerations": [{"effect": "Never"}]}, "spec.tolerations[0].effect 'Never' is not"),
        ({"schedulingGates": [{"name": ""}]}, "spec.schedulingGates[0].name must be a non-empty"),
    ],
)
def test_each_malformed_field_is_named(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidPodError) as raised:
        check_pod_spec(pod(**spec))
    assert str(raised.value).startswith(f"pod ns/p: {message}")


def test_a_missing_spec_is_named() -> None:
    with pytest.raises(InvalidPodError, match="pod ns/p: spec is missing or not an object"):
        check_pod_spec({"metadata": {"name": "p", "namespace": "ns"}})

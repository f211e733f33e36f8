"""Shared helpers of the deploy tests: the repository's kustomizations, rendered."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

REPO: Final = Path(__file__).resolve().parents[2]
DEPLOY: Final = REPO / "deploy"
BASE: Final = DEPLOY / "base"
OVERLAYS: Final = sorted(p.parent for p in (DEPLOY / "overlays").glob("*/kustomization.yaml"))
KUSTOMIZATIONS: Final = [BASE, *OVERLAYS]
DOCKERFILES: Final = [REPO / "Dockerfile", *sorted((DEPLOY / "overlays").glob("*/Dockerfile"))]
NAMESPACE: Final = "pluggable-scheduler"
SERVICE_ACCOUNT: Final = "pluggable-scheduler"


def kustomization_id(path: Path) -> str:
    return str(path.relative_to(DEPLOY))


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl is needed to render deploy/ (it embeds kustomize)")
    return found


@cache
def render_text(kustomization: Path) -> str:
    """``kubectl kustomize`` output of one kustomization (what `kubectl apply -k` applies)."""
    result = subprocess.run(
        [kubectl(), "kustomize", str(kustomization)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"kubectl kustomize {kustomization} failed:\n{result.stderr}"
    return result.stdout


def render(kustomization: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(render_text(kustomization)) if doc]


def find(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def scheduler_config_text(docs: list[dict[str, Any]]) -> str:
    """The config file the Deployment mounts: its ConfigMap's ``config.yaml``."""
    deployment = find(docs, "Deployment", "pluggable-scheduler")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    config_map = next(v["configMap"]["name"] for v in volumes if "configMap" in v)
    text: str = find(docs, "ConfigMap", config_map)["data"]["config.yaml"]
    return text


@pytest.fixture(params=KUSTOMIZATIONS, ids=kustomization_id)
def kustomization(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path

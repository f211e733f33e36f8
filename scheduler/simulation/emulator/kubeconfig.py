"""Kubeconfig for the emulator: plain HTTP on loopback, no credentials."""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig_text(
    url: str, *, name: str = "pluggable-scheduler-emulator", namespace: str = "default"
) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
        ],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=False)


def write_kubeconfig(path: str | Path, url: str) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(kubeconfig_text(url), encoding="utf-8")
    tmp.replace(target)
    return target

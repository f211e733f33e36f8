"""Static checks of the image and the manifests: hadolint, checkov, the dependency lock."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy import tools
from tests.deploy.conftest import DOCKERFILES, KUSTOMIZATIONS, REPO, render_text


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(REPO)))
def test_hadolint_is_clean(dockerfile: Path) -> None:
    result = subprocess.run(
        [tools.hadolint(), "--no-color", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _checkov(target_args: list[str], framework: str) -> dict[str, Any]:
    result = subprocess.run(
        [
            tools.checkov(),
            *target_args,
            "--framework",
            framework,
            "--output",
            "json",
            # Offline: no guideline or policy downloads from the vendor's platform.
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"BC_SKIP_MAPPING": "TRUE", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert result.stdout.strip(), f"checkov printed nothing:\n{result.stderr[-3000:]}"
    report = json.loads(result.stdout)
    reports = report if isinstance(report, list) else [report]
    merged: dict[str, Any] = {"failed_checks": [], "skipped_checks": [], "passed": 0}
    for one in reports:
        results = one.get("results", {})
        merged["failed_checks"] += results.get("failed_checks", [])
        merged["skipped_checks"] += results.get("skipped_checks", [])
        merged["passed"] += int(one.get("summary", {}).get("passed", 0))
    return merged


def _reason(check: dict[str, Any]) -> str:
    """The written reason of a skipped check (annotation or ``# checkov:skip=ID:reason``)."""
    comment = (check.get("check_result") or {}).get("suppress_comment") or ""
    return str(comment).strip()


def _assert_clean(report: dict[str, Any]) -> None:
    failed = [
        f"{c['check_id']} {c['check_name']} ({c['resource']}, {c['file_path']})"
        for c in report["failed_checks"]
    ]
    assert not failed, "checkov failed checks:\n" + "\n".join(failed)
    unexplained = [
        f"{c['check_id']} ({c['resource']})"
        for c in report["skipped_checks"]
        if _reason(c) in ("", "No comment provided")
    ]
    assert not unexplained, "checks skipped without a written reason:\n" + "\n".join(unexplained)
    assert report["passed"] > 20, "checkov ran (almost) no checks"


def test_checkov_passes_on_rendered_manifests(tmp_path: Path) -> None:
    for kustomization in KUSTOMIZATIONS:
        name = "-".join(kustomization.relative_to(REPO / "deploy").parts)
        (tmp_path / f"{name}.yaml").write_text(render_text(kustomization))
    _assert_clean(_checkov(["--directory", str(tmp_path)], "kubernetes"))


def test_checkov_passes_on_dockerfiles() -> None:
    args: list[str] = []
    for dockerfile in DOCKERFILES:
        args += ["--file", str(dockerfile)]
    _assert_clean(_checkov(args, "dockerfile"))


# --------------------------------------------------------------------------- the lock

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)\s*\\?$")


def _locked(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a pip-compile --generate-hashes file."""
    pins: dict[str, tuple[str, int]] = {}
    current: str | None = None
    for line in path.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            current = canonicalize_name(match["name"])
            pins[current] = (match["version"], 0)
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            version, count = pins[current]
            pins[current] = (version, count + 1)
        elif line and not line.startswith((" ", "#")):
            raise AssertionError(f"{path.name}: unexpected line {line!r}")
    return pins


def test_requirements_lock_pins_every_runtime_dependency_with_hashes() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    locked = _locked(REPO / "requirements.lock")
    for name, (version, hashes) in locked.items():
        assert hashes > 0, f"{name}=={version} has no --hash"
    for spec in project["project"]["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in locked, (
            f"{requirement.name} is in pyproject.toml but not in requirements.lock: "
            "run tools/lock-requirements.sh"
        )
        assert requirement.specifier.contains(locked[name][0], prereleases=True), (
            f"requirements.lock pins {name}=={locked[name][0]}, outside {spec!r}: "
            "run tools/lock-requirements.sh"
        )
    build = _locked(REPO / "deploy" / "docker" / "requirements-build.lock")
    for spec in project["build-system"]["requires"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in build and requirement.specifier.contains(build[name][0])

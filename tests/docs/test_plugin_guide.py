"""docs/writing-plugins.md: every hook documented, every command the reader types executed.

The extension-point reference must cover ``scheduler.api.hookspecs.HOOK_NAMES``
(after datasette's ``test_plugin_hooks_are_documented``). The walkthrough is
run for real: scaffold -> install -> the generated tests -> ``plugins list`` ->
``config validate`` and ``simulate`` with the guide's YAML -> build a wheel.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from scheduler.api.hookspecs import HOOK_NAMES
from scheduler.api.version import PLUGIN_API_VERSION

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "writing-plugins.md"
CONTRIB = REPO / "plugins-contrib"

# What the test does for each command the guide tells the reader to type.
EXECUTED = {
    "pluggable-scheduler new-plugin ZoneGate": "scaffold into a temporary directory",
    "cd scheduler-plugin-zone-gate": "later commands run in the generated directory",
    "pip install -e '.[test]'": "pip install --target SITE (same metadata, outside the dev venv)",
    "pytest": "the generated tests, with SITE on PYTHONPATH",
    "pluggable-scheduler plugins list": "shows ZoneGate from its entry point",
    "pluggable-scheduler config validate config.yaml": "the guide's config YAML",
    "pluggable-scheduler simulate --cluster cluster.yaml --config config.yaml": "the guide's YAML",
    "python -m build": "pip wheel --no-build-isolation (same backend), entry point checked",
}
# Run by tests/release/test_install_by_name.py against a package index on loopback.
EXECUTED_ELSEWHERE = {
    "twine check --strict dist/*": "PackageIndex.release, on the scaffolded ZoneGate",
    "twine upload dist/*": "PackageIndex.release uploads to the test index",
    "pip install scheduler-plugin-zone-gate": "by name, from the test index",
}
NOT_EXECUTED = {
    "python -m pip install build twine": "installs publishing tools (requirements-dev has them)",
}


def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


def commands(text: str) -> list[str]:
    return [
        line[2:].strip()
        for block in fenced_blocks(text, "console")
        for line in block.splitlines()
        if line.startswith("$ ")
    ]


def yaml_block(text: str, marker: str) -> str:
    (block,) = [b for b in fenced_blocks(text, "yaml") if marker in b]
    return block


def test_every_hook_is_documented() -> None:
    reference = guide().split("## 4. Extension-point reference", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^### `(\w+)`$", reference, flags=re.M)
    missing = [hook for hook in HOOK_NAMES if hook not in documented]
    assert not missing, f"hooks missing from the extension-point reference: {missing}"
    unknown = [name for name in documented if name not in HOOK_NAMES]
    assert not unknown, f"the reference documents hooks that do not exist: {unknown}"
    assert documented == list(HOOK_NAMES), "keep the reference in hook order"


def test_every_command_is_accounted_for() -> None:
    typed = commands(guide())
    unknown = sorted(set(typed) - set(EXECUTED) - set(EXECUTED_ELSEWHERE) - set(NOT_EXECUTED))
    assert not unknown, f"commands in the guide that no test runs or excuses: {unknown}"
    assert set(EXECUTED) <= set(typed), "EXECUTED lists commands the guide no longer has"


def run(args: list[str], cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"$ {' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "scheduler", *args]


def pip_target(source: Path, site: Path) -> list[str]:
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
        "--no-build-isolation", "--target", str(site), str(source),
    ]  # fmt: skip


def test_walkthrough(tmp_path: Path) -> None:
    text = guide()
    site = tmp_path / "site"

    # $ pluggable-scheduler new-plugin ZoneGate ; cd scheduler-plugin-zone-gate
    run(cli("new-plugin", "ZoneGate"), tmp_path)
    project = tmp_path / "scheduler-plugin-zone-gate"
    assert (project / "pyproject.toml").is_file()

    # $ pip install -e '.[test]'
    run(pip_target(project, site), project)

    # $ pytest
    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project, site)
    assert re.search(r"^5 passed", tests.stdout, flags=re.M), tests.stdout

    # $ pluggable-scheduler plugins list
    listing = run(cli("plugins", "list"), project, site).stdout
    row = next(line for line in listing.splitlines() if line.startswith("ZoneGate "))
    assert row.split() == [
        "ZoneGate",
        "scheduler-plugin-zone-gate",
        "0.1.0",
        PLUGIN_API_VERSION,
        "filter,score",
        "-",
    ]

    # $ pluggable-scheduler config validate config.yaml ; simulate ...
    (project / "config.yaml").write_text(yaml_block(text, "kind: KubeSchedulerConfiguration"))
    (project / "cluster.yaml").write_text(yaml_block(text, "kind: List"))
    run(cli("config", "validate", "config.yaml"), project, site)
    simulated = run(
        cli("simulate", "--cluster", "cluster.yaml", "--config", "config.yaml"), project, site
    ).stdout
    assert re.search(r"^shop/web\s+node-b\s+scheduled$", simulated, flags=re.M), simulated
    assert "`simulate` prints `shop/web  node-b  scheduled`" in text

    # $ python -m build (the wheel half, with the same build backend)
    dist = tmp_path / "dist"
    run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(dist), str(project)],
        project,
    )  # fmt: skip
    (wheel,) = dist.glob("scheduler_plugin_zone_gate-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(
            "scheduler_plugin_zone_gate-0.1.0.dist-info/entry_points.txt"
        ).decode()
    assert "[scheduler.plugins]\nZoneGate = scheduler_plugin_zone_gate.plugin:ZoneGate" in (
        entry_points
    )


def test_guide_config_example_is_a_valid_document() -> None:
    config = yaml.safe_load(yaml_block(guide(), "kind: KubeSchedulerConfiguration"))
    assert config["profiles"][0]["plugins"]["multiPoint"]["enabled"][0]["name"] == "ZoneGate"


@pytest.mark.parametrize(
    "dist",
    sorted(p.name for p in CONTRIB.iterdir() if (p / "README.md").is_file()),
)
def test_contrib_readme_configs_validate(dist: str, tmp_path: Path) -> None:
    """Each contrib README's configuration example passes ``config validate``."""
    readme = (CONTRIB / dist / "README.md").read_text(encoding="utf-8")
    configs = [b for b in fenced_blocks(readme, "yaml") if "KubeSchedulerConfiguration" in b]
    assert configs, f"{dist}/README.md has no configuration example"
    site = tmp_path / "site"
    run(pip_target(CONTRIB / dist, site), tmp_path)
    for i, block in enumerate(configs):
        path = tmp_path / f"config-{i}.yaml"
        path.write_text(block)
        run(cli("config", "validate", str(path)), tmp_path, site)

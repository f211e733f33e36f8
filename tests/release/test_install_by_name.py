"""From an empty virtualenv to a scheduled gang, by name, from a package index.

What a user does after a release: ``pip install pluggable-scheduler
scheduler-plugin-coscheduling`` with nothing but the index (the session's
``package_index``: pypiserver on loopback, our distributions uploaded with
twine, the pinned third-party wheels mirrored), then ``plugins list``,
``config validate`` and ``simulate``. A plugin author's path goes the same
way: ``new-plugin``, ``python -m build``, ``twine check --strict``, upload,
install by name, enable, ``explain``. And pip itself refuses a plugin whose
``pluggable-scheduler`` range excludes the installed release.

One virtualenv for the module (a user's), in the order a user goes;
progress lines and timings are printed (they are reported, never asserted).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import venv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from scheduler import __version__
from scheduler.api.version import PLUGIN_API_VERSION, parse_api_version
from scheduler.tools.packageindex import PackageIndex, clean_pip_env, pip_download
from scheduler.tools.scaffold import core_requirement

REPO = Path(__file__).resolve().parents[2]
GANG_CLUSTER = REPO / "examples" / "gang-cluster.yaml"
COSCHEDULING_CONFIG = REPO / "deploy" / "overlays" / "coscheduling" / "config.yaml"
STEP_TIMEOUT = 600


@dataclass
class UserVenv:
    """A user's virtualenv; pip in it sees the test index and nothing else."""

    path: Path
    index: PackageIndex
    started: float  # time.monotonic() when the empty venv was being created

    def env(self) -> dict[str, str]:
        return clean_pip_env(self.index.simple_url)

    def run(
        self, program: str, *args: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        command = [str(self.path / "bin" / program), *args]
        result = subprocess.run(
            command,
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
        if check and result.returncode != 0:
            pytest.fail(
                f"$ {' '.join(command)}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}"
            )
        return result

    def installed(self) -> dict[str, str]:
        listing = json.loads(self.run("pip", "list", "--format", "json").stdout)
        return {row["name"]: row["version"] for row in listing}


def requirement_text(requirement: str) -> str:
    """A requirement as pip and packaging print it (specifiers sorted: ``x<2,>=0.2.0``)."""
    parsed = Requirement(requirement)
    return f"{parsed.name}{SpecifierSet(str(parsed.specifier))}"


def _test_tool_pins() -> list[str]:
    """pytest and pytest-asyncio with what they need, pinned to this environment's versions."""
    pins: dict[str, str] = {}
    pending = ["pytest", "pytest-asyncio"]
    while pending:
        name = pending.pop()
        dist = metadata.distribution(name)
        canonical = dist.metadata["Name"].lower()
        if canonical in pins:
            continue
        pins[canonical] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                pending.append(req.name)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


@pytest.fixture(scope="module")
def user_venv(
    package_index: PackageIndex,
    tmp_path_factory: pytest.TempPathFactory,
    progress: Callable[[str], None],
) -> Iterator[UserVenv]:
    """``python -m venv`` + ``pip install pluggable-scheduler scheduler-plugin-coscheduling``."""
    workdir = tmp_path_factory.mktemp("user")
    # The test tools the opt-in check below installs; mirrored like any dependency.
    pins = workdir / "test-tools.txt"
    pins.write_text("\n".join(_test_tool_pins()) + "\n")
    package_index.mirror(pip_download([pins], workdir / "mirror"))

    progress("user venv: python -m venv, then pip install by name from the test index")
    started = time.monotonic()
    venv.EnvBuilder(with_pip=True).create(workdir / "venv")
    user = UserVenv(workdir / "venv", package_index, started)
    user.run("pip", "install", "pluggable-scheduler", "scheduler-plugin-coscheduling")
    progress(f"user venv: installed in {time.monotonic() - started:.1f} s from an empty venv")
    yield user


def test_installed_from_the_index_alone(user_venv: UserVenv) -> None:
    installed = user_venv.installed()
    assert installed["pluggable-scheduler"] == __version__
    assert installed["scheduler-plugin-coscheduling"] == "0.1.0"
    # Every file pip took came from the test index (nothing else is configured).
    freeze = user_venv.run("pip", "freeze").stdout
    assert "@ file:" not in freeze and " @ " not in freeze, freeze
    user_venv.run("pip", "check")


def test_plugins_list_shows_coscheduling(user_venv: UserVenv) -> None:
    listing = user_venv.run("pluggable-scheduler", "plugins", "list").stdout
    row = next((line for line in listing.splitlines() if line.startswith("Coscheduling ")), None)
    assert row is not None, listing
    assert row.split()[1:3] == ["scheduler-plugin-coscheduling", "0.1.0"]
    assert "load error" not in listing, listing


def test_config_enabling_coscheduling_validates(user_venv: UserVenv) -> None:
    result = user_venv.run("pluggable-scheduler", "config", "validate", str(COSCHEDULING_CONFIG))
    assert f"{COSCHEDULING_CONFIG}: valid (1 profile)" in result.stdout
    assert "queueSort Coscheduling" in result.stdout


def test_simulate_schedules_the_gang(user_venv: UserVenv, progress: Callable[[str], None]) -> None:
    result = user_venv.run(
        "pluggable-scheduler",
        "simulate",
        "--cluster",
        str(GANG_CLUSTER),
        "--config",
        str(COSCHEDULING_CONFIG),
        "--output",
        "json",
    )
    elapsed = time.monotonic() - user_venv.started
    placements = {p["pod"]: p["node"] for p in json.loads(result.stdout)["placements"]}
    trainers = [placements[f"ml/trainer-{i}"] for i in range(3)]
    # Three 3-CPU members on three 4-CPU nodes: all placed, one per node.
    assert sorted(trainers) == ["node-1", "node-2", "node-3"], placements
    # Two members of a group needing three: none placed (all or nothing).
    assert placements["ml/eval-0"] is None and placements["ml/eval-1"] is None, placements
    progress(f"empty venv -> pip install by name -> scheduled gang: {elapsed:.1f} s")


def test_pytest_plugin_is_opt_in(
    user_venv: UserVenv, tmp_path: Path, progress: Callable[[str], None]
) -> None:
    user_venv.run("pip", "install", "pytest", "pytest-asyncio")
    entry_points = user_venv.run(
        "python",
        "-c",
        "import importlib.metadata as m; print(sorted(e.name for e in m.entry_points("
        "group='pytest11')))",
    ).stdout
    assert "scheduler" not in entry_points, entry_points

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n")
    (suite / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    one = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
    started = time.monotonic()
    user_venv.run(*one, cwd=suite)
    alone = time.monotonic() - started
    started = time.monotonic()
    user_venv.run(*one, "-p", "scheduler.testing.pytest_plugin", cwd=suite)
    with_plugin = time.monotonic() - started
    progress(
        f"one-test suite: {alone:.2f} s without the pytest plugin, "
        f"{with_plugin:.2f} s with -p scheduler.testing.pytest_plugin"
    )

    fixture_test = (
        "async def test_fixture(running_scheduler):\n"
        "    sched = await running_scheduler()\n"
        "    assert sched.placements() == {}\n"
    )
    (suite / "test_one.py").write_text(fixture_test)
    off = user_venv.run(*one, cwd=suite, check=False)
    assert "fixture 'running_scheduler' not found" in off.stdout, off.stdout
    user_venv.run(*one, "-p", "scheduler.testing.pytest_plugin", cwd=suite)
    (suite / "conftest.py").write_text('pytest_plugins = ["scheduler.testing.pytest_plugin"]\n')
    user_venv.run(*one, cwd=suite)


NEEDS_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: pluggable-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}, {name: LoadAware}]
      disabled: [{name: PrioritySort}]
    preFilter:
      enabled: [{name: AnnotationGate}]
  pluginConfig:
  - name: AnnotationGate
    args: {key: example.com/hold}
"""


def test_config_to_packages(user_venv: UserVenv, tmp_path: Path) -> None:
    """A platform engineer's path: what does this config need? Install exactly that."""
    config = tmp_path / "config.yaml"
    config.write_text(NEEDS_CONFIG)
    # Not installed: the error names the distributions to install, without a traceback.
    for command in (
        ("config", "validate", str(config)),
        ("simulate", "--cluster", str(GANG_CLUSTER), "--config", str(config)),
    ):
        refused = user_venv.run("pluggable-scheduler", *command, check=False)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr
        assert (
            "profiles[0].plugins.multiPoint.enabled[1].name: plugin 'LoadAware' is not "
            "installed: it is provided by the distribution scheduler-plugin-loadaware: "
            "pip install scheduler-plugin-loadaware"
        ) in refused.stderr, refused.stderr
        assert "pip install scheduler-plugin-annotation-gate" in refused.stderr, refused.stderr

    table = user_venv.run("pluggable-scheduler", "plugins", "needs", str(config)).stdout
    rows = [line.split() for line in table.splitlines()]
    assert ["Coscheduling", "scheduler-plugin-coscheduling", "0.1.0", "installed"] in rows
    assert ["LoadAware", "scheduler-plugin-loadaware", "0.1.0", "index"] in rows
    assert ["AnnotationGate", "scheduler-plugin-annotation-gate", "0.1.0", "index"] in rows

    needed = user_venv.run(
        "pluggable-scheduler", "plugins", "needs", str(config), "--output", "requirements"
    ).stdout
    assert needed.splitlines() == [
        f"pluggable-scheduler=={__version__}",
        "scheduler-plugin-annotation-gate==0.1.0",
        "scheduler-plugin-coscheduling==0.1.0",
        "scheduler-plugin-loadaware==0.1.0",
    ]
    (tmp_path / "requirements.txt").write_text(needed)
    user_venv.run("pip", "install", "-r", str(tmp_path / "requirements.txt"))
    user_venv.run("pluggable-scheduler", "config", "validate", str(config))
    installed = user_venv.run(
        "pluggable-scheduler", "plugins", "needs", str(config), "--no-index"
    ).stdout
    assert "index" not in installed.split(), installed

    # A plugin no index has: exit 1, naming the field, the plugin and what was looked for.
    config.write_text(NEEDS_CONFIG.replace("{name: LoadAware}", "{name: NoSuchPlugin}"))
    missing = user_venv.run("pluggable-scheduler", "plugins", "needs", str(config), check=False)
    assert missing.returncode == 1
    assert (
        "profiles[0].plugins.multiPoint.enabled[1]: plugin 'NoSuchPlugin': not installed, "
        f"and {user_venv.index.simple_url} has no scheduler-plugin-no-such-plugin providing it"
    ) in missing.stderr, missing.stderr


ZONE_GATE_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: pluggable-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ZoneGate
        weight: 5
  pluginConfig:
  - name: ZoneGate
    args:
      nodeLabel: example.com/fast-disk
"""

ZONE_GATE_CLUSTER = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: plain, labels: {kubernetes.io/hostname: plain}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: fast, labels: {kubernetes.io/hostname: fast, example.com/fast-disk: "true"}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""

ZONE_GATE_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  schedulerName: pluggable-scheduler
  containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]
"""


def test_scaffolded_plugin_is_released_and_installed_by_name(
    user_venv: UserVenv, tmp_path: Path, progress: Callable[[str], None]
) -> None:
    project = tmp_path / "scheduler-plugin-zone-gate"
    user_venv.run("pluggable-scheduler", "new-plugin", "ZoneGate", "--directory", str(project))
    progress("scaffolded ZoneGate: python -m build, twine check --strict, twine upload")
    files = user_venv.index.release(project, tmp_path / "dist")
    assert sorted(f.name for f in files) == [
        "scheduler_plugin_zone_gate-0.1.0-py3-none-any.whl",
        "scheduler_plugin_zone_gate-0.1.0.tar.gz",
    ]

    user_venv.run("pip", "install", "scheduler-plugin-zone-gate")
    listing = user_venv.run("pluggable-scheduler", "plugins", "list").stdout
    row = next(line for line in listing.splitlines() if line.startswith("ZoneGate "))
    assert row.split()[1:5] == [
        "scheduler-plugin-zone-gate",
        "0.1.0",
        PLUGIN_API_VERSION,
        "filter,score",
    ]

    (tmp_path / "config.yaml").write_text(ZONE_GATE_CONFIG)
    (tmp_path / "cluster.yaml").write_text(ZONE_GATE_CLUSTER)
    (tmp_path / "pod.yaml").write_text(ZONE_GATE_POD)
    user_venv.run("pluggable-scheduler", "config", "validate", "config.yaml", cwd=tmp_path)
    explained = user_venv.run(
        "pluggable-scheduler",
        "explain",
        "--cluster",
        "cluster.yaml",
        "--pod",
        "pod.yaml",
        "--config",
        "config.yaml",
        cwd=tmp_path,
    ).stdout
    assert "ZG = ZoneGate x5" in re.sub(r"\s+", " ", explained), explained
    lines = explained.splitlines()
    header = next(line.split() for line in lines if line.split()[:1] == ["NODE"])
    rows = {
        line.split()[0]: line.split() for line in lines if line.split()[:1] in (["fast"], ["plain"])
    }
    zone_gate = header.index("ZG")
    # Weighted: MAX_NODE_SCORE (100) x weight 5 on the labelled node, 0 elsewhere.
    assert rows["fast"][zone_gate] == "500" and rows["plain"][zone_gate] == "0", explained
    assert rows["fast"][-2:] == ["<-", "chosen"], explained


def test_pip_refuses_a_plugin_for_another_api_major(user_venv: UserVenv, tmp_path: Path) -> None:
    """A plugin for the next plugin API major needs a later release: pip refuses it."""
    major, _ = parse_api_version(PLUGIN_API_VERSION)
    future_api = f"{major + 1}.0"
    current = Version(__version__)
    next_release = f"{current.major}.{current.minor + 1}.0"
    requirement = core_requirement(future_api, next_release)
    project = tmp_path / "scheduler-plugin-future-gate"
    user_venv.run("pluggable-scheduler", "new-plugin", "FutureGate", "--directory", str(project))
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    assert f'"{core_requirement()}"' in text
    pyproject.write_text(text.replace(f'"{core_requirement()}"', f'"{requirement}"'))
    plugin = project / "scheduler_plugin_future_gate" / "plugin.py"
    plugin.write_text(
        plugin.read_text().replace(
            f'api_version = "{PLUGIN_API_VERSION}"', f'api_version = "{future_api}"'
        )
    )
    user_venv.index.release(project, tmp_path / "dist")

    config = tmp_path / "config.yaml"
    config.write_text(ZONE_GATE_CONFIG.replace("ZoneGate", "FutureGate"))
    needs = user_venv.run("pluggable-scheduler", "plugins", "needs", str(config), check=False)
    assert needs.returncode == 1
    assert (
        f"plugin 'FutureGate': scheduler-plugin-future-gate 0.1.0 on {user_venv.index.simple_url} "
        f"provides it but requires {requirement_text(requirement)}, and this is {__version__}"
    ) in needs.stderr, needs.stderr

    before = user_venv.installed()
    refused = user_venv.run("pip", "install", "scheduler-plugin-future-gate", check=False)
    assert refused.returncode != 0, refused.stdout
    assert (
        f"Could not find a version that satisfies the requirement {requirement_text(requirement)} "
        f"(from scheduler-plugin-future-gate) (from versions: {__version__})"
    ) in refused.stderr, refused.stderr
    assert user_venv.installed() == before

"""Fixtures of the image tests: an engine, a base image, a package source, the built image.

Everything here runs only where a Docker engine can be used (one running, or
``dockerd`` installed and root to start it; ``.ci/run`` installs Debian's
``docker.io``); otherwise the tests are skipped with the reason. Long steps
(debootstrap, pip download, image builds) print progress lines on the terminal
while pytest captures everything else, so the session never looks hung.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from scheduler.tools.controlplane import ControlPlane, ControlPlaneError, start_control_plane
from scheduler.tools.packageindex import PackageIndex
from tests.image.baseimage import BaseImageUnavailable, import_base_image
from tests.image.engine import DockerEngine, EngineUnavailable, Progress, docker_engine
from tests.image.packages import REPO, PipSource


@dataclass
class Docker:
    """The engine plus what the session made on it, removed at the end."""

    engine: DockerEngine
    images: list[str]
    containers: list[str]

    def run(self, *args: str, check: bool = True, timeout: float = 300.0) -> str:
        return self.engine.run(*args, check=check, timeout=timeout).stdout

    def new_name(self, prefix: str) -> str:
        return f"{prefix}-{secrets.token_hex(4)}"


@pytest.fixture(scope="session")
def docker(progress: Progress) -> Iterator[Docker]:
    stack = contextlib.ExitStack()
    try:
        engine = stack.enter_context(docker_engine(progress))
    except EngineUnavailable as error:
        pytest.skip(f"no Docker engine: {error}")
    with stack:
        # On an engine found running, what existed before is the user's to keep.
        before = set(engine.run("images", "--all", "--quiet", "--no-trunc").stdout.split())
        made = Docker(engine, [], [])
        try:
            yield made
        finally:
            for container in made.containers:
                engine.run("rm", "--force", "--volumes", container, check=False)
            if engine.pid is None:  # our own dockerd's data root goes away with it
                for image in reversed(made.images):
                    engine.run("image", "rm", "--force", image, check=False)
                dangling = engine.run(
                    "images", "--quiet", "--no-trunc", "--filter", "dangling=true"
                ).stdout.split()
                for image in set(dangling) - before:
                    engine.run("image", "rm", image, check=False)


@pytest.fixture(scope="session")
def base_image(docker: Docker, progress: Progress) -> str:
    try:
        return import_base_image(docker.engine, progress)
    except BaseImageUnavailable as error:
        pytest.skip(f"no base image: {error}")


@pytest.fixture(scope="session")
def pip_source(package_index: PackageIndex) -> PipSource:
    """pip's packages for image builds: this release's package index (tests/conftest.py).

    Our distributions were uploaded to it with twine; a derived image's
    ``pip install scheduler-plugin-foo`` finds them by name, as users' will.
    """
    return PipSource(index_url=package_index.simple_url)


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    seconds: float
    size: int


def build_image(
    docker: Docker,
    progress: Progress,
    log_dir: Path,
    *,
    tag: str,
    context: Path,
    build_args: dict[str, str],
    pip: PipSource,
    dockerfile: Path | None = None,
) -> BuiltImage:
    """``docker build`` on the host network (for the loopback package source), timed."""
    args = ["build", "--network", "host", "--force-rm", "--tag", tag]
    if dockerfile is not None:
        args += ["--file", str(dockerfile)]
    for key, value in build_args.items():
        args += ["--build-arg", f"{key}={value}"]
    args += [*pip.build_args(), str(context)]
    docker.images.append(tag)
    log = log_dir / f"build-{tag.replace('/', '_').replace(':', '_')}.log"
    progress(f"building {tag} (log {log})")
    seconds = docker.engine.stream(args, log, f"building {tag}", progress)
    size = int(docker.run("image", "inspect", "--format", "{{.Size}}", tag).strip())
    progress(f"built {tag} in {seconds:.0f} s; image size {size / 1e6:.0f} MB")
    return BuiltImage(tag, seconds, size)


@pytest.fixture(scope="session")
def scheduler_image(
    docker: Docker,
    base_image: str,
    pip_source: PipSource,
    progress: Progress,
    tmp_path_factory: pytest.TempPathFactory,
) -> BuiltImage:
    """The repository's Dockerfile, built on the local base image from the repository root."""
    return build_image(
        docker,
        progress,
        tmp_path_factory.mktemp("builds"),
        tag=f"pluggable-scheduler:test-{secrets.token_hex(4)}",
        context=REPO,
        build_args={"BASE_IMAGE": base_image},
        pip=pip_source,
    )


@pytest.fixture(scope="module")
def plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A real kube-apiserver on loopback (reached from containers on the host network)."""
    try:
        bin_dir: Path = request.getfixturevalue("control_plane_binaries")
    except ControlPlaneError as error:
        pytest.skip(f"kube-apiserver cannot be built: {error}")
    with start_control_plane(bin_dir=bin_dir) as control_plane:
        yield control_plane

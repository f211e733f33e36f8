"""The import contract: layers depend one way, and plugins depend on the API only.

Read from the source with ``ast`` (every import statement counts, also those
inside functions and ``if TYPE_CHECKING:`` blocks), so a back-edge fails here
with the file, the line and the rule it breaks:

- ``scheduler.api`` (what plugin authors import) depends on nothing of the
  scheduler but itself and ``scheduler.model`` (pure Kubernetes value types,
  part of the public API). The one exception is ``scheduler/api/_compat.py``,
  which resolves the 1.x names (``NodeTable`` ...) for 1.x plugins; it is
  loaded only when such a name is asked for, which the last test checks.
- ``scheduler.model`` depends on nothing else of the scheduler.
- ``scheduler.state`` depends on ``api`` and ``model`` only: it implements the
  API's views, never the other way round.
- ``scheduler.framework`` never imports the daemon (``daemon``, ``engine``),
  the plugins, the Kubernetes client (``kube``), the CLI or the tooling
  (``simulation``, ``emulator``, ``bench``, ``testing``).
- Contrib plugins and what ``pluggable-scheduler new-plugin`` generates import
  only ``scheduler.api``, ``scheduler.testing`` and ``scheduler.model``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.tools.scaffold import scaffold

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "scheduler"
CONTRIB = REPO / "plugins-contrib"

PUBLIC = ("scheduler.api", "scheduler.testing", "scheduler.model")


def imports(path: Path, root: Path = REPO) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every import in ``path`` (``from a import b`` gives ``a.b`` too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)),
        key=lambda n: n.lineno,
    ):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                parts = path.relative_to(root).with_suffix("").parts[: -node.level]
                base = ".".join((*parts, node.module) if node.module else parts)
            else:
                base = node.module or ""
            yield node.lineno, base


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def violations(files: list[Path], allowed: tuple[str, ...], root: Path = REPO) -> list[str]:
    """Imports of ``scheduler.*`` modules outside ``allowed``."""
    out = []
    for path in files:
        for line, module in imports(path, root):
            if within(module, "scheduler") and not within(module, *allowed):
                out.append(f"{path.relative_to(root)}:{line}: imports {module}")
    return out


def sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "_vendor" not in p.parts)


def test_api_depends_on_nothing_but_itself_and_model() -> None:
    files = [p for p in sources(PACKAGE / "api") if p.name != "_compat.py"]
    assert files
    assert violations(files, ("scheduler.api", "scheduler.model")) == []


def test_only_api_getattr_reaches_the_compat_shim() -> None:
    users = [
        f"{p.relative_to(REPO)}:{line}"
        for p in sources(PACKAGE)
        for line, module in imports(p)
        if module == "scheduler.api._compat" and p != PACKAGE / "api" / "__init__.py"
    ]
    assert users == []


def test_model_depends_on_nothing_else() -> None:
    assert violations(sources(PACKAGE / "model"), ("scheduler.model",)) == []


def test_state_implements_the_api_and_depends_on_nothing_above() -> None:
    allowed = ("scheduler.api", "scheduler.model", "scheduler.state")
    assert violations(sources(PACKAGE / "state"), allowed) == []


def test_framework_does_not_reach_up() -> None:
    forbidden = (
        "scheduler.daemon",
        "scheduler.simulation",
        "scheduler.engine",
        "scheduler.plugins",
        "scheduler.kube",
        "scheduler.cli",
        "scheduler.tools",
        "scheduler.testing",
    )
    found = [
        f"{p.relative_to(REPO)}:{line}: imports {module}"
        for p in sources(PACKAGE / "framework")
        for line, module in imports(p)
        if within(module, *forbidden)
    ]
    assert found == []


CONTRIB_DISTS = sorted(p for p in CONTRIB.iterdir() if (p / "pyproject.toml").is_file())


@pytest.mark.parametrize("dist", CONTRIB_DISTS, ids=lambda p: p.name)
def test_contrib_plugins_use_the_public_api_only(dist: Path) -> None:
    packages = [p for p in dist.iterdir() if p.is_dir() and p.name.startswith("scheduler_plugin")]
    assert packages, f"{dist.name}: no plugin package found"
    files = [f for package in packages for f in sources(package)]
    assert violations(files, PUBLIC) == []


@pytest.mark.parametrize("dist", CONTRIB_DISTS, ids=lambda p: p.name)
def test_contrib_tests_use_the_public_api_only(dist: Path) -> None:
    """Daemon-level tests too: scheduler.testing runs the daemon and shows its state read-only."""
    assert violations(sources(dist / "tests"), PUBLIC) == []


def test_scaffolded_plugin_uses_the_public_api_only(tmp_path: Path) -> None:
    written = scaffold("ZoneGate", tmp_path / "zg")[2]
    files = [p for p in written if p.suffix == ".py"]
    assert len(files) == 3
    assert violations(files, PUBLIC, root=tmp_path) == []


def test_the_contract_catches_back_edges(tmp_path: Path) -> None:
    api = tmp_path / "scheduler" / "api"
    api.mkdir(parents=True)
    (api / "probe.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from scheduler.state.nodetable import NodeTable\n"
        "def late():\n"
        "    import scheduler.framework.runtime\n"
        "from ..engine import daemon\n",
        encoding="utf-8",
    )
    found = violations([api / "probe.py"], ("scheduler.api", "scheduler.model"), root=tmp_path)
    assert found == [
        "scheduler/api/probe.py:3: imports scheduler.state.nodetable",
        "scheduler/api/probe.py:5: imports scheduler.framework.runtime",
        "scheduler/api/probe.py:6: imports scheduler.engine",
    ]


def test_importing_the_api_loads_no_scheduler_internals() -> None:
    code = (
        "import sys, scheduler.api\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('scheduler.')"
        " and not m.startswith(('scheduler.api', 'scheduler.model')))\n"
        "print(loaded)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


#: The layers of docs/architecture.md, lowest first: each top-level part of
#: the package may import the parts of the layers below its own, never those
#: of its own layer or above. Parts sharing a layer are independent of each
#: other: the engine never imports a plugin (plugins are loaded by entry
#: point), and in-tree plugins may use the framework's helpers, as kube's
#: DefaultPreemption uses its framework's preemption package. A new part must
#: be placed here (and in the picture) before it can be imported.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer)
    for layer in (
        ("errors", "processgc"),
        ("model", "distributions"),
        ("kube",),  # the API adapter: kube's values only
        ("api",),
        ("state",),  # implements the api views
        ("observability",),  # serving /metrics reviews tokens through kube
        ("config",),
        ("framework",),
        ("engine", "plugins"),
        ("daemon",),
        ("simulation",),
        ("testing", "tools"),
        ("cli",),
        ("__main__",),
    )
)

HOUSE: dict[str, frozenset[str]] = {
    part: frozenset().union(*LAYERS[:depth]) for depth, layer in enumerate(LAYERS) for part in layer
}


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_part_of_the_house_imports_only_the_layers_below_it() -> None:
    parts = {
        p.name.removesuffix(".py")
        for p in PACKAGE.iterdir()
        if p.name != "__pycache__" and (p.suffix == ".py" or (p / "__init__.py").exists())
    } - {"__init__"}
    assert parts <= HOUSE.keys(), f"not placed in the layers yet: {sorted(parts - HOUSE.keys())}"
    found = []
    for path in sources(PACKAGE):
        rel = path.relative_to(PACKAGE)
        own = rel.parts[0].removesuffix(".py")
        if own == "__init__":
            continue
        for line, module in imports(path):
            part = _part(module)
            if within(module, "scheduler") and part and part != own and part not in HOUSE[own]:
                found.append(f"scheduler/{rel}:{line}: {own} imports {module}")
    assert found == [], "imports against the layers:\n" + "\n".join(found)


def test_the_engine_reaches_a_cluster_only_through_its_io_interface() -> None:
    """engine/io.py is what it needs; daemon/adapters.py serves it over kube/."""
    found = [
        f"{p.relative_to(REPO)}:{line}: imports {module}"
        for part in ("engine", "plugins")
        for p in sources(PACKAGE / part)
        for line, module in imports(p)
        if within(module, "scheduler.kube")
    ]
    assert found == []

"""The documentation site (mkdocs.yml) builds with warnings as errors; its reference is whole.

``mkdocs build --strict`` turns every warning into a failure: a page missing
from the nav, a broken link or anchor, an unresolved cross-reference (in a
page or a docstring), a docstring role naming nothing. The reference must
document every public name of the plugin API and the test kit, each with a
docstring, and the examples in those docstrings must run.
"""

from __future__ import annotations

import doctest
import html
import importlib
import linecache
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import griffe
import pytest
import yaml

import scheduler.api
import scheduler.testing
from scheduler.api.hookspecs import HOOK_NAMES

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "mkdocs.yml"
ROLES_EXTENSION = "tools/docs/griffe_sphinx_roles.py:SphinxRoles"

# Modules whose docstring examples (``>>>``) are run here.
DOCTESTED = [
    "scheduler.api",
    "scheduler.api.args",
    "scheduler.api.binding",
    "scheduler.api.cyclestate",
    "scheduler.api.events",
    "scheduler.api.plugin",
    "scheduler.api.results",
    "scheduler.api.status",
    "scheduler.api.version",
    "scheduler.api.views",
    "scheduler.model.gangs",
    "scheduler.testing.kit",
    "scheduler.testing.objects",
]


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = mkdocs_build(CONFIG, out)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}{proc.stderr}"
    return out


def reference_html(site: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (site / "reference").rglob("*.html"))


@pytest.mark.parametrize(
    ("module", "prefix"),
    [(scheduler.api, "scheduler.api"), (scheduler.testing, "scheduler.testing")],
)
def test_every_public_name_is_in_the_reference(site: Path, module: Any, prefix: str) -> None:
    text = reference_html(site)
    missing = [name for name in module.__all__ if f'id="{prefix}.{name}"' not in text]
    assert not missing, f"{prefix}.__all__ names missing from docs/reference: {missing}"


def test_every_hook_has_its_contract_on_the_hooks_page(site: Path) -> None:
    page = (site / "reference" / "hooks" / "index.html").read_text(encoding="utf-8")
    spec = "scheduler.api.hookspecs.SchedulerHookSpecs"
    missing = [hook for hook in HOOK_NAMES if f'id="{spec}.{hook}"' not in page]
    assert not missing, f"hooks missing from docs/reference/hooks.md: {missing}"


def test_no_unrendered_docstring_markup(site: Path) -> None:
    text = html.unescape(re.sub(r"<[^>]+>", "", reference_html(site)))
    leftovers = re.findall(r":(?:class|func|meth|attr|data|mod|exc|obj):`[^`]*`", text)
    assert not leftovers, f"Sphinx roles left untranslated: {sorted(set(leftovers))}"


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))

    def pages(nav: Any) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [p for item in nav for p in pages(item)]
        return [p for value in nav.values() for p in pages(value)]

    listed = set(pages(config["nav"]))
    on_disk = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert listed == on_disk, (
        f"not in the nav: {sorted(on_disk - listed)}; no such page: {sorted(listed - on_disk)}"
    )


def python_handler(config: dict[str, Any]) -> dict[str, Any]:
    """The mkdocstrings python handler's settings in a loaded mkdocs.yml."""
    (entry,) = [p for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p]
    handler: dict[str, Any] = entry["mkdocstrings"]["handlers"]["python"]
    return handler


def public_objects() -> list[griffe.Object | griffe.Alias]:
    """Every name of the two ``__all__`` lists, as the site's loader sees them."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    options = python_handler(config)["options"]
    (roles,) = [e for e in options["extensions"] if isinstance(e, dict)]
    extensions = griffe.load_extensions({str(REPO / ROLES_EXTENSION): roles[ROLES_EXTENSION]})
    loader = griffe.GriffeLoader(extensions=extensions, search_paths=[str(REPO)])
    loader.load("scheduler.api")
    loader.load("scheduler.testing")
    loader.load("scheduler.errors")
    loader.load("scheduler.model")
    loader.resolve_aliases(implicit=False, external=False)
    found = []
    for module in (scheduler.api, scheduler.testing):
        package = loader.modules_collection[module.__name__]
        found += [package[name] for name in module.__all__]
    return found


def test_every_public_name_and_member_has_a_docstring() -> None:
    undocumented = []
    for obj in public_objects():
        if not (obj.docstring and obj.docstring.value.strip()):
            undocumented.append(obj.path)
        target = obj.final_target if isinstance(obj, griffe.Alias) else obj
        if target.is_class:
            for name, member in target.members.items():
                if name.startswith("_") or member.is_alias:
                    continue
                callable_or_property = member.is_function or "property" in member.labels
                if callable_or_property and not (member.docstring and member.docstring.value):
                    undocumented.append(f"{obj.path}.{name}")
    assert not undocumented, f"public API without a docstring: {undocumented}"


def test_docstring_examples_run() -> None:
    attempted = 0
    for name in DOCTESTED:
        module = importlib.import_module(name)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
        assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
        attempted += result.attempted
    assert attempted >= 20, f"only {attempted} docstring examples ran"


def test_strict_build_fails_on_broken_references(tmp_path: Path) -> None:
    """What the strict build must catch: a broken link, anchor, cross-reference, role."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(
        "# Broken\n\n"
        "[a page that is not there](missing.md)\n\n"
        "[an anchor that is not there](other.md#nowhere)\n\n"
        "[a cross-reference to nothing][scheduler.api.NoSuchThing]\n\n"
        "::: brokendoc\n",
        encoding="utf-8",
    )
    (docs / "other.md").write_text("# Other\n", encoding="utf-8")
    package = tmp_path / "src"
    package.mkdir()
    (package / "brokendoc.py").write_text(
        '"""A module whose docstring names :class:`NoSuchClass`."""\n', encoding="utf-8"
    )
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    config.update(docs_dir=str(docs), nav=["index.md", "other.md"])
    python = python_handler(config)
    python["paths"] = [str(REPO), str(package)]
    options = python["options"]
    (roles,) = [e for e in options["extensions"] if isinstance(e, dict)]
    options["extensions"] = [
        {
            str(REPO / ROLES_EXTENSION): {
                "checked": [*roles[ROLES_EXTENSION]["checked"], "brokendoc"]
            }
        }
    ]
    broken = tmp_path / "mkdocs.yml"
    broken.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = mkdocs_build(broken, tmp_path / "site")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "'missing.md'" in output, output
    assert "'#nowhere'" in output, output
    assert "scheduler.api.NoSuchThing" in output, output
    assert "'NoSuchClass', which does not exist" in output, output


def python_blocks() -> list[tuple[str, str]]:
    blocks = []
    for page in sorted((REPO / "docs" / "reference").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for i, code in enumerate(re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)):
            blocks.append((f"{page.name}[{i}]", code))
    return blocks


@pytest.mark.parametrize(("where", "code"), python_blocks(), ids=[w for w, _ in python_blocks()])
def test_reference_page_examples_run(where: str, code: str) -> None:
    filename = f"<docs/reference/{where}>"
    # Registered so that a failing assert shows the example's line.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), {"__name__": "docs_example"})

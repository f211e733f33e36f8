"""docs/architecture.md names real files and folders, and every package has its line."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "scheduler"

# Backticked paths: `engine/queue.py`, `scheduler/daemon/`, `plugins-contrib/`.
PATH = re.compile(r"`((?:scheduler/|plugins-contrib/)?[a-z_]+/(?:[a-z_/]+\.py|[a-z_/]*))`")


def test_every_path_the_architecture_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = {m.group(1) for m in PATH.finditer(text)}
    assert len(named) > 20
    missing = [p for p in sorted(named) if not (REPO / p).exists() and not (PACKAGE / p).exists()]
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_package_folder_has_its_line_in_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    folders = sorted(
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    missing = [f for f in folders if f"| `scheduler/{f}/` |" not in text]
    assert missing == [], f"docs/architecture.md has no line for: {missing}"

"""docs/configuration.md is generated from the config models and must stay in step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scheduler.config.models import (
    LeaderElectionConfiguration,
    SchedulerConfiguration,
    SchedulerExtensions,
)
from scheduler.config.reference import configuration_reference, main

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "configuration.md"


def test_committed_reference_is_up_to_date() -> None:
    assert REFERENCE.read_text() == configuration_reference(), (
        "docs/configuration.md is out of date: run "
        "`python -m scheduler.config.reference --write docs/configuration.md`"
    )


def test_reference_documents_every_field_by_its_yaml_name() -> None:
    text = configuration_reference()
    for model in (SchedulerConfiguration, LeaderElectionConfiguration, SchedulerExtensions):
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in text, name
            assert field.description and " ".join(field.description.split())[:40] in text
    assert "| `leaseDuration` | duration | `15s` |" in text
    assert "| `serverAddress` | string | `0.0.0.0:10259` |" in text
    assert "At: `profiles[].plugins.*.enabled[]`" in text
    assert "``" not in text and ":class:" not in text


def test_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text("# old\n")
    assert main(["--check", str(stale)]) == 1
    assert main(["--write", str(stale)]) == 0
    assert main(["--check", str(stale)]) == 0


def test_module_runs_as_a_script() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scheduler.config.reference"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert result.stdout == configuration_reference()

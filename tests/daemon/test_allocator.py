"""The malloc settings the daemon applies at start (scheduler.daemon.allocator)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_settings_apply_in_a_fresh_process() -> None:
    """In a process of its own, so the test run's allocator is left as it was."""
    code = "from scheduler.daemon.allocator import keep_freed_memory; print(keep_freed_memory())"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    glibc = platform.libc_ver()[0] == "glibc"
    assert out.strip() == ("True" if glibc else "False")

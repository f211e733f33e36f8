"""Fail an image build when an installed plugin cannot be loaded.

Run in the Dockerfile's builder stage after the plugins are installed:
``pluggable-scheduler plugins list`` imports every installed plugin and reports
load errors (import failures, incompatible plugin-API versions, hooks that do
not match the hookspecs) without failing; this turns them into a non-zero exit,
so a broken plugin breaks the build rather than the scheduler's start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys


def main() -> int:
    subprocess.run(["pluggable-scheduler", "plugins", "list"], check=True)
    listing = subprocess.run(
        ["pluggable-scheduler", "plugins", "list", "--output", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    broken = [p for p in json.loads(listing.stdout)["plugins"] if p["error"]]
    for plugin in broken:
        print(
            f"error: plugin {plugin['name']} ({plugin['distribution']} {plugin['version']}) "
            f"does not load: {plugin['error']}",
            file=sys.stderr,
        )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

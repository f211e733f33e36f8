"""``python -m scheduler.tools.bench.perf``: same as ``pluggable-scheduler bench perf``."""

from scheduler.tools.bench.perf import main

if __name__ == "__main__":
    raise SystemExit(main())

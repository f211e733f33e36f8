"""``python -m scheduler.bench.perf``: same as ``pluggable-scheduler bench perf``."""

from scheduler.bench.perf import main

if __name__ == "__main__":
    raise SystemExit(main())

"""``pluggable-scheduler bench NAME [ARGS...]``: run one of the benchmarks.

Benchmarks are modules under :mod:`scheduler.tools.bench`, each with a
``main(argv)``; they are not part of the test run. This command only
dispatches: everything after NAME goes to the benchmark's own parser
(``pluggable-scheduler bench perf --help``).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from scheduler.errors import UserError

# Benchmark name on the command line -> module under scheduler.tools.bench.
BENCHMARKS: dict[str, str] = {
    "perf": "perf",
    "framework": "framework",
    "decision": "decision",
    "emulator": "emulator",
    "plugins-affinity": "plugins_affinity",
    "daemon": "daemon",
    "whatif": "whatif",
    "shadow": "shadow",
}


def resolve(name: str) -> Callable[[list[str]], Any]:
    """The ``main`` of benchmark `name`; a UserError if it is unknown or missing."""
    module_name = BENCHMARKS.get(name)
    if module_name is None:
        raise UserError(f"unknown benchmark {name!r}; choose from: {', '.join(BENCHMARKS)}")
    qualified = f"scheduler.tools.bench.{module_name}"
    try:
        module = importlib.import_module(qualified)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (exc.name == qualified or qualified.startswith(exc.name + ".")):
            raise UserError(
                f"benchmark {name!r} is not available in this installation "
                f"(module {qualified} is missing)"
            ) from None
        raise
    main = getattr(module, "main", None)
    if main is None or not callable(main):
        raise UserError(f"benchmark {name!r} ({qualified}) has no main(argv) function")
    return main  # type: ignore[no-any-return]


def _cmd_bench(args: argparse.Namespace) -> int:
    main = resolve(args.benchmark)
    argv = list(args.bench_args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    result = main(argv)
    return int(result) if isinstance(result, int) else 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run a benchmark (perf: scheduler_perf workloads vs kube-scheduler)",
        description="Run one benchmark; arguments after its name are the benchmark's own "
        "(see 'pluggable-scheduler bench NAME --help'). Benchmarks: " + ", ".join(BENCHMARKS),
    )
    parser.add_argument("benchmark", metavar="NAME", help=", ".join(BENCHMARKS))
    parser.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS")
    parser.set_defaults(func=_cmd_bench)

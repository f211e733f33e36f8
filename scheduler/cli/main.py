"""Entry point of the ``pluggable-scheduler`` command.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code. Keeping the wiring here, and only here,
means ``--help`` and ``--debug`` behave the same for every command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

from scheduler import __version__
from scheduler.errors import UserError

# Modules under scheduler.cli that contribute sub-commands, in --help order.
COMMAND_MODULES: tuple[str, ...] = (
    "run_cmd",
    "simulate_cmd",
    "explain_cmd",
    "whatif_cmd",
    "shadow_cmd",
    "replay_cmd",
    "plugins_cmd",
    "config_cmd",
    "emulator_cmd",
    "newplugin_cmd",
    "bench_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pluggable-scheduler",
        description="A Kubernetes scheduler whose scheduling logic comes from plugins "
        "installed as ordinary Python packages.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks for errors (for bug reports)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"scheduler.cli.{name}")
        module.register(subparsers)
    _add_debug_everywhere(subparsers)
    return parser


def _add_debug_everywhere(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Accept ``--debug`` after the command too (``run --debug``), where users type it.

    ``SUPPRESS`` as the default keeps a sub-command from resetting a
    ``--debug`` given before it.
    """
    for parser in subparsers.choices.values():
        parser.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _add_debug_everywhere(action)


# A reader that went away (`config defaults | head -1`): exit as a program
# killed by SIGPIPE would, 128 + 13, quietly.
BROKEN_PIPE_EXIT = 141


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: what is still buffered may hit a closed pipe
    except BrokenPipeError:
        _discard_stdout()
        return BROKEN_PIPE_EXIT
    return code


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again.

    (Python's own advice for SIGPIPE: without it, shutdown prints
    "Exception ignored ... BrokenPipeError".)
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # stdout is not a real file (captured in tests): nothing left to flush
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args))
    except UserError as err:
        if args.debug:
            traceback.print_exc()
        print(f"error: {err.render()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # the reader went away: not an error of ours (see main)
    except Exception as err:
        # A bug (ours or a plugin's at start-up): still one line, with the
        # exception type and text, so the log says what happened; the
        # traceback is one flag away, as errors.py promises.
        if args.debug:
            traceback.print_exc()
            print(f"error: unexpected {type(err).__name__}: {err}", file=sys.stderr)
        else:
            print(
                f"error: unexpected {type(err).__name__}: {err} "
                "(a bug: rerun with --debug for the traceback)",
                file=sys.stderr,
            )
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

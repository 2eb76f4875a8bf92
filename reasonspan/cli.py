"""The ``reasonspan`` command: demo, split, detect, bench, serve.

Each subcommand lives in its own module and is imported only when used, so ``reasonspan
split`` does not pay for the benchmark's imports.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from reasonspan.runtime.core.errors import ReasonspanError

EXIT_OK, EXIT_NO_FIT, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141

EXIT_CODES = f"""exit status:
  {EXIT_OK}    success
  {EXIT_NO_FIT}    detect: no parser fits, or the evidence ties
  {EXIT_USAGE}    bad arguments or input (unreadable file, bad tokenizer, invalid option, ...)
  {EXIT_INTERNAL}    internal error (a bug: set REASONSPAN_DEBUG=1 for the traceback)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_BROKEN_PIPE}  the reader of stdout went away (e.g. `| head`)
Every error is one line on stderr: `reasonspan COMMAND: message`."""

# subcommand -> (module, one-line help). Each module has `add_arguments(parser)` and
# `run(args) -> int`.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("reasonspan.demo", "stream realistic multi-turn requests through the parsers"),
    "split": ("reasonspan.split", "split one output into reasoning and content (JSON)"),
    "detect": ("reasonspan.detect_cli", "tell which parser fits a model folder"),
    "bench": ("reasonspan.bench", "measure per-token and per-step cost against a text baseline"),
    "serve": ("reasonspan.serve_cli", "an OpenAI-compatible server (simulated engine)"),
}


class _OneLineParser(argparse.ArgumentParser):
    """argparse with its errors as one line, like every other error of the CLI
    (argparse's own prints the whole usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="reasonspan",
        description="Token-level reasoning/content splitting for inference servers.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.add_arguments(sp)
        sp.set_defaults(_module=mod)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mod = getattr(args, "_module", None)
    if mod is None:
        parser.print_help()
        return 0 if args.command is None else 2
    where = f"reasonspan {args.command}"
    try:
        code = mod.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader closed the pipe: stop quietly, and keep Python from failing again
        # when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ReasonspanError, OSError, UnicodeError, ValueError) as exc:
        print(f"{where}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if os.environ.get("REASONSPAN_DEBUG"):
            raise
        print(
            f"{where}: internal error {type(exc).__name__}: {_one_line(exc)} "
            "(set REASONSPAN_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return int(code or 0)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())

"""The ``reasonspan`` command: demo, split, detect, bench, serve.

Each subcommand lives in its own module and is imported only when used, so ``reasonspan
split`` does not pay for the benchmark's imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# subcommand -> (module, one-line help). Each module has `add_arguments(parser)` and
# `run(args) -> int`.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("reasonspan.demo", "stream realistic multi-turn requests through the parsers"),
    "split": ("reasonspan.split", "split one output into reasoning and content (JSON)"),
    "detect": ("reasonspan.detect_cli", "tell which parser fits a model folder"),
    "bench": ("reasonspan.bench", "measure per-token and per-step cost against a text baseline"),
    "serve": ("reasonspan.serve_cli", "an OpenAI-compatible server (simulated engine)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reasonspan",
        description="Token-level reasoning/content splitting for inference servers.",
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
    code = mod.run(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())

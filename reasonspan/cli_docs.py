"""The command-line flag tables of docs/cli.md, generated from the argparse parsers
themselves so a flag added, renamed or retyped can never leave the docs behind
(tests/test_docs.py checks the page's copy, as it does for docs/families.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

COMMANDS = ("serve", "split", "bench", "demo", "detect")
"""The subcommands documented, in docs/cli.md's order."""


def subparsers() -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, as ``reasonspan`` builds it."""
    from reasonspan.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise RuntimeError("reasonspan's parser has no subcommands")


def _cell(text: str) -> str:
    """Text for a Markdown table cell: pipes escaped, one line."""
    return " ".join(text.replace("|", "\\|").split())


def _value(action: argparse.Action) -> str:
    """What the flag takes: nothing (a switch), a choice, or a value with its range."""
    if action.nargs == 0:
        return "—"
    if action.choices is not None:
        return " \\| ".join(f"`{c}`" for c in action.choices)
    metavar = action.metavar or action.dest.upper()
    shown = f"`{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
    kind = _kind(action.type)
    return f"{shown} ({kind})" if kind else shown


def _kind(convert: object) -> str:
    """What a flag's value must be: ``integer`` / ``number`` for the builtins, else the
    first line of the converting function's docstring (none: nothing to say)."""
    if convert is int:
        return "integer"
    if convert is float:
        return "number"
    doc = getattr(convert, "__doc__", None) if callable(convert) and convert is not str else None
    return doc.strip().splitlines()[0].rstrip(".") if doc else ""


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS):
        return "—"
    return f"`{action.default}`"


def _groups(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Notes for flags in a mutually exclusive group: which others they exclude."""
    notes: dict[str, str] = {}
    for group in parser._mutually_exclusive_groups:
        names = [a.option_strings[0] for a in group._group_actions if a.option_strings]
        for name in names:
            others = ", ".join(f"`{n}`" for n in names if n != name)
            need = "; one of them is required" if group.required else ""
            notes[name] = f" (not with {others}{need})"
    return notes


def command_markdown(name: str, parser: argparse.ArgumentParser) -> str:
    """One command's table: every flag but ``--help`` and hidden ones."""
    lines = [
        f"`reasonspan {name}`: {_cell(parser.description or '')}",
        "",
        "| flag | value | default | what it does |",
        "|---|---|---|---|",
    ]
    notes = _groups(parser)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        flag = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
        if not action.option_strings:
            flag += " (positional)"
        if isinstance(action, argparse._AppendAction):
            flag += " (repeatable)"
        what = (action.help or "") % {"default": action.default, "prog": parser.prog}
        what += notes.get(action.option_strings[0], "") if action.option_strings else ""
        lines.append(f"| {flag} | {_value(action)} | {_default(action)} | {_cell(what)} |")
    return "\n".join(lines)


def flags_markdown(commands: Sequence[str] = COMMANDS) -> str:
    """The flag tables of ``commands``, from the parsers ``reasonspan`` builds (the page's
    legend under them is added by :mod:`reasonspan.docs`)."""
    parsers = subparsers()
    return "\n\n".join(command_markdown(name, parsers[name]) for name in commands)

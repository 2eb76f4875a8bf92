"""The generated reference pages under docs/: the families table (docs/families.md, from the
registry) and the command line's flag tables (docs/cli.md, from the argparse parsers,
:mod:`reasonspan.cli_docs`), so the docs cannot drift from the code.

The table is rendered from each family's ``spec`` and from what its ``resolve_switches``
hook actually does with chat_template_kwargs (probed, not hard-coded), so a family whose
hook reads ``thinking_mode`` or ``reasoning_effort`` is documented as faithfully as one that
only lists ``thinking_switches``. Regenerate the pages, from the clone's root, with::

    python -m reasonspan.docs --write

and check them (as tests/test_docs.py does) with ``--check``. Each table sits between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` on its page (:data:`PAGES`), so the prose
around it stays hand-written.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import families
from reasonspan.runtime.parser.switches import PROBE_VALUES, SwitchEffect, defaults, switch_effects


def section_markers(name: str) -> tuple[str, str]:
    """The comments that bound generated section ``name`` on its page."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


REGENERATE = "python -m reasonspan.docs --write"
"""The command that rewrites every generated section (run from the clone's root)."""

PAGES: dict[str, str] = {"families": "docs/families.md", "flags": "docs/cli.md"}
"""The page each generated section lives on, relative to the clone's root (the README links
to them: its first screen stays short)."""


def builtin_families() -> list[type[ReasoningParser]]:
    """The families shipped in reasonspan.architectures (entry-point plugins left out, so
    an installed plugin never makes the page look stale)."""
    return [c for c in families() if c.__module__.startswith("reasonspan.architectures")]


# ---------------------------------------------------------------------- rendering

_ANGLE = re.compile(r"<[^\s<>]+>")


def _code(text: str) -> str:
    """A marker as a code span that survives a Markdown table (``|`` escaped, newlines
    shown). A marker holding backticks (xLAM's fence) is delimited by a run of backticks it
    does not hold, padded with spaces, as CommonMark asks; one backtick would end the span
    at the marker's own."""
    shown = text.replace("\n", "\\n").replace("|", "\\|")
    if "`" not in shown:
        return f"`{shown}`"
    runs = {len(run) for run in re.findall(r"`+", shown)}
    fence = "`" * next(n for n in range(1, len(shown) + 2) if n not in runs)
    return f"{fence} {shown} {fence}"


def _prose(text: str) -> str:
    """Free text for a table cell: tag-like words become code spans (GitHub would drop them
    as HTML), ``|`` is escaped; existing code spans are kept."""
    out: list[str] = []
    parts = text.split("`")
    for i, part in enumerate(parts):
        if i % 2 and i < len(parts) - 1:  # inside an existing (closed) code span
            out.append("`" + part.replace("|", "\\|") + "`")
            continue
        pos = 0
        for m in _ANGLE.finditer(part):
            out.append(part[pos : m.start()].replace("|", "\\|"))
            out.append(_code(m.group(0)))
            pos = m.end()
        out.append(part[pos:].replace("|", "\\|"))
    return "".join(out).replace("\n", " ")


def _markers(texts: Sequence[str], text_markers: Sequence[str]) -> str:
    return ", ".join(_code(t) + ("†" if t in text_markers else "") for t in texts) or "—"


def _thinking(cls: type[ReasoningParser]) -> str:
    """Default, then each effect with the kwargs that cause it. A string switch that most
    probed values flip (hy_v3's ``reasoning_effort``) is shown by the values that do not."""
    thinking, _ = defaults(cls)
    cell = "on" if thinking else "off"
    groups: dict[str, list[str]] = {}
    by_key: dict[tuple[str, str], list[SwitchEffect]] = {}
    for e in switch_effects(cls):
        if e.thinking != thinking:
            what = "on" if e.thinking else "off"
        else:
            what = "turn starts in reasoning" if e.prompt_start else "turn starts in content"
        by_key.setdefault((what, e.key), []).append(e)
    strings = [v for v in PROBE_VALUES if isinstance(v, str)]
    for (what, key), effects in by_key.items():
        flipped = [e.value for e in effects if isinstance(e.value, str)]
        if len(flipped) > len(strings) // 2:
            kept = [json.dumps(v) for v in strings if v not in flipped]
            groups.setdefault(what, []).append(f"`{key}` other than {', '.join(kept)}")
            groups[what].extend(_code(e.kwarg) for e in effects if not isinstance(e.value, str))
        else:
            groups.setdefault(what, []).extend(_code(e.kwarg) for e in effects)
    if not groups:
        return cell + " (no switch)"
    return cell + "; " + "; ".join(f"{what}: {', '.join(kw)}" for what, kw in groups.items())


def _default_start(cls: type[ReasoningParser]) -> str:
    """Where a turn starts with no prompt and no template, and what that rests on."""
    thinking, prompt_start = defaults(cls)
    state = ("reasoning" if prompt_start else "content") if thinking else "content (thinking off)"
    source = cls.spec.start_source or "documented: the family's reference parser"
    kind, _, detail = source.partition(": ")
    return f"**{state}** ({kind}) {_prose(detail)}".rstrip()


def _tool_calls(cls: type[ReasoningParser]) -> str:
    """The family's tool-call format: where a call region opens and closes, the body kinds
    read there, and where those facts come from."""
    fmt = cls.spec.tool_calls
    if fmt is None:
        if cls.tool_call_reader is not ReasoningParser.tool_call_reader:
            return "tool-call messages the reasoning machine labels (`tool_call_reader`)"
        return "—"
    opens = ", ".join(_code(m) for m in fmt.open) or (
        f"answer starting {_code(fmt.leading)}" if fmt.leading else "—"
    )
    if fmt.close:
        closes = ", ".join(_code(m) for m in fmt.close) + (
            " (optional)" if fmt.close_optional else ""
        )
    else:
        closes = "end of output"
    if fmt.leading and fmt.open:
        opens += f", or an answer starting {_code(fmt.leading)}"
    kinds = ", ".join(fmt.kinds)
    source = f"; {_prose(fmt.source)}" if fmt.source else ""
    return f"{opens} … {closes}: {kinds}{source}"


def family_row(cls: type[ReasoningParser]) -> str:
    """One Markdown table row for a family."""
    spec = cls.spec
    tm = spec.text_markers
    start_end = f"{_markers(spec.start, tm)} / {_markers(spec.end, tm)}"
    cells = [
        f"`{spec.name}`",
        ", ".join(f"`{a}`" for a in spec.aliases) or "—",
        start_end,
        _markers(spec.tool, tm),
        _markers(spec.strip, tm),
        _markers(spec.turn, tm),
        _thinking(cls),
        _default_start(cls),
        _tool_calls(cls),
        _prose(spec.notes) or "—",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| name | aliases | start / end | implicit end (kept as content) | stripped | "
    "turn start (bounds the prompt scan) | thinking (default; chat_template_kwargs) | "
    "default start (from template or documented) | tool calls (open … close: body kinds; "
    "source) | notes |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def families_markdown(classes: Sequence[type[ReasoningParser]] | None = None) -> str:
    """The supported-families table (built-in families unless ``classes`` is given), with
    its legend; its links are relative to docs/, where the table lives."""
    rows = [family_row(c) for c in (builtin_families() if classes is None else classes)]
    legend = (
        "† matched on the bytes of several tokens where the tokenizer has no single token "
        'for it. "default start": where a turn starts when no prompt is given and the model '
        "folder has no chat template (a folder with one decides it by rendering it, see "
        "[Why the answer is in the wrong field]"
        "(../README.md#why-the-answer-is-in-the-wrong-field)); "
        '"template" means checked against the official template\'s generation prompt, '
        '"documented" the family\'s documentation or reference parser.\n\n'
        f"Generated from the registry by `{REGENERATE}`; do not edit by hand."
    )
    return "\n".join([HEADER, *rows]) + "\n\n" + legend


def section(text: str, name: str) -> str:
    """The text between section ``name``'s markers in ``text`` (raises if they are missing)."""
    begin, end = section_markers(name)
    try:
        _head, rest = text.split(begin, 1)
        body, _tail = rest.split(end, 1)
    except ValueError:
        raise ValueError(f"no {begin} ... {end} section") from None
    return body.strip("\n")


def replace_section(text: str, table: str, name: str) -> str:
    """``text`` with the text between section ``name``'s markers replaced by ``table``."""
    section(text, name)  # validates the markers
    begin, end = section_markers(name)
    head, rest = text.split(begin, 1)
    _body, tail = rest.split(end, 1)
    return f"{head}{begin}\n{table}\n{end}{tail}"


def generated() -> dict[str, str]:
    """Every generated section, by name (its page: :data:`PAGES`)."""
    from reasonspan.cli_docs import flags_markdown

    legend = f"Generated from the argument parsers by `{REGENERATE}`; do not edit by hand."
    return {"families": families_markdown(), "flags": f"{flags_markdown()}\n\n{legend}"}


def stale(root: Path, sections: dict[str, str] | None = None) -> list[str]:
    """One line per generated section under ``root`` that differs from ``sections`` (default:
    :func:`generated`) or whose page or markers are missing; empty when all are current."""
    problems: list[str] = []
    for name, table in (generated() if sections is None else sections).items():
        page = PAGES[name]
        try:
            current = section((root / page).read_text(encoding="utf-8"), name)
        except (OSError, ValueError) as exc:
            problems.append(f"{page}: cannot read its {name} section ({exc})")
            continue
        if current != table:
            problems.append(f"{page}: the {name} table is stale")
    return problems


def write(root: Path, sections: dict[str, str] | None = None) -> list[Path]:
    """Replace every generated section on its page under ``root``; the pages written."""
    written: list[Path] = []
    for name, table in (generated() if sections is None else sections).items():
        path = root / PAGES[name]
        path.write_text(replace_section(path.read_text(encoding="utf-8"), table, name), "utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m reasonspan.docs",
        description="Print the generated tables, or write/check their copies in docs/.",
    )
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="replace the tables on their pages")
    group.add_argument("--check", action="store_true", help="exit 1 if a page's table is stale")
    ap.add_argument("--root", default=".", help="the clone's root (default: %(default)s)")
    args = ap.parse_args(argv)
    root = Path(args.root)
    sections = generated()
    if args.write:
        for path in write(root, sections):
            print(f"wrote {path}")
        return 0
    if args.check:
        problems = stale(root, sections)
        for line in problems:
            print(f"{line}; run, from the clone's root: {REGENERATE}")
        return 1 if problems else 0
    print("\n\n".join(sections.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

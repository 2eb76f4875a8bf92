"""Reading a declared format's regular expressions for what they say literally: the
delimiters around a capture group, and the optional whitespace beside it (layout, which
becomes a :class:`Trim`). Patterns are read with Python's own regex reader, so a pattern
means here exactly what ``re`` compiles it to; anything that is not a literal where a
delimiter must be is a :class:`DeclarationError` naming the property and the pattern.
(Split from :mod:`.declared`, which compiles the whole declaration.)

A pattern comes from a file in a model folder, so it is bounded before Python's reader sees
it: :data:`MAX_PATTERN_CHARS` characters and :data:`MAX_PATTERN_NESTING` groups one inside
the other (the reader recurses per group: 10,000 nested groups were a ``RecursionError``).
Real declarations stay far below both (the longest published pattern, Gemma 4's top-level
``x-regex``, is 196 characters and nests 3 deep)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.core.spec import Trim

WHITESPACE = " \t\n\r\f\v"
r"""What a whitespace class (``\s``) stands for in a declaration's patterns."""

# Python's own regex reader, so a pattern is read exactly as ``re`` compiles it (the stdlib
# keeps it as ``re._parser`` from 3.11 on; ``sre_parse`` is its deprecated alias).
_sre: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

Item = tuple[Any, Any]

MAX_PATTERN_CHARS = 4096
"""The longest pattern read (characters): 20 times the longest published one (Gemma 4's
top-level ``x-regex``, 196); no delimiter is longer than its pattern, and the bound on
delimiters themselves (``declared.MAX_DELIMITER_CHARS``) is checked after reading."""

MAX_PATTERN_NESTING = 32
"""How many groups a pattern may nest one inside the other: published patterns nest at most
3 deep, and Python's regex reader (like :func:`_find` here) recurses once per level."""


def _ws(item: Item) -> tuple[str, int] | None:
    """A whitespace atom, optional or repeated: ``(characters, at most; 0 = any)``.
    A bare required whitespace literal is part of a delimiter, not layout."""
    op, av = item
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        lo, hi, sub = av
        inner = list(sub)
        if len(inner) != 1:
            return None
        chars = _ws_chars(inner[0])
        if chars is None or (lo, hi) == (1, 1):
            return None
        return chars, 0 if hi == _c.MAXREPEAT else int(hi)
    return None


def _ws_chars(item: Item) -> str | None:
    op, av = item
    if op == _c.LITERAL and chr(av) in WHITESPACE:
        return chr(av)
    if op == _c.IN and list(av) == [(_c.CATEGORY, _c.CATEGORY_SPACE)]:
        return WHITESPACE
    return None


def _lit(item: Item) -> str | None:
    op, av = item
    return chr(av) if op == _c.LITERAL else None


def _alternatives(item: Item) -> tuple[list[str], bool] | None:
    """A delimiter written as a group: ``(?:LIT)?`` or ``(?:LIT|^|$)`` → the literals, and
    whether the group may match nothing (an anchor alternative, or ``?``)."""
    op, av = item
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] == 0 and av[1] == 1:
        text = _only_literal(list(av[2]))
        return ([text], True) if text else None
    if op == _c.BRANCH:
        lits: list[str] = []
        optional = False
        for alt in av[1]:
            seq = [i for i in alt if _ws(i) is None]
            if seq and all(i[0] == _c.AT for i in seq):
                optional = True
                continue
            text = _only_literal(seq)
            if not text:
                return None
            lits.append(text)
        return (lits, optional) if lits else None
    return None


def _only_literal(seq: Sequence[Item]) -> str | None:
    chars = [_lit(i) for i in seq]
    return "".join(c for c in chars if c is not None) if seq and None not in chars else None


def _find(seq: Sequence[Item], group: int) -> list[tuple[list[Item], int]] | None:
    """Where capture group ``group`` is: the sequences that hold it, outermost first, each
    with the index of the item the group is in."""
    items = list(seq)
    for i, (op, av) in enumerate(items):
        if op == _c.SUBPATTERN:
            if av[0] == group:
                return [(items, i)]
            found = _find(av[3], group)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            found = _find(av[2], group)
        elif op == _c.BRANCH:
            found = next((f for alt in av[1] if (f := _find(alt, group)) is not None), None)
        else:
            continue
        if found is not None:
            return [(items, i), *found]
    return None


def _side(items: list[Item], step: int) -> tuple[list[str], bool, tuple[str, int] | None, bool]:
    """The delimiter on one side of a captured part (``items`` run away from it; ``step``
    is -1 when they are reversed): its literals, whether it may be absent, the layout
    whitespace between it and the part, and whether anything else stands there."""
    ws: tuple[str, int] | None = None
    k = 0
    while k < len(items) and (w := _ws(items[k])) is not None:
        ws = w if ws is None else (ws[0] + w[0], 0)
        k += 1
    chars: list[str] = []
    while k < len(items) and (c := _lit(items[k])) is not None:
        chars.append(c)
        k += 1
    if chars:
        return ["".join(chars[::step])], False, ws, True
    if k < len(items):
        alts = _alternatives(items[k])
        if alts is not None:
            return alts[0], alts[1], ws, True
    return [], True, ws, k < len(items)


def _outward(
    path: list[tuple[list[Item], int]], before: bool
) -> tuple[list[str], bool, tuple[str, int] | None]:
    """:func:`_side` from the group outwards: a group alone in an optional wrapper
    (``(?P<content>.+?)?``) takes its delimiter from the sequence around the wrapper."""
    ws: tuple[str, int] | None = None
    for seq, i in reversed(path):
        items = seq[:i][::-1] if before else seq[i + 1 :]
        lits, optional, w, blocked = _side(items, -1 if before else 1)
        if w is not None:
            ws = w if ws is None else (ws[0] + w[0], 0)
        if lits or blocked:
            return lits, optional, ws
    return [], True, ws


def _trim(ws: tuple[str, int] | None, side: Literal["lead", "trail"]) -> Trim:
    if ws is None:
        return Trim()
    chars = "".join(dict.fromkeys(ws[0]))
    if side == "lead":
        return Trim(lead=chars, lead_max=ws[1])
    return Trim(trail=chars, trail_max=ws[1])


class Captured(msgspec.Struct, frozen=True):
    """The delimiters around one captured part of a regex (what :func:`captured_part` gives
    the declaration readers, schema and template)."""

    before: list[str]
    before_optional: bool
    after: list[str]
    lead: Trim
    trail: Trim


def _nesting(pattern: str) -> int:
    """How deep the pattern's parentheses nest, read without recursion: escapes and
    character classes skipped, so a bracket there is no group (an overestimate at worst:
    the bound is checked on this before the pattern is parsed)."""
    depth = deepest = 0
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):  # a ']' first in a class is a literal
                i += 1
            continue
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def parse_pattern(source: str, prop: str, pattern: object) -> Any:
    """The pattern read by Python's own regex reader, once it is within the bounds (the
    declaration readers, schema and template, read their patterns with it)."""
    if not isinstance(pattern, str):
        raise DeclarationError(source, prop, pattern, "a pattern must be a string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise DeclarationError(
            source,
            prop,
            pattern,
            f"pattern length: {len(pattern):,} characters, over the limit of {MAX_PATTERN_CHARS:,}",
        )
    depth = _nesting(pattern)
    if depth > MAX_PATTERN_NESTING:
        raise DeclarationError(
            source,
            prop,
            pattern,
            f"pattern nesting: groups nest {depth:,} deep, over the limit of {MAX_PATTERN_NESTING}",
        )
    try:
        return _sre.parse(pattern)
    except (re.error, RecursionError) as exc:
        raise DeclarationError(source, prop, pattern, f"not a regular expression: {exc}") from exc


def captured_part(source: str, prop: str, pattern: str, group: str | None) -> Captured | None:
    """The delimiters around ``(?P<group>…)``, or around the one capture group when
    ``group`` is None; None when there is no such group."""
    tree = parse_pattern(source, prop, pattern)
    gid = tree.state.groupdict.get(group) if group else (1 if tree.state.groups > 1 else None)
    if gid is None:
        return None
    path = _find(list(tree), gid)
    if path is None:  # pragma: no cover - the parser reported the group
        return None
    seq, i = path[-1]
    inner = list(seq[i][1][3])
    before, optional, ws_lead = _outward(path, before=True)
    after, _, ws_trail = _outward(path, before=False)
    if not before:  # the group holds its own delimiters: (?P<tool_calls><\|tool_call>.*)
        before, optional, _, _ = _side(inner, 1)
    if not after:
        after, _, _, _ = _side(inner[::-1], -1)
    return Captured(before, optional, after, _trim(ws_lead, "lead"), _trim(ws_trail, "trail"))


def leading_literal(source: str, prop: str, pattern: str) -> str:
    """The literal a pattern starts with, past optional whitespace (``\\s*<tool_call>``)."""
    lits, _, _, _ = _side(list(parse_pattern(source, prop, pattern)), 1)
    return lits[0] if len(lits) == 1 else ""


def trailing_literal(source: str, prop: str, pattern: str) -> str:
    """The literal a pattern ends with, before optional whitespace (as :func:`leading_literal`;
    both shared with the declaration readers, schema and template)."""
    lits, _, _, _ = _side(list(parse_pattern(source, prop, pattern))[::-1], -1)
    return lits[0] if len(lits) == 1 else ""


# ---------------------------------------------------------------------- the two formats

"""Reads of a call region's bytes that need none of the extractor's state.

Where the earliest of some markers is, whether a region cut at some byte ends inside a
string argument (so a close marker there is argument text), the closer taken off a body,
and the calls a region cut by the end of the output completed. Its own module because
these are byte scans over a format's facts, with their own edge cases (escapes, nested
JSON values), while :mod:`.extract` keeps one request's held tokens and decides regions.
"""

from __future__ import annotations

import re

from reasonspan.runtime.core.tool_format import CompiledToolFormat, ToolFormat
from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.runtime.toolcalls.sections import SPACE

Bytes = bytes | bytearray
"""A region's bytes: a join of its tokens, or the open region's grown buffer."""

WS = SPACE.encode("ascii")
"""JSON's whitespace (:data:`.sections.SPACE`) as bytes, for the byte scans here and in
:mod:`.extract`."""
_QUOTE_OR_BACKSLASH = re.compile(rb'["\\]')


def first_marker(buf: Bytes, markers: tuple[bytes, ...], start: int = 0) -> tuple[int, int]:
    """``(offset, length)`` of the earliest of ``markers`` in ``buf`` from ``start``, or
    ``(-1, 0)``."""
    best, size = -1, 0
    for m in markers:
        at = buf.find(m, start)
        if at >= 0 and (best < 0 or at < best):
            best, size = at, len(m)
    return best, size


def ends_in_json_value(buf: Bytes, markers: tuple[bytes, ...], i: int) -> bool:
    """Each JSON value after one of ``markers`` (a format's ``json_after``), from byte
    ``i``, is skipped whole (so markers in its strings are never taken for the next one);
    is ``buf`` cut inside a string of one?"""
    while True:
        at, size = first_marker(buf, markers, i)
        if at < 0:
            return False
        j = min(
            (k for k in (buf.find(b"{", at + size), buf.find(b"[", at + size)) if k >= 0),
            default=-1,
        )
        if j < 0:
            return False
        ends, inside = _top_level_ends(buf, j, first=True)
        if not ends:
            return inside  # the value runs to the end of buf
        i = ends[0]


def ends_in_string(buf: Bytes, start: int, quote: bytes) -> bool:
    """Does the body in ``buf`` from ``start`` end inside a string argument: between an
    opening and a closing ``quote`` (a format's ``string_quote``), or else in a JSON
    string?"""
    if quote:
        return buf.count(quote, start) % 2 == 1
    body = buf[start:].lstrip(WS)
    if body[:1] not in (b"{", b"["):
        return False  # not a JSON body (Qwen3's <tool_call> may hold XML)
    # Only quotes and backslashes matter: visit those (a long argument of prose has
    # few), a backslash inside a string escaping the byte after it.
    inside = False
    escaped_at = -1
    for m in _QUOTE_OR_BACKSLASH.finditer(body):
        at = m.start()
        if at == escaped_at:
            continue
        if body[at] == 0x22:  # double quote
            inside = not inside
        elif inside:  # backslash
            escaped_at = at + 1
    return inside


def completed_calls(fmt: ToolFormat, body: str, tools: Tools) -> list[ToolCall]:
    """The calls of a cut region's ``body``: its longest prefix ending at a call closer
    that the format reads (a closer inside an argument string does not read)."""
    ends: list[int] = []
    for m in fmt.call_close:
        at = body.find(m)
        while at >= 0:
            ends.append(at + len(m))
            at = body.find(m, at + 1)
    for end in sorted(set(ends), reverse=True):
        got = fmt.parse(body[:end], tools)
        if got:
            return got
    return []


def strip_closer(fmt: CompiledToolFormat, body: bytes) -> bytes:
    """``body`` without the close marker (a token's or a byte run's) it ends with."""
    table = fmt.token_bytes
    for tid in fmt.close_ids:
        m = table[tid]
        if body.endswith(m):
            return body[: len(body) - len(m)]
    for m in fmt.close_bytes:
        if body.endswith(m):
            return body[: len(body) - len(m)]
    return body


def value_ends(body: Bytes, most: int = 8) -> list[int]:
    """Where a top-level JSON (or pythonic) value of ``body`` ends: the offsets just after
    each ``}`` or ``]`` that closes one (double-quoted strings skipped), the last ``most``
    of them, latest first. A region that runs to the end of the output and does not read
    as calls is tried up to each of these, so prose after a complete call
    (``{"name": "f", …} I used f.``) does not lose the call."""
    return _top_level_ends(body)[0][::-1][:most]


def _top_level_ends(buf: Bytes, start: int = 0, first: bool = False) -> tuple[list[int], bool]:
    """The offsets just after each ``}`` or ``]`` that closes a top-level value of
    ``buf[start:]`` (double-quoted strings skipped; ``first``: only the first), and whether
    ``buf`` ends inside a string."""
    ends: list[int] = []
    depth, inside, escaped = 0, False, False
    for k in range(start, len(buf)):
        b = buf[k]
        if inside:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                inside = False
        elif b == 0x22:  # double quote
            inside = True
        elif b in b"{[":
            depth += 1
        elif b in b"}]" and depth > 0:
            depth -= 1
            if depth == 0:
                ends.append(k + 1)
                if first:
                    break
    return ends, inside

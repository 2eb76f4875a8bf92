"""Reading a section of marker-delimited calls, shared by the kinds that write one.

DeepSeek V3 / V3.1 (``<｜tool▁call▁begin｜>…<｜tool▁call▁end｜>`` inside
``<｜tool▁calls▁begin｜>…``) and Kimi K2 (``<|tool_call_begin|>…<|tool_call_end|>`` inside
``<|tool_calls_section_begin|>…``) write a section that holds calls one after another, each
between a call-begin and a call-end marker, with a head (the name, or an id that encodes
it) split from a JSON object of arguments by a separator marker. What differs between them
is only how one call's head reads; this module does the rest once:

- calls are read in order, each from its begin marker; its arguments are read as one JSON
  value (``raw_decode``), so a marker written inside an argument string (which the
  family's tokenizer even makes a special token) is text of the argument, never the end of
  the call or the start of another (the section's own closer inside a string is kept from
  ending the region by the extractor: :attr:`.format.ToolFormat.json_after`);
- between calls there may be whitespace (``noise=False``: anything else means the section
  is not well formed, and it goes back to the content verbatim) or, for a family whose
  reference parser skips it, any text (``noise=True``: Kimi K2's vLLM parser reads the calls
  out of ``<|tool_calls_section_begin|> spurious noise <|tool_call_begin|>…``);
- a call that does not read (a head that names no function, arguments that are not one
  JSON object a client can take, text between them and its call-end marker) is dropped and
  its siblings are kept, as vLLM's and SGLang's parsers keep the calls their regular
  expressions match: it runs to the first call-end marker after it, and one with no
  call-end marker of its own before the next call-begin means the section is not well
  formed. A section whose calls all fail to read goes back to the content verbatim;
- a section with no call at all reads as no calls (its markup is not content).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from reasonspan.runtime.core.tool_types import ToolCall, checked_call, dump_arguments

_decoder = json.JSONDecoder()
SPACE = " \t\r\n"
"""The whitespace the readers skip between elements and strip from names and keys
(JSON's four: never ``\\f``, ``\\v`` or a Unicode space, as :func:`skip_space`); the kind
modules and partial readers that skip or strip it import this one set."""
SPACE_RUN = re.compile(f"[{SPACE}]*")
"""A run of :data:`SPACE` as a pattern, for the JSON lexer (:mod:`.json_stream`), which
skips a long indent in one ``match`` rather than a character at a time."""
_ANY_SPACE = re.compile(r"\s*")

ReadCall = Callable[[str, int], "tuple[ToolCall, int] | None"]
"""``(section text, offset just after a call-begin marker) -> (call, offset after its
arguments)``, or None when the call does not read."""


def skip_space(text: str, i: int) -> int:
    """The offset after the :data:`SPACE` at ``text[i]``: the whitespace JSON and the
    marker sections allow between elements (a loop: the runs are mostly one character)."""
    while i < len(text) and text[i] in SPACE:
        i += 1
    return i


def skip_any_space(text: str, i: int) -> int:
    """The offset after the whitespace at ``text[i]`` in Python's sense (``\\s``, the set
    ``str.isspace`` tests), wider than :func:`skip_space` on purpose: the tag grammars
    (dsml, xtml, gcml's parameters, solar) allow ``\\s*`` between elements, so their
    whole and streamed readers skip what those patterns skip (a ``\\f`` or a no-break
    space too), where JSON allows only its four."""
    m = _ANY_SPACE.match(text, i)
    assert m is not None  # (an empty match at worst)
    return m.end()


def json_object_at(text: str, i: int) -> tuple[dict[str, Any], int] | None:
    """The JSON object starting at ``text[i]`` (after whitespace) and the offset after it."""
    i = skip_space(text, i)
    try:
        value, end = _decoder.raw_decode(text, i)
    except ValueError:
        return None
    return (value, end) if isinstance(value, dict) else None


def plain_name(head: str) -> str | None:
    """A function name written between markers: stripped, non-empty, one word."""
    name = head.strip()
    if not name or any(c in SPACE for c in name) or "<" in name:
        return None
    return name


def call_from(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name=name, arguments=dump_arguments(args))


def head_then_json(sep: str, name_of: Callable[[str], str | None]) -> ReadCall:
    """The :data:`ReadCall` of a call written ``HEAD<sep>{…}``: the name read from the head
    by ``name_of`` (DeepSeek V3.1 writes the name itself, Kimi K2 an id that encodes it)."""

    def read_call(text: str, i: int) -> tuple[ToolCall, int] | None:
        at = text.find(sep, i)
        if at < 0:
            return None
        name = name_of(text[i:at])
        got = json_object_at(text, at + len(sep))
        if name is None or got is None:
            return None
        args, j = got
        call = checked_call(name, args)
        return None if call is None else (call, j)

    return read_call


def read_section(
    body: str, begin: str, end: str, read_call: ReadCall, *, noise: bool = False
) -> list[ToolCall] | None:
    """Every call of a section body that reads (module doc), or None when the section is
    not well formed or none of its calls reads."""
    calls: list[ToolCall] = []
    dropped = False
    i = 0
    while True:
        at = body.find(begin, i)
        gap = body[i:] if at < 0 else body[i:at]
        if gap.strip(SPACE) and not noise:
            return None
        if at < 0:
            return None if dropped and not calls else calls
        got = _one_call(body, at + len(begin), begin, end, read_call)
        if got is None:
            return None
        call, i = got
        if call is None:
            dropped = True
        else:
            calls.append(call)


def _one_call(
    body: str, i: int, begin: str, end: str, read_call: ReadCall
) -> tuple[ToolCall | None, int] | None:
    """The call whose head starts at ``body[i]`` and the offset after its call-end marker:
    ``(None, offset)`` for a call that does not read (dropped), None when it has no
    call-end marker of its own (the section is not well formed)."""
    got = read_call(body, i)
    if got is not None:
        call, j = got
        j = skip_space(body, j)
        if body.startswith(end, j):
            return call, j + len(end)
    stop = body.find(end, i)
    following = body.find(begin, i)
    if stop < 0 or 0 <= following < stop:
        return None
    return None, stop + len(end)

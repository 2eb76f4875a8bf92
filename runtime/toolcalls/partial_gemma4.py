"""Kind ``gemma4`` (``call:NAME{key:value,…}``, Gemma 4's object notation) read while its
region is open (``partial.py``).

The reading rules are :mod:`.gemma4_calls`' (strings between ``<|"|>`` tokens, verbatim;
bare values typed from the tool's schema; nested objects and arrays), applied member by
member as the text arrives: a member is decided when the ``,`` or ``}`` after its value
comes, and its JSON text is then sent (the call commits with its first member). After the
first, a string value is streamed as it is written, JSON-escaped, less a trailing piece
that may still be the start of its closing ``<|"|>``. A value that is not a string (a
number, ``true``, a nested object) is read whole when it ends. What the reader cannot
follow (a repeated key, a member that does not read) stops it: a committed call is then
broken, and the whole read decides the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import gemma4_calls
from reasonspan.runtime.toolcalls.gemma4_calls import PREFIX, QUOTE
from reasonspan.runtime.toolcalls.partial import PartialCall, opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import MemberReader, member_text
from reasonspan.runtime.toolcalls.sections import SPACE, skip_space

_NAME, _KEY, _VALUE, _STRING, _AFTER = range(5)
_NAME_MAX = 256
"""Characters of ``call:NAME{`` looked at: more is not followed (the whole read decides)."""


class Gemma4CallReader(MemberReader):
    """The partial reader of kind ``gemma4`` (module doc): one call per region."""

    __slots__ = ("_depth",)

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _NAME)
        self._depth = 0
        """A value kept aside: the objects and arrays open at :attr:`_i`."""

    def _in_value(self) -> bool | None:
        return True if self._state == _STRING else False if self._state == _VALUE else None

    def _skip(self) -> int:
        self._i = skip_space(self._text, self._i)
        return self._i

    def _step(self) -> bool:
        if self._state == _NAME:
            return self._name()
        if self._state == _KEY:
            return self._member_key()
        if self._state == _STRING:
            return self._string()
        if self._state == _VALUE:
            return self._value()
        return self._after()

    def _name(self) -> bool:
        text = self._text.lstrip(SPACE)
        brace = text.find("{", 0, _NAME_MAX)
        if not text.startswith(PREFIX[: len(text)]) or (brace < 0 and len(text) >= _NAME_MAX):
            self.done = True  # not this kind's call, or not followed: the whole read decides
            return False
        if brace < 0:
            return False
        name = text[len(PREFIX) : brace].strip(SPACE)
        if not text.startswith(PREFIX) or not gemma4_calls.name_ok(name):
            self.done = True
            return False
        self._call = PartialCall(name=name)
        self._text, self._i, self._state = text, brace + 1, _KEY
        return True

    def _member_key(self) -> bool:
        i = key_start = self._skip()
        text = self._text
        if i >= len(text):
            return False
        if text.startswith(QUOTE, i):
            end = text.find(QUOTE, i + len(QUOTE))
            if end < 0:
                return False
            key = text[i + len(QUOTE) : end]
            colon = skip_space(text, end + len(QUOTE))
            if colon >= len(text):
                return False
            if text[colon] != ":":
                return self._stop()
        elif QUOTE.startswith(text[i : i + len(QUOTE)]) and len(text) - i < len(QUOTE):
            return False  # a quoted key's first characters
        else:
            colon = text.find(":", i)
            if colon < 0:
                return False
            key = text[i:colon].strip(SPACE)
            if not key or any(c in key for c in "{}[],") or QUOTE in key:
                return self._stop()
        if key in self._keys:
            return self._stop()  # the whole read keeps the last: not followed
        self._i = colon + 1
        self._skip()
        if len(self._text) - self._i < len(QUOTE) and QUOTE.startswith(self._text[self._i :]):
            self._i = key_start  # the value's first characters: read the key again then
            return False
        call = self._call
        assert call is not None
        if call.committed and self._text.startswith(QUOTE, self._i):
            self._i += len(QUOTE)
            self._open_value(key, True, _STRING)
        else:
            self._depth = 0
            self._open_value(key, False, _VALUE)
        return True

    def _string(self) -> bool:
        """A streamed string value: its text so far, up to its closing quote."""
        call = self._call
        assert call is not None
        text = self._text
        end = text.find(QUOTE, self._emit)
        stop = end if end >= 0 else _held(text, self._emit)
        if stop > self._emit:
            call.add_string(text[self._emit : stop])
            self._emit = stop
        self._i = stop
        if end < 0:
            return False
        call.close_string()
        self._i, self._state = end + len(QUOTE), _AFTER
        return True

    def _value(self) -> bool:
        """A value read whole: wait for its end, then type and send it as a member."""
        text = self._text
        end, self._i, self._depth = _value_end(text, self._i, self._depth)
        if end < 0:
            return False
        raw = "".join(self._parts) + text[self._start : end]
        call = self._call
        assert call is not None
        member = self._member(call.name, raw)
        if member is None:
            return self._stop()
        self._send(member)
        self._parts = []
        self._i, self._state = end, _AFTER
        return True

    def _member(self, name: str, raw: str) -> str | None:
        """The member's JSON text, read as the whole read reads it (None: it does not)."""
        schema = self._tools.property_schema(name, self._key)
        reader = gemma4_calls.ValueReader(raw)
        try:
            value: Any = reader.value(schema if isinstance(schema, Mapping) else {})
        except gemma4_calls.NotThisKind:
            return None
        return None if reader.peek() else member_text(self._key, value)

    def _after(self) -> bool:
        i = self._skip()
        text = self._text
        if i >= len(text):
            return False
        call = self._call
        assert call is not None
        if text[i] == ",":
            self._i, self._state = i + 1, _KEY
            return True
        if text[i] == "}":
            call.arguments.append("}")
            call.complete = True
            self._i = i + 1
            self.done = True  # what follows is the whole read's to judge
            return False
        return self._stop()


def _held(text: str, start: int) -> int:
    """Where a streamed string's text may still be the start of its closing quote."""
    for k in range(min(len(QUOTE) - 1, len(text) - start), 0, -1):
        if QUOTE.startswith(text[len(text) - k :]):
            return len(text) - k
    return len(text)


def _value_end(text: str, i: int, depth: int) -> tuple[int, int, int]:
    """Read a value on from ``text[i]`` with ``depth`` objects and arrays open: ``(end, i,
    depth)``, ``end`` the ``,`` / ``}`` / ``]`` that closes it at its own depth (-1: not
    yet; ``i`` and ``depth`` then say where to read on, before a string still open or a
    quote still arriving)."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "<" and QUOTE.startswith(text[i : i + len(QUOTE)]):
            if not text.startswith(QUOTE, i):
                return -1, i, depth  # (a quote's first characters)
            close = text.find(QUOTE, i + len(QUOTE))
            if close < 0:
                return -1, i, depth
            i = close + len(QUOTE)
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            if depth == 0:
                return i, i, depth
            depth -= 1
        elif ch == "," and depth == 0:
            return i, i, depth
        i += 1
    return -1, i, depth


@partial_kind("gemma4", opens_with(PREFIX))
def _reader(tools: Tools) -> Gemma4CallReader:
    return Gemma4CallReader(tools)

"""Kind ``kimi_k3`` (Kimi K3's XTML tools channel) read while its region is open
(``partial.py``).

The reading rules are :mod:`.xtml_calls`' (its element patterns, attribute reading and
value typing: a ``type="string"`` value is the raw text, another type JSON, no type or a
value that does not read as its type typed from the tool's schema), applied as the text
arrives. A value ends at the first ``<|close|>argument<|sep|>`` that the next element
follows (another argument, or the call's close), so a closer is decided only once what
follows it is known; the value's JSON text is then sent (a call commits with its first; one
with no argument when it closes). After the first, a ``type="string"`` value is streamed
as it is written, JSON-escaped, less what may still begin a closer that ends it.

A repeated or missing key or a value JSON cannot hold makes the whole read refuse the
block: a committed call is then broken. A tag the reader cannot place stops it without
judging the call: the whole read decides at the close (``region_calls``).
"""

from __future__ import annotations

import re

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import xtml_calls
from reasonspan.runtime.toolcalls.partial import PartialCall, opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import LOOK, MemberReader, closer_followed
from reasonspan.runtime.toolcalls.sections import skip_any_space

_CALL, _PARAM, _VALUE = range(3)
_OPEN = "<|open|>"
_CALL_OPEN = "<|open|>call"
_ARG_OPEN = "<|open|>argument"
_CALL_CLOSE = "<|close|>call<|sep|>"


def _after_space(text: str, i: int) -> str:
    """The text from ``i`` on, leading whitespace (as the patterns' ``\\s*``) removed."""
    return text[skip_any_space(text, i) :]


def _follows(text: str, at: int) -> bool | None:
    """Does the next element follow a closer that ends at ``at`` (``xtml_calls.NEXT``)?
    None: the text so far cannot tell."""
    if xtml_calls.NEXT.match(text, at):
        return True
    rest = _after_space(text, at)
    if len(rest) <= len(_ARG_OPEN) and _ARG_OPEN.startswith(rest):
        return None  # "<|open|>argument" still needs the character after it
    return None if _CALL_CLOSE.startswith(rest) else False


class KimiK3CallsReader(MemberReader):
    """The partial reader of kind ``kimi_k3`` (module doc): its calls one after another."""

    __slots__ = ("_type",)
    _value_state = _VALUE

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _CALL)
        self._type: str | None = None
        """The value's ``type`` attribute (None: none written)."""

    def _tag(self, pattern: re.Pattern[str], *openers: str) -> re.Match[str] | bool:
        """``pattern`` read at :attr:`_i`; True: wait (the text may still be one, or begin
        one of ``openers``); False: it is not."""
        text, i = self._text, self._i
        m = pattern.match(text, i)
        if m is not None:
            return m
        rest = _after_space(text, i)
        if len(text) - i >= LOOK:
            return False
        return any(rest[: len(o)] == o[: len(rest)] for o in openers)

    def _step(self) -> bool:
        if self._state == _VALUE:
            return self._value()
        if self._state == _CALL:
            m = self._tag(xtml_calls.CALL, _CALL_OPEN)
            if not isinstance(m, re.Match):
                return False if m else self._give_up()
            name = xtml_calls.attributes(m[1]).get("tool", "")
            if not name:
                return self._give_up()  # an empty name: the whole read refuses the block
            self._i = m.end()
            self._call = PartialCall(name=name)
            self._keys = set()
            self._state = _PARAM
            return True
        end = xtml_calls.CALL_END.match(self._text, self._i)
        if end is not None:
            self._i = end.end()
            return self._call_closed(_CALL)
        m = self._tag(xtml_calls.ARG, _OPEN, _CALL_CLOSE)
        if not isinstance(m, re.Match):
            return False if m else self._give_up()
        self._i = m.end()
        attrs = xtml_calls.attributes(m[1])
        return self._argument(attrs.get("key"), attrs.get("type"))

    def _argument(self, key: str | None, kind: str | None) -> bool:
        if key is None or key in self._keys:
            return self._stop()  # the whole read refuses the block
        self._type = kind
        self._open_value(key, kind == "string", _VALUE)
        return True

    def _value(self) -> bool:
        at, decided = closer_followed(self._text, self._i, xtml_calls.ARG_END, _follows)
        if decided:
            return self._decided(at, at + len(xtml_calls.ARG_END))
        self._sent_to(at)
        return False

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume``."""
        call = self._call
        assert call is not None
        schema = self._tools.property_schema(call.name, self._key)
        kind = self._type
        # Any exception (a lone surrogate, JSON nested past the recursion limit) is a value
        # not read: the whole read raises too, and refuses the block (_guarded).
        if not self._value_ends(
            stop, resume, lambda raw: xtml_calls.read_value(raw, kind, schema), Exception
        ):
            return self._stop()
        self._state = _PARAM
        return True


@partial_kind("kimi_k3", opens_with(_CALL_OPEN))
def _reader(tools: Tools) -> KimiK3CallsReader:
    return KimiK3CallsReader(tools)

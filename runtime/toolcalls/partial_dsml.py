"""Kind ``dsml`` (DeepSeek's DSML invokes, V3.2 / V4 / V4.1) read while its region is open
(``partial.py``).

The reading rules are :mod:`.dsml_calls`' (its tag patterns and its value reading: a
``string="true"`` value is the raw text, anything else JSON or typed from the tool's
schema; a value runs to the first ``</｜DSML｜parameter>``, spaced or not), applied as the
text arrives: a parameter is decided when its closer comes, and its JSON text is then
sent (a call commits with its first; one with no parameter, ``<｜DSML｜invoke name="x"/>``
or an empty invoke, when it closes). After the first, a ``string="true"`` value is
streamed as it is written, JSON-escaped, less a trailing ``<…`` that may begin its closer.

Whatever the reader cannot place (a tag it does not read, a repeated parameter, an empty
name, a value the whole read refuses) stops it without judging the call: the whole read
decides at the close, a committed call continuing if what was sent begins its arguments
there, else broken (``region_calls``). The whole read refuses the whole block for any of
these, so a committed call is then broken.
"""

from __future__ import annotations

import re

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import dsml_calls
from reasonspan.runtime.toolcalls.partial import PartialCall, opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import LOOK, MemberReader, held_back

_CALL, _PARAM, _VALUE = range(3)
_CLOSERS = ("</｜DSML｜parameter>", "</｜DSML｜ parameter>")
_OPENER = "<｜DSML｜"
_WAIT = "wait"


class DsmlCallsReader(MemberReader):
    """The partial reader of kind ``dsml`` (module doc): its calls one after another."""

    __slots__ = ("_string",)
    _value_state = _VALUE

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _CALL)
        self._string: str | None = None
        """The value's ``string`` attribute (None: none written)."""

    def _tag(self, *patterns: re.Pattern[str]) -> re.Match[str] | str | None:
        """The first of ``patterns`` that reads the tag at :attr:`_i` (which ends at the
        first ``>``); :data:`_WAIT` while the text may still be one; None: it is not."""
        text, i = self._text, self._i
        gt = text.find(">", i, i + LOOK)
        if gt < 0:
            return _WAIT if len(text) - i < LOOK else None
        for pattern in patterns:
            m = pattern.match(text, i)
            if m is not None and m.end() == gt + 1:
                return m
        return None

    def _step(self) -> bool:
        if self._state == _VALUE:
            return self._value()
        if self._state == _CALL:
            m = self._tag(dsml_calls.INVOKE)
        else:
            m = self._tag(dsml_calls.PARAM, dsml_calls.INVOKE_END)
        if m == _WAIT:
            return False
        if not isinstance(m, re.Match):
            return self._give_up()
        self._i = m.end()
        if self._state == _CALL:
            if not m[1]:
                return self._give_up()  # an empty name: the whole read refuses the block
            self._call = PartialCall(name=m[1])
            self._keys = set()
            if m[2]:
                return self._call_closed(_CALL)  # <｜DSML｜invoke name="x"/>
            self._state = _PARAM
            return True
        if m.re is dsml_calls.INVOKE_END:
            return self._call_closed(_CALL)
        return self._parameter(m[1], m[2])

    def _parameter(self, key: str, string: str | None) -> bool:
        if key in self._keys:
            return self._give_up()  # a repeated parameter: the whole read refuses the block
        self._string = string
        self._open_value(key, string == "true", _VALUE)
        return True

    def _value(self) -> bool:
        text = self._text
        end = dsml_calls.PARAM_END.search(text, self._i)
        if end is not None:
            return self._decided(end.start(), end.end())
        self._sent_to(held_back(text, self._start, *_CLOSERS))
        return False

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume``."""
        call = self._call
        assert call is not None
        schema = self._tools.property_schema(call.name, self._key)
        string = self._string
        # Any exception reading a value is "not read" (JSON nested past the recursion limit
        # raises RecursionError), as the whole read's guard has it.
        read = lambda raw: dsml_calls.read_value(raw, string, schema)  # noqa: E731
        if not self._value_ends(stop, resume, read, Exception):
            return self._give_up()
        self._state = _PARAM
        return True


@partial_kind("dsml", opens_with(_OPENER))
def _reader(tools: Tools) -> DsmlCallsReader:
    return DsmlCallsReader(tools)

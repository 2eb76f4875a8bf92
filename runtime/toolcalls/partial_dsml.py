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
from reasonspan.runtime.toolcalls.json_stream import encoded
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_members import MemberReader, member_text

_CALL, _PARAM, _VALUE = range(3)
_LOOK = 512
"""Characters a tag may take before the reader gives up on it."""
_CLOSERS = ("</｜DSML｜parameter>", "</｜DSML｜ parameter>")
_OPENER = "<｜DSML｜"
_WAIT = "wait"


class DsmlCallsReader(MemberReader):
    """The partial reader of kind ``dsml`` (module doc): its calls one after another."""

    __slots__ = ("_streamed", "_string")

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _CALL)
        self._streamed = False
        self._string: str | None = None
        """The value's ``string`` attribute (None: none written)."""

    def _in_value(self) -> bool | None:
        return self._streamed if self._state == _VALUE else None

    def _stop(self) -> bool:
        self.done = True  # the whole read decides (module doc)
        return False

    def _tag(self, *patterns: re.Pattern[str]) -> re.Match[str] | str | None:
        """The first of ``patterns`` that reads the tag at :attr:`_i` (which ends at the
        first ``>``); :data:`_WAIT` while the text may still be one; None: it is not."""
        text, i = self._text, self._i
        gt = text.find(">", i, i + _LOOK)
        if gt < 0:
            return _WAIT if len(text) - i < _LOOK else None
        for pattern in patterns:
            m = pattern.match(text, i)
            if m is not None and m.end() == gt + 1:
                return m
        return None

    def _step(self) -> bool:
        if self._state == _VALUE:
            return self._value()
        if self._state == _CALL:
            m = self._tag(dsml_calls._INVOKE)
        else:
            m = self._tag(dsml_calls._PARAM, dsml_calls._INVOKE_END)
        if m == _WAIT:
            return False
        if not isinstance(m, re.Match):
            return self._stop()
        self._i = m.end()
        if self._state == _CALL:
            if not m[1]:
                return self._stop()  # an empty name: the whole read refuses the block
            self._call = PartialCall(name=m[1])
            self._keys = set()
            if m[2]:
                return self._closed()  # <｜DSML｜invoke name="x"/>
            self._state = _PARAM
            return True
        if m.re is dsml_calls._INVOKE_END:
            return self._closed()
        return self._parameter(m[1], m[2])

    def _parameter(self, key: str, string: str | None) -> bool:
        call = self._call
        assert call is not None
        if key in self._keys:
            return self._stop()  # a repeated parameter: the whole read refuses the block
        self._keys.add(key)
        self._key, self._string = key, string
        self._start = self._emit = self._i
        self._parts = []
        self._streamed = call.committed and string == "true"
        if self._streamed:
            call.arguments.append(f',"{encoded(key)}":"')
        self._state = _VALUE
        return True

    def _closed(self) -> bool:
        """The invoke closed: its arguments are whole."""
        call = self._call
        assert call is not None
        call.close(self.calls)
        self._state = _CALL
        return True

    def _value(self) -> bool:
        text = self._text
        end = dsml_calls._PARAM_END.search(text, self._i)
        if end is not None:
            return self._decided(end.start(), end.end())
        undecided = len(text)
        lt = text.rfind("<", max(self._start, len(text) - len(_CLOSERS[1])))
        if lt >= 0 and any(c.startswith(text[lt:]) for c in _CLOSERS):
            undecided = lt  # may begin the closer
        self._i = max(self._start, undecided)
        if self._streamed and undecided > self._emit:
            assert self._call is not None
            self._call.arguments.append(encoded(text[self._emit : undecided]))
            self._emit = undecided
        return False

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume``."""
        call = self._call
        assert call is not None
        if self._streamed:
            call.arguments.append(encoded(self._text[self._emit : stop]) + '"')
        else:
            raw = "".join(self._parts) + self._text[self._start : stop]
            schema = self._tools.property_schema(call.name, self._key)
            try:
                member = member_text(self._key, dsml_calls._value(raw, self._string, schema))
            except UnicodeEncodeError:  # a lone surrogate: no UTF-8 text holds it
                member = None
            if member is None:
                return self._stop()
            self._send(member)
        self._i, self._state = resume, _PARAM
        return True


def _accepts(body: str) -> bool | None:
    """A body that begins with a DSML tag (either spelling)."""
    if len(body) < len(_OPENER):
        return None if _OPENER.startswith(body) else False
    return body.startswith(_OPENER)


@partial_kind("dsml", _accepts)
def _reader(tools: Tools) -> DsmlCallsReader:
    return DsmlCallsReader(tools)

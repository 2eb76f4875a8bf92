"""Kind ``gcml`` (GigaChat 3.5's ``<｜GCML｜invoke name="NAME">`` … ``</｜GCML｜invoke>``
calls) read while its region is open (``partial.py``).

The reading rules are :mod:`.gcml_calls`' (its tag patterns and its value reading: a value
runs to the first ``</｜GCML｜parameter>``; one with ``string="true"`` or no ``string``
attribute is the text itself, one with ``string="false"`` JSON or typed from the tool's
schema), applied as the text arrives: a parameter is decided when its closer comes, and its
JSON text is then sent (a call commits with its first; one with no parameter at its
``</｜GCML｜invoke>``). After the first, a string value is streamed as it is written,
JSON-escaped, less a trailing ``<…`` that may begin its closer.

Invokes one after another, one that does not read (a repeated or empty parameter name,
anything else inside it, a value JSON cannot hold) dropped and its siblings kept:
:mod:`.partial_tagged`. A tag the reader cannot place (a name or key with a ``>`` in it, a
tag longer than :data:`.partial_tagged.TAG_MAX`) stops it without judging the call: the
whole read decides at the close.
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import gcml_calls
from reasonspan.runtime.toolcalls.gcml_calls import INVOKE, INVOKE_END, PARAM_END
from reasonspan.runtime.toolcalls.partial import opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import held_back
from reasonspan.runtime.toolcalls.partial_tagged import (
    BETWEEN,
    PAIR,
    TAG_MAX,
    TaggedCallsReader,
    waits,
)
from reasonspan.runtime.toolcalls.sections import skip_any_space, skip_space

_PARAM_OPEN = "<｜GCML｜parameter"
_CLOSE = "</｜GCML｜tool_calls>"


class GcmlCallsReader(TaggedCallsReader):
    """The partial reader of kind ``gcml`` (module doc)."""

    __slots__ = ("_string",)

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, INVOKE, INVOKE_END, _CLOSE)
        self._string: str | None = None
        """The value's ``string`` attribute (None: none written)."""

    def _unplaced(self, i: int) -> bool:
        """No pattern reads the tag at ``i`` yet: wait while it has no ``>``; with one,
        stop (a name or key holding ``>`` may still read: the whole read decides)."""
        text = self._text
        if text.find(">", i, i + TAG_MAX) >= 0 or len(text) - i >= TAG_MAX:
            self.done = True
        return False

    def _name(self) -> bool:
        call = self._call
        assert call is not None
        m = gcml_calls.INVOKE_NAME.match(self._text, self._i)
        if m is None:
            return self._unplaced(self._i)
        call.name = m[1]
        self._tail = ""
        self._note(m[1])
        self._i, self._state = m.end(), PAIR
        return True

    def _pair(self) -> bool:
        """The next parameter's tag, or the invoke's end."""
        text, i = self._text, self._i
        j = skip_space(text, i)
        if text.startswith(INVOKE_END, j):
            self._i = j + len(INVOKE_END)
            return self._call_closed(BETWEEN)
        p = gcml_calls.PARAM.match(text, i)
        if p is None:
            k = skip_any_space(text, i)  # (PARAM's \s*, where the invoke's end takes JSON's)
            rest = text[k : k + len(_PARAM_OPEN)]
            if not rest or waits(rest, _PARAM_OPEN, INVOKE_END):
                return False
            if rest == _PARAM_OPEN:
                return self._unplaced(k)
            return self._drop()  # anything else inside the invoke
        key = p[1]
        self._tail = ""
        self._note(key)
        if not key or key in self._keys:
            return self._drop()
        self._string = p[2]
        self._i = p.end()
        self._member(key, p[2] != "false")
        return True

    def _value(self) -> bool:
        call = self._call
        assert call is not None
        text = self._text
        at = text.find(PARAM_END, self._i)
        if at >= 0:
            schema = self._tools.property_schema(call.name, self._key)
            string = self._string
            return self._decided(
                at, at + len(PARAM_END), lambda raw: gcml_calls.read_value(raw, string, schema)
            )
        self._sent_to(held_back(text, self._start, PARAM_END))
        return False


@partial_kind("gcml", opens_with(INVOKE))
def _reader(tools: Tools) -> GcmlCallsReader:
    return GcmlCallsReader(tools)

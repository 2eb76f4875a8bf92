"""Kind ``ifm`` (IFM K2-Horizon's ``<ifm|tool_call>NAME<ifm|arg_key>K</ifm|arg_key>
[<ifm|arg_type>T</ifm|arg_type>]<ifm|arg_value>V</ifm|arg_value>…</ifm|tool_call>``) read
while its region is open (``partial.py``).

The reading rules are :mod:`.ifm_calls`' for the ``xml`` and ``xml_typed`` layouts (the
name up to the first key or the call's end, one word; a value runs to the first
``</ifm|arg_value>``, typed from the tool's schema, or from its ``<ifm|arg_type>`` where the
schema says nothing), applied as the text arrives: a value is decided when its closer
comes and its JSON text sent (the call commits with its first; one with none at its
``</ifm|tool_call>``). After the first, a value whose property is a string and nothing else
(taken verbatim) is streamed as it is written, JSON-escaped, less a trailing ``<…`` that may
begin its closer.

Calls one after another, one that does not read (a spaced name, an empty or repeated key,
a missing tag, anything else between its elements) dropped and its siblings kept:
:mod:`.partial_tagged`. A call in the ``json`` layout (``{"name": …, "arguments": …}``), a
value JSON cannot hold, or a tag longer than :data:`.partial_tagged.TAG_MAX` stops the
reader without judging the call: the whole read decides at the close.
"""

from __future__ import annotations

import re
from typing import Any

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls import ifm_calls as f
from reasonspan.runtime.toolcalls.partial import opens_with, partial_kind
from reasonspan.runtime.toolcalls.partial_members import held_back, string_only
from reasonspan.runtime.toolcalls.partial_tagged import (
    BETWEEN,
    PAIR,
    TAG_MAX,
    TaggedCallsReader,
    waits,
)
from reasonspan.runtime.toolcalls.sections import plain_name, skip_space
from reasonspan.runtime.toolcalls.values import typed_value

_CLOSE = "</ifm|tool_calls>"
_FIRST = re.compile(r"\s*(.)", re.DOTALL)


class IfmCallsReader(TaggedCallsReader):
    """The partial reader of kind ``ifm`` (module doc)."""

    __slots__ = ("_schema",)

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, f.CALL_BEGIN, f.CALL_END, _CLOSE)
        self._schema: Any = None
        """The schema the value being read is typed with."""

    def _name(self) -> bool:
        call = self._call
        assert call is not None
        text, i = self._text, self._i
        first = _FIRST.match(text, i)
        if first is None:
            return False
        if first[1] == "{":
            self.done = True  # the json layout: the whole read decides
            return False
        found = [a for t in (f.KEY, f.CALL_END) if (a := text.find(t, i)) >= 0]
        if not found:
            if len(text) - i >= TAG_MAX:
                self.done = True  # (module doc)
            return False
        name = plain_name(text[i : min(found)])
        if name is None:
            return self._drop()
        call.name = name
        self._i, self._state = min(found), PAIR
        return True

    def _tagged(self, i: int, tag: str, end: str) -> tuple[str, int] | bool:
        """The text of ``tag…end`` at ``text[i]`` and the offset after it; False: wait;
        True: the tag is not there."""
        text = self._text
        rest = text[i : i + len(tag)]
        if rest != tag:
            return bool(rest) and not waits(rest, tag)
        stop = text.find(end, i + len(tag), i + TAG_MAX)
        if stop < 0:
            if len(text) - i >= TAG_MAX:
                self.done = True  # (module doc)
            return False
        return text[i + len(tag) : stop], stop + len(end)

    def _pair(self) -> bool:
        """The next key, its type and its value tag, or the call's end."""
        call = self._call
        assert call is not None
        text = self._text
        j = self._i = skip_space(text, self._i)
        if text.startswith(f.CALL_END, j):
            self._i = j + len(f.CALL_END)
            return self._call_closed(BETWEEN)
        key = self._tagged(j, f.KEY, f.KEY_END)
        if key is True:
            rest = text[j : j + len(f.CALL_END)]
            return False if waits(rest, f.CALL_END) else self._drop()
        if key is False:
            return False
        self._tail = ""
        self._note(key[0])
        t = skip_space(text, key[1])
        arg_type: str | None = None
        typed = self._tagged(t, f.TYPE, f.TYPE_END)
        if typed is False or waits(text[t : t + len(f.VALUE)], f.VALUE):
            return False
        if typed is not True:
            arg_type, t = typed[0], skip_space(text, typed[1])
        head = text[t : t + len(f.VALUE)]
        if not head or waits(head, f.VALUE):
            return False
        k = key[0].strip()
        if head != f.VALUE or not k or k in self._keys:
            return self._drop()
        self._schema = f.argument_schema(self._tools, call.name, k, arg_type)
        self._i = t + len(f.VALUE)
        self._member(k, string_only(self._schema))
        return True

    def _value(self) -> bool:
        text, end = self._text, f.VALUE_END
        at = text.find(end, self._i)
        if at >= 0:
            schema = self._schema
            got = self._decided(at, at + len(end), lambda raw: typed_value(raw, schema))
            if self._state != PAIR and not self.done:
                self.done = True  # JSON cannot hold it: the whole read decides (module doc)
                return False
            return got
        self._sent_to(held_back(text, self._start, end))
        return False


@partial_kind("ifm", opens_with(f.CALL_BEGIN))
def _reader(tools: Tools) -> IfmCallsReader:
    return IfmCallsReader(tools)

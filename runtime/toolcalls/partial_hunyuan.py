"""Kind ``hunyuan`` (Tencent Hy3 / Hy4's ``<tool_call{S}>NAME[<tool_sep{S}>]<arg_key{S}>K
</arg_key{S}><arg_value{S}>V</arg_value{S}>…</tool_call{S}>``) read while its region is
open (``partial.py``).

The reading rules are :mod:`.hunyuan_calls`' (its tags, the suffix read from the first call
tag, :func:`.sections.plain_name` for the name, :func:`.values.typed_value` for the
values; calls one after another, whitespace between them), applied as the text arrives: a
value ends at the first ``</arg_value{S}>`` followed, after whitespace, by the next key or
the call's close, so it is decided when that comes, typed from the tool's schema and its
JSON text sent (the call commits with its first; a call with none at its close). After the
first, a value whose property is a string and nothing else (taken verbatim) is streamed as
it is written, JSON-escaped, less what may still be its end: a ``</arg_value{S}>`` not yet
followed by anything else, or a trailing ``<…`` that may begin one.

Calls one after another, a call that does not read (an empty or spaced name, a missing
tag, text between its pairs, a value JSON cannot hold) dropped: :mod:`.partial_tagged`.
What the whole read settles in a way the reader cannot follow (a repeated key, which keeps
the last value; a name or key longer than :data:`.partial_tagged.TAG_MAX`) stops the reader
without judging the call: the whole read decides at the close.
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.hunyuan_calls import CALL_TAG, Tags
from reasonspan.runtime.toolcalls.partial import partial_kind
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


class HunyuanCallsReader(TaggedCallsReader):
    """The partial reader of kind ``hunyuan`` (module doc)."""

    __slots__ = ("_tags",)

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, "", "", "")
        self._tags: Tags | None = None
        """The tags of the suffix the first call tag has (None: not read yet)."""

    def _between(self) -> bool:
        if self._tags is None:
            text = self._text
            i = self._i = skip_space(text, self._i)
            gt = text.find(">", i, i + TAG_MAX)
            if gt < 0:
                if len(text) - i >= TAG_MAX:
                    self.done = True
                return False
            m = CALL_TAG.match(text, i)
            if m is None or m.end() != gt + 1:
                self.done = True  # not a call: the whole read decides
                return False
            suffix = m[1] or ""
            self._tags = Tags(suffix)
            self._begin, self._end = m[0], self._tags.call_end
            self._close = f"</tool_calls{suffix}>"
        return super()._between()

    def _name(self) -> bool:
        tags, call = self._tags, self._call
        assert tags is not None and call is not None
        text, i = self._text, self._i
        found = [a for t in (tags.sep, tags.key, tags.call_end) if (a := text.find(t, i)) >= 0]
        if not found:
            if len(text) - i >= TAG_MAX:
                self.done = True  # (module doc)
            return False
        at = min(found)
        name = plain_name(text[i:at])
        if name is None:
            return self._drop()
        call.name = name
        self._i = at + len(tags.sep) if text.startswith(tags.sep, at) else at
        self._state = PAIR
        return True

    def _pair(self) -> bool:
        """The next key and its value tag, or the call's close."""
        tags, call = self._tags, self._call
        assert tags is not None and call is not None
        text = self._text
        j = self._i = skip_space(text, self._i)
        rest = text[j : j + max(len(tags.key), len(tags.call_end))]
        if rest.startswith(tags.call_end):
            self._i = j + len(tags.call_end)
            return self._call_closed(BETWEEN)
        if not rest.startswith(tags.key):
            return False if waits(rest, tags.key, tags.call_end) or not rest else self._drop()
        k_end = text.find(tags.key_end, j, j + TAG_MAX)
        if k_end < 0:
            if len(text) - j >= TAG_MAX:
                self.done = True  # (module doc)
            return False
        raw_key = text[j + len(tags.key) : k_end]
        self._tail = ""
        self._note(raw_key)
        key = raw_key.strip()
        v = skip_space(text, k_end + len(tags.key_end))
        head = text[v : v + len(tags.value)]
        if waits(head, tags.value) or not head:
            return False
        if not key or head != tags.value:
            return self._drop()
        if key in self._keys:
            self.done = True  # a repeated key: the whole read keeps the last value
            return False
        self._i = v + len(tags.value)
        schema = self._tools.property_schema(call.name, key)
        self._member(key, string_only(schema))
        return True

    def _value(self) -> bool:
        tags, call = self._tags, self._call
        assert tags is not None and call is not None
        text, end = self._text, tags.value_end
        schema = self._tools.property_schema(call.name, self._key)
        at = text.find(end, self._i)
        while at >= 0:
            j = skip_space(text, at + len(end))
            rest = text[j : j + max(len(tags.key), len(tags.call_end))]
            if rest.startswith((tags.key, tags.call_end)):
                return self._decided(at, j, lambda raw: typed_value(raw, schema))
            if not rest or waits(rest, tags.key, tags.call_end):
                break  # the value may end here: wait
            at = text.find(end, at + 1)
        self._sent_to(at if at >= 0 else held_back(text, self._start, end))
        return False


def _accepts(body: str) -> bool | None:
    """A body that begins with a call tag (any suffix)."""
    gt = body.find(">", 0, TAG_MAX)
    if gt < 0:
        return None if "<tool_call".startswith(body[:10]) and len(body) < TAG_MAX else False
    m = CALL_TAG.match(body)
    return m is not None and m.end() == gt + 1


@partial_kind("hunyuan", _accepts)
def _reader(tools: Tools) -> HunyuanCallsReader:
    return HunyuanCallsReader(tools)

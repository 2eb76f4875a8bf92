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

A call that does not read (an empty or spaced name, a missing tag, text between its
pairs, a value JSON cannot hold) is dropped and its siblings kept: it is never sent, or is
broken once it was, and reading goes on after its close tag; text between calls makes the
whole region not read (every committed call broken). What the whole read settles in a way
the reader cannot follow (a repeated key, which keeps the last value; a dropped call with a
call tag written inside one of its values or keys; a name or key longer than
:data:`_NAME_MAX`) stops the reader without judging the call: the whole read decides at the
close.
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.hunyuan_calls import _CALL_TAG, _Tags
from reasonspan.runtime.toolcalls.json_stream import encoded
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_members import MemberReader, member_text
from reasonspan.runtime.toolcalls.sections import plain_name, skip_space
from reasonspan.runtime.toolcalls.values import schema_types, typed_value

_BETWEEN, _NAME, _PAIR, _VALUE, _SKIP = range(5)
_NAME_MAX = 256
"""Characters a call tag, name or key may take here: a longer one is not followed (the
whole read decides), rather than searched again with every piece of text."""


def _waits(rest: str, *tags: str) -> bool:
    """Is ``rest``, the end of the text so far, the start of one of ``tags``?"""
    return any(len(rest) < len(t) and t.startswith(rest) for t in tags)


class HunyuanCallsReader(MemberReader):
    """The partial reader of kind ``hunyuan`` (module doc)."""

    __slots__ = ("_begin", "_inner", "_streamed", "_tags", "_tail")

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _BETWEEN)
        self._tags: _Tags | None = None
        """The tags of the suffix the first call tag has (None: not read yet)."""
        self._begin = ""
        self._streamed = False
        self._inner = False
        """A call tag was written inside the call's keys or values (module doc)."""
        self._tail = ""
        """The end of the streamed value's text sent so far (a tag may straddle pieces)."""

    def _in_value(self) -> bool | None:
        return self._streamed if self._state == _VALUE else None

    def _step(self) -> bool:
        if self._state == _BETWEEN:
            return self._between()
        if self._state == _NAME:
            return self._name()
        if self._state == _PAIR:
            return self._pair()
        if self._state == _VALUE:
            return self._value()
        return self._skip()

    def _between(self) -> bool:
        """Whitespace, then the next call's tag (the first one says the suffix)."""
        text = self._text
        i = self._i = skip_space(text, self._i)
        if self._tags is None:
            gt = text.find(">", i, i + _NAME_MAX)
            if gt < 0:
                if len(text) - i >= _NAME_MAX:
                    self.done = True
                return False
            m = _CALL_TAG.match(text, i)
            if m is None or m.end() != gt + 1:
                self.done = True  # not a call: the whole read decides
                return False
            self._tags = _Tags(m[1] or "")
            self._begin = m[0]
        rest = text[i : i + len(self._begin)]
        if rest == self._begin:
            self._i = i + len(self._begin)
            self._state = _NAME
            return True
        close = "</tool_calls" + self._begin[len("<tool_call") :]
        if not rest or _waits(rest, self._begin, close):
            return False
        return self._malformed()

    def _name(self) -> bool:
        tags = self._tags
        assert tags is not None
        text, i = self._text, self._i
        found = [a for t in (tags.sep, tags.key, tags.call_end) if (a := text.find(t, i)) >= 0]
        if not found:
            if len(text) - i >= _NAME_MAX:
                self.done = True  # (module doc)
            return False
        at = min(found)
        name = plain_name(text[i:at])
        self._call = PartialCall(name=name or "")
        self._keys = set()
        self._inner = False
        if name is None:
            return self._drop()
        self._i = at + len(tags.sep) if text.startswith(tags.sep, at) else at
        self._state = _PAIR
        return True

    def _pair(self) -> bool:
        """The next key and its value tag, or the call's close."""
        tags = self._tags
        call = self._call
        assert tags is not None and call is not None
        text = self._text
        j = self._i = skip_space(text, self._i)
        rest = text[j : j + max(len(tags.key), len(tags.call_end))]
        if rest.startswith(tags.call_end):
            self._i = j + len(tags.call_end)
            self._closed(call)
            return True
        if not rest.startswith(tags.key):
            return False if _waits(rest, tags.key, tags.call_end) or not rest else self._drop()
        k_end = text.find(tags.key_end, j, j + _NAME_MAX)
        if k_end < 0:
            if len(text) - j >= _NAME_MAX:
                self.done = True  # (module doc)
            return False
        raw_key = text[j + len(tags.key) : k_end]
        self._tail = ""
        self._note(raw_key)
        key = raw_key.strip()
        v = skip_space(text, k_end + len(tags.key_end))
        head = text[v : v + len(tags.value)]
        if _waits(head, tags.value) or not head:
            return False
        if not key or head != tags.value:
            return self._drop()
        if key in self._keys:
            self.done = True  # a repeated key: the whole read keeps the last value
            return False
        self._keys.add(key)
        self._key = key
        self._start = self._emit = self._i = v + len(tags.value)
        self._parts = []
        self._tail = ""
        schema = self._tools.property_schema(call.name, key)
        self._streamed = call.committed and schema_types(schema) == ["string"]
        if self._streamed:
            call.arguments.append(f',"{encoded(key)}":"')
        self._state = _VALUE
        return True

    def _value(self) -> bool:
        tags = self._tags
        assert tags is not None
        text, end = self._text, tags.value_end
        at = text.find(end, self._i)
        while at >= 0:
            j = skip_space(text, at + len(end))
            rest = text[j : j + max(len(tags.key), len(tags.call_end))]
            if rest.startswith((tags.key, tags.call_end)):
                return self._decided(at, j)
            if not rest or _waits(rest, tags.key, tags.call_end):
                break  # the value may end here: wait
            at = text.find(end, at + 1)
        undecided = at
        if at < 0:
            undecided = len(text)
            lt = text.rfind("<", max(self._start, len(text) - len(end) + 1))
            if lt >= 0 and end.startswith(text[lt:]):
                undecided = lt
        self._i = max(self._start, undecided)
        if self._streamed and undecided > self._emit:
            assert self._call is not None
            piece = text[self._emit : undecided]
            self._call.arguments.append(encoded(piece))
            self._note(piece)
            self._emit = undecided
        return False

    def _note(self, text: str) -> None:
        """Note a call tag in the key or value text ``text`` (the streamed value's pieces
        one after another)."""
        tags = self._tags
        assert tags is not None
        probe = self._tail + text
        self._inner |= self._begin in probe or tags.call_end in probe
        self._tail = probe[-max(len(self._begin), len(tags.call_end)) :]

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume``."""
        call = self._call
        assert call is not None
        self._i = resume
        if self._streamed:
            piece = self._text[self._emit : stop]
            call.arguments.append(encoded(piece) + '"')
            self._note(piece)
        else:
            raw = "".join(self._parts) + self._text[self._start : stop]
            self._tail = ""
            self._note(raw)
            schema = self._tools.property_schema(call.name, self._key)
            member = member_text(self._key, typed_value(raw, schema))
            if member is None:
                return self._drop()  # JSON cannot hold it: the call is dropped
            self._send(member)
        self._state = _PAIR
        return True

    def _closed(self, call: PartialCall) -> None:
        if call.committed:
            call.arguments.append("}")
        else:
            call.arguments.append("{}")
            call.committed = True
            self.calls.append(call)
        call.complete = True
        self._call = None
        self._state = _BETWEEN

    def _drop(self) -> bool:
        """The call does not read: never sent, or broken once it was; the whole read goes
        on after its first close tag."""
        call = self._call
        if self._inner:
            self.done = True  # that tag may be inside a value read past (module doc)
            return False
        if call is not None and call.committed:
            call.broken = True
        self._call = None
        self._state = _SKIP
        return True

    def _skip(self) -> bool:
        """To the dropped call's close tag; a call tag first: the region does not read."""
        tags = self._tags
        assert tags is not None
        text = self._text
        stop = text.find(tags.call_end, self._i)
        following = text.find(self._begin, self._i)
        if following >= 0 and (stop < 0 or following < stop):
            return self._malformed()
        if stop < 0:
            longest = max(len(tags.call_end), len(self._begin))
            self._i = max(self._i, len(text) - longest + 1)
            return False
        self._i = stop + len(tags.call_end)
        self._state = _BETWEEN
        return True

    def _malformed(self) -> bool:
        """The region does not read: every committed call is broken."""
        for call in self.calls:
            call.broken = True
        self.done = True
        return False


def _accepts(body: str) -> bool | None:
    """A body that begins with a call tag (any suffix)."""
    gt = body.find(">", 0, _NAME_MAX)
    if gt < 0:
        return None if "<tool_call".startswith(body[:10]) and len(body) < _NAME_MAX else False
    m = _CALL_TAG.match(body)
    return m is not None and m.end() == gt + 1


@partial_kind("hunyuan", _accepts)
def _reader(tools: Tools) -> HunyuanCallsReader:
    return HunyuanCallsReader(tools)

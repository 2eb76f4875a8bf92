"""Kind ``solar`` (Solar Open 2's ``NAME\\n<|tool_arg:start|>K<|tool_arg:value|>V
<|tool_arg:end|>…``) read while its region is open (``partial.py``).

The reading rules are :mod:`.solar_calls`' (its markers, :func:`.sections.plain_name` for
the name, :func:`.values.typed_value` for the values), applied as the text arrives:

- a region holds one call per ``<|tool_call:start|>`` (the region's opener begins the
  first); a part that does not read is dropped and the others kept, so such a part is
  never sent, or is broken once it was (a call after it streams on);
- a value ends at the first ``<|tool_arg:end|>``, ``<|tool_arg:start|>`` or
  ``<|tool_call:start|>`` after it: it is decided when one of them comes, typed from the
  tool's schema, and its JSON text sent (the call commits with its first argument; a call
  with none when the next part begins). After the first, a value whose property is a
  string and nothing else (taken verbatim) is streamed as it is written, JSON-escaped,
  less a trailing ``<…`` that may begin one of those markers;
- a repeated argument keeps its first value: a later one is read and not sent;
- a call's last value, and a call with no argument, are decided by the region's close
  (the whole read sends the rest).

What the reader cannot follow (a name or key longer than :data:`_NAME_MAX`) stops it
without judging the call: the whole read decides at the close.
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_members import MemberReader, held_back, string_only
from reasonspan.runtime.toolcalls.sections import plain_name, skip_any_space
from reasonspan.runtime.toolcalls.solar_calls import ARG_END, ARG_START, ARG_VALUE, CALL_START
from reasonspan.runtime.toolcalls.values import typed_value

_NAME, _PAIR, _VALUE, _SKIP = range(4)
_ENDS = (ARG_END, ARG_START, CALL_START)
"""What ends a value (:func:`.solar_calls._value_end`, and the end of its part)."""
_LONGEST = max(len(m) for m in _ENDS)
_NAME_MAX = 256
"""Characters a name or key may take here: a longer one is not followed (the whole read
decides), rather than searched again with every piece of text."""


class SolarCallsReader(MemberReader):
    """The partial reader of kind ``solar`` (module doc): the parts of a region in turn."""

    __slots__ = ("_ignored",)

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, _NAME)
        self._ignored = False
        """The value read is a repeated argument's: the whole read keeps the first."""

    def _in_value(self) -> bool | None:
        if self._state != _VALUE or self._ignored:
            return None
        return self._streamed

    def _step(self) -> bool:
        if self._state == _NAME:
            return self._name()
        if self._state == _PAIR:
            return self._pair()
        if self._state == _VALUE:
            return self._value()
        return self._skip()

    def _name(self) -> bool:
        """The part's name, up to its first argument (or the next part)."""
        text, i = self._text, self._i
        arg = text.find(ARG_START, i, i + _NAME_MAX)
        part = text.find(CALL_START, i, i + _NAME_MAX)
        if arg < 0 and part < 0:
            if len(text) - i >= _NAME_MAX:
                self.done = True  # (module doc)
            return False  # a call with no argument, or its first to come
        if part >= 0 and (arg < 0 or part < arg):
            name = plain_name(text[i:part])
            self._i = part + len(CALL_START)
            if name is not None:
                self._call = PartialCall(name=name)
                self._call_closed(_NAME)  # the next part begins: its arguments are whole
            return True  # (a part that names nothing is dropped)
        name = plain_name(text[i:arg])
        if name is None:
            return self._drop()
        self._call = PartialCall(name=name)
        self._keys = set()
        self._i, self._state = arg, _PAIR
        return True

    def _pair(self) -> bool:
        """The next argument's key, or the end of the part."""
        text = self._text
        self._i = i = skip_any_space(text, self._i)
        rest = text[i : i + _LONGEST]
        if rest.startswith(CALL_START):
            self._i = i + len(CALL_START)
            return self._call_closed(_NAME)  # the next part begins: its arguments are whole
        if not rest.startswith(ARG_START):
            if ARG_START.startswith(rest) or CALL_START.startswith(rest):
                return False
            return self._drop()  # text between arguments: the part does not read
        k = i + len(ARG_START)
        sep = text.find(ARG_VALUE, k, k + _NAME_MAX)
        part = text.find(CALL_START, k, k + _NAME_MAX)
        if part >= 0 and (sep < 0 or part < sep):
            return self._drop()  # no value
        if sep < 0:
            if len(text) - k >= _NAME_MAX:
                self.done = True  # (module doc)
            return False
        key = text[k:sep].strip()
        if not key or ARG_START in key:
            return self._drop()
        call = self._call
        assert call is not None
        self._ignored = key in self._keys
        self._i = sep + len(ARG_VALUE)
        schema = self._tools.property_schema(call.name, key)
        self._open_value(key, not self._ignored and string_only(schema), _VALUE)
        return True

    def _value(self) -> bool:
        text = self._text
        found = [(at, m) for m in _ENDS if (at := text.find(m, self._i)) >= 0]
        if found:
            at, m = min(found)
            return self._decided(at, at + len(m) if m == ARG_END else at)
        self._sent_to(held_back(text, self._start, *_ENDS))
        return False

    def _decided(self, stop: int, resume: int) -> bool:
        """The value ends at ``stop``; reading goes on at ``resume``."""
        call = self._call
        assert call is not None
        if self._ignored:
            self._i = resume
        else:
            schema = self._tools.property_schema(call.name, self._key)
            if not self._value_ends(stop, resume, lambda raw: typed_value(raw, schema), ()):
                return self._drop()  # JSON cannot hold it: the whole read drops the part
        self._state = _PAIR
        return True

    def _drop(self) -> bool:
        """The part does not read: never sent, or broken once it was; on to the next."""
        call = self._call
        if call is not None and call.committed:
            call.broken = True
        self._call = None
        self._state = _SKIP
        return True

    def _skip(self) -> bool:
        text = self._text
        at = text.find(CALL_START, self._i)
        if at < 0:
            self._i = max(self._i, len(text) - len(CALL_START) + 1)
            return False
        self._i = at + len(CALL_START)
        self._state = _NAME
        return True


def _accepts(body: str) -> bool | None:
    """Solar's region holds only this kind's calls."""
    return None if not body else True


@partial_kind("solar", _accepts)
def _reader(tools: Tools) -> SolarCallsReader:
    return SolarCallsReader(tools)

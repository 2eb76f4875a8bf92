"""Kind ``inkling`` (Inkling's ``<|content_invoke_tool_json|>{"name": NAME, "args": {…}}``)
read while its region is open (``partial.py``).

The body is one JSON object naming the function and holding its arguments under ``args``
(or ``arguments`` / ``parameters``; :mod:`.inkling_calls`): the json kind's reader
(:class:`.JsonCallsReader`: its lexer, argument writer and commit rule) reads it with those
keys. Where the whole read differs from the json kind, the reader follows it:

- only a body that begins with an object is read (a list is not a call);
- a name with nothing but whitespace is no call: never sent;
- the whole read takes the first of ``args``, ``arguments``, ``parameters`` that the object
  has: one of them after the arguments that comes later in that order is a key of no
  meaning, one that comes earlier (or the same key again) breaks a committed call (as a
  repeated ``arguments`` does in the json kind).

Arguments written as a JSON string (which the whole read unwraps) or ``null`` are sent
whole when the region closes; a body of several values, which the whole read refuses,
breaks a committed call there (``region_calls``).
"""

from __future__ import annotations

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.inkling_calls import ARGUMENT_KEYS
from reasonspan.runtime.toolcalls.json_stream import KEY
from reasonspan.runtime.toolcalls.partial import partial_kind
from reasonspan.runtime.toolcalls.partial_json import JsonCallsReader


class InklingCallsReader(JsonCallsReader):
    """The json kind's reader with Inkling's keys and rules (module doc)."""

    __slots__ = ("_used",)

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, ARGUMENT_KEYS)
        self._used = len(ARGUMENT_KEYS)
        """Where the key the call's arguments were read under stands in that order."""

    def _outside(self, kind: str, value: str) -> None:
        call = self._call
        at_call = call is not None and len(self._open) == self._call_depth
        if kind == KEY and at_call and value in ARGUMENT_KEYS:
            assert call is not None
            rank = ARGUMENT_KEYS.index(value)
            if not call.has_arguments:
                self._used = rank
            elif rank > self._used:
                value = "\0" + value  # the whole read does not look at it
            else:
                self._lost(call)  # the whole read takes this one
        super()._outside(kind, value)

    def _begin_arguments(self, kind: str) -> None:
        call = self._call
        assert call is not None
        if not call.name.strip():
            call.followable = False  # a blank name: the whole read has no call
        super()._begin_arguments(kind)


def _accepts(body: str) -> bool | None:
    return None if not body else body[0] == "{"


@partial_kind("inkling", _accepts)
def _reader(tools: Tools) -> InklingCallsReader:
    return InklingCallsReader(tools)

"""Kind ``apertus`` (``[{"get_weather": {"city": "Bern"}}, …]``) read while its region is
open (``partial.py``).

The reading rules are :mod:`.apertus_calls`' (a JSON array of one-key objects, or one such
object: the item's first key is the function's name, its value the arguments), applied as
the text arrives with the json kind's lexer and argument writer (:mod:`.json_stream`,
:mod:`.partial_args`): the arguments object is re-encoded token by token, and the call
commits when its first member is whole and valid (or when it closes, empty).

An item written any other way (arguments as a JSON string or ``null``, which the whole
read takes too, an empty name, an item that is not an object) is sent whole when the
region closes, and so is every call after it. The item's first key written again after
its arguments breaks a committed call: the whole read keeps the last value; a repeated key
inside the arguments does too, as in the json kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.json_stream import (
    CLOSE_ARRAY,
    CLOSE_OBJECT,
    COLON,
    COMMA,
    FAIL,
    KEY,
    OPEN_ARRAY,
    OPEN_OBJECT,
    SCALAR,
    STOP,
    STR,
    Event,
    JsonTokens,
)
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_args import (
    CLOSED,
    FAILED,
    GOING,
    ArgumentWriter,
)


@dataclass
class _Call(PartialCall):
    """An item being read: its name and what stops it from being streamed."""

    followable: bool = True
    """False: written in a way the reader does not follow (sent whole at the close)."""
    named: bool = False
    """Its first key (the name) was read."""
    awaits_arguments: bool = False
    """The value after its name comes next."""


class ApertusCallsReader:
    """The partial reader of kind ``apertus`` (module doc)."""

    __slots__ = ("_blocked", "_call", "_depth", "_open", "_tokens", "_writer", "calls")

    def __init__(self) -> None:
        self.calls: list[PartialCall] = []
        self._tokens = JsonTokens()
        self._open: list[str] = []
        """The containers open at this point of the text, outermost first."""
        self._call: _Call | None = None
        self._depth = 0
        """Depth of the item being read (1, or 2 inside the array)."""
        self._writer: ArgumentWriter | None = None
        """The arguments object while it is read."""
        self._blocked = False
        """An item of the region was not followed: none after it commits."""

    def feed(self, text: str) -> None:
        if self._writer is not None and self._tokens.plain_string_text(text):
            # Text of a string argument that needs no escaping: its own JSON text.
            assert self._call is not None
            self._call.arguments.append(text)
            return
        events: list[Event] = []
        self._tokens.feed(text, events)
        for kind, value in events:
            if self._writer is not None:
                self._in_arguments(kind, value)
            elif self._tokens.done and kind not in (STOP, FAIL):
                return  # a call failed: nothing after it is read
            else:
                self._outside(kind, value)

    def _at_item_place(self, depth: int) -> bool:
        """Does a value opening at ``depth`` stand where an item goes?"""
        return depth == 0 or (depth == 1 and self._open[0] == OPEN_ARRAY)

    def _outside(self, kind: str, value: str) -> None:
        if kind in (COLON, COMMA):
            return
        call = self._call
        depth = len(self._open)
        at_call = call is not None and depth == self._depth
        arguments = at_call and call is not None and call.awaits_arguments
        if arguments:
            assert call is not None
            call.awaits_arguments = False
            if kind == OPEN_OBJECT and call.name:
                self._writer = ArgumentWriter(call.arguments)
                self._writer.event(OPEN_OBJECT, "")
                return  # (the writer counts the containers of the arguments)
            call.followable = False  # a string, null, a list: the whole read decides
        if kind in (OPEN_OBJECT, OPEN_ARRAY):
            self._open.append(kind)
            if not arguments and self._at_item_place(depth):
                if kind == OPEN_OBJECT:
                    self._call = _Call(name="")
                    self._depth = depth + 1
                elif depth:
                    self._blocked = True  # an item that is not a call (depth 0: the list)
        elif kind in (CLOSE_OBJECT, CLOSE_ARRAY):
            self._open.pop()
            if call is not None and at_call:
                if not call.committed:
                    self._blocked = True
                self._call = None
        elif kind == KEY and at_call:
            assert call is not None
            if not call.named:
                call.name, call.named, call.awaits_arguments = value, True, True
            elif value == call.name:
                self._lost(call)  # the whole read keeps the last value of the name
        elif kind in (STR, SCALAR) and not arguments and self._at_item_place(depth):
            self._blocked = True  # an item that is not a call
        elif kind in (STOP, FAIL) and call is not None:
            self._lost(call)

    def _lost(self, call: _Call) -> None:
        """The call cannot be followed further: broken once committed, else sent whole."""
        if call.committed:
            call.broken = True
        call.followable = False

    def _in_arguments(self, kind: str, value: str) -> None:
        call = self._call
        writer = self._writer
        assert call is not None and writer is not None
        got = writer.event(kind, value)
        if got == GOING:
            return
        if got == FAILED:
            self._lost(call)
            self._tokens.done = True  # the rest of the region goes whole
            self._writer = None
            self._call = None
            return
        if got == CLOSED:
            call.complete = True
            self._writer = None
        if not (call.committed or self._blocked or not call.followable):
            call.committed = True
            self.calls.append(call)


def _accepts(body: str) -> bool | None:
    return None if not body else body[0] in "{["


@partial_kind("apertus", _accepts)
def _reader(tools: Tools) -> ApertusCallsReader:
    return ApertusCallsReader()

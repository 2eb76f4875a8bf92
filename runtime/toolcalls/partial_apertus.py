"""Kind ``apertus`` (``[{"get_weather": {"city": "Bern"}}, …]``) read while its region is
open (``partial.py``).

The reading rules are :mod:`.apertus_calls`' (a JSON array of one-key objects, or one such
object: the item's first key is the function's name, its value the arguments), applied as
the text arrives by the json kind's reader (:class:`.JsonCallsReader`: its lexer, argument
writer and commit rule), told where an item's name and arguments are: the arguments object
is re-encoded token by token, and the call commits when its first member is whole and
valid (or when it closes, empty).

An item written any other way (arguments as a JSON string or ``null``, which the whole
read takes too, an empty name, an item that is not an object) is sent whole when the
region closes, and so is every call after it. The item's first key written again after
its arguments breaks a committed call: the whole read keeps the last value; a repeated key
inside the arguments does too, as in the json kind.
"""

from __future__ import annotations

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
)
from reasonspan.runtime.toolcalls.partial import partial_kind
from reasonspan.runtime.toolcalls.partial_args import ArgumentWriter
from reasonspan.runtime.toolcalls.partial_json import JsonCall, JsonCallsReader, accepts_json


class ApertusCallsReader(JsonCallsReader):
    """The json kind's reader (its lexer, argument writer and commit rule) with Apertus'
    items (module doc): only what is read outside the arguments differs."""

    __slots__ = ("_awaits", "_named")

    def __init__(self, tools: Tools) -> None:
        super().__init__(tools, ())
        self._named = False
        """The item's first key (its name) was read."""
        self._awaits = False
        """The value after the name comes next."""

    def _at_item_place(self, depth: int) -> bool:
        """Does a value opening at ``depth`` stand where an item goes?"""
        return depth == 0 or (depth == 1 and self._open[0] == OPEN_ARRAY)

    def _outside(self, kind: str, value: str) -> None:
        if kind in (COLON, COMMA):
            return
        call = self._call
        depth = len(self._open)
        at_call = call is not None and depth == self._call_depth
        arguments = at_call and self._awaits
        if arguments:
            assert call is not None
            self._awaits = False
            call.has_arguments = True
            if kind == OPEN_OBJECT and call.name:
                self._writer = ArgumentWriter(call.arguments)
                self._writer.event(OPEN_OBJECT, "")
                return  # (the writer counts the containers of the arguments)
            call.followable = False  # a string, null, a list: the whole read decides
        if kind in (OPEN_OBJECT, OPEN_ARRAY):
            self._open.append(kind)
            if not arguments and self._at_item_place(depth):
                if kind == OPEN_OBJECT:
                    self._call = JsonCall(name="")
                    self._call_depth = depth + 1
                    self._named = False
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
            if not self._named:
                call.name, self._named, self._awaits = value, True, True
            elif value == call.name:
                self._lost(call)  # the whole read keeps the last value of the name
        elif kind in (STR, SCALAR) and not arguments and self._at_item_place(depth):
            self._blocked = True  # an item that is not a call
        elif kind in (STOP, FAIL) and call is not None:
            self._lost(call)


@partial_kind("apertus", accepts_json)
def _reader(tools: Tools) -> ApertusCallsReader:
    return ApertusCallsReader(tools)

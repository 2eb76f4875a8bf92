"""Kind ``json`` read while its region is open (``partial.py``): the calls of a Hermes,
Llama 3 or JSON-list body, their arguments re-encoded as they are written.

A call object is a top-level object, or an object inside a top-level list. Its ``name``
string must come before its ``arguments`` (or ``parameters``) object, as every template
writes them; the arguments are then re-encoded token by token (:mod:`.json_stream`), the
same compact text :func:`~.tool_types.dump_arguments` writes for what the whole read
decodes, and the call commits when their first member is whole and valid (or when they
close, empty). A call written any other way (no name first, arguments as a string, a
``function`` wrapper) is sent whole when its region closes, and so is every call after it.

A key repeated inside the arguments breaks a committed call: the whole read keeps the last
value (Python's ``json``), which the stream has no way to take back.
"""

from __future__ import annotations

from dataclasses import dataclass

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.json_stream import (
    CLOSE_ARRAY,
    CLOSE_OBJECT,
    END,
    FAIL,
    KEY,
    OPEN_ARRAY,
    OPEN_OBJECT,
    PIECE,
    SCALAR,
    STOP,
    STR,
    Event,
    JsonTokens,
    decoded,
)
from reasonspan.runtime.toolcalls.partial import PartialCall, partial_kind
from reasonspan.runtime.toolcalls.partial_args import (
    CLOSED,
    FAILED,
    FIRST_MEMBER,
    GOING,
    ArgumentWriter,
)

_ARGUMENTS = ("arguments", "parameters")


def accepts_json(body: str) -> bool | None:
    """A body that begins with a JSON object or list (the kinds read by this reader)."""
    return None if not body else body[0] in "{["


@dataclass
class JsonCall(PartialCall):
    """A call object being read: its name and what stops it from being streamed."""

    followable: bool = True
    """False: written in a way the reader does not follow (sent whole at the close)."""
    has_arguments: bool = False


class JsonCallsReader:
    """The partial reader of kind ``json`` (module doc)."""

    __slots__ = ("_argument_keys", "_blocked", "_call", "_call_depth", "_key", "_name", "_open",
                 "_tokens", "_writer", "calls")  # fmt: skip

    def __init__(self, tools: Tools, argument_keys: tuple[str, ...] = _ARGUMENTS) -> None:
        """``argument_keys``: the keys that hold a call's arguments (xLAM's calls take
        ``arguments`` only)."""
        self._argument_keys = argument_keys
        self.calls: list[PartialCall] = []
        self._tokens = JsonTokens()
        self._open: list[str] = []
        """The containers open at this point of the text, outermost first."""
        self._call: JsonCall | None = None
        self._call_depth = 0
        """Depth of the call object being read (1, or 2 inside a top-level list)."""
        self._key = ""
        """The last key read at the call object's own level."""
        self._name: list[str] | None = None
        """The ``name`` string while it is read."""
        self._writer: ArgumentWriter | None = None
        """The arguments object while it is read."""
        self._blocked = False
        """A call of the region was not followed: none after it commits."""

    def feed(self, text: str) -> None:
        if self._writer is not None and self._tokens.plain_string_text(text):
            # Text of a string argument that needs no escaping: its own JSON text.
            assert self._call is not None
            self._call.arguments.append(text)
            return
        events: list[Event] = []
        self._tokens.feed(text, events)
        tokens = self._tokens
        for kind, value in events:
            if self._writer is not None:
                self._in_arguments(kind, value)
            elif tokens.done and kind not in (STOP, FAIL):
                return  # a call failed: nothing after it is read
            else:
                self._outside(kind, value)

    # ------------------------------------------------------------------ call objects

    def _outside(self, kind: str, value: str) -> None:
        call = self._call
        depth = len(self._open)
        at_call = call is not None and depth == self._call_depth
        if kind in (OPEN_OBJECT, OPEN_ARRAY):
            arguments = at_call and self._key in self._argument_keys
            if arguments:
                self._begin_arguments(kind)
                if self._writer is not None:
                    return  # (the writer counts the containers of the arguments)
            self._open.append(kind)
            if (
                not arguments
                and kind == OPEN_OBJECT
                and (depth == 0 or (depth == 1 and self._open[0] == "["))
            ):
                self._call = JsonCall(name="")
                self._call_depth = depth + 1
                self._key = ""
        elif kind in (CLOSE_OBJECT, CLOSE_ARRAY):
            self._open.pop()
            if call is not None and depth == self._call_depth:
                if not call.committed:
                    self._blocked = True
                self._call = None
                self._call_depth = 0
        elif kind == KEY and at_call:
            assert call is not None
            self._key = value
            repeated = (value == "name" and (call.name or self._name is not None)) or (
                value in _ARGUMENTS and call.has_arguments
            )
            if repeated:
                self._lost(call)
        elif kind == STR and at_call and self._key == "name":
            self._name = []
        elif kind == PIECE and self._name is not None:
            self._name.append(value)
        elif kind == END and self._name is not None:
            if call is not None:
                call.name = decoded("".join(self._name))
            self._name = None
        elif at_call and self._key in _ARGUMENTS and kind in (STR, SCALAR):
            assert call is not None
            call.has_arguments = True
            call.followable = False  # arguments as a JSON string (or not an object)
        elif kind == SCALAR and at_call and self._key == "name":
            assert call is not None
            call.followable = False
        elif kind in (STOP, FAIL) and call is not None:
            self._lost(call)

    def _begin_arguments(self, kind: str) -> None:
        call = self._call
        assert call is not None
        call.has_arguments = True
        if kind != OPEN_OBJECT or not call.name:
            call.followable = False
            return
        self._writer = ArgumentWriter(call.arguments)
        self._writer.event(OPEN_OBJECT, "")

    def _lost(self, call: JsonCall) -> None:
        """The call cannot be followed further: broken once committed, else sent whole."""
        if call.committed:
            call.broken = True
        call.followable = False

    # ------------------------------------------------------------------ arguments

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
        elif got == CLOSED:
            call.complete = True
        self._commit(call)  # (a failed call is not followable: no commit)
        if got != FIRST_MEMBER:
            self._writer = None

    def _commit(self, call: JsonCall) -> None:
        if not self._blocked and call.followable:
            call.commit(self.calls)


@partial_kind("json", accepts_json)
def _reader(tools: Tools) -> JsonCallsReader:
    return JsonCallsReader(tools)


@partial_kind("xlam", accepts_json)
def _xlam_reader(tools: Tools) -> JsonCallsReader:
    """xLAM's JSON list (``xlam_calls``): a call needs ``arguments`` (an item with
    ``parameters`` is not one), so only that key's object is followed."""
    return JsonCallsReader(tools, ("arguments",))

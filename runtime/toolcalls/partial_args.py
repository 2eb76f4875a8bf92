"""One call's JSON arguments object, re-encoded event by event (``partial.py``).

Shared by the partial readers whose calls carry their arguments as one JSON object (the
``json`` kind's ``"arguments"`` member, the ``{…}`` after a section's separator marker):
given :mod:`.json_stream`'s events from the object's ``{`` on, it appends to the call the
compact text :func:`~.tool_types.dump_arguments` writes for the decoded object, and says
when the object's first member is whole (the call may commit), when the object closed,
and when it failed (a repeated key, nesting past ``MAX_NESTING``, the lexer's ``FAIL``):
then nothing more is written.
"""

from __future__ import annotations

from reasonspan.runtime.core.nesting import MAX_NESTING
from reasonspan.runtime.toolcalls.json_stream import (
    CLOSE_ARRAY,
    CLOSE_OBJECT,
    COLON,
    COMMA,
    END,
    KEY,
    OPEN_ARRAY,
    OPEN_OBJECT,
    PIECE,
    SCALAR,
    STR,
    encoded,
)

# What an event did to the object.
GOING, FIRST_MEMBER, CLOSED, FAILED = range(4)


class ArgumentWriter:
    """The arguments object of one call, written into ``out`` as its events come."""

    __slots__ = ("_depth", "_keys", "out")

    def __init__(self, out: list[str]) -> None:
        self.out = out
        self._depth = 0
        """Containers open inside the arguments, the object itself counted (1)."""
        self._keys: list[set[str]] = []
        """The keys of each object open, innermost last (a repeated one fails)."""

    def event(self, kind: str, value: str) -> int:
        """Write one event; :data:`GOING`, :data:`FIRST_MEMBER` (a comma right inside the
        object: its first member is whole), :data:`CLOSED` or :data:`FAILED`."""
        out = self.out
        if kind == PIECE:
            out.append(value)
        elif kind in (STR, END):
            out.append('"')
        elif kind == SCALAR:
            out.append(value)
        elif kind == KEY:
            keys = self._keys[-1]
            if value in keys:
                return FAILED
            keys.add(value)
            out.append(f'"{encoded(value)}"')
        elif kind in (OPEN_OBJECT, OPEN_ARRAY):
            self._depth += 1
            if self._depth > MAX_NESTING:
                return FAILED
            if kind == OPEN_OBJECT:
                self._keys.append(set())
            out.append(kind)
        elif kind in (CLOSE_OBJECT, CLOSE_ARRAY):
            self._depth -= 1
            out.append(kind)
            if kind == CLOSE_OBJECT:
                self._keys.pop()
            if self._depth == 0:
                return CLOSED
        elif kind == COLON:
            out.append(":")
        elif kind == COMMA:
            out.append(",")
            if self._depth == 1:
                return FIRST_MEMBER
        else:  # FAIL (STOP cannot come inside a value)
            return FAILED
        return GOING

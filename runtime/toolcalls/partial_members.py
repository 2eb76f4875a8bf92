"""What the partial readers of one-call-per-region kinds read member by member share
(``partial_kv``: GLM's key/value pairs; ``partial_gemma4``: Gemma 4's object notation).

Such a reader keeps a window of the region's text, the call it reads, the keys it has
seen, and the value being read: streamed (its text sent from :attr:`MemberReader._emit`
on) or kept aside until it ends (:attr:`MemberReader._parts`). Dropping the text read past
(:meth:`MemberReader._compact`) makes a call of any length cost each character a bounded
number of times.
"""

from __future__ import annotations

from typing import Any

from reasonspan.runtime.core.tool_types import InvalidArgumentsError, Tools, dump_arguments
from reasonspan.runtime.toolcalls.partial import PartialCall

WINDOW = 4096
"""Characters read past before a reader drops them from its text."""


class MemberReader:
    """The shared state and upkeep of a member-by-member reader (module doc); a kind's
    reader says how it steps (:meth:`_step`) and whether it is inside a value
    (:meth:`_in_value`)."""

    __slots__ = ("_call", "_emit", "_i", "_key", "_keys", "_parts", "_start", "_state",
                 "_text", "_tools", "calls", "done")  # fmt: skip

    def __init__(self, tools: Tools, state: int) -> None:
        self.calls: list[PartialCall] = []
        self._tools = tools
        self._text = ""
        self._i = 0
        self._state = state
        self._call: PartialCall | None = None
        self._keys: set[str] = set()
        self._key = ""
        self._start = 0
        """Where the value being read begins."""
        self._emit = 0
        """A streamed value: where its text not sent yet begins."""
        self._parts: list[str] = []
        """A value kept aside: its text already dropped from :attr:`_text`."""
        self.done = False

    def feed(self, text: str) -> None:
        if self.done:
            return
        self._text += text
        while not self.done and self._step():
            pass
        self._compact()

    def _step(self) -> bool:
        """Read on; False: wait for more text (or done)."""
        raise NotImplementedError

    def _in_value(self) -> bool | None:
        """True: inside a streamed value; False: inside a value kept aside; None: not in a
        value."""
        raise NotImplementedError

    def _compact(self) -> None:
        """Drop the text read past (a value kept aside: into :attr:`_parts`)."""
        keep = self._i
        streamed = self._in_value()
        if streamed:
            keep = min(keep, self._emit)
        elif streamed is False and keep > self._start:
            self._parts.append(self._text[self._start : keep])
            self._start = keep
        if keep < WINDOW:
            return
        self._text = self._text[keep:]
        self._i -= keep
        self._start -= keep
        self._emit -= keep

    def _stop(self) -> bool:
        """What follows cannot be followed: a committed call is broken; the whole read
        decides the rest."""
        call = self._call
        if call is not None and call.committed:
            call.broken = True
        self.done = True
        return False

    def _send(self, member: str) -> None:
        """A member decided and not streamed: its JSON text joins the call's arguments (the
        call commits with its first)."""
        call = self._call
        assert call is not None
        call.arguments.append(("," if call.arguments else "{") + member)
        if not call.committed:
            call.committed = True
            self.calls.append(call)


def member_text(key: str, value: Any) -> str | None:
    """``"key":value`` as :func:`dump_arguments` writes it (None: a value JSON cannot
    hold)."""
    try:
        return dump_arguments({key: value})[1:-1]
    except (InvalidArgumentsError, ValueError):
        return None

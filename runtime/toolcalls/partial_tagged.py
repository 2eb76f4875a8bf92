"""What the partial readers of tagged section kinds share (``partial_hunyuan``: Hy3 / Hy4's
``<tool_call{S}>…</tool_call{S}>``; ``partial_gcml``: GigaChat 3.5's ``<｜GCML｜invoke …>``).

Such a region holds calls one after another, each between a begin tag and an end tag, read
with :mod:`.sections`' rules: only whitespace between calls (anything else: the region does
not read, every committed call is broken); a call that does not read is dropped and its
siblings kept, the whole read going on after the first end tag after the dropped call's
begin tag (a begin tag before that one: the region does not read). A call is dropped never
sent, or broken once it was, and the reader goes on with its siblings.

The whole read looks for that end tag from the call's beginning, so one written inside a
value or key read past would be taken there: the reader notes such a tag
(:meth:`TaggedCallsReader._note`) and, dropping that call, stops without judging it (the
whole read decides at the close). A kind's reader says how a call's name, its members and
its values read (:meth:`TaggedCallsReader._name`, ``_pair``, ``_value``); the values are
decided and sent as :mod:`.partial_members` decides them, a value JSON cannot hold
dropping its call (:meth:`TaggedCallsReader._decided`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasonspan.runtime.core.tool_types import Tools
from reasonspan.runtime.toolcalls.partial import PartialCall
from reasonspan.runtime.toolcalls.partial_members import MemberReader
from reasonspan.runtime.toolcalls.partial_sections import skip_dropped
from reasonspan.runtime.toolcalls.sections import skip_space

BETWEEN, NAME, PAIR, VALUE, SKIP = range(5)
TAG_MAX = 256
"""Characters a tag, name or key may take here: a longer one is not followed (the whole
read decides), rather than searched again with every piece of text."""


def waits(rest: str, *tags: str) -> bool:
    """Is ``rest``, the end of the text so far, the start of one of ``tags``?"""
    return any(len(rest) < len(t) and t.startswith(rest) for t in tags)


class TaggedCallsReader(MemberReader):
    """The calls of a tagged section (module doc); a kind's reader reads each one's name,
    members and values."""

    __slots__ = ("_begin", "_close", "_end", "_inner", "_tail")
    _value_state = VALUE

    def __init__(self, tools: Tools, begin: str, end: str, close: str) -> None:
        """``begin`` / ``end``: a call's tags; ``close``: the region's close tag (when it is
        several tokens, its first ones reach the reader)."""
        super().__init__(tools, BETWEEN)
        self._begin, self._end, self._close = begin, end, close
        self._inner = False
        """A call tag was written inside the call's name, keys or values (module doc)."""
        self._tail = ""
        """The end of the streamed value's text sent so far (a tag may straddle pieces)."""

    def _step(self) -> bool:
        if self._state == BETWEEN:
            return self._between()
        if self._state == NAME:
            return self._name()
        if self._state == PAIR:
            return self._pair()
        if self._state == VALUE:
            return self._value()
        return self._skip()

    def _name(self) -> bool:
        """The call's name, from just after its begin tag."""
        raise NotImplementedError

    def _pair(self) -> bool:
        """The next member, or the call's end tag."""
        raise NotImplementedError

    def _value(self) -> bool:
        """The value being read: decided (:meth:`_decided`) or streamed on (:meth:`_sent_to`)."""
        raise NotImplementedError

    def _between(self) -> bool:
        """Whitespace, then the next call's begin tag."""
        text = self._text
        i = self._i = skip_space(text, self._i)
        rest = text[i : i + max(len(self._begin), len(self._close))]
        if rest.startswith(self._begin):
            self._i = i + len(self._begin)
            self._call = PartialCall(name="")
            self._keys = set()
            self._inner = False
            self._state = NAME
            return True
        if not rest or waits(rest, self._begin, self._close):
            return False
        return self._malformed()

    def _note(self, text: str) -> None:
        """Note a call tag in ``text``, the call's name, a key or a value (a streamed
        value's pieces one after another)."""
        probe = self._tail + text
        self._inner |= self._begin in probe or self._end in probe
        self._tail = probe[-max(len(self._begin), len(self._end)) :]

    def _member(self, key: str, streamed: bool) -> None:
        """A member's value begins at :attr:`_i` (its key not seen before)."""
        self._tail = ""
        self._open_value(key, streamed, VALUE)

    def _decided(self, stop: int, resume: int, typed: Callable[[str], Any]) -> bool:
        """The value ends at ``stop`` (``typed`` reads its text); reading goes on at
        ``resume``."""
        # Any exception reading a value is "not read" (JSON nested past the recursion limit
        # raises RecursionError), as the whole read's guard has it.
        if not self._value_ends(stop, resume, typed, Exception):
            return self._drop()  # JSON cannot hold it: the call is dropped
        self._state = PAIR
        return True

    def _drop(self) -> bool:
        """The call does not read: never sent, or broken once it was (module doc)."""
        call = self._call
        if self._inner:
            self.done = True  # its end tag may be inside a value read past (module doc)
            return False
        if call is not None and call.committed:
            call.broken = True
        self._call = None
        self._state = SKIP
        return True

    def _skip(self) -> bool:
        """To the dropped call's end tag; a begin tag first: the region does not read."""
        self._i, past = skip_dropped(self._text, self._i, self._begin, self._end)
        if not past:
            return False if past is None else self._malformed()
        self._state = BETWEEN
        return True

    def _malformed(self) -> bool:
        """The region does not read: every committed call is broken."""
        for call in self.calls:
            call.broken = True
        self.done = True
        return False

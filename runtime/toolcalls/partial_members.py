"""What the partial readers that read a call member by member share (``partial_kv``,
``partial_gemma4``, ``partial_solar``, ``partial_dsml``, ``partial_kimi_k3``,
``partial_steptml``, ``partial_xml_nested``, and the tagged kinds of ``partial_tagged``).

Such a reader keeps a window of the region's text, the call it reads, the keys it has
seen, and the value being read: streamed (its text sent from :attr:`MemberReader._emit`
on) or kept aside until it ends (:attr:`MemberReader._parts`). Dropping the text read past
(:meth:`MemberReader._compact`) makes a call of any length cost each character a bounded
number of times. Where a value starts (:meth:`MemberReader._open_value`), how its text is
streamed (:meth:`MemberReader._sent_to`) and how it is decided
(:meth:`MemberReader._value_ends`) are the same for every kind; a kind's reader says where
a value ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from reasonspan.runtime.core.tool_types import InvalidArgumentsError, Tools, dump_arguments
from reasonspan.runtime.toolcalls.partial import PartialCall
from reasonspan.runtime.toolcalls.values import schema_types

WINDOW = 4096
"""Characters read past before a reader drops them from its text."""
LOOK = 512
"""Characters a tag (or a call's head) may take before a reader of tagged values (dsml,
kimi_k3, steptml, xml_nested) gives up on it: the whole read decides, rather than the tag
being searched again with every piece of text."""


class MemberReader:
    """The shared state and upkeep of a member-by-member reader (module doc); a kind's
    reader says how it steps (:meth:`_step`) and in which state it reads a value
    (:attr:`_value_state`, or :meth:`_in_value`)."""

    __slots__ = ("_call", "_emit", "_i", "_key", "_keys", "_parts", "_start", "_state",
                 "_streamed", "_text", "_tools", "calls", "done")  # fmt: skip

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
        self._streamed = False
        """The value being read is streamed (its call committed, and it is a string)."""
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

    _value_state = -1
    """The state of a kind's reader inside a value (a kind with several overrides
    :meth:`_in_value`)."""

    def _in_value(self) -> bool | None:
        """True: inside a streamed value; False: inside a value kept aside; None: not in a
        value."""
        return self._streamed if self._state == self._value_state else None

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
        """What follows cannot be followed: a committed call not read to its end is
        broken; the whole read decides the rest."""
        call = self._call
        if call is not None and call.committed and not call.complete:
            call.broken = True
        self.done = True
        return False

    def _give_up(self) -> bool:
        """What follows is not read here, without judging the call: the whole read
        decides at the close."""
        self.done = True
        return False

    def _call_closed(self, state: int) -> bool:
        """The call's arguments were read to their end (:meth:`.PartialCall.close`);
        reading goes on in ``state``."""
        call = self._call
        assert call is not None
        call.close(self.calls)
        self._call = None
        self._state = state
        return True

    def _open_value(self, key: str, streamed: bool, state: int, start: int = -1) -> None:
        """The value of ``key`` (not seen before) begins at ``start`` (-1: :attr:`_i`);
        ``streamed``: a string the kind streams (it is, once the call committed: its key
        and opening quote are sent now), else kept aside until it ends; reading goes on
        in ``state``."""
        call = self._call
        assert call is not None
        self._keys.add(key)
        self._key = key
        self._start = self._emit = self._i if start < 0 else start
        self._parts = []
        self._streamed = streamed and call.committed
        if self._streamed:
            call.open_string(key)
        self._state = state

    def _sent_to(self, undecided: int) -> None:
        """The value's text up to ``undecided`` cannot end it: reading goes on there, and
        a streamed value's text up to it is sent."""
        self._i = max(self._start, undecided)
        if self._streamed and undecided > self._emit:
            assert self._call is not None
            piece = self._text[self._emit : undecided]
            self._call.add_string(piece)
            self._note(piece)
            self._emit = undecided

    def _value_ends(
        self,
        stop: int,
        resume: int,
        typed: Callable[[str], Any],
        errors: type[Exception] | tuple[type[Exception], ...] = UnicodeEncodeError,
    ) -> bool:
        """The value ends at ``stop``, reading goes on at ``resume``: a streamed value's
        last text and closing quote are sent; one kept aside is read (``typed`` reads
        its text, ``errors`` it may raise are a value JSON cannot hold) and its member
        sent. False: JSON cannot hold it, nothing was sent (the kind's reader stops, or
        drops the call)."""
        call = self._call
        assert call is not None
        self._i = resume
        if self._streamed:
            piece = self._text[self._emit : stop]
            call.close_string(piece)
            self._note(piece)
            return True
        raw = "".join(self._parts) + self._text[self._start : stop]
        self._note(raw)
        try:
            member = member_text(self._key, typed(raw))
        except errors:
            member = None
        if member is None:
            return False
        self._send(member)
        return True

    def _note(self, text: str) -> None:
        """``text``, a value kept aside or a streamed value's next piece, was read past
        (the tagged kinds look in it for a call tag: ``partial_tagged``)."""

    def _send(self, member: str) -> None:
        """A member decided and not streamed: its JSON text joins the call's arguments (the
        call commits with its first)."""
        call = self._call
        assert call is not None
        call.add_member(member)
        call.commit(self.calls)


def string_only(schema: Mapping[str, Any] | None) -> bool:
    """Does the property ``schema`` allow a string and nothing else (a value the whole
    read then takes as its text: it may be streamed)?"""
    kinds = schema_types(schema)
    return bool(kinds) and all(k == "string" for k in kinds)


def member_text(key: str, value: Any) -> str | None:
    """``"key":value`` as :func:`dump_arguments` writes it (None: a value JSON cannot
    hold)."""
    try:
        return dump_arguments({key: value})[1:-1]
    except (InvalidArgumentsError, ValueError):
        return None


def held_back(text: str, start: int, *closers: str) -> int:
    """Where a trailing piece of ``text`` (from ``start`` on, and no longer than the
    longest closer) that may begin one of ``closers`` begins, else its end: what a
    streamed value must not send yet."""
    tail = _TAILS.get(closers)
    if tail is None:
        tail = _TAILS[closers] = _tail_pattern(closers)
    low = len(text) + 1 - tail[1]
    m = tail[0].search(text, low if low > start else start)
    return len(text) if m is None else m.start()


_TAILS: dict[tuple[str, ...], tuple[re.Pattern[str], int]] = {}
""":func:`held_back`'s pattern of each set of closers, and their longest length."""


def _tail_pattern(closers: tuple[str, ...]) -> tuple[re.Pattern[str], int]:
    """A pattern that matches, at the end of a text, any non-empty start of one of
    ``closers`` (``<(?:/(?:p(?:>)?)?)?\\Z`` for ``</p>``): one search finds the first
    place a trailing piece begins one, in C."""
    alternatives = []
    for closer in closers:
        nested = ""
        for ch in reversed(closer[1:]):
            nested = f"(?:{re.escape(ch)}{nested})?"
        alternatives.append(re.escape(closer[0]) + nested)
    return re.compile("(?:" + "|".join(alternatives) + r")\Z"), max(map(len, closers))


def closer_followed(
    text: str, i: int, closer: str, follows: Callable[[str, int], bool | None]
) -> tuple[int, bool]:
    """Where a value read on from ``i`` ends when it ends at the first ``closer`` that
    ``follows(text, end of the closer)`` accepts: ``(at, True)``, the closer at ``at``
    ends it; ``(at, False)``, not decided yet: the text from ``at`` on may still end it (a
    closer whose follower is not known yet, or a trailing piece of one; ``len(text)``:
    none)."""
    at = text.find(closer, i)
    while at >= 0:
        verdict = follows(text, at + len(closer))
        if verdict:
            return at, True
        if verdict is None:
            return at, False
        at = text.find(closer, at + 1)
    return held_back(text, i, closer), False

"""Decoder states shared by requests: what a text decoder would answer, without one.

A request of the SSE path feeds its decoder only the rows the plain lane cannot write (a
marker, the newline a trim takes after it, a character split across tokens, a paragraph
break before a marker): plain text leaves an idle decoder as it was, so the decoder's state
is a function of those rows alone. Most requests of one parser and options feed the same
first rows (``<think>``, then ``\\n``, then the first word, a sequence the model writes
at the start of nearly every answer), so the states they reach are shared here: a
:class:`DecoderState` is the state a fresh decoder reaches after its :attr:`path`, with
the decoder's answers there (``plain_channels()``, ``holds_trail()``, ``finish()``) and
the text each known next row gives. A request holds a state instead of a decoder until a
row has no known successor (or anything other than the SSE path's decode needs the
decoder): it then builds its decoder and replays the path into it (:meth:`replay`), and
goes on as before, teaching the states the rows it feeds next while it still knows
which state its decoder is in (:meth:`learn`). The root, by ``(skip_special_tokens,
call_gaps)``, is a fresh decoder's state (:meth:`ReasoningParser.fresh_state`).

Bounded: a state at :data:`MAX_DEPTH` rows has no successors, and a root holds at most
:data:`MAX_STATES` states (then rows with no known successor take the decoder, as every
row did before). A successor is learnt from the decoder of a request that fed that row
(a decoder it needed anyway: the only extra cost is a replay of at most
:data:`MAX_DEPTH` rows when it is built).
"""

from __future__ import annotations

from collections.abc import Callable

from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.text.decoding import LabelledDecoder, PlainChannels
from reasonspan.runtime.text.trails import hand_back

Row = tuple[tuple[int, ...], bytes, tuple[str, str] | None]
"""One row fed to the decoder: its token ids, their labels, and the trailing runs the
output path held for the trims before it (handed back first; None: none)."""

MAX_DEPTH = 8
"""Rows from a fresh decoder past which states are not shared (a replay stays short)."""
MAX_STATES = 1024
"""States one root holds at most (each a few small objects, a few hundred bytes)."""


class DecoderState:
    """A fresh decoder's state after the rows of :attr:`path`, with its answers there."""

    __slots__ = ("_finish", "_make", "_next", "_root", "_size", "holds", "path", "plain")

    def __init__(
        self,
        make: Callable[[], LabelledDecoder],
        path: tuple[Row, ...],
        plain: PlainChannels,
        holds: tuple[bool, bool],
        root: DecoderState | None,
    ) -> None:
        self._make = make
        """A fresh decoder of the root's parser and options."""
        self.path = path
        self.plain = plain
        """The decoder's ``plain_channels()`` here."""
        self.holds = holds
        """Its channels' ``holds_trail()`` (fixed for a decoder: its formatters' kinds)."""
        self._root = self if root is None else root
        self._size = 1
        """States under the root (read on the root only)."""
        self._finish: tuple[str, str] | None = None
        self._next: dict[Row, tuple[DecoderState, str, str]] = {}

    @classmethod
    def fresh(cls, make: Callable[[], LabelledDecoder]) -> DecoderState:
        """The root: the state of the decoder ``make()`` returns."""
        dec = make()
        holds = (dec.holds_trail(REASONING), dec.holds_trail(CONTENT))
        root = cls(make, (), dec.plain_channels(), holds, None)
        root._finish = dec.finish()  # (finish() last: it ends the decoder)
        return root

    def plain_channel(self, channel: int) -> tuple[frozenset[int], str] | None:
        """``plain_channel(channel)`` of the decoder here."""
        return self.plain[0 if channel == REASONING else 1]

    def finish(self) -> tuple[str, str]:
        """``finish()`` of the decoder here (worked out once, on a replayed decoder)."""
        got = self._finish
        if got is None:
            dec = self._make()
            self.replay(dec)
            got = self._finish = dec.finish()
        return got

    def replay(self, dec: LabelledDecoder) -> None:
        """Feed a fresh decoder the rows of :attr:`path` (their text was sent already)."""
        for ids, labels, tails in self.path:
            if tails is not None:
                hand_back(dec, list(tails))
            dec.feed(list(ids), labels)

    def step(self, row: Row) -> tuple[DecoderState, str, str] | None:
        """The state after ``row`` and the text (reasoning, content) it gives, or None
        when it is not known (the caller feeds a decoder and calls :meth:`learn`)."""
        return self._next.get(row)

    def learn(self, row: Row, dec: LabelledDecoder, r: str, c: str) -> DecoderState | None:
        """The state after ``row``, kept now if it is new: ``dec`` is a decoder in that
        state (it was in this one and was fed ``row``, giving ``r`` and ``c``). None when
        it is new and would not be kept (:data:`MAX_DEPTH`, :data:`MAX_STATES`)."""
        got = self._next.get(row)
        if got is not None:
            return got[0]
        root = self._root
        if len(self.path) >= MAX_DEPTH or root._size >= MAX_STATES:
            return None
        path = (*self.path, row)
        nxt = DecoderState(self._make, path, dec.plain_channels(), self.holds, root)
        self._next[row] = (nxt, r, c)
        root._size += 1
        return nxt

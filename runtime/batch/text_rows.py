"""The rows of a :class:`~reasonspan.runtime.batch.text.BatchText` step that are not
plain: a marker, a split character, held-back tokens released, a reasoning swap
waiting, and the trailing runs BatchText holds for a trim.

A plain row's text is a table gather (``text``); every other row goes through the
request's own decoder, the call :class:`TextSplitter` makes, after which the slot's plain
masks are looked at again (:meth:`TextRows._replain`), or, while a channel's trim is idle
but for trailing newlines, through the token tables with those newlines held here
(``runtime/text/trails.py``: :meth:`TextRows._trail_one`). This module is that per-row
path; a base class of BatchText (``text_slots`` says why), so each row costs what it did.
"""

from __future__ import annotations

from typing import Any

from reasonspan.runtime.batch.text_slots import TextSlots
from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.text.trails import take, take_all

_CHANNELS = {REASONING: 1, CONTENT: 2}
"""The channel bit a one-token row of that label touches (any other label: both)."""


class TextRows(TextSlots):
    """The not-plain rows of :class:`~reasonspan.runtime.batch.text.BatchText` (see the
    module docs)."""

    __slots__ = ()

    def _replain(self, slot: int, channels: int = 3) -> None:
        """Set the slot's plain-mask numbers of ``channels`` (1: reasoning, 2: content)
        from its decoder's state (0: not plain now), after its decoder ran on tokens of
        those channels only (the other one's formatter and decoder did not change)."""
        tabs = self._py[0]
        dec = self._dec(slot)
        table = self._tt[slot]
        live = table is not None and not self._hold[slot]
        last = self._last[slot]
        trails = self._trails[slot]
        for col, channel in ((0, REASONING), (1, CONTENT)):
            if not channels & (1 << col):
                continue
            if live and (col or self._incl[slot]):
                assert table is not None  # (live)
                tabs[3 * slot + col], last[col], trails[col] = self._channel(
                    dec, table, channel, last[col]
                )
            else:
                tabs[3 * slot + col] = 0
                trails[col] = None

    def _trail_one(self, s: int, lab: int, tok: int) -> str | None:
        """Token ``tok``'s text (label ``lab``) for slot ``s`` when its channel's trim is
        idle but for the trailing characters held here (:func:`trails.take`), else None
        (the decoder must take it). While a run is held the channel's mask number is 0, so
        its rows come here."""
        col = 0 if lab == REASONING else 1 if lab == CONTENT else 2
        if col == 2:
            return None
        trail = self._trails[s][col]
        if trail is None:
            return None
        tails = self._tails[s]
        held = tails[col]
        text = take(trail, self._strings[self._tix[s]], tails, col, tok)
        if text is not None and bool(held) != bool(tails[col]):
            self._held_or_plain(s, col)
        return text

    def _trail_row(self, s: int, labels: bytes, ids: list[int]) -> str | None:
        """:meth:`_trail_one` for a row of several tokens of one channel (their labels
        ``labels``): their text when it takes every one of them, else None. (Kept apart
        from :meth:`_trail_one`, whose one-token rows are the common ones: one entry for
        both measured about 5% slower at 256 × 1 requests × tokens.)"""
        lab = labels[0]
        col = 0 if lab == REASONING else 1 if lab == CONTENT else 2
        if col == 2 or labels.count(lab) != len(labels):
            return None
        trail = self._trails[s][col]
        if trail is None:
            return None
        tails = self._tails[s]
        held = tails[col]
        text = take_all(trail, self._strings[self._tix[s]], tails, col, ids)
        if text is not None and bool(held) != bool(tails[col]):
            self._held_or_plain(s, col)
        return text

    def _held_or_plain(self, s: int, col: int) -> None:
        """A run is held for the channel now (its mask number 0: its rows come to the
        trail path), or none any more (plain again)."""
        got = self._last[s][col]
        assert got is not None  # (the channel is plain but for a run)
        self._py[0][3 * s + col] = 0 if self._tails[s][col] else got[1]

    def _decode_one(self, s: int, lab: int, tok: int) -> tuple[str, str]:
        """A one-token row that is not plain: a held tail's path, else the decoder."""
        text = self._trail_one(s, lab, tok)
        if text is None:
            return self._decode(s, [tok], bytes((lab,)), ())
        return (text, "") if lab == REASONING else ("", text)

    def _decode(
        self, slot: int, ids: list[int], labels: bytes, spill: tuple[Any, ...]
    ) -> tuple[str, str]:
        """A row that is not plain: the request's decoder, as TextSplitter feeds it."""
        dec = self._dec(slot)
        r, c = dec.feed(ids, labels, spill)
        # One token of one channel leaves the other channel as it was.
        channels = 3 if len(labels) != 1 else _CHANNELS.get(labels[0], 3)
        if self._hold[slot]:
            channels = 3
            if not c:
                if r:
                    self._held[slot].append(r)
                r = ""
            else:  # content came: no swap can happen any more
                self._hold[slot] = False
                r = "".join(self._held[slot]) + r
                self._held[slot] = []
        if not self._incl[slot]:
            r = ""
        self._replain(slot, channels)
        return r, c

    def _decode_row(
        self, s: int, ids: list[int], labels: bytes, spill: tuple[Any, ...]
    ) -> tuple[str, str]:
        """A row that is not plain: a held run's path when it takes every token, else the
        decoder."""
        text = None if spill or not ids else self._trail_row(s, labels, ids)
        if text is None:
            return self._decode(s, ids, labels, spill)
        return (text, "") if labels[0] == REASONING else ("", text)

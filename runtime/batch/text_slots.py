"""The per-slot state of :class:`~reasonspan.runtime.batch.text.BatchText` and the
requests that come and go: what a request starts with, its decoder made on first need,
its last text, and the slot given back.

BatchText is one object written in three modules by job: this one (the state every row
reads, and a request's admission and end, run once per request), ``text_rows`` (the rows
that are not plain: the request's decoder and the trailing runs held for its trim) and
``text`` (the step: plain rows gathered batch-wide). They are base classes of BatchText,
not objects it holds, so a row pays no extra attribute lookup or call for the split, and
share one set of ``__slots__``, declared here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from reasonspan.runtime.batch.errors import UnknownRequestError
from reasonspan.runtime.batch.step import ReasoningBatch
from reasonspan.runtime.batch.types import BatchFinish
from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.token_text import PlainTables, TokenText
from reasonspan.runtime.text.trails import Trail, hand_back, trail_of

ObjectArray = np.ndarray[Any, np.dtype[np.object_]]
_Last = tuple[tuple[frozenset[int], str], int, Trail | None]
"""A channel's ``(skip, trail)`` when last plain, its mask number and its trail splits."""
_Channel = tuple[int, _Last | None, Trail | None]
"""A channel's plain-mask number (0: not plain now), cached entry and trail splits."""


class _Fresh(NamedTuple):
    """What a request of a parser starts with (:meth:`TextSlots._start`)."""

    parser: ReasoningParser
    hold: bool
    table: TokenText | None
    tix: int
    reasoning: _Channel
    content: _Channel


class UnknownTextRequestError(UnknownRequestError):
    """A request of the batch that was not added to this :class:`BatchText` (or was added
    under a slot it left since): the batch's unknown-request error, said of this layer."""

    def __init__(self, request_id: int, where: str) -> None:
        super().__init__(request_id, where)
        self.args = (
            f"{where}: request {request_id} was not added to this BatchText "
            "(call texts.add(request_id) after batch.add)",
        )


class TextSlots:
    """The state of :class:`~reasonspan.runtime.batch.text.BatchText`, slot by slot, and
    its requests' admission and end (see the module docs)."""

    __slots__ = (
        "_batch",
        "_decs",
        "_fresh",
        "_held",
        "_hold",
        "_incl",
        "_last",
        "_parsers",
        "_plain",
        "_py",
        "_ranges",
        "_rid",
        "_skip",
        "_strings",
        "_tables",
        "_tabs",
        "_tails",
        "_tix",
        "_trails",
        "_tt",
    )

    def __init__(self, batch: ReasoningBatch, *, skip_special_tokens: bool = True) -> None:
        """``skip_special_tokens``: special tokens that are not the family's markers are
        left out of the text, as a server decoding with its default does (TextSplitter's
        option)."""
        self._batch = batch
        self._skip = skip_special_tokens
        self._rid = np.full(0, -1, np.int64)
        """Per batch slot: the request added here (-1: none)."""
        self._tabs = np.zeros((0, 3), np.int64)
        """Per slot: the number of the plain mask (``_plain``) its reasoning, its content,
        and any other label use now; 0 (no token plain) for a channel that is not plain
        now, and always for the third column. A step reads ``_tabs[slot, column of the
        token's label]``: one gather for every token of either channel."""
        self._tix: list[int] = []
        """Per slot: its tokenizer's index in ``_strings`` (-1: no token table)."""
        self._tt: list[TokenText | None] = []
        """Per slot: its tokenizer's token table (None: not byte-level)."""
        self._py: tuple[memoryview, memoryview] = (
            memoryview(b"").cast("q"),
            memoryview(b"").cast("q"),
        )
        """``_tabs`` (flat: ``3 * slot + column``) and ``_rid`` as memoryviews of the same
        memory, for the scalar loop and the per-slot writes."""
        self._plain = PlainTables()
        self._strings: list[ObjectArray] = []
        """Per tokenizer: its token texts (:meth:`TokenText.strings`) and ``""`` after
        them, at the index one past its vocabulary (a row that gives no text reads it)."""
        self._tables: dict[int, int] = {}
        """``_strings`` index by token table (its ``id``; the table lives on its tokenizer)."""
        self._decs: list[LabelledDecoder | None] = []
        """Per slot: the request's decoder, made when a row first needs it (until then
        every token was plain, which leaves a fresh decoder as it was)."""
        self._parsers: list[ReasoningParser | None] = []
        self._fresh: dict[tuple[int, bool], _Fresh] = {}
        """What a request starts with, by its parser (``id``, checked against the parser
        kept in the entry) and include flag: worked out once, from one fresh decoder
        (bounded: cleared when full)."""
        self._hold: list[bool] = []
        """Per slot: the family may present a reasoning-only output as its content: the
        reasoning text is held until content shows up or the request ends."""
        self._held: list[list[str]] = []
        self._incl: list[bool] = []
        self._last: list[list[_Last | None]] = []
        """Per slot: the ``(skip, trail)`` of its reasoning and content when last plain,
        with their mask numbers and trail splits (a decoder's are fixed: worked out once
        per request, not per decoded row)."""
        self._trails: list[list[Trail | None]] = []
        """Per slot and channel (reasoning, content), while the channel is plain and its
        formatter a trim with trailing characters: its plain mask (bytes) and the splits
        of the tokens ending in those characters (:meth:`TokenText.trail_splits`)."""
        self._tails: list[list[str]] = []
        """Per slot and channel: trailing characters held here for the channel's idle
        trim, exactly what it would hold (the ``\\n\\n`` of a paragraph break before a
        possible end of reasoning); handed back to it before its decoder takes anything
        (:meth:`_dec`). While a run is held the channel's mask number is 0,
        so its rows come to :meth:`_trail_one`."""
        self._ranges: dict[int, bytes] = {}
        """``arange(n)`` as int64 bytes, by ``n``: the offsets of a step of one token per
        request."""

    def _grow(self, slot: int) -> None:
        cap = self._rid.shape[0]
        if slot < cap:
            return
        new = max(slot + 1, 2 * cap, 64)
        # One memory each, seen by numpy and Python.
        tabs_b, rid_b = bytearray(new * 3 * 8), bytearray(new * 8)
        tabs = np.frombuffer(tabs_b, np.int64).reshape(new, 3)
        tabs[:cap] = self._tabs
        rid = np.frombuffer(rid_b, np.int64)
        rid[:cap] = self._rid
        rid[cap:] = -1
        self._tabs, self._rid = tabs, rid
        self._py = (memoryview(tabs_b).cast("q"), memoryview(rid_b).cast("q"))
        more = new - cap
        self._decs.extend([None] * more)
        self._parsers.extend([None] * more)
        self._hold.extend([False] * more)
        self._held.extend([[] for _ in range(more)])
        self._incl.extend([True] * more)
        self._tix.extend([-1] * more)
        self._tt.extend([None] * more)
        self._last.extend([[None, None] for _ in range(more)])
        self._trails.extend([[None, None] for _ in range(more)])
        self._tails.extend([["", ""] for _ in range(more)])

    def add(self, request_id: int) -> None:
        """Start the text of a request just added to the batch (``batch.add``): its
        decoder, in the state the prompt left (the batch's labels say the rest)."""
        batch = self._batch
        slot = batch.slot_of(request_id)
        parser = batch.parser_of(request_id)
        self._grow(slot)
        held = self._py[1][slot]
        if held == request_id:
            raise ValueError(f"add(): request {request_id} was already added to this BatchText")
        if held != -1:
            raise ValueError(
                f"add(): request {request_id} took the batch slot of request {held}, which "
                f"was never finished or removed here: call texts.remove({held}) when a "
                "request leaves the batch"
            )
        incl = batch.includes_reasoning(request_id)
        got = self._fresh.get((id(parser), incl))
        if got is None or got[0] is not parser:
            got = self._start(parser, incl)
        _, hold, table, tix, (tab_r, last_r, trail_r), (tab_c, last_c, trail_c) = got
        self._parsers[slot] = parser
        self._hold[slot] = hold
        self._held[slot] = []
        self._incl[slot] = incl
        self._tt[slot] = table
        self._tix[slot] = tix
        tabs = self._py[0]
        tabs[3 * slot] = tab_r
        tabs[3 * slot + 1] = tab_c
        self._py[1][slot] = request_id
        self._last[slot] = [last_r, last_c]
        self._trails[slot] = [trail_r, trail_c]
        self._tails[slot] = ["", ""]

    def _start(self, parser: ReasoningParser, incl: bool) -> _Fresh:
        """:attr:`_fresh`'s entry for a parser and include flag, made now (the tokenizer's
        text table registered on first use)."""
        table = TokenText.of(parser.tokenizer)
        tix = -1
        if table is not None:
            got = self._tables.get(id(table))
            if got is None:
                got = self._tables[id(table)] = len(self._strings)
                self._strings.append(np.append(table.strings(), ""))
            tix = got
            self._plain.widen(table.whole.shape[0])
        # Every token of the request indexes the stacked masks (row 0 for a request
        # without a table): a vocabulary past every table's must widen them too.
        self._plain.widen(parser.machine.vocab_size)
        hold = parser.may_return_reasoning_as_content
        dec = parser.decoder(skip_special_tokens=self._skip)
        channels: list[_Channel] = [(0, None, None), (0, None, None)]
        if table is not None and not hold:
            for col, channel in ((0, REASONING), (1, CONTENT)):
                if col or incl:
                    channels[col] = self._channel(dec, table, channel, None)
        fresh = _Fresh(parser, hold, table, tix, *channels)
        if len(self._fresh) >= 64:
            self._fresh.clear()
        self._fresh[id(parser), incl] = fresh
        return fresh

    def _dec(self, slot: int) -> LabelledDecoder:
        """The slot's decoder, made on first use, holding the runs held here for it
        (:func:`trails.hand_back`: every use of the decoder goes through here, as the
        runtime's through ``StreamRecord.text_decoder``)."""
        dec = self._decs[slot]
        if dec is None:
            parser = self._parsers[slot]
            assert parser is not None  # (the slot is added)
            dec = self._decs[slot] = parser.decoder(skip_special_tokens=self._skip)
        tails = self._tails[slot]
        if tails[0] or tails[1]:
            hand_back(dec, tails)
        return dec

    def _channel(
        self, dec: LabelledDecoder, table: TokenText, channel: int, got: _Last | None
    ) -> _Channel:
        """A channel's plain-mask number (0: not plain now), its cached ``(skip, trail)``
        entry (``got``, or a new one when the decoder's differ: a decoder's are fixed, so
        this is worked out once per request, not per decoded row) and trail splits."""
        plain = dec.plain_channel(channel)
        if plain is None:
            return 0, got, None
        if got is None or got[0] != plain:
            number = self._plain.number(table, *plain)
            mask = self._plain.as_bytes[number]
            got = (plain, number, trail_of(dec.holds_trail(channel), table, *plain, mask))
        return got[1], got, got[2]

    def _slot(self, request_id: int, where: str) -> int:
        slot = self._batch.slot_of(request_id)
        if slot >= self._rid.shape[0] or self._py[1][slot] != request_id:
            raise UnknownTextRequestError(request_id, where)
        return slot

    def finish(self, request_id: int, tail: BatchFinish) -> tuple[str, str]:
        """The last text of a finished request (``tail = batch.finish(request_id)``):
        its held-back tokens, what its formatters held, held reasoning; a reasoning-only
        output the family presents as content (``tail.reasoning_as_content``) comes out
        as content. The request leaves this BatchText (before ``batch.remove``)."""
        slot = self._slot(request_id, "finish()")
        dec = self._dec(slot)
        r1, c1 = dec.feed(tail.token_ids, tail.labels, tail.spill)
        r2, c2 = dec.finish()
        r, c = r1 + r2, c1 + c2
        if self._hold[slot]:
            r = "".join(self._held[slot]) + r
            if tail.reasoning_as_content:
                r, c = "", r + c
        if not self._incl[slot]:
            r = ""
        self._free(slot)
        return r, c

    def remove(self, request_id: int) -> None:
        """Forget a request without its last text (aborted, failed), before or after
        ``batch.remove``; a no-op for one not added here."""
        if request_id in self._batch:
            slot = self._batch.slot_of(request_id)
            if slot < self._rid.shape[0] and self._py[1][slot] == request_id:
                self._free(slot)
            return
        for slot in np.flatnonzero(self._rid == request_id).tolist():  # left the batch
            self._free(slot)

    def _free(self, slot: int) -> None:
        self._py[1][slot] = -1
        self._py[0][3 * slot] = self._py[0][3 * slot + 1] = 0
        self._decs[slot] = None
        self._parsers[slot] = None
        self._held[slot] = []
        self._tt[slot] = None
        self._trails[slot] = [None, None]
        self._tails[slot] = ["", ""]

    def __contains__(self, request_id: object) -> bool:
        if not isinstance(request_id, int) or request_id not in self._batch:
            return False
        slot = self._batch.slot_of(request_id)
        return slot < self._rid.shape[0] and self._py[1][slot] == request_id

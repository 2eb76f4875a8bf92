"""Every request's reasoning and content text, batch-wide: :class:`ReasoningBatch`'s labels
turned into text deltas for the whole step at once.

A server that builds its own response objects (rather than the runtime's SSE bytes) needs
each request's reasoning and content text after every step. :class:`TextSplitter` gives
that for one request; :class:`BatchText` gives it for every request of a batch::

    batch, texts = ReasoningBatch(), BatchText(batch)
    batch.add(rid, parser, prompt_ids); texts.add(rid)
    res = batch.step(request_ids, token_ids, offsets)
    reasoning, content = texts.step(res)      # one str each per row of res
    tail = batch.finish(rid); texts.finish(rid, tail); batch.remove(rid)

Nearly every row of a step is *plain*: one channel's whole tokens (their bytes a complete
UTF-8 text) that the request's decoder and formatter would pass through unchanged (no
character split across tokens held, nothing pending, no trailing character a trim might
take). Those rows' text comes from one numpy gather over a per-tokenizer table of token
texts (:meth:`TokenText.strings`), selected by per-slot plain masks
(:class:`PlainTables`, the output path's). A paragraph break whose trailing newlines a
trim holds until the next text, and the rows after it, are taken from the same table
while BatchText holds those newlines for the trim (``runtime/text/trails.py``). Every other
row (a marker, a split character, held-back tokens released, a reasoning swap waiting)
goes through the request's own decoder, the call :class:`TextSplitter` makes, and the
slot's masks are looked at again. The text is TextSplitter's, delta for delta
(tests/batch/test_batch_text.py).

Text only: tool calls stay in the text as the family writes them (TextSplitter's
``tools``, harmony's messages and the runtime's ``delta.tool_calls`` read them), stop
strings and citations are the runtime's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from reasonspan.runtime.batch.errors import UnknownRequestError
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.small import SMALL_REQUESTS
from reasonspan.runtime.batch.step import ReasoningBatch
from reasonspan.runtime.batch.types import BatchFinish
from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.token_text import PlainTables, TokenText
from reasonspan.runtime.text.trails import Trail, hand_back, take, take_all, trail_of

SMALL = SMALL_REQUESTS
"""Steps of at most this many requests take a scalar loop (numpy calls cost more)."""

_CHANNELS = {REASONING: 1, CONTENT: 2}
"""The channel bit a one-token row of that label touches (any other label: both)."""
_COLUMN = np.full(256, 2, np.intp)
_COLUMN[REASONING] = 0
_COLUMN[CONTENT] = 1
"""The column of ``BatchText._tabs`` a token of each label reads (2: never plain)."""
_CHANNEL_LABELS = np.array([REASONING, CONTENT], np.uint8)

ObjectArray = np.ndarray[Any, np.dtype[np.object_]]
_Last = tuple[tuple[frozenset[int], str], int, Trail | None]
"""A channel's ``(skip, trail)`` when last plain, its mask number and its trail splits."""
_Channel = tuple[int, _Last | None, Trail | None]
"""A channel's plain-mask number (0: not plain now), cached entry and trail splits."""


class _Fresh(NamedTuple):
    """What a request of a parser starts with (:meth:`BatchText._start`)."""

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


class BatchText:
    """Reasoning and content text of every request of one :class:`ReasoningBatch`."""

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

    # ------------------------------------------------------------------ requests

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

    # ------------------------------------------------------------------ text

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

    def step(self, res: BatchStepResult) -> tuple[list[str], list[str]]:
        """``(reasoning, content)``: the text deltas of every row of the step (aligned
        with ``res.request_ids``), as each request's :meth:`TextSplitter.feed` would give
        them. Every request of the step must have been added here."""
        one = res.one
        if one is not None:  # one request, one token (``ReasoningBatch.step_one``)
            rid, tok, s, lab, _, _ = one
            rids = self._py[1]
            if s >= len(rids) or rids[s] != rid:
                raise UnknownTextRequestError(rid, "step()")
            text = self._plain_one(s, lab, tok)
            if text is None:
                r, c = self._decode_one(s, lab, tok)
                return [r], [c]
            return ([text], [""]) if lab == REASONING else ([""], [text])
        n = len(res)
        if not n:
            return [], []
        if n <= SMALL:
            return self._step_small(res)
        slots = res.slots
        # A slot past the arrays reads the last one, whose request (if any) is in the
        # batch at that slot alone: never equal to a request of another slot.
        if (self._rid.take(slots, mode="clip") != res.request_ids).any():
            self._unknown(res)
        toks = res.token_ids
        labs = res.labels
        offs = res.offsets
        uniform = toks.shape[0] == n and offs.tobytes() == self._arange(n + 1)
        counts = None if uniform else np.diff(offs)
        tok_slots = slots if counts is None else np.repeat(slots, counts)
        # Plain: the mask of the token's channel (0 for a channel that is not plain now
        # and for every other label) holds the token.
        ok = self._plain.stacked()[self._tabs[tok_slots, _COLUMN[labs]], toks]
        irregular = res.irregular_rows()
        strings = self._strings
        if counts is None and len(strings) == 1:
            # One token a row, one tokenizer: each channel's text is one gather, rows
            # that give it nothing reading the table's last entry, "".
            if irregular:
                ok[irregular] = False
            table = strings[0]
            both = np.equal.outer(_CHANNEL_LABELS, labs) & ok
            reasoning, content = table.take(np.where(both, toks, table.shape[0] - 1)).tolist()
            row_ok = ok
        else:
            reasoning, content, row_ok = self._joined(res, toks, labs, ok, tok_slots, counts)
        slow = np.flatnonzero(~row_ok).tolist()
        if slow and counts is None and not irregular:  # one token a row, the step's own
            decode_one = self._decode_one
            slots_l, labs_l, toks_l = slots[slow].tolist(), labs[slow].tolist(), toks[slow].tolist()
            for i, s, lab, tok in zip(slow, slots_l, labs_l, toks_l, strict=True):
                reasoning[i], content[i] = decode_one(s, lab, tok)
        elif slow:
            slots_l = slots.tolist()
            for i, (_, ids, labels, spill) in zip(slow, res.all_decided(slow), strict=True):
                reasoning[i], content[i] = self._decode_row(slots_l[i], ids, labels, spill)
        return reasoning, content

    def _decode_row(
        self, s: int, ids: list[int], labels: bytes, spill: tuple[Any, ...]
    ) -> tuple[str, str]:
        """A row that is not plain: a held run's path when it takes every token, else the
        decoder."""
        text = None if spill or not ids else self._trail_row(s, labels, ids)
        if text is None:
            return self._decode(s, ids, labels, spill)
        return (text, "") if labels[0] == REASONING else ("", text)

    def _joined(
        self,
        res: BatchStepResult,
        toks: np.ndarray[Any, Any],
        labs: np.ndarray[Any, Any],
        ok: np.ndarray[Any, Any],
        tok_slots: np.ndarray[Any, Any],
        counts: np.ndarray[Any, Any] | None,
    ) -> tuple[list[str], list[str], np.ndarray[Any, Any]]:
        """:meth:`step`'s plain rows when a row may hold several tokens, or the step holds
        several tokenizers: each row's tokens' texts joined; ``(reasoning, content,
        plain rows)``."""
        n = len(res)
        offs = res.offsets
        irregular = res.irregular_rows()
        texts = self._texts(tok_slots, toks)
        if counts is None:
            row_ok, row_lab, row_t = ok, labs, texts
        else:
            full = np.flatnonzero(counts > 0)
            starts = offs[:-1][full]
            row_ok = np.zeros(n, np.bool_)
            row_lab = np.zeros(n, np.uint8)
            row_t = np.full(n, "", object)
            if full.shape[0]:
                # A row is plain when every token is, all of one channel.
                same = np.minimum.reduceat(labs, starts) == np.maximum.reduceat(labs, starts)
                row_ok[full] = np.logical_and.reduceat(ok, starts) & same
                row_lab[full] = labs[starts]
                # A row's text is its tokens' texts joined (``+`` over str objects).
                row_t[full] = np.add.reduceat(texts, starts)
            row_ok |= counts == 0  # nothing to decode
        if irregular:
            row_ok[irregular] = False
        # Row by channel: reasoning, content (a text only where the row is plain).
        both = np.equal.outer(_CHANNEL_LABELS, row_lab) & row_ok
        reasoning, content = np.where(both, row_t, "").tolist()
        return reasoning, content, row_ok

    def _arange(self, n: int) -> bytes:
        got = self._ranges.get(n)
        if got is None:
            if len(self._ranges) >= 64:
                self._ranges.clear()
            got = self._ranges[n] = np.arange(n, dtype=np.int64).tobytes()
        return got

    def _texts(self, tok_slots: np.ndarray[Any, Any], toks: np.ndarray[Any, Any]) -> ObjectArray:
        """Each step token's whole text (``""`` where it has none; only plain tokens'
        texts are used), from its request's tokenizer table."""
        strings = self._strings
        if len(strings) == 1:
            # A request without a table (not byte-level) reads it too, its ids clipped:
            # its tokens are never plain, their texts never used.
            return strings[0].take(toks, mode="clip")
        out = np.full(toks.shape[0], "", object)
        tix = np.asarray(self._tix, np.int64)[tok_slots]  # (several tokenizers: rare)
        for k, table in enumerate(strings):
            sel = tix == k
            if sel.any():
                out[sel] = table.take(toks[sel], mode="clip")
        return out

    def _step_small(self, res: BatchStepResult) -> tuple[list[str], list[str]]:
        """:meth:`step` for a few requests: the same decisions row by row."""
        rids, toks, offs, labs, slots = res.lists()
        tabs, rid = self._py
        cap = len(rid)
        masks = self._plain.as_bytes
        strings = self._strings
        tix = self._tix
        plain_one = self._plain_one
        trail_one = self._trail_one
        irregular = res.irregular_rows()
        reasoning = [""] * len(rids)
        content = [""] * len(rids)
        slow: list[int] = []
        for i, s in enumerate(slots):
            if s >= cap or rid[s] != rids[i]:
                self._unknown(res)
            a, z = offs[i], offs[i + 1]
            if irregular and i in irregular:
                slow.append(i)
                continue
            if a == z:
                continue
            lab = labs[a]
            if z - a == 1:
                text = plain_one(s, lab, toks[a])
                if text is None:
                    text = trail_one(s, lab, toks[a])
            elif lab != REASONING and lab != CONTENT:
                text = None
            else:
                mask = masks[tabs[3 * s + (lab != REASONING)]]
                text = None
                ids = toks[a:z]
                # C-level checks and reads: a generator over a few tokens, or a numpy
                # gather of them, costs more than the row's own work.
                if (
                    labs.count(lab, a, z) == z - a
                    and max(ids) < len(mask)
                    and all(map(mask.__getitem__, ids))
                ):
                    text = "".join(map(strings[tix[s]].__getitem__, ids))
            if text is not None:
                if lab == REASONING:
                    reasoning[i] = text
                else:
                    content[i] = text
            else:
                slow.append(i)
        if slow:
            for i, (_, ids, labels, spill) in zip(slow, res.all_decided(slow), strict=True):
                reasoning[i], content[i] = self._decode_row(slots[i], ids, labels, spill)
        return reasoning, content

    def _plain_one(self, s: int, lab: int, tok: int) -> str | None:
        """Token ``tok``'s text when it is plain in its channel (label ``lab``) for slot
        ``s`` now, else None (its decoder must take it)."""
        if lab != REASONING and lab != CONTENT:
            return None
        mask = self._plain.as_bytes[self._py[0][3 * s + (lab != REASONING)]]
        if tok < len(mask) and mask[tok]:  # (mask 0, nothing plain, is empty)
            text: str = self._strings[self._tix[s]][tok]
            return text
        return None

    def _unknown(self, res: BatchStepResult) -> None:
        """Raise for the first request of the step not added here (nothing changed)."""
        rid = self._py[1]
        for r, s in zip(res.request_ids.tolist(), res.slots.tolist(), strict=True):
            if s >= len(rid) or rid[s] != r:
                raise UnknownTextRequestError(r, "step()")
        raise AssertionError("no unknown request")  # pragma: no cover

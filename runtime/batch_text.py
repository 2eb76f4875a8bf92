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
(:class:`PlainTables`, the output path's). Every other row (a marker, a paragraph break a
formatter holds until the next text, a split character, held-back tokens released, a
reasoning swap waiting) goes through the request's own decoder, the call
:class:`TextSplitter` makes, and the slot's masks are looked at again. The text is
TextSplitter's, delta for delta (tests/test_batch_text.py).

Text only: tool calls stay in the text as the family writes them (TextSplitter's
``tools``, harmony's messages and the runtime's ``delta.tool_calls`` read them), stop
strings and citations are the runtime's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import ReasoningBatch
from .batch_result import BatchStepResult
from .batch_small import SMALL_REQUESTS
from .batch_types import BatchFinish
from .decoding import LabelledDecoder
from .errors import ReasonspanError
from .labels import CONTENT, REASONING
from .token_text import PlainTables, TokenText

SMALL = SMALL_REQUESTS
"""Steps of at most this many requests take a scalar loop (numpy calls cost more)."""

ObjectArray = np.ndarray[Any, np.dtype[np.object_]]


class UnknownTextRequestError(ReasonspanError, KeyError):
    """A request of the batch that was not added to this :class:`BatchText` (or was added
    under a slot it left since)."""

    def __init__(self, request_id: int, where: str) -> None:
        self.request_id = request_id
        super().__init__(
            f"{where}: request {request_id} was not added to this BatchText "
            "(call texts.add(request_id) after batch.add)"
        )

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class BatchText:
    """Reasoning and content text of every request of one :class:`ReasoningBatch`."""

    __slots__ = (
        "_batch",
        "_bits",
        "_decs",
        "_held",
        "_hold",
        "_incl",
        "_plain",
        "_py",
        "_rid",
        "_skip",
        "_strings",
        "_tab_c",
        "_tab_r",
        "_tables",
        "_tix",
        "_tix_l",
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
        self._bits = np.zeros(0, np.uint8)
        """Per slot: 1 = its reasoning is plain now, 2 = its content is."""
        self._tab_r = np.zeros(0, np.int64)
        """Per slot: the number of its reasoning's plain mask (``_plain``)."""
        self._tab_c = np.zeros(0, np.int64)
        self._tix = np.full(0, -1, np.int64)
        """Per slot: its tokenizer's index in ``_strings`` (-1: no token table)."""
        self._tix_l: list[int] = []
        """``_tix`` as a list, for the scalar loop."""
        self._tt: list[TokenText | None] = []
        """Per slot: its tokenizer's token table (None: not byte-level)."""
        self._py: tuple[memoryview, memoryview, memoryview, memoryview] = (
            memoryview(b"").cast("B"),
            memoryview(b"").cast("q"),
            memoryview(b"").cast("q"),
            memoryview(b"").cast("q"),
        )
        """``_bits``, ``_tab_r``, ``_tab_c``, ``_rid`` as memoryviews of the same memory,
        for the scalar loop and the per-slot writes."""
        self._plain = PlainTables()
        self._strings: list[ObjectArray] = []
        self._tables: dict[int, int] = {}
        """``_strings`` index by token table (its ``id``; the table lives on its tokenizer)."""
        self._decs: list[LabelledDecoder | None] = []
        self._hold: list[bool] = []
        """Per slot: the family may present a reasoning-only output as its content: the
        reasoning text is held until content shows up or the request ends."""
        self._held: list[list[str]] = []
        self._incl: list[bool] = []

    # ------------------------------------------------------------------ requests

    def _grow(self, slot: int) -> None:
        cap = self._rid.shape[0]
        if slot < cap:
            return
        new = max(slot + 1, 2 * cap, 64)
        views = []
        for name, fill in (("_bits", 0), ("_tab_r", 0), ("_tab_c", 0), ("_rid", -1)):
            old = getattr(self, name)
            buf = bytearray(new * old.itemsize)  # one memory, seen by numpy and Python
            arr = np.frombuffer(buf, old.dtype)
            arr[cap:] = fill
            arr[:cap] = old
            setattr(self, name, arr)
            views.append(memoryview(buf).cast(old.dtype.char))
        self._py = (views[0], views[1], views[2], views[3])
        tix = np.full(new, -1, np.int64)
        tix[:cap] = self._tix
        self._tix = tix
        more = new - cap
        self._decs.extend([None] * more)
        self._hold.extend([False] * more)
        self._held.extend([[] for _ in range(more)])
        self._incl.extend([True] * more)
        self._tix_l.extend([-1] * more)
        self._tt.extend([None] * more)

    def add(self, request_id: int) -> None:
        """Start the text of a request just added to the batch (``batch.add``): its
        decoder, in the state the prompt left (the batch's labels say the rest)."""
        batch = self._batch
        slot = batch.slot_of(request_id)
        parser = batch.parser_of(request_id)
        self._grow(slot)
        if self._py[3][slot] != -1:
            raise ValueError(
                f"add(): request {request_id} was already added to this BatchText "
                f"(or the request before it in its batch slot was not finished or removed)"
            )
        self._decs[slot] = parser.decoder(skip_special_tokens=self._skip)
        self._hold[slot] = parser.may_return_reasoning_as_content
        self._held[slot] = []
        self._incl[slot] = batch.includes_reasoning(request_id)
        table = self._tt[slot] = TokenText.of(parser.tokenizer)
        tix = -1
        if table is not None:
            got = self._tables.get(id(table))
            if got is None:
                got = self._tables[id(table)] = len(self._strings)
                self._strings.append(table.strings())
            tix = got
            self._plain.widen(max(table.whole.shape[0], parser.machine.vocab_size))
        self._tix[slot] = self._tix_l[slot] = tix
        self._py[3][slot] = request_id
        self._replain(slot)

    def _slot(self, request_id: int, where: str) -> int:
        slot = self._batch.slot_of(request_id)
        if slot >= self._rid.shape[0] or self._py[3][slot] != request_id:
            raise UnknownTextRequestError(request_id, where)
        return slot

    def finish(self, request_id: int, tail: BatchFinish) -> tuple[str, str]:
        """The last text of a finished request (``tail = batch.finish(request_id)``):
        its held-back tokens, what its formatters held, held reasoning; a reasoning-only
        output the family presents as content (``tail.reasoning_as_content``) comes out
        as content. The request leaves this BatchText (before ``batch.remove``)."""
        slot = self._slot(request_id, "finish()")
        dec = self._decs[slot]
        assert dec is not None
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
        """Forget a request without its last text (aborted, failed); a no-op for one not
        added here."""
        slot = self._batch.slot_of(request_id)
        if slot < self._rid.shape[0] and self._py[3][slot] == request_id:
            self._free(slot)

    def _free(self, slot: int) -> None:
        self._py[3][slot] = -1
        self._py[0][slot] = 0
        self._decs[slot] = None
        self._held[slot] = []
        self._tt[slot] = None

    def __contains__(self, request_id: object) -> bool:
        if not isinstance(request_id, int) or request_id not in self._batch:
            return False
        slot = self._batch.slot_of(request_id)
        return slot < self._rid.shape[0] and self._py[3][slot] == request_id

    # ------------------------------------------------------------------ text

    def _replain(self, slot: int) -> None:
        """Set the slot's plain bits and masks from its decoder's state (after its
        decoder ran, or at add)."""
        bits = 0
        dec = self._decs[slot]
        table = self._tt[slot]
        if dec is not None and table is not None and not self._hold[slot]:
            if self._incl[slot]:
                plain = dec.plain_channel(REASONING)
                if plain is not None:
                    bits |= 1
                    self._py[1][slot] = self._plain.number(table, *plain)
            plain = dec.plain_channel(CONTENT)
            if plain is not None:
                bits |= 2
                self._py[2][slot] = self._plain.number(table, *plain)
        self._py[0][slot] = bits

    def _decode(
        self, slot: int, ids: list[int], labels: bytes, spill: tuple[Any, ...]
    ) -> tuple[str, str]:
        """A row that is not plain: the request's decoder, as TextSplitter feeds it."""
        dec = self._decs[slot]
        assert dec is not None
        r, c = dec.feed(ids, labels, spill)
        if self._hold[slot]:
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
        self._replain(slot)
        return r, c

    def step(self, res: BatchStepResult) -> tuple[list[str], list[str]]:
        """``(reasoning, content)``: the text deltas of every row of the step (aligned
        with ``res.request_ids``), as each request's :meth:`TextSplitter.feed` would give
        them. Every request of the step must have been added here."""
        n = len(res)
        if not n:
            return [], []
        if n <= SMALL:
            return self._step_small(res)
        slots = res.slots
        rid = self._rid
        if int(slots.max()) >= rid.shape[0] or not np.array_equal(rid[slots], res.request_ids):
            self._unknown(res)
        toks = res.token_ids
        labs = res.labels
        offs = res.offsets
        m = toks.shape[0]
        counts = np.diff(offs)
        uniform = m == n and bool((counts == 1).all())
        tok_slots = slots if uniform else np.repeat(slots, counts)
        bits = self._bits[tok_slots]
        stack = self._plain.stacked()
        ok_r = (labs == REASONING) & ((bits & 1) != 0)
        ok_r &= stack[self._tab_r[tok_slots], toks]
        ok_c = (labs == CONTENT) & ((bits & 2) != 0)
        ok_c &= stack[self._tab_c[tok_slots], toks]
        texts = self._texts(tok_slots, toks)
        irregular = res.irregular_rows()
        if uniform:
            row_r, row_c, row_t = ok_r, ok_c, texts
        else:
            row_r = np.zeros(n, np.bool_)
            row_c = np.zeros(n, np.bool_)
            row_t = np.full(n, "", object)
            full = np.flatnonzero(counts > 0)
            if full.shape[0]:
                starts = offs[:-1][full]
                row_r[full] = np.logical_and.reduceat(ok_r, starts)
                row_c[full] = np.logical_and.reduceat(ok_c, starts)
                # A row's text is its tokens' texts joined (``+`` over str objects).
                row_t[full] = np.add.reduceat(texts, starts)
        if irregular:
            row_r[irregular] = False
            row_c[irregular] = False
        fast = row_r | row_c
        if not uniform:
            fast |= (counts == 0) & ~np.isin(np.arange(n), irregular)  # nothing to decode
        reasoning: list[str] = np.where(row_r, row_t, "").tolist()
        content: list[str] = np.where(row_c, row_t, "").tolist()
        slow = np.flatnonzero(~fast).tolist()
        if slow:
            slots_l = slots.tolist()
            for i, (_, ids, labels, spill) in zip(slow, res.all_decided(slow), strict=True):
                reasoning[i], content[i] = self._decode(slots_l[i], ids, labels, spill)
        return reasoning, content

    def _texts(self, tok_slots: np.ndarray[Any, Any], toks: np.ndarray[Any, Any]) -> ObjectArray:
        """Each step token's whole text (``""`` where it has none; only plain tokens'
        texts are used), from its request's tokenizer table."""
        strings = self._strings
        if len(strings) == 1:
            return strings[0].take(toks, mode="clip")  # past the table: never plain
        out = np.full(toks.shape[0], "", object)
        tix = self._tix[tok_slots]
        for k, table in enumerate(strings):
            sel = tix == k
            if sel.any():
                out[sel] = table.take(toks[sel], mode="clip")
        return out

    def _step_small(self, res: BatchStepResult) -> tuple[list[str], list[str]]:
        """:meth:`step` for a few requests: the same decisions row by row."""
        rids, toks, offs, labs, slots = res.lists()
        bits, tab_r, tab_c, rid = self._py
        cap = len(rid)
        masks = self._plain.as_bytes
        strings = self._strings
        tix = self._tix_l
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
            b = bits[s]
            if lab == REASONING and b & 1:
                mask = masks[tab_r[s]]
            elif lab == CONTENT and b & 2:
                mask = masks[tab_c[s]]
            else:
                slow.append(i)
                continue
            if all(labs[j] == lab and toks[j] < len(mask) and mask[toks[j]] for j in range(a, z)):
                table = strings[tix[s]]
                text = table[toks[a]] if z - a == 1 else "".join(table[toks[a:z]].tolist())
                if lab == REASONING:
                    reasoning[i] = text
                else:
                    content[i] = text
            else:
                slow.append(i)
        if slow:
            for i, (_, ids, labels, spill) in zip(slow, res.all_decided(slow), strict=True):
                reasoning[i], content[i] = self._decode(slots[i], ids, labels, spill)
        return reasoning, content

    def _unknown(self, res: BatchStepResult) -> None:
        """Raise for the first request of the step not added here (nothing changed)."""
        rid = self._py[3]
        for r, s in zip(res.request_ids.tolist(), res.slots.tolist(), strict=True):
            if s >= len(rid) or rid[s] != r:
                raise UnknownTextRequestError(r, "step()")
        raise AssertionError("no unknown request")  # pragma: no cover

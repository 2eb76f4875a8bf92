"""The vectorized output path: a step's plain text tokens to SSE event bytes, batch-wide.

Most generated tokens are plain text in the middle of a channel: the request's decoder holds
no partial character, its formatter has nothing pending, and the token's bytes are a whole
UTF-8 text that the formatter would not hold back. For such a token the event a server
writes is fixed bytes: the request's event prefix (``data: {"object":...,"id":...,
"delta":{"content":"``), the token's JSON-escaped text (:class:`TokenText`, escaped by
msgspec), and the common suffix. :class:`SSEPath` finds those rows of a step with a few
numpy gathers over per-slot arrays (is the request's channel plain now, which token table
does it use) and per-token tables, and writes their events straight into the requests'
queues. A paragraph break whose trailing newlines the trim holds until the next text, and
the row after it, are written from the token texts too, while the path holds those newlines
for the trim (``runtime/text/trails.py``, :meth:`SSEPath._write_trail`). A row that is not
plain otherwise (a split character, a trim after a marker, the marker itself), of a request
whose options add nothing to a text chunk, is decoded here by the request's own decoder
(``decoder.feed``, the call the exact path makes) and its text written from the same
templates, escaped by msgspec (:meth:`SSEPath._decode_rows`). The runtime's exact
per-request path takes every other row (held-back tokens, tool-call regions and their
openers, stop strings, harmony's tool messages, citations, log probabilities, a full queue)
and then tells this path, through :meth:`SSEPath.refresh`, whether the request is plain
again. A step of a few requests takes a scalar loop instead of the numpy gathers, and a step
of one request with one token (a server decoding for one user) :meth:`SSEPath.emit_one`.

A request that offers tools rides it too while its call extractor only passes answer tokens
through (outside a region, openers matched on ids): the openers are left out of its table,
so a call region starts on the exact path, and while the extractor holds any token (a
region, and whatever comes after its opener, reasoning too) every row of the request takes
the exact path, in order behind them. Only requests added with ``sse=True`` (their stream is
read as event bytes) ride it. The bytes are identical to encoding the chunk Structs
(``runtime.sse.chunk_events``): the prefix and suffix are cut from such an encoding at add
time, and the escaped pieces come from msgspec itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from reasonspan.runtime.batch.lanes import FORM_BYTES, FORM_DECODE, FORM_EXACT
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.small import SMALL_REQUESTS
from reasonspan.runtime.batch.types import BoolArray
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from reasonspan.runtime.stream.sse_templates import (
    ID,
    ID_B,
    SENT,
    SENTINEL,
    SharedTemplates,
    shared_templates,
    templates,
)
from reasonspan.runtime.text.token_text import PlainTables, TokenText
from reasonspan.runtime.text.trails import Trail, take, take_all, trail_of

if TYPE_CHECKING:
    from reasonspan.runtime.parser.contract import ReasoningParser
    from reasonspan.runtime.stream.request import StreamRecord

_ID, _SENTINEL = ID, SENTINEL
"""The placeholders the templates are cut around (an id may hold them: tested here)."""
_SHARED = 64
"""Shared templates kept (by model and ``created`` second; cleared when full)."""


def _content_skip(skip: frozenset[int], openers: frozenset[int] | None) -> frozenset[int]:
    """The tokens a request's content mask (and its trail splits) leave out: the decoder's
    skipped ids, and its call extractor's openers (those go through the extractor)."""
    return skip if openers is None else skip | openers


_TBD: Trail = (b"", {})
"""A slot's trail splits not worked out yet (:meth:`SSEPath._trail`)."""

DECODE_R = 4
"""Slot bit: the request's reasoning rows may be decoded here (:meth:`SSEPath._decode_rows`)."""
DECODE_C = 8
"""Slot bit: its content rows may be decoded here."""
DECODE = DECODE_R | DECODE_C
_NEEDS = tuple(
    {REASONING: DECODE_R, CONTENT: DECODE_C, DELIMITER: DECODE}.get(lab, 16) for lab in range(256)
)
"""The decode bits a row needs per label of its tokens: a marker changes both channels'
formatters; any other label (a kept tool marker, a tool message) never here (16: no slot
has that bit)."""


SMALL = SMALL_REQUESTS
"""Steps of at most this many requests take the scalar loop: a numpy call costs more
than a request's few Python lookups (the scalar batch step's bound: its results carry
the lists this loop reads)."""


_FreshSlot = tuple[
    "ReasoningParser",
    TokenText,
    int,
    int,
    int,
    tuple[frozenset[int], str] | None,
    tuple[frozenset[int], str] | None,
]
"""A plain request's slot state at admission: its parser and token table (the key's
``id`` is theirs), ``bits``, ``tab_r``, ``tab_c``, and the ``(skip, trail)`` each table
was made for."""


class SSEPath:
    """Per-slot state of the requests that stream SSE bytes, and the batch-wide step."""

    __slots__ = (
        "_ends",
        "_fresh",
        "_plain",
        "_plain_c",
        "_plain_r",
        "_py",
        "_shared",
        "_tables_b",
        "_trail_c",
        "_trail_r",
        "alias",
        "bits",
        "count",
        "ends",
        "esc",
        "mid",
        "pre_c",
        "pre_r",
        "recs",
        "rows_by_form",
        "suf",
        "tab_c",
        "tab_r",
        "texts",
    )

    def __init__(self, alias: bool) -> None:
        self.alias = alias
        self.count = 0
        """Requests on this path now (the step skips everything when there are none)."""
        self.rows_by_form = [0, 0, 0]
        """Rows of the batch-wide passes (steps of more than :data:`SMALL` requests) by the
        output form they took, indexed by ``lanes.FORM_BYTES``, ``FORM_DECODE`` and
        ``FORM_EXACT``: what a server (or a test) reads to see that no request pushed
        another off its form."""
        self.bits = np.zeros(0, np.uint8)
        """Per slot: 1 = its reasoning is plain now, 2 = its content is; :data:`DECODE_R`,
        :data:`DECODE_C`: rows of that channel that are not plain may still be decoded
        here."""
        self.tab_r = np.zeros(0, np.int64)
        """Per slot: the row of the token table its reasoning uses (0: none)."""
        self.tab_c = np.zeros(0, np.int64)
        self._py: tuple[memoryview, memoryview, memoryview] = (
            memoryview(b""),
            memoryview(b""),
            memoryview(b""),
        )
        """``bits``, ``tab_r`` and ``tab_c`` as memoryviews of the same memory: the scalar
        loop reads them at a tenth of the cost of indexing an array with a Python int."""
        self._plain = PlainTables()
        """The plain-token masks ``tab_r`` and ``tab_c`` number."""
        self._tables_b = self._plain.as_bytes
        """Its masks as bytes (the same list), for the scalar loops."""
        self.recs: list[StreamRecord | None] = []
        self.pre_c: list[bytes] = []
        self.pre_r: list[bytes] = []
        self.mid: list[bytes] = []
        self.esc: list[list[bytes]] = []
        self.ends: list[list[bytes | None]] = []
        """Per slot: its tokenizer's escaped token texts with the event suffix after them,
        made as tokens are first written (a plain event is then ``prefix + end``: one
        bytes object made per event instead of two)."""
        self._ends: dict[int, list[bytes | None]] = {}
        """``ends`` by token table (its ``id``; the table outlives this path's use of it,
        every slot holding it in ``texts``)."""
        self.texts: list[TokenText | None] = []
        self._plain_r: list[tuple[frozenset[int], str] | None] = []
        """Per slot: the reasoning ``(skip, trail)`` its ``tab_r`` was made for."""
        self._plain_c: list[tuple[frozenset[int], str] | None] = []
        self._trail_r: list[Trail | None] = []
        """Per slot: the trail splits of its reasoning's mask (None: its trim holds no
        trailing run, or it has none; :data:`_TBD` until a row first asks): a row ending
        in a run, or a row after one, is written here while the trim is otherwise idle
        (:meth:`_write_trail`)."""
        self._trail_c: list[Trail | None] = []
        self.suf = b""
        self._shared: dict[tuple[str, int], SharedTemplates | None] = {}
        """Templates by (model, created) with :data:`ID` for the id (:meth:`_cut`)."""
        self._fresh: dict[tuple[int, bool, bool], _FreshSlot] = {}
        """The slot state :meth:`refresh` gives a request with no options that change it,
        by ``(id(parser), skip_special_tokens, include_reasoning)`` (:meth:`admit`)."""

    # ------------------------------------------------------------------ requests

    def cover(self, slot: int) -> None:
        """Make the per-slot state reach ``slot`` (a request of the batch that does not
        ride the path too: a step reads every row's slot, and one past the arrays would
        fail it)."""
        cap = len(self.recs)
        if slot < cap:
            return
        new = max(slot + 1, 2 * cap, 64)
        views = []
        for name in ("bits", "tab_r", "tab_c"):
            old = getattr(self, name)
            buf = bytearray(new * old.itemsize)  # one memory, seen by numpy and Python
            arr = np.frombuffer(buf, old.dtype)
            arr[:cap] = old
            setattr(self, name, arr)
            views.append(memoryview(buf).cast(old.dtype.char))
        self._py = (views[0], views[1], views[2])
        more = new - cap
        self.recs.extend([None] * more)
        self.pre_c.extend([b""] * more)
        self.pre_r.extend([b""] * more)
        self.mid.extend([b""] * more)
        self.esc.extend([[]] * more)
        self.ends.extend([[]] * more)
        self.texts.extend([None] * more)
        self._plain_r.extend([None] * more)
        self._plain_c.extend([None] * more)
        self._trail_r.extend([None] * more)
        self._trail_c.extend([None] * more)

    def admit(self, rec: StreamRecord, slot: int) -> bool:
        """Put a request on the path (False: it cannot ride it, e.g. a tokenizer whose
        text is not its token bytes; it then takes the exact path throughout)."""
        table = TokenText.of(rec.parser.tokenizer)
        cut = self._cut(rec) if table is not None else None
        if table is None or cut is None or (self.suf and cut[3] != self.suf):
            return False
        self.cover(slot)
        self.pre_c[slot], self.pre_r[slot], self.mid[slot], self.suf, role = cut
        q = rec.queue
        if role is not None and len(q) == 1:
            # The role chunk add() queued, as the bytes its encoding gives: made from the
            # shared template, not encoded when the request is first read.
            q[0] = role
        self._plain.widen(table.whole.shape[0])
        self.esc[slot] = table.escaped
        ends = self._ends.get(id(table))
        if ends is None:
            ends = self._ends[id(table)] = [None] * len(table.escaped)
        self.ends[slot] = ends
        self.texts[slot] = table
        self._plain_r[slot] = self._plain_c[slot] = None
        self._trail_r[slot] = self._trail_c[slot] = _TBD
        self.recs[slot] = rec
        rec.sse_slot = slot
        self.count += 1
        if rec.hold_reasoning or rec.stop or rec.tools or rec.cites or rec.calls or rec.logprobs:
            self.refresh(rec)
            return True
        # A plain request starts as every plain request of its parser and options does (no
        # decoder yet: the parser's fresh one answers): worked out once, then copied.
        parser = rec.parser
        key = (id(parser), rec.skip_special_tokens, rec.include_reasoning)
        fresh = self._fresh.get(key)
        if fresh is None or fresh[0] is not parser or fresh[1] is not table:
            self.refresh(rec)
            if len(self._fresh) >= _SHARED:
                self._fresh.clear()
            py = self._py
            self._fresh[key] = fresh = (
                parser,
                table,
                py[0][slot],
                py[1][slot],
                py[2][slot],
                self._plain_r[slot],
                self._plain_c[slot],
            )
            return True
        py = self._py
        _, _, py[0][slot], py[1][slot], py[2][slot], self._plain_r[slot], self._plain_c[slot] = (
            fresh
        )
        return True

    def _cut(self, rec: StreamRecord) -> tuple[bytes, bytes, bytes, bytes, bytes | None] | None:
        """The request's templates (``sse_templates.templates``) and its role event: the ones of
        its model and second with its escaped id put in (three chunk encodings saved per
        request), else cut from its own chunks (no role event: its chunk stays queued).
        The key must hold every field ``StreamRecord.chunk`` takes from the request but
        the id (tests/batch/test_sse_path.py checks the ids)."""
        key = (rec.model, rec.created)
        shared = self._shared
        if key in shared:
            cut = shared[key]
        else:
            cut = shared_templates(rec, self.alias)
            if len(shared) >= _SHARED:
                shared.clear()
            shared[key] = cut
        if cut is not None:
            esc = msgspec.json.encode(rec.completion_id)[1:-1]
            # An ASCII id holds neither placeholder (both are private-use characters): a
            # tenth of the cost of looking for them.
            if esc.isascii() or (SENT not in esc and ID_B not in esc):
                c_head, c_tail, r_head, r_tail, mid, suf, role_head, role_tail = cut
                role = role_head + esc + role_tail
                return c_head + esc + c_tail, r_head + esc + r_tail, mid, suf, role
        own = templates(rec.chunk, self.alias)
        return None if own is None else (*own, None)

    def release(self, rec: StreamRecord) -> None:
        """The request leaves the batch: its slot takes nothing from now on."""
        slot = rec.sse_slot
        if slot < 0:
            return
        rec.sse_slot = -1
        self._py[0][slot] = 0  # the memory of ``bits``, a tenth of numpy's item cost
        self.recs[slot] = None
        self.esc[slot] = []
        self.ends[slot] = []
        self.texts[slot] = None
        self.count -= 1

    def refresh(self, rec: StreamRecord) -> None:
        """Recompute whether the request's channels are plain, and whether its rows may be
        decoded here (:meth:`_decode_rows`), after its exact path ran (or its options
        changed): only the decoder and the record know. Writes go through ``_py`` (the
        same memory as ``bits``, ``tab_r`` and ``tab_c``)."""
        slot = rec.sse_slot
        if slot < 0:
            return
        table = self.texts[slot]
        if (
            table is None
            or rec.closed
            or rec.hold_reasoning
            or rec.stop is not None
            or rec.tools is not None
            or rec.cites
            or rec.logprobs is not None
        ):
            self._py[0][slot] = 0
            return
        # What the exact path would do with a row of reasoning or content tokens is
        # decoder.feed and one chunk of its text, unless a call extractor is in a region.
        calls = rec.calls
        decode = DECODE_C | (DECODE_R if rec.include_reasoning else 0)
        if calls is not None and calls.passthrough_ids() is None:
            decode = 0
        self._replain(rec, slot, table, decode)

    def _replain(
        self, rec: StreamRecord, slot: int, table: TokenText, bits: int, channels: int = 3
    ) -> None:
        """Set the slot's plain bits of ``channels`` (1: reasoning, 2: content) from the
        decoder's state, beside ``bits`` (the decode bits, and the plain bit of a channel
        not asked about, whose decoder and formatter did not change). A channel's table
        is looked up again only when its ``(skip, trail)`` differs from the slot's last
        (once per request: both are fixed for a decoder).

        A call extractor reads every decided token, of either channel, in order: while
        it holds any (a region is open, or a marker may be starting) it holds each later
        token behind them, reasoning too (a ``<think>`` inside a call), so a row written
        here would overtake them: nothing is plain or decoded here. Idle, it hands
        reasoning and markers back as they are, and answer tokens but its openers outside
        a region (:meth:`ToolCallExtractor.passthrough_ids`)."""
        calls = rec.calls
        if calls is not None and calls.busy:
            bits = channels = 0
        if channels & 1 and rec.include_reasoning:
            plain = rec.plain_channel(REASONING)
            if plain is not None:
                bits |= 1
                if plain != self._plain_r[slot]:
                    self._plain_r[slot] = plain
                    self._py[1][slot] = self._plain.number(table, *plain)
                    self._trail_r[slot] = _TBD
        if channels & 2:
            plain = rec.plain_channel(CONTENT)
            # Outside a call region the extractor hands answer tokens back as they are,
            # but for the openers (fixed per extractor): those go through it.
            openers = None if calls is None else calls.passthrough_ids()
            if plain is not None and (calls is None or openers is not None):
                bits |= 2
                if plain != self._plain_c[slot]:
                    self._plain_c[slot] = plain
                    skip = _content_skip(plain[0], openers)
                    self._py[2][slot] = self._plain.number(table, skip, plain[1])
                    self._trail_c[slot] = _TBD
        self._py[0][slot] = bits

    # ------------------------------------------------------------------ the step

    def emit(self, res: BatchStepResult, room: int) -> list[int] | None:
        """Write the events of the step's plain rows into their requests' queues (each
        queue holding fewer than ``room`` items); return the rows left for the exact
        path (None: all of them)."""
        if not self.count:
            return None
        if len(res) <= SMALL:
            return self._emit_small(res, room)
        slots = res.slots
        n = slots.shape[0]
        bits = self.bits[slots]
        if not n or not bits.any():
            self.rows_by_form[FORM_EXACT] += n
            return None
        toks = res.token_ids
        labs = res.labels
        offs = res.offsets
        m = toks.shape[0]
        stack = self._plain.stacked()
        ids = toks
        if int(toks.max(initial=0)) >= stack.shape[1]:
            # A request off the path (no plain bits: none of its rows is plain) may have a
            # larger vocabulary than every request on it: the masks read its ids clipped.
            ids = np.minimum(toks, stack.shape[1] - 1)
        counts = np.diff(offs)
        uniform = m == n and bool((counts == 1).all())
        if uniform:
            tok_bits, tok_slots = bits, slots
        else:
            tok_slots = np.repeat(slots, counts)
            tok_bits = self.bits[tok_slots]
        ok_r = (labs == REASONING) & ((tok_bits & 1) != 0)
        ok_r &= stack[self.tab_r[tok_slots], ids]
        ok_c = (labs == CONTENT) & ((tok_bits & 2) != 0)
        ok_c &= stack[self.tab_c[tok_slots], ids]
        if uniform:
            row_r, row_c = ok_r, ok_c
        else:
            row_r = np.zeros(n, np.bool_)
            row_c = np.zeros(n, np.bool_)
            full = np.flatnonzero(counts > 0)
            if full.shape[0]:
                starts = offs[:-1][full]
                row_r[full] = np.logical_and.reduceat(ok_r, starts)
                row_c[full] = np.logical_and.reduceat(ok_c, starts)
        irregular = res.irregular_rows()
        if irregular:
            row_r[irregular] = False
            row_c[irregular] = False
        fast = row_r | row_c
        if not uniform:
            fast |= (counts == 0) & ~np.isin(np.arange(n), irregular)  # nothing to write
        slow = np.flatnonzero(~fast).tolist()
        slots_l = slots.tolist()
        toks_l = toks.tolist()
        offs_l = None if uniform else offs.tolist()
        forms = self.rows_by_form
        decoded = len(slow)
        if slow:
            slow = self._decode_rows(slow, slots_l, toks_l, offs_l, labs.tobytes(), irregular, room)
        decoded -= len(slow)
        forms[FORM_DECODE] += decoded
        self._write_plain(row_c, row_r, slots_l, toks_l, offs_l, slow, room)
        forms[FORM_EXACT] += len(slow)
        forms[FORM_BYTES] += n - len(slow) - decoded
        return slow

    def _write_plain(
        self,
        row_c: BoolArray,
        row_r: BoolArray,
        slots_l: list[int],
        toks_l: list[int],
        offs_l: list[int] | None,
        slow: list[int],
        room: int,
    ) -> None:
        """:meth:`emit`'s writes: the event of every plain content and reasoning row, from
        the templates and the token tables (``offs_l`` None: one token a row); a row whose
        queue is full is appended to ``slow`` (the exact path coalesces it)."""
        recs, ends = self.recs, self.ends
        for pre, rows in ((self.pre_c, row_c), (self.pre_r, row_r)):
            alias = self.alias and pre is self.pre_r
            for i in np.flatnonzero(rows).tolist():
                s = slots_l[i]
                rec = recs[s]
                assert rec is not None
                q = rec.queue
                if len(q) >= room:
                    slow.append(i)
                    continue
                if offs_l is None and not alias:  # one token: the prefix and its end
                    t = toks_l[i]
                    end = ends[s][t]
                    q.append(pre[s] + (self._end(s, t) if end is None else end))
                elif offs_l is None:
                    q.append(self._event(s, pre[s], alias, toks_l, i, i + 1))
                else:
                    q.append(self._event(s, pre[s], alias, toks_l, offs_l[i], offs_l[i + 1]))
                if rec.waiting:
                    rec.notify()

    def _end(self, s: int, t: int) -> bytes:
        """Token ``t``'s escaped text with the event suffix after it (:attr:`ends` of slot
        ``s``), made on its first write."""
        end = self.ends[s][t] = self.esc[s][t] + self.suf
        return end

    def _event(self, s: int, pre: bytes, alias: bool, toks: Sequence[int], a: int, z: int) -> bytes:
        """The event of slot ``s``'s tokens ``toks[a:z]`` after the prefix ``pre``, built
        from their escaped texts (``alias``: a reasoning event that fills
        ``reasoning_content`` too); a one-token event without the alias is ``pre`` and
        the token's :attr:`ends` entry instead."""
        es = self.esc[s]
        e = es[toks[a]] if z - a == 1 else b"".join(map(es.__getitem__, toks[a:z]))
        return self._frame(s, pre, alias, e)

    def _frame(self, s: int, pre: bytes, alias: bool, e: bytes) -> bytes:
        """The event of the escaped text ``e`` for slot ``s`` after the prefix ``pre``
        (``alias``: a reasoning event, ``e`` twice)."""
        return pre + e + self.mid[s] + e + self.suf if alias else pre + e + self.suf

    def emit_one(self, s: int, lab: int, tok: int, room: int) -> bool:
        """:meth:`emit` for one row of one token: slot ``s``'s token ``tok`` labelled
        ``lab`` (nothing held, nothing irregular; the step of one request alone,
        ``ReasoningBatch.step_one``, ends here): True when its event was written (or
        nothing was to be written), False when the exact path must take the row. A plain
        token is one frame and no lists (building them cost a tenth of the lane)."""
        bits, tab_r, tab_c = self._py
        b = bits[s]
        if lab == REASONING and b & 1:
            pre = self.pre_r[s] if self._tables_b[tab_r[s]][tok] else None
        elif lab == CONTENT and b & 2:
            pre = self.pre_c[s] if self._tables_b[tab_c[s]][tok] else None
        else:
            pre = None
        rec = self.recs[s]
        if pre is None or rec is None or len(q := rec.queue) >= room:
            return not self._decode_rows([0], [s], [tok], None, bytes((lab,)), [], room)
        if self.alias and lab == REASONING:
            q.append(self._event(s, pre, True, (tok,), 0, 1))
        else:
            end = self.ends[s][tok]
            q.append(pre + (self._end(s, tok) if end is None else end))
        if rec.waiting:
            rec.notify()
        return True

    def _emit_small(self, res: BatchStepResult, room: int) -> list[int] | None:
        """:meth:`emit` for a few requests, without array operations: the same decisions,
        row by row."""
        _, toks_l, offs_l, labs, slots_l = res.lists()
        irregular = res.irregular_rows()
        write = self.write_row
        emit_one = self.emit_one
        slow: list[int] = []
        left: list[int] = []
        for i, s in enumerate(slots_l):
            a, z = offs_l[i], offs_l[i + 1]
            if irregular and i in irregular:
                left.append(i)
            elif z - a == 1:
                if not emit_one(s, labs[a], toks_l[a], room):
                    left.append(i)
            elif a != z and not write(s, labs, toks_l, a, z, room):
                slow.append(i)
        if slow:
            left += self._decode_rows(slow, slots_l, toks_l, offs_l, labs, irregular, room)
            left.sort()
        return left

    def _decode_rows(
        self,
        rows: list[int],
        slots_l: list[int],
        toks_l: list[int],
        offs_l: list[int] | None,
        labs: bytes,
        irregular: list[int],
        room: int,
    ) -> list[int]:
        """Write the events of the rows the plain check left whose output the exact path
        would send as one text chunk; return the others.

        Such a row belongs to a request whose slot has the decode bits its labels need
        (:data:`_NEEDS`; the request has no stop strings, tool messages, citations or held
        reasoning, and a call extractor is outside a region, where it hands back any
        tokens but its openers unchanged), is regular (its decided tokens are the step's),
        and holds reasoning, content and marker tokens only. Its text is
        ``decoder.feed(ids, labels)``, the very call the exact path makes, so whatever
        the decoder and formatters hold (a paragraph break's trailing newlines held
        until the next text or trimmed by the next marker, a split character, a trim
        after a marker) is theirs to hold; only the chunk object, its later encoding and
        a full refresh are saved. Text of one channel is written from the templates;
        text of both (a marker between them) is queued as the chunk the exact path
        makes. A full queue leaves the row to the exact path, which coalesces (the
        buffer policy)."""
        slow: list[int] = []
        bits = self._py[0]
        encode = msgspec.json.encode
        needs = _NEEDS
        for i in rows:
            s = slots_l[i]
            if irregular and i in irregular:
                slow.append(i)
                continue
            a, z = (i, i + 1) if offs_l is None else (offs_l[i], offs_l[i + 1])
            if z > a:
                lab = labs[a]
                if labs.count(lab, a, z) == z - a and self._write_trail(s, lab, toks_l[a:z], room):
                    continue  # (a row of one channel whose held-run path took every token)
            b = bits[s]
            if not b & DECODE:
                slow.append(i)
                continue
            if z - a == 1:
                need = needs[labs[a]]
            else:
                need = 0
                for lab in set(labs[a:z]):
                    need |= needs[lab]
            if not need or b & need != need:
                slow.append(i)
                continue
            rec = self.recs[s]
            table = self.texts[s]
            assert rec is not None and table is not None
            q = rec.queue
            ids = toks_l[a:z]
            calls = rec.calls
            if len(q) >= room or (
                calls is not None
                and ((openers := calls.passthrough_ids()) is None or not openers.isdisjoint(ids))
            ):
                slow.append(i)
                continue
            r, c = rec.feed_row(ids, labs[a:z])
            if r and c:  # a marker between the two channels' text: one chunk of both
                rec.emit_text(self.alias, room, r, c)
            elif r:
                q.append(self._frame(s, self.pre_r[s], self.alias, encode(r)[1:-1]))
                rec.notify()
            elif c:
                q.append(self._frame(s, self.pre_c[s], False, encode(c)[1:-1]))
                rec.notify()
            # Only the channels the row's labels touch changed: theirs are recomputed.
            channels = need >> 2  # DECODE_R: 1, DECODE_C: 2, both: 3
            self._replain(rec, s, table, b & ~channels, channels)
        return slow

    def _write_trail(self, s: int, lab: int, toks: list[int], room: int) -> bool:
        """Write the event of slot ``s``'s tokens ``toks`` (all labelled ``lab``) when its
        channel's trim is idle but for the trailing run held here (:func:`trails.take`; a
        token ending in a run gives the text before it, or nothing); False (nothing
        changed) when the decoder must take them. While a run is held the channel's plain
        bit is off, so its rows come here."""
        if lab == REASONING:
            col, trail = 0, self._trail_r[s]
        elif lab == CONTENT:
            col, trail = 1, self._trail_c[s]
        else:
            return False
        rec = self.recs[s]
        if trail is None or rec is None:  # (a slot off the path keeps its last trail)
            return False
        table = self.texts[s]
        assert table is not None
        tails = rec.tails
        b = self._py[0][s]
        bit = col + 1
        if (not b & bit and (tails is None or not tails[col])) or len(rec.queue) >= room:
            return False
        if trail is _TBD:
            trail = self._trail(rec, s, col, table)
            if trail is None:
                return False
        if tails is None:
            tails = ["", ""]
        strings = table.strings()
        if len(toks) == 1:
            text = take(trail, strings, tails, col, toks[0])
        else:
            text = take_all(trail, strings, tails, col, toks)
        if text is None:
            return False
        rec.tails = tails if tails[0] or tails[1] else None
        self._py[0][s] = b & ~bit if tails[col] else b | bit
        if text:
            pre = self.pre_r[s] if col == 0 else self.pre_c[s]
            e = msgspec.json.encode(text)[1:-1]
            rec.queue.append(self._frame(s, pre, self.alias and col == 0, e))
            rec.notify()
        return True

    def _trail(self, rec: StreamRecord, s: int, col: int, table: TokenText) -> Trail | None:
        """Slot ``s``'s trail splits of channel ``col`` for the mask it has now, worked
        out when a row first asks (admission does not pay for them)."""
        if col == 0:
            plain = self._plain_r[s]
            assert plain is not None  # (the channel has a mask)
            skip, trail = plain
            holds = rec.holds_trail(REASONING)
            number = self._py[1][s]
        else:
            plain = self._plain_c[s]
            assert plain is not None
            openers = None if rec.calls is None else rec.calls.passthrough_ids()
            skip = _content_skip(plain[0], openers)
            trail = plain[1]
            holds = rec.holds_trail(CONTENT)
            number = self._py[2][s]
        got = trail_of(holds, table, skip, trail, self._tables_b[number])
        if col == 0:
            self._trail_r[s] = got
        else:
            self._trail_c[s] = got
        return got

    def write_row(
        self, s: int, labs: bytes, toks: Sequence[int], a: int, z: int, room: int
    ) -> bool:
        """:meth:`emit_one` for tokens ``toks[a:z]`` (labels ``labs[a:z]``, two or more):
        one event when they are all plain text of one plain channel. (The step of one
        request with several tokens, ``batch_small.step_one``'s, ends here too; the
        regular row of a table-routed step.)"""
        bits, tab_r, tab_c = self._py
        b = bits[s]
        lab = labs[a]
        if lab == REASONING and b & 1:
            table = self._tables_b[tab_r[s]]
            pre = self.pre_r[s]
        elif lab == CONTENT and b & 2:
            table = self._tables_b[tab_c[s]]
            pre = self.pre_c[s]
        else:
            return False
        ids = toks[a:z]
        if labs.count(lab, a, z) != z - a:
            return False
        for t in ids:  # (a loop: a row is a few tokens, and all(map(...)) costs more)
            if not table[t]:
                return False
        rec = self.recs[s]
        assert rec is not None
        q = rec.queue
        if len(q) >= room:
            return False
        q.append(self._event(s, pre, self.alias and lab == REASONING, toks, a, z))
        if rec.waiting:
            rec.notify()
        return True

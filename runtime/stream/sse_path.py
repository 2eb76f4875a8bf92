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

Only requests added with ``sse=True`` (their stream is read as event bytes) ride it; their
per-slot state, and which of them may (a request offering tools too), is
``runtime/stream/sse_slots.py``. A request added with a ``writer`` (another protocol's
events: ``runtime/wire/events.py``) rides it too: its rows are found the same way, and each
row's escaped text is handed to its writer instead of framed in the templates. The bytes
are identical to encoding the chunk Structs (``runtime.sse.chunk_events``): the prefix and
suffix are cut from such an encoding at add time, and the escaped pieces come from msgspec
itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.lanes import FORM_BYTES, FORM_DECODE, FORM_EXACT
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.small import SMALL_REQUESTS
from reasonspan.runtime.batch.types import BoolArray
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from reasonspan.runtime.stream.sse_slots import (
    DECODE,
    DECODE_C,
    DECODE_R,
    UNSET_TRAIL,
    SSESlots,
    content_skip,
)
from reasonspan.runtime.text.token_text import TokenText
from reasonspan.runtime.text.trails import Trail, take, take_all, trail_of

if TYPE_CHECKING:
    from reasonspan.runtime.stream.request import StreamRecord

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


class SSEPath(SSESlots):
    """The batch-wide step of the requests that stream SSE bytes (their slots:
    :class:`SSESlots`)."""

    __slots__ = ()

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
        if self.written == self.count:  # every request on the path has a writer
            self._write_written(row_c, row_r, slots_l, toks_l, offs_l)
        else:
            if self.written and (mine := self.wanted[slots]).any():
                self._write_written(row_c & mine, row_r & mine, slots_l, toks_l, offs_l)
                row_c &= ~mine
                row_r &= ~mine
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

    def _write_written(
        self,
        row_c: BoolArray,
        row_r: BoolArray,
        slots_l: list[int],
        toks_l: list[int],
        offs_l: list[int] | None,
    ) -> None:
        """:meth:`_write_plain` for requests with a writer (:attr:`writers`), whose
        events are never merged: a full queue does not send a row elsewhere."""
        recs, esc, writers = self.recs, self.esc, self.writers
        for channel, rows in ((CONTENT, row_c), (REASONING, row_r)):
            for i in np.flatnonzero(rows).tolist():
                s = slots_l[i]
                es = esc[s]
                if offs_l is None:
                    e = es[toks_l[i]]
                else:
                    a, z = offs_l[i], offs_l[i + 1]
                    e = es[toks_l[a]] if z - a == 1 else b"".join(map(es.__getitem__, toks_l[a:z]))
                rec = recs[s]
                assert rec is not None
                try:  # (:meth:`_to_writer`, inline: it runs once per request-token)
                    got = writers[s].text(channel, e)  # type: ignore[union-attr]
                except Exception as exc:
                    self.fail(rec, RequestFailedError(rec.engine_id, rec.parser.name, exc))
                    continue
                if got:
                    rec.queue.append(got)
                    if rec.waiting:
                        rec.notify()

    def _put_text(self, rec: StreamRecord, s: int, channel: int, e: bytes) -> bool:
        """Queue slot ``s``'s event of escaped text ``e`` of ``channel`` (False: its
        writer raised)."""
        if self.writers[s] is not None:
            return self._to_writer(s, channel, e)
        if channel == REASONING:
            rec.queue.append(self._frame(s, self.pre_r[s], self.alias, e))
        else:
            rec.queue.append(self._frame(s, self.pre_c[s], False, e))
        rec.notify()
        return True

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
        if pre is not None and self.writers[s] is not None:
            self._to_writer(s, lab, self.esc[s][tok])
            return True
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
            if r and c and self.writers[s] is None:
                rec.emit_text(self.alias, room, r, c)  # a marker between them: one chunk
            else:
                if r:
                    self._put_text(rec, s, REASONING, encode(r)[1:-1])
                if c and not rec.closed:
                    self._put_text(rec, s, CONTENT, encode(c)[1:-1])
                if rec.closed:  # (its writer raised: it failed, its slot is free)
                    continue
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
        if trail is UNSET_TRAIL:
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
            self._put_text(rec, s, lab, msgspec.json.encode(text)[1:-1])
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
            skip = content_skip(plain[0], openers)
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
        if self.writers[s] is not None:
            es = self.esc[s]
            self._to_writer(s, lab, b"".join(map(es.__getitem__, ids)))
            return True
        if len(q) >= room:
            return False
        q.append(self._event(s, pre, self.alias and lab == REASONING, toks, a, z))
        if rec.waiting:
            rec.notify()
        return True

"""The output path's per-slot state: which requests ride it, with which event templates and
token tables, and whether each one's channels are plain now.

A request added with ``sse=True`` is admitted here (:meth:`SSESlots.admit`): its event
prefixes are cut from its model's shared templates (``sse_templates``), its token table is
its tokenizer's escaped texts (:class:`TokenText`), and its plain bits say which of its
channels the step may write from those tables alone. The bits are only known from the
request's decoder and record, so the runtime's exact path calls :meth:`SSESlots.refresh`
after it ran a request's rows. The step that reads this state is
``runtime/stream/sse_path.py``; the state lives apart so that admission, release and the
plain-bit bookkeeping read as one job, and the step as another.

A request that offers tools rides the path too while its call extractor only passes answer
tokens through (outside a region, openers matched on ids): the openers are left out of its
table, so a call region starts on the exact path, and while the extractor holds any token
(a region, and whatever comes after its opener, reasoning too) every row of the request
takes the exact path, in order behind them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.stream.sse_templates import (
    ID_B,
    SENT,
    SharedTemplates,
    shared_templates,
    templates,
)
from reasonspan.runtime.text.token_text import PlainTables, TokenText
from reasonspan.runtime.text.trails import Trail

if TYPE_CHECKING:
    from reasonspan.runtime.parser.contract import ReasoningParser
    from reasonspan.runtime.stream.request import StreamRecord
    from reasonspan.runtime.wire.events import EventWriter

_SHARED = 64
"""Shared templates kept (by model and ``created`` second; cleared when full)."""


def content_skip(skip: frozenset[int], openers: frozenset[int] | None) -> frozenset[int]:
    """The tokens a request's content mask (and its trail splits) leave out: the decoder's
    skipped ids, and its call extractor's openers (those go through the extractor)."""
    return skip if openers is None else skip | openers


UNSET_TRAIL: Trail = (b"", {})
"""A slot's trail splits not worked out yet (:meth:`SSEPath._trail`)."""

DECODE_R = 4
"""Slot bit: the request's reasoning rows may be decoded here (:meth:`SSEPath._decode_rows`)."""
DECODE_C = 8
"""Slot bit: its content rows may be decoded here."""
DECODE = DECODE_R | DECODE_C


Fail = Callable[["StreamRecord", BaseException], None]
"""The runtime's way to end one request with an error (``ReasoningRuntime._fail``)."""

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


class SSESlots:
    """Per-slot state of the requests that stream SSE bytes (the step is :class:`SSEPath`)."""

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
        "fail",
        "mid",
        "pre_c",
        "pre_r",
        "recs",
        "rows_by_form",
        "suf",
        "tab_c",
        "tab_r",
        "texts",
        "wanted",
        "writers",
        "written",
    )

    def __init__(self, alias: bool, fail: Fail) -> None:
        self.alias = alias
        self.fail = fail
        """Ends one request with an error (a writer of its events raised)."""
        self.count = 0
        """Requests on this path now (the step skips everything when there are none)."""
        self.written = 0
        """Those of them with a writer (:attr:`writers`)."""
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
        self.writers: list[EventWriter | None] = []
        """Per slot: the request's protocol writer (``runtime/wire/events.py``), which
        writes its plain rows' events instead of the templates; None: Chat Completions."""
        self.wanted = np.zeros(0, np.bool_)
        """Per slot: it has a writer (the batch-wide pass hands its rows to it apart)."""
        self._plain_r: list[tuple[frozenset[int], str] | None] = []
        """Per slot: the reasoning ``(skip, trail)`` its ``tab_r`` was made for."""
        self._plain_c: list[tuple[frozenset[int], str] | None] = []
        self._trail_r: list[Trail | None] = []
        """Per slot: the trail splits of its reasoning's mask (None: its trim holds no
        trailing run, or it has none; :data:`UNSET_TRAIL` until a row first asks): a row ending
        in a run, or a row after one, is written here while the trim is otherwise idle
        (:meth:`SSEPath._write_trail`)."""
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
        wanted = np.zeros(new, np.bool_)
        wanted[:cap] = self.wanted
        self.wanted = wanted
        more = new - cap
        self.recs.extend([None] * more)
        self.pre_c.extend([b""] * more)
        self.pre_r.extend([b""] * more)
        self.mid.extend([b""] * more)
        self.esc.extend([[]] * more)
        self.ends.extend([[]] * more)
        self.texts.extend([None] * more)
        self.writers.extend([None] * more)
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
        self._trail_r[slot] = self._trail_c[slot] = UNSET_TRAIL
        self.recs[slot] = rec
        rec.sse_slot = slot
        self.count += 1
        if rec.writer is not None:
            self.writers[slot] = rec.writer
            self.wanted[slot] = True
            self.written += 1
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
        if self.writers[slot] is not None:
            self.writers[slot] = None
            self.wanted[slot] = False
            self.written -= 1

    def _to_writer(self, s: int, channel: int, e: bytes) -> bool:
        """Hand slot ``s``'s escaped text ``e`` of ``channel`` to its request's writer and
        queue what it wrote; False when the writer raised (the request failed alone)."""
        rec = self.recs[s]
        writer = self.writers[s]
        assert rec is not None and writer is not None
        try:
            got = writer.text(channel, e)
        except Exception as exc:  # a writer's bug ends its own request, not the step
            self.fail(rec, RequestFailedError(rec.engine_id, rec.parser.name, exc))
            return False
        if got:
            rec.queue.append(got)
            if rec.waiting:
                rec.notify()
        return True

    def refresh(self, rec: StreamRecord) -> None:
        """Recompute whether the request's channels are plain, and whether its rows may be
        decoded here (:meth:`SSEPath._decode_rows`), after its exact path ran (or its options
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
                    self._trail_r[slot] = UNSET_TRAIL
        if channels & 2:
            plain = rec.plain_channel(CONTENT)
            # Outside a call region the extractor hands answer tokens back as they are,
            # but for the openers (fixed per extractor): those go through it.
            openers = None if calls is None else calls.passthrough_ids()
            if plain is not None and (calls is None or openers is not None):
                bits |= 2
                if plain != self._plain_c[slot]:
                    self._plain_c[slot] = plain
                    skip = content_skip(plain[0], openers)
                    self._py[2][slot] = self._plain.number(table, skip, plain[1])
                    self._trail_c[slot] = UNSET_TRAIL
        self._py[0][slot] = bits

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

This module is the step: the plain rows gathered batch-wide (numpy) or row by row (a
few requests), and the other rows handed to ``text_rows``, the per-row path (decoder and
held runs); ``text_slots`` holds the per-slot state and a request's start and end.

Text only: tool calls stay in the text as the family writes them (TextSplitter's
``tools``, harmony's messages and the runtime's ``delta.tool_calls`` read them), stop
strings and citations are the runtime's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.small import SMALL_REQUESTS
from reasonspan.runtime.batch.text_rows import TextRows
from reasonspan.runtime.batch.text_slots import ObjectArray, UnknownTextRequestError
from reasonspan.runtime.core.labels import CONTENT, REASONING

__all__ = ["BatchText", "UnknownTextRequestError"]

SMALL = SMALL_REQUESTS
"""Steps of at most this many requests take a scalar loop (numpy calls cost more)."""

_COLUMN = np.full(256, 2, np.intp)
_COLUMN[REASONING] = 0
_COLUMN[CONTENT] = 1
"""The column of ``BatchText._tabs`` a token of each label reads (2: never plain)."""
_CHANNEL_LABELS = np.array([REASONING, CONTENT], np.uint8)


class BatchText(TextRows):
    """Reasoning and content text of every request of one :class:`ReasoningBatch`: its
    state and requests are :class:`~reasonspan.runtime.batch.text_slots.TextSlots`', its
    rows that are not plain :class:`~reasonspan.runtime.batch.text_rows.TextRows`'."""

    __slots__ = ()

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

"""The grammar engine in the batch loop: a matcher per request with a ``response_format``,
fed exactly the tokens the gate lets through, and the per-step bitmask fill.

The gate is the batch's own (``grammar_mask``: the tokens generated while the request was
outside reasoning). After each step, every request with a matcher hands it its masked
tokens in order, forced ones included; a token the matcher rejects fails that request
alone (:class:`GrammarRejectedError` in ``res.errors``, that token and the rest of its step
labelled FAILED and uncounted), and the batch goes on. While a request reasons its matcher
sees nothing and it gets no mask.

A family whose turn opens with a header that is neither reasoning nor answer (harmony at
``<|start|>assistant``) names, through its parser's ``grammar_gate_token(prompt)``, the
token that ends it: the grammar waits for it (no mask, nothing fed), then the gate
decides as for every family.

A family whose model opens its reasoning block itself (the prompt leaves it outside
reasoning with thinking on: minimax_m3, glm45) gets its start marker allowed beside the
grammar at the first position; if the model takes it, that marker is not fed and the
reasoning after it is gated as usual; otherwise the grammar applies from the first token.

A TOOL marker that ends reasoning (``<tool_call>`` after ``</think>``-less reasoning in
qwen3-like families), or a harmony tool-call message (TOOL_CALL labels) that begins
outside the grammar, starts a tool call, not the response:
the response grammar is released for the rest of the request (no mask, its matcher sees
nothing, ``grammar_active`` False) and the tool parser owns that content.

Owns the per-slot matchers and those two jobs. It must not know how tokens are routed: it
reads the step's labels and mask, and writes back only a failed request's labels, counts
and the aside bit of its row (which sends its later tokens to the per-request path, which
labels them FAILED).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.grammar import (
    Grammar,
    GrammarError,
    bitmask_width,
    consume_each,
    fill_bitmasks,
)
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.tables import ASIDE_BIT, REASONING_BIT, TOTAL
from reasonspan.runtime.batch.types import FAILED, BoolArray, IntArray, LabelArray
from reasonspan.runtime.core.labels import DELIMITER, REASONING, TOOL, TOOL_CALL


class GrammarRejectedError(RequestFailedError):
    """The request's ``response_format`` grammar rejected a generated token. Only that
    request fails; the original :class:`~reasonspan.runtime.batch.grammar.GrammarError` is
    ``__cause__``."""

    def __init__(self, request_id: int, kind: str, token_id: int, detail: str) -> None:
        cause = GrammarError(f"token {token_id} rejected by the {kind} grammar: {detail}")
        super().__init__(request_id, f"response_format ({kind})", cause)
        self.token_id = token_id
        self.args = (
            f"request {request_id}: token {token_id} breaks its response_format ({kind}): {detail}",
        )


class Grammars:
    """The matchers of a batch's requests, by slot."""

    def __init__(self) -> None:
        self.by_slot: dict[int, Grammar] = {}
        self.has: BoolArray = np.zeros(0, np.bool_)
        """By slot: the request has a matcher (for the one-token-per-request fast path)."""

    def __len__(self) -> int:
        return len(self.by_slot)

    def get(self, slot: int) -> Grammar | None:
        return self.by_slot.get(slot)

    def waiting(self, slot: int) -> bool:
        """The request's grammar waits for the end of a header (see ``Grammar.wait_for``)."""
        g = self.by_slot.get(slot)
        return g is not None and g.wait_for >= 0

    def put(self, slot: int, grammar: Grammar | None) -> None:
        if slot >= self.has.shape[0]:
            has = np.zeros(max(2 * self.has.shape[0], slot + 1, 64), np.bool_)
            has[: self.has.shape[0]] = self.has
            self.has = has
        if grammar is None:
            self.by_slot.pop(slot, None)
        else:
            self.by_slot[slot] = grammar
        self.has[slot] = grammar is not None

    def feed(
        self,
        sl: Slots,
        res: BatchStepResult,
        slots: IntArray,
        rids: IntArray,
        toks: IntArray,
        offs: IntArray,
        labels: LabelArray,
        gmask: BoolArray | None,
        errors: dict[int, RequestFailedError],
    ) -> None:
        """Hand each matcher its request's masked tokens of this step, and set the result's
        ``grammar_stopped`` for the requests of the step."""
        by_slot = self.by_slot
        stopped = np.zeros(rids.shape[0], np.bool_)
        res.grammar_stopped = stopped
        if gmask is None:
            return
        n = rids.shape[0]
        if toks.shape[0] == n and self._feed_one_each(
            sl, res, slots, rids, toks, labels, gmask, errors, stopped
        ):
            return
        slot_l = slots.tolist()
        for i, slot in enumerate(slot_l):
            g = by_slot.get(slot)
            if g is None or sl.failed[slot]:
                continue
            a, b = int(offs[i]), int(offs[i + 1])
            if a != b and g.wait_for >= 0:  # the header the model writes first
                hit = np.flatnonzero(toks[a:b] == g.wait_for)
                if not hit.shape[0]:
                    gmask[a:b] = False
                    res.grammar_active[i] = False
                    continue
                gmask[a : a + int(hit[0]) + 1] = False
                g.wait_for = -1
            if a != b and g.opener >= 0:  # the model opened its reasoning block itself
                if int(toks[a]) == g.opener:
                    gmask[a] = False
                g.opener = -1
            if a != b:
                m = gmask[a:b]
                lab = labels[a:b]
                tool = np.flatnonzero(((lab == TOOL) | (lab == TOOL_CALL)) & ~m)
                if tool.shape[0]:  # a tool call, not the response: release the grammar
                    gmask[a + int(tool[0]) : b] = False
                    del by_slot[slot]
                    sl.struct[slot] = False
                    sl.n_struct -= 1
                    res.grammar_active[i] = False
                    continue
                on = np.flatnonzero(m)
                if on.shape[0]:
                    fed = toks[a + on]
                    bad = g.consume(fed.tolist())
                    if bad >= 0:
                        self._fail(
                            sl,
                            res,
                            i,
                            slot,
                            int(rids[i]),
                            g,
                            a + int(on[bad]),
                            b,
                            int(fed[bad]),
                            labels,
                            gmask,
                            errors,
                        )
                        continue
            stopped[i] = g.stopped

    def _feed_one_each(
        self,
        sl: Slots,
        res: BatchStepResult,
        slots: IntArray,
        rids: IntArray,
        toks: IntArray,
        labels: LabelArray,
        gmask: BoolArray,
        errors: dict[int, RequestFailedError],
        stopped: BoolArray,
    ) -> bool:
        """The common step, one token per request: the masked tokens go to their matchers
        in one parallel llguidance call. False (nothing done) when the step is not that
        shape, or a request meets a TOOL marker or waits for a header (the general loop)."""
        if int(np.diff(res.offsets).max(initial=1)) != 1 or int(res.offsets[-1]) != toks.shape[0]:
            return False
        rows = np.flatnonzero(self.has[slots] & ~sl.failed[slots])
        if not rows.shape[0]:
            return True
        lab = labels[rows]
        if bool((((lab == TOOL) | (lab == TOOL_CALL)) & ~gmask[rows]).any()):
            return False
        by_slot = self.by_slot
        grammars = [by_slot[s] for s in slots[rows].tolist()]
        if any(g.wait_for >= 0 or g.opener >= 0 for g in grammars):
            return False
        on = gmask[rows]
        fed = [
            (g, t) for g, t, m in zip(grammars, toks[rows].tolist(), on.tolist(), strict=True) if m
        ]
        ok = consume_each(fed) if fed else []
        j = 0
        for i, g, m in zip(rows.tolist(), grammars, on.tolist(), strict=True):
            if m:
                good = ok[j]
                j += 1
                if not good:
                    self._fail(
                        sl,
                        res,
                        i,
                        int(slots[i]),
                        int(rids[i]),
                        g,
                        i,
                        i + 1,
                        int(toks[i]),
                        labels,
                        gmask,
                        errors,
                    )
                    continue
            stopped[i] = g.stopped
        return True

    @staticmethod
    def _fail(
        sl: Slots,
        res: BatchStepResult,
        i: int,
        slot: int,
        rid: int,
        g: Grammar,
        at: int,
        end: int,
        token: int,
        labels: LabelArray,
        gmask: BoolArray,
        errors: dict[int, RequestFailedError],
    ) -> None:
        """Freeze the request: from the rejected token on, its step is FAILED, uncounted
        and outside the grammar; its later tokens go to the per-request path (FAILED)."""
        err = GrammarRejectedError(rid, g.kind, token, g.error or "")
        sl.failed[slot] = True
        sl.failures[slot] = err
        errors[rid] = err
        tail = labels[at:end]
        n = end - at
        sl.cnt[slot] -= n * TOTAL + int((tail == REASONING).sum())
        sl.dcnt[slot] -= int((tail == DELIMITER).sum())
        labels[at:end] = FAILED
        gmask[at:end] = False
        if sl.tab[slot]:
            sl.row[slot] |= ASIDE_BIT
        res.forget_decided(i)
        res.grammar_active[i] = False

    def fill(self, sl: Slots, slots: IntArray, out: np.ndarray[Any, Any]) -> BoolArray:
        """Next-token bitmasks of the requests ``slots`` (row i of ``out`` for slots[i]):
        a mask for each request whose grammar is active, all-allowed (-1) rows for the
        others. Returns which rows carry a mask."""
        n = slots.shape[0]
        masked = np.zeros(n, np.bool_)
        if out.dtype != np.int32 or out.ndim != 2 or not out.flags["C_CONTIGUOUS"]:
            raise GrammarError(
                f"the token bitmask must be a C-contiguous 2-D int32 array, got "
                f"{out.ndim}-D {out.dtype}"
            )
        if out.shape[0] < n:
            raise GrammarError(f"the token bitmask has {out.shape[0]} rows for {n} requests")
        rows: list[tuple[Grammar, int]] = []
        if self.by_slot:
            by_slot = self.by_slot
            active = sl.struct[slots] & ((sl.row[slots] & REASONING_BIT) == 0)
            active &= ~sl.failed[slots] & ~sl.done[slots]
            for i in np.flatnonzero(active).tolist():
                g = by_slot.get(int(slots[i]))
                if g is not None and g.wait_for < 0:
                    rows.append((g, i))
                    masked[i] = True
        free = np.flatnonzero(~masked)
        if free.shape[0] == n:
            out[:n] = -1
        elif free.shape[0]:
            out[free] = -1
        fill_bitmasks(rows, out)
        for g, i in rows:
            if g.opener >= 0:  # the start marker is allowed too (see Grammar.opener)
                words = out[i].view(np.uint32)
                words[g.opener >> 5] |= np.uint32(1 << (g.opener & 31))
        return masked

    def width(self, sl: Slots) -> int:
        """Words per row that fit every request's vocabulary (grammar or not)."""
        sizes = [g.vocab_size for g in self.by_slot.values()]
        if sl.slot_of:
            sizes.append(int(sl.vocab[sl.live_slots()].max()))
        return bitmask_width(max(sizes, default=0))

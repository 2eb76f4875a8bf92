"""The batch runtime: per-request reasoning state for a continuous-batching scheduler.

One :class:`ReasoningBatch` lives beside the scheduler. Each engine step hands it the new
tokens of the whole batch as flat arrays (CSR: ``offsets`` has one more entry than
``request_ids``; a request gets 0, 1 or k tokens) and gets back labels, reasoning flags,
grammar gating, reasoning-token counts and forced tokens for every request at once.

The parts, one module each; none but ``text`` imports this one, and they import each
other in one direction only (types, errors -> result, tables -> slots -> budget, fallback,
admit -> batch):

- ``slots``: every per-request fact is an entry of a numpy array, so a step over
  single-token-marker families is a handful of numpy gathers and scatters over the whole
  batch, with no Python loop over requests; ``ids`` says what a request or token id is,
  ``checks`` checks a step's input against the slots before anything changes;
- ``tables``: flat lookup and transition tables of every table-routed machine; a
  slot's state is its row in them;
- ``admit``: admission and removal (the batch's base class): a request's parser,
  options, lane and table group, decided once;
- ``lanes``: each request's lane (table, hold-back, parser), decided at admission;
- ``small``: the scalar step for a few table-lane requests (one request alone above all);
- ``route``: the table pass of a step, row by row on its own slot's lane;
- ``fallback``: requests that go through their own ``parser.stream()``: custom
  machines or parsers always, hold-back families (text markers) only from a token that
  needs holding, or while tokens are held;
- ``fill``: the step's result read back from the slots;
- ``budget``: thinking budgets and the forced tokens that end reasoning;
- ``grammar``, ``grammar_slots``: the grammar engine behind the gate
  (``response_format``): a matcher per request fed the tokens generated under its
  grammar, and the per-step bitmask fill;
- ``result``, ``types``, ``errors``: what a step hands back, the labels and records a
  caller keeps, the errors it can act on; ``text``: every request's text from a step.

This module owns the step and the public queries and finish (admission is ``admit``'s):
it takes a step to the scalar lane when it can, otherwise checks the input, hands the
table pass (``route``) and the per-request path their rows, and fills the result.
With k tokens per request, position j of every request is processed at once, for j up to
the largest k: exact, because each request's slot is touched once per position. Every
path gives exactly what the per-request ``stream()`` gives (tests/batch/test_batch.py).

What the result means, exactly:

- Labels: every token gets one (:class:`~reasonspan.Label`), or :data:`HELD` until a
  later step decides it, or :data:`FAILED` for a request whose parser raised. Forced
  tokens come back as new tokens and are labelled and counted like the model's.
- Thinking budget: once a reasoning request has spent its budget, ``forced_token_ids`` is
  the lead-in phrase and then the end marker (exactly when: ``budget``).
- Structured output: ``grammar_active`` is True while a structured request is outside
  reasoning, so from the first token when the prompt leaves the model outside reasoning
  (thinking off, a closed block in the prompt, a family that opens blocks itself),
  otherwise from the token after the one that ends reasoning. ``grammar_mask`` marks the
  tokens generated under the grammar: the content (CONTENT labels) after the end of
  reasoning. The end marker, or a TOOL marker that ends reasoning, is not among them.
  With ``response_format`` the batch also drives the grammar engine (``grammar``):
  :meth:`ReasoningBatch.fill_token_bitmask` before sampling, ``res.grammar_stopped`` and
  a rejected token failing its request alone after the step.
- Usage: see :class:`RequestUsage`. Errors: bad input raises before anything changes; a
  per-request parser that raises fails its request alone (``res.errors``, FAILED labels,
  ``finish()`` re-raises).

Not thread-safe: one batch belongs to one scheduler loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from reasonspan.runtime.batch.admit import BatchAdmission
from reasonspan.runtime.batch.budget import budget_remaining, fill_forcing
from reasonspan.runtime.batch.checks import check_step
from reasonspan.runtime.batch.errors import RequestFailedError, RequestFinishedError
from reasonspan.runtime.batch.fallback import step_fallback
from reasonspan.runtime.batch.fill import fill_result
from reasonspan.runtime.batch.grammar import Grammar
from reasonspan.runtime.batch.ids import int_array
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.route import route
from reasonspan.runtime.batch.small import step_one, step_small
from reasonspan.runtime.batch.tables import LOW
from reasonspan.runtime.batch.types import (
    NO_BUDGET,
    BatchFinish,
    BoolArray,
    IntArray,
    RequestUsage,
)
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, split_labels
from reasonspan.runtime.core.machine import Spill
from reasonspan.runtime.parser.contract import ReasoningParser

__all__ = ["NO_BUDGET", "ReasoningBatch"]


class ReasoningBatch(BatchAdmission):
    """Reasoning state of every request in a continuous batch, stepped as a whole.

    ::

        batch = ReasoningBatch()
        batch.add(rid, parser, prompt_ids, thinking_token_budget=512, structured_output=True)
        res = batch.step(request_ids, token_ids, offsets)
        res.labels, res.is_reasoning, res.grammar_active, res.reasoning_tokens
        res.forced_token_ids(rid), res.split(rid)
        reasoning_ids, content_ids = batch.finish(rid)
        batch.remove(rid)

    Errors in the input (unknown or repeated ids, bad offsets, token ids outside a
    request's vocabulary) raise before any request's state changes. A request whose
    per-request parser raises does not stop the step: it is reported in ``res.errors``
    and frozen, every other request goes on. :meth:`add` and :meth:`remove` are
    :class:`~reasonspan.runtime.batch.admit.BatchAdmission`'s, with the batch's state.
    """

    @property
    def capacity(self) -> int:
        """Slots allocated (grows by doubling; freed slots are reused first)."""
        return self._slots.cap

    def __len__(self) -> int:
        return len(self._slots.slot_of)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._slots.slot_of

    def slot_of(self, request_id: int) -> int:
        """The slot a request occupies (the index of its entries in the batch's arrays,
        and of :attr:`BatchStepResult.slots`), until it is removed."""
        return self._slots.slot(request_id, "slot_of()")

    def parser_of(self, request_id: int) -> ReasoningParser:
        """The parser the request goes by (the one :meth:`add` was given or resolved)."""
        sl = self._slots
        parser = sl.parsers[sl.slot(request_id, "parser_of()")]
        assert parser is not None  # an occupied slot holds its parser
        return parser

    def lane(self, request_id: int) -> int:
        """The lane the request was given at admission (``runtime/batch/lanes.py``:
        ``TABLE``, ``HOLD_BACK`` or ``PARSER``); which one each row took in a step is
        :meth:`BatchStepResult.lanes`."""
        sl = self._slots
        return int(sl.lane[sl.slot(request_id, "lane()")])

    def includes_reasoning(self, request_id: int) -> bool:
        """False for a request added with ``include_reasoning=False`` (its reasoning is
        counted, never returned: :meth:`BatchStepResult.split`)."""
        sl = self._slots
        return bool(sl.incl[sl.slot(request_id, "includes_reasoning()")])

    def request_ids(self) -> list[int]:
        """The requests in the batch (finished ones included until removed)."""
        return list(self._slots.slot_of)

    # ------------------------------------------------------------------ queries

    def is_vectorized(self, request_id: int) -> bool:
        """Whether every token of the request is routed by table lookups over the batch
        (single-token markers). False for hold-back families, whose tokens go by table
        only while nothing is held (see ``fallback``), and for custom machines."""
        return bool(self._slots.vec[self._slots.slot(request_id, "is_vectorized()")])

    def is_reasoning(self, request_id: int) -> bool:
        """Inside reasoning now (after add(): what the prompt left open)."""
        return self._slots.reasoning(self._slots.slot(request_id, "is_reasoning()"))

    def grammar_active(self, request_id: int) -> bool:
        """Sample the next token under the request's grammar (before the first step too)."""
        sl = self._slots
        slot = sl.slot(request_id, "grammar_active()")
        return bool(sl.struct[slot]) and not sl.reasoning(slot) and not self._grammars.waiting(slot)

    def grammar_stopped(self, request_id: int) -> bool:
        """The request's ``response_format`` grammar is complete: the engine ends the
        request here (finish "stop"); False without a grammar."""
        g = self.grammar_of(request_id)
        return g is not None and g.stopped

    def grammar_of(self, request_id: int) -> Grammar | None:
        """The request's ``response_format`` matcher (None without one): what its mask and
        its stop are read from, for an engine that feeds it tokens it did not step (a
        request admitted mid-answer)."""
        return self._grammars.get(self._slots.slot(request_id, "grammar_of()"))

    def allocate_token_bitmask(self, rows: int) -> np.ndarray[Any, Any]:
        """An int32 bitmask of ``rows`` rows, wide enough for every request's vocabulary
        (llguidance's layout: bit ``t % 32`` of word ``t // 32`` allows token ``t``)."""
        return np.full((int(rows), self._grammars.width(self._slots)), -1, np.int32)

    def fill_token_bitmask(
        self, request_ids: Sequence[int] | np.ndarray[Any, Any], out: np.ndarray[Any, Any]
    ) -> BoolArray:
        """Once per step, before sampling: write the next-token bitmask of each request into
        row i of ``out`` (``request_ids[i]``) and return which rows carry a mask.

        Only requests whose grammar is active (``response_format``, outside reasoning, not
        failed) get a mask, filled by llguidance's parallel executor in one call; every
        other row is all-allowed (-1), so applying every row is always right and an engine
        may also skip the unmasked ones. ``out`` is int32, C-contiguous, with at least
        ``len(request_ids)`` rows (:meth:`allocate_token_bitmask`); columns past a
        grammar's vocabulary (padded logits) are 0."""
        slots = self._slots.lookup(int_array(request_ids, "request_ids"))
        return self._grammars.fill(self._slots, slots, out)

    def forced_token_ids(self, request_id: int) -> list[int]:
        """What the engine must emit next (before the first step too: budget 0)."""
        sl = self._slots
        slot = sl.slot(request_id, "forced_token_ids()")
        pos = int(sl.fpos[slot])
        return sl.forced_sequence(slot)[pos:] if pos >= 0 else []

    def budget_remaining(self, request_id: int) -> int:
        """Reasoning tokens left before the end is forced (-1: no budget); see
        :attr:`BatchStepResult.budget_remaining`."""
        return budget_remaining(self._slots, self._slots.slot(request_id, "budget_remaining()"))

    def forced_sequence(self, slot: int) -> list[int]:
        """The whole forced sequence of a slot: lead-in ids, then the end marker ids."""
        return self._slots.forced_sequence(slot)

    def slot_generation(self, slot: int) -> int:
        """Bumped each time a slot is given to a new request (guards stale lookups)."""
        return self._slots.slot_generation(slot)

    def usage(self, request_id: int) -> RequestUsage:
        """Token counts so far; see :class:`RequestUsage` for what counts where."""
        return self._slots.usage(self._slots.slot(request_id, "usage()"))

    # ------------------------------------------------------------------ step

    def step_one(self, request_ids: Any, token_ids: Any, offsets: Any) -> BatchStepResult | None:
        """:meth:`step` for a step of one request with one token, or None with nothing
        changed when the general step must take it (any other step, input that is not
        plain ints, a request that is not on the table lane or is budgeted, structured or
        failed, an unknown or finished id, a token outside the vocabulary):
        the runtime's lane for one request decoding alone
        (:func:`~reasonspan.runtime.batch.small.step_one`). Whether the request may take it
        is its own slot's flag (``Slots.scalar``), not the rest of the batch's."""
        return step_one(self._slots, self._tables, request_ids, token_ids, offsets)

    def step(
        self,
        request_ids: Sequence[int] | np.ndarray[Any, Any],
        token_ids: Sequence[int] | np.ndarray[Any, Any],
        offsets: Sequence[int] | np.ndarray[Any, Any],
    ) -> BatchStepResult:
        """Label one engine step's new tokens for the whole batch.

        ``token_ids[offsets[i]:offsets[i + 1]]`` are the new tokens of ``request_ids[i]``
        (0 for a paused request, k under speculative decoding). Invalid input raises
        before any request's state changes.
        """
        sl = self._slots
        small = step_small(sl, self._tables, request_ids, token_ids, offsets)
        if small is not None:
            return small
        rids, toks, offs, slots, counts, uniform = check_step(sl, request_ids, token_ids, offsets)
        n = rids.shape[0]

        # ---- validated: from here on the batch changes
        # A parser may raise a BaseException (KeyboardInterrupt, CancelledError) that is not
        # its request's failure: the whole step is then undone, so keep what it changes.
        undo = self._undo_fields(slots) if (sl.n_fallback or sl.n_hybrid) else None
        res = BatchStepResult(sl)
        errors: dict[int, RequestFailedError] = {}
        labels, gmask, frows, drops = route(
            sl, self._tables, self._single, slots, toks, offs, counts, uniform
        )
        if sl.failures:  # failed requests are reported at every step until removed
            for row in np.flatnonzero(sl.failed[slots]).tolist():
                errors[int(rids[row])] = sl.failures[int(slots[row])]
        if frows is not None or drops:
            res.took_parser(frows, [rows for rows, _ in drops])
            try:
                step_fallback(sl, res, frows, drops, slots, rids, toks, offs, labels, gmask, errors)
            except BaseException:
                if undo is not None:
                    for name, before in undo.items():
                        getattr(sl, name)[slots] = before
                raise
        reasoning_tokens = fill_result(sl, res, rids, toks, offs, slots, labels, gmask, errors)
        if self._grammars:
            self._grammars.feed(sl, res, slots, rids, toks, offs, labels, gmask, errors)
        else:
            res.grammar_stopped = sl.const("false", n)
        if sl.n_budget:
            fill_forcing(sl, res, slots, reasoning_tokens)
        return res

    def _undo_fields(self, slots: IntArray) -> dict[str, np.ndarray[Any, Any]]:
        """The slot fields a step writes, for these slots (gathers are copies)."""
        sl = self._slots
        names = ("row", "cnt", "dcnt", "fpos", "hit") if sl.n_budget else ("row", "cnt", "dcnt")
        return {name: getattr(sl, name)[slots] for name in names}

    # ------------------------------------------------------------------ finish

    def finish(self, request_id: int) -> BatchFinish:
        """End of the request's output: decide its held-back tokens and report usage.

        ``usage.reasoning_ended`` is False when the output stopped inside reasoning (e.g.
        finish_reason "length"): the model never reached its answer. The slot stays
        until :meth:`remove` (usage can still be read); stepping it again is an error.
        """
        sl = self._slots
        slot = sl.slot(request_id, "finish()")
        py = sl.py
        rid = py.rid[slot]
        if py.done[slot]:
            raise RequestFinishedError(rid, "finish()")
        if py.failed[slot]:
            raise sl.failures[slot]
        ids: list[int] = []
        labels = b""
        spill: tuple[Spill, ...] = ()
        parser = sl.parsers[slot]
        assert parser is not None
        usage: RequestUsage | None = None
        if py.vec[slot]:
            usage = sl.usage(slot)
            swap = _swap_requested(parser) and usage.reasoning_tokens and not usage.content_tokens
            if swap:
                usage = None  # (counted again below, its reasoning as content)
        else:
            try:
                d = parser.finish(sl.reasoning(slot))
            except Exception as exc:
                err = RequestFailedError(rid, parser.name, exc)
                sl.failed[slot] = True
                sl.failures[slot] = err
                raise err from exc
            ids, labels, spill = d.token_ids, d.labels, d.spill
            swap = bool(getattr(d, "reasoning_as_content", False))
            sl.set_reasoning(slot, d.is_still_reasoning)
            sl.held[slot] = 0
            sl.cnt[slot] += labels.count(REASONING)
            sl.dcnt[slot] += labels.count(DELIMITER)
        if swap:
            # parse() presents a reasoning-only output as content: so does the tail, and
            # usage counts those tokens as content.
            labels = labels.translate(_AS_CONTENT)
            spill = tuple((i, b, CONTENT, a) for i, b, _, a in spill)
            sl.cnt[slot] &= ~LOW
        sl.mark_finished(slot)  # (usage unchanged: the done flag and the forced position)
        if usage is None:
            usage = sl.usage(slot)
        if not ids:  # a table-routed request holds nothing: no tail to split
            return BatchFinish([], [], ids, b"", usage, bool(swap), spill)
        reasoning, content = split_labels(ids, labels, bool(sl.incl[slot]))
        return BatchFinish(reasoning, content, ids, bytes(labels), usage, bool(swap), spill)


_AS_CONTENT = bytes.maketrans(bytes((REASONING,)), bytes((CONTENT,)))


def _swap_requested(p: ReasoningParser) -> bool:
    """The family returns a reasoning-only output as content under these switches
    (``ReasoningSpec.reasoning_as_content_if``); the per-request parser tracks it itself."""
    pairs: tuple[tuple[str, bool], ...] = getattr(p.machine.spec, "reasoning_as_content_if", ())
    kwargs = p.chat_template_kwargs
    return any(key in kwargs and kwargs[key] is value for key, value in pairs)

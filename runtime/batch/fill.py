"""A vectorized step's result, read from the slots after the step: the arrays every
request gets (state, counts, grammar gate, held tokens), through the result's writers.

Owns that reading only. It must not know how tokens were routed: the step hands it the
labels and grammar mask it made, and the slots hold the rest.
"""

from __future__ import annotations

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.tables import LOW, REASONING_BIT
from reasonspan.runtime.batch.types import BoolArray, IntArray, LabelArray


def fill_result(
    sl: Slots,
    res: BatchStepResult,
    rids: IntArray,
    toks: IntArray,
    offs: IntArray,
    slots: IntArray,
    labels: LabelArray,
    gmask: BoolArray | None,
    errors: dict[int, RequestFailedError],
) -> IntArray:
    """Everything of a step's result but its budget fields, read from the slots after
    the step (those are ``batch_budget.fill_forcing``'s when the batch has budgeted
    requests; nothing forced otherwise). Returns the reasoning token counts. Only what
    some request of the batch uses is gathered; the rest are shared constant arrays."""
    n = rids.shape[0]
    res.set_rows(rids, toks, offs, labels, slots, errors, sl.incl[slots] if sl.n_exclude else None)
    is_reasoning = (sl.row[slots] & REASONING_BIT) != 0
    res.is_reasoning = is_reasoning
    reasoning_tokens = sl.cnt[slots] & LOW
    res.reasoning_tokens = reasoning_tokens
    res.grammar_mask = gmask if gmask is not None else sl.const("false", toks.shape[0])
    res.grammar_active = sl.struct[slots] & ~is_reasoning if sl.n_struct else sl.const("false", n)
    held = sl.held[slots] if sl.n_fallback or sl.n_hybrid else sl.const("zero", n)
    res.held_tokens = held
    res.next_forced_token = sl.const("minus1", n)
    if not sl.n_budget:
        res.forcing = sl.const("false", n)
        res.budget_remaining = sl.const("minus1", n)
    return reasoning_tokens

"""Thinking budgets of the batch runtime: the forced sequence of a budgeted request, and
where each request is in it after a step of the vectorized path.

Reasoning tokens (REASONING labels, so counted from the start marker, or from the first
token when the prompt left a block open) are compared with the budget after every token.
Once the count reaches it while the request is reasoning, ``forced_token_ids`` is the
lead-in phrase's ids and then the end marker's, one token per position; each forced token
the engine emits advances it (any other token leaves it where it was). The end marker
closes reasoning and the request goes on in content. A request that leaves reasoning by
itself is never forced. So with a budget of B and a lead-in of L tokens, the request
spends exactly B + L reasoning tokens, provided the engine caps speculative proposals at
``budget_remaining``; tokens it proposed past the budget in one step are counted, never
hidden.

Owns the budget options, the forced-position rule over whole arrays (:func:`budget_step`)
and the forcing fields of a step's result. It must not know the tables or how a token was
routed: it reads the counts the step left in the slots and the state it is handed. The
per-request path applies the same rule token by token in its own loop (``fallback``).
"""

from __future__ import annotations

import numpy as np

from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.tables import LOW
from reasonspan.runtime.batch.types import NO_BUDGET, BoolArray, IntArray
from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.parser.contract import ReasoningParser


def budget_options(
    p: ReasoningParser, thinking_token_budget: int | None, budget_lead_in: str | None
) -> tuple[int, list[int], int]:
    """``(budget, forced sequence, lead-in length)`` of a request added with these options
    (:data:`NO_BUDGET`, ``[]``, 0 without a budget); the lead-in is encoded once, here."""
    if thinking_token_budget is None:
        if budget_lead_in is not None:
            raise InvalidOptionError(
                "budget_lead_in", budget_lead_in, "None without a thinking_token_budget"
            )
        return NO_BUDGET, [], 0
    if (
        isinstance(thinking_token_budget, bool)
        or not isinstance(thinking_token_budget, (int, np.integer))
        or not 0 <= int(thinking_token_budget) < NO_BUDGET
    ):
        raise InvalidOptionError(
            "thinking_token_budget", thinking_token_budget, "an int >= 0 and < 2**63 - 1, or None"
        )
    if budget_lead_in is not None and not isinstance(budget_lead_in, str):
        raise InvalidOptionError("budget_lead_in", budget_lead_in, "a str or None")
    lead = p.tokenizer.encode(budget_lead_in) if budget_lead_in else []
    end = p.end_marker_token_ids()
    if not end and p.thinking_enabled:
        raise InvalidOptionError(
            "thinking_token_budget",
            thinking_token_budget,
            f"None: parser {p.name!r} has no end marker to force",
        )
    return int(thinking_token_budget), [*lead, *end], len(lead)


def budget_step(sl: Slots, s: IntArray, t: IntArray, reasoning: BoolArray) -> None:
    """After one token for each of the slots ``s``: advance the forced position on forced
    tokens; start forcing when the budget is spent; a request that left reasoning is never
    forced.

    Only requests that have spent their budget can be forced (counts never go down),
    so the common step, where none has, costs one comparison."""
    spent = (sl.cnt[s] & LOW) >= sl.budget[s]
    if not spent.any():
        return
    w = np.flatnonzero(spent)
    s, t, reasoning = s[w], t[w], reasoning[w]
    fp = sl.fpos[s]
    forcing = fp >= 0
    if forcing.any():
        expect = sl.fpool[sl.fbase[s] + np.clip(fp, 0, np.maximum(sl.flen[s] - 1, 0))]
        fp = fp + (forcing & (t == expect))
    start = reasoning & (fp < 0)
    fp = np.where(reasoning, np.where(start, 0, fp), -1)
    over = fp >= sl.flen[s]
    if over.any():  # the whole sequence went out and reasoning goes on: force the end
        fp = np.where(over, sl.lead[s], fp)
    sl.fpos[s] = fp
    if start.any():
        sl.hit[s[start]] = True


def budget_remaining(sl: Slots, slot: int) -> int:
    """Reasoning tokens left before the end is forced (-1: no budget)."""
    budget = int(sl.budget[slot])
    if budget == NO_BUDGET:
        return -1
    return max(budget - (int(sl.cnt[slot]) & int(LOW)), 0)


def fill_forcing(
    sl: Slots, res: BatchStepResult, slots: IntArray, reasoning_tokens: IntArray
) -> None:
    """The result's budget fields, for a batch with budgeted requests (the others get
    shared constant arrays: nothing forced, no budget)."""
    fp = sl.fpos[slots]
    forcing = fp >= 0
    res.forcing = forcing
    budget = sl.budget[slots]
    remaining = budget - reasoning_tokens
    np.maximum(remaining, 0, out=remaining)
    remaining[budget == NO_BUDGET] = -1
    res.budget_remaining = remaining
    if forcing.any():
        res.set_forced(fp, sl.gen[slots])
        nxt = sl.fpool[sl.fbase[slots] + np.clip(fp, 0, np.maximum(sl.flen[slots] - 1, 0))]
        res.next_forced_token = np.where(forcing, nxt, -1)

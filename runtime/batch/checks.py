"""A vectorized step's input, checked against the slots before anything changes.

``ReasoningBatch.step`` promises that bad input raises before any request's state
changes: offsets that do not fit the ids and tokens, an unknown, repeated or finished
request (the slot lookup's checks), a token id that is no int64 or lies outside its own
request's vocabulary. Those checks are one job, run once per step ahead of the table pass,
and they read the slot store without writing it; kept here, the slot store (``slots``)
owns its arrays and the step (``step``) owns what happens once the input is known good.
(The scalar steps of ``small`` check their own input and hand anything they doubt to
this path, which raises.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.runtime.batch.errors import BatchTokenError, InvalidStepError
from reasonspan.runtime.batch.ids import BadToken, token_array
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.types import IntArray
from reasonspan.runtime.core.ids import int_array


def check_step(
    sl: Slots, request_ids: Any, token_ids: Any, offsets: Any
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray | None, bool]:
    """A step's input as owned arrays, checked before anything changes: ``(request
    ids, token ids, offsets, slots, tokens per row (None: not worked out), one token
    per row)``."""
    rids = int_array(request_ids, "request_ids", InvalidStepError)
    toks, bad = token_array(token_ids)
    offs = int_array(offsets, "offsets", InvalidStepError)
    n = rids.shape[0]
    m = toks.shape[0]
    if offs.shape[0] != n + 1:
        raise InvalidStepError(
            f"offsets must have len(request_ids) + 1 = {n + 1} entries, got {offs.shape[0]}"
        )
    uniform = m == n and offs.tobytes() == sl.arange(n + 1).tobytes()
    counts: IntArray | None = None
    if not uniform:
        if offs[0] != 0:
            raise InvalidStepError(f"offsets[0] must be 0, got {int(offs[0])}")
        if offs[-1] != m:
            raise InvalidStepError(f"offsets[-1] must be len(token_ids) = {m}, got {int(offs[-1])}")
        counts = np.diff(offs)
        if n and int(counts.min()) < 0:
            i = int(np.argmax(counts < 0))
            raise InvalidStepError(
                f"offsets must be non-decreasing: offsets[{i + 1}] = {int(offs[i + 1])} "
                f"< offsets[{i}] = {int(offs[i])}"
            )
    slots = sl.lookup(rids)
    if bad is not None:
        # The ids before the bad one are ids of int64: one outside its vocabulary comes
        # first, as ``stream`` reports the first bad id in order.
        check_tokens(sl, toks, slots, counts, offs, rids, bad[0])
        raise token_error(sl, bad, slots, offs, rids)
    if m:
        check_tokens(sl, toks, slots, counts, offs, rids, m)
    return rids, toks, offs, slots, counts, uniform


def token_error(
    sl: Slots, bad: BadToken, slots: IntArray, offs: IntArray, rids: IntArray
) -> BatchTokenError:
    """The error for a token id that :func:`~reasonspan.runtime.batch.ids.token_array`
    refused, with its request."""
    pos, value = bad
    row = int(np.searchsorted(offs, pos, side="right")) - 1
    slot = int(slots[row])
    parser = sl.parsers[slot]
    return BatchTokenError(
        value,
        pos,
        int(sl.vocab[slot]),
        int(rids[row]),
        parser.name if parser is not None else "?",
    )


def check_tokens(
    sl: Slots,
    toks: IntArray,
    slots: IntArray,
    counts: IntArray | None,
    offs: IntArray,
    rids: IntArray,
    end: int,
) -> None:
    """Every token id before ``end`` is inside the vocabulary of the request it was given
    for."""
    if end < toks.shape[0]:
        toks = toks[:end]
    # One reduction: as unsigned, a negative id is larger than any vocabulary.
    if not end or int(toks.view(np.uint64).max()) < sl.vocab_floor():
        return
    tok_slots = slots if counts is None else np.repeat(slots, counts)
    if end < tok_slots.shape[0]:
        tok_slots = tok_slots[:end]
    bad = (toks < 0) | (toks >= sl.vocab[tok_slots])
    if not bad.any():
        return
    pos = int(np.argmax(bad))
    raise token_error(sl, (pos, int(toks[pos])), slots, offs, rids)

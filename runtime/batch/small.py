"""The batch step for a few requests, in plain Python.

The vectorized step makes some forty numpy calls whatever the batch size, a microsecond
or two each: for one request alone that is about 50 µs per token, many times what the
request's own ``stream()`` costs. A step of at most :data:`SMALL_REQUESTS` requests over
table-routed families (no request of the batch routed by its parser, budgeted, under a
grammar or failed) goes through the same tables one token at a time with Python ints,
and hands back a result whose arrays are made only when read
(:meth:`BatchStepResult.of_lists`). One request with one token, the step of a server
decoding for one user, takes :func:`step_one`, whose result
is one tuple (:meth:`BatchStepResult.of_one`).

The step changes nothing unless it can take the whole step: input that is not plain ints,
an id it does not know (or twice), a finished request, offsets that do not fit, a token
outside its request's vocabulary, all go to the vectorized step, which checks the input
and raises exactly as before. Same tables, same transitions, same counts: a request gets
what the vectorized step gives it (tests/batch/test_batch.py runs both on the same batches).

Owns the scalar routing only: it reads the tables (``tables``) and the slots
(``slots``), and the batch decides when it may run (:func:`step_small`'s caller
checks the batch-wide conditions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.runtime.batch.result import BatchStepResult, StepLists
from reasonspan.runtime.batch.slots import Slots, SlotViews
from reasonspan.runtime.batch.tables import LOW, REASONING_BIT, Tables
from reasonspan.runtime.core.labels import DELIMITER

SMALL_REQUESTS = 32
"""Steps of at most this many requests take the scalar step. Measured on a 2-core
machine (BENCHMARKS.md, the scalar step): the step alone breaks even with the vectorized
one near 30 requests; with the output path behind it (which reads the step's lists, not
its arrays), ids to SSE bytes stays cheaper up to about 100."""
SMALL_TOKENS = 64
"""And at most this many tokens in all."""

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_LOW = int(LOW)
_INT_DTYPES = frozenset(np.dtype(c) for c in "bhilqBHILQ")
"""The native integer dtypes (an array of any other dtype goes to the general checks)."""
_REASONING = int(REASONING_BIT)
_INTS = frozenset((int,))
"""The element type of a list of token ids the lane takes (``bool`` is not ``int`` here)."""


def plain_ints(x: object) -> list[int] | None:
    """``x`` as a list of ints that fit in int64 (a 1-D signed integer array, or a list or
    tuple of ints), or None for anything else (the vectorized step then checks it)."""
    if isinstance(x, np.ndarray):
        if x.ndim != 1 or x.dtype.kind != "i":
            return None
        got: list[int] = x.tolist()
        return got
    if type(x) is list or type(x) is tuple:
        if not x:
            return []
        if not set(map(type, x)) <= {int}:
            return None
        if min(x) < _I64_MIN or max(x) > _I64_MAX:
            return None
        return list(x)
    return None


def step_one(
    sl: Slots, tables: Tables, request_ids: Any, token_ids: Any, offsets: Any
) -> BatchStepResult | None:
    """:func:`step_small` for a step of one request, one token or a few (at most
    :data:`SMALL_TOKENS`: a draft model's step), or None (nothing changed) for any other
    step or input, which the general steps then take: the same table transitions as its
    loop, with the checks one row needs, in one frame (one request decoding alone is the
    commonest small step, a single-user server, and each call it skips is a tenth of its
    cost; the general checks, three lists converted and checked and a loop over rows,
    were a third of a several-token step). An integer array is read through
    ``tolist()``: only a flat list of Python ints passes the checks (a 2-D array gives
    nested lists, a 0-d one a scalar; the general step then names what is wrong)."""
    # (One token is tested first: its checks are the lane's cost.)
    if type(token_ids) is np.ndarray:  # first: a step of many tokens leaves at once
        k = token_ids.size
        if (k != 1 and (not k or k > SMALL_TOKENS or token_ids.ndim != 1)) or (
            token_ids.dtype not in _INT_DTYPES
        ):
            return None
        toks = token_ids.tolist()  # an int array's tolist() holds ints (nested if 2-D)
        if type(toks) is not list:  # a 0-d array's scalar
            return None
    elif type(token_ids) is list or type(token_ids) is tuple:
        toks = token_ids
        k = len(toks)
        if k != 1 and (not k or k > SMALL_TOKENS or not set(map(type, toks)) <= _INTS):
            return None
    else:
        return None
    if type(offsets) is np.ndarray:
        if offsets.dtype not in _INT_DTYPES or offsets.tolist() != [0, k]:
            return None
    elif (
        type(offsets) is not list
        or offsets != [0, k]
        or type(offsets[0]) is not int  # (False and True equal 0 and 1)
        or type(offsets[1]) is not int
    ):
        return None
    if type(request_ids) is np.ndarray:
        if request_ids.dtype not in _INT_DTYPES:
            return None
        request_ids = request_ids.tolist()
    if (type(request_ids) is not list and type(request_ids) is not tuple) or len(request_ids) != 1:
        return None
    rid = request_ids[0]
    if type(rid) is not int:
        return None
    s = sl.slot_of.get(rid)
    if s is None or not SMALL_REQUESTS:  # (0: no scalar step at all, the numpy one alone)
        return None
    py = sl.py
    if not py.scalar[s] or (sl.n_done and py.done[s]) or (sl.failures and py.failed[s]):
        return None
    if k != 1:
        return _step_draft(sl, tables, py, rid, s, toks, k)
    tok = toks[0]
    if type(tok) is not int or not 0 <= tok < py.vocab[s]:
        return None
    # ---- validated: from here on the batch changes
    lut, lab_t, nxt_t, inc_t = tables.built_scalar or tables.scalar()
    rows = py.row
    cnts = py.cnt
    idx = rows[s] + lut[py.lutb[s] + tok]
    lab = lab_t[idx]
    row = rows[s] = nxt_t[idx]
    cnt = cnts[s] = cnts[s] + inc_t[idx]
    if lab == DELIMITER:
        py.dcnt[s] += 1
    include = sl.incl[[s]] if sl.n_exclude else None
    return BatchStepResult.of_one(
        sl, include, (rid, tok, s, lab, bool(row & _REASONING), cnt & _LOW)
    )


def _step_draft(
    sl: Slots,
    tables: Tables,
    py: SlotViews,
    rid: int,
    s: int,
    toks: list[int] | tuple[int, ...],
    k: int,
) -> BatchStepResult | None:
    """:func:`step_one`'s request with several tokens (a draft model's step, checked but
    for their vocabulary): one call a step, not a token (the one-token step, the common
    one, stays in :func:`step_one`'s frame; what it read is passed, not read again)."""
    if min(toks) < 0 or max(toks) >= py.vocab[s]:
        return None
    # ---- validated: from here on the batch changes
    if type(toks) is tuple:
        toks = list(toks)
    lut, lab_t, nxt_t, inc_t = tables.built_scalar or tables.scalar()
    rows = py.row
    cnts = py.cnt
    base = py.lutb[s]
    row = rows[s]
    cnt = cnts[s]
    labels = bytearray(k)
    for j, t in enumerate(toks):
        idx = row + lut[base + t]
        labels[j] = lab_t[idx]
        row = nxt_t[idx]
        cnt += inc_t[idx]
    rows[s] = row
    cnts[s] = cnt
    delimiters = labels.count(DELIMITER)
    if delimiters:
        py.dcnt[s] += delimiters
    lists: StepLists = tuple.__new__(StepLists, ([rid], toks, [0, k], bytes(labels), [s]))
    include = sl.incl[[s]] if sl.n_exclude else None
    state = ([bool(row & _REASONING)], [cnt & _LOW])
    return BatchStepResult.of_lists(sl, lists, state, include)


def step_small(
    sl: Slots, tables: Tables, request_ids: Any, token_ids: Any, offsets: Any
) -> BatchStepResult | None:
    """The step for a few table-routed requests, or None (nothing changed) when the
    vectorized step must take it."""
    got = step_one(sl, tables, request_ids, token_ids, offsets)
    if got is not None:
        return got
    # A large step is turned away before its ids are converted only to be turned away.
    if type(request_ids) is np.ndarray:
        if request_ids.size > SMALL_REQUESTS:
            return None
    elif (type(request_ids) is list or type(request_ids) is tuple) and len(
        request_ids
    ) > SMALL_REQUESTS:
        return None
    rids = plain_ints(request_ids)
    if rids is None or not 0 < len(rids) <= SMALL_REQUESTS:
        return None
    toks = plain_ints(token_ids)
    offs = plain_ints(offsets)
    n = len(rids)
    if toks is None or offs is None or len(toks) > SMALL_TOKENS or len(offs) != n + 1:
        return None
    if offs[0] != 0 or offs[n] != len(toks):
        return None
    slots = _scalar_slots(sl, rids, toks, offs)
    if slots is None:
        return None
    py = sl.py

    # ---- validated: from here on the batch changes
    lut, lab_t, nxt_t, inc_t = tables.scalar()
    row_a, cnt_a, lutb = py.row, py.cnt, py.lutb
    labels = bytearray(len(toks))
    is_reasoning: list[bool] = []
    reasoning_tokens: list[int] = []
    for i, s in enumerate(slots):
        a, z = offs[i], offs[i + 1]
        row = row_a[s]
        cnt = cnt_a[s]
        if a < z:
            base = lutb[s]
            delimiters = 0
            for j in range(a, z):
                idx = row + lut[base + toks[j]]
                lab = lab_t[idx]
                labels[j] = lab
                row = nxt_t[idx]
                cnt += inc_t[idx]
                if lab == DELIMITER:
                    delimiters += 1
            row_a[s] = row
            cnt_a[s] = cnt
            if delimiters:
                py.dcnt[s] += delimiters
        is_reasoning.append(bool(row & _REASONING))
        reasoning_tokens.append(cnt & _LOW)
    lists: StepLists = tuple.__new__(  # the NamedTuple without its Python-level __new__
        StepLists, (rids, toks, offs, bytes(labels), slots)
    )
    include = sl.incl[np.asarray(slots, np.int64)] if sl.n_exclude else None
    return BatchStepResult.of_lists(sl, lists, (is_reasoning, reasoning_tokens), include)


def _scalar_slots(sl: Slots, rids: list[int], toks: list[int], offs: list[int]) -> list[int] | None:
    """The slots of a step the scalar step may take whole (each request known once, on
    its own slot's scalar flag, unfinished, not failed, its offsets in order and its
    tokens inside its vocabulary), or None: the vectorized step checks it then."""
    slot_of = sl.slot_of
    slots: list[int] = []
    for rid in rids:
        s = slot_of.get(rid)
        if s is None:
            return None
        slots.append(s)
    n = len(slots)
    if n > 1 and len(set(slots)) != n:
        return None
    py = sl.py
    done, scalar, failed = py.done, py.scalar, py.failed
    for i in range(n):
        s = slots[i]
        if (
            offs[i + 1] < offs[i]
            or not scalar[s]
            or (sl.n_done and done[s])
            or (sl.failures and failed[s])
        ):
            return None
    if toks and (min(toks) < 0 or max(toks) >= sl.vocab_floor()):
        vocab = py.vocab  # some id is past the smallest vocabulary: check each request's
        for i, s in enumerate(slots):
            v = vocab[s]
            if not all(0 <= t < v for t in toks[offs[i] : offs[i + 1]]):
                return None
    return slots

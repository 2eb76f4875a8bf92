"""The per-request path of a batch step: the requests whose tokens go through their own
``parser.stream()`` rather than the tables.

Custom machines (harmony) or parsers, and hold-back requests whose parser must see every
token (``may_return_reasoning_as_content``), go through ``parser.stream()`` for every
token. Hold-back families (text markers) go by table for every token a table decides; from
a request's first HOLD token in a step, and in later steps while it still holds tokens
(the aside bit of its row), the table leaves its tokens alone and the rest of its tokens
in that step come here, so its parser's cursor holds exactly what the parser has held.
HOLD tokens are rare (0.2-7% of the tokens of the texts measured), so most steps of such a
request cost what a vectorized one costs. Every path gives exactly what the per-request
``stream()`` gives for the same tokens (tests/test_batch.py).

Held-back tokens are labelled :data:`HELD` in the step that brings them and are reported,
with their real label, by ``res.decided()`` / ``res.split()`` of the step that decides
them, or by ``ReasoningBatch.finish``. A parser that raises fails its request alone: its
tokens are :data:`FAILED`, uncounted and outside the grammar, the request is frozen and
its error is reported at every step until it is removed.

Owns that loop: labels, counts, held tokens, grammar mask and, token by token, the
budget rule of ``batch_budget`` for these rows. It must not know the tables: it writes
each row back in their encoding (reasoning and aside bits) and nothing else of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.tables import ASIDE_BIT, REASONING_BIT, TOTAL
from reasonspan.runtime.batch.types import (
    FAILED,
    HELD,
    NO_BUDGET,
    BoolArray,
    IntArray,
    LabelArray,
    Spill,
)
from reasonspan.runtime.core.labels import DELIMITER, REASONING
from reasonspan.runtime.parser.contract import ReasoningParser

_FEW_ROWS = 32
"""Up to this many per-request rows in a step, slot fields are read and written element by
element rather than by numpy gathers (measured crossover on a 2-core machine: ~30)."""


def step_fallback(
    sl: Slots,
    res: BatchStepResult,
    frows: IntArray | None,
    drops: list[tuple[IntArray, IntArray]],
    slots: IntArray,
    rids: IntArray,
    toks: IntArray,
    offs: IntArray,
    labels: LabelArray,
    gmask: BoolArray | None,
    errors: dict[int, RequestFailedError],
) -> None:
    """The requests of a step that go through their own parser: ``frows``, the rows of
    custom machines or parsers (None: none), from their first token, and ``drops``, the
    hold-back rows the table left aside, each from the index of its first token left
    aside to its end. A hold-back row's earlier tokens were decided by table in this
    step, with nothing held, so its parser's cursor is still empty and its state is the
    one the table left. The loop itself is plain Python around ``parser.stream()``; slot
    fields are read and written back in one gather / scatter each, or, for the few rows
    of a step where hold-back requests meet a HOLD token, element by element (a numpy
    call on a tiny array costs more than the element).

    Only what this batch uses is read (budgets, grammars)."""
    if drops and gmask is not None:
        for _, pos in drops:  # the parser's part: it sets the grammar mask itself
            gmask[pos] = False
    # Per-request rows from their first token, then hold-back rows from the token that
    # needed holding (their earlier tokens were decided by table in this step).
    parts = [(frows, offs[frows])] if frows is not None else []
    parts += drops
    if len(parts) == 1:
        frows, fstart = parts[0]
    else:
        frows = np.concatenate([r for r, _ in parts])
        fstart = np.concatenate([p for _, p in parts])
    row_l = frows.tolist()
    start_l = fstart.tolist()
    n = len(row_l)
    fs: IntArray | None = None
    if n <= _FEW_ROWS:
        slot_l = [slots.item(r) for r in row_l]
        first_l = [offs.item(r) for r in row_l]
        end_l = [offs.item(r + 1) for r in row_l]

        def get(a: np.ndarray[Any, Any]) -> list[Any]:
            return [a.item(x) for x in slot_l]

    else:
        fs = slots[frows]
        slot_l = fs.tolist()
        first_l = offs[frows].tolist()
        end_l = offs[frows + 1].tolist()

        def get(a: np.ndarray[Any, Any]) -> list[Any]:
            got: list[Any] = a[fs].tolist()
            return got

    if fs is None:
        rows0 = get(sl.row)
        state_l = [bool(r & 8) for r in rows0]
    else:
        state_l = ((sl.row[fs] & REASONING_BIT) != 0).tolist()
    held_l: list[int] = get(sl.held)
    budgeted_any = bool(sl.n_budget)
    if budgeted_any:
        fpos_l = get(sl.fpos)
        hit_l = get(sl.hit)
        budget_l = get(sl.budget)
        reasoning_l = [c & (TOTAL - 1) for c in get(sl.cnt)]
    else:
        fpos_l, hit_l, budget_l, reasoning_l = [-1] * n, [False] * n, [NO_BUDGET] * n, [0] * n
    struct_l = get(sl.struct) if sl.n_struct else [False] * n
    failed = sl.failures  # the failed slots
    add_cnt = [0] * n
    add_delim = [0] * n
    out = bytearray()
    grammar: list[int] = []
    all_toks = toks.tolist() if 4 * n >= toks.shape[0] else None
    parsers = sl.parsers
    failed_heads: list[tuple[int, int]] = []
    # Parser states before this step, put back if a BaseException (KeyboardInterrupt,
    # CancelledError) cuts the step short: the step is then undone for every request.
    undo: list[tuple[Any, tuple[object, ...]]] = []
    failed_before = dict(failed)

    def fail(i: int, exc: Exception) -> None:
        """Freeze the request; like every token of its step, the ones decided by table
        before it are FAILED, uncounted and outside the grammar."""
        slot, row, a0, a = slot_l[i], row_l[i], first_l[i], start_l[i]
        parser = parsers[slot]
        rid = int(rids[row])
        err = RequestFailedError(rid, parser.name if parser is not None else "?", exc)
        sl.failed[slot] = True
        sl.failures[slot] = err
        errors[rid] = err
        if a0 != a:
            head = labels[a0:a].tobytes()
            add_cnt[i] = -((a - a0) * TOTAL + head.count(REASONING))
            add_delim[i] = -head.count(DELIMITER)
            failed_heads.append((a0, a))

    try:
        for i in range(n):
            slot, row, a, b = slot_l[i], row_l[i], start_l[i], end_l[i]
            if slot in failed:  # reported at every step until the request is removed
                errors[int(rids[row])] = sl.failures[slot]
                out += bytes([FAILED]) * (b - a)
                continue
            if a == b:
                continue
            parser = parsers[slot]
            assert parser is not None
            chunk = all_toks[a:b] if all_toks is not None else toks[a:b].tolist()
            struct = struct_l[i]
            budget = budget_l[i]
            budgeted = budget != NO_BUDGET
            if not struct and not budgeted:
                # The common lane: one stream() call, no per-token decisions to make.
                held0 = held_l[i]
                undo.append((parser, parser.snapshot()))
                try:
                    d = parser.stream(chunk, state_l[i])
                except Exception as exc:  # isolate: only this request fails
                    fail(i, exc)
                    out += bytes([FAILED]) * (b - a)
                    continue
                labs_b = d.labels
                state_l[i] = d.is_still_reasoning
                held_l[i] = d.held_token_count
                if len(labs_b) == 1:
                    lab = labs_b[0]
                    add_cnt[i] = (b - a) * TOTAL + (lab == REASONING)
                    add_delim[i] = int(lab == DELIMITER)
                else:
                    add_cnt[i] = (b - a) * TOTAL + labs_b.count(REASONING)
                    add_delim[i] = labs_b.count(DELIMITER)
                nd = max(0, len(labs_b) - held0)
                out += labs_b[held0 : held0 + nd]
                if b - a > nd:
                    out += bytes([HELD]) * (b - a - nd)
                a0 = first_l[i]
                if a0 == a:
                    res._decided[row] = (d.token_ids, labs_b)
                    if d.spill:
                        res._spill[row] = d.spill
                else:  # this step's table-decided tokens come first
                    head = all_toks[a0:a] if all_toks is not None else toks[a0:a].tolist()
                    res._decided[row] = (head + d.token_ids, labels[a0:a].tobytes() + labs_b)
                    if d.spill:
                        h = a - a0
                        res._spill[row] = tuple((h + j, *rest) for j, *rest in d.spill)
                continue
            # With a grammar or a budget, decisions are per token: stream token by token
            # (the same labels: stream() does not depend on how tokens are split).
            pieces = [[t] for t in chunk] if (struct or budgeted) and len(chunk) > 1 else [chunk]
            state = state_l[i]
            held0 = held = held_l[i]
            fp = fpos_l[i]
            hit = hit_l[i]
            seq = sl.forced_sequence(slot) if budgeted else []
            ids: list[int] = []
            labs = bytearray()
            spill: list[Spill] = []
            gm: list[bool] = []
            undo.append((parser, parser.snapshot()))
            try:
                for piece in pieces:
                    before = state
                    if fp >= 0 and piece[0] == seq[fp]:
                        fp += 1
                    d = parser.stream(piece, state)
                    if d.spill:
                        n0 = len(ids)
                        spill.extend((n0 + j, data, ch, after) for j, data, ch, after in d.spill)
                    ids += d.token_ids
                    labs += d.labels
                    state = d.is_still_reasoning
                    held = d.held_token_count
                    if struct:
                        gm.extend([not before] * len(piece))
                    if budgeted:
                        if not state:
                            fp = -1
                        elif fp < 0:
                            if reasoning_l[i] + labs.count(REASONING) >= budget:
                                fp = 0
                                hit = True
                        elif fp >= len(seq):
                            fp = int(sl.lead[slot])
            except Exception as exc:  # isolate: only this request fails
                fail(i, exc)
                out += bytes([FAILED]) * (b - a)
                continue
            state_l[i] = state
            held_l[i] = held
            fpos_l[i] = fp
            hit_l[i] = hit
            add_cnt[i] = len(chunk) * TOTAL + labs.count(REASONING)
            add_delim[i] = labs.count(DELIMITER)
            # This step's tokens: those decided now (after the earlier held ones), then HELD.
            nd = max(0, len(ids) - held0)
            out += labs[held0 : held0 + nd]
            out += bytes([HELD]) * (b - a - nd)
            if struct:
                grammar.extend(a + j for j, on in enumerate(gm) if on)
            a0 = first_l[i]
            if a0 == a:
                res._decided[row] = (ids, bytes(labs))
            else:  # this step's table-decided tokens come first
                head = all_toks[a0:a] if all_toks is not None else toks[a0:a].tolist()
                res._decided[row] = (head + ids, labels[a0:a].tobytes() + labs)
                spill = [(a - a0 + j, data, ch, after) for j, data, ch, after in spill]
            if spill:
                res._spill[row] = tuple(spill)
    except BaseException:
        # Not a parser error to isolate: undo this step's per-request work (no slot field
        # has been written yet but the failures) and let the caller undo the table path.
        for parser, snap in reversed(undo):
            parser.restore(snap)
        for slot in set(failed) - set(failed_before):
            sl.failed[slot] = False
        failed.clear()
        failed.update(failed_before)
        raise
    # Every fallback row wrote exactly its own tokens' labels, in row order.
    if fs is None:  # few rows: element by element
        decided = bytes(out)
        o = 0
        row_a, held_a, cnt_a, dcnt_a = sl.row, sl.held, sl.cnt, sl.dcnt
        fpos_a, hit_a = sl.fpos, sl.hit
        for i, x in enumerate(slot_l):
            a, b = start_l[i], end_l[i]
            if b - a == 1:
                labels[a] = decided[o]
            elif b > a:
                labels[a:b] = np.frombuffer(decided, np.uint8, b - a, o)
            o += b - a
            # Tokens held, a cut passed or a failed parser: the table leaves its tokens
            # aside.
            side = 16 if held_l[i] or x in failed or _cut(parsers[x]) else 0
            row_a[x] = (rows0[i] & ~24) | (8 if state_l[i] else 0) | side
            held_a[x] = held_l[i]
            cnt_a[x] = cnt_a.item(x) + add_cnt[i]
            if add_delim[i]:
                dcnt_a[x] = dcnt_a.item(x) + add_delim[i]
            if budgeted_any:
                fpos_a[x] = fpos_l[i]
                hit_a[x] = hit_l[i]
    else:
        if out:
            cnt = offs[frows + 1] - fstart
            first = fstart - (np.cumsum(cnt) - cnt)
            labels[np.repeat(first, cnt) + np.arange(len(out))] = np.frombuffer(
                bytes(out), np.uint8
            )
        held_now = np.array(held_l, np.int64)
        cuts = np.array([_cut(parsers[x]) for x in slot_l], np.bool_)
        sides = (held_now > 0) | sl.failed[fs] | cuts
        sl.row[fs] = (
            (sl.row[fs] & ~(REASONING_BIT | ASIDE_BIT))
            | np.array(state_l, np.int64) * REASONING_BIT
            | sides * ASIDE_BIT
        )
        sl.held[fs] = held_now
        if budgeted_any:
            sl.fpos[fs] = fpos_l
            sl.hit[fs] = hit_l
        sl.cnt[fs] += np.array(add_cnt, np.int64)
        sl.dcnt[fs] += np.array(add_delim, np.int64)
    if grammar and gmask is not None:
        gmask[grammar] = True
    for a0, a in failed_heads:
        labels[a0:a] = FAILED
        if gmask is not None:
            gmask[a0:a] = False


def _cut(parser: ReasoningParser | None) -> bool:
    """The request's output was cut (``ReasoningSpec.cut``): its row stays aside, so its
    parser labels every later token."""
    return parser is not None and parser.output_cut

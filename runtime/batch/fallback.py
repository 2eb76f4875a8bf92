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
``stream()`` gives for the same tokens (tests/batch/test_batch.py).

Held-back tokens are labelled :data:`HELD` in the step that brings them and are reported,
with their real label, by ``res.decided()`` / ``res.split()`` of the step that decides
them, or by ``ReasoningBatch.finish``. A parser that raises fails its request alone: its
tokens are :data:`FAILED`, uncounted and outside the grammar, the request is frozen and
its error is reported at every step until it is removed.

Owns that loop: labels, counts, held tokens, grammar mask and, token by token, the
budget rule of ``budget`` for these rows. It must not know the tables: it writes
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
)
from reasonspan.runtime.core.labels import DELIMITER, REASONING
from reasonspan.runtime.core.machine import Spill
from reasonspan.runtime.parser.contract import ReasoningParser

_FEW_ROWS = 32
"""Up to this many per-request rows in a step, slot fields are read and written element by
element rather than by numpy gathers (measured crossover on a 2-core machine: ~30)."""

_REASONING = int(REASONING_BIT)
_ASIDE = int(ASIDE_BIT)
_STATE_BITS = _REASONING | _ASIDE
"""The bits of a slot's row this path writes back (Python ints: the element-by-element
write-back stays in Python ints)."""


class _Rows:
    """The rows of a step that go through their own parser, in the order they are
    streamed, and their slot fields as Python lists (read once, written back once)."""

    __slots__ = (
        "add_cnt",
        "add_delim",
        "budget_l",
        "budgeted_any",
        "end_l",
        "first_l",
        "fpos_l",
        "frows",
        "fs",
        "fstart",
        "held_l",
        "hit_l",
        "reasoning_l",
        "row_l",
        "rows0",
        "slot_l",
        "start_l",
        "state_l",
        "struct_l",
    )

    def __init__(
        self, sl: Slots, frows: IntArray, fstart: IntArray, slots: IntArray, offs: IntArray
    ):
        self.frows, self.fstart = frows, fstart
        self.row_l: list[int] = frows.tolist()
        self.start_l: list[int] = fstart.tolist()
        n = len(self.row_l)
        self.fs: IntArray | None = None
        if n <= _FEW_ROWS:  # a numpy call on a tiny array costs more than the elements
            self.slot_l = [slots.item(r) for r in self.row_l]
            self.first_l = [offs.item(r) for r in self.row_l]
            self.end_l = [offs.item(r + 1) for r in self.row_l]
            self.rows0: list[int] | None = self.get(sl.row)
            self.state_l = [bool(r & _REASONING) for r in self.rows0]
        else:
            fs = self.fs = slots[frows]
            self.slot_l = fs.tolist()
            self.first_l = offs[frows].tolist()
            self.end_l = offs[frows + 1].tolist()
            self.rows0 = None
            self.state_l = ((sl.row[fs] & REASONING_BIT) != 0).tolist()
        self.held_l: list[int] = self.get(sl.held)
        self.budgeted_any = bool(sl.n_budget)
        if self.budgeted_any:
            self.fpos_l = self.get(sl.fpos)
            self.hit_l = self.get(sl.hit)
            self.budget_l = self.get(sl.budget)
            self.reasoning_l = [c & (TOTAL - 1) for c in self.get(sl.cnt)]
        else:
            self.fpos_l, self.hit_l = [-1] * n, [False] * n
            self.budget_l, self.reasoning_l = [NO_BUDGET] * n, [0] * n
        self.struct_l = self.get(sl.struct) if sl.n_struct else [False] * n
        self.add_cnt = [0] * n
        self.add_delim = [0] * n

    def get(self, a: np.ndarray[Any, Any]) -> list[Any]:
        """The field ``a`` of every row's slot, as a list."""
        if self.fs is None:
            return [a.item(x) for x in self.slot_l]
        got: list[Any] = a[self.fs].tolist()
        return got


class _Out:
    """What the loop makes besides the slot fields: the labels of this step's tokens in
    row order, the grammar mask's positions, failed rows' table-decided heads, and the
    parser states before the step (put back if a BaseException cuts it short)."""

    __slots__ = ("failed_before", "failed_heads", "grammar", "labels", "undo")

    def __init__(self, sl: Slots) -> None:
        self.labels = bytearray()
        self.grammar: list[int] = []
        self.failed_heads: list[tuple[int, int]] = []
        self.undo: list[tuple[Any, tuple[object, ...]]] = []
        self.failed_before = dict(sl.failures)


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
    one the table left. Two lanes: one ``stream()`` call for a row (:func:`_take_whole`),
    or token by token under a grammar or a budget (:class:`_Walk`); then the slot fields
    are written back (:func:`_write_back`). Only what this batch uses is read."""
    if drops and gmask is not None:
        for _, pos in drops:  # the parser's part: it sets the grammar mask itself
            gmask[pos] = False
    parts = [(frows, offs[frows])] if frows is not None else []
    parts += drops
    if len(parts) == 1:
        rows = _Rows(sl, parts[0][0], parts[0][1], slots, offs)
    else:
        got = [np.concatenate([r for r, _ in parts]), np.concatenate([p for _, p in parts])]
        rows = _Rows(sl, got[0], got[1], slots, offs)
    out = _Out(sl)
    all_toks = toks.tolist() if 4 * len(rows.row_l) >= toks.shape[0] else None
    parsers, failed = sl.parsers, sl.failures
    try:
        for i, slot in enumerate(rows.slot_l):
            row, a, b = rows.row_l[i], rows.start_l[i], rows.end_l[i]
            if slot in failed:  # reported at every step until the request is removed
                errors[int(rids[row])] = failed[slot]
                out.labels += bytes([FAILED]) * (b - a)
                continue
            if a == b:
                continue
            parser = parsers[slot]
            assert parser is not None
            chunk = all_toks[a:b] if all_toks is not None else toks[a:b].tolist()
            out.undo.append((parser, parser.snapshot()))
            if not rows.struct_l[i] and rows.budget_l[i] == NO_BUDGET:
                # The common lane: one stream() call, no per-token decisions to make.
                try:
                    d = parser.stream(chunk, rows.state_l[i])
                except Exception as exc:  # isolate: only this request fails
                    _fail(sl, rows, out, i, rids, labels, errors, exc)
                    continue
                _take_whole(rows, out, res, i, d, labels, all_toks, toks)
                continue
            walk = _Walk(sl, rows, i)
            try:
                for piece in walk.pieces(chunk):
                    walk.before(piece)
                    walk.after(parser.stream(piece, walk.state), piece)
            except Exception as exc:  # isolate: only this request fails
                _fail(sl, rows, out, i, rids, labels, errors, exc)
                continue
            walk.take(rows, out, res, i, labels, all_toks, toks)
    except BaseException:
        _undo(sl, out)
        raise
    _write_back(sl, rows, out, offs, labels, gmask)


def _take_whole(
    rows: _Rows,
    out: _Out,
    res: BatchStepResult,
    i: int,
    d: Any,
    labels: LabelArray,
    all_toks: list[int] | None,
    toks: IntArray,
) -> None:
    """Row ``i`` after its one ``stream()`` call ``d``: its state, counts, this step's
    labels (decided, then HELD) and its decided tokens in the result."""
    a, b = rows.start_l[i], rows.end_l[i]
    held0 = rows.held_l[i]
    labs_b = d.labels
    rows.state_l[i] = d.is_still_reasoning
    rows.held_l[i] = d.held_token_count
    if len(labs_b) == 1:
        lab = labs_b[0]
        rows.add_cnt[i] = (b - a) * TOTAL + (lab == REASONING)
        rows.add_delim[i] = int(lab == DELIMITER)
    else:
        rows.add_cnt[i] = (b - a) * TOTAL + labs_b.count(REASONING)
        rows.add_delim[i] = labs_b.count(DELIMITER)
    nd = max(0, len(labs_b) - held0)
    out.labels += labs_b[held0 : held0 + nd]
    if b - a > nd:
        out.labels += bytes([HELD]) * (b - a - nd)
    _decided(rows, res, i, d.token_ids, labs_b, d.spill, labels, all_toks, toks)


def _decided(
    rows: _Rows,
    res: BatchStepResult,
    i: int,
    ids: list[int],
    labs: bytes | bytearray,
    spill: tuple[Spill, ...] | list[Spill],
    labels: LabelArray,
    all_toks: list[int] | None,
    toks: IntArray,
) -> None:
    """Write row ``i``'s decided tokens and spill into the result: a hold-back row's
    tokens decided by table earlier in this step come first."""
    row, a0, a = rows.row_l[i], rows.first_l[i], rows.start_l[i]
    if a0 == a:
        res.set_decided(row, ids, bytes(labs), spill)
    else:
        head = all_toks[a0:a] if all_toks is not None else toks[a0:a].tolist()
        spill = [(a - a0 + j, data, ch, after) for j, data, ch, after in spill]
        res.set_decided(row, head + ids, labels[a0:a].tobytes() + labs, spill)


class _Walk:
    """One row streamed token by token: a grammar gate or a thinking budget decides per
    token (the labels are the same: ``stream()`` does not depend on how tokens are
    split), with the budget rule of ``budget`` applied after each token."""

    __slots__ = (
        "budget",
        "fp",
        "gm",
        "held",
        "held0",
        "hit",
        "ids",
        "labs",
        "lead",
        "reasoning0",
        "seq",
        "spill",
        "state",
        "struct",
        "was",
    )

    def __init__(self, sl: Slots, rows: _Rows, i: int) -> None:
        slot = rows.slot_l[i]
        self.struct: bool = rows.struct_l[i]
        self.budget: int = rows.budget_l[i]
        self.state: bool = rows.state_l[i]
        self.was = self.state
        self.held0 = self.held = rows.held_l[i]
        self.fp: int = rows.fpos_l[i]
        self.hit: bool = rows.hit_l[i]
        self.reasoning0: int = rows.reasoning_l[i]
        self.seq = sl.forced_sequence(slot) if self.budget != NO_BUDGET else []
        self.lead = int(sl.lead[slot]) if self.seq else 0
        self.ids: list[int] = []
        self.labs = bytearray()
        self.spill: list[Spill] = []
        self.gm: list[bool] = []

    def pieces(self, chunk: list[int]) -> list[list[int]]:
        return [[t] for t in chunk] if len(chunk) > 1 else [chunk]

    def before(self, piece: list[int]) -> None:
        """A forced token the engine emitted advances the forced position."""
        self.was = self.state
        if self.fp >= 0 and piece[0] == self.seq[self.fp]:
            self.fp += 1

    def after(self, d: Any, piece: list[int]) -> None:
        """Take one ``stream()`` result: tokens, labels, spill, state, grammar, budget."""
        if d.spill:
            n0 = len(self.ids)
            self.spill.extend((n0 + j, data, ch, after) for j, data, ch, after in d.spill)
        self.ids += d.token_ids
        self.labs += d.labels
        self.state = d.is_still_reasoning
        self.held = d.held_token_count
        if self.struct:
            self.gm.extend([not self.was] * len(piece))
        if self.budget == NO_BUDGET:
            return
        if not self.state:
            self.fp = -1
        elif self.fp < 0:
            if self.reasoning0 + self.labs.count(REASONING) >= self.budget:
                self.fp = 0
                self.hit = True
        elif self.fp >= len(self.seq):
            self.fp = self.lead

    def take(
        self,
        rows: _Rows,
        out: _Out,
        res: BatchStepResult,
        i: int,
        labels: LabelArray,
        all_toks: list[int] | None,
        toks: IntArray,
    ) -> None:
        """Row ``i`` after its walk: state, counts, labels, grammar positions, result."""
        a, b = rows.start_l[i], rows.end_l[i]
        rows.state_l[i] = self.state
        rows.held_l[i] = self.held
        rows.fpos_l[i] = self.fp
        rows.hit_l[i] = self.hit
        rows.add_cnt[i] = (b - a) * TOTAL + self.labs.count(REASONING)
        rows.add_delim[i] = self.labs.count(DELIMITER)
        # This step's tokens: those decided now (after the earlier held ones), then HELD.
        nd = max(0, len(self.ids) - self.held0)
        out.labels += self.labs[self.held0 : self.held0 + nd]
        out.labels += bytes([HELD]) * (b - a - nd)
        if self.struct:
            out.grammar.extend(a + j for j, on in enumerate(self.gm) if on)
        _decided(rows, res, i, self.ids, self.labs, self.spill, labels, all_toks, toks)


def _fail(
    sl: Slots,
    rows: _Rows,
    out: _Out,
    i: int,
    rids: IntArray,
    labels: LabelArray,
    errors: dict[int, RequestFailedError],
    exc: Exception,
) -> None:
    """Freeze row ``i``'s request; like every token of its step, the ones decided by
    table before it are FAILED, uncounted and outside the grammar."""
    slot, row, a0, a, b = (
        rows.slot_l[i],
        rows.row_l[i],
        rows.first_l[i],
        rows.start_l[i],
        rows.end_l[i],
    )
    parser = sl.parsers[slot]
    rid = int(rids[row])
    err = RequestFailedError(rid, parser.name if parser is not None else "?", exc)
    sl.failed[slot] = True
    sl.failures[slot] = err
    errors[rid] = err
    if a0 != a:
        head = labels[a0:a].tobytes()
        rows.add_cnt[i] = -((a - a0) * TOTAL + head.count(REASONING))
        rows.add_delim[i] = -head.count(DELIMITER)
        out.failed_heads.append((a0, a))
    out.labels += bytes([FAILED]) * (b - a)


def _undo(sl: Slots, out: _Out) -> None:
    """Not a parser error to isolate: undo this step's per-request work (no slot field
    has been written yet but the failures); the caller undoes the table path."""
    for parser, snap in reversed(out.undo):
        parser.restore(snap)
    failed = sl.failures
    for slot in set(failed) - set(out.failed_before):
        sl.failed[slot] = False
    failed.clear()
    failed.update(out.failed_before)


def _write_back(
    sl: Slots, rows: _Rows, out: _Out, offs: IntArray, labels: LabelArray, gmask: BoolArray | None
) -> None:
    """Every row wrote exactly its own tokens' labels, in row order: put them in the
    step's labels and the rows' fields back in the slots (a row stays aside while it
    holds tokens, failed, or its output was cut: its parser labels its later tokens)."""
    if rows.fs is None:
        _write_few(sl, rows, out, labels)
    else:
        _write_many(sl, rows, out, offs, labels)
    if out.grammar and gmask is not None:
        gmask[out.grammar] = True
    for a0, a in out.failed_heads:
        labels[a0:a] = FAILED
        if gmask is not None:
            gmask[a0:a] = False


def _write_few(sl: Slots, rows: _Rows, out: _Out, labels: LabelArray) -> None:
    """:func:`_write_back` element by element (few rows)."""
    decided = bytes(out.labels)
    o = 0
    row_a, held_a, cnt_a, dcnt_a = sl.row, sl.held, sl.cnt, sl.dcnt
    fpos_a, hit_a = sl.fpos, sl.hit
    failed, parsers = sl.failures, sl.parsers
    rows0 = rows.rows0
    assert rows0 is not None
    for i, x in enumerate(rows.slot_l):
        a, b = rows.start_l[i], rows.end_l[i]
        if b - a == 1:
            labels[a] = decided[o]
        elif b > a:
            labels[a:b] = np.frombuffer(decided, np.uint8, b - a, o)
        o += b - a
        held = rows.held_l[i]
        side = _ASIDE if held or x in failed or _cut(parsers[x]) else 0
        row_a[x] = (rows0[i] & ~_STATE_BITS) | (_REASONING if rows.state_l[i] else 0) | side
        held_a[x] = held
        cnt_a[x] = cnt_a.item(x) + rows.add_cnt[i]
        if rows.add_delim[i]:
            dcnt_a[x] = dcnt_a.item(x) + rows.add_delim[i]
        if rows.budgeted_any:
            fpos_a[x] = rows.fpos_l[i]
            hit_a[x] = rows.hit_l[i]


def _write_many(sl: Slots, rows: _Rows, out: _Out, offs: IntArray, labels: LabelArray) -> None:
    """:func:`_write_back` by numpy gathers and scatters (many rows)."""
    fs = rows.fs
    assert fs is not None
    if out.labels:
        cnt = offs[rows.frows + 1] - rows.fstart
        first = rows.fstart - (np.cumsum(cnt) - cnt)
        at = np.repeat(first, cnt) + np.arange(len(out.labels))
        labels[at] = np.frombuffer(bytes(out.labels), np.uint8)
    held_now = np.array(rows.held_l, np.int64)
    cuts = np.array([_cut(sl.parsers[x]) for x in rows.slot_l], np.bool_)
    sides = (held_now > 0) | sl.failed[fs] | cuts
    sl.row[fs] = (
        (sl.row[fs] & ~(REASONING_BIT | ASIDE_BIT))
        | np.array(rows.state_l, np.int64) * REASONING_BIT
        | sides * ASIDE_BIT
    )
    sl.held[fs] = held_now
    if rows.budgeted_any:
        sl.fpos[fs] = rows.fpos_l
        sl.hit[fs] = rows.hit_l
    sl.cnt[fs] += np.array(rows.add_cnt, np.int64)
    sl.dcnt[fs] += np.array(rows.add_delim, np.int64)


def _cut(parser: ReasoningParser | None) -> bool:
    """The request's output was cut (``ReasoningSpec.cut``): its row stays aside, so its
    parser labels every later token."""
    return parser is not None and parser.output_cut

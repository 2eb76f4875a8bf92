"""The table pass of a vectorized batch step: every row on the table or hold-back lane, a
token position at a time, through the flat tables (``runtime/batch/tables.py``).

A row's lane is its slot's (decided at admission, ``runtime/batch/lanes.py``): rows of the
parser lane are left to their parser, and a hold-back row whose token needs holding (or
that holds tokens) is left aside from that token on; every other row is labelled, moved
to its next row of the tables and counted here, whatever the other rows' lanes are. With
k tokens per row, position j of every row is processed at once, for j up to the largest
k: exact, because each row's slot is touched once per position.

Owns that pass and the budget rule applied with it (``batch_budget.budget_step``). It
must not know parsers: it hands the rows it left to the per-request path
(``runtime/batch/fallback.py``).
"""

from __future__ import annotations

import numpy as np

from reasonspan.runtime.batch.budget import budget_step
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.tables import REASONING_BIT, Tables
from reasonspan.runtime.batch.types import HELD, BoolArray, IntArray, LabelArray
from reasonspan.runtime.core.labels import DELIMITER


def route(
    sl: Slots,
    tables: Tables,
    single: int,
    slots: IntArray,
    toks: IntArray,
    offs: IntArray,
    counts: IntArray | None,
    uniform: bool,
) -> tuple[LabelArray, BoolArray | None, IntArray | None, list[tuple[IntArray, IntArray]]]:
    """The table pass: ``(labels, grammar mask (None: no structured request), the rows
    of the parser lane (None: none), the hold-back rows left aside)``. Each row goes
    by its own slot's lane: the parser lane's rows are left to their parser."""
    m = toks.shape[0]
    gmask: BoolArray | None = None
    vrows: IntArray | None = None
    frows: IntArray | None = None
    if sl.n_fallback:  # custom machines or parsers: only their own parser
        table = sl.tab[slots]
        if not table.all():
            vrows = np.flatnonzero(table)
            frows = np.flatnonzero(~table)
    # Hold-back rows left aside by the table (a HOLD token, or tokens held): (rows,
    # index of their first token left aside). Their parser takes it from there.
    drops: list[tuple[IntArray, IntArray]] = []
    if uniform and vrows is None and m:
        labels, before, aside = advance(sl, tables, single, slots, toks)
        if sl.n_struct:
            gmask = sl.struct[slots] & ((before & REASONING_BIT) == 0)
        if aside is not None:
            drops.append((aside, aside))
    elif uniform:  # one token per request: a single table pass over some of them
        labels = np.empty(m, np.uint8)
        if sl.n_struct:
            gmask = np.zeros(m, np.bool_)
        if vrows is not None and vrows.shape[0]:
            vs = slots[vrows]
            lab, before, aside = advance(sl, tables, single, vs, toks[vrows])
            labels[vrows] = lab
            if gmask is not None:
                gmask[vrows] = sl.struct[vs] & ((before & REASONING_BIT) == 0)
            if aside is not None:
                drops.append((vrows[aside], vrows[aside]))
    else:
        labels = np.empty(m, np.uint8)
        if sl.n_struct:
            gmask = np.zeros(m, np.bool_)
        _route_k(sl, tables, single, slots, toks, offs, counts, vrows, labels, gmask, drops)
    return labels, gmask, frows, drops


def _route_k(
    sl: Slots,
    tables: Tables,
    single: int,
    slots: IntArray,
    toks: IntArray,
    offs: IntArray,
    counts: IntArray | None,
    vrows: IntArray | None,
    labels: LabelArray,
    gmask: BoolArray | None,
    drops: list[tuple[IntArray, IntArray]],
) -> None:
    """The table pass of a step of k tokens per row: position j of every row at once,
    for j up to the largest k (exact: each slot is touched once per position); a row
    left aside at position j leaves the table pass there."""
    if counts is None:
        counts = np.diff(offs)
    starts = offs[:-1]
    if vrows is None:
        vs, vstart, vcnt = slots, starts, counts
    else:
        vs, vstart, vcnt = slots[vrows], starts[vrows], counts[vrows]
    kmin = int(vcnt.min()) if vcnt.shape[0] else 0
    kmax = int(vcnt.max()) if vcnt.shape[0] else 0
    for j in range(kmax):
        w: IntArray | None = None
        if j < kmin:
            sj, pj = vs, vstart + j
        else:
            w = np.flatnonzero(vcnt > j)
            if not w.shape[0]:  # the rest were left aside
                break
            sj, pj = vs[w], vstart[w] + j
        lab, before, aside = advance(sl, tables, single, sj, toks[pj])
        labels[pj] = lab
        if gmask is not None:
            gmask[pj] = sl.struct[sj] & ((before & REASONING_BIT) == 0)
        if aside is not None:
            # These rows leave the table path at position j for this step.
            at = aside if w is None else w[aside]
            if not drops:
                vcnt = vcnt.copy()
            vcnt[at] = j
            kmin = min(kmin, j)
            drops.append((at if vrows is None else vrows[at], pj[aside]))


def advance(
    sl: Slots, tables: Tables, single: int, s: IntArray, t: IntArray
) -> tuple[LabelArray, IntArray, IntArray | None]:
    """One token for each of the (distinct, non-empty) slots ``s``: labels, the rows
    before (their reasoning bit is the state the token was generated in), and which
    entries were left aside (None: none).

    A token that a hold-back request cannot route by table (a HOLD token, or the
    request has tokens held) is left aside: label HELD, state and counts unchanged,
    and the caller hands that request to its own parser from that token on."""
    row = sl.row[s]
    g = single
    kind = tables.luts[g][t] if g >= 0 else tables.lut[sl.lutb[s] + t]
    idx = row + kind
    lab = tables.lab[idx]
    new = tables.nxt[idx]
    sl.row[s] = new
    sl.cnt[s] += tables.inc[idx]
    aside: IntArray | None = None
    top = int(lab.max())
    if top >= DELIMITER:  # markers and tokens left aside are rare: handled aside
        if top == HELD:
            aside = np.flatnonzero(lab == HELD)
        w = np.flatnonzero(lab == DELIMITER)
        if w.shape[0]:
            sl.dcnt[s[w]] += 1
    if sl.n_budget:
        reasoning = (new & REASONING_BIT) != 0
        if aside is None:
            budget_step(sl, s, t, reasoning)
        else:  # a token left aside is the parser's to count and to force on
            on = np.flatnonzero(lab != HELD)
            budget_step(sl, s[on], t[on], reasoning[on])
    return lab, row, aside

"""The slot store of the batch runtime: every per-request fact as one entry of a numpy
array, and the lookup that maps a step's request ids onto slots.

Requests live in slots: state, token counts, budget, forced position, ... are entries of
arrays indexed by slot, so a step works on the whole batch with numpy gathers and
scatters and no Python loop over requests. Slots are allocated by doubling and reused
first when freed; a slot's generation is bumped each time it is given to a new request.
The store also keeps what the live requests need (how many are structured, budgeted,
routed per request, ...), so a step skips whatever no request in it uses.

Owns the arrays, their growth, the request id -> slot map and its lookup (which refuses
an unknown, repeated or finished id before any state changes), and reading slots back: a
request's usage and forced sequence, a step result's per-request arrays. What an id is
(``ids``) and the rest of a step's input checks (``checks``: offsets, token ids against
each request's vocabulary) are beside it. It must not know how tokens are routed or what
a budget does: it keeps each request's row and counts in the encoding of ``tables`` and
its parser, and never looks a token up in the one nor streams it through the other.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from reasonspan.runtime.batch.errors import (
    InvalidStepError,
    RequestFailedError,
    RequestFinishedError,
    UnknownRequestError,
)
from reasonspan.runtime.batch.ids import as_request_id
from reasonspan.runtime.batch.lanes import HOLD_BACK, PARSER, TABLE
from reasonspan.runtime.batch.tables import GROUP_ROWS, REASONING_BIT, TOTAL
from reasonspan.runtime.batch.types import NO_BUDGET, BoolArray, IntArray, RequestUsage
from reasonspan.runtime.parser.contract import ReasoningParser

_REASONING = int(REASONING_BIT)
_TOTAL = int(TOTAL)


class SlotViews(NamedTuple):
    """Memoryviews of the slot arrays the scalar step reads and writes, and of those
    :meth:`Slots.occupy` writes for every request (the same memory: a Python int in and
    out at a fraction of the cost of indexing the array)."""

    row: memoryview
    cnt: memoryview
    dcnt: memoryview
    lutb: memoryview
    vocab: memoryview
    done: memoryview
    rid: memoryview
    gen: memoryview
    failed: memoryview
    vec: memoryview
    tab: memoryview
    group: memoryview
    held: memoryview
    fpos: memoryview
    hit: memoryview
    ipos: memoryview
    lane: memoryview
    scalar: memoryview


class Slots:
    """The per-request arrays of one batch, indexed by slot (see the module docs)."""

    ARRAYS: tuple[tuple[str, type[np.generic], int], ...] = (
        ("rid", np.int64, 0),
        ("gen", np.int64, 0),
        ("done", np.bool_, 0),
        ("failed", np.bool_, 0),
        ("vec", np.bool_, 0),
        ("tab", np.bool_, 0),
        ("group", np.int64, -1),
        ("lutb", np.int64, 0),
        ("row", np.int64, 0),
        ("cnt", np.int64, 0),
        ("dcnt", np.int64, 0),
        ("vocab", np.int64, 0),
        ("held", np.int64, 0),
        ("budget", np.int64, NO_BUDGET),
        ("fpos", np.int64, -1),
        ("flen", np.int64, 0),
        ("fbase", np.int64, 0),
        ("lead", np.int64, 0),
        ("struct", np.bool_, 0),
        ("incl", np.bool_, 1),
        ("hit", np.bool_, 0),
        ("mark", np.int64, 0),
        ("ipos", np.int64, -1),
        ("lane", np.uint8, PARSER),
        ("scalar", np.bool_, 0),
    )

    rid: IntArray
    gen: IntArray
    done: BoolArray
    failed: BoolArray
    vec: BoolArray
    """Every token of the request goes by table (single-token markers)."""
    tab: BoolArray
    """The request has a table group (vectorized or hold-back); the others (custom machines
    or parsers) go only through their own parser."""
    lane: np.ndarray[Any, np.dtype[np.uint8]]
    """The request's lane (``runtime/batch/lanes.py``), decided when it was admitted."""
    scalar: BoolArray
    """The scalar steps may take the request's rows: table lane, no budget, no grammar
    (``lanes.SCALAR_FORBIDDEN``). Per slot: another request never turns it off."""
    group: IntArray
    lutb: IntArray
    """Offset of the request's group in the flat lookup table."""
    row: IntArray
    """``32 * group + 16 * aside + 8 * reasoning``: the slot's row in the flat transition
    tables (per-request slots use only the reasoning bit)."""
    cnt: IntArray
    """Packed ``total << 32 | reasoning`` token counts."""
    dcnt: IntArray
    """Delimiter tokens (TOOL markers count as content: total - reasoning - delimiters)."""
    vocab: IntArray
    held: IntArray
    budget: IntArray
    fpos: IntArray
    """Position in the forced sequence of the next forced token (-1: nothing forced)."""
    flen: IntArray
    fbase: IntArray
    """Where the slot's forced sequence begins in :attr:`Slots.fpool`."""
    lead: IntArray
    """Length of the lead-in part of the forced sequence."""
    struct: BoolArray
    incl: BoolArray
    hit: BoolArray
    """The budget ran out at some point (``RequestUsage.budget_exhausted``)."""
    mark: IntArray
    """Scratch space of :meth:`lookup` (repeated ids)."""
    ipos: IntArray
    """The request's position in the sorted id index (-1: admitted since it was built, or
    a free slot), so :meth:`release` leaves its tombstone without a search."""

    def __init__(self, capacity: int) -> None:
        self.cap = 0
        self.slot_of: dict[int, int] = {}
        self.free: list[int] = []
        self.parsers: list[ReasoningParser | None] = []
        self._facts: list[tuple[int, int, bool, bool, bool, int, int]] = []
        """Per live slot, what :meth:`release` needs back: ``(request id, table group (-1:
        routed by its parser only), hold-back, budgeted, include reasoning, forced length,
        vocabulary)``
        (Python values: reading them back from the arrays costs more than the writes)."""
        self.failures: dict[int, RequestFailedError] = {}
        """The error of each failed slot, reported at every step until it is removed."""
        self._ids: IntArray = np.zeros(0, np.int64)
        self._id_slots: IntArray = np.zeros(0, np.int64)
        self._recent = 0
        """Requests admitted or removed since :attr:`_ids` was built (see :meth:`lookup`)."""
        self.version = 0
        """Bumped whenever a step's ids may map differently (add, remove, finish)."""
        self._cache_version = -1
        self._cache_ids = b""
        self._cache_slots: IntArray = np.zeros(0, np.int64)
        self.n_fallback = 0
        """Requests routed only through their own parser (custom machines or parsers)."""
        self.n_hybrid = 0
        """Requests of hold-back families, routed by table until a token needs holding."""
        self.n_struct = 0
        self.n_budget = 0
        self.n_exclude = 0
        self.n_done = 0
        self.vmin: int | None = None
        self.fpool: IntArray = np.zeros(1, np.int64)
        """Forced sequences of the slots (lead-in ids, then the end marker's), packed: a
        slot's is ``fpool[fbase[slot]:fbase[slot] + flen[slot]]``. Each request takes what
        its own sequence needs, whatever another request's lead-in is; freed space is
        reclaimed by compaction. One spare entry at the end keeps gathers in bounds."""
        self.fend = 0
        self.flive = 0
        self._consts: dict[str, np.ndarray[Any, Any]] = {}
        self.grow(max(1, int(capacity)))

    def grow(self, cap: int) -> None:
        old = self.cap
        for name, dtype, fill in self.ARRAYS:
            arr = np.full(cap, fill, dtype)
            if old:
                arr[:old] = getattr(self, name)
            setattr(self, name, arr)
        self.py = SlotViews(*(getattr(self, name).data for name in SlotViews._fields))
        self.parsers.extend([None] * (cap - old))
        self._facts.extend([(0, -1, False, False, True, 0, 0)] * (cap - old))
        self.free.extend(range(cap - 1, old - 1, -1))
        self.cap = cap

    def slot(self, request_id: object, where: str) -> int:
        rid = as_request_id(request_id, where)
        slot = self.slot_of.get(rid)
        if slot is None:
            raise UnknownRequestError(rid, where)
        return slot

    # ------------------------------------------------------------------ admit / release

    def occupy(
        self,
        rid: int,
        parser: ReasoningParser,
        group: int | None,
        lutb: int,
        hybrid: bool,
        reasoning: bool,
        budget: int,
        seq: list[int],
        lead_len: int,
        structured: bool,
        include: bool,
    ) -> int:
        """Give a validated request a slot (growing the store when none is free).

        A free slot already holds the defaults of the fields a request rarely sets
        (:meth:`release` puts them back): only the ones that differ are written, and
        what :meth:`release` needs back is kept as one tuple, not read from the arrays."""
        if not self.free:
            self.grow(self.cap * 2)
        slot = self.free.pop()
        vocab = parser.machine.vocab_size
        py = self.py  # the arrays' memory: a write costs half of numpy's item assignment
        py.rid[slot] = rid
        py.gen[slot] += 1
        py.failed[slot] = False
        py.vec[slot] = group is not None and not hybrid
        py.tab[slot] = group is not None
        lane = PARSER if group is None else HOLD_BACK if hybrid else TABLE
        py.lane[slot] = lane
        py.scalar[slot] = lane == TABLE and budget == NO_BUDGET and not structured
        gid = -1 if group is None else group
        py.group[slot] = gid
        py.lutb[slot] = lutb
        py.row[slot] = (0 if group is None else GROUP_ROWS * group) + (
            _REASONING if reasoning else 0
        )
        py.vocab[slot] = vocab
        py.cnt[slot] = 0
        py.dcnt[slot] = 0
        py.held[slot] = 0
        start = reasoning and budget <= 0
        py.fpos[slot] = 0 if start else -1
        py.hit[slot] = start
        budgeted = budget != NO_BUDGET
        if budgeted:
            self.budget[slot] = budget
            self.n_budget += 1
        if seq:
            self._store_forced(slot, seq)
            self.flen[slot] = len(seq)
            self.lead[slot] = lead_len  # 0 without a forced sequence (release puts it back)
        if structured:
            self.struct[slot] = True
            self.n_struct += 1
        if not include:
            self.incl[slot] = False
            self.n_exclude += 1
        if group is None:
            self.n_fallback += 1
        elif hybrid:
            self.n_hybrid += 1
        self.parsers[slot] = parser
        self._facts[slot] = (rid, gid, hybrid, budgeted, include, len(seq), vocab)
        self.slot_of[rid] = slot
        self._recent += 1  # found through slot_of until the sorted index is rebuilt
        if self.vmin is not None and vocab < self.vmin:
            self.vmin = vocab
        self.version += 1
        return slot

    def release(self, slot: int) -> int:
        """Free a slot at once (finished, cancelled or failed alike), putting back the
        defaults :meth:`occupy` relies on. Returns the table group it had (-1: none)."""
        rid, group, hybrid, budgeted, include, flen, vocab = self._facts[slot]
        del self.slot_of[rid]
        py = self.py
        pos = py.ipos[slot]
        if pos >= 0:
            self._id_slots[pos] = -1  # a tombstone: the sorted index is not copied
            py.ipos[slot] = -1  # a free slot is in no index (occupy relies on it)
        self._recent += 1
        if group < 0:
            self.n_fallback -= 1
        elif hybrid:
            self.n_hybrid -= 1
        py.tab[slot] = False
        py.lane[slot] = PARSER
        py.scalar[slot] = False
        if self.n_struct and self.struct[slot]:  # the grammar may have dropped it already
            self.n_struct -= 1
            self.struct[slot] = False
        if budgeted:
            self.n_budget -= 1
            self.budget[slot] = NO_BUDGET
        if not include:
            self.n_exclude -= 1
            self.incl[slot] = True
        if self.n_done and self.done[slot]:
            self.n_done -= 1
            self.done[slot] = False
        self.parsers[slot] = None
        if self.failures:
            self.failures.pop(slot, None)
        if flen:
            self.flive -= flen
            self.flen[slot] = 0
            self.fbase[slot] = 0
            self.lead[slot] = 0
            if self.fpool.shape[0] > 4 * self.flive + 1024:  # mostly freed space: shrink
                self._compact_forced(0)
        self.free.append(slot)
        if vocab == self.vmin:
            self.vmin = None
        self.version += 1
        return group

    def _store_forced(self, slot: int, seq: list[int]) -> None:
        need = len(seq)
        if self.fend + need >= self.fpool.shape[0]:
            self._compact_forced(need)
        self.fbase[slot] = self.fend
        self.fpool[self.fend : self.fend + need] = seq
        self.fend += need
        self.flive += need

    def _compact_forced(self, extra: int) -> None:
        """Pack the live slots' forced sequences into a pool sized for them plus ``extra``."""
        live = list(self.slot_of.values())
        pool = np.zeros(max(64, 2 * (self.flive + extra)) + 1, np.int64)
        end = 0
        for x in live:
            a, n = int(self.fbase[x]), int(self.flen[x])
            pool[end : end + n] = self.fpool[a : a + n]
            self.fbase[x] = end
            end += n
        self.fpool = pool
        self.fend = end

    def mark_finished(self, slot: int) -> None:
        """``finish()`` ended the request: nothing is forced and later steps refuse it."""
        py = self.py
        py.done[slot] = True
        py.fpos[slot] = -1
        self.n_done += 1
        self.version += 1

    # ------------------------------------------------------------------ reading a slot

    def reasoning(self, slot: int) -> bool:
        return bool(self.py.row[slot] & _REASONING)

    def set_reasoning(self, slot: int, reasoning: bool) -> None:
        self.row[slot] = (int(self.row[slot]) & ~_REASONING) | (_REASONING if reasoning else 0)

    def usage(self, slot: int) -> RequestUsage:
        py = self.py  # (Python ints out of the arrays' memory, no numpy scalars)
        total, reasoning = divmod(py.cnt[slot], _TOTAL)
        held = py.held[slot]
        delimiters = py.dcnt[slot]
        return RequestUsage(
            completion_tokens=total,
            reasoning_tokens=reasoning,
            content_tokens=total - reasoning - delimiters - held,
            delimiter_tokens=delimiters,
            held_tokens=held,
            reasoning_ended=not py.row[slot] & _REASONING,
            budget_exhausted=bool(py.hit[slot]),
        )

    def forced_sequence(self, slot: int) -> list[int]:
        """The whole forced sequence of a slot: lead-in ids, then the end marker ids."""
        a = int(self.fbase[slot])
        seq: list[int] = self.fpool[a : a + int(self.flen[slot])].tolist()
        return seq

    def slot_generation(self, slot: int) -> int:
        """Bumped each time a slot is given to a new request (guards stale lookups)."""
        return int(self.gen[slot])

    # ------------------------------------------------------------------ a step's input

    def const(self, kind: str, size: int) -> np.ndarray[Any, Any]:
        """Shared read-only filler arrays (all False / all -1 / all 0) for results whose
        batch has no structured, budgeted or hold-back requests."""
        arr = self._consts.get(kind)
        if arr is None or arr.shape[0] < size:
            n = max(size, 2 * self.cap, 64)
            if kind == "false":
                arr = np.zeros(n, np.bool_)
            else:
                arr = np.full(n, -1 if kind == "minus1" else 0, np.int64)
            arr.setflags(write=False)
            self._consts[kind] = arr
        return arr[:size]

    def arange(self, n: int) -> IntArray:
        ar = self._consts.get("arange")
        if ar is None or ar.shape[0] < n:
            ar = np.arange(max(n, 2 * self.cap, 64), dtype=np.int64)
            ar.setflags(write=False)
            self._consts["arange"] = ar
        return ar[:n]

    def lookup(self, rids: IntArray) -> IntArray:
        """Slots of the step's requests; all checks happen before any state changes."""
        n = rids.shape[0]
        # Most steps repeat the previous step's requests: compare raw bytes (one memcmp;
        # np.array_equal costs more than the whole table lookup for small batches).
        key = rids.tobytes()
        if self._cache_version == self.version and key == self._cache_ids:
            return self._cache_slots
        if not n:
            return np.zeros(0, np.int64)
        if self._recent > max(16, len(self.slot_of) >> 3):
            self._reindex()
        ids = self._ids
        if ids.shape[0]:
            pos = np.searchsorted(ids, rids)
            np.minimum(pos, ids.shape[0] - 1, out=pos)
            slots = self._id_slots[pos]
            found = (ids[pos] == rids) & (slots >= 0)
        else:
            slots = np.full(n, -1, np.int64)
            found = np.zeros(n, np.bool_)
        if not found.all():
            # Admitted since the last rebuild (or removed): the dict knows.
            slot_of = self.slot_of
            for i in np.flatnonzero(~found).tolist():
                got = slot_of.get(int(rids[i]))
                if got is None:
                    raise UnknownRequestError(int(rids[i]), "step()")
                slots[i] = got
        ar = self.arange(n)
        mark = self.mark
        mark[slots] = ar
        back = mark[slots]
        if not np.array_equal(back, ar):
            i = int(np.argmax(back != ar))
            raise InvalidStepError(f"request {int(rids[i])} appears more than once in request_ids")
        if self.n_done:
            done = self.done[slots]
            if done.any():
                raise RequestFinishedError(int(rids[int(np.argmax(done))]), "step()")
        self._cache_ids = key
        self._cache_slots = slots
        self._cache_version = self.version
        return slots

    def vocab_floor(self) -> int:
        if self.vmin is None:
            self.vmin = int(self.vocab[self.live_slots()].min()) if self.slot_of else 0
        return self.vmin

    def live_slots(self) -> IntArray:
        """The slots of every live request (in no particular order)."""
        return np.fromiter(self.slot_of.values(), np.int64, len(self.slot_of))

    def _reindex(self) -> None:
        """Rebuild the sorted request-id index from :attr:`slot_of`.

        Admission and removal never copy the index (no O(batch) insert or delete per
        request): a removal leaves a tombstone, an admission is found through the dict,
        and once more than an eighth of the batch changed since the last build, the next
        lookup rebuilds it (one sort, amortized over those changes)."""
        n = len(self.slot_of)
        ids = np.fromiter(self.slot_of.keys(), np.int64, n)
        slots = np.fromiter(self.slot_of.values(), np.int64, n)
        order = np.argsort(ids, kind="stable")
        self._ids = ids[order]
        self._id_slots = slots[order]
        self.ipos[self._id_slots] = np.arange(n)  # the other slots are free: -1 already
        self._recent = 0

"""The lookup tables of the batch's vectorized path, and the encoding of a slot's row and
counts that they define.

Every table-routed machine in the batch gets a slice of one flat lookup table (token id ->
marker kind) and 32 entries of flat transition tables. A slot's state is stored as its row
in those tables, ``32 * group + 16 * aside + 8 * reasoning``, so one addition of the
token's kind indexes the label, the next row and the count increment; mixed families go
through the same operations (a single family skips the per-slot lookup table offset).
Everything stays int64 on the hot path: numpy is several times slower when it has to
convert index dtypes. Counts are packed (``total << 32 | reasoning``) so one scatter-add
keeps both; the rare delimiter tokens are counted on a side path.

Hold-back families (text markers, matched on token bytes, on the base machine) get tables
too: while a request holds nothing, a token without the HOLD flag is routed by
``trans[state][kind]``, exactly as the parser's own ``stream()`` routes it (its 1-token
fast path). Their HOLD tokens, and every token of a row with the aside bit, are left to
the request's own parser (``fallback``).

Owns the tables and the row / count encoding. It must not know requests, slots or
parsers: it sees compiled machines only.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from reasonspan.runtime.batch.types import HELD, IntArray
from reasonspan.runtime.core.labels import REASONING
from reasonspan.runtime.core.machine import HOLD, Machine
from reasonspan.runtime.core.spec import MarkerKind

TOTAL = 1 << 32
"""Packed counts: ``total_tokens * TOTAL + reasoning_tokens``."""
LOW = np.int64(TOTAL - 1)
"""Mask of the reasoning half of a packed count."""
GROUP_ROWS = 32
"""Rows of the transition tables per table group: a slot's row is ``GROUP_ROWS * group``
plus its bits."""
REASONING_BIT = np.int64(8)
"""Bit of a slot's row (``32 * group + 16 * aside + 8 * state``) that says it is reasoning."""
ASIDE_BIT = np.int64(16)
"""Bit of a slot's row that sends every token to the request's own parser: a hold-back
request with tokens held (or whose parser failed)."""
ASIDE = 7
"""Table kind of a token the table leaves to the request's own parser (see Tables)."""
CUT = int(MarkerKind.CUT)
"""Kind of a cut marker (``ReasoningSpec.cut``): left to the request's parser, like ASIDE."""


IDLE_GROUPS = 4
"""Table groups kept with no request in them (:meth:`Tables.park`): a group is one
family's tables for one tokenizer, about a vocabulary's worth of bytes."""


class ScalarTables(NamedTuple):
    """:class:`Tables` as bytes and lists (see :meth:`Tables.scalar`)."""

    lut: bytes
    lab: list[int]
    nxt: list[int]
    inc: list[int]


class Tables:
    """Lookup tables of every machine this batch routes by table, one group each.

    ``lut[base[g] + token]`` is the marker kind. With ``row = 32 * g + 8 * state``,
    ``lab[row + kind]`` is the label, ``nxt[row + kind]`` the next row and
    ``inc[row + kind]`` the packed count increment (``1 << 32`` plus 1 for a reasoning
    token). Groups are keyed by the tables' contents, so machines compiled twice for the
    same tokenizer share a group.

    Kind :data:`ASIDE` (no marker kind uses it) is a token the table leaves alone: label
    :data:`HELD`, same row, nothing counted. A hold-back machine (text markers, base
    routing) has its HOLD tokens stored as that kind; a request with tokens held has the
    :data:`ASIDE_BIT` in its row, whose 16 entries all leave the token alone. The step
    hands such requests to their own parser from that token on, so the label array tells
    which requests left the table path, with no separate pass over the batch.
    """

    def __init__(self) -> None:
        self.lut: npt.NDArray[np.uint8] = np.zeros(0, np.uint8)
        self.lab: npt.NDArray[np.uint8] = np.zeros(0, np.uint8)
        self.nxt: IntArray = np.zeros(0, np.int64)
        self.inc: IntArray = np.zeros(0, np.int64)
        self.base: list[int] = []
        self.vocab: list[int] = []
        self.luts: list[npt.NDArray[np.uint8]] = []
        self.live: list[int] = []
        self._by_key: dict[tuple[bytes, object], int] = {}
        self._by_machine: weakref.WeakKeyDictionary[Machine, int | None] = (
            weakref.WeakKeyDictionary()
        )
        """Group of each machine seen (weak: a machine, and its tokenizer, dies with the
        last parser that uses it, even while its group lives on for an equal machine)."""
        self._view: list[bool] = []
        """Per group: its ``luts`` entry is a view of the flat table (hold-back groups)."""
        self._free: list[int] = []
        """Groups released when their last request left, reused by the next new group."""
        self._parked: list[int] = []
        """Groups whose last request left, oldest first, kept for their machine's next
        request (:meth:`park`)."""
        self.built_scalar: ScalarTables | None = None
        """The tables as bytes and lists, for the scalar step (built when first asked for,
        dropped whenever a group is built or released); None until :meth:`scalar` built
        them. The scalar step reads ``tables.built_scalar or tables.scalar()``: one
        attribute instead of a call, on a path that costs a few microseconds."""

    def scalar(self) -> ScalarTables:
        """The same tables for a step of a few requests in plain Python: indexing bytes
        and lists costs a tenth of indexing a numpy array with a Python int."""
        got = self.built_scalar
        if got is None:
            got = self.built_scalar = ScalarTables(
                self.lut.tobytes(), self.lab.tolist(), self.nxt.tolist(), self.inc.tolist()
            )
        return got

    def group(self, machine: Machine) -> int | None:
        """The group of a machine, or None when the batch must route it per request."""
        if machine in self._by_machine:
            return self._by_machine[machine]
        g = self._build(machine)
        self._by_machine[machine] = g
        return g

    def _build(self, machine: Machine) -> int | None:
        hold_back = is_hold_back(machine)
        if not (machine.vectorizable or hold_back):
            return None
        trans = machine.trans
        cut = machine.has_cut
        # The vectorized step knows two states and eight kinds; anything else is routed
        # per request rather than guessed at. A cut marker's third state (the output is
        # over) is not a table state: the marker is left to the request's parser, whose
        # cursor remembers the cut, and its row stays aside from then on.
        if len(trans) != 2 + cut or any(len(row) != 8 for row in trans):
            return None
        flat = [cell for row in trans[:2] for cell in row]
        if any(
            not (0 <= lab <= 3 and nxt in (0, 1))
            for i, (lab, nxt) in enumerate(flat)
            if not (cut and i % 8 == CUT)
        ):
            return None
        lut = machine.np_lut
        # Marker kinds stay below ASIDE; HOLD tokens (hold-back machines only) are exactly
        # HOLD, since a single-token marker is never held.
        top = int(lut.max()) if lut.size else 0
        if top >= ASIDE and (not hold_back or top > HOLD or bool((lut == ASIDE).any())):
            return None
        key = (machine.lut, trans)
        g = self._by_key.get(key)
        if g is not None:
            return g
        reuse = self._free.pop() if self._free else None
        g = len(self.base) if reuse is None else reuse
        base = int(self.lut.size)
        if reuse is None:
            self.base.append(base)
            self.vocab.append(int(machine.vocab_size))
        else:
            self.base[g] = base
            self.vocab[g] = int(machine.vocab_size)
        self.built_scalar = None
        flat_lut = np.empty(base + lut.size, np.uint8)
        flat_lut[:base] = self.lut
        if hold_back:  # HOLD (8, never with a kind) becomes ASIDE, written in place
            np.minimum(lut, np.uint8(ASIDE), out=flat_lut[base:])
            lut = flat_lut[base:]
        else:
            flat_lut[base:] = lut
        self.lut = flat_lut
        glab = np.array([lab for lab, _ in flat], np.uint8)
        gnxt = np.array([32 * g + 8 * nxt for _, nxt in flat], np.int64)
        ginc = np.array([TOTAL + (lab == REASONING) for lab, _ in flat], np.int64)
        for state in (0, 1):  # the token is left to the request's parser
            for kind in (ASIDE, CUT) if cut else (ASIDE,):
                glab[8 * state + kind] = HELD
                gnxt[8 * state + kind] = 32 * g + 8 * state
                ginc[8 * state + kind] = 0
        # Rows with the aside bit: every kind is left to the parser, the row stays.
        glab = np.concatenate([glab, np.full(16, HELD, np.uint8)])
        gnxt = np.concatenate([gnxt, 32 * g + 16 + 8 * (np.arange(16, dtype=np.int64) >= 8)])
        ginc = np.concatenate([ginc, np.zeros(16, np.int64)])
        if reuse is None:
            self.lab = np.concatenate([self.lab, glab])
            self.nxt = np.concatenate([self.nxt, gnxt])
            self.inc = np.concatenate([self.inc, ginc])
            self.luts.append(lut)
            self.live.append(0)
            self._view.append(hold_back)
        else:
            self.lab[32 * g : 32 * g + 32] = glab
            self.nxt[32 * g : 32 * g + 32] = gnxt
            self.inc[32 * g : 32 * g + 32] = ginc
            self.luts[g] = lut
            self.live[g] = 0
            self._view[g] = hold_back
        self._by_key[key] = g
        return g

    def park(self, g: int) -> bool:
        """The last request of group ``g`` left: keep the group for the next request of an
        equal machine (a server serving one request at a time would otherwise build and
        repack the tables for every request, about 0.3 ms each), and release the group
        parked longest once more than :data:`IDLE_GROUPS` are idle. Returns True when
        the other groups' offsets (``base``) moved."""
        parked = [x for x in self._parked if x != g and not self.live[x]]
        parked.append(g)
        moved = False
        while len(parked) > IDLE_GROUPS:
            moved = self.release(parked.pop(0)) or moved
        self._parked = parked
        return moved

    def is_released(self, g: int) -> bool:
        """Group ``g`` was released (:meth:`release`): its number may go to any machine."""
        return g in self._free

    def release(self, g: int) -> bool:
        """The last request of group ``g`` left: forget its machines (and so their
        tokenizers) and its slice of the flat lookup table, and keep ``g`` for reuse.
        Returns True when the other groups' offsets (``base``) moved."""
        for key, got in list(self._by_key.items()):
            if got == g:
                del self._by_key[key]
        for m, got_g in list(self._by_machine.items()):
            if got_g == g:
                del self._by_machine[m]
        self._free.append(g)
        self.built_scalar = None
        live = [x for x in range(len(self.base)) if x not in self._free]
        parts: list[npt.NDArray[np.uint8]] = []
        at = 0
        moved = False
        for x in live:  # repack the flat table without the released slices
            a, n = self.base[x], self.vocab[x]
            parts.append(self.lut[a : a + n])
            moved = moved or a != at
            self.base[x] = at
            at += n
        self.lut = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        for x in live:  # hold-back groups route by a view of the flat table
            if self._view[x]:
                self.luts[x] = self.lut[self.base[x] : self.base[x] + self.vocab[x]]
        self.luts[g] = np.zeros(0, np.uint8)
        return moved


def is_hold_back(machine: Machine) -> bool:
    """A machine with text markers (or a cut marker) that routes with the base tables: its
    ``stream()`` decides a token by ``trans[state][lut[t]]`` whenever nothing is held, no
    cut passed and the token has no HOLD flag and is no cut marker (the parser's own
    1-token fast path), so the batch may do the same by table.

    A machine with a lead rule (``Machine.has_lead``: the output's first tokens are decided
    apart) is one too: its requests start aside (:func:`starts_aside`), so their parser
    decides the output's start, and go by table once nothing is held."""
    return (machine.has_byte_markers or machine.has_lead or machine.has_cut) and type(
        machine
    ).run is Machine.run


def starts_aside(machine: Machine) -> bool:
    """A new request of this machine starts with the aside bit: its first token goes to its
    own parser, which applies the family's rule for the output's first tokens."""
    return machine.has_lead

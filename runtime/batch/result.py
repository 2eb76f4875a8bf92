"""What one batch step hands back: :class:`BatchStepResult`.

A step result holds arrays over the whole batch (cheap: a few gathers per step). Anything
per request and list-shaped (``split()``, ``forced_token_ids()``) is built only when asked
for, so a scheduler that only needs the arrays never pays for per-request Python objects.

Owns the result's fields and its per-request lookups. It must not know the batch that
fills it: the batch writes the fields, and all the result asks of it later is a slot's
forced sequence and generation (:class:`ForcedSource`), so this module imports no batch
module but the shared types, errors and lane numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from reasonspan.runtime.batch.errors import RequestFailedError, UnknownRequestError
from reasonspan.runtime.batch.lanes import HOLD_BACK, PARSER
from reasonspan.runtime.batch.types import BoolArray, IntArray, LabelArray
from reasonspan.runtime.core.labels import split_labels
from reasonspan.runtime.core.machine import Spill


class ForcedSource(Protocol):
    """What a step result needs from the batch that made it, for
    :meth:`BatchStepResult.forced_token_ids`."""

    def forced_sequence(self, slot: int) -> list[int]:
        """The whole forced sequence of a slot: lead-in ids, then the end marker ids."""
        ...

    def slot_generation(self, slot: int) -> int:
        """Bumped each time a slot is given to a new request (guards stale lookups)."""
        ...


class StepLists(NamedTuple):
    """A step's ids, offsets, labels and slots as Python lists: what the runtime's
    per-request loop and the output path read (:meth:`BatchStepResult.lists`)."""

    request_ids: list[int]
    token_ids: list[int]
    offsets: list[int]
    labels: bytes
    slots: list[int]


StepState = tuple[list[bool], list[int]]
"""Per request, after a scalar step: inside reasoning, and reasoning tokens so far."""

OneStep = tuple[int, int, int, int, bool, int]
"""A step of one request and one token: ``(request id, token id, slot, label, inside
reasoning after it, reasoning tokens so far)`` (:meth:`BatchStepResult.of_one`)."""

BYTE = [bytes((i,)) for i in range(256)]
"""One label as bytes, by its value (a one-token row's labels)."""


_LAZY = frozenset(
    (
        "_slots",
        "budget_remaining",
        "forcing",
        "grammar_active",
        "grammar_mask",
        "grammar_stopped",
        "held_tokens",
        "is_reasoning",
        "labels",
        "next_forced_token",
        "offsets",
        "reasoning_tokens",
        "request_ids",
        "token_ids",
    )
)
"""The array fields a scalar step leaves unset until they are read."""

_FRESH: dict[str, Callable[[], Any]] = {
    "_rows": lambda: None,
    "_decided": dict,
    "_spill": dict,
    "_forced_pos": lambda: None,
    "_gen": lambda: None,
    "_aside": lambda: None,
}
"""The fields :meth:`BatchStepResult.of_one` leaves unset, and how each starts when first
read (the lane of one request writes its event without reading any of them)."""

_new = object.__new__


class BatchStepResult:
    """One engine step, for the whole batch. Arrays are aligned with ``request_ids``
    (per request) or with ``token_ids`` (per token); all of them are owned by the result.

    Per-request lookups (:meth:`split`, :meth:`decided`, :meth:`forced_token_ids`) are valid
    until the request is removed from the batch.
    """

    __slots__ = (
        "_aside",
        "_batch",
        "_decided",
        "_forced_pos",
        "_gen",
        "_include",
        "_lists",
        "_rows",
        "_spill",
        "_state",
        "errors",
        "one",
        *sorted(_LAZY),
    )

    request_ids: IntArray
    token_ids: IntArray
    offsets: IntArray
    labels: LabelArray
    """One label per entry of ``token_ids``: a :class:`~reasonspan.Label` value, or
    :data:`HELD` (not decided yet) or :data:`FAILED` (the request's parser raised)."""
    is_reasoning: BoolArray
    """The request is inside reasoning after this step's decided tokens."""
    grammar_active: BoolArray
    """Sample the request's next token under its grammar (structured_output requests
    outside reasoning; always False for the others)."""
    grammar_mask: BoolArray
    """Per token: it was generated while the request's grammar was active, so the engine
    hands it to the grammar matcher. These are the content tokens after the end of
    reasoning; the marker that ends reasoning (or a TOOL marker that does) is never among
    them. A marker that the grammar itself let through while active (a ``<think>`` that
    re-enters reasoning in glm45-like families, a repeated ``</think>``) is, because the
    grammar sampled it; the tokens after a re-entry are reasoning and are not."""
    grammar_stopped: BoolArray
    """Per request: its ``response_format`` grammar is complete after this step (llguidance
    says nothing but the end may follow), so the engine ends it with finish "stop". Always
    False for requests without a grammar engine."""
    reasoning_tokens: IntArray
    """Reasoning tokens so far (decided, REASONING label), per request."""
    budget_remaining: IntArray
    """Reasoning tokens the request may still generate before its end is forced; -1 for
    no budget. A speculative engine proposes at most this many model tokens before the
    forced ones. Held-back tokens count once decided (a held ``</`` may be the model's own
    end marker, which forcing must not cut off), so in hold-back families a reasoning token
    that looked like the start of a marker can take the count past the budget."""
    forcing: BoolArray
    """The thinking budget is spent: the engine must emit :meth:`forced_token_ids`."""
    next_forced_token: IntArray
    """The first forced token per request, -1 when nothing is forced (plain decoding:
    ``np.where(res.next_forced_token >= 0, res.next_forced_token, sampled)``)."""
    held_tokens: IntArray
    """Tokens held back (undecided) per request after this step."""
    errors: dict[int, RequestFailedError]
    """Requests whose parser raised (this step or earlier), by request id."""

    _slots: IntArray
    _include: BoolArray | None
    _forced_pos: IntArray | None
    _gen: IntArray | None

    def __init__(self, batch: ForcedSource) -> None:
        self._batch = batch
        self._rows: dict[int, int] | None = None
        self._decided: dict[int, tuple[list[int], bytes]] = {}
        self._spill: dict[int, tuple[Spill, ...]] = {}
        self._lists: StepLists | None = None
        self._state: StepState | None = None
        self.one: OneStep | None = None
        """A step of one request and one token as one tuple (:meth:`of_one`), else None."""
        self._aside: tuple[IntArray | None, list[IntArray]] | None = None
        """The rows that went through their parser (:meth:`took_parser`), None: none."""

    @classmethod
    def of_lists(
        cls,
        batch: ForcedSource,
        lists: StepLists,
        state: StepState,
        include: BoolArray | None,
    ) -> BatchStepResult:
        """The result of a step of table-routed requests with nothing held, forced,
        failed or under a grammar, from its lists and its requests' states: the arrays and
        the per-row lookup caches (:data:`_FRESH`) are made when first read (a server
        loop that reads only the text of a few requests never pays for them)."""
        res = cls.of_one(batch, include, None)
        res._lists = lists
        res._state = state
        res._decided = {}  # (the output paths read it; the other lookups are made lazily)
        return res

    @classmethod
    def of_one(
        cls, batch: ForcedSource, include: BoolArray | None, one: OneStep | None
    ) -> BatchStepResult:
        """The result of a step of one request and one token (table-routed, nothing held,
        forced, failed or under a grammar) as one tuple, :attr:`one`: the runtime's lane
        for one request alone reads it, and nothing else. Only the fields every reader
        needs are written (what ``__init__`` sets, in one frame); its lists, arrays and
        per-row lookup caches (:data:`_FRESH`) are made when first read. (``one`` None:
        the start of :meth:`of_lists`.)"""
        res = _new(cls)
        res._batch = batch
        res._lists = None
        res._state = None
        res.one = one
        res._include = include
        res.errors = {}
        return res

    # ------------------------------------------------------------------ writers

    def set_rows(
        self,
        rids: IntArray,
        toks: IntArray,
        offs: IntArray,
        labels: LabelArray,
        slots: IntArray,
        errors: dict[int, RequestFailedError],
        include: BoolArray | None,
    ) -> None:
        """The vectorized step's rows: ids, tokens, offsets, labels, slots, errors and the
        include-reasoning flags (None: every request includes its reasoning)."""
        self.request_ids, self.token_ids, self.offsets = rids, toks, offs
        self.labels, self._slots, self.errors = labels, slots, errors
        self._include = include
        self._forced_pos = None
        self._gen = None

    def set_forced(self, forced_pos: IntArray, gen: IntArray) -> None:
        """The forced positions after the step and the slots' generations, for
        :meth:`forced_token_ids` (the budget's writer)."""
        self._forced_pos = forced_pos
        self._gen = gen

    def set_decided(
        self, row: int, ids: list[int], labels: bytes, spill: tuple[Spill, ...] | list[Spill]
    ) -> None:
        """Row ``row``'s decided tokens when they are not simply its tokens with its labels
        (held tokens released or still held, a marker covering part of a token)."""
        self._decided[row] = (ids, labels)
        if spill:
            self._spill[row] = tuple(spill)

    def forget_decided(self, row: int) -> None:
        """Row ``row`` decides nothing of its own this step (a grammar rejection failed
        it): what :meth:`set_decided` recorded for it is dropped."""
        self._decided.pop(row, None)
        self._spill.pop(row, None)

    def took_parser(self, parser_rows: IntArray | None, hold_rows: list[IntArray]) -> None:
        """Record which rows the step sent through their own parser: ``parser_rows``, on
        the parser lane from their first token (None: none), and ``hold_rows``, hold-back
        rows from the token the tables left aside. Every other row went by table."""
        self._aside = (parser_rows, hold_rows)

    def lanes(self) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """Per row, the lane its tokens took in this step (``runtime/batch/lanes.py``):
        ``TABLE``, ``HOLD_BACK`` (a hold-back row that needed its parser) or ``PARSER``.
        Made when asked for, from what the step recorded."""
        out = np.zeros(len(self), np.uint8)
        aside = self._aside
        if aside is not None:
            parser_rows, hold_rows = aside
            for rows in hold_rows:
                out[rows] = HOLD_BACK
            if parser_rows is not None:
                out[parser_rows] = PARSER
        return out

    def lists(self) -> StepLists:
        """The step's ids, offsets, labels and slots as Python lists (converted once)."""
        got = self._lists
        if got is None and self.one is not None:
            rid, tok, slot, lab, reasoning, count = self.one
            got = self._lists = tuple.__new__(StepLists, ([rid], [tok], [0, 1], BYTE[lab], [slot]))
            self._state = ([reasoning], [count])
        elif got is None:
            got = self._lists = StepLists(
                self.request_ids.tolist(),
                self.token_ids.tolist(),
                self.offsets.tolist(),
                self.labels.tobytes(),
                self._slots.tolist(),
            )
        return got

    if not TYPE_CHECKING:  # the type checker sees the declared fields, never this

        def __getattr__(self, name: str) -> Any:
            """An array field a scalar step left unset (:meth:`of_lists`), or a lookup
            cache :meth:`of_one` left unset: made now."""
            fresh = _FRESH.get(name)
            if fresh is not None:
                value = fresh()
                object.__setattr__(self, name, value)
                return value
            if name in _LAZY and self.one is not None:
                self.lists()
            lists, state = self._lists, self._state
            if name not in _LAZY or lists is None or state is None:
                raise AttributeError(name)
            self._arrays(lists, state)
            return object.__getattribute__(self, name)

    def _arrays(self, lists: StepLists, state: StepState) -> None:
        n, m = len(lists.request_ids), len(lists.token_ids)
        reasoning, counts = state
        ints = np.array(
            lists.request_ids + lists.token_ids + lists.offsets + lists.slots + counts,
            np.int64,
        )
        a, b, c = n + m, 2 * n + m + 1, 3 * n + m + 1  # views of one owned buffer
        self.request_ids, self.token_ids, self.offsets = ints[:n], ints[n:a], ints[a:b]
        self._slots, self.reasoning_tokens = ints[b:c], ints[c:]
        self.labels = np.frombuffer(bytearray(lists.labels), np.uint8)
        self.is_reasoning = np.array(reasoning, np.bool_)
        self.grammar_mask = np.zeros(m, np.bool_)
        self.grammar_active = np.zeros(n, np.bool_)
        self.grammar_stopped = np.zeros(n, np.bool_)
        self.forcing = np.zeros(n, np.bool_)
        self.held_tokens = np.zeros(n, np.int64)
        self.next_forced_token = np.full(n, -1, np.int64)
        self.budget_remaining = np.full(n, -1, np.int64)

    # ------------------------------------------------------------------ lookups

    def row(self, request_id: int) -> int:
        """Index of ``request_id`` in ``request_ids``."""
        rows = self._rows
        if rows is None:
            rows = self._rows = {r: i for i, r in enumerate(self.request_ids.tolist())}
        try:
            return rows[request_id]
        except KeyError:
            raise UnknownRequestError(request_id, "this step") from None

    def decided(self, request_id: int) -> tuple[list[int], bytes]:
        """``(token_ids, labels)`` decided for the request in this step, in order: what the
        per-request ``stream()`` returns. It differs from the step's own tokens only for
        hold-back families (earlier held tokens first, tokens still held left out)."""
        i = self.row(request_id)
        got = self._decided.get(i)
        if got is not None:
            return got
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.token_ids[a:b].tolist(), self.labels[a:b].tobytes()

    @property
    def slots(self) -> IntArray:
        """The batch slot of each request (aligned with ``request_ids``): an index for
        per-slot arrays kept beside the batch (the runtime's output path)."""
        return self._slots

    def irregular_rows(self) -> list[int]:
        """Rows whose decided tokens are not simply this step's tokens with ``labels``
        (held-back tokens released or still held, markers covering part of a token)."""
        return list(self._decided)

    def all_decided(
        self, rows: list[int] | None = None
    ) -> Iterator[tuple[int, list[int], bytes, tuple[Spill, ...]]]:
        """``(request_id, token_ids, labels, spill)`` for every request of the step (or
        for the given rows), as :meth:`decided` and :meth:`spill` give them, converting
        the arrays once (the async runtime turns every request's tokens into text each
        step)."""
        one = self.one
        if one is not None:  # one request, one token: its row, without the step's lists
            if rows is None or rows:
                yield one[0], [one[1]], BYTE[one[3]], ()
            return
        decided = self._decided
        spill = self._spill
        if rows is not None and self._lists is None and 8 * len(rows) < len(self):
            # A few rows of a large step (the rows an output path left): slice the arrays
            # instead of converting all of them.
            rid_a, tok_a, off_a, lab_a = self.request_ids, self.token_ids, self.offsets, self.labels
            for i in rows:
                got = decided.get(i) if decided else None
                if got is not None:
                    yield int(rid_a[i]), got[0], got[1], spill.get(i, ())
                else:
                    a, b = int(off_a[i]), int(off_a[i + 1])
                    yield int(rid_a[i]), tok_a[a:b].tolist(), lab_a[a:b].tobytes(), ()
            return
        rids, toks, offs, labels, _ = self.lists()
        for i in range(len(rids)) if rows is None else rows:
            rid = rids[i]
            got = decided.get(i) if decided else None
            if got is not None:
                yield rid, got[0], got[1], spill.get(i, ())
            else:
                a, b = offs[i], offs[i + 1]
                yield rid, toks[a:b], labels[a:b], ()

    def spill(self, request_id: int) -> tuple[Spill, ...]:
        """Text of this step's decided tokens that a text marker covers only in part
        (indices into :meth:`decided`), for ``LabelledDecoder.feed``; empty except for
        families with text markers."""
        return self._spill.get(self.row(request_id), ())

    def split(self, request_id: int) -> tuple[list[int], list[int]]:
        """``(reasoning_ids, content_ids)`` decided in this step for one request; reasoning
        is empty for a request added with ``include_reasoning=False``."""
        i = self.row(request_id)
        include = True if self._include is None else bool(self._include[i])
        ids, labels = self.decided(request_id)
        return split_labels(ids, labels, include)

    def forced_token_ids(self, request_id: int) -> list[int]:
        """The tokens the engine must emit next, one per position (empty when nothing is
        forced): the rest of the lead-in phrase, then the end marker."""
        i = self.row(request_id)
        if self._forced_pos is None:
            return []
        pos = int(self._forced_pos[i])
        if pos < 0:
            return []
        slot = int(self._slots[i])
        if self._gen is not None and self._batch.slot_generation(slot) != int(self._gen[i]):
            raise UnknownRequestError(request_id, "forced_token_ids (removed since this step)")
        return self._batch.forced_sequence(slot)[pos:]

    def __len__(self) -> int:
        if self.one is not None:
            return 1
        lists = self._lists
        return len(lists.request_ids) if lists is not None else int(self.request_ids.shape[0])

    def __repr__(self) -> str:
        return (
            f"BatchStepResult(requests={len(self)}, tokens={self.token_ids.shape[0]}, "
            f"reasoning={int(self.is_reasoning.sum())}, errors={len(self.errors)})"
        )

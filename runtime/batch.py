"""The batch runtime: per-request reasoning state for a continuous-batching scheduler.

One :class:`ReasoningBatch` lives beside the scheduler. Each engine step hands it the new
tokens of the whole batch as flat arrays (CSR: ``offsets`` has one more entry than
``request_ids``; a request gets 0, 1 or k tokens) and gets back labels, reasoning flags,
grammar gating, reasoning-token counts and forced tokens for every request at once.

Requests live in slots: every per-request fact is an entry of a numpy array (state,
token counts, budget, forced position, ...), so a step over single-token-marker families
is a handful of numpy gathers and scatters over the whole batch, with no Python loop over
requests:

- every table-routed machine in the batch gets a slice of one flat lookup table
  (token id -> marker kind) and 32 entries of flat transition tables. A slot's state is
  stored as its row in those tables, ``32 * group + 16 * aside + 8 * reasoning``, so one
  addition of the token's kind indexes the label, the next row and the count increment; mixed
  families go through the same operations (a single family skips the per-slot lookup
  table offset). Everything stays int64 on the hot path: numpy is several times slower
  when it has to convert index dtypes;
- counts are packed (``total << 32 | reasoning``) so one scatter-add keeps both; the rare
  delimiter tokens are counted on a side path;
- with k tokens per request, position j of every request is processed at once, for j up
  to the largest k: exact, because each request's slot is touched once per position.

Hold-back families (text markers, matched on token bytes, on the base machine) take the
same table path for every token it can decide: while a request holds nothing, a token
without the HOLD flag is routed by ``trans[state][kind]``, exactly as the parser's own
``stream()`` routes it (its 1-token fast path). From a request's first HOLD token in a
step, and in later steps while it still holds tokens (the aside bit of its row), the table
leaves its tokens alone and the rest of its tokens in that step go through its own
``parser.stream()``, whose cursor therefore holds exactly what the parser has held. HOLD
tokens are rare (0.2-7% of the tokens of the texts measured), so most steps of such a
request cost what a vectorized one costs. Custom machines (harmony) or parsers, and
hold-back requests whose parser must see every token (``may_return_reasoning_as_content``),
go through ``parser.stream()`` for every token. All paths give exactly what the
per-request ``stream()`` gives for the same tokens (tests/test_batch.py).

Held-back tokens (hold-back families only) are labelled :data:`HELD` in the step that
brings them and are reported, with their real label, by ``res.decided()`` / ``res.split()``
of the step that decides them, or by :meth:`ReasoningBatch.finish`.

What the result means, exactly:

- Labels: every token gets one (:class:`~reasonspan.Label`), or :data:`HELD` until a
  later step decides it, or :data:`FAILED` for a request whose parser raised. Forced
  tokens come back as new tokens and are labelled and counted like the model's.
- Thinking budget: reasoning tokens (REASONING labels, so counted from the start marker,
  or from the first token when the prompt left a block open) are compared with the
  budget after every token. Once the count reaches it while the request is reasoning,
  ``forced_token_ids`` is the lead-in phrase's ids and then the end marker's, one token
  per position; each forced token the engine emits advances it (any other token leaves
  it where it was). The end marker closes reasoning and the request goes on in content.
  A request that leaves reasoning by itself is never forced. So with a budget of B and a
  lead-in of L tokens, the request spends exactly B + L reasoning tokens, provided the
  engine caps speculative proposals at ``budget_remaining``; tokens it proposed past the
  budget in one step are counted, never hidden.
- Structured output: ``grammar_active`` is True while a structured request is outside
  reasoning, so from the first token when the prompt leaves the model outside reasoning
  (thinking off, a closed block in the prompt, a family that opens blocks itself),
  otherwise from the token after the one that ends reasoning. ``grammar_mask`` marks the
  tokens generated under the grammar: the content (CONTENT labels) after the end of
  reasoning. The end marker, or a TOOL marker that ends reasoning, is not among them.
- Usage (:class:`RequestUsage`): completion = reasoning + content + delimiters + held;
  consumed markers are delimiters, counted in neither reasoning nor content; TOOL
  markers are content. ``reasoning_ended`` False after ``finish()`` means the output
  stopped inside reasoning (finish_reason "length"), which the caller must surface.
- Errors: bad input raises before anything changes. A per-request parser that raises
  fails its request alone (``res.errors``, FAILED labels, ``finish()`` re-raises).

Not thread-safe: one batch belongs to one scheduler loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..tokenizer.loader import LoadedTokenizer
from .batch_result import (
    FAILED,
    HELD,
    BatchFinish,
    BatchStepResult,
    BatchTokenError,
    BoolArray,
    DuplicateRequestError,
    IntArray,
    InvalidStepError,
    LabelArray,
    RequestFailedError,
    RequestFinishedError,
    RequestUsage,
    Spill,
    UnknownRequestError,
)
from .errors import InvalidOptionError
from .labels import CONTENT, DELIMITER, REASONING, split_labels
from .machine import HOLD, Machine
from .parser import ReasoningParser
from .registry import create_parser_sync

NO_BUDGET = int(np.iinfo(np.int64).max)
_I64_MIN = int(np.iinfo(np.int64).min)
_TOTAL = 1 << 32
"""Packed counts: ``total_tokens * _TOTAL + reasoning_tokens``."""
_LOW = np.int64(_TOTAL - 1)
_REASONING_BIT = np.int64(8)
"""Bit of a slot's row (``32 * group + 16 * aside + 8 * state``) that says it is reasoning."""
_ASIDE_BIT = np.int64(16)
"""Bit of a slot's row that sends every token to the request's own parser: a hold-back
request with tokens held (or whose parser failed)."""
_ASIDE = 7
"""Table kind of a token the table leaves to the request's own parser (see _Tables)."""
_FEW_ROWS = 32
"""Up to this many per-request rows in a step, slot fields are read and written element by
element rather than by numpy gathers (measured crossover on a 2-core machine: ~30)."""


class _Tables:
    """Lookup tables of every machine this batch routes by table, one group each.

    ``lut[base[g] + token]`` is the marker kind. With ``row = 32 * g + 8 * state``,
    ``lab[row + kind]`` is the label, ``nxt[row + kind]`` the next row and
    ``inc[row + kind]`` the packed count increment (``1 << 32`` plus 1 for a reasoning
    token). Groups are keyed by the tables' contents, so machines compiled twice for the
    same tokenizer share a group.

    Kind :data:`_ASIDE` (no marker kind uses it) is a token the table leaves alone: label
    :data:`HELD`, same row, nothing counted. A hold-back machine (text markers, base
    routing) has its HOLD tokens stored as that kind; a request with tokens held has the
    :data:`_ASIDE_BIT` in its row, whose 16 entries all leave the token alone. The step
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
        self._by_id: dict[int, tuple[Machine, int | None]] = {}

    def group(self, machine: Machine) -> int | None:
        """The group of a machine, or None when the batch must route it per request."""
        hit = self._by_id.get(id(machine))
        if hit is not None and hit[0] is machine:
            return hit[1]
        g = self._build(machine)
        self._by_id[id(machine)] = (machine, g)
        return g

    def _build(self, machine: Machine) -> int | None:
        hold_back = _hold_back(machine)
        if not (machine.vectorizable or hold_back):
            return None
        trans = machine.trans
        # The vectorized step knows two states and eight kinds; anything else is routed
        # per request rather than guessed at.
        if len(trans) != 2 or any(len(row) != 8 for row in trans):
            return None
        flat = [cell for row in trans for cell in row]
        if any(not (0 <= lab <= 3 and nxt in (0, 1)) for lab, nxt in flat):
            return None
        lut = machine.np_lut
        # Marker kinds stay below _ASIDE; HOLD tokens (hold-back machines only) are exactly
        # HOLD, since a single-token marker is never held.
        top = int(lut.max()) if lut.size else 0
        if top >= _ASIDE and (not hold_back or top > HOLD or bool((lut == _ASIDE).any())):
            return None
        key = (machine.lut, trans)
        g = self._by_key.get(key)
        if g is not None:
            return g
        g = len(self.base)
        base = int(self.lut.size)
        self.base.append(base)
        self.vocab.append(int(machine.vocab_size))
        flat_lut = np.empty(base + lut.size, np.uint8)
        flat_lut[:base] = self.lut
        if hold_back:  # HOLD (8, never with a kind) becomes _ASIDE, written in place
            np.minimum(lut, np.uint8(_ASIDE), out=flat_lut[base:])
            lut = flat_lut[base:]
        else:
            flat_lut[base:] = lut
        self.lut = flat_lut
        glab = np.array([lab for lab, _ in flat], np.uint8)
        gnxt = np.array([32 * g + 8 * nxt for _, nxt in flat], np.int64)
        ginc = np.array([_TOTAL + (lab == REASONING) for lab, _ in flat], np.int64)
        for state in (0, 1):  # the token is left to the request's parser
            glab[8 * state + _ASIDE] = HELD
            gnxt[8 * state + _ASIDE] = 32 * g + 8 * state
            ginc[8 * state + _ASIDE] = 0
        # Rows with the aside bit: every kind is left to the parser, the row stays.
        glab = np.concatenate([glab, np.full(16, HELD, np.uint8)])
        gnxt = np.concatenate([gnxt, 32 * g + 16 + 8 * (np.arange(16, dtype=np.int64) >= 8)])
        ginc = np.concatenate([ginc, np.zeros(16, np.int64)])
        self.lab = np.concatenate([self.lab, glab])
        self.nxt = np.concatenate([self.nxt, gnxt])
        self.inc = np.concatenate([self.inc, ginc])
        self.luts.append(lut)
        self.live.append(0)
        self._by_key[key] = g
        return g


def _hold_back(machine: Machine) -> bool:
    """A machine with text markers that routes with the base tables: its ``stream()`` decides
    a token by ``trans[state][lut[t]]`` whenever nothing is held and the token has no HOLD
    flag (the parser's own 1-token fast path), so the batch may do the same by table."""
    return machine.has_byte_markers and type(machine).run is Machine.run


def _int_array(x: object, where: str) -> IntArray:
    """A 1-D int64 array owned by the batch (a copy), or a clear error."""
    a = np.asarray(x)
    if a.ndim != 1:
        raise InvalidStepError(f"{where} must be a 1-D array, got {a.ndim} dimensions")
    if a.dtype.kind not in "iu" and a.size:
        raise InvalidStepError(f"{where} must hold integers, got dtype {a.dtype}")
    return a.astype(np.int64)


def _request_id(x: object, where: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{where}: request ids are ints, not {type(x).__name__}")
    v = int(x)
    if not _I64_MIN <= v <= NO_BUDGET:
        raise ValueError(f"{where}: request id {v} does not fit in int64")
    return v


def _check_bool(key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidOptionError(key, value, "a bool")
    return value


class ReasoningBatch:
    """Reasoning state of every request in a continuous batch, stepped as a whole.

    ::

        batch = ReasoningBatch()
        batch.add(rid, parser, prompt_ids, thinking_token_budget=512, structured_output=True)
        res = batch.step(request_ids, token_ids, offsets)
        res.labels, res.is_reasoning, res.grammar_active, res.reasoning_tokens
        res.forced_token_ids(rid), res.split(rid)
        reasoning_ids, content_ids = batch.finish(rid)
        batch.remove(rid)

    Errors in the input (unknown or repeated ids, bad offsets, token ids outside a
    request's vocabulary) raise before any request's state changes. A request whose
    per-request parser raises does not stop the step: it is reported in ``res.errors``
    and frozen, every other request goes on.
    """

    _ARRAYS: tuple[tuple[str, type[np.generic], int], ...] = (
        ("_rid", np.int64, 0),
        ("_gen", np.int64, 0),
        ("_done", np.bool_, 0),
        ("_failed", np.bool_, 0),
        ("_vec", np.bool_, 0),
        ("_tab", np.bool_, 0),
        ("_group", np.int64, -1),
        ("_lutb", np.int64, 0),
        ("_row", np.int64, 0),
        ("_cnt", np.int64, 0),
        ("_dcnt", np.int64, 0),
        ("_vocab", np.int64, 0),
        ("_held", np.int64, 0),
        ("_budget", np.int64, NO_BUDGET),
        ("_fpos", np.int64, -1),
        ("_flen", np.int64, 0),
        ("_lead", np.int64, 0),
        ("_struct", np.bool_, 0),
        ("_incl", np.bool_, 1),
        ("_hit", np.bool_, 0),
        ("_mark", np.int64, 0),
    )

    _rid: IntArray
    _gen: IntArray
    _done: BoolArray
    _failed: BoolArray
    _vec: BoolArray
    _tab: BoolArray
    """The request has a table group (vectorized or hold-back); the others (custom machines
    or parsers) go only through their own parser."""
    _group: IntArray
    _lutb: IntArray
    _row: IntArray
    """``32 * group + 16 * aside + 8 * reasoning``: the slot's row in the flat transition
    tables (per-request slots use only the reasoning bit)."""
    _cnt: IntArray
    """Packed ``total << 32 | reasoning`` token counts."""
    _dcnt: IntArray
    """Delimiter tokens (TOOL markers count as content: total - reasoning - delimiters)."""
    _vocab: IntArray
    _held: IntArray
    _budget: IntArray
    _fpos: IntArray
    _flen: IntArray
    _lead: IntArray
    _struct: BoolArray
    _incl: BoolArray
    _hit: BoolArray
    _mark: IntArray

    def __init__(self, capacity: int = 64) -> None:
        self._cap = 0
        self._tables = _Tables()
        self._slot_of: dict[int, int] = {}
        self._free: list[int] = []
        self._parsers: list[ReasoningParser | None] = []
        self._errors: dict[int, RequestFailedError] = {}
        self._sorted_ids: IntArray = np.zeros(0, np.int64)
        self._sorted_slots: IntArray = np.zeros(0, np.int64)
        self._version = 0
        self._cache_version = -1
        self._cache_ids = b""
        self._cache_slots: IntArray = np.zeros(0, np.int64)
        self._n_fallback = 0
        """Requests routed only through their own parser (custom machines or parsers)."""
        self._n_hybrid = 0
        """Requests of hold-back families, routed by table until a token needs holding."""
        self._n_struct = 0
        self._n_budget = 0
        self._n_exclude = 0
        self._n_done = 0
        self._single = -1
        self._vmin: int | None = None
        self._forced: IntArray = np.zeros((0, 1), np.int64)
        self._consts: dict[str, np.ndarray[Any, Any]] = {}
        self._grow(max(1, int(capacity)))

    # ------------------------------------------------------------------ slots

    def _grow(self, cap: int) -> None:
        old = self._cap
        for name, dtype, fill in self._ARRAYS:
            arr = np.full(cap, fill, dtype)
            if old:
                arr[:old] = getattr(self, name)
            setattr(self, name, arr)
        forced = np.zeros((cap, self._forced.shape[1]), np.int64)
        forced[:old] = self._forced
        self._forced = forced
        self._parsers.extend([None] * (cap - old))
        self._free.extend(range(cap - 1, old - 1, -1))
        self._cap = cap

    @property
    def capacity(self) -> int:
        """Slots allocated (grows by doubling; freed slots are reused first)."""
        return self._cap

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._slot_of

    def request_ids(self) -> list[int]:
        """The requests in the batch (finished ones included until removed)."""
        return list(self._slot_of)

    def _slot(self, request_id: object, where: str) -> int:
        rid = _request_id(request_id, where)
        slot = self._slot_of.get(rid)
        if slot is None:
            raise UnknownRequestError(rid, where)
        return slot

    def _recount(self) -> None:
        """Cache the single vectorized group when the batch holds only one family."""
        live = [g for g, n in enumerate(self._tables.live) if n]
        self._single = live[0] if (len(live) == 1 and not self._n_fallback) else -1
        self._version += 1

    # ------------------------------------------------------------------ add / remove

    def add(
        self,
        request_id: int,
        parser: ReasoningParser | str | None = None,
        prompt_token_ids: Sequence[int] | np.ndarray[Any, Any] | None = None,
        *,
        name: str | None = None,
        tokenizer: LoadedTokenizer | Any = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        include_reasoning: bool = True,
        thinking_token_budget: int | None = None,
        budget_lead_in: str | None = None,
        structured_output: bool = False,
    ) -> None:
        """Admit a request, seeded from its prompt (right-to-left scan of the last turn).

        ``parser`` is a created parser (used as a template: the batch keeps its own
        per-request state) or a family name with ``tokenizer=``. ``chat_template_kwargs``
        re-creates the parser's family with those switches. ``thinking_token_budget``
        bounds the reasoning tokens (None: unlimited); when it is spent the request must
        emit ``budget_lead_in`` (encoded once, here) and then the end marker.
        ``structured_output``: the request's grammar waits for the end of reasoning.
        ``include_reasoning=False``: reasoning is generated and counted but never handed
        out by ``split()`` / ``finish()``.
        """
        rid = _request_id(request_id, "add()")
        if rid in self._slot_of:
            raise DuplicateRequestError(rid)
        p = self._resolve_parser(parser, name, tokenizer, chat_template_kwargs)
        include = _check_bool("include_reasoning", include_reasoning)
        structured = _check_bool("structured_output", structured_output)
        budget = NO_BUDGET
        seq: list[int] = []
        lead_len = 0
        if thinking_token_budget is not None:
            if (
                isinstance(thinking_token_budget, bool)
                or not isinstance(thinking_token_budget, (int, np.integer))
                or thinking_token_budget < 0
            ):
                raise InvalidOptionError(
                    "thinking_token_budget", thinking_token_budget, "an int >= 0 or None"
                )
            if budget_lead_in is not None and not isinstance(budget_lead_in, str):
                raise InvalidOptionError("budget_lead_in", budget_lead_in, "a str or None")
            budget = int(thinking_token_budget)
            lead = p.tokenizer.encode(budget_lead_in) if budget_lead_in else []
            end = p.end_marker_token_ids()
            if not end and p.thinking_enabled:
                raise InvalidOptionError(
                    "thinking_token_budget",
                    thinking_token_budget,
                    f"None: parser {p.name!r} has no end marker to force",
                )
            seq = [*lead, *end]
            lead_len = len(lead)
        elif budget_lead_in is not None:
            raise InvalidOptionError(
                "budget_lead_in", budget_lead_in, "None without a thinking_token_budget"
            )
        reasoning = (
            p.is_prompt_in_reasoning(prompt_token_ids)
            if prompt_token_ids is not None
            else p.default_reasoning
        ) and p.thinking_enabled
        group, hybrid = self._vector_group(p)
        owned = (
            p
            if group is not None and not hybrid
            else type(p)(
                p.tokenizer,
                p.machine,
                p.chat_template_kwargs,
                default_reasoning=p.default_reasoning,
            )
        )

        # ---- validated: from here on the batch changes
        if not self._free:
            self._grow(self._cap * 2)
        slot = self._free.pop()
        if len(seq) > self._forced.shape[1]:
            wider = np.zeros((self._cap, len(seq)), np.int64)
            wider[:, : self._forced.shape[1]] = self._forced
            self._forced = wider
        tables = self._tables
        self._rid[slot] = rid
        self._gen[slot] += 1
        self._done[slot] = False
        self._failed[slot] = False
        self._vec[slot] = group is not None and not hybrid
        self._tab[slot] = group is not None
        self._group[slot] = -1 if group is None else group
        self._lutb[slot] = 0 if group is None else tables.base[group]
        self._row[slot] = (0 if group is None else 32 * group) + (8 if reasoning else 0)
        self._vocab[slot] = p.machine.vocab_size
        self._cnt[slot] = 0
        self._dcnt[slot] = 0
        self._held[slot] = 0
        self._budget[slot] = budget
        self._flen[slot] = len(seq)
        self._lead[slot] = lead_len
        self._forced[slot, : len(seq)] = seq
        start = reasoning and budget <= 0
        self._fpos[slot] = 0 if start else -1
        self._hit[slot] = start
        self._struct[slot] = structured
        self._incl[slot] = include
        self._parsers[slot] = owned
        self._slot_of[rid] = slot
        pos = int(np.searchsorted(self._sorted_ids, rid))
        self._sorted_ids = np.insert(self._sorted_ids, pos, rid)
        self._sorted_slots = np.insert(self._sorted_slots, pos, slot)
        self._n_fallback += group is None
        self._n_hybrid += hybrid
        self._n_struct += structured
        self._n_budget += budget != NO_BUDGET
        self._n_exclude += not include
        if group is not None:
            tables.live[group] += 1
        vocab = int(p.machine.vocab_size)
        self._vmin = None if self._vmin is None else min(self._vmin, vocab)
        self._recount()

    def _resolve_parser(
        self,
        parser: object,
        name: str | None,
        tokenizer: object,
        kwargs: Mapping[str, Any] | None,
    ) -> ReasoningParser:
        if isinstance(parser, ReasoningParser):
            if name is not None or tokenizer is not None:
                raise TypeError("add(): pass a created parser, or name= and tokenizer=, not both")
            if kwargs is not None and dict(kwargs) != parser.chat_template_kwargs:
                return type(parser).create(parser.tokenizer, kwargs)
            return parser
        if isinstance(parser, str):
            if name is not None:
                raise TypeError("add(): the parser name is given twice")
            name = parser
        elif parser is not None:
            raise TypeError(
                f"add(): parser must be a ReasoningParser or a parser name, "
                f"not {type(parser).__name__}"
            )
        if name is None:
            raise TypeError("add() needs a parser, or name= and tokenizer=")
        if tokenizer is None:
            raise TypeError(f"add(): parser name {name!r} needs tokenizer=")
        return create_parser_sync(name, tokenizer, kwargs)

    def _vector_group(self, p: ReasoningParser) -> tuple[int | None, bool]:
        """The request's table group (None: only its own parser routes it), and whether it
        is a hold-back family that drops to its parser for the tokens a table cannot
        decide. A parser that records what it saw for ``finish()``
        (``may_return_reasoning_as_content`` with text markers) sees every token."""
        cls = type(p)
        if cls.stream is not ReasoningParser.stream or cls.finish is not ReasoningParser.finish:
            return None, False
        machine = p.machine
        if machine.vectorizable:
            return self._tables.group(machine), False
        if not _hold_back(machine) or p.may_return_reasoning_as_content:
            return None, False
        g = self._tables.group(machine)
        return g, g is not None

    def remove(self, request_id: int) -> None:
        """Free the request's slot at once (finished, cancelled or failed alike)."""
        slot = self._slot(request_id, "remove()")
        rid = int(self._rid[slot])
        del self._slot_of[rid]
        pos = int(np.searchsorted(self._sorted_ids, rid))
        self._sorted_ids = np.delete(self._sorted_ids, pos)
        self._sorted_slots = np.delete(self._sorted_slots, pos)
        group = int(self._group[slot])
        if group >= 0:
            self._tables.live[group] -= 1
        self._n_fallback -= group < 0
        self._n_hybrid -= bool(self._tab[slot]) and not self._vec[slot]
        self._tab[slot] = False
        self._n_struct -= bool(self._struct[slot])
        self._n_budget -= int(self._budget[slot]) != NO_BUDGET
        self._n_exclude -= not self._incl[slot]
        self._n_done -= bool(self._done[slot])
        self._done[slot] = False
        self._struct[slot] = False
        self._budget[slot] = NO_BUDGET
        self._incl[slot] = True
        self._parsers[slot] = None
        self._errors.pop(slot, None)
        self._free.append(slot)
        if int(self._vocab[slot]) == self._vmin:
            self._vmin = None
        self._recount()

    # ------------------------------------------------------------------ queries

    def is_vectorized(self, request_id: int) -> bool:
        """Whether every token of the request is routed by table lookups over the batch
        (single-token markers). False for hold-back families, whose tokens go by table
        only while nothing is held (see the module docs), and for custom machines."""
        return bool(self._vec[self._slot(request_id, "is_vectorized()")])

    def _reasoning(self, slot: int) -> bool:
        return bool(self._row[slot] & _REASONING_BIT)

    def _set_reasoning(self, slot: int, reasoning: bool) -> None:
        self._row[slot] = (int(self._row[slot]) & ~8) | (8 if reasoning else 0)

    def is_reasoning(self, request_id: int) -> bool:
        """Inside reasoning now (after add(): what the prompt left open)."""
        return self._reasoning(self._slot(request_id, "is_reasoning()"))

    def grammar_active(self, request_id: int) -> bool:
        """Sample the next token under the request's grammar (before the first step too)."""
        slot = self._slot(request_id, "grammar_active()")
        return bool(self._struct[slot]) and not self._reasoning(slot)

    def forced_token_ids(self, request_id: int) -> list[int]:
        """What the engine must emit next (before the first step too: budget 0)."""
        slot = self._slot(request_id, "forced_token_ids()")
        pos = int(self._fpos[slot])
        return self.forced_sequence(slot)[pos:] if pos >= 0 else []

    def budget_remaining(self, request_id: int) -> int:
        """Reasoning tokens left before the end is forced (-1: no budget); see
        :attr:`BatchStepResult.budget_remaining`."""
        slot = self._slot(request_id, "budget_remaining()")
        budget = int(self._budget[slot])
        if budget == NO_BUDGET:
            return -1
        return max(budget - (int(self._cnt[slot]) & (_TOTAL - 1)), 0)

    def forced_sequence(self, slot: int) -> list[int]:
        """The whole forced sequence of a slot: lead-in ids, then the end marker ids."""
        seq: list[int] = self._forced[slot, : int(self._flen[slot])].tolist()
        return seq

    def slot_generation(self, slot: int) -> int:
        """Bumped each time a slot is given to a new request (guards stale lookups)."""
        return int(self._gen[slot])

    def usage(self, request_id: int) -> RequestUsage:
        """Token counts so far; see :class:`RequestUsage` for what counts where."""
        return self._usage(self._slot(request_id, "usage()"))

    def _usage(self, slot: int) -> RequestUsage:
        total, reasoning = divmod(int(self._cnt[slot]), _TOTAL)
        held = int(self._held[slot])
        delimiters = int(self._dcnt[slot])
        return RequestUsage(
            completion_tokens=total,
            reasoning_tokens=reasoning,
            content_tokens=total - reasoning - delimiters - held,
            delimiter_tokens=delimiters,
            held_tokens=held,
            reasoning_ended=not self._reasoning(slot),
            budget_exhausted=bool(self._hit[slot]),
        )

    # ------------------------------------------------------------------ step

    def _const(self, kind: str, size: int) -> np.ndarray[Any, Any]:
        """Shared read-only filler arrays (all False / all -1 / all 0) for results whose
        batch has no structured, budgeted or hold-back requests."""
        arr = self._consts.get(kind)
        if arr is None or arr.shape[0] < size:
            n = max(size, 2 * self._cap, 64)
            if kind == "false":
                arr = np.zeros(n, np.bool_)
            else:
                arr = np.full(n, -1 if kind == "minus1" else 0, np.int64)
            arr.setflags(write=False)
            self._consts[kind] = arr
        return arr[:size]

    def _lookup(self, rids: IntArray) -> IntArray:
        """Slots of the step's requests; all checks happen before any state changes."""
        n = rids.shape[0]
        # Most steps repeat the previous step's requests: compare raw bytes (one memcmp;
        # np.array_equal costs more than the whole table lookup for small batches).
        key = rids.tobytes()
        if self._cache_version == self._version and key == self._cache_ids:
            return self._cache_slots
        if not n:
            return np.zeros(0, np.int64)
        sorted_ids = self._sorted_ids
        if not sorted_ids.shape[0]:
            raise UnknownRequestError(int(rids[0]), "step()")
        pos = np.searchsorted(sorted_ids, rids)
        np.minimum(pos, sorted_ids.shape[0] - 1, out=pos)
        found = sorted_ids[pos] == rids
        if not found.all():
            raise UnknownRequestError(int(rids[int(np.argmin(found))]), "step()")
        slots = self._sorted_slots[pos]
        ar = self._arange(n)
        mark = self._mark
        mark[slots] = ar
        back = mark[slots]
        if not np.array_equal(back, ar):
            i = int(np.argmax(back != ar))
            raise InvalidStepError(f"request {int(rids[i])} appears more than once in request_ids")
        if self._n_done:
            done = self._done[slots]
            if done.any():
                raise RequestFinishedError(int(rids[int(np.argmax(done))]), "step()")
        self._cache_ids = key
        self._cache_slots = slots
        self._cache_version = self._version
        return slots

    def _arange(self, n: int) -> IntArray:
        ar = self._consts.get("arange")
        if ar is None or ar.shape[0] < n:
            ar = np.arange(max(n, 2 * self._cap, 64), dtype=np.int64)
            ar.setflags(write=False)
            self._consts["arange"] = ar
        return ar[:n]

    def _vocab_floor(self) -> int:
        if self._vmin is None:
            self._vmin = int(self._vocab[self._sorted_slots].min()) if self._slot_of else 0
        return self._vmin

    def _check_tokens(
        self,
        toks: IntArray,
        slots: IntArray,
        counts: IntArray | None,
        offs: IntArray,
        rids: IntArray,
    ) -> None:
        # One reduction: as unsigned, a negative id is larger than any vocabulary.
        if int(toks.view(np.uint64).max()) < self._vocab_floor():
            return
        tok_slots = slots if counts is None else np.repeat(slots, counts)
        bad = (toks < 0) | (toks >= self._vocab[tok_slots])
        if not bad.any():
            return
        pos = int(np.argmax(bad))
        row = int(np.searchsorted(offs, pos, side="right")) - 1
        slot = int(tok_slots[pos])
        parser = self._parsers[slot]
        raise BatchTokenError(
            int(toks[pos]),
            pos,
            int(self._vocab[slot]),
            int(rids[row]),
            parser.name if parser is not None else "?",
        )

    def step(
        self,
        request_ids: Sequence[int] | np.ndarray[Any, Any],
        token_ids: Sequence[int] | np.ndarray[Any, Any],
        offsets: Sequence[int] | np.ndarray[Any, Any],
    ) -> BatchStepResult:
        """Label one engine step's new tokens for the whole batch.

        ``token_ids[offsets[i]:offsets[i + 1]]`` are the new tokens of ``request_ids[i]``
        (0 for a paused request, k under speculative decoding). Invalid input raises
        before any request's state changes.
        """
        rids = _int_array(request_ids, "request_ids")
        toks = _int_array(token_ids, "token_ids")
        offs = _int_array(offsets, "offsets")
        n = rids.shape[0]
        m = toks.shape[0]
        if offs.shape[0] != n + 1:
            raise InvalidStepError(
                f"offsets must have len(request_ids) + 1 = {n + 1} entries, got {offs.shape[0]}"
            )
        uniform = m == n and offs.tobytes() == self._arange(n + 1).tobytes()
        counts: IntArray | None = None
        if not uniform:
            if offs[0] != 0:
                raise InvalidStepError(f"offsets[0] must be 0, got {int(offs[0])}")
            if offs[-1] != m:
                raise InvalidStepError(
                    f"offsets[-1] must be len(token_ids) = {m}, got {int(offs[-1])}"
                )
            counts = np.diff(offs)
            if n and int(counts.min()) < 0:
                i = int(np.argmax(counts < 0))
                raise InvalidStepError(
                    f"offsets must be non-decreasing: offsets[{i + 1}] = {int(offs[i + 1])} "
                    f"< offsets[{i}] = {int(offs[i])}"
                )
        slots = self._lookup(rids)
        if m:
            self._check_tokens(toks, slots, counts, offs, rids)

        # ---- validated: from here on the batch changes
        res = BatchStepResult(self)
        errors: dict[int, RequestFailedError] = {}
        gmask: BoolArray | None = None
        vrows: IntArray | None = None
        frows: IntArray | None = None
        if self._n_fallback:  # custom machines or parsers: only their own parser
            table = self._tab[slots]
            if not table.all():
                vrows = np.flatnonzero(table)
                frows = np.flatnonzero(~table)
        # Hold-back rows left aside by the table (a HOLD token, or tokens held): (rows,
        # index of their first token left aside). Their parser takes it from there.
        drops: list[tuple[IntArray, IntArray]] = []
        if uniform and vrows is None and m:
            labels, before, aside = self._advance(slots, toks)
            if self._n_struct:
                gmask = self._struct[slots] & ((before & _REASONING_BIT) == 0)
            if aside is not None:
                drops.append((aside, aside))
        elif uniform:  # one token per request: a single table pass over some of them
            labels = np.empty(m, np.uint8)
            if self._n_struct:
                gmask = np.zeros(m, np.bool_)
            if vrows is not None and vrows.shape[0]:
                vs = slots[vrows]
                lab, before, aside = self._advance(vs, toks[vrows])
                labels[vrows] = lab
                if gmask is not None:
                    gmask[vrows] = self._struct[vs] & ((before & _REASONING_BIT) == 0)
                if aside is not None:
                    drops.append((vrows[aside], vrows[aside]))
        else:
            labels = np.empty(m, np.uint8)
            if self._n_struct:
                gmask = np.zeros(m, np.bool_)
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
                lab, before, aside = self._advance(sj, toks[pj])
                labels[pj] = lab
                if gmask is not None:
                    gmask[pj] = self._struct[sj] & ((before & _REASONING_BIT) == 0)
                if aside is not None:
                    # These rows leave the table path at position j for this step.
                    at = aside if w is None else w[aside]
                    if not drops:
                        vcnt = vcnt.copy()
                    vcnt[at] = j
                    kmin = min(kmin, j)
                    drops.append((at if vrows is None else vrows[at], pj[aside]))
        if drops and gmask is not None:
            for _, pos in drops:  # the parser's part: it sets the grammar mask itself
                gmask[pos] = False
        if self._errors:  # failed requests are reported at every step until removed
            for row in np.flatnonzero(self._failed[slots]).tolist():
                errors[int(rids[row])] = self._errors[int(slots[row])]
        if frows is not None or drops:
            # Per-request rows from their first token, then hold-back rows from the
            # token that needed holding (their earlier tokens are decided above).
            parts = [(frows, offs[frows])] if frows is not None else []
            parts += drops
            if len(parts) == 1:
                frows, fstart = parts[0]
            else:
                frows = np.concatenate([r for r, _ in parts])
                fstart = np.concatenate([p for _, p in parts])
            self._step_fallback(res, frows, fstart, slots, rids, toks, offs, labels, gmask, errors)
        self._finish_result(res, rids, toks, offs, slots, labels, gmask, errors)
        return res

    def _advance(self, s: IntArray, t: IntArray) -> tuple[LabelArray, IntArray, IntArray | None]:
        """One token for each of the (distinct, non-empty) slots ``s``: labels, the rows
        before (their reasoning bit is the state the token was generated in), and which
        entries were left aside (None: none).

        A token that a hold-back request cannot route by table (a HOLD token, or the
        request has tokens held) is left aside: label HELD, state and counts unchanged,
        and the caller hands that request to its own parser from that token on."""
        row = self._row[s]
        g = self._single
        tables = self._tables
        kind = tables.luts[g][t] if g >= 0 else tables.lut[self._lutb[s] + t]
        idx = row + kind
        lab = tables.lab[idx]
        new = tables.nxt[idx]
        self._row[s] = new
        self._cnt[s] += tables.inc[idx]
        aside: IntArray | None = None
        top = int(lab.max())
        if top >= DELIMITER:  # markers and tokens left aside are rare: handled aside
            if top == HELD:
                aside = np.flatnonzero(lab == HELD)
            w = np.flatnonzero(lab == DELIMITER)
            if w.shape[0]:
                self._dcnt[s[w]] += 1
        if self._n_budget:
            reasoning = (new & _REASONING_BIT) != 0
            if aside is None:
                self._budget_step(s, t, reasoning)
            else:  # a token left aside is the parser's to count and to force on
                on = np.flatnonzero(lab != HELD)
                self._budget_step(s[on], t[on], reasoning[on])
        return lab, row, aside

    def _budget_step(self, s: IntArray, t: IntArray, reasoning: BoolArray) -> None:
        """Advance the forced position on forced tokens; start forcing when the budget is
        spent; a request that left reasoning is never forced.

        Only requests that have spent their budget can be forced (counts never go down),
        so the common step, where none has, costs one comparison."""
        spent = (self._cnt[s] & _LOW) >= self._budget[s]
        if not spent.any():
            return
        w = np.flatnonzero(spent)
        s, t, reasoning = s[w], t[w], reasoning[w]
        fp = self._fpos[s]
        forcing = fp >= 0
        if forcing.any():
            width = self._forced.shape[1]
            expect = self._forced.reshape(-1)[s * width + np.clip(fp, 0, width - 1)]
            fp = fp + (forcing & (t == expect))
        start = reasoning & (fp < 0)
        fp = np.where(reasoning, np.where(start, 0, fp), -1)
        over = fp >= self._flen[s]
        if over.any():  # the whole sequence went out and reasoning goes on: force the end
            fp = np.where(over, self._lead[s], fp)
        self._fpos[s] = fp
        if start.any():
            self._hit[s[start]] = True

    def _step_fallback(
        self,
        res: BatchStepResult,
        frows: IntArray,
        fstart: IntArray,
        slots: IntArray,
        rids: IntArray,
        toks: IntArray,
        offs: IntArray,
        labels: LabelArray,
        gmask: BoolArray | None,
        errors: dict[int, RequestFailedError],
    ) -> None:
        """The requests that go through their own parser (custom machines, and hold-back
        families from the token that needs holding or while tokens are held), from token
        ``fstart`` of each row to its end: a hold-back row's earlier tokens were decided by
        table in this step, with nothing held, so its parser's cursor is still empty and
        its state is the one the table left. The loop itself is plain Python around
        ``parser.stream()``; slot fields are read and written back in one gather / scatter
        each, or, for the few rows of a step where hold-back requests meet a HOLD token,
        element by element (a numpy call on a tiny array costs more than the element).

        Only what this batch uses is read (budgets, grammars)."""
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
            rows0 = get(self._row)
            state_l = [bool(r & 8) for r in rows0]
        else:
            state_l = ((self._row[fs] & _REASONING_BIT) != 0).tolist()
        held_l: list[int] = get(self._held)
        budgeted_any = bool(self._n_budget)
        if budgeted_any:
            fpos_l = get(self._fpos)
            hit_l = get(self._hit)
            budget_l = get(self._budget)
            reasoning_l = [c & (_TOTAL - 1) for c in get(self._cnt)]
        else:
            fpos_l, hit_l, budget_l, reasoning_l = [-1] * n, [False] * n, [NO_BUDGET] * n, [0] * n
        struct_l = get(self._struct) if self._n_struct else [False] * n
        failed = self._errors  # the failed slots
        add_cnt = [0] * n
        add_delim = [0] * n
        out = bytearray()
        grammar: list[int] = []
        all_toks = toks.tolist() if 4 * n >= toks.shape[0] else None
        parsers = self._parsers
        failed_heads: list[tuple[int, int]] = []

        def fail(i: int, exc: Exception) -> None:
            """Freeze the request; like every token of its step, the ones decided by table
            before it are FAILED, uncounted and outside the grammar."""
            slot, row, a0, a = slot_l[i], row_l[i], first_l[i], start_l[i]
            parser = parsers[slot]
            rid = int(rids[row])
            err = RequestFailedError(rid, parser.name if parser is not None else "?", exc)
            self._failed[slot] = True
            self._errors[slot] = err
            errors[rid] = err
            if a0 != a:
                head = labels[a0:a].tobytes()
                add_cnt[i] = -((a - a0) * _TOTAL + head.count(REASONING))
                add_delim[i] = -head.count(DELIMITER)
                failed_heads.append((a0, a))

        for i in range(n):
            slot, row, a, b = slot_l[i], row_l[i], start_l[i], end_l[i]
            if slot in failed:  # reported at every step until the request is removed
                errors[int(rids[row])] = self._errors[slot]
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
                    add_cnt[i] = (b - a) * _TOTAL + (lab == REASONING)
                    add_delim[i] = int(lab == DELIMITER)
                else:
                    add_cnt[i] = (b - a) * _TOTAL + labs_b.count(REASONING)
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
            seq = self.forced_sequence(slot) if budgeted else []
            ids: list[int] = []
            labs = bytearray()
            spill: list[Spill] = []
            gm: list[bool] = []
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
                            fp = int(self._lead[slot])
            except Exception as exc:  # isolate: only this request fails
                fail(i, exc)
                out += bytes([FAILED]) * (b - a)
                continue
            state_l[i] = state
            held_l[i] = held
            fpos_l[i] = fp
            hit_l[i] = hit
            add_cnt[i] = len(chunk) * _TOTAL + labs.count(REASONING)
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
        # Every fallback row wrote exactly its own tokens' labels, in row order.
        if fs is None:  # few rows: element by element
            decided = bytes(out)
            o = 0
            row_a, held_a, cnt_a, dcnt_a = self._row, self._held, self._cnt, self._dcnt
            fpos_a, hit_a = self._fpos, self._hit
            for i, x in enumerate(slot_l):
                a, b = start_l[i], end_l[i]
                if b - a == 1:
                    labels[a] = decided[o]
                elif b > a:
                    labels[a:b] = np.frombuffer(decided, np.uint8, b - a, o)
                o += b - a
                # Tokens held (or a failed parser): the table leaves its tokens aside.
                side = 16 if held_l[i] or x in failed else 0
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
            sides = (held_now > 0) | self._failed[fs]
            self._row[fs] = (
                (self._row[fs] & ~(_REASONING_BIT | _ASIDE_BIT))
                | np.array(state_l, np.int64) * _REASONING_BIT
                | sides * _ASIDE_BIT
            )
            self._held[fs] = held_now
            if budgeted_any:
                self._fpos[fs] = fpos_l
                self._hit[fs] = hit_l
            self._cnt[fs] += np.array(add_cnt, np.int64)
            self._dcnt[fs] += np.array(add_delim, np.int64)
        if grammar and gmask is not None:
            gmask[grammar] = True
        for a0, a in failed_heads:
            labels[a0:a] = FAILED
            if gmask is not None:
                gmask[a0:a] = False

    def _finish_result(
        self,
        res: BatchStepResult,
        rids: IntArray,
        toks: IntArray,
        offs: IntArray,
        slots: IntArray,
        labels: LabelArray,
        gmask: BoolArray | None,
        errors: dict[int, RequestFailedError],
    ) -> None:
        n = rids.shape[0]
        res.request_ids = rids
        res.token_ids = toks
        res.offsets = offs
        res.labels = labels
        res.errors = errors
        res._slots = slots
        is_reasoning = (self._row[slots] & _REASONING_BIT) != 0
        res.is_reasoning = is_reasoning
        reasoning_tokens = self._cnt[slots] & _LOW
        res.reasoning_tokens = reasoning_tokens
        res.grammar_mask = gmask if gmask is not None else self._const("false", toks.shape[0])
        res.grammar_active = (
            self._struct[slots] & ~is_reasoning if self._n_struct else self._const("false", n)
        )
        held = self._held[slots] if self._n_fallback or self._n_hybrid else self._const("zero", n)
        res.held_tokens = held
        res._include = self._incl[slots] if self._n_exclude else None
        res._forced_pos = None
        res._gen = None
        res.next_forced_token = self._const("minus1", n)
        if self._n_budget:
            fp = self._fpos[slots]
            forcing = fp >= 0
            res.forcing = forcing
            budget = self._budget[slots]
            remaining = budget - reasoning_tokens
            np.maximum(remaining, 0, out=remaining)
            remaining[budget == NO_BUDGET] = -1
            res.budget_remaining = remaining
            if forcing.any():
                res._forced_pos = fp
                res._gen = self._gen[slots]
                width = self._forced.shape[1]
                nxt = self._forced.reshape(-1)[slots * width + np.clip(fp, 0, width - 1)]
                res.next_forced_token = np.where(forcing, nxt, -1)
        else:
            res.forcing = self._const("false", n)
            res.budget_remaining = self._const("minus1", n)

    # ------------------------------------------------------------------ finish

    def finish(self, request_id: int) -> BatchFinish:
        """End of the request's output: decide its held-back tokens and report usage.

        ``usage.reasoning_ended`` is False when the output stopped inside reasoning (e.g.
        finish_reason "length"): the model never reached its answer. The slot stays
        until :meth:`remove` (usage can still be read); stepping it again is an error.
        """
        slot = self._slot(request_id, "finish()")
        rid = int(self._rid[slot])
        if self._done[slot]:
            raise RequestFinishedError(rid, "finish()")
        if self._failed[slot]:
            raise self._errors[slot]
        ids: list[int] = []
        labels = b""
        spill: tuple[Spill, ...] = ()
        parser = self._parsers[slot]
        assert parser is not None
        if self._vec[slot]:
            usage = self._usage(slot)
            swap = _swap_requested(parser) and usage.reasoning_tokens and not usage.content_tokens
        else:
            try:
                d = parser.finish(self._reasoning(slot))
            except Exception as exc:
                err = RequestFailedError(rid, parser.name, exc)
                self._failed[slot] = True
                self._errors[slot] = err
                raise err from exc
            ids, labels, spill = d.token_ids, d.labels, d.spill
            swap = bool(getattr(d, "reasoning_as_content", False))
            self._set_reasoning(slot, d.is_still_reasoning)
            self._held[slot] = 0
            self._cnt[slot] += labels.count(REASONING)
            self._dcnt[slot] += labels.count(DELIMITER)
        if swap:
            # parse() presents a reasoning-only output as content: so does the tail, and
            # usage counts those tokens as content.
            labels = labels.translate(_AS_CONTENT)
            spill = tuple((i, b, CONTENT, a) for i, b, _, a in spill)
            self._cnt[slot] &= ~_LOW
        self._done[slot] = True
        self._fpos[slot] = -1
        self._n_done += 1
        self._version += 1
        reasoning, content = split_labels(ids, labels, bool(self._incl[slot]))
        return BatchFinish(
            reasoning, content, ids, bytes(labels), self._usage(slot), bool(swap), spill
        )


_AS_CONTENT = bytes.maketrans(bytes((REASONING,)), bytes((CONTENT,)))


def _swap_requested(p: ReasoningParser) -> bool:
    """The family returns a reasoning-only output as content under these switches
    (``ReasoningSpec.reasoning_as_content_if``); the per-request parser tracks it itself."""
    pairs: tuple[tuple[str, bool], ...] = getattr(p.machine.spec, "reasoning_as_content_if", ())
    kwargs = p.chat_template_kwargs
    return any(key in kwargs and kwargs[key] is value for key, value in pairs)

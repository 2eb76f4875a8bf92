"""Admission to the batch: a request's parser resolved, its options checked, its lane
and table group decided once, and its slot given (and taken back on removal).

Everything here runs once per request, never per token: it is the part of
:class:`~reasonspan.runtime.batch.step.ReasoningBatch` that decides what a request *is*
(its lane, its table group, its budget and forced sequence, its grammar) so that the step
only reads the answers from the slot arrays. It is written as the batch's base class so
that the step's module holds the step alone; the batch is one object, with the state
:meth:`BatchAdmission.__init__` makes, and no call is added on either path.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reasonspan.runtime.batch.budget import budget_options
from reasonspan.runtime.batch.errors import DuplicateRequestError
from reasonspan.runtime.batch.grammar import Grammar, compile_grammar
from reasonspan.runtime.batch.grammar_slots import Grammars
from reasonspan.runtime.batch.ids import as_request_id
from reasonspan.runtime.batch.lanes import PARSER, TABLE, lane_of
from reasonspan.runtime.batch.slots import Slots
from reasonspan.runtime.batch.tables import ASIDE_BIT, Tables, starts_aside
from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import build_parser_sync
from reasonspan.tokenizer.loader import LoadedTokenizer


class BatchAdmission:
    """The batch's state and the requests that come and go (see the module docs)."""

    def __init__(self, capacity: int = 64) -> None:
        self._slots = Slots(capacity)
        self._tables = Tables()
        self._single = -1
        """The one table group of the batch when it holds a single family (-1: mixed)."""
        self._grammars = Grammars()
        """The response_format matchers, by slot (``grammar_slots``)."""
        self._last_group: tuple[weakref.ref[Machine], int | None, type] | None = None
        """The table group of the last vectorizable machine admitted (``_vector_group``)."""

    def _recount(self) -> None:
        """Cache the single vectorized group when the batch holds only one family."""
        live = [g for g, n in enumerate(self._tables.live) if n]
        self._single = live[0] if len(live) == 1 else -1

    def _recount_after(self, group: int | None) -> None:
        """:meth:`_recount` after a request of ``group`` came or went, skipping the scan
        when the answer cannot have changed: a request of the single group came, or left
        while others of it stay (a request of any other group, or routed by its own
        parser, means a mixed batch either way when it comes, and may end one when it
        goes)."""
        single = self._single
        if group is None or single < 0 or group != single or not self._tables.live[group]:
            self._recount()

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
        response_format: Any = None,
    ) -> None:
        """Admit a request, seeded from its prompt (right-to-left scan of the last turn).

        ``parser`` is a created parser (used as a template: the batch keeps its own
        per-request state) or a family name with ``tokenizer=``. ``chat_template_kwargs``
        re-creates the parser's family with those switches. ``thinking_token_budget``
        bounds the reasoning tokens (None: unlimited); when it is spent the request must
        emit ``budget_lead_in`` (encoded once, here) and then the end marker.
        ``structured_output``: the request's grammar waits for the end of reasoning.
        ``response_format`` (OpenAI's ``json_schema`` / ``json_object``, or ``regex`` /
        ``grammar``; needs the ``grammar`` extra) puts a grammar engine behind that gate:
        the batch compiles a matcher for the request (a format that does not compile
        raises here, and nothing changes), feeds it every token generated under the
        grammar, and fills its next-token bitmask (:meth:`fill_token_bitmask`); it implies
        ``structured_output``.
        ``include_reasoning=False``: reasoning is generated and counted but never handed
        out by ``split()`` / ``finish()``.
        """
        rid = as_request_id(request_id, "add()")
        if rid in self._slots.slot_of:
            raise DuplicateRequestError(rid)
        p = self._resolve_parser(parser, name, tokenizer, chat_template_kwargs)
        include = (
            include_reasoning
            if include_reasoning is True
            else check_bool("include_reasoning", include_reasoning)
        )
        structured = (
            structured_output
            if structured_output is False
            else check_bool("structured_output", structured_output)
        )
        grammar = compile_grammar(response_format, p.tokenizer) if response_format else None
        structured = structured or grammar is not None
        if grammar is not None:
            _wait_for_gate(grammar, p, prompt_token_ids)
        budget, seq, lead_len = budget_options(p, thinking_token_budget, budget_lead_in)
        reasoning = (
            p.is_prompt_in_reasoning(prompt_token_ids)
            if prompt_token_ids is not None
            else p.default_reasoning
        ) and p.thinking_enabled
        if grammar is not None and grammar.wait_for < 0 and p.thinking_enabled and not reasoning:
            _allow_opener(grammar, p)
        group, hybrid = self._vector_group(p)
        owned = p if group is not None and not hybrid else _own_copy(p)

        # ---- validated: from here on the batch changes
        lutb = 0 if group is None else self._tables.base[group]
        slot = self._slots.occupy(
            rid, owned, group, lutb, hybrid, reasoning, budget, seq, lead_len, structured, include
        )
        if hybrid and starts_aside(p.machine):
            self._slots.row[slot] |= ASIDE_BIT  # the output's start is its parser's to decide
        grammars = self._grammars
        if grammar is not None or slot >= grammars.has.shape[0]:
            grammars.put(slot, grammar)  # a reused slot's entry was cleared by remove()
        if group is not None:
            self._tables.live[group] += 1
        self._recount_after(group)

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
        return build_parser_sync(name, tokenizer, kwargs)

    def _vector_group(self, p: ReasoningParser) -> tuple[int | None, bool]:
        """The request's table group (None: only its own parser routes it), and whether it
        is a hold-back family that drops to its parser for the tokens a table cannot
        decide: its lane (:func:`~reasonspan.runtime.batch.lanes.lane_of`), given room in
        the tables."""
        machine = p.machine
        last = self._last_group
        if last is not None and last[0]() is machine and last[2] is type(p):
            return last[1], False
        lane = lane_of(p)
        if lane == PARSER:
            return None, False
        g = self._tables.group(machine)
        if lane == TABLE:
            # Most requests use the previous one's machine: skip the weak-dict lookup.
            # Dropped when a group is released (group numbers are reused then).
            self._last_group = (weakref.ref(machine), g, type(p))
            return g, False
        return g, g is not None

    def remove(self, request_id: int) -> None:
        """Free the request's slot at once (finished, cancelled or failed alike)."""
        sl = self._slots
        slot = sl.slot(request_id, "remove()")
        group = sl.release(slot)
        if group >= 0:
            tables = self._tables
            tables.live[group] -= 1
            if not tables.live[group]:
                if tables.park(group):
                    # The flat lookup table was repacked: move the live slots' offsets.
                    every = sl.live_slots()
                    live = every[sl.group[every] >= 0]
                    base = np.asarray(tables.base, np.int64)
                    sl.lutb[live] = base[sl.group[live]]
                last = self._last_group
                if last is not None and last[1] is not None and tables.is_released(last[1]):
                    # Parking released the remembered group, whose number may now go to
                    # another machine (a parked one keeps its machines: one request at
                    # a time keeps the shortcut).
                    self._last_group = None
        grammars = self._grammars
        if grammars.has[slot]:  # add() sized ``has`` for every slot it gave out
            grammars.put(slot, None)
        self._recount_after(group if group >= 0 else None)


def check_bool(key: str, value: object) -> bool:
    """An option that must be a bool, or a clear error."""
    if not isinstance(value, bool):
        raise InvalidOptionError(key, value, "a bool")
    return value


def _own_copy(p: ReasoningParser) -> ReasoningParser:
    """A parser of the request's own (the hold-back and parser lanes keep per-request
    state in it): the same class, tokenizer, machine, switches and default state."""
    return type(p)(
        p.tokenizer, p.machine, p.chat_template_kwargs, default_reasoning=p.default_reasoning
    )


def _wait_for_gate(
    grammar: Grammar, p: ReasoningParser, prompt: Sequence[int] | np.ndarray[Any, Any] | None
) -> None:
    """A family whose turn opens with a header that is neither reasoning nor answer
    (harmony) names the token that ends it: the grammar waits for it."""
    gate = p.grammar_gate_token
    if gate is not None:
        wait = gate(prompt if prompt is not None else [])
        grammar.wait_for = -1 if wait is None else int(wait)


def _allow_opener(grammar: Grammar, p: ReasoningParser) -> None:
    """A family whose model opens its reasoning block itself gets its start marker
    allowed beside the grammar at the first position (``grammar_slots``)."""
    starts = p.machine.spec.start
    opener = p.tokenizer.single_token_id(starts[0]) if starts else None
    grammar.opener = -1 if opener is None else opener

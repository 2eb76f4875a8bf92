"""The per-request parser: the MAX-style contract, built on a compiled :class:`Machine`.

A parser object is cheap (a reference to the shared machine plus a few held tokens), so a
server creates one per request, or keeps one per slot and calls ``reset()``. This module
is the per-token side (``stream``, ``finish``, ``parse``, snapshots); how a parser is
built is :mod:`.construction`, what its labels become is :mod:`.outputs`, and a whole
output's result is :mod:`.whole`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import msgspec
import numpy as np

from reasonspan.runtime.core.ids import check_container, token_ids
from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL, split_labels
from reasonspan.runtime.core.machine import Machine, Spill
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec
from reasonspan.runtime.parser.arguments import reasoning_arg, swap_requested
from reasonspan.runtime.parser.construction import (
    ParserConstruction,
    StartStateSource,
    set_start_state_source,
)
from reasonspan.runtime.parser.outputs import ParserOutputs
from reasonspan.runtime.parser.snapshots import cursor_layout
from reasonspan.runtime.parser.whole import SAW_REASONING, channels_seen, parse_output
from reasonspan.runtime.text.citations import channel_formatter
from reasonspan.runtime.text.decoder_states import DecoderState
from reasonspan.runtime.text.results import ParsedReasoningDelta, ParseResult
from reasonspan.runtime.toolcalls import Tools
from reasonspan.tokenizer.loader import LoadedTokenizer

__all__ = ["ReasoningParser", "StartStateSource", "TokenIds", "set_start_state_source"]

TokenIds = Sequence[int] | np.ndarray


_LABEL_BYTES = tuple(bytes((label,)) for label in range(5))
_CUT = int(MarkerKind.CUT)

_HIT_CAP = 1 << 14
"""Most 1-token deltas kept per machine and start state: the tokens of ordinary text
repeat (a few thousand ids make up most of any output), so a bounded table serves nearly
every step while its memory stays a few MB whatever the server runs through it."""

_NO_HITS: dict[int, ParsedReasoningDelta] = {}
"""The table of a parser whose fast path is off: always empty, never written."""


class _Shared:
    """What every parser on one machine computes once and shares (``Machine.parser_shared``):
    its text formatters, a fresh decoder's plain channels, and the 1-token deltas of the
    fast path, one table per start state (``hits[is_reasoning][token id]``). A delta there
    is a frozen Struct whose lists are returned to every caller that streams the same lone
    token in the same state: the contract already says to treat them as read-only."""

    __slots__ = ("cfmt", "fresh", "hits", "kept", "rfmt")

    def __init__(self, spec: ReasoningSpec) -> None:
        self.rfmt = channel_formatter(spec.reasoning_trim, spec.citations, "reasoning")
        self.cfmt = channel_formatter(spec.content_trim, spec.citations, "content")
        self.fresh: dict[tuple[bool, bool], DecoderState] = {}
        """A fresh decoder's state, by ``(skip_special_tokens, call_gaps)``
        (:meth:`ReasoningParser.fresh_state`)."""
        self.kept: _Shared | None = None
        """The same for the parsers that keep layout whitespace
        (:meth:`ReasoningParser.keep_whitespace`), made when the first one asks."""
        self.hits: tuple[dict[int, ParsedReasoningDelta], dict[int, ParsedReasoningDelta]] = (
            {},
            {},
        )


class ReasoningParser(ParserConstruction, ParserOutputs):
    """Base of every family's parser. A subclass sets ``spec`` and, rarely, overrides a hook.

    Hooks a family may override: :meth:`resolve_switches` (how chat_template_kwargs switch
    thinking), :meth:`compile` (a custom machine for formats a spec cannot express), and
    the output hooks of :class:`~.outputs.ParserOutputs` (a tool-call reader, budget and
    grammar markers).
    """

    spec: ClassVar[ReasoningSpec]

    __slots__ = (
        "_cfmt",
        "_cursor",
        "_default",
        "_fast",
        "_fresh",
        "_hit_c",
        "_hit_r",
        "_hits",
        "_last",
        "_lut",
        "_machine",
        "_rfmt",
        "_route_one",
        "_rows",
        "_seen",
        "_swap",
        "_vocab",
        "chat_template_kwargs",
        "tokenizer",
    )

    def __init__(
        self,
        tokenizer: LoadedTokenizer,
        machine: Machine,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        *,
        default_reasoning: bool | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self._machine = machine
        self._cursor = machine.new_cursor()
        self._default = (
            machine.turn_start_reasoning
            if default_reasoning is None
            else bool(default_reasoning) and machine.thinking
        )
        self._last = self._default
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        # The 1-token fast path serves any machine that routes with the base tables;
        # tokens that may begin a multi-token marker (HOLD) take the general path.
        self._fast = type(machine).run is Machine.run
        """The 1-token fast path; off once a cut marker passed (every later token is a
        DELIMITER, which the general path decides) and with ``reasoning_as_content_if``."""
        self._lut = machine.lut
        # _rows[is_reasoning][kind] -> (label, still_reasoning, label as bytes)
        start_rows = (0, 1 if machine.thinking else 0)
        self._rows = tuple(
            tuple((lab, nxt == 1, _LABEL_BYTES[lab]) for lab, nxt in machine.trans[start_rows[s]])
            for s in (0, 1)
        )
        self._vocab = machine.vocab_size
        shared = machine.parser_shared
        if not isinstance(shared, _Shared):
            shared = machine.parser_shared = _Shared(machine.spec)
        self._rfmt = shared.rfmt
        self._cfmt = shared.cfmt
        self._fresh = shared.fresh
        self._hits = shared.hits
        # reasoning_as_content_if: remember which channels this request has fed, so that
        # finish() can tell the stream what parse() does (the general path records it).
        self._swap = swap_requested(machine.spec, self.chat_template_kwargs)
        self._seen = 0
        if self._swap:
            self._fast = False
        if machine.has_lead:
            # The output's first tokens follow the family's lead rule (Machine._lead):
            # the table fast path waits until the output has started.
            self._fast = False
        # A custom machine may decide a lone ordinary token cheaply too (Machine.route_one).
        custom = type(machine).route_one is not Machine.route_one
        self._route_one = machine.route_one if custom and not self._swap else None
        self._sync_hits()

    # ------------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def machine(self) -> Machine:
        return self._machine

    @property
    def thinking_enabled(self) -> bool:
        return self._machine.thinking

    @property
    def may_return_reasoning_as_content(self) -> bool:
        """True when this request's switches ask for the swap of ``reasoning_as_content_if``
        (nemotron_v3): only then can ``finish()`` set ``reasoning_as_content``, so a batch
        runtime routes such requests through :meth:`stream`, which records what it saw."""
        return self._swap

    @property
    def default_reasoning(self) -> bool:
        """The state at the start of an assistant turn when no prompt is available: from
        the model's chat template when the parser was built on a folder that has one, else
        the family's documented default."""
        return self._default

    # ------------------------------------------------------------------ the contract

    # ------------------------------------------------------------------ the contract

    def keep_whitespace(self) -> None:
        """Keep in the text the whitespace the family's trims take off next to markers
        (the newlines a template writes after ``<think>`` and around ``</think>``, a space
        after a header): the text then follows engines that keep that layout, as vLLM's
        parsers do (the vLLM plugin's ``vllm`` text mode). Labels, token counts and calls
        do not change, nor the family's label trims, prefixes and joins
        (:meth:`Trim.without_whitespace`); every text this parser gives (``parse()``, its
        decoders, a ``TextSplitter``, the runtime) follows it, and ``reset()`` keeps it.
        """
        machine = self._machine
        shared = machine.parser_shared
        assert isinstance(shared, _Shared)
        kept = shared.kept
        if kept is None:
            spec = machine.spec
            kept = shared.kept = _Shared(
                msgspec.structs.replace(
                    spec,
                    reasoning_trim=spec.reasoning_trim.without_whitespace(),
                    content_trim=spec.content_trim.without_whitespace(),
                )
            )
        self._rfmt, self._cfmt, self._fresh = kept.rfmt, kept.cfmt, kept.fresh

    def reset(self) -> None:
        """Forget held tokens (and a cut): call between requests (or after an error)."""
        self._cursor.clear()
        self._cursor.started = False
        self._cursor.lead_at = -1
        self._cursor.cut = False
        self._fast = type(self._machine).run is Machine.run and not self._swap
        self._last = self._default
        self._seen = 0
        if self._machine.has_lead:
            self._refresh_fast()
        self._sync_hits()

    @property
    def output_cut(self) -> bool:
        """A cut marker (``ReasoningSpec.cut``) ended this request's output: every later
        token is a DELIMITER."""
        return self._cursor.cut

    def is_prompt_in_reasoning(self, prompt_token_ids: TokenIds) -> bool:
        """Is the model inside a reasoning block when it starts generating?

        A pure right-to-left scan for the last marker of the current assistant turn; an
        old ``</think>`` in the history behind the turn start never decides it.
        """
        check_container(prompt_token_ids, "prompt_token_ids")
        return self._machine.prompt_in_reasoning(prompt_token_ids)

    def stream(
        self, delta_token_ids: TokenIds, is_currently_reasoning: bool = True
    ) -> ParsedReasoningDelta:
        """Label the new tokens of one request. Invalid input raises before any state changes.

        ``is_currently_reasoning`` is a bool (what the caller tracked), or None for the state
        this parser tracked itself, as in :meth:`finish`; anything else is refused.

        The returned lists may share one list object, with each other and with earlier
        results; treat them as read-only."""
        # Plain decoding (one token per step) is the common case in a server: ``t`` is the
        # lone token of a plain list delta, else None.
        t = (
            delta_token_ids[0]
            if type(delta_token_ids) is list and len(delta_token_ids) == 1
            else None
        )
        if type(t) is int:
            # A lone ordinary token in a given state always makes the same delta, so the
            # fast path is one table lookup (the table holds only tokens that cannot begin a
            # marker, and is empty while the fast path is off or tokens are held).
            if is_currently_reasoning is True:
                got = self._hit_r.get(t)
            elif is_currently_reasoning is False:
                got = self._hit_c.get(t)
            else:
                got = None
            if got is not None:
                self._last = got.is_still_reasoning
                return got
        if is_currently_reasoning is not True and is_currently_reasoning is not False:
            is_currently_reasoning = reasoning_arg(
                is_currently_reasoning, self._last, "is_currently_reasoning"
            )
        if type(t) is int and 0 <= t < self._vocab:
            row = -1  # the table's row (0, 1) or 2 (a custom machine's route_one) decided t
            if self._fast:
                k = self._lut[t]
                # Kinds from CUT up (a cut marker, HOLD tokens) take the general path.
                if k < _CUT and not self._cursor.held:
                    row = 1 if is_currently_reasoning else 0
                    label, still, label_bytes = self._rows[row][k]
            elif self._route_one is not None:
                got_one = self._route_one(t, is_currently_reasoning, self._cursor)
                if got_one is not None:
                    row = 2
                    label, still = got_one
                    label_bytes = _LABEL_BYTES[label]
            if row >= 0:
                self._last = still
                one = [t]
                got = ParsedReasoningDelta(
                    one,
                    label_bytes,
                    one if label == REASONING else [],
                    one if label in (CONTENT, TOOL) else [],
                    still,
                    0,
                    (),
                    self._rfmt,
                    self._cfmt,
                )
                if row < 2 and len(hits := self._hits[row]) < _HIT_CAP:
                    hits[t] = got
                return got
        toks = token_ids(delta_token_ids, self._vocab, "delta_token_ids")
        ids: list[int] = []
        labels = bytearray()
        spill: list[Spill] = []
        machine = self._machine
        state = machine.run(toks, is_currently_reasoning, self._cursor, ids, labels, spill)
        if machine.has_lead and not self._fast:
            self._refresh_fast()
        return self._delta(ids, labels, state, spill)

    def _refresh_fast(self) -> None:
        """The 1-token fast path serves a lead-rule family once its output has started."""
        machine = self._machine
        self._fast = (
            type(machine).run is Machine.run
            and not self._swap
            and not self._cursor.cut
            and (not machine.has_lead or self._cursor.started)
        )
        self._sync_hits()

    def _sync_hits(self) -> None:
        """Point the fast path's tables at the machine's shared ones while it may serve
        (``_fast`` and nothing held), else at an empty table: whatever changes either
        (``_delta``, ``reset``, ``restore``) calls this, so a lookup needs no other check."""
        if self._fast and not self._cursor.held:
            self._hit_c, self._hit_r = self._hits
        else:
            self._hit_c = self._hit_r = _NO_HITS

    def finish(self, is_currently_reasoning: bool | None = None) -> ParsedReasoningDelta:
        """End of request: decide the held-back tokens (they did not become a marker)."""
        ids: list[int] = []
        labels = bytearray()
        spill: list[Spill] = []
        reasoning = reasoning_arg(is_currently_reasoning, self._last, "is_currently_reasoning")
        state = self._machine.flush(reasoning, self._cursor, ids, labels, spill)
        return self._delta(ids, labels, state, spill, final=True)

    def parse(
        self,
        output_token_ids: TokenIds,
        prompt_token_ids: TokenIds | None = None,
        *,
        skip_special_tokens: bool = True,
        tools: Tools | Sequence[Mapping[str, Any]] | None = None,
        tool_choice: object = None,
        finish_reason: str | None = None,
    ) -> ParseResult:
        """Non-streaming: the same labels as any streaming of the same tokens, plus text.

        With ``tools`` (the request's OpenAI ``tools``; ``tool_choice="none"`` turns it
        off) the family's tool calls are taken out of the answer as ``tool_calls``
        (:meth:`tool_call_extractor`); without, its tool markers stay in the content.

        Without a prompt the start state is :attr:`default_reasoning`. The text drops
        special tokens as a server decoding with ``skip_special_tokens=True`` does (TOOL
        markers and the tool-call format's markers stay, see :meth:`skipped_token_ids`);
        pass False to keep them all, e.g.
        when a text-based tool parser reads the content. Token ids and labels are the same
        either way.

        ``finish_reason`` (the engine's: ``"stop"``, ``"length"``, …) decides a call region
        the output leaves open: at ``"stop"`` the model ended its turn with the block
        unclosed, and it is read as it is (its calls, or its text as content); otherwise
        (``"length"`` or not given) it is a call cut by ``max_tokens``, never returned."""
        toks = token_ids(output_token_ids, self._vocab, "output_token_ids")
        start = (
            self.is_prompt_in_reasoning(prompt_token_ids)
            if prompt_token_ids is not None
            else self.default_reasoning
        )
        extractor = (
            self.tool_call_extractor(tools) if tools is not None and tool_choice != "none" else None
        )
        return parse_output(
            self,
            self._machine,
            toks,
            start,
            swap=self._swap,
            skip_special_tokens=skip_special_tokens,
            extractor=extractor,
            finish_reason=finish_reason,
        )

    # ------------------------------------------------------------------ helpers

    def _delta(
        self,
        ids: list[int],
        labels: bytearray,
        state: bool,
        spill: list[Spill],
        *,
        final: bool = False,
    ) -> ParsedReasoningDelta:
        self._last = state
        if self._cursor.cut:
            self._fast = False
        self._sync_hits()
        swap = False
        if self._swap:
            self._seen |= channels_seen(labels, spill)
            swap = final and self._seen == SAW_REASONING
        n = len(labels)
        if labels.count(REASONING) == n:
            reasoning, content = ids, []
        elif labels.count(CONTENT) == n:
            reasoning, content = [], ids
        else:
            reasoning, content = split_labels(ids, labels)
        return ParsedReasoningDelta(
            ids,
            bytes(labels),
            reasoning,
            content,
            state,
            len(self._cursor.held),
            tuple(spill),
            self._rfmt,
            self._cfmt,
            swap,
        )

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> tuple[object, ...]:
        """This request's state (held tokens, tracked state), for :meth:`restore`: the batch
        undoes a step that an exception such as KeyboardInterrupt cut short."""
        cur = self._cursor
        fields, getter, lists = cursor_layout(type(cur))
        values = list(getter(cur))
        for i in lists:
            values[i] = list(values[i])
        return fields, values, self._last, self._seen

    def restore(self, snap: tuple[object, ...]) -> None:
        """Put back a :meth:`snapshot` of this parser."""
        fields, values, last, seen = snap
        cur = self._cursor
        for f, v in zip(fields, values, strict=True):  # type: ignore[call-overload]
            setattr(cur, f, list(v) if isinstance(v, list) else v)
        self._last = last  # type: ignore[assignment]
        self._seen = seen  # type: ignore[assignment]
        if self._machine.has_lead:
            self._refresh_fast()
        self._sync_hits()

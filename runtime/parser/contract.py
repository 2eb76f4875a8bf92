"""The per-request parser: the MAX-style contract, built on a compiled :class:`Machine`.

A parser object is cheap (a reference to the shared machine plus a few held tokens), so a
server creates one per request, or keeps one per slot and calls ``reset()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Self

import anyio.to_thread
import numpy as np

from reasonspan.runtime.core.errors import InvalidOptionError, InvalidTokenError
from reasonspan.runtime.core.labels import (
    CONTENT,
    DELIMITER,
    REASONING,
    TOOL,
    TOOL_CALL,
    split_labels,
    tool_call_ids,
)
from reasonspan.runtime.core.machine import Machine, Spill
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec
from reasonspan.runtime.parser.arguments import check_container, reasoning_arg, swap_requested
from reasonspan.runtime.parser.option_keys import check_near_misses, keys_read
from reasonspan.runtime.parser.snapshots import cursor_layout
from reasonspan.runtime.text.citations import as_content, channel_formatter
from reasonspan.runtime.text.decoder_states import DecoderState
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.formatters import TextFormatterFactory
from reasonspan.runtime.text.results import ParsedReasoningDelta, ParseResult
from reasonspan.runtime.toolcalls import (
    ToolCall,
    ToolCallExtractor,
    Tools,
    as_tools,
    compile_format,
)
from reasonspan.runtime.wire.call_messages import ToolCallReader, calls_from_reader
from reasonspan.tokenizer.loader import LoadedTokenizer, as_loaded

TokenIds = Sequence[int] | np.ndarray


_KNOWN_KEYS: dict[type[Any], frozenset[str]] = {}
"""Per parser class: the chat_template_kwargs keys it reads (see ``option_keys``)."""


_LABEL_BYTES = tuple(bytes((label,)) for label in range(5))
_CUT = int(MarkerKind.CUT)
_AS_CONTENT = bytes.maketrans(bytes((REASONING,)), bytes((CONTENT,)))
_SAW_REASONING, _SAW_CONTENT = 1, 2

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

    __slots__ = ("cfmt", "fresh", "hits", "rfmt")

    def __init__(self, spec: ReasoningSpec) -> None:
        self.rfmt = channel_formatter(spec.reasoning_trim, spec.citations, "reasoning")
        self.cfmt = channel_formatter(spec.content_trim, spec.citations, "content")
        self.fresh: dict[tuple[bool, bool], DecoderState] = {}
        """A fresh decoder's state, by ``(skip_special_tokens, call_gaps)``
        (:meth:`ReasoningParser.fresh_state`)."""
        self.hits: tuple[dict[int, ParsedReasoningDelta], dict[int, ParsedReasoningDelta]] = (
            {},
            {},
        )


def _seen(labels: bytearray, spill: list[Spill]) -> int:
    """Which channels got tokens or text: ``_SAW_REASONING | _SAW_CONTENT`` bits."""
    bits = _SAW_REASONING if REASONING in labels else 0
    if CONTENT in labels or TOOL in labels or TOOL_CALL in labels:
        bits |= _SAW_CONTENT
    for _, data, channel, _ in spill:
        if data:
            bits |= _SAW_REASONING if channel == REASONING else _SAW_CONTENT
    return bits


StartStateSource = Callable[
    [type["ReasoningParser"], LoadedTokenizer, Mapping[str, Any]], bool | None
]
"""``(parser class, tokenizer, chat_template_kwargs) -> start state or None``: where a parser
built without an explicit ``default_reasoning`` learns its start state from the model's own
chat template (None: no template here, use the family's documented default)."""

_start_state_source: StartStateSource | None = None


def set_start_state_source(source: StartStateSource | None) -> StartStateSource | None:
    """Install the template profile as the source of parsers' default start state.

    Rendering a chat template belongs to the top layer (it needs jinja2 and the serving
    renderer), which this layer must not import: the top layer plugs its profile in here
    when ``reasonspan`` is imported, as the families register themselves. Returns the
    source it replaced (tests restore it)."""
    global _start_state_source
    previous = _start_state_source
    _start_state_source = source
    return previous


class ReasoningParser:
    """Base of every family's parser. A subclass sets ``spec`` and, rarely, overrides a hook.

    Hooks a family may override: :meth:`resolve_switches` (how chat_template_kwargs switch
    thinking), :meth:`compile` (a custom machine for formats a spec cannot express).
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

    # ------------------------------------------------------------------ construction

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """Return ``(thinking, prompt_start)`` for these chat_template_kwargs."""
        thinking = cls.spec.thinking_default
        for key in cls.spec.thinking_switches:
            if key in kwargs:
                value = kwargs[key]
                if not isinstance(value, bool):
                    raise InvalidOptionError(key, value, "a bool")
                thinking = value
        for key, off in cls.spec.thinking_off_when:
            value = kwargs.get(key)
            if value is not None and not isinstance(value, str):
                raise InvalidOptionError(key, value, f'a string such as "{off}"')
            if value == off:
                thinking = False
        if cls.spec.thinking_off_keeps_markers:
            return True, thinking and cls.spec.prompt_start
        return thinking, cls.spec.prompt_start

    @classmethod
    def resolve_spec(cls, tokenizer: LoadedTokenizer) -> ReasoningSpec:
        """The spec for this tokenizer: ``cls.spec`` unless a family's markers depend on
        the vocabulary (hy_v3 spells them with a checkpoint-specific suffix)."""
        return cls.spec

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.resolve_spec(tokenizer)
        return compile_machine(spec, tokenizer, thinking=thinking, prompt_start=prompt_start)

    @classmethod
    def create(
        cls,
        tokenizer: LoadedTokenizer | Any,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        *,
        default_reasoning: bool | None = None,
    ) -> Self:
        """Blocking constructor; :meth:`from_tokenizer` is the async one.

        ``default_reasoning`` is the start state when no prompt is given (``parse(ids)``,
        ``TextSplitter(parser)``). Left None, it comes from the model's chat template when
        the tokenizer was loaded from a folder that has one (the template profile, rendered
        once per tokenizer and switches, then cached), else from the family's documented
        default (:attr:`ReasoningSpec.start_source`)."""
        if chat_template_kwargs is not None and not isinstance(chat_template_kwargs, Mapping):
            raise InvalidOptionError(
                "chat_template_kwargs", chat_template_kwargs, "a mapping or None"
            )
        if default_reasoning is not None and not isinstance(default_reasoning, bool):
            raise InvalidOptionError("default_reasoning", default_reasoning, "a bool or None")
        tok = as_loaded(tokenizer)
        kwargs = dict(chat_template_kwargs or {})
        if kwargs:
            check_near_misses(kwargs, cls.option_keys(), cls.spec.name)
        machine = cls.compile(tok, kwargs)
        if default_reasoning is None and _start_state_source is not None:
            default_reasoning = _start_state_source(cls, tok, kwargs)
        return cls(tok, machine, kwargs, default_reasoning=default_reasoning)

    @classmethod
    def option_keys(cls) -> frozenset[str]:
        """The chat_template_kwargs keys this family reads (declared in the spec or read by
        its ``resolve_switches``); an unknown key close to one of them is refused as a typo."""
        known = _KNOWN_KEYS.get(cls)
        if known is None:
            spec = cls.spec
            declared = [
                *spec.thinking_switches,
                *(k for k, _ in spec.thinking_off_when),
                *(k for k, _ in spec.reasoning_as_content_if),
            ]
            known = _KNOWN_KEYS[cls] = keys_read(cls.resolve_switches, declared)
        return known

    @classmethod
    async def from_tokenizer(
        cls,
        tokenizer: LoadedTokenizer | Any,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        *,
        default_reasoning: bool | None = None,
    ) -> Self:
        """Build a parser; the first one per tokenizer compiles tables (and renders the
        chat template's profile) in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: cls.create(tokenizer, chat_template_kwargs, default_reasoning=default_reasoning)
        )

    @classmethod
    async def reasoning_end_token_id(cls, tokenizer: LoadedTokenizer | Any) -> int | None:
        """The id of the first end marker if it is a single token here (for grammar
        back-ends and budget forcing), else None."""
        tok = as_loaded(tokenizer)
        for text in cls.resolve_spec(tok).end:
            tid = tok.single_token_id(text)
            if tid is not None:
                return tid
        return None

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

    def skipped_token_ids(self) -> frozenset[int]:
        """Token ids left out of the text with ``skip_special_tokens``: the tokenizer's
        special tokens (end of sequence, ``<|im_end|>``, a turn marker), except the family's
        tool markers, which it keeps in content for the tool parser (after reasoning ended
        they are labelled CONTENT), and the pieces of its multi-token markers, so a marker
        kept in content never loses half of itself (``<|close|>think<|sep|>`` must not
        become ``think``). A token labelled TOOL is never left out, whatever it is."""
        machine = self._machine
        got = machine.skipped_ids
        if got is None:  # once per machine, shared by every parser and request on it
            tok = self.tokenizer
            pieces = {
                tid
                for marker in machine.byte_markers
                for tid in tok.encode(marker.decode("utf-8", "replace"))
            }
            kept = {t for t, k in machine.id_markers.items() if k == MarkerKind.TOOL}
            got = machine.skipped_ids = tok.special_ids - pieces - kept
        return got

    def decoder(
        self, *, skip_special_tokens: bool = True, call_gaps: bool = False
    ) -> LabelledDecoder:
        """A fresh text decoder for this parser's tokenizer and text formatters.

        ``skip_special_tokens`` (the default, as servers decode) drops special tokens from
        the text (end of sequence, ``<|im_end|>``), but never a TOOL-labelled token nor a
        piece of a multi-token marker (:meth:`skipped_token_ids`)."""
        return LabelledDecoder(
            self.tokenizer,
            self.text_formatters(),
            skip_ids=self.skipped_token_ids() if skip_special_tokens else frozenset(),
            call_gaps=call_gaps,
        )

    def fresh_state(
        self, *, skip_special_tokens: bool = True, call_gaps: bool = False
    ) -> DecoderState:
        """The state of a fresh :meth:`decoder` with these options, and the states its
        requests reach from it (``runtime/text/decoder_states.py``): its ``plain_channels()``,
        ``holds_trail()`` and ``finish()`` are worked out once per machine, as
        :meth:`skipped_token_ids` is (a fresh decoder's answers depend on nothing else), so
        a runtime admitting a request need not build the request's decoder (two byte
        decoders and two formatters) to ask it."""
        key = (skip_special_tokens, call_gaps)
        got = self._fresh.get(key)
        if got is None:
            got = self._fresh[key] = DecoderState.fresh(
                partial(self.decoder, skip_special_tokens=skip_special_tokens, call_gaps=call_gaps)
            )
        return got

    def tool_call_extractor(
        self, tools: Tools | Sequence[Mapping[str, Any]] | None = None
    ) -> ToolCallExtractor | None:
        """A fresh per-request reader of this family's tool-call regions (None when the
        family declares no :attr:`ReasoningSpec.tool_calls` format). ``tools`` (the
        request's OpenAI ``tools``) types the values of formats that write them untyped."""
        fmt = self._machine.spec.tool_calls
        if fmt is None:
            return None
        return ToolCallExtractor(compile_format(fmt, self.tokenizer), as_tools(tools))

    def tool_call_reader(self) -> ToolCallReader | None:
        """A fresh splitter of this family's TOOL_CALL tokens into calls (function name,
        argument tokens), for a server's ``tool_calls``; None for families that label no
        tool-call messages (their tool markers stay in the content, for the user's own
        tool parser)."""
        return None

    def text_formatters(self) -> tuple[TextFormatterFactory | None, TextFormatterFactory | None]:
        return self._rfmt, self._cfmt

    def end_marker_token_ids(self) -> list[int]:
        """Token ids that close reasoning when emitted, for budgets: the first end marker
        that this parser's machine matches (a family may declare end markers that only some
        of its tokenizers have, e.g. Mistral's ``[/THINK]`` or older Magistral's ``</think>``)."""
        machine = self._machine
        for text in machine.spec.end:
            tid = self.tokenizer.single_token_id(text)
            if tid is not None and tid in machine.id_markers:
                return [tid]
            if text.encode("utf-8") in machine.byte_markers:
                return self.tokenizer.encode(text)
        return []

    # ------------------------------------------------------------------ the contract

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
            if self._fast:
                k = self._lut[t]
                # Kinds from CUT up (a cut marker, HOLD tokens) take the general path.
                if k < _CUT and not self._cursor.held:
                    row = 1 if is_currently_reasoning else 0
                    label, still, label_bytes = self._rows[row][k]
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
                    hits = self._hits[row]
                    if len(hits) < _HIT_CAP:
                        hits[t] = got
                    return got
            elif self._route_one is not None:
                got_one = self._route_one(t, is_currently_reasoning, self._cursor)
                if got_one is not None:
                    label, still = got_one
                    self._last = still
                    one = [t]
                    return ParsedReasoningDelta(
                        one,
                        _LABEL_BYTES[label],
                        one if label == REASONING else [],
                        one if label in (CONTENT, TOOL) else [],
                        still,
                        0,
                        (),
                        self._rfmt,
                        self._cfmt,
                    )
        toks = self._check(delta_token_ids, "delta_token_ids")
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
    ) -> ParseResult:
        """Non-streaming: the same labels as any streaming of the same tokens, plus text.

        With ``tools`` (the request's OpenAI ``tools``; ``tool_choice="none"`` turns it
        off) the family's tool calls are taken out of the answer as ``tool_calls``
        (:meth:`tool_call_extractor`); without, its tool markers stay in the content.

        Without a prompt the start state is :attr:`default_reasoning`. The text drops
        special tokens as a server decoding with ``skip_special_tokens=True`` does (TOOL
        markers stay, see :meth:`skipped_token_ids`); pass False to keep them all, e.g.
        when a text-based tool parser reads the content. Token ids and labels are the same
        either way."""
        toks = self._check(output_token_ids, "output_token_ids")
        start = (
            self.is_prompt_in_reasoning(prompt_token_ids)
            if prompt_token_ids is not None
            else self.default_reasoning
        )
        ids: list[int] = []
        labels = bytearray()
        cursor = self._machine.new_cursor()
        spill: list[Spill] = []
        state = self._machine.run(toks, start, cursor, ids, labels, spill)
        state = self._machine.flush(state, cursor, ids, labels, spill)
        calls: list[ToolCall] = []
        extractor = (
            self.tool_call_extractor(tools) if tools is not None and tool_choice != "none" else None
        )
        if extractor is not None:
            ids, labels, spill, calls = extractor.feed(ids, labels, spill)
            tail_ids, tail_labels, tail_spill, tail_calls = extractor.finish()
            base = len(ids)
            ids = ids + tail_ids
            labels += tail_labels
            spill += [(i + base, b, c, a) for i, b, c, a in tail_spill]
            calls += tail_calls
        reasoning_ids, content_ids = split_labels(ids, labels)
        dec = self.decoder(
            skip_special_tokens=skip_special_tokens,
            call_gaps=extractor is not None and extractor.trims_gaps,
        )
        r1, c1 = dec.feed(ids, labels, spill)
        r2, c2 = dec.finish()
        r_text, c_text = r1 + r2, c1 + c2
        tool_ids = tool_call_ids(ids, labels) if TOOL_CALL in labels else []
        if tool_ids and extractor is None:
            reader = self.tool_call_reader()
            if reader is not None:
                calls = calls_from_reader(reader, self.tokenizer, ids, labels)
        citations = dec.take_citations()
        swap = self._swap and _seen(labels, spill) == _SAW_REASONING
        if swap:
            citations = as_content(citations, len(r_text))
            labels = bytearray(labels.translate(_AS_CONTENT))
            spill = [(i, b, CONTENT, a) for i, b, _, a in spill]
            reasoning_ids, content_ids = [], reasoning_ids
            r_text, c_text = "", r_text + c_text
        return ParseResult(
            token_ids=ids,
            labels=bytes(labels),
            reasoning_token_ids=reasoning_ids,
            content_token_ids=content_ids,
            reasoning=r_text if (reasoning_ids or r_text) else None,
            content=c_text if (content_ids or c_text) else None,
            reasoning_tokens=len(reasoning_ids),
            delimiter_tokens=labels.count(DELIMITER),
            reasoning_ended=not state,
            started_in_reasoning=bool(start and self.thinking_enabled),
            spill=tuple(spill),
            reasoning_as_content=swap,
            tool_call_token_ids=tool_ids,
            tool_call_text=dec.take_tool_calls() if tool_ids else None,
            tool_calls=calls,
            citations=citations,
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
            self._seen |= _seen(labels, spill)
            swap = final and self._seen == _SAW_REASONING
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

    def _check(self, ids: object, where: str) -> Sequence[int]:
        """Validate token ids before any state changes (a bad request never corrupts state),
        and return them as Python ints (numpy integers never reach a result)."""
        n = self._machine.vocab_size
        if isinstance(ids, np.ndarray):
            check_container(ids, where)
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
                bad = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
                raise InvalidTokenError(ids[bad].item(), bad, n, where)
            got: list[int] = ids.tolist()
            return got
        check_container(ids, where)
        seq: Sequence[object] = ids  # type: ignore[assignment]
        exact = True
        for i, t in enumerate(seq):
            if type(t) is int:
                if 0 <= t < n:
                    continue
            elif isinstance(t, np.integer) and 0 <= int(t) < n:
                exact = False
                continue
            raise InvalidTokenError(t, i, n, where)
        if exact:
            return seq  # type: ignore[return-value]
        return [int(t) for t in seq]  # type: ignore[call-overload]

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

"""The declarative description of a reasoning format: one frozen Struct per family.

An architecture module is little more than one of these. Everything that routes tokens
(streaming, batching, prompt seeding, budgets, usage) is compiled from the same spec, so
the parts of a server that need to agree about "is the model reasoning now?" always do.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

import msgspec

from reasonspan.runtime.core.tool_format import ToolFormat


class MarkerKind(IntEnum):
    """What a marker does when it is matched in the output (or found in the prompt)."""

    ORDINARY = 0
    START = 1  # opens reasoning; consumed
    END = 2  # closes reasoning; consumed
    TOOL = 3  # closes reasoning and stays in content for the tool parser (implicit end)
    STRIP = 4  # consumed wherever it appears, state unchanged (wrappers such as <answer>)
    TURN = 5  # start of an assistant turn: bounds the right-to-left prompt scan
    CUT = 6  # the output is over: consumed, and every later token is dropped (no text)


class Trim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Text trimming for one channel (reasoning or content), applied by its text formatter.

    Token labels stay honest: the tokens are still labelled reasoning/content; only the
    decoded text is trimmed, identically in streaming (`TextSplitter`) and in `parse()`.
    """

    prefix: str = ""
    """Emitted once, before the channel's first text (minimax_m2_append_think's ``<think>``,
    for clients that split the text themselves). Nothing is emitted for an empty channel,
    unless ``prefix_always``."""
    prefix_always: bool = False
    """The prefix is the channel's text even when nothing follows it (emitted at the end of
    the output if no text came): minimax_m2_append_think's reference parser prepends its
    ``<think>`` unconditionally."""
    label: str = ""
    """Stripped once from the start of a block that follows a marker (gemma4 ``thought\\n``)."""
    lead: str = ""
    """Characters trimmed from the start of a block that follows a marker."""
    lead_max: int = 0
    """At most this many leading characters are trimmed; 0 means all of them."""
    trail: str = ""
    """Characters trimmed from the end of a block that a marker closes."""
    trail_max: int = 0
    """At most this many trailing characters are trimmed; 0 means all of them."""
    join: str = ""
    """Written between two blocks of the channel: before the first text of a block that
    follows a marker, when the channel already has text (muse_glimmer joins its ``to=self``
    messages with ``\n``, as its reference parser does)."""

    @property
    def is_identity(self) -> bool:
        return not (self.prefix or self.label or self.lead or self.trail or self.join)

    def without_whitespace(self) -> Trim:
        """This trim less its whitespace trimming (``lead``, ``trail``): the text an engine
        shows that keeps the layout whitespace next to markers (vLLM's parsers keep the
        newlines a template writes around ``</think>``). A label, a prefix and a join are
        the family's text, not layout: they stay."""
        return msgspec.structs.replace(self, lead="", lead_max=0, trail="", trail_max=0)


TEMPLATE_NEWLINES_REASONING = Trim(lead="\n", trail="\n")
"""Reasoning text for a family whose chat template writes ``<think>\\n`` … ``\\n</think>``
and reads a turn back as ``split('</think>')[0].rstrip('\\n').split('<think>')[-1]
.lstrip('\\n')`` (Qwen3, GLM-4.5+, MiniMax M2): the newlines next to the markers are
layout, not reasoning, so an empty block ``<think>\\n\\n</think>`` has no reasoning text.
Newlines at the end of a block that no end marker closes (truncated) are kept."""

TEMPLATE_NEWLINES_CONTENT = Trim(lead="\n")
"""Content text for the same families: the template writes ``</think>\\n\\n`` and reads the
answer back as ``split('</think>')[-1].lstrip('\\n')``."""


class ReasoningSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One family's row of the model matrix, in a form the runtime compiles.

    Marker strings are resolved against each tokenizer in ``from_tokenizer``: a marker that
    is a single token there is matched by id; any other is matched on the bytes of a run of
    token ids, with hold-back (never by detokenizing).
    """

    name: str
    aliases: tuple[str, ...] = ()
    start: tuple[str, ...] = ()
    end: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    """Implicit ends: they end reasoning and stay in content (labelled TOOL)."""
    strip: tuple[str, ...] = ()
    turn: tuple[str, ...] = ()
    """Tokens that open an assistant turn; the prompt scan never looks past the last one."""
    required: tuple[str, ...] = ()
    """Markers that must be single tokens in the tokenizer (else MissingMarkerError)."""
    text_markers: tuple[str, ...] = ()
    """Markers that, where they are not one token, are matched on the bytes of a run of
    tokens. Any other marker that is not a single token is skipped for this tokenizer."""
    prompt_start: bool = True
    """With thinking on and no marker in the current turn, the model starts reasoning
    (the template prefills the start marker, or the family may omit it)."""
    thinking_default: bool = True
    thinking_switches: tuple[str, ...] = ()
    """chat_template_kwargs keys whose bool value turns thinking on or off."""
    thinking_off_when: tuple[tuple[str, str], ...] = ()
    """chat_template_kwargs ``(key, value)`` string settings that also turn thinking off,
    such as ``("reasoning_effort", "none")``."""
    thinking_off_keeps_markers: bool = False
    """Thinking off only moves the turn's start to the content: the markers stay matched,
    so a block the model writes anyway is split off the answer (MiMo, Nemotron 3,
    MiniCPM-V). False: thinking off stops matching them (the whole output is content)."""
    start_in_content: Literal["enter", "keep"] = "keep"
    """A start marker after content: re-enter reasoning, or keep it as content."""
    end_in_content: Literal["keep", "drop", "drop_leading"] = "keep"
    """An end marker after content (a stray or repeated ``</think>``): keep it as content,
    drop it, or ``drop_leading``: drop it only when it opens the output (no token before
    it), and keep any later one as content text (MiniMax M3's reference parser tolerates
    one leading stray closer; ``XXX</mm:think>YYY`` is content as written)."""
    blank_before_start: Literal["keep", "drop"] = "keep"
    """Whitespace-only text that opens an output the turn started in reasoning, before the
    model's own start marker: keep it as reasoning, or drop it with the marker (DeepSeek
    R1's reference parser drops the text before its ``<think>``: ``\n<think>x</think>y``
    has reasoning ``x``). Only blank text can be dropped: it is held back (a bounded run of
    whitespace tokens) until the start marker or any other token decides it; text that is
    not blank stays reasoning, since a stream cannot take back what it has sent."""
    turn_in_output: Literal["keep", "drop"] = "keep"
    """A turn marker in the output: text of the channel it falls in, or structure that is
    dropped (a family whose model writes message framing tokens, such as inkling's
    ``<|message_model|>``). The prompt scan treats it as a turn start either way."""
    reasoning_trim: Trim = Trim()
    content_trim: Trim = Trim()
    reasoning_as_content_if: tuple[tuple[str, bool], ...] = ()
    """chat_template_kwargs ``(key, value)`` pairs: when any is set, a response whose content
    ends up empty returns its reasoning as content (nemotron_v3). ``parse()`` applies the
    swap; a stream learns it from ``finish()`` (``ParsedReasoningDelta.reasoning_as_content``),
    because only the end of the output can tell that no content came."""
    tool_calls: ToolFormat | None = None
    """Where the family's tool calls are and how they read (None: its tool markers stay in
    the content). Used when a request offers tools (``parse(tools=...)``,
    ``TextSplitter(tools=...)``, ``ReasoningRuntime.add(tools=...)``)."""
    notes: str = ""
    """One line for the families table: the quirks the fields above do not say."""
    start_source: str = ""
    """Where the default start state (``thinking_default``, ``prompt_start``) comes from,
    for the families table: ``template: ...`` when it was checked against the official
    chat template's generation prompt (which file, how it ends), ``documented: ...`` when it
    rests on the family's documentation or its reference parser. A parser built on a model
    folder with a template takes the start state from that template instead."""
    citations: Literal["none", "cohere"] = "none"
    """Inline citation markup the model writes in its text: "cohere" takes Cohere's
    ``<co>…</co: 0:[1]>`` out of both channels' text and keeps each closed span as a
    :class:`~reasonspan.runtime.text.citations.Citation` (``ParseResult.citations``,
    ``TextSplitter.take_citations()``). Labels do not change, as with ``Trim``."""
    cut: tuple[str, ...] = ()
    """Markers after which the output is over, whatever the state (PLaMo 3's end of turn
    ``<|plamo:tag|>``, when an engine keeps generating past it): the marker is consumed
    (DELIMITER) and ends reasoning, and every token after it is labelled DELIMITER too --
    decided, counted in neither reasoning nor content tokens, never text. A cut marker
    must be one token of the vocabulary (else MissingMarkerError); the prompt scan reads
    it as an end marker."""

    def markers(self) -> list[tuple[str, MarkerKind]]:
        """All markers with their kind, in declaration order (start, end, tool, strip, turn,
        cut)."""
        out: list[tuple[str, MarkerKind]] = []
        for texts, kind in (
            (self.start, MarkerKind.START),
            (self.end, MarkerKind.END),
            (self.tool, MarkerKind.TOOL),
            (self.strip, MarkerKind.STRIP),
            (self.turn, MarkerKind.TURN),
            (self.cut, MarkerKind.CUT),
        ):
            out.extend((t, kind) for t in texts)
        return out

"""What a parser returns: one streamed delta, or the whole output's result.

Small frozen Structs (msgspec), shared by the per-request parser, the text splitter and
the batch, so none of them imports the others for their return types.
"""

from __future__ import annotations

import msgspec

from reasonspan.runtime.text.citations import Citation
from reasonspan.runtime.text.formatters import TextFormatterFactory
from reasonspan.runtime.toolcalls import ToolCall


class ParsedReasoningDelta(msgspec.Struct, frozen=True, gc=False):
    """What one ``stream()`` (or ``finish()``) call decided.

    ``token_ids``/``labels`` are the tokens decided by this call, in order: a token held
    back by an earlier call (it might have begun a multi-token marker) appears in the call
    that decides it, and ``held_token_count`` says how many are still undecided.
    """

    token_ids: list[int]
    labels: bytes
    reasoning_token_ids: list[int]
    content_token_ids: list[int]
    is_still_reasoning: bool
    held_token_count: int = 0
    spill: tuple[tuple[int, bytes, int, int], ...] = ()
    """Text of tokens only partly covered by a marker: ``(index, bytes, label, after)``; see
    :data:`reasonspan.runtime.core.machine.Spill`. Empty unless a family has text markers."""
    reasoning_text_formatter: TextFormatterFactory | None = None
    content_text_formatter: TextFormatterFactory | None = None
    reasoning_as_content: bool = False
    """Only on the delta from ``finish()``, for a family with ``reasoning_as_content_if``
    switched on (nemotron_v3) when the output produced reasoning but no content: present
    everything this request streamed as reasoning as its content instead (and count no
    reasoning tokens). ``parse()`` of the same output has already done this swap."""


class ParseResult(msgspec.Struct, frozen=True):
    """The non-streaming answer for a whole output; the concatenation of the streamed deltas."""

    token_ids: list[int]
    labels: bytes
    reasoning_token_ids: list[int]
    content_token_ids: list[int]
    reasoning: str | None
    content: str | None
    reasoning_tokens: int
    """Tokens labelled REASONING (consumed markers are not counted; see ``delimiter_tokens``)."""
    delimiter_tokens: int
    reasoning_ended: bool
    """False when the output stopped inside reasoning (e.g. finish_reason "length")."""
    started_in_reasoning: bool
    spill: tuple[tuple[int, bytes, int, int], ...] = ()
    reasoning_as_content: bool = False
    """The reasoning was returned as content because no content came (see
    :attr:`ParsedReasoningDelta.reasoning_as_content`); its labels are CONTENT here."""
    tool_call_token_ids: list[int] = msgspec.field(default_factory=list)
    """Tokens labelled TOOL_CALL (tool-call regions, harmony's tool-call messages): in
    neither ``reasoning_token_ids`` nor ``content_token_ids``."""
    tool_call_text: str | None = None
    """The text of those tokens, markup included (None when there are none)."""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    """The complete tool calls, in order (``parse(tools=...)``; harmony's always)."""
    citations: list[Citation] = msgspec.field(default_factory=list)
    """Inline citations taken out of the text (a family with ``ReasoningSpec.citations``,
    Cohere's), in the order their closing tags come: ``reasoning[c.start:c.end] == c.text``
    for a reasoning citation, and likewise ``content`` for a content one."""

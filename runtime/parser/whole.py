"""A whole output at once: ``ReasoningParser.parse``'s result.

The labels are those of any streaming of the same tokens (the same machine run, then its
flush); on top of them the non-streaming result takes the family's tool calls out of
the answer, decodes both channels, reads the calls of a family that labels them
(harmony) and applies ``reasoning_as_content_if``. Its own module because it is the one
place that assembles a :class:`ParseResult` from every output hook, while
:mod:`.contract` keeps one request's streaming state.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from reasonspan.runtime.parser.outputs import ParserOutputs
from reasonspan.runtime.text.citations import as_content
from reasonspan.runtime.text.results import ParseResult
from reasonspan.runtime.toolcalls import ToolCall, ToolCallExtractor
from reasonspan.runtime.wire.call_messages import calls_from_reader

SAW_REASONING, SAW_CONTENT = 1, 2
_AS_CONTENT = bytes.maketrans(bytes((REASONING,)), bytes((CONTENT,)))


def channels_seen(labels: bytearray, spill: list[Spill]) -> int:
    """Which channels got tokens or text: ``SAW_REASONING | SAW_CONTENT`` bits (the swap of
    ``reasoning_as_content_if`` happens when reasoning alone was seen)."""
    bits = SAW_REASONING if REASONING in labels else 0
    if CONTENT in labels or TOOL in labels or TOOL_CALL in labels:
        bits |= SAW_CONTENT
    for _, data, channel, _ in spill:
        if data:
            bits |= SAW_REASONING if channel == REASONING else SAW_CONTENT
    return bits


def _take_calls(
    extractor: ToolCallExtractor,
    ids: list[int],
    labels: bytearray,
    spill: list[Spill],
    finish_reason: str | None,
) -> tuple[list[int], bytearray, list[Spill], list[ToolCall]]:
    """The output with its tool-call regions taken out, and the calls read from them."""
    ids, labels, spill, calls = extractor.feed(ids, labels, spill)
    tail_ids, tail_labels, tail_spill, tail_calls = extractor.finish(finish_reason)
    base = len(ids)
    ids = ids + tail_ids
    labels += tail_labels
    spill += [(i + base, b, c, a) for i, b, c, a in tail_spill]
    calls += tail_calls
    return ids, labels, spill, calls


def parse_output(
    outputs: ParserOutputs,
    machine: Machine,
    toks: Sequence[int],
    start: bool,
    *,
    swap: bool,
    skip_special_tokens: bool,
    extractor: ToolCallExtractor | None,
    finish_reason: str | None = None,
) -> ParseResult:
    """``toks`` (validated) labelled from the start state ``start`` with a fresh cursor,
    then read as ``ReasoningParser.parse`` documents; ``swap``: the request asked for
    ``reasoning_as_content_if``; ``finish_reason``: why the output ended, for a call
    region it leaves open (:meth:`ToolCallExtractor.finish`)."""
    ids: list[int] = []
    labels = bytearray()
    cursor = machine.new_cursor()
    spill: list[Spill] = []
    state = machine.run(toks, start, cursor, ids, labels, spill)
    state = machine.flush(state, cursor, ids, labels, spill)
    calls: list[ToolCall] = []
    if extractor is not None:
        ids, labels, spill, calls = _take_calls(extractor, ids, labels, spill, finish_reason)
    reasoning_ids, content_ids = split_labels(ids, labels)
    dec = outputs.decoder(
        skip_special_tokens=skip_special_tokens,
        call_gaps=extractor is not None and extractor.trims_gaps,
    )
    r1, c1 = dec.feed(ids, labels, spill)
    r2, c2 = dec.finish()
    r_text, c_text = r1 + r2, c1 + c2
    tool_ids = tool_call_ids(ids, labels) if TOOL_CALL in labels else []
    if tool_ids and extractor is None:
        reader = outputs.tool_call_reader()
        if reader is not None:
            calls = calls_from_reader(reader, outputs.tokenizer, ids, labels)
    citations = dec.take_citations()
    swap = swap and channels_seen(labels, spill) == SAW_REASONING
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
        started_in_reasoning=bool(start and machine.thinking),
        spill=tuple(spill),
        reasoning_as_content=swap,
        tool_call_token_ids=tool_ids,
        tool_call_text=dec.take_tool_calls() if tool_ids else None,
        tool_calls=calls,
        citations=citations,
    )

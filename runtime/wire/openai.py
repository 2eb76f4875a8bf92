"""OpenAI chat-completion wire types, as small msgspec Structs, and their encoding.

Reasoning goes in ``delta.reasoning`` / ``message.reasoning`` (the field current clients
read); ``reasoning_content`` is filled too only when a server opts in for older clients.
Reasoning tokens are reported in ``usage.completion_tokens_details.reasoning_tokens``.
Tool calls a family frames as messages of their own (harmony) go in ``delta.tool_calls`` /
``message.tool_calls``, as OpenAI sends them.

``citations`` (an extension, left out unless the family writes inline citation markup,
Cohere's ``<co>…</co: 0:[1]>``): each entry is a
:class:`~reasonspan.runtime.text.citations.Citation` -- ``channel`` ("reasoning" or
"content"), ``start``/``end`` (code point offsets into that channel's whole text),
``text`` and ``sources`` (``[{"tool_call_index", "tool_result_indices"}]``, as the model
wrote them). A stream sends a citation in the first chunk after which its span's text has
been sent (usually the chunk that closes it); a citation of text never sent (cut by a stop
string, or reasoning left out) is not sent. ``message.citations`` holds them all.

This module is the one place the wire format is declared: the runtime builds these
objects, the serving layer encodes them (SSE) and aggregates them (non-streaming) with the
helpers here. Fields that carry nothing are left out (no ``"usage": null`` in every
chunk); ``object`` is the Struct tag, so it is always sent and checked when decoding.
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from reasonspan.runtime.text.citations import Citation

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]
FINISH_REASONS: tuple[str, ...] = get_args(FinishReason)
"""What ``finish_reason`` may be: OpenAI's four, and "error" (a request the engine ended
on an error of its own, as other servers send it)."""


class ChoiceDeltaToolCallFunction(msgspec.Struct, omit_defaults=True):
    """``name`` only in the first delta of a call; then ``arguments`` text pieces."""

    name: str | None = None
    arguments: str | None = None


class ChoiceDeltaToolCall(msgspec.Struct, omit_defaults=True):
    """One entry of ``delta.tool_calls``: ``index`` says which call of the response it
    continues; ``id`` and ``type`` come only in the call's first delta, as OpenAI sends."""

    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: ChoiceDeltaToolCallFunction | None = None


class ToolCallFunction(msgspec.Struct):
    name: str
    arguments: str
    """The arguments as the model wrote them (JSON text, not validated here)."""


class ToolCall(msgspec.Struct):
    """One entry of ``message.tool_calls`` in a non-streaming completion."""

    id: str
    function: ToolCallFunction
    type: Literal["function"] = "function"


class ChoiceDelta(msgspec.Struct, omit_defaults=True, gc=False):
    """Only the fields that carry something are sent (``{}`` for an empty delta).

    ``gc=False`` here and on the two types that hold it: a chunk never takes part in a
    reference cycle, and a server makes one per request and step, so the cyclic
    collector need not track them (with thousands of requests open, each full collection
    it would otherwise trigger walks every request's state; see BENCHMARKS.md)."""

    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ChoiceDeltaToolCall] | None = None
    citations: list[Citation] | None = None


class TopLogprob(msgspec.Struct, gc=False):
    """One of the likeliest tokens at a position: its text, log probability and UTF-8
    bytes (``bytes``: a token that is part of a character has text that is not its own)."""

    token: str
    logprob: float
    bytes: list[int]


class TokenLogprob(msgspec.Struct, gc=False):
    """One generated token's entry in ``logprobs.content`` / ``logprobs.reasoning``, as
    OpenAI writes it: the token, its log probability, its bytes and the requested number
    of likeliest tokens at its position (``top_logprobs``)."""

    token: str
    logprob: float
    bytes: list[int]
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(msgspec.Struct, omit_defaults=True, gc=False):
    """A choice's ``logprobs`` (``runtime/stream/logprobs.py``): ``content`` holds one entry
    per token of the answer (its text and its tool calls), ``reasoning`` (an extension,
    beside ``delta.reasoning``) one per reasoning token; a marker token (``</think>``)
    is in neither, as its text is in neither. Each list is in the order of generation;
    a chunk carries the entries of the tokens decided since the previous chunk."""

    content: list[TokenLogprob] | None = None
    reasoning: list[TokenLogprob] | None = None


class ChunkChoice(msgspec.Struct, gc=False):
    """One choice of a chunk (``gc=False``: see :class:`ChoiceDelta`). ``logprobs`` is
    sent only for a request that asked for them (UNSET is left out of the encoding, so
    every other chunk's bytes are the batch-wide output path's)."""

    index: int
    delta: ChoiceDelta
    finish_reason: FinishReason | None = None
    logprobs: ChoiceLogprobs | msgspec.UnsetType = msgspec.UNSET


class CompletionTokensDetails(msgspec.Struct):
    reasoning_tokens: int = 0


class Usage(msgspec.Struct, omit_defaults=True):
    """Token counts. ``reasoning_ended`` (an extension, sent on final usage) is False when
    the output stopped inside reasoning — whatever the finish reason — so a client can tell
    "the model never reached its answer" from an empty answer."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_tokens_details: CompletionTokensDetails
    reasoning_ended: bool | None = None


class ChatCompletionChunk(
    msgspec.Struct,
    gc=False,
    kw_only=True,
    omit_defaults=True,
    tag_field="object",
    tag="chat.completion.chunk",
):
    """One ``chat.completion.chunk`` of a streamed reply (``gc=False``: see
    :class:`ChoiceDelta`)."""

    id: str
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


class ChatMessage(msgspec.Struct, omit_defaults=True, kw_only=True):
    """The non-streaming answer. ``role`` has no default, so it is always sent (a default
    would be left out by ``omit_defaults``): clients append this message to the history
    as it is, and the next turn needs its role."""

    role: Literal["assistant"]
    content: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    citations: list[Citation] | None = None


class Choice(msgspec.Struct):
    index: int
    message: ChatMessage
    finish_reason: FinishReason | None = None
    logprobs: ChoiceLogprobs | msgspec.UnsetType = msgspec.UNSET


class ChatCompletion(msgspec.Struct, kw_only=True, tag_field="object", tag="chat.completion"):
    id: str
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class ErrorDetail(msgspec.Struct):
    """OpenAI's error object: ``param`` names the offending request field (or None)."""

    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None


class ErrorBody(msgspec.Struct):
    """``{"error": {...}}``: the body of a 4xx/5xx answer, and of an SSE error event."""

    error: ErrorDetail


def usage_for(
    prompt_tokens: int,
    completion_tokens: int,
    reasoning_tokens: int,
    reasoning_ended: bool | None = None,
) -> Usage:
    return Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=reasoning_tokens),
        reasoning_ended=reasoning_ended,
    )


class _CallParts:
    """A tool call being folded from its deltas."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


class CompletionBuilder:
    """Folds a request's chunks into the non-streaming ``chat.completion`` (what
    ``RequestStream.collect()`` returns): the texts concatenated, tool calls assembled by
    index, the last finish reason, the usage of the final chunk."""

    __slots__ = (
        "_calls",
        "_citations",
        "_content",
        "_created",
        "_finish",
        "_id",
        "_logprobs",
        "_model",
        "_reasoning",
        "_usage",
    )

    def __init__(self) -> None:
        self._reasoning: list[str] = []
        self._content: list[str] = []
        self._calls: dict[int, _CallParts] = {}
        self._citations: list[Citation] = []
        self._logprobs: ChoiceLogprobs | None = None
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._id = ""
        self._model = ""
        self._created = 0

    def add(self, chunk: ChatCompletionChunk) -> None:
        self._id, self._model, self._created = chunk.id, chunk.model, chunk.created
        for choice in chunk.choices:
            d = choice.delta
            if d.reasoning:
                self._reasoning.append(d.reasoning)
            if d.content:
                self._content.append(d.content)
            if d.tool_calls:
                self._add_calls(d.tool_calls)
            if d.citations:
                self._citations += d.citations
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
            if choice.logprobs is not msgspec.UNSET:
                self._add_logprobs(choice.logprobs)
        if chunk.usage is not None:
            self._usage = chunk.usage

    def _add_logprobs(self, got: ChoiceLogprobs) -> None:
        """Join a chunk's entries to the message's (a request that asked for logprobs
        gets ``content``, empty or not, as OpenAI sends it)."""
        mine = self._logprobs
        if mine is None:
            mine = self._logprobs = ChoiceLogprobs(content=[])
        if got.content:
            assert mine.content is not None
            mine.content.extend(got.content)
        if got.reasoning:
            if mine.reasoning is None:
                mine.reasoning = []
            mine.reasoning.extend(got.reasoning)

    def _add_calls(self, entries: list[ChoiceDeltaToolCall]) -> None:
        for entry in entries:
            call = self._calls.get(entry.index)
            if call is None:
                call = self._calls[entry.index] = _CallParts()
            if entry.id:
                call.id = entry.id
            fn = entry.function
            if fn is not None:
                if fn.name:
                    call.name = fn.name
                if fn.arguments:
                    call.arguments.append(fn.arguments)

    def build(self, *, reasoning_content_alias: bool = False) -> ChatCompletion:
        reasoning = "".join(self._reasoning) or None
        calls = [
            ToolCall(id=c.id, function=ToolCallFunction(c.name, "".join(c.arguments)))
            for _, c in sorted(self._calls.items())
        ]
        # As OpenAI: a message that only calls tools has no content (null, not "").
        content = "".join(self._content) or (None if calls else "")
        return ChatCompletion(
            id=self._id,
            created=self._created,
            model=self._model,
            choices=[
                Choice(
                    index=0,
                    message=ChatMessage(
                        role="assistant",
                        content=content,
                        reasoning=reasoning,
                        reasoning_content=reasoning if reasoning_content_alias else None,
                        tool_calls=calls or None,
                        citations=self._citations or None,
                    ),
                    finish_reason=self._finish,
                    logprobs=msgspec.UNSET if self._logprobs is None else self._logprobs,
                )
            ],
            usage=self._usage if self._usage is not None else usage_for(0, 0, 0),
        )


_encoder = msgspec.json.Encoder()


def encode(obj: msgspec.Struct) -> bytes:
    """JSON bytes for the wire (``data: ...`` lines of a server-sent-events stream)."""
    return _encoder.encode(obj)

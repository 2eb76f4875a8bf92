"""OpenAI chat-completion wire types, as small msgspec Structs, and their encoding.

Reasoning goes in ``delta.reasoning`` / ``message.reasoning`` (the field current clients
read); ``reasoning_content`` is filled too only when a server opts in for older clients.
Reasoning tokens are reported in ``usage.completion_tokens_details.reasoning_tokens``.

This module is the one place the wire format is declared: the runtime builds these
objects, the serving layer encodes them (SSE) and aggregates them (non-streaming) with the
helpers here. Fields that carry nothing are left out (no ``"usage": null`` in every
chunk); ``object`` is the Struct tag, so it is always sent and checked when decoding.
"""

from __future__ import annotations

from typing import Literal

import msgspec

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]


class ChoiceDelta(msgspec.Struct, omit_defaults=True):
    """Only the fields that carry something are sent (``{}`` for an empty delta)."""

    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None


class ChunkChoice(msgspec.Struct):
    index: int
    delta: ChoiceDelta
    finish_reason: FinishReason | None = None


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
    kw_only=True,
    omit_defaults=True,
    tag_field="object",
    tag="chat.completion.chunk",
):
    id: str
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


class ChatMessage(msgspec.Struct, omit_defaults=True):
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None


class Choice(msgspec.Struct):
    index: int
    message: ChatMessage
    finish_reason: FinishReason | None = None


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


class CompletionBuilder:
    """Folds a request's chunks into the non-streaming ``chat.completion`` (what
    ``RequestStream.collect()`` returns): the texts concatenated, the last finish reason,
    the usage of the final chunk."""

    __slots__ = ("_content", "_created", "_finish", "_id", "_model", "_reasoning", "_usage")

    def __init__(self) -> None:
        self._reasoning: list[str] = []
        self._content: list[str] = []
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
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage

    def build(self, *, reasoning_content_alias: bool = False) -> ChatCompletion:
        reasoning = "".join(self._reasoning) or None
        content = "".join(self._content)
        return ChatCompletion(
            id=self._id,
            created=self._created,
            model=self._model,
            choices=[
                Choice(
                    index=0,
                    message=ChatMessage(
                        content=content,
                        reasoning=reasoning,
                        reasoning_content=reasoning if reasoning_content_alias else None,
                    ),
                    finish_reason=self._finish,
                )
            ],
            usage=self._usage if self._usage is not None else usage_for(0, 0, 0),
        )


_encoder = msgspec.json.Encoder()


def encode(obj: msgspec.Struct) -> bytes:
    """JSON bytes for the wire (``data: ...`` lines of a server-sent-events stream)."""
    return _encoder.encode(obj)

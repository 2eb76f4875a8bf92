"""OpenAI chat-completion wire types, as small msgspec Structs.

Reasoning goes in ``delta.reasoning`` / ``message.reasoning`` (the field current clients
read); ``reasoning_content`` is filled too only when a server opts in for older clients.
Reasoning tokens are reported in ``usage.completion_tokens_details.reasoning_tokens``.
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


class Usage(msgspec.Struct):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_tokens_details: CompletionTokensDetails = msgspec.field(
        default_factory=CompletionTokensDetails
    )


class ChatCompletionChunk(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
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


class ChatCompletion(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


def usage_for(prompt_tokens: int, completion_tokens: int, reasoning_tokens: int) -> Usage:
    return Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=reasoning_tokens),
    )


_encoder = msgspec.json.Encoder()


def encode(obj: msgspec.Struct) -> bytes:
    """JSON bytes for the wire (``data: ...`` lines of a server-sent-events stream)."""
    return _encoder.encode(obj)

"""The three wire protocols the server speaks, as one interface over one request path.

Chat Completions, the Responses API and Anthropic's Messages API are encodings of the same
labelled stream: each protocol reads its body into the one internal request
(:class:`ChatCompletionRequest`), and writes the request's chunks, or its collected
completion, in its own shape; its errors too. Everything between (template, parser,
runtime, engine, disconnects) is the server's one path (:mod:`.app`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec

from reasonspan.runtime.stream.runtime import RequestStream
from reasonspan.runtime.wire.openai import ChatCompletion, ChatCompletionChunk, encode
from reasonspan.serving.messages import (
    MessagesRequest,
    anthropic_error,
    parse_messages_request,
)
from reasonspan.serving.messages import to_chat_request as messages_to_chat
from reasonspan.serving.messages_events import MessageEvents, message_of
from reasonspan.serving.protocol import ChatCompletionRequest, RequestError, parse_request
from reasonspan.serving.responses import ResponsesRequest, effort_off, parse_responses_request
from reasonspan.serving.responses import to_chat_request as responses_to_chat
from reasonspan.serving.responses_events import ResponseEvents, ResponseShape, response_of
from reasonspan.serving.segments import EventEncoder

_chunk_decoder = msgspec.json.Decoder(ChatCompletionChunk)


@dataclass
class Parsed:
    """A request body read by its protocol: the internal request, the thinking switch it
    asks for (None: the model's default) and what the protocol keeps for its answer."""

    req: ChatCompletionRequest
    thinking: bool | None = None
    original: Any = None


class WireProtocol:
    """One protocol: how its body is read and its answers and errors are written."""

    name: ClassVar[str]
    path: ClassVar[str]
    key_prefix: ClassVar[str]

    def parse(self, body: bytes) -> Parsed:
        raise NotImplementedError

    def error_body(self, err: RequestError) -> bytes:
        return err.body()

    def writer(self, parsed: Parsed, key: str, input_tokens: int) -> EventEncoder | None:
        """The writer of a streamed request's events, handed to the runtime when the
        request is added (``runtime/wire/events.py``); None: the runtime's own Chat
        Completions events."""
        return None

    def events(self, stream: RequestStream, writer: EventEncoder | None) -> AsyncIterator[bytes]:
        """Every event of a streamed request (``writer``: :meth:`writer`'s, the one the
        request was added with)."""
        raise NotImplementedError

    def completion(
        self, completion: ChatCompletion, stream: RequestStream, parsed: Parsed, key: str
    ) -> bytes:
        raise NotImplementedError

    def has_text(self, event: bytes) -> bool:
        """The event carries generated text (the time to the first one is the time to
        first token; asked only until one is found)."""
        raise NotImplementedError


class ChatCompletions(WireProtocol):
    name = "chat.completions"
    path = "/v1/chat/completions"
    key_prefix = "chatcmpl-"

    def parse(self, body: bytes) -> Parsed:
        return Parsed(parse_request(body))

    def events(self, stream: RequestStream, writer: EventEncoder | None) -> AsyncIterator[bytes]:
        return stream.sse_events()

    def completion(
        self, completion: ChatCompletion, stream: RequestStream, parsed: Parsed, key: str
    ) -> bytes:
        return encode(completion)

    def has_text(self, event: bytes) -> bool:
        """A chunk event whose delta holds text or a call (not the role, not usage)."""
        if not event.startswith(b"data: {"):
            return False
        chunk = _chunk_decoder.decode(event[6:].strip())
        if not chunk.choices:
            return False
        d = chunk.choices[0].delta
        return bool(d.content or d.reasoning or d.reasoning_content or d.tool_calls)


def _output_tokens(stream: RequestStream) -> int:
    usage = stream.usage
    return usage.completion_tokens if usage is not None else 0


class Messages(WireProtocol):
    name = "messages"
    path = "/v1/messages"
    key_prefix = "msg_"

    def parse(self, body: bytes) -> Parsed:
        req = parse_messages_request(body)
        thinking = None if req.thinking is None else req.thinking.type == "enabled"
        return Parsed(messages_to_chat(req), thinking, req)

    def error_body(self, err: RequestError) -> bytes:
        return msgspec.json.encode(anthropic_error(err.status, err.detail()))

    def writer(self, parsed: Parsed, key: str, input_tokens: int) -> EventEncoder | None:
        original = parsed.original
        assert isinstance(original, MessagesRequest)
        return MessageEvents(key, original.model, input_tokens)

    def events(self, stream: RequestStream, writer: EventEncoder | None) -> AsyncIterator[bytes]:
        assert isinstance(writer, MessageEvents)
        return writer.stream(
            stream.written(),
            lambda: (stream.finish_reason, stream.stop_sequence, _output_tokens(stream)),
        )

    def completion(
        self, completion: ChatCompletion, stream: RequestStream, parsed: Parsed, key: str
    ) -> bytes:
        return msgspec.json.encode(message_of(completion, key, stream.stop_sequence))

    def has_text(self, event: bytes) -> bool:
        return b"event: content_block_delta\n" in event


class Responses(WireProtocol):
    name = "responses"
    path = "/v1/responses"
    key_prefix = "resp_"

    def parse(self, body: bytes) -> Parsed:
        req, items = parse_responses_request(body)
        thinking = False if effort_off(req) else None
        return Parsed(responses_to_chat(req, items), thinking, req)

    @staticmethod
    def _shape(parsed: Parsed, key: str) -> ResponseShape:
        """What every snapshot of the response repeats: its id, its time, its request."""
        req = parsed.original
        assert isinstance(req, ResponsesRequest)
        return ResponseShape(key, req, int(time.time()))

    def writer(self, parsed: Parsed, key: str, input_tokens: int) -> EventEncoder | None:
        return ResponseEvents(self._shape(parsed, key))

    def events(self, stream: RequestStream, writer: EventEncoder | None) -> AsyncIterator[bytes]:
        assert isinstance(writer, ResponseEvents)
        return writer.stream(stream.written(), lambda: (stream.finish_reason, stream.usage))

    def completion(
        self, completion: ChatCompletion, stream: RequestStream, parsed: Parsed, key: str
    ) -> bytes:
        return msgspec.json.encode(response_of(self._shape(parsed, key), completion))

    def has_text(self, event: bytes) -> bool:
        """``response.*.delta`` (reasoning, output text, call arguments; the runtime may
        write several events in one piece)."""
        return b".delta\ndata: " in event


PROTOCOLS: tuple[WireProtocol, ...] = (ChatCompletions(), Messages(), Responses())
"""Every protocol the server speaks, by path."""

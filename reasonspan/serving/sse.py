"""Server-sent events: a request's chunk stream as the bytes an OpenAI server writes.

Each chunk is one ``data: {...}`` event; the stream ends with ``data: [DONE]``. Usage is
sent only when the request asked for it (``stream_options.include_usage``), as OpenAI
does: one extra chunk with ``"choices": []`` and the usage, before ``[DONE]``; no other
chunk carries a ``usage`` key. An error that ends the request mid-stream (its parser
failed, the engine died) becomes an ``{"error": {...}}`` event, which OpenAI clients raise.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import msgspec

from ..runtime.openai import ChatCompletionChunk, ErrorBody, ErrorDetail, encode

DONE = b"data: [DONE]\n\n"


def sse_event(obj: msgspec.Struct) -> bytes:
    """One ``data:`` event holding ``obj`` as JSON."""
    return b"data: " + encode(obj) + b"\n\n"


def chunk_events(chunk: ChatCompletionChunk, *, include_usage: bool) -> bytes:
    """The event bytes of one chunk (two events for the final chunk with usage asked)."""
    usage = chunk.usage
    if usage is None:
        return sse_event(chunk)
    bare = msgspec.structs.replace(chunk, usage=None)
    if not include_usage:
        return sse_event(bare)
    tail = ChatCompletionChunk(
        id=chunk.id, created=chunk.created, model=chunk.model, choices=[], usage=usage
    )
    return sse_event(bare) + sse_event(tail)


def error_event(exc: BaseException) -> bytes:
    detail = ErrorDetail(message=str(exc), type="server_error", code=type(exc).__name__)
    return sse_event(ErrorBody(error=detail))


async def sse_stream(
    chunks: AsyncIterable[ChatCompletionChunk], *, include_usage: bool = False
) -> AsyncIterator[bytes]:
    """The SSE bytes of a request: its chunks, then ``[DONE]`` (an error event first if
    the request ended with an error)."""
    try:
        async for chunk in chunks:
            yield chunk_events(chunk, include_usage=include_usage)
    except Exception as exc:  # the request's own failure, or a bug: an error event either way
        yield error_event(exc)
    yield DONE

"""Server-sent events: a request's chunk stream as the bytes an OpenAI server writes.

Each chunk is one ``data: {...}`` event; the stream ends with ``data: [DONE]``. Usage is
sent only when the request asked for it (``stream_options.include_usage``), as OpenAI
does: one extra chunk with ``"choices": []`` and the usage, before ``[DONE]``; no other
chunk carries a ``usage`` key. An error that ends the request mid-stream (its parser
failed, the engine died) becomes an ``{"error": {...}}`` event, which OpenAI clients raise.

The runtime's vectorized output path (``sse_path``) writes events of plain text chunks
itself, from pre-escaped pieces; every other chunk is encoded here, so both give the
same bytes (tested byte for byte).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import msgspec

from reasonspan.runtime.wire.openai import ChatCompletionChunk, ErrorBody, ErrorDetail, encode

DONE = b"data: [DONE]\n\n"

_chunk_decoder = msgspec.json.Decoder(ChatCompletionChunk)


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


def event_bytes(item: ChatCompletionChunk | bytes, *, include_usage: bool) -> bytes:
    """A queued item as event bytes: ready-made ones (the output path's) as they are."""
    return item if isinstance(item, bytes) else chunk_events(item, include_usage=include_usage)


async def event_stream(
    items: AsyncIterable[ChatCompletionChunk | bytes], *, include_usage: bool
) -> AsyncIterator[bytes]:
    """The SSE bytes of a request: its chunks (or ready-made events), then ``[DONE]``; an
    error event first if the request ended with an error."""
    try:
        async for item in items:
            yield event_bytes(item, include_usage=include_usage)
    except Exception as exc:  # the request's own failure, or a bug: an error event either way
        yield error_event(exc)
    yield DONE


def error_event(exc: BaseException) -> bytes:
    detail = ErrorDetail(message=str(exc), type="server_error", code=type(exc).__name__)
    return sse_event(ErrorBody(error=detail))


def chunk_of_event(event: bytes) -> ChatCompletionChunk:
    """The chunk one ``data:`` event of :func:`sse_event` holds (the inverse)."""
    if not (event.startswith(b"data: ") and event.endswith(b"\n\n")):
        raise ValueError(f"not one SSE data event: {event[:40]!r}")
    return _chunk_decoder.decode(event[6:-2])

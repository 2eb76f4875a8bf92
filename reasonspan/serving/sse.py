"""Server-sent events for the reference server: the encoding lives in the runtime
(:mod:`reasonspan.runtime.wire.sse`, shared with its vectorized output path); this module
adds the stream of a chunk iterator."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from reasonspan.runtime.wire.openai import ChatCompletionChunk
from reasonspan.runtime.wire.sse import DONE as DONE
from reasonspan.runtime.wire.sse import chunk_events as chunk_events
from reasonspan.runtime.wire.sse import error_event as error_event
from reasonspan.runtime.wire.sse import event_stream
from reasonspan.runtime.wire.sse import sse_event as sse_event


def sse_stream(
    chunks: AsyncIterable[ChatCompletionChunk], *, include_usage: bool = False
) -> AsyncIterator[bytes]:
    """The SSE bytes of a request: its chunks, then ``[DONE]`` (an error event first if
    the request ended with an error)."""
    return event_stream(chunks, include_usage=include_usage)

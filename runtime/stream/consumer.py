"""What a consumer reads of one request: :class:`RequestStream`, an async iterator of
``chat.completion.chunk`` objects (or SSE event bytes, or the events another protocol's
writer made of them: ``written()``), and ``collect()`` for the whole completion.

It reads the record's queue (``runtime/stream/request.py``) and nothing else; the runtime
that fills it (:class:`reasonspan.runtime.stream.runtime.ReasoningRuntime`) is seen here only
through :class:`StreamOwner`, so this module does not import it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, Self

import anyio

from reasonspan.runtime.stream.errors import RequestCancelledError, RequestKey
from reasonspan.runtime.stream.request import StreamRecord
from reasonspan.runtime.wire.openai import (
    ChatCompletion,
    ChatCompletionChunk,
    CompletionBuilder,
    FinishReason,
    Usage,
)
from reasonspan.runtime.wire.sse import chunk_of_event, event_bytes, event_stream


class StreamOwner(Protocol):
    """What a :class:`RequestStream` needs of the runtime that fills it."""

    @property
    def alias(self) -> bool:
        """Also fill ``reasoning_content`` (older clients)."""
        ...

    def consumer_gone(self, rec: StreamRecord) -> None:
        """The consumer went away: free the request's slot now."""
        ...


class RequestStream:
    """One request's chunks, as an async iterator (and async context manager)."""

    def __init__(self, runtime: StreamOwner, record: StreamRecord) -> None:
        self._runtime = runtime
        self._rec = record

    @property
    def request_id(self) -> RequestKey:
        """The id the request was added with."""
        return self._rec.key

    @property
    def engine_id(self) -> int:
        """The int64 id of this request in the step arrays (the id itself for int ids)."""
        return self._rec.engine_id

    @property
    def finish_reason(self) -> FinishReason | None:
        """The finish reason sent, once the engine finished the request: the engine's,
        or "tool_calls" when it said "stop" after the output called a tool."""
        return self._rec.finish_reason

    @property
    def stop_sequence(self) -> str | None:
        """The stop string that ended the request's text (None: none did)."""
        stop = self._rec.stop
        return stop.matched if stop is not None else None

    @property
    def usage(self) -> Usage | None:
        """Final usage (with ``reasoning_ended``), once the engine finished the request."""
        return self._rec.usage

    @property
    def options(self) -> dict[str, Any]:
        """The batch options the request was added with (budget, grammar, ...)."""
        return self._rec.options

    @property
    def response_format(self) -> Any:
        """The request's ``response_format``, kept for a grammar engine (None: none)."""
        return self._rec.response_format

    def __aiter__(self) -> Self:
        self._chunks_only("iterate")
        return self

    def _chunks_only(self, what: str) -> None:
        """A request added with a writer queues that protocol's event bytes, not chunks."""
        if self._rec.writer is not None:
            raise TypeError(
                f"cannot {what} request {self._rec.key!r} as chunks: it was added with a "
                "writer, whose events are read with written() or ready_bytes()"
            )

    async def _next(self) -> ChatCompletionChunk | bytes | None:
        """The next queued item (None: the stream ended); raises the request's error."""
        rec = self._rec
        try:
            while not rec.queue:
                if rec.cancelled:
                    raise RequestCancelledError(f"request {rec.key!r} was cancelled")
                if rec.closed:
                    return None
                wake = rec.wake = anyio.Event()
                rec.waiting = True
                try:
                    await wake.wait()
                finally:
                    rec.waiting = False
        except anyio.get_cancelled_exc_class():
            self._runtime.consumer_gone(rec)
            raise
        item = rec.queue.popleft()
        if isinstance(item, BaseException):
            raise item
        return item

    async def __anext__(self) -> ChatCompletionChunk:
        item = await self._next()
        if item is None:
            raise StopAsyncIteration
        return chunk_of_event(item) if isinstance(item, bytes) else item

    async def sse_events(self) -> AsyncIterator[bytes]:
        """The request's SSE bytes, as a server writes them: its events (usage too when
        it was added with ``include_usage``), then ``data: [DONE]``; an error event
        first if it ended with an error. A request added with ``sse=True`` gets most of
        them ready-made from the runtime's vectorized output path; any other request has
        its chunks encoded here. Leaving the loop early cancels the request."""
        self._chunks_only("stream")
        try:
            async for event in event_stream(self._items(), include_usage=self._rec.include_usage):
                yield event
        finally:
            await self.aclose()

    async def _items(self) -> AsyncIterator[ChatCompletionChunk | bytes]:
        while (item := await self._next()) is not None:
            yield item

    def ready(self) -> list[ChatCompletionChunk]:
        """Every chunk delivered so far, without waiting (for a writer that polls after
        each step instead of awaiting each stream); raises the request's error, if any."""
        self._chunks_only("read")
        return [chunk_of_event(item) if isinstance(item, bytes) else item for item in self._drain()]

    async def written(self) -> AsyncIterator[bytes]:
        """The event bytes of a request added with a ``writer``, as it wrote them at step
        time (its opening and closing events are the writer's own); raises the request's
        error. Leaving the loop early cancels the request."""
        try:
            while (item := await self._next()) is not None:
                yield item  # type: ignore[misc]  # (a writer's request queues bytes only)
        finally:
            await self.aclose()

    def ready_events(self) -> list[bytes]:
        """:meth:`ready` as SSE event bytes (without the closing ``[DONE]``)."""
        usage = self._rec.include_usage
        return [event_bytes(item, include_usage=usage) for item in self._drain()]

    def ready_bytes(self) -> bytes:
        """:meth:`ready_events` joined: everything there is to write now, as one bytes
        (empty when nothing is ready); the cheapest read for a writer that polls."""
        q = self._rec.queue
        if not q:
            return b""
        if len(q) == 1 and type(q[0]) is bytes:
            return q.popleft()  # type: ignore[return-value]
        return b"".join(self.ready_events())

    def _drain(self) -> list[ChatCompletionChunk | bytes]:
        rec = self._rec
        out: list[ChatCompletionChunk | bytes] = []
        while rec.queue:
            item = rec.queue.popleft()
            if isinstance(item, BaseException):
                raise item
            out.append(item)
        return out

    async def collect(self) -> ChatCompletion:
        """Read the whole stream into the non-streaming ``chat.completion``:
        ``message.reasoning``, ``message.content``, ``message.tool_calls``,
        ``finish_reason`` and usage."""
        builder = CompletionBuilder()
        async with self:
            async for chunk in self:
                builder.add(chunk)
        return builder.build(reasoning_content_alias=self._runtime.alias)

    async def aclose(self) -> None:
        """Stop reading: the request is cancelled and its slot freed now."""
        if not (self._rec.closed and not self._rec.queue):
            self._runtime.consumer_gone(self._rec)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

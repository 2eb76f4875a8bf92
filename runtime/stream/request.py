"""One request's side of the async runtime: its record (what it was added with, its
decoder, call extractor and stop matcher, and the queue of chunks not yet read, with the
buffer policy), its chunk stream, and the errors a consumer or an engine may meet.

:class:`RequestStream` is what a consumer reads (an async iterator of
``chat.completion.chunk`` objects, or ``collect()`` for the whole completion); the runtime
that fills it (:class:`reasonspan.runtime.stream.runtime.ReasoningRuntime`) is seen here only
through :class:`StreamOwner`, so this module does not import it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

import anyio

from reasonspan.runtime.batch.types import BatchFinish
from reasonspan.runtime.core.labels import REASONING, TOOL_CALL
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.errors import RequestCancelledError, RequestKey
from reasonspan.runtime.stream.logprobs import RequestLogprobs
from reasonspan.runtime.stream.stops import StopMatcher
from reasonspan.runtime.stream.text_events import EventSplitter, Split, TextEvent, as_chunk
from reasonspan.runtime.text.citations import Citation, as_content
from reasonspan.runtime.text.decoder_states import DecoderState
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.trails import hand_back
from reasonspan.runtime.toolcalls import ToolCallExtractor
from reasonspan.runtime.wire.call_messages import (
    ToolCallStream,
    merge_tool_call_deltas,
)
from reasonspan.runtime.wire.openai import (
    ChatCompletion,
    ChatCompletionChunk,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChunkChoice,
    CompletionBuilder,
    FinishReason,
    Usage,
)
from reasonspan.runtime.wire.region_calls import RegionCalls
from reasonspan.runtime.wire.sse import chunk_of_event, event_bytes, event_stream


class StreamOwner(Protocol):
    """What a :class:`RequestStream` needs of the runtime that fills it."""

    @property
    def alias(self) -> bool:
        """Also fill ``reasoning_content`` (older clients)."""
        ...

    def _cancel(self, rec: StreamRecord) -> None:
        """The consumer went away: free the request's slot now."""
        ...


@dataclass(slots=True)
class StreamRecord:
    """Everything the runtime keeps for one request besides its batch slot (slots: one
    is built per admitted request, and its fields are read on every step)."""

    key: RequestKey
    engine_id: int
    completion_id: str
    model: str
    parser: ReasoningParser
    prompt_tokens: int
    created: int
    decoder: LabelledDecoder | None = None
    """The request's text decoder, built by :meth:`text_decoder` when its first text goes
    through the runtime's exact path; None until then. Admission builds none (two byte
    decoders and two formatters: a sixth of its cost), as a fresh one's answers are known
    without it (:meth:`plain_channel`), and a request aborted early never needs one."""
    skip_special_tokens: bool = True
    """The decoder leaves special tokens out of the text (``ReasoningParser.decoder``)."""
    queue: deque[ChatCompletionChunk | bytes | BaseException] = field(default_factory=deque)
    """Undelivered chunks: Structs, or the SSE event bytes the output path wrote."""
    wake: anyio.Event | None = None
    """Set to wake the consumer; made when a consumer starts waiting (``waiting``), so
    admitting a request creates no event and a producer wakes only a waiting reader."""
    include_reasoning: bool = True
    """False: reasoning is generated and counted, never sent (``include_reasoning``)."""
    hold_reasoning: bool = False
    """The family may return a reasoning-only output as content (nemotron_v3 with thinking
    off): reasoning text is held until content shows up or the request ends, so the stream
    never sends as reasoning what the final answer presents as content."""
    held_reasoning: list[str] = field(default_factory=list)
    closed: bool = False
    cancelled: bool = False
    coalesced: int = 0
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    options: dict[str, Any] = field(default_factory=dict)
    response_format: Any = None
    tools: ToolCallStream | None = None
    """The family's tool-call messages as ``delta.tool_calls`` (harmony); None: the
    family has none (its tool markers stay in the content)."""
    calls: ToolCallExtractor | None = None
    """The request offered tools and the family declares a tool-call format: its call
    regions are taken out of the answer and sent as ``delta.tool_calls``."""
    call_writer: RegionCalls | None = None
    """The writer of those entries (set with :attr:`calls`): each call whole, or its
    arguments as they are written (``runtime/wire/region_calls.py``)."""
    stop: StopMatcher | None = None
    """The request's stop strings, matched on its content text (None: none)."""
    logprobs: RequestLogprobs | None = None
    """Its log probabilities, carried to its chunks (None: it did not ask for them)."""
    cites: bool = False
    """The family writes inline citations (``ReasoningSpec.citations``): each delta may
    carry ``citations``, so every step of the request goes through :meth:`emit_text`."""
    pending_citations: list[Citation] = field(default_factory=list)
    """Citations decoded whose span has not all been sent yet (held by a stop matcher or
    with the reasoning)."""
    sent_chars: list[int] = field(default_factory=lambda: [0, 0])
    """Code points of reasoning and of content sent so far: where a citation's span must
    end before it is sent."""
    sse_slot: int = -1
    """The request's slot on the runtime's vectorized output path (``sse_path``), whose
    events go into ``queue`` as bytes; -1: it is not on it."""
    include_usage: bool = False
    """Its SSE stream ends with a usage chunk (``stream_options.include_usage``)."""
    waiting: bool = False
    """A consumer awaits ``wake``."""
    tails: list[str] | None = None
    """Trailing runs the output path holds for the decoder's idle trims (reasoning,
    content: ``runtime/text/trails.py``), handed back before the decoder is used or asked
    (:meth:`text_decoder`); None: nothing held."""
    state: DecoderState | None = None
    """The shared state the decoder is in (``runtime/text/decoder_states.py``), reached by the
    rows the output path fed through :meth:`feed_row`. While :attr:`decoder` is None,
    the state it would be in (None: a fresh decoder's, not looked up yet), replayed into
    it when it is built; once built, None when it was fed anything else."""

    def notify(self) -> None:
        """Wake the consumer if it is waiting (it looks at the queue before it waits)."""
        if self.waiting and self.wake is not None:
            self.wake.set()

    def text_decoder(self) -> LabelledDecoder:
        """The request's decoder (:attr:`decoder`), built on first use in the state the
        output path left it (:attr:`state`), holding what it held for it (:attr:`tails`).
        Its caller feeds it as it likes: from here on its state is not a known one."""
        dec = self.decoder
        if dec is None:
            dec = self._built()
        self.state = None
        if self.tails is not None:
            hand_back(dec, self.tails)
            self.tails = None
        return dec

    def _built(self) -> LabelledDecoder:
        """The decoder, built now in its shared state (:attr:`state`, replayed)."""
        dec = self.decoder = self.parser.decoder(
            skip_special_tokens=self.skip_special_tokens, call_gaps=self._call_gaps()
        )
        if self.state is not None:
            self.state.replay(dec)
        return dec

    def _state(self) -> DecoderState:
        """The shared state of the decoder not built yet (:attr:`state`)."""
        got = self.state
        if got is None:
            got = self.state = self.parser.fresh_state(
                skip_special_tokens=self.skip_special_tokens, call_gaps=self._call_gaps()
            )
        return got

    def feed_row(self, ids: list[int], labels: bytes) -> tuple[str, str]:
        """``text_decoder().feed(ids, labels)`` (no spill), for a row the output path
        decodes, through the shared decoder states (``runtime/text/decoder_states.py``): while
        the decoder is not built, a row many requests feed in the same state (their first
        rows) costs a look-up; a row with no known successor builds it, and while its
        state is still a known one, each row it is fed teaches the states."""
        dec = self.decoder
        state = self._state() if dec is None else self.state
        if state is None:  # (its decoder was fed outside the states)
            return self.text_decoder().feed(ids, labels)
        tails = self.tails
        row = (tuple(ids), bytes(labels), None if tails is None else (tails[0], tails[1]))
        if dec is None:
            got = state.step(row)
            if got is not None:
                self.state, r, c = got
                self.tails = None
                return r, c
            dec = self._built()
        if tails is not None:
            hand_back(dec, tails)
            self.tails = None
        r, c = dec.feed(ids, labels)
        self.state = state.learn(row, dec, r, c)
        return r, c

    def holds_trail(self, channel: int) -> bool:
        """The decoder's ``holds_trail(channel)``, known without building it."""
        dec = self.decoder
        if dec is not None:
            return dec.holds_trail(channel)
        return self._state().holds[0 if channel == REASONING else 1]

    def plain_channel(self, channel: int) -> tuple[frozenset[int], str] | None:
        """The decoder's ``plain_channel(channel)`` (``REASONING`` or ``CONTENT``); a
        decoder not built yet is in a shared state (:attr:`state`) that knows it."""
        dec = self.decoder if self.tails is None else self.text_decoder()
        if dec is not None:
            return dec.plain_channel(channel)
        return self._state().plain_channel(channel)

    def _call_gaps(self) -> bool:
        """The decoder trims the whitespace around tool calls (the call extractor's
        format says so)."""
        return self.calls is not None and self.calls.trims_gaps

    def finish_text(
        self, alias: bool, room: int, tail: BatchFinish, finish_reason: FinishReason
    ) -> FinishReason:
        """The engine ended the request: send the text (and calls) its held tokens make,
        and say which finish reason to send (:meth:`ReasoningRuntime.finish`)."""
        ids, labels, spill = tail.token_ids, bytearray(tail.labels), list(tail.spill)
        if self.logprobs is not None:
            self.logprobs.route(labels)
        calls = None
        if self.call_writer is not None:
            writer = self.call_writer
            ids, labels, spill, calls = writer.feed(ids, labels, spill)
            more_ids, more_labels, more_spill, more = writer.finish(finish_reason)
            spill += [(i + len(ids), b, ch, a) for i, b, ch, a in more_spill]
            ids = ids + more_ids
            labels += more_labels
            if more:
                calls = (calls or []) + more
        if ids or self.decoder is not None or self.tails is not None or self.cites:
            dec = self.text_decoder()
            r1, c1 = dec.feed(ids, labels, spill)
            r2, c2 = dec.finish()
        else:
            # The decoder was never built (every token went by table or through the
            # shared states) and has nothing to feed: its state knows its end.
            r1 = c1 = ""
            r2, c2 = self._state().finish()
        if self.tools is not None:
            calls = self.message_calls(tail.token_ids, tail.labels, final=True)
        # Reasoning held for a possible swap is released here, whatever ends the request:
        # content whose text is empty (``<|im_end|>``) does not release it in step().
        held = "".join(self.held_reasoning) + r1 + r2
        self.held_reasoning.clear()
        self.hold_reasoning = False
        reasoning, content = held, c1 + c2
        if tail.reasoning_as_content:
            # Nothing but reasoning came: present it as the content, as parse() does.
            reasoning, content = "", held + content
            if self.logprobs is not None:
                self.logprobs.as_content()
            if self.cites:
                got = self.pending_citations + self.text_decoder().take_citations()
                self.pending_citations = as_content(got, len(held))
        if self.stop is not None:
            content, stopped = self.stop.feed(content)
            if stopped:
                calls = None  # after the stop string, with everything else
                finish_reason = "stop"
            else:
                content += self.stop.flush()
        self.emit_text(alias, room, reasoning, content, calls)
        self.pending_citations.clear()  # their text was never sent (a stop string cut it)
        called = (self.tools is not None and self.tools.count) or (
            self.calls is not None and self.calls.count
        )
        if finish_reason == "stop" and called and not (self.stop and self.stop.matched):
            finish_reason = "tool_calls"  # as OpenAI: the turn ended to call its tools
        return finish_reason

    def message_calls(
        self, ids: list[int], labels: bytes | bytearray, *, final: bool = False
    ) -> list[ChoiceDeltaToolCall] | None:
        """The request's ``tool_calls`` entries for these tokens, from a family whose calls are
        messages (harmony). The decoder's own copy of
        the tool-call text (for ``take_tool_calls()`` users) is dropped: the runtime sends
        the calls themselves."""
        assert self.tools is not None
        if TOOL_CALL in labels:
            self.text_decoder().take_tool_calls()
        return self.tools.feed(ids, labels, final=final)

    def chunk(self, delta: ChoiceDelta, finish: FinishReason | None = None) -> ChatCompletionChunk:
        """A ``chat.completion.chunk`` of this request carrying ``delta`` (and the log
        probabilities decided since its last chunk, if it asked for them)."""
        lp = self.logprobs
        return ChatCompletionChunk(
            id=self.completion_id,
            created=self.created,
            model=self.model,
            choices=[
                ChunkChoice(0, delta, finish)
                if lp is None
                else ChunkChoice(0, delta, finish, lp.sendable(self.include_reasoning))
            ],
        )

    def emit_text(
        self,
        alias: bool,
        room: int,
        reasoning: str,
        content: str,
        calls: list[ChoiceDeltaToolCall] | None = None,
    ) -> None:
        """Send this much text (and calls), as the request's options say: reasoning left
        out (``include_reasoning``) or held (``hold_reasoning``) until content shows up."""
        rec = self
        if not rec.include_reasoning and not rec.hold_reasoning:
            reasoning = ""
        if rec.hold_reasoning:
            if not content and not calls:
                if reasoning:
                    rec.held_reasoning.append(reasoning)
                return
            reasoning = "".join(rec.held_reasoning) + reasoning
            rec.held_reasoning.clear()
            rec.hold_reasoning = False
            if not rec.include_reasoning:
                reasoning = ""
        cites = rec.sendable_citations(reasoning, content) if rec.cites else None
        if not reasoning and not content and not calls and not cites:
            return
        delta = ChoiceDelta(
            content=content or None,
            reasoning=reasoning or None,
            reasoning_content=(reasoning or None) if alias else None,
            tool_calls=calls,
            citations=cites,
        )
        self.push(delta, alias, room)

    def sendable_citations(self, reasoning: str, content: str) -> list[Citation] | None:
        """Count this delta's text as sent; return the citations whose span now has all
        been sent (a reasoning citation is never sent when reasoning is left out)."""
        sent = self.sent_chars
        sent[0] += len(reasoning)
        sent[1] += len(content)
        ready: list[Citation] = []
        wait: list[Citation] = []
        for c in self.pending_citations + self.text_decoder().take_citations():
            if c.channel == "reasoning":
                if self.include_reasoning:
                    (ready if c.end <= sent[0] else wait).append(c)
            else:
                (ready if c.end <= sent[1] else wait).append(c)
        self.pending_citations = wait
        return ready or None

    def push(self, delta: ChoiceDelta, alias: bool, room: int) -> None:
        """Queue a delta; past ``room`` undelivered chunks (the runtime's ``buffer_size``),
        merge it into the last one."""
        rec = self
        if rec.cancelled:
            return
        if len(rec.queue) >= room:
            last = rec.queue[-1]
            if isinstance(last, ChatCompletionChunk) and last.choices[0].finish_reason is None:
                d = last.choices[0].delta
                if delta.reasoning:
                    d.reasoning = (d.reasoning or "") + delta.reasoning
                    if alias:
                        d.reasoning_content = d.reasoning
                if delta.content:
                    d.content = (d.content or "") + delta.content
                if delta.tool_calls:
                    if d.tool_calls is None:
                        d.tool_calls = []
                    merge_tool_call_deltas(d.tool_calls, delta.tool_calls)
                if delta.citations:
                    d.citations = (d.citations or []) + delta.citations
                if rec.logprobs is not None:
                    rec.logprobs.add_to(last.choices[0], rec.include_reasoning)
                rec.coalesced += 1
                rec.notify()
                return
        self.put(self.chunk(delta))

    def put(self, item: ChatCompletionChunk | BaseException) -> None:
        """Queue a chunk (or the request's error) and wake the consumer."""
        if self.cancelled:
            return
        self.queue.append(item)
        self.notify()


class RequestStream:
    """One request's chunks, as an async iterator (and async context manager)."""

    def __init__(self, runtime: StreamOwner, record: StreamRecord) -> None:
        self._runtime = runtime
        self._rec = record
        self._splitter: Split | None = None

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
        return self

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
            self._runtime._cancel(rec)
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
        return [chunk_of_event(item) if isinstance(item, bytes) else item for item in self._drain()]

    async def text_items(self) -> AsyncIterator[ChatCompletionChunk | TextEvent]:
        """The request's items for a protocol that writes its own events: the output
        path's text events as ``(channel, escaped text)``, every other item as a chunk
        (``runtime/stream/text_events.py``)."""
        split = self._split()
        while (item := await self._next()) is not None:
            yield split(item)

    def ready_items(self) -> list[ChatCompletionChunk | TextEvent]:
        """:meth:`text_items` delivered so far, without waiting."""
        split = self._split()
        return [split(item) for item in self._drain()]

    def _split(self) -> Split:
        """The request's splitter (made once: a request's templates do not change)."""
        got = self._splitter
        if got is None:
            rec = self._rec
            if rec.sse_slot < 0 and not any(type(item) is bytes for item in rec.queue):
                return as_chunk  # (not on the output path, at least not yet)
            alias = self._runtime.alias
            cut = EventSplitter.of(rec.completion_id, rec.created, rec.model, alias)
            got = self._splitter = as_chunk if cut is None else cut.split
        return got

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
            self._runtime._cancel(self._rec)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

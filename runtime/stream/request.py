"""One request's record in the async runtime: what it was added with, its decoder, call
extractor and stop matcher, and the queue of chunks not yet read, with the buffer policy.

The runtime's writers (the exact path, the output path, the stop step, ``finish()``) fill
the queue through the record's methods; what a consumer reads is
:class:`~reasonspan.runtime.stream.consumer.RequestStream`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import anyio

from reasonspan.runtime.batch.types import BatchFinish
from reasonspan.runtime.core.labels import REASONING, TOOL_CALL
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.errors import RequestKey
from reasonspan.runtime.stream.logprobs import RequestLogprobs
from reasonspan.runtime.stream.stops import StopMatcher
from reasonspan.runtime.text.citations import Citation, as_content
from reasonspan.runtime.text.decoder_states import DecoderState
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.trails import hand_back
from reasonspan.runtime.toolcalls import ToolCallExtractor
from reasonspan.runtime.wire.call_messages import (
    ToolCallStream,
    merge_tool_call_deltas,
)
from reasonspan.runtime.wire.events import EventWriter
from reasonspan.runtime.wire.openai import (
    ChatCompletionChunk,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChunkChoice,
    FinishReason,
    Usage,
)
from reasonspan.runtime.wire.region_calls import RegionCalls


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
    writer: EventWriter | None = None
    """The request's events are another protocol's (``runtime/wire/events.py``): every
    chunk and text event goes through it at step time, and the queue holds its bytes."""
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
        """Queue a chunk (or the request's error) and wake the consumer; a request with
        a :attr:`writer` queues the chunk's events (nothing when it makes none)."""
        if self.cancelled:
            return
        writer = self.writer
        if writer is not None and type(item) is ChatCompletionChunk:
            events = writer.chunk(item)
            if not events:
                return
            self.queue.append(events)
        else:
            self.queue.append(item)
        self.notify()

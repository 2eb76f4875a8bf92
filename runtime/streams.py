"""The async side: a batch beside the scheduler, each request served as an async iterator
of OpenAI ``chat.completion.chunk`` objects.

The engine loop calls :meth:`ReasoningRuntime.step` once per engine step (synchronous and
cheap: one batched ``ReasoningBatch.step``, then text for the requests that got tokens).
Consumers read their own :class:`RequestStream` at their own pace.

Buffer policy (a slow consumer never stalls the step loop): each request holds at most
``buffer_size`` undelivered text chunks (plus its final chunk); when it is full, new text
is coalesced into the last undelivered chunk instead of queueing another one. Nothing is
dropped and the step loop never waits; memory per request is bounded by its own output.

Cancellation: a consumer that stops reading (``aclose()``, leaving ``async with``, or its
task being cancelled) marks its request cancelled; the next ``step()`` frees the slot and
ignores that request's tokens, and :meth:`ReasoningRuntime.take_aborted` tells the engine
which requests to abort. A request whose parser raises gets that error and ends alone.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import anyio
import numpy as np

from .batch import ReasoningBatch
from .batch_errors import RequestFailedError
from .batch_result import BatchStepResult
from .decoding import LabelledDecoder
from .errors import ReasonspanError
from .openai import (
    ChatCompletionChunk,
    ChoiceDelta,
    ChunkChoice,
    FinishReason,
    usage_for,
)
from .parser import ReasoningParser


class RequestCancelledError(ReasonspanError, RuntimeError):
    """Raised to a consumer that reads a stream after cancelling it."""


@dataclass
class _Record:
    """Everything the runtime keeps for one request besides its batch slot."""

    request_id: int
    parser: ReasoningParser
    decoder: LabelledDecoder
    prompt_tokens: int
    created: int
    queue: deque[ChatCompletionChunk | BaseException] = field(default_factory=deque)
    wake: anyio.Event = field(default_factory=anyio.Event)
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


class RequestStream:
    """One request's chunks, as an async iterator (and async context manager)."""

    def __init__(self, runtime: ReasoningRuntime, record: _Record) -> None:
        self._runtime = runtime
        self._rec = record

    @property
    def request_id(self) -> int:
        return self._rec.request_id

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ChatCompletionChunk:
        rec = self._rec
        if rec.cancelled:
            raise RequestCancelledError(f"request {rec.request_id} was cancelled")
        try:
            while not rec.queue:
                if rec.closed:
                    raise StopAsyncIteration
                await rec.wake.wait()
                rec.wake = anyio.Event()
        except anyio.get_cancelled_exc_class():
            self._runtime._cancel(rec)
            raise
        item = rec.queue.popleft()
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self) -> None:
        """Stop reading: the request is cancelled and its slot freed at the next step."""
        if not (self._rec.closed and not self._rec.queue):
            self._runtime._cancel(self._rec)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ReasoningRuntime:
    """Owns a :class:`ReasoningBatch` and turns its step results into OpenAI chunks."""

    def __init__(
        self,
        *,
        model: str = "reasonspan",
        buffer_size: int = 32,
        reasoning_content_alias: bool = False,
        skip_special_tokens: bool = False,
        batch: ReasoningBatch | None = None,
    ) -> None:
        if buffer_size < 1:
            raise ValueError("buffer_size must be at least 1")
        self.model = model
        self.buffer_size = buffer_size
        self.alias = reasoning_content_alias
        self.skip_special_tokens = skip_special_tokens
        self.batch = batch if batch is not None else ReasoningBatch()
        self._records: dict[int, _Record] = {}
        self._aborted: list[int] = []
        self._gone: set[int] = set()
        """Ended by the runtime (cancelled or failed) while the engine may still send
        tokens for them; such tokens are dropped, not an error."""
        self.step_ns: list[int] = []

    def __len__(self) -> int:
        return len(self._records)

    # ------------------------------------------------------------------ requests

    def add(
        self,
        request_id: int,
        parser: ReasoningParser,
        prompt_token_ids: Sequence[int] | np.ndarray[Any, Any],
        **options: Any,
    ) -> RequestStream:
        """Admit a request (options as :meth:`ReasoningBatch.add`) and return its stream."""
        self.batch.add(request_id, parser, prompt_token_ids, **options)
        rec = _Record(
            request_id=int(request_id),
            parser=parser,
            decoder=parser.decoder(skip_special_tokens=self.skip_special_tokens),
            prompt_tokens=len(prompt_token_ids),
            created=int(time.time()),
            hold_reasoning=parser.may_return_reasoning_as_content,
            include_reasoning=bool(options.get("include_reasoning", True)),
        )
        self._records[rec.request_id] = rec
        self._push(rec, ChoiceDelta(role="assistant", content=""))
        return RequestStream(self, rec)

    def take_aborted(self) -> list[int]:
        """Requests the engine should stop generating for, since the last call: their
        consumer went away, or their parser failed. Tokens for them that are already in
        flight are ignored by the next ``step()``."""
        out, self._aborted = self._aborted, []
        return out

    def _cancel(self, rec: _Record) -> None:
        if rec.cancelled or rec.closed:
            rec.cancelled = True
            return
        rec.cancelled = True
        rec.queue.clear()
        self._aborted.append(rec.request_id)

    def _drop(self, rec: _Record) -> None:
        self._records.pop(rec.request_id, None)
        if rec.request_id in self.batch:
            self.batch.remove(rec.request_id)

    # ------------------------------------------------------------------ the step

    def step(
        self,
        request_ids: np.ndarray[Any, Any],
        token_ids: np.ndarray[Any, Any],
        offsets: np.ndarray[Any, Any],
    ) -> BatchStepResult:
        """One engine step for the whole batch; pushes text to each request's stream."""
        t0 = time.perf_counter_ns()
        rids = np.asarray(request_ids, dtype=np.int64)
        toks = np.asarray(token_ids, dtype=np.int64)
        offs = np.asarray(offsets, dtype=np.int64)
        for rec in [r for r in self._records.values() if r.cancelled]:
            self._drop(rec)
            self._gone.add(rec.request_id)
        if self._gone:
            in_flight = np.isin(rids, list(self._gone))
            self._gone.intersection_update(rids[in_flight].tolist())
            keep = ~in_flight
            if not keep.all():
                counts = np.diff(offs)[keep]
                starts = offs[:-1][keep]
                toks = (
                    np.concatenate([toks[s : s + c] for s, c in zip(starts, counts, strict=True)])
                    if counts.size
                    else toks[:0]
                )
                rids = rids[keep]
                offs = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        res = self.batch.step(rids, toks, offs)
        for rid, err in res.errors.items():
            failed = self._records.get(int(rid))
            if failed is not None:
                self._fail(failed, err)
        records = self._records
        errors = res.errors
        for rid, ids, labels, spill in res.all_decided():
            got = records.get(rid)
            if got is None or got.closed or (errors and rid in errors):
                continue
            if ids:
                r_text, c_text = got.decoder.feed(ids, labels, spill)
                if r_text or c_text:
                    self._emit_text(got, r_text, c_text)
        self.step_ns.append(time.perf_counter_ns() - t0)
        return res

    def finish(self, request_id: int, finish_reason: FinishReason = "stop") -> None:
        """The engine ended the request: flush held tokens, send the final chunk and usage."""
        rec = self._records.get(int(request_id))
        if rec is None or rec.closed:
            return
        try:
            tail = self.batch.finish(request_id)
        except RequestFailedError as err:
            self._fail(rec, err)
            return
        r1, c1 = rec.decoder.feed(tail.token_ids, tail.labels, tail.spill)
        r2, c2 = rec.decoder.finish()
        if tail.reasoning_as_content:
            # Nothing but reasoning came: present it as the content, as parse() does.
            held = "".join(rec.held_reasoning) + r1 + r2
            rec.held_reasoning.clear()
            rec.hold_reasoning = False
            self._emit_text(rec, "", held + c1 + c2)
        else:
            rec.hold_reasoning = False
            self._emit_text(rec, r1 + r2, c1 + c2)
        usage = tail.usage
        if not usage.reasoning_ended and finish_reason == "stop":
            finish_reason = "length"
        chunk = self._chunk(rec, ChoiceDelta(), finish_reason)
        chunk.usage = usage_for(rec.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens)
        self._queue(rec, chunk)
        rec.closed = True
        rec.wake.set()
        self._drop(rec)

    # ------------------------------------------------------------------ chunks

    def _chunk(
        self, rec: _Record, delta: ChoiceDelta, finish: FinishReason | None = None
    ) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=f"chatcmpl-{rec.request_id}",
            created=rec.created,
            model=self.model,
            choices=[ChunkChoice(index=0, delta=delta, finish_reason=finish)],
        )

    def _emit_text(self, rec: _Record, reasoning: str, content: str) -> None:
        if not rec.include_reasoning and not rec.hold_reasoning:
            reasoning = ""
        if rec.hold_reasoning:
            if not content:
                if reasoning:
                    rec.held_reasoning.append(reasoning)
                return
            reasoning = "".join(rec.held_reasoning) + reasoning
            rec.held_reasoning.clear()
            rec.hold_reasoning = False
            if not rec.include_reasoning:
                reasoning = ""
        if not reasoning and not content:
            return
        delta = ChoiceDelta(
            content=content or None,
            reasoning=reasoning or None,
            reasoning_content=(reasoning or None) if self.alias else None,
        )
        self._push(rec, delta)

    def _push(self, rec: _Record, delta: ChoiceDelta) -> None:
        """Queue a delta; past ``buffer_size`` undelivered chunks, merge into the last one."""
        if rec.cancelled:
            return
        if len(rec.queue) >= self.buffer_size:
            last = rec.queue[-1]
            if isinstance(last, ChatCompletionChunk) and last.choices[0].finish_reason is None:
                d = last.choices[0].delta
                if delta.reasoning:
                    d.reasoning = (d.reasoning or "") + delta.reasoning
                    if self.alias:
                        d.reasoning_content = d.reasoning
                if delta.content:
                    d.content = (d.content or "") + delta.content
                rec.coalesced += 1
                rec.wake.set()
                return
        self._queue(rec, self._chunk(rec, delta))

    def _queue(self, rec: _Record, item: ChatCompletionChunk | BaseException) -> None:
        if rec.cancelled:
            return
        rec.queue.append(item)
        rec.wake.set()

    def _fail(self, rec: _Record, err: BaseException) -> None:
        self._queue(rec, err)
        rec.closed = True
        rec.wake.set()
        self._drop(rec)
        self._gone.add(rec.request_id)
        self._aborted.append(rec.request_id)

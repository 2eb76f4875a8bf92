"""The async side: a batch beside the scheduler, each request served as an async iterator
of OpenAI ``chat.completion.chunk`` objects.

The engine loop calls :meth:`ReasoningRuntime.step` once per engine step (synchronous and
cheap: one batched ``ReasoningBatch.step``, then text for the requests that got tokens)
and :meth:`ReasoningRuntime.finish` when a request ends, with the engine's own finish
reason. Consumers read their own :class:`RequestStream` at their own pace.

Request ids: a server's own ids (``"chatcmpl-…"``, UUIDs, ints), each with an int64
*engine id* for the step arrays (``stream.engine_id``; ``runtime/stream/engine_ids.py``).

Threads: every method runs on the event loop's thread. An engine loop on another thread
goes through :meth:`ReasoningRuntime.from_thread` (an anyio blocking portal), so its steps
wake the consumers at once.

Buffer policy (a slow consumer never stalls the step loop): each request holds at most
``buffer_size`` undelivered text chunks (plus its final chunk); when it is full, new text
is coalesced into the last undelivered chunk instead of queueing another one. Nothing is
dropped and the step loop never waits; memory per request is bounded by its own output.

Ending early: a consumer that stops reading (``aclose()``, its task cancelled),
:meth:`ReasoningRuntime.abort`, a stop string matched in the content (finished with
"stop"), a parser that raises or a token id outside the request's vocabulary end that
request alone and free its slot at once; :meth:`ReasoningRuntime.take_aborted` tells the
engine which ids to stop (``engine_ids.py``: their late tokens and ``finish()`` are
dropped). :meth:`ReasoningRuntime.fail` and :meth:`~ReasoningRuntime.close` end every stream.

Engine misuse is an error naming what was wrong: a finish reason outside
:data:`~reasonspan.runtime.wire.openai.FINISH_REASONS`, ``finish()`` of an id that is not open
(:class:`RequestNotOpenError`), an id or offsets that do not fit the step.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
from anyio.from_thread import BlockingPortal

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.step import ReasoningBatch
from reasonspan.runtime.batch.types import RequestUsage
from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.ids import is_id
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.admission import (
    completion_id_of,
    equip,
    new_logprobs,
    request_key,
)
from reasonspan.runtime.stream.consumer import RequestStream as RequestStream
from reasonspan.runtime.stream.engine_ids import EngineIds
from reasonspan.runtime.stream.errors import DuplicateRequestIdError as DuplicateRequestIdError
from reasonspan.runtime.stream.errors import RequestCancelledError as RequestCancelledError
from reasonspan.runtime.stream.errors import RequestKey as RequestKey
from reasonspan.runtime.stream.errors import RequestNotOpenError as RequestNotOpenError
from reasonspan.runtime.stream.errors import RequestTokenError as RequestTokenError
from reasonspan.runtime.stream.errors import RuntimeClosedError as RuntimeClosedError
from reasonspan.runtime.stream.exact import write_rows
from reasonspan.runtime.stream.gone_rows import batch_step
from reasonspan.runtime.stream.logprobs import StepLogprobs, hand_out
from reasonspan.runtime.stream.request import StreamRecord
from reasonspan.runtime.stream.sse_path import SSEPath
from reasonspan.runtime.stream.sse_templates import role_delta
from reasonspan.runtime.stream.stops import stop_strings
from reasonspan.runtime.stream.threads import RuntimeFromThread as RuntimeFromThread
from reasonspan.runtime.toolcalls import Tools
from reasonspan.runtime.wire.events import EventWriter
from reasonspan.runtime.wire.openai import (
    FINISH_REASONS,
    ChoiceDelta,
    FinishReason,
    usage_for,
)
from reasonspan.runtime.wire.region_calls import READ_EVERY

STEP_HISTORY = 1024
"""Step timings kept in :attr:`ReasoningRuntime.step_ns` (the most recent ones)."""


class ReasoningRuntime:
    """Owns a :class:`ReasoningBatch` and turns its step results into OpenAI chunks.

    ``skip_special_tokens`` (default True, as servers do): special tokens are left out of
    the text, except the markers the family keeps in the content (tool markers); a request
    may override it. ``reasoning_content_alias`` also fills ``reasoning_content`` for
    older clients. ``time_steps`` keeps the wall time of the most recent steps
    (:attr:`step_ns`). ``argument_step``: tokens between reads of a streamed call.
    """

    def __init__(
        self,
        *,
        model: str = "reasonspan",
        buffer_size: int = 32,
        reasoning_content_alias: bool = False,
        skip_special_tokens: bool = True,
        batch: ReasoningBatch | None = None,
        time_steps: bool = False,
        argument_step: int = READ_EVERY,
    ) -> None:
        if buffer_size < 1:
            raise ValueError("buffer_size must be at least 1")
        if argument_step < 1:
            raise ValueError("argument_step must be at least 1")
        self.argument_step = argument_step
        self.model = model
        self.buffer_size = buffer_size
        self.alias = reasoning_content_alias
        self.skip_special_tokens = skip_special_tokens
        self.batch = batch if batch is not None else ReasoningBatch()
        self._records: dict[RequestKey, StreamRecord] = {}
        self._by_engine: dict[int, StreamRecord] = {}
        self._ids = EngineIds()
        """Engine ids of string keys, and the ids ended before the engine did."""
        self._closed: BaseException | None = None
        self._sse = SSEPath(reasoning_content_alias, self._fail)
        """The batch-wide output path of the requests added with ``sse=True``."""
        self.time_steps = time_steps
        self.step_ns: deque[int] = deque(maxlen=STEP_HISTORY)
        """With ``time_steps``: wall time of the most recent steps (bounded; see
        :attr:`steps` for the count). Off by default: the clock is a tenth of a one-token
        step's cost, and a server times its engine loop itself."""
        self.steps = 0

    @property
    def rows_by_form(self) -> list[int]:
        """Rows of the SSE output path's batch-wide passes by the form they took
        (``lanes.FORM_BYTES``, ``FORM_DECODE``, ``FORM_EXACT``), since the start."""
        return self._sse.rows_by_form

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._records

    # ------------------------------------------------------------------ requests

    def add(
        self,
        request_id: RequestKey,
        parser: ReasoningParser,
        prompt_token_ids: Sequence[int] | np.ndarray[Any, Any] | None,
        *,
        model: str | None = None,
        completion_id: str | None = None,
        skip_special_tokens: bool | None = None,
        response_format: Any = None,
        tools: Tools | Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        stop: str | Sequence[str] | None = None,
        sse: bool = False,
        include_usage: bool = False,
        stream_arguments: bool = False,
        logprobs: int | None = None,
        writer: EventWriter | None = None,
        **options: Any,
    ) -> RequestStream:
        """Admit a request (``options`` as :meth:`ReasoningBatch.add`) and return its stream.

        ``model``, ``completion_id``: in every chunk (default: the runtime's model; the id,
        ``chatcmpl-<id>`` for an int). ``response_format``: the batch compiles a grammar for it
        (llguidance), gated on the end of reasoning. ``tools`` (``tool_choice`` not "none"):
        the family's calls are taken out of the answer as ``delta.tool_calls``, each whole once
        its markup closed, or with ``stream_arguments=True`` (a server's ``stream=True``) as
        OpenAI streams them (``runtime/wire/region_calls.py``); the turn finishes with
        "tool_calls". ``stop`` (a string or a list) ends the request at the first stop string
        in its content (:meth:`step`; an empty or non-string entry raises
        :class:`InvalidOptionError`). ``sse=True``: read as SSE bytes (``sse_events``, a usage
        chunk last with ``include_usage``), its plain text written by the batch-wide output
        path (``sse_path``); it can still be read as chunks. ``logprobs`` (0 to 20 likeliest
        tokens per position): its chunks carry the log probabilities the engine hands
        :meth:`step` (``runtime/stream/logprobs.py``). ``writer``: the request's events are
        another protocol's (Messages, Responses: ``runtime/wire/events.py``), written by
        ``writer`` at step time (on the output path, as with ``sse=True``) and read as bytes
        (``stream.written()``, ``ready_bytes()``). Nothing is kept when this raises.
        """
        closed = self._closed
        if closed is not None:
            raise RuntimeClosedError("the runtime is closed; no request can be added") from closed
        if not isinstance(parser, ReasoningParser):
            raise TypeError(
                f"add(): parser must be a created ReasoningParser, not {type(parser).__name__}"
            )
        key = request_id if type(request_id) is str else request_key(request_id)
        if key in self._records:
            raise DuplicateRequestIdError(key)
        stops = stop_strings(stop) if stop is not None else ()
        engine_id = self._ids.new(key, self._by_engine)
        skip = self.skip_special_tokens if skip_special_tokens is None else skip_special_tokens
        rec = StreamRecord(
            key=key,
            engine_id=engine_id,
            completion_id=completion_id if completion_id is not None else completion_id_of(key),
            model=model if model is not None else self.model,
            parser=parser,
            skip_special_tokens=bool(skip),
            prompt_tokens=0 if prompt_token_ids is None else len(prompt_token_ids),
            created=int(time.time()),
            hold_reasoning=parser.may_return_reasoning_as_content,
            include_reasoning=bool(options.get("include_reasoning", True)),
            options=options,
            response_format=response_format,
        )
        offered = tools if tool_choice != "none" else None
        equip(rec, parser, offered, stops, include_usage, self.argument_step * stream_arguments)
        rec.logprobs = new_logprobs(parser, logprobs)
        rec.writer = writer
        # Everything that can fail is above or in batch.add(), which validates first
        # (a response_format that does not compile, or no grammar engine installed).
        if response_format is not None:
            options = {**options, "response_format": response_format}
        self.batch.add(engine_id, parser, prompt_token_ids, **options)
        self._ids.claim(key, engine_id)
        self._records[key] = rec
        self._by_engine[engine_id] = rec
        self._open_output(rec, sse)
        return RequestStream(self, rec)

    def _open_output(self, rec: StreamRecord, sse: bool) -> None:
        """Queue the request's first chunk (the role; a writer makes its own opening
        events) and put it on the output path when it is read as bytes."""
        if rec.writer is None:
            rec.push(role_delta(), self.alias, self.buffer_size)
        slot = self.batch.slot_of(rec.engine_id)
        if sse or rec.writer is not None:
            self._sse.admit(rec, slot)
        else:
            self._sse.cover(slot)

    def _record(self, request_id: object) -> StreamRecord | None:
        if isinstance(request_id, str):
            return self._records.get(request_id)
        if is_id(request_id):
            return self._by_engine.get(int(request_id))  # type: ignore[call-overload]
        return None

    def stream_of(self, request_id: RequestKey) -> RequestStream | None:
        """A handle on an open request (by its id or engine id), or None."""
        rec = self._record(request_id)
        return None if rec is None else RequestStream(self, rec)

    def take_aborted(self) -> list[int]:
        """Engine ids the engine should stop generating for, since the last call: their
        consumer went away, they were aborted, their parser failed, the engine sent them a
        token id outside their vocabulary, or a stop string matched (those were finished
        with "stop"). Tokens for them that are already in flight are dropped by
        ``step()``, and a ``finish()`` of them is ignored."""
        return self._ids.take()

    def abort(self, request_id: RequestKey) -> bool:
        """End an open request now (client gone, server timeout): its slot is freed at
        once, a reader still waiting gets :class:`RequestCancelledError`, and the engine
        hears of it from :meth:`take_aborted`. False when the request is not open."""
        rec = self._record(request_id)
        if rec is None:
            return False
        self._end_early(rec, RequestCancelledError(f"request {rec.key!r} was aborted"))
        return True

    def remove(self, request_id: RequestKey) -> bool:
        """The batch's name for :meth:`abort`: forget the request now, freeing its slot."""
        return self.abort(request_id)

    def consumer_gone(self, rec: StreamRecord) -> None:
        """The consumer went away (its iteration was cancelled or closed): called by the
        request's :class:`RequestStream`, which holds ``rec``."""
        if rec.closed:
            rec.cancelled = True
            rec.queue.clear()
            return
        self._end_early(rec, None)

    def _end_early(self, rec: StreamRecord, err: BaseException | None) -> None:
        if rec.closed:
            return
        rec.cancelled = True
        rec.closed = True
        rec.queue.clear()
        if err is not None:
            rec.queue.append(err)
        rec.notify()
        self._drop(rec)
        self._gone(rec)

    def _gone(self, rec: StreamRecord) -> None:
        """The runtime ended the request before the engine did: its late tokens and
        ``finish()`` are dropped, and the engine hears of it from :meth:`take_aborted`."""
        self._ids.forget(rec.engine_id, rec.key)
        self._ids.notice(rec.engine_id)

    def _drop(self, rec: StreamRecord) -> None:
        key, eid = rec.key, rec.engine_id
        records, by_engine = self._records, self._by_engine
        if records.get(key) is rec:
            del records[key]
        if by_engine.get(eid) is rec:
            del by_engine[eid]
        if rec.sse_slot >= 0:
            self._sse.release(rec)
        if eid in self.batch:
            self.batch.remove(eid)

    def fail(self, exc: BaseException) -> None:
        """The engine loop died: every open stream ends with :class:`RuntimeClosedError`
        (``exc`` as its cause), every slot is freed, and no request can be added."""
        err = RuntimeClosedError(f"the engine failed: {exc!r}")
        err.__cause__ = exc
        self._close_all(err)

    def close(self) -> None:
        """Shut down: every open stream ends with :class:`RuntimeClosedError`."""
        self._close_all(RuntimeClosedError("the runtime was closed"))

    def _close_all(self, err: RuntimeClosedError) -> None:
        if self._closed is None:
            self._closed = err
        for rec in list(self._records.values()):
            rec.queue.append(err)
            rec.closed = True
            rec.notify()
            self._drop(rec)
        self._ids.aborted.clear()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # ------------------------------------------------------------------ threads

    @asynccontextmanager
    async def from_thread(self) -> AsyncIterator[RuntimeFromThread]:
        """A handle for an engine loop on another thread, open while the block runs::

            async with runtime.from_thread() as link:
                threading.Thread(target=engine_loop, args=(link,)).start()
                ...  # serve; the engine thread calls link.step(...), link.finish(...)

        Every call hops onto the event loop through an anyio ``BlockingPortal`` and wakes
        the consumers at once. ``link.call(fn)`` runs several runtime calls in one hop.
        """
        async with BlockingPortal() as portal:
            yield RuntimeFromThread(self, portal)

    # ------------------------------------------------------------------ the step

    def step(
        self,
        request_ids: np.ndarray[Any, Any] | Sequence[int],
        token_ids: np.ndarray[Any, Any] | Sequence[int],
        offsets: np.ndarray[Any, Any] | Sequence[int],
        logprobs: StepLogprobs | None = None,
    ) -> BatchStepResult:
        """One engine step for the whole batch (engine ids); pushes text to each stream.

        Tokens of requests that ended early (aborted, cancelled, failed, stopped) are
        dropped quietly. A token id outside one request's vocabulary fails that request
        alone (its stream ends with :class:`RequestTokenError`, naming its request id; the
        engine hears of it from :meth:`take_aborted`) and the other requests' tokens are
        applied; the returned result then has no row for it. Any other invalid input
        (unknown ids, offsets that do not fit, ``logprobs`` whose shape is not the step's)
        raises before any request changes. A request that matches one of its stop strings
        is finished here with "stop" (``runtime/stream/stop_step.py``). ``logprobs``: the
        engine's log probabilities of this step's tokens, for the requests that asked."""
        if self._closed is not None:
            raise RuntimeClosedError("step() on a closed runtime") from self._closed
        if logprobs is not None:
            logprobs = logprobs.checked(len(token_ids))
        t0 = time.perf_counter_ns() if self.time_steps else 0
        room = self.buffer_size
        sse = self._sse
        res = self.batch.step_one(request_ids, token_ids, offsets)
        rows: list[int] | None = None  # the rows the exact path below takes (None: all)
        written = False  # one request alone, its event written by the output path: done
        if res is None:
            ids = self._ids
            res = batch_step(
                self.batch, ids.gone, self._by_engine, self._fail, request_ids, token_ids, offsets
            )
            rows = sse.emit(res, room)
        elif (one := res.one) is not None:  # one request, one token
            written = bool(sse.count) and sse.emit_one(one[2], one[3], one[1], room)
        elif sse.count:  # one request with several tokens (a draft model's)
            _, toks, offs, labs, slots = res.lists()
            written = sse.write_row(slots[0], labs, toks, 0, offs[1], room)
            if not written:
                rows = sse.emit(res, room)
        if logprobs is not None:  # a request whose entries are wrong fails alone
            for rec, exc in hand_out(logprobs, self._by_engine, request_ids, token_ids, offsets):
                self._fail(rec, RequestFailedError(rec.engine_id, rec.parser.name, exc))
        if written:
            self.steps += 1
            if t0:
                self.step_ns.append(time.perf_counter_ns() - t0)
            return res
        touched = write_rows(
            res, rows, self._by_engine, self.alias, room, self._fail, self._end_on_stop
        )
        for got in touched:
            if not got.closed:
                sse.refresh(got)
        self.steps += 1
        if t0:
            self.step_ns.append(time.perf_counter_ns() - t0)
        return res

    def finish(self, request_id: RequestKey, finish_reason: FinishReason = "stop") -> None:
        """The engine ended the request: flush held tokens, send the final chunk and usage.

        ``finish_reason`` is the engine's and is kept as given ("stop" when the model
        emitted its end of sequence, "length" at ``max_tokens``), except that "stop" after
        a tool call (harmony's ``<|call|>``) is sent as "tool_calls", as OpenAI does, and
        that a stop string matched in the last text makes it "stop"; whether the output
        ended inside reasoning is reported apart, as ``usage.reasoning_ended``. It must be
        one of :data:`~reasonspan.runtime.wire.openai.FINISH_REASONS` ("stop", "length",
        "tool_calls", "content_filter", "error"); anything else raises
        :class:`InvalidOptionError` and changes nothing.

        An id that is not open raises :class:`RequestNotOpenError` (never added, or
        finished twice: an engine bug), except an id the runtime ended itself (aborted,
        cancelled, failed, stopped on a stop string; the engine may call finish before
        it hears of that from :meth:`take_aborted`) or any id once the runtime is closed:
        those are ignored."""
        if finish_reason not in FINISH_REASONS:
            raise InvalidOptionError(
                "finish_reason", finish_reason, f"one of {', '.join(map(repr, FINISH_REASONS))}"
            )
        rec = self._record(request_id)
        if rec is None or rec.closed:
            if self._closed is not None or self._ids.is_gone(request_id):
                return
            raise RequestNotOpenError(request_id, "finish()")
        try:
            tail = self.batch.finish(rec.engine_id)
        except RequestFailedError as err:
            self._fail(rec, err)
            return
        try:
            finish_reason = rec.finish_text(self.alias, self.buffer_size, tail, finish_reason)
        except Exception as exc:  # as in step(): this request alone fails
            self._fail(rec, RequestFailedError(rec.engine_id, rec.parser.name, exc))
            return
        self._end(rec, finish_reason, tail.usage)

    def _end(self, rec: StreamRecord, finish_reason: FinishReason, u: RequestUsage) -> None:
        """Send the final chunk (finish reason, usage) and free the request's slot."""
        rec.finish_reason = finish_reason
        rec.usage = usage_for(
            rec.prompt_tokens, u.completion_tokens, u.reasoning_tokens, u.reasoning_ended
        )
        chunk = rec.chunk(ChoiceDelta(), finish_reason)
        chunk.usage = rec.usage
        try:
            rec.put(chunk)
        except Exception as exc:  # its writer raised: the request ends with the error
            rec.queue.append(RequestFailedError(rec.engine_id, rec.parser.name, exc))
        rec.closed = True
        rec.notify()
        self._drop(rec)

    def _end_on_stop(self, rec: StreamRecord) -> None:
        """A stop string matched: finish the request now with "stop" and tell the engine
        (:meth:`take_aborted`). Tokens the batch still held come after the match: dropped."""
        try:
            tail = self.batch.finish(rec.engine_id)
        except RequestFailedError as err:
            self._fail(rec, err)
            return
        if rec.hold_reasoning:
            # The stop string is content: no swap can happen, the held text is reasoning.
            held = "".join(rec.held_reasoning)
            rec.held_reasoning.clear()
            rec.hold_reasoning = False
            rec.emit_text(self.alias, self.buffer_size, held, "")
        self._end(rec, "stop", tail.usage)
        self._gone(rec)

    def _fail(self, rec: StreamRecord, err: BaseException) -> None:
        rec.put(err)
        rec.closed = True
        rec.notify()
        self._drop(rec)
        self._gone(rec)

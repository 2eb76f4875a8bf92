"""The runtime's labelled output as OpenAI's Responses API: a ``response`` object, or its
stream of typed events.

Reasoning is a ``reasoning`` output item (its text as ``content`` of type
``reasoning_text``; ``summary`` stays empty: this server writes no summaries), the answer a
``message`` item (``output_text``), each call a ``function_call`` item (``call_id``,
``name``, ``arguments``). Streaming, the items are the request's :class:`Segments` and the
events follow OpenAI's order and names: ``response.created``, ``response.in_progress``,
then per item ``response.output_item.added``, ``response.content_part.added``, its deltas
(``response.reasoning_text.delta``, ``response.output_text.delta``,
``response.function_call_arguments.delta``), their ``.done``, ``response.content_part.done``
and ``response.output_item.done``; last ``response.completed``, or ``response.incomplete``
with ``incomplete_details.reason: "max_output_tokens"`` when the token limit cut the turn.
Every event carries its ``sequence_number``.

Log probabilities (``include: ["message.output_text.logprobs"]`` or ``top_logprobs``): the
``output_text`` part carries the entries of the answer's tokens (``runtime/stream/logprobs.py``:
its calls' tokens too, as Chat Completions' ``logprobs.content`` does), and each
``response.output_text.delta`` the entries decided since the one before it.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.wire.openai import (
    ChatCompletion,
    ChatCompletionChunk,
    ChoiceLogprobs,
    FinishReason,
    Usage,
)
from reasonspan.serving.responses import ResponsesRequest, tools_echo, wants_logprobs
from reasonspan.serving.segments import (
    HOLE,
    Closed,
    Delta,
    Opened,
    Segment,
    SegmentEncoder,
    Template,
    encode_events,
    json_string,
)
from reasonspan.serving.segments import Event as SegmentEvent

_PREFIX = {"reasoning": "rs", "text": "msg", "call": "fc"}
_encode = msgspec.json.encode
_random_bits = random.getrandbits


def _item_id(kind: str) -> str:
    """A new output item's id: its kind's prefix and 32 random hex digits (as OpenAI's
    look). Not ``uuid4``: an id names an item within its response, it guards nothing, and
    ``os.urandom`` costs a tenth of a streamed response's own events on a VM."""
    return f"{_PREFIX[kind]}_{_random_bits(128):032x}"


Json = str | msgspec.Raw
"""A value an item is built with: a string, or JSON already encoded (a template's hole)."""


def _item(
    kind: str,
    item_id: Json,
    text: Json,
    status: Json,
    call: tuple[Json, Json] = ("", ""),
    logprobs: list[Any] | msgspec.Raw | None = None,
) -> dict[str, Any]:
    """One output item of a kind, as the response and its events carry it."""
    if kind == "reasoning":
        content = [{"type": "reasoning_text", "text": text}] if status != "in_progress" else []
        return {"type": "reasoning", "id": item_id, "summary": [], "content": content}
    if kind == "text":
        parts = [] if status == "in_progress" else [_text_part(text, logprobs)]
        return {
            "type": "message",
            "id": item_id,
            "role": "assistant",
            "status": status,
            "content": parts,
        }
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call[0],
        "name": call[1],
        "arguments": text,
        "status": status,
    }


def _text_part(text: Json, logprobs: list[Any] | msgspec.Raw | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}


def _answer_entries(got: ChoiceLogprobs | msgspec.UnsetType) -> list[Any]:
    """A choice's ``logprobs.content`` entries as plain objects ([]: none)."""
    if isinstance(got, msgspec.UnsetType) or not got.content:
        return []
    return msgspec.to_builtins(got.content)  # type: ignore[no-any-return]


def _usage(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {
            "reasoning_tokens": usage.completion_tokens_details.reasoning_tokens
        },
        "total_tokens": usage.total_tokens,
    }


class ResponseShape:
    """What every snapshot of one response repeats from its request."""

    def __init__(self, response_id: str, req: ResponsesRequest, created_at: int) -> None:
        self.response_id = response_id
        self.req = req
        self.created_at = created_at
        self._echo: msgspec.Raw | None = None

    def echo(self) -> msgspec.Raw:
        """The request's settings every snapshot repeats, encoded once (a streamed
        response sends two snapshots): the members from ``instructions`` to
        ``metadata``, without braces."""
        got = self._echo
        if got is None:
            req = self.req
            fmt = req.text.format if req.text is not None else None
            members = {
                "instructions": req.instructions,
                "tools": tools_echo(req),
                "tool_choice": msgspec.to_builtins(req.tool_choice) or "auto",
                "parallel_tool_calls": req.parallel_tool_calls is not False,
                "max_output_tokens": req.max_output_tokens,
                "temperature": req.temperature,
                "top_p": req.top_p,
                "text": {"format": msgspec.to_builtins(fmt) if fmt else {"type": "text"}},
                "reasoning": {
                    "effort": req.reasoning.effort if req.reasoning else None,
                    "summary": None,
                },
                "store": False,
                "metadata": req.metadata or {},
            }
            got = self._echo = msgspec.Raw(_encode(members)[1:-1])
        return got

    def snapshot(
        self,
        status: str,
        output: list[dict[str, Any]] | list[msgspec.Raw],
        usage: Usage | None = None,
        finish: FinishReason | None = None,
    ) -> msgspec.Raw:
        """The ``response`` object as it stands (encoded: a snapshot is only sent)."""
        incomplete = {"reason": "max_output_tokens"} if finish == "length" else None
        head = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.req.model,
            "output": output,
        }
        tail = {
            "usage": _usage(usage),
            "incomplete_details": incomplete,
            "error": None,
            "previous_response_id": None,
            "truncation": self.req.truncation or "disabled",
        }
        parts = (_encode(head)[:-1], self.echo(), _encode(tail)[1:])
        return msgspec.Raw(b",".join(parts))


def status_of(finish: FinishReason | None) -> str:
    return "incomplete" if finish == "length" else "completed"


def response_of(shape: ResponseShape, completion: ChatCompletion) -> msgspec.Raw:
    """The ``response`` object of a whole completion."""
    choice = completion.choices[0]
    msg = choice.message
    status = status_of(choice.finish_reason)
    output = []
    reasoning = msg.reasoning if msg.reasoning is not None else msg.reasoning_content
    if reasoning:
        output.append(_item("reasoning", _item_id("reasoning"), reasoning, status))
    if msg.content:
        entries = _answer_entries(choice.logprobs)
        output.append(_item("text", _item_id("text"), msg.content, status, logprobs=entries))
    for call in msg.tool_calls or ():
        ids = (call.id, call.function.name)
        output.append(_item("call", _item_id("call"), call.function.arguments, "completed", ids))
    return shape.snapshot(status, output, completion.usage, choice.finish_reason)


_DELTA_EVENT = {
    "reasoning": "response.reasoning_text.delta",
    "text": "response.output_text.delta",
    "call": "response.function_call_arguments.delta",
}


def _event_template(kind: str, data: dict[str, Any]) -> Template:
    """An event with a hole for its sequence number, then ``data``'s holes."""
    event = {"type": kind, "sequence_number": HOLE, **data}
    return Template(b"event: " + kind.encode() + b"\ndata: " + _encode(event) + b"\n\n")


_WHERE = {"item_id": HOLE, "output_index": HOLE}
_ADDED = {
    kind: _event_template(
        "response.output_item.added",
        {"output_index": HOLE, "item": _item(kind, HOLE, "", "in_progress", (HOLE, HOLE))},
    )
    for kind in _PREFIX
}
"""Holes: sequence number, output index, item id (a call's: and its call id, name)."""
_PART_ADDED = {
    "reasoning": {"type": "reasoning_text", "text": ""},
    "text": _text_part(""),
}
_PART_ADDED_EVENT = {
    kind: _event_template(
        "response.content_part.added", {**_WHERE, "content_index": 0, "part": part}
    )
    for kind, part in _PART_ADDED.items()
}
_TEXT_DONE = {
    "reasoning": _event_template(
        "response.reasoning_text.done", {**_WHERE, "content_index": 0, "text": HOLE}
    ),
    "text": _event_template(
        "response.output_text.done",
        {**_WHERE, "content_index": 0, "text": HOLE, "logprobs": HOLE},
    ),
}
"""Holes: sequence number, item id, output index, text (an answer's: and its entries)."""
_PART_DONE = {
    "reasoning": _event_template(
        "response.content_part.done",
        {**_WHERE, "content_index": 0, "part": {"type": "reasoning_text", "text": HOLE}},
    ),
    "text": _event_template(
        "response.content_part.done",
        {**_WHERE, "content_index": 0, "part": _text_part(HOLE, HOLE)},
    ),
}
_ARGUMENTS_DONE = _event_template(
    "response.function_call_arguments.done", {**_WHERE, "arguments": HOLE, "name": HOLE}
)
_ITEM = {
    "reasoning": Template(_encode(_item("reasoning", HOLE, HOLE, "completed"))),
    "text": Template(_encode(_item("text", HOLE, HOLE, HOLE, logprobs=HOLE))),
    "call": Template(_encode(_item("call", HOLE, HOLE, "completed", (HOLE, HOLE)))),
}
"""A closed item. Holes: id, then reasoning: text; answer: status, text, entries; call:
call id, name, arguments."""
_ITEM_DONE = _event_template("response.output_item.done", {"output_index": HOLE, "item": HOLE})
_DELTA_HEAD = {
    kind: Template(
        b"event: "
        + event.encode()
        + b"\ndata: "
        + _encode(
            {
                "type": event,
                **_WHERE,
                **({"content_index": 0} if kind != "call" else {}),
                **({"logprobs": []} if kind == "text" else {}),
            }
        )[:-1]
        + b',"delta":'
    )
    for kind, event in _DELTA_EVENT.items()
}
"""A delta event up to its text (the same for every delta of an item). Holes: item id,
output index."""


_TAILS: list[bytes] = []
"""``","sequence_number":N}\n\n`` by N, the end of a text delta (:func:`_tail`): a
look-up instead of formatting a number for every token of every response."""
_TAILS_CAP = 1 << 16


def _tail(seq: int) -> bytes:
    """A text delta's end after its escaped text, sequence number ``seq`` (the table grows
    to :data:`_TAILS_CAP` numbers; past it, each is formatted)."""
    tails = _TAILS
    if seq >= _TAILS_CAP:
        return b'","sequence_number":%d}\n\n' % seq
    while len(tails) <= seq:
        start = len(tails)
        tails.extend(b'","sequence_number":%d}\n\n' % i for i in range(start, 2 * start + 64))
    return tails[seq]


class ResponseEvents(SegmentEncoder):
    """The event stream of one response. The runtime has it write the request's events at
    step time (``ReasoningRuntime.add(..., writer=...)``: :meth:`text`, :meth:`chunk`);
    :meth:`stream` sends them between the opening and closing events. Its opening events
    are made with it, so their sequence numbers come before the first step's."""

    def __init__(self, shape: ResponseShape) -> None:
        super().__init__()
        self.shape = shape
        self._seq = 0
        self._ids: dict[int, bytes] = {}
        """Each item's id, as JSON."""
        self._done: list[bytes] = []
        """Each closed item, as JSON (the final response lists them)."""
        self._answer: tuple[int, bytes, bytes, bytes, list[Any]] | None = None
        """The last answer item closed: its place in :attr:`_done`, id, status, text and
        entries (entries decided after it closed are added to it at the end)."""
        self._logprobs = wants_logprobs(shape.req)
        self._pending: list[Any] = []
        """Answer entries not sent with a text delta yet (:meth:`chunk`)."""
        self._sent: dict[int, list[Any]] = {}
        """Per text item, every entry its deltas carried (its ``.done`` and part repeat them)."""
        snap = b'"response":' + _encode(shape.snapshot("in_progress", []))
        self._head = self._members("response.created", snap) + self._members(
            "response.in_progress", snap
        )

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        """One event: its type, its sequence number, then ``data``'s members."""
        return self._members(kind, _encode(data)[1:-1])

    def _members(self, kind: str, members: bytes) -> bytes:
        """:meth:`_event` of ``data`` already encoded, without its braces (``members``,
        not empty): the bytes msgspec would write for the whole event."""
        seq = self._seq
        self._seq = seq + 1
        k = kind.encode()
        return b'event: %b\ndata: {"type":"%b","sequence_number":%d,%b}\n\n' % (k, k, seq, members)

    def start(self) -> bytes:
        return self._head

    def _where(self, seg: Segment) -> dict[str, Any]:
        return {"item_id": msgspec.Raw(self._ids[seg.index]), "output_index": seg.index}

    def _number(self) -> bytes:
        """The next event's sequence number, as JSON."""
        seq = self._seq
        self._seq = seq + 1
        return b"%d" % seq

    def _opened(self, seg: Segment) -> list[bytes]:
        kind, index = seg.kind, b"%d" % seg.index
        item_id = self._ids[seg.index] = _encode(_item_id(kind))
        if kind == "call":
            call = (_encode(seg.call_id), _encode(seg.name))
            return [_ADDED[kind].fill(self._number(), index, item_id, *call)]
        return [
            _ADDED[kind].fill(self._number(), index, item_id),
            _PART_ADDED_EVENT[kind].fill(self._number(), item_id, index),
        ]

    def _delta(self, seg: Segment, text: str | bytes) -> bytes:
        """``prefix`` (the event up to its text, the same for every delta of the item)
        + the text as a JSON string + the sequence number: what msgspec would write for
        the whole event, without building it."""
        if self._logprobs and seg.kind == "text":
            return self._delta_with_logprobs(seg, text)
        if not seg.prefix:
            seg.prefix = _DELTA_HEAD[seg.kind].fill(self._ids[seg.index], b"%d" % seg.index)
        seq = self._seq
        self._seq = seq + 1
        return seg.prefix + json_string(text)[:-1] + _tail(seq)  # (the tail closes it)

    def _delta_with_logprobs(self, seg: Segment, text: str | bytes) -> bytes:
        """A text delta with the entries decided since the last one (the slower way: only
        a request that asked for log probabilities takes it)."""
        entries, self._pending = self._pending, []
        self._sent.setdefault(seg.index, []).extend(entries)
        delta = msgspec.json.decode(json_string(text)) if type(text) is bytes else text
        where = {**self._where(seg), "content_index": 0, "logprobs": entries, "delta": delta}
        return self._event(_DELTA_EVENT["text"], where)

    def _closed(self, seg: Segment, status: str) -> list[bytes]:
        kind, text = seg.kind, seg.as_json()
        item_id, index = self._ids[seg.index], b"%d" % seg.index
        if kind == "call":
            name = _encode(seg.name)
            done = _ARGUMENTS_DONE.fill(self._number(), item_id, index, text, name)
            item = _ITEM[kind].fill(item_id, _encode(seg.call_id), name, text)
            out = [done]
        elif kind == "reasoning":
            out = [
                _TEXT_DONE[kind].fill(self._number(), item_id, index, text),
                _PART_DONE[kind].fill(self._number(), item_id, index, text),
            ]
            item = _ITEM[kind].fill(item_id, text)
        else:
            entries = self._sent.setdefault(seg.index, [])
            entries += self._pending  # (a trailing newline's: its text was trimmed)
            self._pending = []
            got, state = _encode(entries), _encode(status)
            out = [
                _TEXT_DONE[kind].fill(self._number(), item_id, index, text, got),
                _PART_DONE[kind].fill(self._number(), item_id, index, text, got),
            ]
            item = _ITEM[kind].fill(item_id, state, text, got)
            self._answer = (len(self._done), item_id, state, text, entries)
        self._done.append(item)
        out.append(_ITEM_DONE.fill(self._number(), index, item))
        return out

    def _events(self, segment_events: list[SegmentEvent], status: str = "completed") -> list[bytes]:
        out: list[bytes] = []
        for ev in segment_events:
            if isinstance(ev, Opened):
                out += self._opened(ev.segment)
            elif isinstance(ev, Delta):
                out.append(self._delta(ev.segment, ev.text))
            elif isinstance(ev, Closed):
                out += self._closed(ev.segment, status)
        return out

    def chunk(self, chunk: ChatCompletionChunk) -> bytes:
        """The events of one chunk of the request (none for a chunk with no text)."""
        if self._logprobs:
            for choice in chunk.choices:
                self._pending += _answer_entries(choice.logprobs)
        return super().chunk(chunk)

    def text(self, channel: int, escaped: bytes) -> bytes:
        """The events of escaped text of ``channel`` the runtime's output path wrote."""
        if channel == self._channel:  # one more delta of the open item
            self._parts.append(escaped)
            seq = self._seq
            self._seq = seq + 1
            try:
                return self._pre + escaped + _TAILS[seq]
            except IndexError:
                return self._pre + escaped + _tail(seq)
        return self._written(self._segments.text(channel, escaped))

    def _track(self) -> None:
        if self._logprobs:  # (every text delta carries entries: never the common case)
            self._channel = -1
        else:
            super()._track()

    def end(self, finish: FinishReason | None, usage: Usage | None) -> bytes:
        status = status_of(finish)
        out = self._events(self._segments.end(), status)
        self._track()
        answer = self._answer
        if self._pending and answer is not None:
            # Decided after the answer's text closed (a call after it): the final response
            # carries them in the answer's part, as a whole response does.
            at, item_id, state, text, entries = answer
            more = _encode([*entries, *self._pending])
            self._done[at] = _ITEM["text"].fill(item_id, state, text, more)
        output = [msgspec.Raw(item) for item in self._done]
        snap = self.shape.snapshot(status, output, usage, finish)
        kind = "response.incomplete" if status == "incomplete" else "response.completed"
        out.append(self._event(kind, {"response": snap}))
        return b"".join(out)

    def error(self, exc: ReasonspanError) -> bytes:
        return self._event("error", {"message": str(exc), "code": "server_error", "param": None})

    def stream(
        self,
        written: AsyncIterable[bytes],
        finished: Callable[[], tuple[FinishReason | None, Usage | None]],
    ) -> AsyncIterator[bytes]:
        """Every event of the response (``written``: what the runtime had it write,
        ``RequestStream.written()``); a request that fails ends with an ``error`` event."""
        return encode_events(self, written, lambda: self.end(*finished()))

"""A request's chunks cut into segments of one kind, in the order the model wrote them.

The Responses API (output items) and Anthropic's Messages API (content blocks) both send
a turn as a sequence of parts: reasoning, answer text, one part per tool call, each opened,
filled by deltas and closed. This is the one place that decides where a part begins and
ends; each protocol's encoder only names the events. A part opens when its kind of text
first arrives and closes when another part opens or the stream ends, so the parts keep
the order the model wrote; a tool call is a part of its own from its first delta (which
carries its id and name) and its arguments arrive as fragments that join to its JSON text.

Text the runtime's output path wrote arrives still JSON-escaped (``RequestStream.text_items``,
``runtime/stream/text_events.py``): a delta then holds those bytes, which an encoder puts
between the quotes of its event as they are, and a segment's text is decoded only when it
is asked for whole (:attr:`Segment.joined`).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.core.labels import REASONING
from reasonspan.runtime.stream.text_events import TextEvent
from reasonspan.runtime.wire.openai import ChatCompletionChunk

Kind = Literal["reasoning", "text", "call"]


@dataclass(slots=True)
class Segment:
    """One part of the turn: its position among the parts, its kind and its text so far
    (a call's arguments); a call's id and name."""

    index: int
    kind: Kind
    text: list[str | bytes] = field(default_factory=list)
    """Its text in pieces: ``str``, or ``bytes`` still JSON-escaped (module doc)."""
    call_id: str = ""
    name: str = ""
    prefix: bytes = b""
    """What the encoder's delta events of this segment start with (its own cache: the
    event bytes before the delta's text)."""

    @property
    def joined(self) -> str:
        return "".join(p if type(p) is str else _unescape(p) for p in self.text)  # type: ignore[arg-type]


_unescape_str = msgspec.json.Decoder(str).decode


def _unescape(escaped: bytes) -> str:
    return _unescape_str(b'"' + escaped + b'"')


def json_string(text: str | bytes) -> bytes:
    """A delta's text as a JSON string (escaped bytes are put between quotes as they are)."""
    return b'"' + text + b'"' if type(text) is bytes else msgspec.json.encode(text)


@dataclass(slots=True)
class Opened:
    segment: Segment


@dataclass(slots=True)
class Delta:
    segment: Segment
    text: str | bytes
    """``bytes``: JSON-escaped (:func:`json_string`)."""


@dataclass(slots=True)
class Closed:
    segment: Segment


Event = Opened | Delta | Closed


class Segments:
    """Feed a request's chunks in order (:meth:`feed`), then :meth:`end`; each returns the
    opens, deltas and closes it caused. ``parts`` holds every segment, in order."""

    def __init__(self) -> None:
        self.parts: list[Segment] = []
        self._open: Segment | None = None
        self._calls: dict[int, Segment] = {}

    def _switch(self, kind: Kind, out: list[Event]) -> Segment:
        out.extend(self.end())
        seg = Segment(len(self.parts), kind)
        self.parts.append(seg)
        self._open = seg
        out.append(Opened(seg))
        return seg

    def continued(self, event: TextEvent) -> Segment | None:
        """The open segment, the event's text added to it, when the event continues it
        (the common case: no part opens or closes, so an encoder writes one delta and need
        not look at events); None: :meth:`text` decides."""
        seg = self._open
        if seg is None or seg.kind != ("reasoning" if event[0] == REASONING else "text"):
            return None
        seg.text.append(event[1])
        return seg

    def text(self, event: TextEvent) -> list[Event]:
        """The events of a text event of the runtime's output path (module doc)."""
        out: list[Event] = []
        channel, escaped = event
        self._text("reasoning" if channel == REASONING else "text", escaped, out)
        return out

    def _text(self, kind: Kind, text: str | bytes, out: list[Event]) -> None:
        seg = self._open
        if seg is None or seg.kind != kind:
            seg = self._switch(kind, out)
        seg.text.append(text)
        out.append(Delta(seg, text))

    def feed(self, chunk: ChatCompletionChunk) -> list[Event]:
        out: list[Event] = []
        if not chunk.choices:
            return out
        delta = chunk.choices[0].delta
        reasoning = delta.reasoning if delta.reasoning is not None else delta.reasoning_content
        if reasoning:
            self._text("reasoning", reasoning, out)
        if delta.content:
            self._text("text", delta.content, out)
        for call in delta.tool_calls or ():
            fn = call.function
            seg = self._calls.get(call.index)
            if seg is None:
                seg = self._switch("call", out)
                seg.call_id = call.id or ""
                seg.name = fn.name if fn is not None and fn.name else ""
                self._calls[call.index] = seg
            if fn is not None and fn.arguments:
                seg.text.append(fn.arguments)
                out.append(Delta(seg, fn.arguments))
        return out

    def end(self) -> list[Event]:
        """Close the open segment (the stream ended, or another part begins)."""
        seg, self._open = self._open, None
        return [] if seg is None else [Closed(seg)]


class EventEncoder(Protocol):
    """A protocol's writer of one request's events (Messages, Responses)."""

    def start(self) -> list[bytes]: ...

    def chunk(self, chunk: ChatCompletionChunk) -> list[bytes]: ...

    def text(self, event: TextEvent) -> list[bytes]: ...

    def error(self, exc: ReasonspanError) -> bytes: ...


async def encode_events(
    encoder: EventEncoder,
    items: AsyncIterable[ChatCompletionChunk | TextEvent],
    end: Callable[[], list[bytes]],
) -> AsyncIterator[bytes]:
    """Every event of a request: the opening ones, those of each item (a chunk, or a text
    event of the runtime's output path), then ``end()``'s (called once the items ended); a
    request that fails ends with the encoder's error event instead."""
    for b in encoder.start():
        yield b
    try:
        async for item in items:
            for b in encoder.text(item) if type(item) is tuple else encoder.chunk(item):  # type: ignore[arg-type]
                yield b
    except ReasonspanError as exc:
        yield encoder.error(exc)
        return
    for b in end():
        yield b

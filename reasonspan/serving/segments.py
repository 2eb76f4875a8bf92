"""A request's chunks cut into segments of one kind, in the order the model wrote them.

The Responses API (output items) and Anthropic's Messages API (content blocks) both send
a turn as a sequence of parts: reasoning, answer text, one part per tool call, each opened,
filled by deltas and closed. This is the one place that decides where a part begins and
ends; each protocol's encoder only names the events. A part opens when its kind of text
first arrives and closes when another part opens or the stream ends, so the parts keep
the order the model wrote; a tool call is a part of its own from its first delta (which
carries its id and name) and its arguments arrive as fragments that join to its JSON text.

The encoders are the runtime's writers of these protocols (``runtime/wire/events.py``): the
runtime hands them each piece of a request's output at step time, so parts open and close
in the step that decided them. Text the runtime's output path wrote arrives still
JSON-escaped (:meth:`Segments.text`): a delta then holds those bytes, which an encoder puts
between the quotes of its event as they are, and a segment's text is decoded only when it
is asked for whole (:attr:`Segment.joined`).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.core.labels import CONTENT, REASONING
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

    def as_json(self) -> bytes:
        """Its whole text as a JSON string, for an encoder that sends it whole (escaped
        pieces are joined as they are, not decoded and encoded again)."""
        parts = self.text
        try:
            return b'"' + b"".join(parts) + b'"'  # type: ignore[arg-type]
        except TypeError:  # (some pieces came as str: from the exact path's chunks)
            return msgspec.json.encode(self.joined)

    @property
    def joined(self) -> str:
        """Its whole text (escaped pieces decoded in one go)."""
        parts = self.text
        try:
            return _unescape(b"".join(parts))  # type: ignore[arg-type]
        except TypeError:  # (some pieces came as str: from the exact path's chunks)
            return "".join(p if type(p) is str else _unescape(p) for p in parts)  # type: ignore[arg-type]


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
    opens, deltas and closes it caused. ``parts`` holds every segment, in order.

    Parts are sent one after another, never interleaved (a block or item stops before the
    next starts). The runtime's streamed calls can be: a call's last argument text (its
    closing brace) waits until its whole region has been read (``region_calls.py``: a
    region cut by ``max_tokens`` drops its calls), so in a region of several calls the
    first one's end comes after the next ones began. The first call of a run of calls is
    streamed as it is written; the calls after it are held, their text gathered, and sent
    whole, in order, once the run ends (text, or the end of the stream), when every one of
    them is complete."""

    def __init__(self) -> None:
        self.parts: list[Segment] = []
        self._open: Segment | None = None
        self._calls: dict[int, Segment] = {}
        self._held: list[Segment] = []
        """Calls begun while another call is open (see the class doc), in order."""

    def _switch(self, kind: Kind, out: list[Event]) -> Segment:
        out.extend(self.end())
        seg = Segment(len(self.parts), kind)
        self.parts.append(seg)
        self._open = seg
        out.append(Opened(seg))
        return seg

    @property
    def open(self) -> Segment | None:
        """The part open now (None: none yet, or the stream ended)."""
        return self._open

    def text(self, channel: int, escaped: bytes) -> list[Event]:
        """The events of JSON-escaped text of ``channel`` (``labels.REASONING`` or
        ``CONTENT``) that the runtime's output path wrote (module doc)."""
        out: list[Event] = []
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
        # The rest of calls already begun comes first: it ends a region written before any
        # text of this chunk; then the text; then calls this chunk begins.
        new = []
        for call in delta.tool_calls or ():
            seg = self._calls.get(call.index)
            if seg is None:
                new.append(call)
            elif call.function is not None and call.function.arguments:
                self._more(seg, call.function.arguments, out)
        reasoning = delta.reasoning if delta.reasoning is not None else delta.reasoning_content
        if reasoning:
            self._text("reasoning", reasoning, out)
        if delta.content:
            self._text("text", delta.content, out)
        for call in new:
            fn = call.function
            seg = self._calls.get(call.index)
            if seg is None:
                open_seg = self._open
                if open_seg is not None and open_seg.kind == "call":
                    seg = Segment(len(self.parts), "call")  # held: see the class doc
                    self.parts.append(seg)
                    self._held.append(seg)
                else:
                    seg = self._switch("call", out)
                seg.call_id = call.id or ""
                seg.name = fn.name if fn is not None and fn.name else ""
                self._calls[call.index] = seg
            if fn is not None and fn.arguments:
                self._more(seg, fn.arguments, out)
        return out

    def _more(self, seg: Segment, arguments: str, out: list[Event]) -> None:
        """More argument text of a call: a delta while it is the open part; gathered while
        it is held."""
        seg.text.append(arguments)
        if seg is self._open:
            out.append(Delta(seg, arguments))

    def end(self) -> list[Event]:
        """Close the open segment (the stream ended, or another part begins), then send the
        calls held behind it whole."""
        seg, self._open = self._open, None
        out: list[Event] = [] if seg is None else [Closed(seg)]
        for held in self._held:
            out.append(Opened(held))
            if held.text:
                out.append(Delta(held, "".join(held.text)))  # type: ignore[arg-type]
            out.append(Closed(held))
        self._held.clear()
        return out


HOLE = msgspec.Raw(b"\x00")
"""Where a :class:`Template`'s value goes: a JSON value encoded as a NUL byte (encoded JSON
never holds one: msgspec escapes it in strings)."""


class Template:
    """The bytes of an event (or of a JSON value inside one) with :data:`HOLE` where each
    value goes, encoded once by msgspec; :meth:`fill` puts the values' JSON in: the bytes
    msgspec writes for the whole, without building or encoding it per event. The encoding
    is kept as a ``%b`` format (its own ``%`` doubled), so a fill is one formatting call:
    a seventh of the cost of joining the pieces, and a streamed response fills a dozen."""

    __slots__ = ("_format", "_holes")

    def __init__(self, encoded: bytes) -> None:
        self._holes = encoded.count(b"\x00")
        self._format = encoded.replace(b"%", b"%%").replace(b"\x00", b"%b")

    def fill(self, *values: bytes) -> bytes:
        """The bytes with each hole's value (JSON bytes, in the order the holes come)."""
        if len(values) != self._holes:
            raise ValueError(f"a template with {self._holes} holes got {len(values)} values")
        return self._format % values


class SegmentEncoder:
    """What the protocol encoders share: the request's :class:`Segments`, and the common
    case (text that continues the open text part: no part opens or closes) kept in three
    fields, so an encoder's ``text`` writes that delta without looking at events (the
    runtime calls it once per token of the request)."""

    def __init__(self) -> None:
        self._segments = Segments()
        self._channel = -1
        """The channel of the open part when it is text whose delta prefix is known
        (``labels.REASONING`` or ``CONTENT``); -1: the next text goes through events."""
        self._parts: list[str | bytes] = []
        """That part's text (:attr:`Segment.text`, the same list)."""
        self._pre = b""
        """Its delta events up to the text, the opening quote included."""

    def _events(self, segment_events: list[Event]) -> list[bytes]:
        """The protocol's events of these opens, deltas and closes (its encoder's)."""
        raise NotImplementedError

    def _written(self, segment_events: list[Event]) -> bytes:
        """:meth:`_events` joined, the open part noted again (:meth:`_track`)."""
        out = b"".join(self._events(segment_events))
        self._track()
        return out

    def chunk(self, chunk: ChatCompletionChunk) -> bytes:
        """The events of one chunk of the request (none for a chunk with no text)."""
        return self._written(self._segments.feed(chunk))

    def _track(self) -> None:
        """Note the open part after anything but the common case changed the parts."""
        seg = self._segments.open
        if seg is not None and seg.kind != "call" and seg.prefix:
            self._channel = REASONING if seg.kind == "reasoning" else CONTENT
            self._parts = seg.text
            self._pre = seg.prefix + b'"'
        else:
            self._channel = -1


class EventEncoder(Protocol):
    """A protocol's writer of one request's events (Messages, Responses): the runtime's
    :class:`~reasonspan.runtime.wire.events.EventWriter`, with its opening, closing and
    error events."""

    def start(self) -> bytes: ...

    def chunk(self, chunk: ChatCompletionChunk) -> bytes: ...

    def text(self, channel: int, escaped: bytes) -> bytes: ...

    def error(self, exc: ReasonspanError) -> bytes: ...


async def encode_events(
    encoder: EventEncoder, written: AsyncIterable[bytes], end: Callable[[], bytes]
) -> AsyncIterator[bytes]:
    """Every event of a request: the opening ones, those the runtime had ``encoder``
    write at step time (``written``: ``RequestStream.written()``), then ``end()``'s
    (called once they ended); a request that fails ends with the encoder's error event
    instead."""
    yield encoder.start()
    try:
        async for events in written:
            yield events
    except ReasonspanError as exc:
        yield encoder.error(exc)
        return
    yield end()

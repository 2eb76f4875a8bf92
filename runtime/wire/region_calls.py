"""One request's call regions as OpenAI ``delta.tool_calls`` entries: the one writer of the
entries for formats whose calls the extractor takes out of the answer.

Two ways, chosen per request:

- **whole** (``read_every=0``: a runtime request without ``stream_arguments``; ``parse()``'s
  own rule): a call is sent in one
  entry (index, id, type, name, all its arguments) once its region closed and read;
- **as written** (the default of a stream): while a region is open, its body is read by
  its kind's partial reader (``runtime/toolcalls/partial.py``): a call's first entry (index,
  id, type, name and the argument text so far) goes out once its first argument is whole
  and valid, later entries carry the index and the next argument text; the closing brace
  of its arguments waits for the region to close. When the region closes, the rest of
  each call's arguments is sent, so the pieces concatenate to exactly
  the ``arguments`` of the whole read, for every split of the output; calls the reader did
  not follow are sent whole then. Formats whose kinds have no partial reader are sent
  whole.

A call that committed and then broke (its region did not read as that call: a syntax
error, a number JSON cannot hold, ``max_tokens`` cutting it) keeps what was sent and gets
nothing more; the whole read has no such call (``partial.py`` says why this is the price
of streaming). Its arguments never close: a client that parses them gets an error, not a
call the model did not finish (the truncated ``rm -rf /tmp/build`` is never a complete
``rm -rf /``); the finish reason is the engine's (``length`` for a cut).
"""

from __future__ import annotations

import codecs

from reasonspan.runtime.core.holdback import Spill
from reasonspan.runtime.toolcalls import ToolCall, ToolCallExtractor
from reasonspan.runtime.toolcalls.partial import (
    PartialCall,
    PartialReader,
    choose_kind,
    new_reader,
    streams_arguments,
)
from reasonspan.runtime.wire.call_messages import CallEntries, SentCall
from reasonspan.runtime.wire.openai import ChoiceDeltaToolCall

READ_EVERY = 32
"""Tokens of a region read at a time, once it holds twice that many: a client sees the
arguments at most that far behind the model (a line or two of code); a call shorter than
twice that is sent whole when its region closes (usable only then anyway: it never breaks
after it was sent, and costs what a whole call costs); a long one costs one read per that
many tokens, about 1.15x the whole-call path per token (16: up to 1.33x at 256 concurrent
requests, a fixed 0.85 us a token; ``bench --suite tools``, ``BENCHMARKS.md``)."""

Fed = tuple[list[int], bytearray, list[Spill], list[ChoiceDeltaToolCall] | None]


class _RegionCall(SentCall):
    """A call of the open region, sent in parts as its kind's partial reader takes it:
    the reader's call and how many of its argument pieces were taken. The closing brace
    of its arguments waits in ``held`` until its region closed and read as this call: a
    call that breaks never shows whole arguments."""

    __slots__ = ("call", "held", "pieces")

    def __init__(self, call: PartialCall) -> None:
        super().__init__(call.name)
        self.call = call
        self.pieces = 0
        self.held = ""

    def more(self) -> str:
        """The argument text to send now ("" : nothing new)."""
        call = self.call
        if call.broken or len(call.arguments) <= self.pieces:
            return ""
        text = self.held + "".join(call.arguments[self.pieces :])
        self.pieces = len(call.arguments)
        cut = len(text) - 1 if call.complete else len(text)
        self.held = text[cut:]
        return text[:cut]


class RegionCalls(CallEntries):
    """The ``delta.tool_calls`` writer of one request's call extractor (module doc)."""

    __slots__ = (
        "_body", "_calls", "_decoder", "_every", "_reader", "_region", "_seen", "_used", "ext",
    )  # fmt: skip

    def __init__(self, ext: ToolCallExtractor, read_every: int = READ_EVERY) -> None:
        """``read_every``: stream arguments, reading the open region every that many
        tokens; 0: send each call whole."""
        super().__init__()
        self.ext = ext
        self._every = read_every
        self._region = 0
        """The number of the region followed (0: none)."""
        self._reader: PartialReader | None = None
        self._body: str | None = ""
        """The region's text while no kind has been chosen for it (None: no kind's reader
        reads it: its calls go whole)."""
        self._used = 0
        """Bytes of the region read so far."""
        self._seen = 0
        """Tokens the extractor held when the region was last read."""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._calls: list[_RegionCall] = []
        """The open region's calls sent so far."""
        if read_every > 0 and streams_arguments(ext.kinds):
            ext.settled = []

    @property
    def streams(self) -> bool:
        return self.ext.settled is not None

    def feed(
        self, ids: list[int], labels: bytes | bytearray, spill: tuple[Spill, ...] | list[Spill]
    ) -> Fed:
        """The extractor's ``feed``, with the entries these tokens make (None: none)."""
        ext = self.ext
        ids, out_labels, out_spill, done = ext.feed(ids, labels, spill)
        settled = ext.settled
        if settled is None:
            return ids, out_labels, out_spill, [self._whole(c) for c in done] if done else None
        if not settled:
            # The common case, a token of an open region (or none) between reads: _due,
            # written out here because this runs once a token (the call costs ~25 ns).
            held = ext.held_count
            if ext.regions == self._region:
                if held - self._seen < self._every:
                    return ids, out_labels, out_spill, None
            elif held < 2 * self._every:
                return ids, out_labels, out_spill, None
        return ids, out_labels, out_spill, self._entries(done)

    def finish(self, finish_reason: str | None) -> Fed:
        """The extractor's ``finish``, with the entries it makes."""
        ids, out_labels, out_spill, done = self.ext.finish(finish_reason)
        return ids, out_labels, out_spill, self._entries(done)

    # ------------------------------------------------------------------ entries

    def _entries(self, done: list[ToolCall]) -> list[ChoiceDeltaToolCall] | None:
        settled = self.ext.settled
        if settled is None:
            return [self._whole(c) for c in done] if done else None
        out: list[ChoiceDeltaToolCall] = []
        if settled:
            k = 0
            for region, n in settled:
                self._settle(region, done[k : k + n], out)
                k += n
            settled.clear()
        if self._due():
            self._follow(out)
        return out or None

    def _due(self) -> bool:
        """Whether the open region is read now: every ``read_every`` tokens, the first
        time once it holds twice that many (a shorter call goes whole: :data:`READ_EVERY`)."""
        ext = self.ext
        if ext.regions == self._region:
            return ext.held_count - self._seen >= self._every
        return ext.held_count >= 2 * self._every

    def _settle(self, region: int, calls: list[ToolCall], out: list[ChoiceDeltaToolCall]) -> None:
        """A region closed as ``calls``: the rest of each call sent in part, in order;
        the calls not sent yet, whole."""
        p = 0
        if region == self._region:
            for call in self._calls:
                whole = calls[p] if p < len(calls) and not call.call.broken else None
                if self._close(call, whole, out):
                    p += 1
            self._region = 0
            self._reader = None
            self._calls = []
        out.extend(self._whole(c) for c in calls[p:])

    def _follow(self, out: list[ChoiceDeltaToolCall]) -> None:
        """Read the open region's new text; send what its calls committed."""
        ext = self.ext
        buf = ext.open_bytes()
        if buf is None:
            return
        self._seen = ext.held_count
        if ext.regions != self._region:
            self._region = ext.regions
            self._reader = None
            self._body = ""
            self._used = ext.body_start()
            self._decoder.reset()
            self._calls = []
        if len(buf) <= self._used:
            return
        text = self._decoder.decode(bytes(buf[self._used :]))
        self._used = len(buf)
        reader = self._reader
        if reader is None:
            if self._body is None:
                return  # no reader for this body: its calls go whole
            reader = self._choose(text)
            if reader is None:
                return
        else:
            reader.feed(text)
        calls = self._calls
        calls.extend(_RegionCall(call) for call in reader.calls[len(calls) :])
        for call in calls:
            self._send(call, call.more(), out)

    def _choose(self, text: str) -> PartialReader | None:
        assert self._body is not None
        body = self._body + text
        kind = choose_kind(self.ext.kinds, body.lstrip(" \t\r\n"))
        if kind == "":
            self._body = body
            return None
        if kind is None:
            self._body = None
            return None
        reader = self._reader = new_reader(kind, self.ext.tools)
        reader.feed(body)
        return reader

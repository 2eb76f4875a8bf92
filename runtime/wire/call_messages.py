"""Tool calls of a format that frames them as messages of their own (harmony), as OpenAI
``tool_calls`` deltas.

A family that labels whole tool-call messages TOOL_CALL hands the runtime a
:class:`ToolCallReader` (``ReasoningParser.tool_call_reader()``): it knows where a message's
header ends and which function it names, and splits the TOOL_CALL tokens into calls and
their argument tokens. :class:`ToolCallStream` turns those pieces into the
``delta.tool_calls`` entries a server sends: the first delta of a call carries its index,
id, type and function name, later ones only argument text. Only the argument tokens are
detokenized; headers are read by the family on token bytes.

Families whose tool markers stay in the content (TOOL) have no reader: their calls are
content text for the user's own tool parser.

What a ``tool_calls`` entry is and what "a call that has been sent" means are written
here once for both writers, this stream and ``region_calls.RegionCalls`` (the calls the
extractor takes out of call regions): :func:`tool_call_entry`, :class:`SentCall` and
:class:`CallEntries` (the numbering of a request's calls, a call sent whole, a streamed
call's first entry and later fragments, and the end of a streamed call, broken or not).
"""

from __future__ import annotations

import codecs
import json
import uuid
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
from reasonspan.runtime.toolcalls.json_stream import OPEN_OBJECT, Event, JsonTokens
from reasonspan.runtime.toolcalls.partial_args import (
    CLOSED,
    FAILED,
    FIRST_MEMBER,
    GOING,
    ArgumentWriter,
)
from reasonspan.runtime.wire.openai import ChoiceDeltaToolCall, ChoiceDeltaToolCallFunction
from reasonspan.tokenizer.loader import LoadedTokenizer


class ToolCallPiece(NamedTuple):
    """Part of a tool call decided by one ``feed``: ``name`` is set when the piece opens
    a new call (the function it calls); ``argument_ids`` are argument tokens, in order."""

    name: str | None
    argument_ids: list[int]


class ToolCallReader(Protocol):
    """A family's splitter of its TOOL_CALL tokens into calls (one per request)."""

    busy: bool
    """Inside a tool-call message: ``feed`` must see the next tokens even when none of
    them is TOOL_CALL (they may end the call)."""

    in_call: bool
    """Reading the arguments of the last call opened, so the end of the output would cut
    it. Not the same as ``busy``: a call followed by the header of another message was
    closed by that header, even when the output ends inside it."""

    def feed(self, token_ids: Sequence[int], labels: bytes | bytearray) -> list[ToolCallPiece]:
        """The calls opened and argument tokens decided among these labelled tokens."""
        ...


def new_tool_call_id() -> str:
    """A fresh id in OpenAI's shape (``call_`` + 24 characters), unique per call, so a
    client's later ``tool`` message points at exactly one call."""
    return "call_" + uuid.uuid4().hex[:24]


class SentCall:
    """A call whose arguments stream: its index once its first entry went out (-1: not
    yet), its function name and the argument text sent so far. Each writer's reader of
    such a call extends it (``region_calls._RegionCall``, :class:`_LiveCall`) with what it
    reads; the writer sends it with :meth:`CallEntries._send` and ends it with
    :meth:`CallEntries._close`."""

    __slots__ = ("arguments", "index", "name")

    def __init__(self, name: str) -> None:
        self.index = -1
        self.name = name
        self.arguments: list[str] = []
        """The argument text sent, in the pieces sent."""


class CallEntries:
    """What both writers of a request's ``delta.tool_calls`` entries share (the region
    writer ``region_calls.RegionCalls``, the message stream :class:`ToolCallStream`): the
    numbering of its calls, in the order their first entries go out (each with a fresh id:
    :func:`tool_call_entry`), and the end of a call sent in parts (:class:`SentCall`): the
    rest of its arguments once the call is read whole, or, when the whole read has no such
    call (it broke after it was sent: ``region_calls`` says why that is the price of
    streaming), nothing more, its index in :attr:`broken`."""

    __slots__ = ("broken", "numbered")

    def __init__(self) -> None:
        self.numbered = 0
        """Calls given an index so far (the next call's index)."""
        self.broken: list[int] = []
        """Indexes of calls sent in part whose whole read has no such call (a syntax
        error, a value JSON cannot hold, a cut inside their arguments): what was sent of
        them is all they get."""

    def _open(self, name: str, arguments: str) -> ChoiceDeltaToolCall:
        """A call's first entry, with the next index: a call sent whole (``arguments``:
        all of them) or the first part of one that streams (:meth:`_send`)."""
        entry = tool_call_entry(self.numbered, name, arguments)
        self.numbered += 1
        return entry

    def _whole(self, call: ToolCall) -> ChoiceDeltaToolCall:
        """A call sent whole: one entry, with all its arguments."""
        return self._open(call.name, call.arguments)

    def _send(self, call: SentCall, text: str, out: list[ChoiceDeltaToolCall]) -> None:
        """Send ``text``, the next part of ``call``'s arguments: its first entry (index,
        id, name; sent even with no text) or a later one (when there is text)."""
        if call.index < 0:
            call.index = self.numbered
            call.arguments.append(text)
            out.append(self._open(call.name, text))
        elif text:
            call.arguments.append(text)
            out.append(tool_call_entry(call.index, None, text))

    def _close(
        self, sent: SentCall, whole: ToolCall | None, out: list[ChoiceDeltaToolCall]
    ) -> bool:
        """End ``sent``, its call read whole as ``whole`` (None: the whole read has no
        call there): the rest of its arguments; False, nothing sent, when ``whole`` is not
        the call sent (another name, arguments that do not go on from what was sent)."""
        head = "".join(sent.arguments)
        if whole is None or whole.name != sent.name or not whole.arguments.startswith(head):
            self.broken.append(sent.index)
            return False
        self._send(sent, whole.arguments[len(head) :], out)
        return True


class ToolCallStream(CallEntries):
    """One request's tool-call messages (harmony) as complete calls: the one place that
    decides when a call read by a family's reader is complete, for ``parse()``
    (:func:`calls_from_reader`), ``TextSplitter`` (:meth:`calls`) and the runtime's
    ``delta.tool_calls`` (:meth:`feed`).

    A call is complete once its message ended (its terminator, the next header) or, at
    the end of the output, when its arguments are complete JSON: the same policy as the
    formats whose regions are read whole, so a call cut by ``max_tokens`` is never sent
    and the stream always agrees with ``parse()``. Whether the last call is still open
    is the reader's ``in_call``, a function of the labelled tokens alone, so every split
    of the output gives the same calls."""

    __slots__ = ("_live", "_pending", "_step", "_tokenizer", "count", "reader")

    def __init__(
        self, reader: ToolCallReader, tokenizer: LoadedTokenizer, argument_step: int = 0
    ) -> None:
        super().__init__()
        self.reader = reader
        self._tokenizer = tokenizer
        self._pending: list[tuple[str, list[int]]] = []
        self.count = 0
        """Calls completed so far."""
        self._step = argument_step if tokenizer.byte_level else 0
        """Stream a call's arguments, read every that many tokens once it has twice that
        many (0: each call whole; so is every call of a tokenizer whose text is not its
        tokens' bytes)."""
        self._live: _LiveCall | None = None

    def calls(
        self, token_ids: Sequence[int], labels: bytes | bytearray, *, final: bool = False
    ) -> list[ToolCall]:
        """The calls completed by these decided tokens (``final``: the output ends here)."""
        reader = self.reader
        pending = self._pending
        if TOOL_CALL in labels or reader.busy:
            for piece in reader.feed(token_ids, labels):
                if piece.name is not None:
                    pending.append((piece.name, []))
                if pending:
                    pending[-1][1].extend(piece.argument_ids)
        if not pending:
            return []
        open_call = pending[-1] if reader.in_call else None
        if open_call is not None and final:
            if not complete_arguments(self._tokenizer.decode(open_call[1])):
                pending.pop()  # cut inside its arguments: no call
            open_call = None
        done = pending[:-1] if open_call is not None else pending
        self._pending = [open_call] if open_call is not None else []
        calls = [ToolCall(n, self._tokenizer.decode(a)) for n, a in done]
        self.count += len(calls)
        return calls

    def feed(
        self, token_ids: Sequence[int], labels: bytes | bytearray, *, final: bool = False
    ) -> list[ChoiceDeltaToolCall] | None:
        """The ``tool_calls`` entries these decided tokens make (None: nothing): each call
        whole once complete or, streaming, its arguments as written (:class:`_LiveCall`:
        the rest of a streamed call is sent when its message ends; one cut inside its
        arguments is reported in :attr:`broken`)."""
        live = self._live
        calls = self.calls(token_ids, labels, final=final)
        out: list[ChoiceDeltaToolCall] = []
        for call in calls:
            if live is not None and live.index >= 0 and not out and call.name == live.name:
                self._close(live, call, out)  # (a streamed call is the first one completed)
                live = self._live = None
                continue
            out.append(self._whole(call))
        pending = self._pending
        if live is not None and (not pending or pending[-1][1] is not live.ids):
            if live.index >= 0:
                self._close(live, None, out)  # cut inside its arguments
            live = self._live = None
        if self._step and pending and self.reader.in_call:
            name, ids = pending[-1]
            if live is None:
                live = self._live = _LiveCall(name, ids)
            got = live.read(self._tokenizer.token_bytes, self._step)
            if got is not None:
                self._send(live, got, out)
        return out or None


class _LiveCall(SentCall):
    """A harmony call whose arguments stream. Its raw text (what the whole call sends) is
    read every few tokens and re-read by the JSON lexer only to know when its first member
    is whole and valid (then the call is sent) and where its object closes (that brace,
    and what follows it, waits for the message's end). A call whose text is not an object
    or fails before its first member is sent whole, as written, when its message ends."""

    __slots__ = ("cut", "decoder", "ids", "raw", "read_to", "state", "tokens", "writer")

    def __init__(self, name: str, ids: list[int]) -> None:
        super().__init__(name)
        self.ids = ids
        """The call's argument ids (the pending entry's own list: it grows in place)."""
        self.read_to = 0
        self.raw: list[str] = []
        self.cut = -1
        """Where its object's closing brace is in its raw text (-1: not seen)."""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.tokens = JsonTokens(one_value=True)
        self.writer = ArgumentWriter([])
        self.state = GOING
        """``GOING``, ``FIRST_MEMBER`` (valid through its first member), ``CLOSED`` or
        ``FAILED``: the lexer's verdict on the object so far."""

    def read(self, token_bytes: list[bytes], step: int) -> str | None:
        """The argument text to send now ("": nothing new; None: not to be sent yet)."""
        ids = self.ids
        if len(ids) - self.read_to < (step if self.read_to else 2 * step):
            return "" if self.index >= 0 else None
        text = self.decoder.decode(b"".join([token_bytes[t] for t in ids[self.read_to :]]))
        self.read_to = len(ids)
        before = sum(map(len, self.raw))
        self.raw.append(text)
        self._check(text, before)
        if self.index < 0 and self.state not in (FIRST_MEMBER, CLOSED):
            return None
        raw = "".join(self.raw)
        end = self.cut if self.cut >= 0 else len(raw)
        head = sum(map(len, self.arguments))
        return raw[head:end] if end > head else ""

    def _check(self, text: str, before: int) -> None:
        if self.state in (CLOSED, FAILED):
            return
        events: list[Event] = []
        self.tokens.feed(text, events)
        for kind, value in events:
            if not self.writer.out and kind != OPEN_OBJECT:
                self.state = FAILED  # not an object
                return
            got = self.writer.event(kind, value)
            if got == FAILED:
                self.state = FAILED
                return
            if got == FIRST_MEMBER and self.state == GOING:
                self.state = FIRST_MEMBER
            elif got == CLOSED:
                self.state = CLOSED
                self.cut = before + len(text) - len(self.tokens.rest) - 1
                return


def tool_call_entry(index: int, name: str | None, arguments: str) -> ChoiceDeltaToolCall:
    """A ``delta.tool_calls`` entry, the one spelling of it for every writer (the region
    writer ``region_calls``, the message stream here): a call's first entry (``name``
    given: with a fresh id and its type; a call read whole is this entry with all of its
    arguments) or a later one (its index and the next argument text only)."""
    if name is None:
        return ChoiceDeltaToolCall(
            index=index, function=ChoiceDeltaToolCallFunction(arguments=arguments)
        )
    return ChoiceDeltaToolCall(
        index=index,
        id=new_tool_call_id(),
        type="function",
        function=ChoiceDeltaToolCallFunction(name=name, arguments=arguments),
    )


def calls_from_reader(
    reader: ToolCallReader, tokenizer: LoadedTokenizer, ids: list[int], labels: bytes | bytearray
) -> list[ToolCall]:
    """A whole output's calls through a family's reader (harmony), for ``parse()``: the
    stream's own policy, fed once."""
    return ToolCallStream(reader, tokenizer).calls(ids, labels, final=True)


def complete_arguments(text: str) -> bool:
    """Arguments that read as one JSON object (or nothing): a call whose message never
    got its terminator (engines that stop on ``<|call|>`` without sending it) is complete
    when its arguments are; cut inside them (``max_tokens``), it is no call."""
    if not text.strip():
        return True
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def merge_tool_call_deltas(
    into: list[ChoiceDeltaToolCall], more: Sequence[ChoiceDeltaToolCall]
) -> None:
    """Fold ``more`` into ``into`` (a chunk's entries, when a slow consumer's chunks are
    coalesced): argument text of a call already there is appended, a new call added."""
    for entry in more:
        last = into[-1] if into else None
        if (
            last is not None
            and last.index == entry.index
            and entry.id is None
            and entry.function is not None
        ):
            fn = last.function
            if fn is None:
                last.function = entry.function
            else:
                fn.arguments = (fn.arguments or "") + (entry.function.arguments or "")
        else:
            into.append(entry)

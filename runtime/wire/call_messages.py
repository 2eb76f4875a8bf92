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
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
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


class ToolCallStream:
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

    __slots__ = ("_pending", "_tokenizer", "count", "reader")

    def __init__(self, reader: ToolCallReader, tokenizer: LoadedTokenizer) -> None:
        self.reader = reader
        self._tokenizer = tokenizer
        self._pending: list[tuple[str, list[int]]] = []
        self.count = 0
        """Calls completed so far (the next call's index)."""

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
        """The ``tool_calls`` entries completed by these decided tokens (None: nothing)."""
        calls = self.calls(token_ids, labels, final=final)
        return call_deltas(calls, self.count - len(calls)) if calls else None


def call_deltas(calls: Sequence[ToolCall], first_index: int) -> list[ChoiceDeltaToolCall]:
    """Complete calls as ``delta.tool_calls`` entries: each in one entry with its index, a
    fresh id, its function name and all of its arguments (a format whose calls are read
    whole, once their region closes, never sends half a call)."""
    return [
        ChoiceDeltaToolCall(
            index=first_index + i,
            id=new_tool_call_id(),
            type="function",
            function=ChoiceDeltaToolCallFunction(name=c.name, arguments=c.arguments),
        )
        for i, c in enumerate(calls)
    ]


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

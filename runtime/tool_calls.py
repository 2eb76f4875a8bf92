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

import uuid
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from ..tokenizer.loader import LoadedTokenizer
from .decoding import LabelledDecoder
from .labels import CONTENT, TOOL_CALL
from .openai import ChoiceDeltaToolCall, ChoiceDeltaToolCallFunction
from .toolcalls import ToolCall

_CONTENT = bytes((CONTENT,))


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

    def feed(self, token_ids: Sequence[int], labels: bytes | bytearray) -> list[ToolCallPiece]:
        """The calls opened and argument tokens decided among these labelled tokens."""
        ...


def new_tool_call_id() -> str:
    """A fresh id in OpenAI's shape (``call_`` + 24 characters), unique per call, so a
    client's later ``tool`` message points at exactly one call."""
    return "call_" + uuid.uuid4().hex[:24]


class ToolCallStream:
    """One request's tool calls as ``delta.tool_calls`` entries, incrementally."""

    __slots__ = ("_args", "_tokenizer", "count", "reader")

    def __init__(self, reader: ToolCallReader, tokenizer: LoadedTokenizer) -> None:
        self.reader = reader
        self._tokenizer = tokenizer
        self._args: LabelledDecoder | None = None
        self.count = 0
        """Calls opened so far (the next call's index)."""

    def feed(
        self, token_ids: Sequence[int], labels: bytes | bytearray
    ) -> list[ChoiceDeltaToolCall] | None:
        """The ``tool_calls`` entries for these decided tokens (None: nothing to send)."""
        if TOOL_CALL not in labels and not self.reader.busy:
            return None
        out: list[ChoiceDeltaToolCall] = []
        for piece in self.reader.feed(token_ids, labels):
            if piece.name is not None:
                self._args = LabelledDecoder(self._tokenizer)
                self.count += 1
                out.append(
                    ChoiceDeltaToolCall(
                        index=self.count - 1,
                        id=new_tool_call_id(),
                        type="function",
                        function=ChoiceDeltaToolCallFunction(
                            name=piece.name, arguments=self._text(piece.argument_ids)
                        ),
                    )
                )
                continue
            text = self._text(piece.argument_ids)
            if not text:
                continue
            last = out[-1] if out else None
            if last is not None and last.function is not None and last.index == self.count - 1:
                last.function.arguments = (last.function.arguments or "") + text
            else:
                out.append(
                    ChoiceDeltaToolCall(
                        index=self.count - 1,
                        function=ChoiceDeltaToolCallFunction(arguments=text),
                    )
                )
        return out or None

    def _text(self, ids: list[int]) -> str:
        if not ids or self._args is None:
            return ""
        return self._args.feed(ids, _CONTENT * len(ids))[1]


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
    """A whole output's calls through a family's reader (harmony), for ``parse()``."""
    names: list[str] = []
    args: list[list[int]] = []
    for piece in reader.feed(ids, labels):
        if piece.name is not None:
            names.append(piece.name)
            args.append([])
        if args:
            args[-1].extend(piece.argument_ids)
    return [
        ToolCall(name=n, arguments=tokenizer.decode(a)) for n, a in zip(names, args, strict=True)
    ]


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

"""A request's queued items as another protocol reads them: chunk Structs, and the text
events the batch-wide output path wrote, as their channel and their escaped text.

The output path (``sse_path``) writes a plain text row of a request added with ``sse=True``
as Chat Completions' event bytes: the request's content or reasoning prefix, the text
JSON-escaped, the common suffix (``sse_templates``). A server that speaks another
protocol (Anthropic's Messages, OpenAI's Responses: ``reasonspan/serving``) needs the text,
not Chat Completions' event: :class:`EventSplitter` cuts it back out of the bytes, still
escaped, so the protocol writes its own event around it without decoding, building and
encoding a chunk per token. Every other item (the role event, a chunk of the exact path) is
handed over as a chunk Struct.
"""

from __future__ import annotations

from collections.abc import Callable

from reasonspan.runtime.core.labels import CONTENT, REASONING
from reasonspan.runtime.stream.sse_templates import templates
from reasonspan.runtime.wire.openai import ChatCompletionChunk, ChoiceDelta, ChunkChoice
from reasonspan.runtime.wire.sse import chunk_of_event

TextEvent = tuple[int, bytes]
"""``(REASONING or CONTENT, the text JSON-escaped, without quotes)``."""
Split = Callable[[ChatCompletionChunk | bytes], ChatCompletionChunk | TextEvent]


class EventSplitter:
    """Splits one request's queued items (:meth:`split`)."""

    __slots__ = ("_c", "_half", "_mid", "_r", "_suf")

    def __init__(self, pre_c: bytes, pre_r: bytes, mid: bytes, suf: bytes) -> None:
        self._c, self._r, self._mid, self._suf = pre_c, pre_r, mid, suf
        self._half = len(mid)

    @classmethod
    def of(cls, completion_id: str, created: int, model: str, alias: bool) -> EventSplitter | None:
        """A request's splitter, from the templates its events are written with (its
        chunks' ``id``, ``created`` and ``model``); None: they cannot be cut, so the output
        path writes none of its events."""

        def chunk(delta: ChoiceDelta) -> ChatCompletionChunk:
            return ChatCompletionChunk(
                id=completion_id, created=created, model=model, choices=[ChunkChoice(0, delta)]
            )

        cut = templates(chunk, alias)
        return None if cut is None else cls(*cut)

    def split(self, item: ChatCompletionChunk | bytes) -> ChatCompletionChunk | TextEvent:
        """A queued item: a text event of the output path as its channel and escaped text,
        anything else as a chunk."""
        if type(item) is not bytes:
            return item  # type: ignore[return-value]
        suf = self._suf
        if item.endswith(suf):
            if item.startswith(self._c):
                return CONTENT, item[len(self._c) : len(item) - len(suf)]
            if item.startswith(self._r):
                text = item[len(self._r) : len(item) - len(suf)]
                if self._half:  # reasoning_content repeats the text after the middle
                    text = text[: (len(text) - self._half) // 2]
                return REASONING, text
        return chunk_of_event(item)


def as_chunk(item: ChatCompletionChunk | bytes) -> ChatCompletionChunk | TextEvent:
    """An item as a chunk (the split of a request whose events cannot be cut)."""
    return chunk_of_event(item) if isinstance(item, bytes) else item

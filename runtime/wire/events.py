"""A wire protocol's writer of one request's events, called by the runtime at step time.

Chat Completions' events are written by the runtime itself (``sse_path``'s templates, or
``sse.chunk_events``). Another protocol (Anthropic's Messages, OpenAI's Responses: the
serving layer's encoders) hands the runtime an :class:`EventWriter` when it adds the
request (``ReasoningRuntime.add(..., writer=...)``): from then on every piece of the
request's output goes through it, in the order the batch decided it, and the request's
queue holds the bytes it returned. Blocks open and close, and sequence numbers are
counted, at step time; a consumer only sends the bytes (``RequestStream.written``).

The runtime calls :meth:`EventWriter.text` for text the output path wrote from its token
tables (already JSON-escaped: a writer puts it between the quotes of its event as it is)
and :meth:`EventWriter.chunk` for everything else (the exact path's chunks: text with
calls, citations, log probabilities). A writer's opening events are its own business
(made before the request is added, so they come first); its closing events are written
when its consumer has read the last item. Whatever a writer raises fails its request
alone.
"""

from __future__ import annotations

from typing import Protocol

from reasonspan.runtime.wire.openai import ChatCompletionChunk


class EventWriter(Protocol):
    """One request's events in a protocol of its own."""

    def text(self, channel: int, escaped: bytes) -> bytes:
        """The events of ``escaped`` (JSON-escaped text, without quotes) of ``channel``
        (``labels.REASONING`` or ``labels.CONTENT``): a delta of the open part, after the
        events that close the part before and open this one when the channel changed."""
        ...

    def chunk(self, chunk: ChatCompletionChunk) -> bytes:
        """The events of a chunk of the request (b"": none, e.g. a chunk with no text)."""
        ...

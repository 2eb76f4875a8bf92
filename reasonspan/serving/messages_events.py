"""The runtime's labelled output as Anthropic's Messages API: a ``message`` object, or its
stream of typed events.

The runtime already says of every piece of text whether it is reasoning, answer or a tool
call; this module only re-encodes that: reasoning is a ``thinking`` block, content a
``text`` block, each call a ``tool_use`` block (its ``input`` the call's arguments as an
object). Streaming, a block opens when its kind of text first arrives and closes when
another kind starts (``content_block_start`` / ``_delta`` / ``_stop``), so the events keep
the order the model wrote; a call's arguments arrive as ``input_json_delta`` fragments
that join to its JSON text. A thinking block closes with a ``signature_delta`` (see
:mod:`reasonspan.serving.messages` for what the signature is and is not).

``stop_reason``: the engine's "stop" is ``end_turn``, or ``stop_sequence`` (with the
string) when a stop sequence ended the text; "length" is ``max_tokens``; a turn that
called tools is ``tool_use``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import AsyncIterable, AsyncIterator, Callable
from functools import lru_cache
from typing import Any, Literal

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.wire.openai import ChatCompletion, FinishReason
from reasonspan.serving.messages import AnthropicError, AnthropicErrorDetail
from reasonspan.serving.segments import (
    HOLE,
    Delta,
    Opened,
    SegmentEncoder,
    Template,
    encode_events,
    json_string,
)
from reasonspan.serving.segments import Event as SegmentEvent

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]

_KEY = secrets.token_bytes(32)
"""The signing key of thinking blocks: made when the server starts, never sent."""


def signature(thinking: str) -> str:
    """An HMAC-SHA256 of a thinking block's text under this server's key, base64."""
    digest = hmac.new(_KEY, thinking.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


class TextOut(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class ThinkingOut(msgspec.Struct, tag_field="type", tag="thinking"):
    thinking: str
    signature: str


class ToolUseOut(msgspec.Struct, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class MessageUsage(msgspec.Struct):
    input_tokens: int
    output_tokens: int


class AnthropicMessage(msgspec.Struct, tag_field="type", tag="message"):
    id: str
    model: str
    content: list[TextOut | ThinkingOut | ToolUseOut]
    stop_reason: StopReason | None
    stop_sequence: str | None
    usage: MessageUsage
    role: Literal["assistant"] = "assistant"


def stop_reason(finish: FinishReason | None, stop_sequence: str | None) -> StopReason | None:
    """The Messages API's ``stop_reason`` of the runtime's finish reason."""
    if finish is None:
        return None
    if finish == "stop":
        return "stop_sequence" if stop_sequence is not None else "end_turn"
    if finish == "length":
        return "max_tokens"
    if finish == "tool_calls":
        return "tool_use"
    return "refusal" if finish == "content_filter" else "end_turn"


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments as an object (the runtime only sends calls whose arguments are
    a JSON object)."""
    value = json.loads(text) if text else {}
    return value if isinstance(value, dict) else {}


def message_of(
    completion: ChatCompletion, message_id: str, stop_sequence: str | None
) -> AnthropicMessage:
    """The ``message`` object of a whole completion."""
    choice = completion.choices[0]
    msg = choice.message
    content: list[TextOut | ThinkingOut | ToolUseOut] = []
    reasoning = msg.reasoning if msg.reasoning is not None else msg.reasoning_content
    if reasoning:
        content.append(ThinkingOut(reasoning, signature(reasoning)))
    if msg.content:
        content.append(TextOut(msg.content))
    for call in msg.tool_calls or ():
        content.append(ToolUseOut(call.id, call.function.name, _arguments(call.function.arguments)))
    usage = completion.usage
    return AnthropicMessage(
        id=message_id,
        model=completion.model,
        content=content,
        stop_reason=stop_reason(choice.finish_reason, stop_sequence),
        stop_sequence=stop_sequence if choice.finish_reason == "stop" else None,
        usage=MessageUsage(usage.prompt_tokens, usage.completion_tokens),
    )


_DELTA_FIELDS = {
    "reasoning": ("thinking_delta", "thinking"),
    "text": ("text_delta", "text"),
    "call": ("input_json_delta", "partial_json"),
}
_encode = msgspec.json.encode


@lru_cache(maxsize=256)
def _delta_prefix(index: int, kind: str) -> bytes:
    """A block's delta events up to the text: the same for every delta of the block, so
    each delta is this, the text as a JSON string, and ``}}`` (as msgspec would write the
    whole event)."""
    name, key = _DELTA_FIELDS[kind]
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'
        + str(index).encode()
        + b',"delta":{"type":"'
        + name.encode()
        + b'","'
        + key.encode()
        + b'":'
    )


def event(kind: str, data: dict[str, Any] | msgspec.Struct) -> bytes:
    """One server-sent event as Anthropic names them: ``event: <type>`` then the data."""
    return b"event: " + kind.encode() + b"\ndata: " + msgspec.json.encode(data) + b"\n\n"


def _indexed(kind: str, data: dict[str, Any]) -> Template:
    """The event of ``data`` with a hole for its ``index`` (and whatever else is a
    :data:`HOLE`): events a request writes for every block."""
    return Template(event(kind, {"type": kind, "index": HOLE, **data}))


_BLOCK_START = {
    kind: _indexed("content_block_start", {"content_block": block})
    for kind, block in (
        ("reasoning", {"type": "thinking", "thinking": "", "signature": ""}),
        ("text", {"type": "text", "text": ""}),
    )
}
_BLOCK_STOP = _indexed("content_block_stop", {})
_SIGNED = _indexed("content_block_delta", {"delta": {"type": "signature_delta", "signature": HOLE}})
_PING = event("ping", {"type": "ping"})
_MESSAGE_STOP = event("message_stop", {"type": "message_stop"})
_MESSAGE_START = Template(
    event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": HOLE,
                "type": "message",
                "role": "assistant",
                "model": HOLE,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": HOLE, "output_tokens": 0},
            },
        },
    )
    + _PING
)
"""The opening events. Holes: the message's id, model, input tokens."""
_MESSAGE_END = Template(
    event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": HOLE, "stop_sequence": HOLE},
            "usage": {"output_tokens": HOLE},
        },
    )
    + _MESSAGE_STOP
)
"""The closing events. Holes: stop reason, stop sequence, output tokens."""


class MessageEvents(SegmentEncoder):
    """The event stream of one request. The runtime has it write the request's events at
    step time (``ReasoningRuntime.add(..., writer=...)``: :meth:`text`, :meth:`chunk`);
    :meth:`stream` sends them between the opening and closing events. The blocks are the
    request's :class:`Segments`; this class only names their events."""

    def __init__(self, message_id: str, model: str, input_tokens: int) -> None:
        self.message_id = message_id
        self.model = model
        self.input_tokens = input_tokens
        super().__init__()

    def start(self) -> bytes:
        return _MESSAGE_START.fill(
            _encode(self.message_id), _encode(self.model), b"%d" % self.input_tokens
        )

    def _events(self, segment_events: list[SegmentEvent]) -> list[bytes]:
        out: list[bytes] = []
        for ev in segment_events:
            seg = ev.segment
            if isinstance(ev, Opened):
                if seg.kind != "call":
                    out.append(_BLOCK_START[seg.kind].fill(b"%d" % seg.index))
                else:
                    block = {"type": "tool_use", "id": seg.call_id, "name": seg.name, "input": {}}
                    start = {
                        "type": "content_block_start",
                        "index": seg.index,
                        "content_block": block,
                    }
                    out.append(event("content_block_start", start))
                seg.prefix = _delta_prefix(seg.index, seg.kind)
            elif isinstance(ev, Delta):
                out.append(seg.prefix + json_string(ev.text) + b"}}\n\n")
            else:
                index = b"%d" % seg.index
                if seg.kind == "reasoning":
                    out.append(_SIGNED.fill(index, _encode(signature(seg.joined))))
                out.append(_BLOCK_STOP.fill(index))
        return out

    def text(self, channel: int, escaped: bytes) -> bytes:
        """The events of escaped text of ``channel`` the runtime's output path wrote."""
        if channel == self._channel:  # one more delta of the open block
            self._parts.append(escaped)
            return self._pre + escaped + b'"}}\n\n'
        return self._written(self._segments.text(channel, escaped))

    def end(
        self, finish: FinishReason | None, stop_sequence: str | None, output_tokens: int
    ) -> bytes:
        out = self._events(self._segments.end())
        self._track()
        reason = _encode(stop_reason(finish, stop_sequence))
        sequence = _encode(stop_sequence if finish == "stop" else None)
        out.append(_MESSAGE_END.fill(reason, sequence, b"%d" % output_tokens))
        return b"".join(out)

    def error(self, exc: ReasonspanError) -> bytes:
        return event("error", AnthropicError(AnthropicErrorDetail("api_error", str(exc))))

    def stream(
        self,
        written: AsyncIterable[bytes],
        finished: Callable[[], tuple[FinishReason | None, str | None, int]],
    ) -> AsyncIterator[bytes]:
        """Every event of the request (``written``: what the runtime had it write,
        ``RequestStream.written()``). ``finished()`` gives ``(finish_reason,
        stop_sequence, output_tokens)`` once they ended. A request that fails ends with
        Anthropic's ``error`` event."""
        return encode_events(self, written, lambda: self.end(*finished()))

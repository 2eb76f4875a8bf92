"""Anthropic's Messages API request, read into the server's one internal request.

``POST /v1/messages`` is another encoding of the same conversation the chat-completions
path serves, so a Messages request is validated here (msgspec, in one pass, with a 400
naming the field) and turned into a :class:`ChatCompletionRequest`; everything after that
(template, parser, runtime, engine) is the one path. The blocks map as Anthropic's own
OpenAI-compatibility layer maps them:

- ``system`` (a string or text blocks) is a system message;
- a user turn's ``tool_result`` blocks are ``tool`` messages (``tool_call_id`` from
  ``tool_use_id``), in order, before the turn's text;
- an assistant turn's ``thinking`` blocks are its ``reasoning_content`` (templates that
  keep reasoning render it back), ``text`` its content, ``tool_use`` its ``tool_calls``;
- ``tools`` (``input_schema``) are function tools; ``tool_choice`` ``auto`` / ``any`` /
  ``tool`` / ``none`` is ``"auto"`` / ``"required"`` / the named function / ``"none"``;
  ``disable_parallel_tool_use`` is ``parallel_tool_calls: false``;
- ``thinking: {type: "enabled", budget_tokens}`` turns the family's thinking switch on
  (the ``chat_template_kwargs`` entry its switch probe finds) and sets the thinking budget;
  ``{type: "disabled"}`` turns it off. A family that always thinks has no switch: only the
  budget applies.

Signatures: a ``thinking`` block this server returns carries a ``signature`` (an HMAC of
the text under a key made when the server starts). A signature sent back is not checked:
the chat template renders the reasoning text again whatever it says, and a restarted
server could not check an old one. Images and documents are refused: this server serves
text models.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgspec

from reasonspan.runtime.core.nesting import nested_deeper_than
from reasonspan.runtime.wire.openai import ErrorDetail
from reasonspan.serving.protocol import (
    ChatCompletionRequest,
    Message,
    NonNegative,
    Positive,
    RequestError,
    decode_validated,
    function_tool,
    too_deep,
)

_Ignored = dict[str, Any] | None
"""``cache_control`` and ``citations`` on input blocks: accepted, nothing to do here.

Content blocks ignore fields they do not read (the request itself refuses unknown
fields): clients send back the blocks they received, and the blocks an SDK returns grow
fields with each API version (``caller``, ``citations``, ...)."""


class TextBlock(msgspec.Struct, tag_field="type", tag="text"):
    text: str
    cache_control: _Ignored = None
    citations: list[Any] | None = None


class ThinkingBlock(msgspec.Struct, tag_field="type", tag="thinking"):
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(msgspec.Struct, tag_field="type", tag="redacted_thinking"):
    """Sent back by clients that keep every block; its data is opaque and not rendered."""

    data: str


class ToolUseBlock(msgspec.Struct, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]
    cache_control: _Ignored = None


class ToolResultBlock(msgspec.Struct, tag_field="type", tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlock] | None = None
    is_error: bool | None = None
    cache_control: _Ignored = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(b.text for b in self.content)
        return self.content or ""


class ImageBlock(msgspec.Struct, tag_field="type", tag="image"):
    """Decoded only to be refused with a message that says why."""


class DocumentBlock(msgspec.Struct, tag_field="type", tag="document"):
    """Decoded only to be refused with a message that says why."""


Block = (
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ToolResultBlock
    | ImageBlock
    | DocumentBlock
)


class InputMessage(msgspec.Struct, forbid_unknown_fields=True):
    role: Literal["user", "assistant"]
    content: str | list[Block]


class Tool(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    type: Literal["custom"] | None = None
    cache_control: _Ignored = None


class ToolChoice(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["enabled", "disabled"]
    budget_tokens: NonNegative | None = None


class MessagesRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    model: str
    max_tokens: Positive
    messages: Annotated[list[InputMessage], msgspec.Meta(min_length=1)]
    system: str | list[TextBlock] | None = None
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    top_p: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None
    top_k: Positive | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    service_tier: str | None = None
    # reasonspan's extensions, as on the chat-completions path (protocol.py says each).
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_parser: str | None = None
    simulated_output: str | None = None
    simulated_output_ids: list[NonNegative] | None = None


_decoder = msgspec.json.Decoder(MessagesRequest)

_FREE_FORM = ("metadata", "chat_template_kwargs")


def parse_messages_request(body: bytes) -> MessagesRequest:
    """Decode and validate a Messages request body, or raise :class:`RequestError` (400)."""
    req = decode_validated(_decoder, body, free_form=_FREE_FORM)
    for k, tool in enumerate(req.tools or ()):
        if nested_deeper_than(tool.input_schema):
            raise too_deep(f"tools[{k}].input_schema")
    for i, m in enumerate(req.messages):
        if isinstance(m.content, str):
            continue
        for j, block in enumerate(m.content):
            if isinstance(block, ToolUseBlock) and nested_deeper_than(block.input):
                raise too_deep(f"messages[{i}].content[{j}].input")
            if isinstance(block, ImageBlock | DocumentBlock):
                kind = "image" if isinstance(block, ImageBlock) else "document"
                raise RequestError(
                    f"{kind} blocks are not supported: this server serves text models",
                    param=f"messages[{i}].content[{j}]",
                )
            if m.role == "user" and isinstance(block, ThinkingBlock | ToolUseBlock):
                raise RequestError(
                    f"a user turn cannot hold a {block.__struct_config__.tag} block",
                    param=f"messages[{i}].content[{j}]",
                )
            if m.role == "assistant" and isinstance(block, ToolResultBlock):
                raise RequestError(
                    "an assistant turn cannot hold a tool_result block (send it in the next "
                    "user turn)",
                    param=f"messages[{i}].content[{j}]",
                )
    choice = req.tool_choice
    if choice is not None and choice.type == "tool" and not choice.name:
        raise RequestError(
            'tool_choice.name is required when tool_choice.type is "tool"',
            param="tool_choice.name",
        )
    if choice is not None and choice.type == "tool" and choice.name not in _names(req.tools):
        raise RequestError(
            f"tool_choice names the tool {choice.name!r}, which is not in tools",
            param="tool_choice.name",
        )
    if req.stop_sequences is not None and not all(req.stop_sequences):
        raise RequestError("stop_sequences cannot hold an empty string", param="stop_sequences")
    if req.thinking is not None and req.thinking.type == "enabled":
        budget = req.thinking.budget_tokens
        if budget is None:
            raise RequestError(
                'thinking.budget_tokens is required when thinking.type is "enabled"',
                param="thinking.budget_tokens",
            )
        if budget >= req.max_tokens:
            raise RequestError(
                f"thinking.budget_tokens ({budget}) must be less than max_tokens "
                f"({req.max_tokens})",
                param="thinking.budget_tokens",
            )
    return req


def _names(tools: list[Tool] | None) -> set[str]:
    return {t.name for t in tools or ()}


def _user_messages(content: str | list[Block]) -> list[Message]:
    if isinstance(content, str):
        return [Message(role="user", content=content)]
    out = [
        Message(role="tool", content=b.text(), tool_call_id=b.tool_use_id)
        for b in content
        if isinstance(b, ToolResultBlock)
    ]
    text = "".join(b.text for b in content if isinstance(b, TextBlock))
    if text or not out:
        out.append(Message(role="user", content=text))
    return out


def _assistant_message(content: str | list[Block]) -> Message:
    if isinstance(content, str):
        return Message(role="assistant", content=content)
    thinking = "".join(b.thinking for b in content if isinstance(b, ThinkingBlock))
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)},
        }
        for b in content
        if isinstance(b, ToolUseBlock)
    ]
    return Message(
        role="assistant",
        content="".join(b.text for b in content if isinstance(b, TextBlock)),
        reasoning_content=thinking or None,
        tool_calls=calls or None,
    )


def _tool_choice(choice: ToolChoice | None) -> str | dict[str, Any] | None:
    if choice is None:
        return None
    if choice.type == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return {"auto": "auto", "any": "required", "none": "none"}[choice.type]


def to_chat_request(req: MessagesRequest) -> ChatCompletionRequest:
    """The internal request of a Messages request (the thinking switch is added later,
    once the model's parser is known: :func:`reasonspan.serving.served.thinking_kwargs`)."""
    messages: list[Message] = []
    if req.system:
        system = req.system if isinstance(req.system, str) else "".join(b.text for b in req.system)
        messages.append(Message(role="system", content=system))
    for m in req.messages:
        if m.role == "user":
            messages.extend(_user_messages(m.content))
        else:
            messages.append(_assistant_message(m.content))
    tools = None
    if req.tools is not None:
        tools = [function_tool(t.name, t.description, t.input_schema) for t in req.tools]
    thinking = req.thinking
    parallel = None
    if req.tool_choice is not None and req.tool_choice.disable_parallel_tool_use:
        parallel = False
    return ChatCompletionRequest(
        model=req.model,
        messages=messages,
        stream=req.stream,
        max_tokens=req.max_tokens,
        chat_template_kwargs=req.chat_template_kwargs,
        thinking_token_budget=(
            thinking.budget_tokens if thinking and thinking.type == "enabled" else None
        ),
        reasoning_parser=req.reasoning_parser,
        simulated_output=req.simulated_output,
        simulated_output_ids=req.simulated_output_ids,
        temperature=req.temperature,
        top_p=req.top_p,
        stop=req.stop_sequences,
        tools=tools,
        tool_choice=_tool_choice(req.tool_choice),
        parallel_tool_calls=parallel,
        metadata=_string_metadata(req.metadata),
    )


def _string_metadata(metadata: dict[str, Any] | None) -> dict[str, str] | None:
    if metadata is None:
        return None
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}


class AnthropicErrorDetail(msgspec.Struct):
    type: str
    message: str


class AnthropicError(msgspec.Struct, tag_field="type", tag="error"):
    """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``."""

    error: AnthropicErrorDetail


def anthropic_error(status: int, detail: ErrorDetail) -> AnthropicError:
    """The Messages API's shape of an error this server would send as OpenAI's."""
    kind = _ERROR_TYPES.get(status, "api_error")
    message = detail.message
    if detail.param and detail.param not in message:
        message = f"{message} (param: {detail.param})"
    return AnthropicError(AnthropicErrorDetail(kind, message))

"""OpenAI's Responses API request, read into the server's one internal request.

``POST /v1/responses`` is another encoding of the conversation the chat-completions path
serves: a Responses request is validated here and turned into a
:class:`ChatCompletionRequest`, and everything after that (template, parser, runtime,
engine) is the one path. Input items map as OpenAI's own guide to moving from Chat
Completions describes:

- a string ``input`` is one user message; ``instructions`` is a system message first;
- ``message`` items (with or without ``"type"``) are messages; their ``input_text`` /
  ``output_text`` / ``refusal`` parts are joined into the message text;
- ``reasoning`` items go to the next assistant turn as its ``reasoning_content`` (its
  ``reasoning_text`` content, else its summary), so templates that keep reasoning render
  it back, as the chat-completions path does with ``reasoning``;
- ``function_call`` items are that assistant turn's ``tool_calls`` (``call_id`` is the
  call's id); ``function_call_output`` items are ``tool`` messages;
- ``tools`` are flat function tools; ``tool_choice`` is ``"auto"`` / ``"none"`` /
  ``"required"`` or ``{"type": "function", "name"}``; ``max_output_tokens`` the token
  limit; ``text.format`` (``json_schema``, ``json_object``) the grammar engine's
  ``response_format``; ``reasoning.effort`` reaches the template as ``reasoning_effort``,
  and ``"none"`` turns the family's thinking switch off.

This server keeps no responses: ``store`` is accepted (and the response says
``store: false``), ``previous_response_id`` and ``item_reference`` items are refused with
a 400 saying so (send the earlier items in ``input``), as is ``background: true``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from reasonspan.runtime.core.nesting import nested_deeper_than
from reasonspan.serving.protocol import (
    ChatCompletionRequest,
    Message,
    NonNegative,
    Positive,
    RequestError,
    ResponseFormat,
    decode_validated,
    function_tool,
    too_deep,
)


class FunctionTool(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    type: Literal["function"]
    name: str
    parameters: dict[str, Any] | None = None
    description: str | None = None
    strict: bool | None = None


class FunctionChoice(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["function"]
    name: str


class ReasoningConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    effort: str | None = None
    summary: str | None = None
    generate_summary: str | None = None


class TextFormat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    schema: dict[str, Any] | None = None
    description: str | None = None
    strict: bool | None = None


class TextConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    format: TextFormat | None = None
    verbosity: str | None = None


class ResponsesRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    model: str
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["auto", "none", "required"] | FunctionChoice | None = None
    max_output_tokens: Positive | None = None
    reasoning: ReasoningConfig | None = None
    text: TextConfig | None = None
    stream: bool = False
    store: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    metadata: dict[str, str] | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    background: bool | None = None
    include: list[str] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    user: str | None = None
    service_tier: str | None = None
    top_logprobs: Annotated[int, msgspec.Meta(ge=0, le=20)] | None = None
    max_tool_calls: int | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    stream_options: dict[str, Any] | None = None
    # reasonspan's extensions, as on the chat-completions path (protocol.py says each).
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_parser: str | None = None
    simulated_output: str | None = None
    simulated_output_ids: list[NonNegative] | None = None


class _Part(msgspec.Struct, forbid_unknown_fields=False):
    """A content part of a message item: only its text is read."""

    type: str
    text: str | None = None
    refusal: str | None = None


class MessageItem(msgspec.Struct, forbid_unknown_fields=True):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[_Part]
    type: Literal["message"] = "message"
    id: str | None = None
    status: str | None = None
    phase: str | None = None


class _Text(msgspec.Struct):
    text: str
    type: str = ""


class ReasoningItem(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["reasoning"]
    summary: list[_Text] = []
    content: list[_Text] | None = None
    id: str | None = None
    encrypted_content: str | None = None
    status: str | None = None

    def text(self) -> str:
        if self.content:
            return "".join(c.text for c in self.content)
        return "\n\n".join(s.text for s in self.summary)


class FunctionCallItem(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: str | None = None


class FunctionCallOutputItem(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[_Part]
    id: str | None = None
    status: str | None = None


_ITEMS: dict[str, type[msgspec.Struct]] = {
    "message": MessageItem,
    "reasoning": ReasoningItem,
    "function_call": FunctionCallItem,
    "function_call_output": FunctionCallOutputItem,
}

Item = MessageItem | ReasoningItem | FunctionCallItem | FunctionCallOutputItem

_decoder = msgspec.json.Decoder(ResponsesRequest)


def _part_text(parts: str | list[_Part], where: str) -> str:
    if isinstance(parts, str):
        return parts
    out = []
    for k, p in enumerate(parts):
        if p.type in ("input_text", "output_text", "text", "summary_text"):
            out.append(p.text or "")
        elif p.type == "refusal":
            out.append(p.refusal or "")
        else:
            raise RequestError(
                f"content parts of type {p.type!r} are not supported: this server serves "
                "text models",
                param=f"{where}[{k}]",
            )
    return "".join(out)


def _item(raw: dict[str, Any], i: int) -> Item:
    kind = raw.get("type", "message")
    if kind == "item_reference":
        raise RequestError(
            "item_reference items need stored responses, and this server keeps none: send "
            "the items themselves",
            param=f"input[{i}]",
        )
    cls = _ITEMS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise RequestError(
            f"input items of type {kind!r} are not supported (message, reasoning, "
            "function_call, function_call_output)",
            param=f"input[{i}].type",
        )
    try:
        item: Item = msgspec.convert(raw, cls)  # type: ignore[assignment]
    except msgspec.ValidationError as exc:
        message = str(exc)
        raise RequestError(f"invalid input[{i}]: {message}", param=f"input[{i}]") from None
    return item


def parse_responses_request(body: bytes) -> tuple[ResponsesRequest, list[Item]]:
    """Decode and validate a Responses request body and its input items, or raise
    :class:`RequestError` (400)."""
    req = decode_validated(_decoder, body, free_form=("input", "chat_template_kwargs"))
    for k, tool in enumerate(req.tools or ()):
        if nested_deeper_than(tool.parameters):
            raise too_deep(f"tools[{k}].parameters")
    if req.previous_response_id is not None:
        raise RequestError(
            "previous_response_id needs stored responses, and this server keeps none: send "
            "the earlier items in input (reasoning, function_call, function_call_output)",
            param="previous_response_id",
        )
    if req.background:
        raise RequestError(
            "background responses are not supported (this server keeps no responses)",
            param="background",
        )
    items = [] if isinstance(req.input, str) else [_item(r, i) for i, r in enumerate(req.input)]
    fmt = req.text.format if req.text is not None else None
    if fmt is not None and fmt.type == "json_schema" and not fmt.schema:
        raise RequestError(
            'text.format.schema is required when text.format.type is "json_schema"',
            param="text.format.schema",
        )
    choice = req.tool_choice
    names = {t.name for t in req.tools or ()}
    if isinstance(choice, FunctionChoice) and choice.name not in names:
        raise RequestError(
            f"tool_choice names the function {choice.name!r}, which is not in tools",
            param="tool_choice.name",
        )
    return req, items


class _Turns:
    """Builds the chat messages: an assistant turn gathers the reasoning before it and
    the calls after it, until a turn of another role begins."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._reasoning: list[str] = []
        self._assistant: Message | None = None

    def flush(self) -> None:
        if self._assistant is not None:
            self.messages.append(self._assistant)
            self._assistant = None
        elif self._reasoning:  # reasoning with no answer after it: an assistant turn of its own
            reasoning = "".join(self._reasoning)
            self.messages.append(Message(role="assistant", content="", reasoning_content=reasoning))
        self._reasoning = []

    def assistant(self) -> Message:
        if self._assistant is None:
            self._assistant = Message(
                role="assistant", content="", reasoning_content="".join(self._reasoning) or None
            )
            self._reasoning = []
        return self._assistant

    def add(self, item: Item, i: int) -> None:
        if isinstance(item, ReasoningItem):
            if self._assistant is not None:
                self.flush()
            self._reasoning.append(item.text())
        elif isinstance(item, FunctionCallItem):
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            turn = self.assistant()
            turn.tool_calls = [*(turn.tool_calls or ()), call]
        elif isinstance(item, FunctionCallOutputItem):
            self.flush()
            text = _part_text(item.output, f"input[{i}].output")
            self.messages.append(Message(role="tool", content=text, tool_call_id=item.call_id))
        elif item.role == "assistant":
            turn = self.assistant()
            turn.content = f"{turn.content or ''}{_part_text(item.content, f'input[{i}].content')}"
        else:
            self.flush()
            text = _part_text(item.content, f"input[{i}].content")
            self.messages.append(Message(role=item.role, content=text))


def _response_format(text: TextConfig | None) -> ResponseFormat | None:
    fmt = text.format if text is not None else None
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return ResponseFormat(type="json_object")
    schema: dict[str, Any] = {"name": fmt.name or "response", "schema": fmt.schema}
    if fmt.strict is not None:
        schema["strict"] = fmt.strict
    return ResponseFormat(type="json_schema", json_schema=schema)


def to_chat_request(req: ResponsesRequest, items: list[Item]) -> ChatCompletionRequest:
    """The internal request of a Responses request (``reasoning.effort: "none"`` is
    turned into the family's switch later, once the model's parser is known)."""
    turns = _Turns()
    if req.instructions:
        turns.messages.append(Message(role="system", content=req.instructions))
    if isinstance(req.input, str):
        turns.messages.append(Message(role="user", content=req.input))
    for i, item in enumerate(items):
        turns.add(item, i)
    turns.flush()
    if not turns.messages:
        raise RequestError("input holds no message", param="input")
    tools = None
    if req.tools is not None:
        tools = [
            function_tool(
                t.name, t.description, t.parameters or {"type": "object", "properties": {}}
            )
            for t in req.tools
        ]
    choice: str | dict[str, Any] | None
    if isinstance(req.tool_choice, FunctionChoice):
        choice = {"type": "function", "function": {"name": req.tool_choice.name}}
    else:
        choice = req.tool_choice
    effort = req.reasoning.effort if req.reasoning is not None else None
    return ChatCompletionRequest(
        model=req.model,
        messages=turns.messages,
        stream=req.stream,
        max_tokens=req.max_output_tokens,
        chat_template_kwargs=req.chat_template_kwargs,
        reasoning_effort=effort if effort not in (None, "none") else None,
        response_format=_response_format(req.text),
        reasoning_parser=req.reasoning_parser,
        simulated_output=req.simulated_output,
        simulated_output_ids=req.simulated_output_ids,
        temperature=req.temperature,
        top_p=req.top_p,
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=req.parallel_tool_calls,
        metadata=req.metadata,
        user=req.user,
        logprobs=wants_logprobs(req) or None,
        top_logprobs=req.top_logprobs,
    )


LOGPROBS_INCLUDE = "message.output_text.logprobs"
"""The ``include`` entry that asks for the answer's log probabilities."""


def wants_logprobs(req: ResponsesRequest) -> bool:
    """The answer's ``output_text`` carries log probabilities: ``include`` asks for them,
    or ``top_logprobs`` is set (it means nothing otherwise)."""
    return LOGPROBS_INCLUDE in (req.include or ()) or req.top_logprobs is not None


def effort_off(req: ResponsesRequest) -> bool:
    """``reasoning.effort: "none"``: the request asks for no reasoning at all."""
    return req.reasoning is not None and req.reasoning.effort == "none"


def tools_echo(req: ResponsesRequest) -> list[dict[str, Any]]:
    """The request's tools as the response repeats them."""
    return [msgspec.to_builtins(t) for t in req.tools or ()]

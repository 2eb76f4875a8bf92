"""The chat-completions request a server accepts, and OpenAI-style 400 errors.

A request is decoded and validated in one pass by msgspec (types, ranges, unknown fields),
then checked for what types cannot say (``stream_options`` without ``stream``, a
``json_schema`` format without its schema). Every failure becomes a :class:`RequestError`
whose body is OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with ``param``
naming the offending field, so a client sees *which* field was wrong.

The responses (``chat.completion``, ``chat.completion.chunk``) are the runtime's wire
Structs (:mod:`reasonspan.runtime.openai`); they are not re-declared here.

Extensions beyond OpenAI's fields, as other servers spell them: ``chat_template_kwargs``,
``include_reasoning``, ``thinking_token_budget``, ``skip_special_tokens``; and
reasonspan's own: ``thinking_budget_lead_in`` (text forced before the end marker when the
budget is spent), ``reasoning_parser`` (override the model's parser for this request) and
``simulated_output`` (understood only by the SIMULATED engine: the text the "model" will
write; ignored by a real engine).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from ..runtime.errors import ReasonspanError
from ..runtime.openai import ErrorBody, ErrorDetail, encode

NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]


class RequestError(ReasonspanError, ValueError):
    """A request the server refuses: HTTP ``status`` with an OpenAI error body."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.code = code
        self.type = type

    def detail(self) -> ErrorDetail:
        return ErrorDetail(message=self.message, type=self.type, param=self.param, code=self.code)

    def body(self) -> bytes:
        return encode(ErrorBody(error=self.detail()))


class TextPart(msgspec.Struct, forbid_unknown_fields=True, tag_field="type", tag="text"):
    """A text part of a message's content (the only part type a text model reads)."""

    text: str


class Message(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One chat message. Assistant turns may carry their old reasoning as ``reasoning`` or
    ``reasoning_content`` (clients send either); the template sees both."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None

    def for_template(self) -> dict[str, Any]:
        """The message as chat templates read it (content parts joined into one string)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        if isinstance(self.content, list):
            out["content"] = "".join(p.text for p in self.content)
        elif self.content is None:
            out["content"] = ""
        return out


class StreamOptions(msgspec.Struct, forbid_unknown_fields=True):
    include_usage: bool = False


class ResponseFormat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Accepted and validated here; the grammar engine (llguidance) enforces it once
    reasoning ends. ``regex`` and ``grammar`` (a Lark grammar) are extensions."""

    type: Literal["text", "json_object", "json_schema", "regex", "grammar"]
    json_schema: dict[str, Any] | None = None
    regex: str | None = None
    grammar: str | None = None


class ChatCompletionRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    model: str
    messages: Annotated[list[Message], msgspec.Meta(min_length=1)]
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: Positive | None = None
    max_completion_tokens: Positive | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    include_reasoning: bool = True
    thinking_token_budget: NonNegative | None = None
    thinking_budget_lead_in: str | None = None
    response_format: ResponseFormat | None = None
    skip_special_tokens: bool = True
    reasoning_parser: str | None = None
    simulated_output: str | None = None
    # Sampling and tool fields: accepted and handed to the engine as they are.
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    top_p: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    n: Annotated[int, msgspec.Meta(ge=1, le=1)] = 1
    user: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None

    @property
    def token_limit(self) -> int | None:
        """``max_completion_tokens`` (the current name), else ``max_tokens``."""
        return self.max_completion_tokens if self.max_completion_tokens else self.max_tokens

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    @property
    def structured_output(self) -> bool:
        return self.response_format is not None and self.response_format.type != "text"

    def template_kwargs(self, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
        """``chat_template_kwargs`` over the model's defaults, with ``reasoning_effort``
        passed on (templates read it) unless the kwargs set it themselves."""
        out = dict(defaults or {})
        out.update(self.chat_template_kwargs or {})
        if self.reasoning_effort is not None:
            out.setdefault("reasoning_effort", self.reasoning_effort)
        return out


_decoder = msgspec.json.Decoder(ChatCompletionRequest)
_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_FIELD = re.compile(r"field `(?P<field>[^`]+)`")


def _param(message: str) -> tuple[str, str | None]:
    """msgspec's message without its ``- at `$.x` `` suffix, and the field it names."""
    path = ""
    m = _AT.search(message)
    if m is not None:
        path = m.group("path").lstrip(".")
        message = message[: m.start()]
    f = _FIELD.search(message)
    if f is not None and ("unknown field" in message or "missing required" in message):
        path = f"{path}.{f.group('field')}" if path else f.group("field")
    return message, path or None


def parse_request(body: bytes) -> ChatCompletionRequest:
    """Decode and validate a request body, or raise :class:`RequestError` (400)."""
    try:
        req = _decoder.decode(body)
    except msgspec.ValidationError as exc:
        message, param = _param(str(exc))
        where = f" (at {param})" if param else ""
        raise RequestError(f"invalid request: {message}{where}", param=param) from None
    except msgspec.DecodeError as exc:
        raise RequestError(f"the request body is not valid JSON: {exc}") from None
    if req.stream_options is not None and not req.stream:
        raise RequestError(
            "stream_options is only allowed when stream is true", param="stream_options"
        )
    fmt = req.response_format
    if fmt is not None and fmt.type == "json_schema" and not fmt.json_schema:
        raise RequestError(
            "response_format.json_schema is required when response_format.type is 'json_schema'",
            param="response_format.json_schema",
        )
    for kind in ("regex", "grammar"):
        if fmt is not None and fmt.type == kind and not getattr(fmt, kind):
            raise RequestError(
                f"response_format.{kind} is required when response_format.type is {kind!r}",
                param=f"response_format.{kind}",
            )
    if req.thinking_budget_lead_in is not None and req.thinking_token_budget is None:
        raise RequestError(
            "thinking_budget_lead_in needs a thinking_token_budget",
            param="thinking_budget_lead_in",
        )
    return req

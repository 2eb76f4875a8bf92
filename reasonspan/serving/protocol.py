"""The chat-completions request a server accepts, and OpenAI-style 400 errors.

A request is decoded and validated in one pass by msgspec (types, ranges, unknown fields),
then checked for what types cannot say (``stream_options`` without ``stream``, a
``json_schema`` format without its schema). Every failure becomes a :class:`RequestError`
whose body is OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with ``param``
naming the offending field, so a client sees *which* field was wrong.

The responses (``chat.completion``, ``chat.completion.chunk``) are the runtime's wire
Structs (:mod:`reasonspan.runtime.wire.openai`); they are not re-declared here.

Every field of OpenAI's Chat Completions request is accepted (the installed ``openai``
client's own list is the test's reference). The decoding ones and everything else a
client may set (``user``, ``metadata``, ``parallel_tool_calls``, ...) reach the engine as
:class:`SamplingParams` (:meth:`ChatCompletionRequest.sampling_params`); the engine honours
what it can. Only what this server can never honour is refused with a 400 naming the
field: ``n`` > 1 (one choice per request) and audio output (``modalities`` with
``"audio"``).

Extensions beyond OpenAI's fields, as other servers spell them: ``chat_template_kwargs``,
``include_reasoning``, ``thinking_token_budget``, ``skip_special_tokens``; and
reasonspan's own: ``thinking_budget_lead_in`` (text forced before the end marker when the
budget is spent), ``reasoning_parser`` (override the model's parser for this request),
``simulated_output`` and ``simulated_output_ids`` (understood only by the SIMULATED
engine: the text, or the exact token ids, the "model" will write, so a recorded output
replays exactly; ignored by a real engine).

Bodies nested deeper than :data:`MAX_NESTING` containers are refused (400) before they
reach code that recurses over them (msgspec, ``json.dumps``, the chat template).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.runtime.core.nesting import MAX_NESTING, nested_deeper_than
from reasonspan.runtime.wire.openai import ErrorBody, ErrorDetail, encode

_T = TypeVar("_T")
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


class RefusalPart(msgspec.Struct, forbid_unknown_fields=True, tag_field="type", tag="refusal"):
    """A refusal part of an assistant turn's content (OpenAI sends these back)."""

    refusal: str


class Message(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One chat message. Assistant turns may carry their old reasoning as ``reasoning`` or
    ``reasoning_content`` (clients send either); the template sees both."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart | RefusalPart] | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    # What an OpenAI client may send back in an assistant turn it received; not rendered.
    refusal: str | None = None
    audio: dict[str, Any] | None = None
    function_call: dict[str, Any] | None = None
    annotations: list[Any] | None = None
    citations: list[Any] | None = None
    """What this server sends in ``message.citations`` (inline citations, Cohere's)."""

    def for_template(self) -> dict[str, Any]:
        """The message as chat templates read it (content parts joined into one string)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        for unused in ("refusal", "audio", "function_call", "annotations", "citations"):
            out.pop(unused, None)
        if isinstance(self.content, list):
            out["content"] = "".join(
                p.text if isinstance(p, TextPart) else p.refusal for p in self.content
            )
        elif self.content is None:
            out["content"] = ""
        return out


class StreamOptions(msgspec.Struct, forbid_unknown_fields=True):
    include_usage: bool = False
    include_obfuscation: bool | None = None
    """Accepted; this server adds no obfuscation padding."""


class ResponseFormat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Accepted and validated here; the grammar engine (llguidance) enforces it once
    reasoning ends. ``regex`` and ``grammar`` (a Lark grammar) are extensions."""

    type: Literal["text", "json_object", "json_schema", "regex", "grammar"]
    json_schema: dict[str, Any] | None = None
    regex: str | None = None
    grammar: str | None = None


class SamplingParams(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the engine gets of a request besides its prompt: the decoding parameters, and
    every other standard field the client set, as sent (an engine honours what it can).

    ``stop`` is always a list; ``logit_bias`` has int token ids; ``max_tokens`` is
    ``max_completion_tokens`` when given, else ``max_tokens``."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    max_tokens: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    logit_bias: dict[int, float] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    n: int = 1
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """The other standard fields the client set (``user``, ``metadata``,
    ``parallel_tool_calls``, ``service_tier``, ...), by name."""


Penalty = Annotated[float, msgspec.Meta(ge=-2, le=2)]

PASSED_ON = (
    "user",
    "metadata",
    "parallel_tool_calls",
    "service_tier",
    "store",
    "verbosity",
    "prediction",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "safety_identifier",
    "moderation",
    "web_search_options",
    "audio",
    "modalities",
    "functions",
    "function_call",
)
"""Standard fields with no decoding meaning here, handed on in ``SamplingParams.extra``."""


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
    simulated_output_ids: list[NonNegative] | None = None
    # Sampling: handed to the engine (``sampling_params()``).
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    top_p: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    n: Positive | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, msgspec.Meta(ge=0, le=20)] | None = None
    logit_bias: dict[str, Annotated[float, msgspec.Meta(ge=-100, le=100)]] | None = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    # The rest of OpenAI's fields (PASSED_ON): accepted and handed on as they are.
    user: str | None = None
    metadata: dict[str, str] | None = None
    parallel_tool_calls: bool | None = None
    service_tier: str | None = None
    store: bool | None = None
    verbosity: str | None = None
    prediction: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    prompt_cache_retention: str | None = None
    safety_identifier: str | None = None
    moderation: dict[str, Any] | None = None
    web_search_options: dict[str, Any] | None = None
    audio: dict[str, Any] | None = None
    modalities: list[str] | None = None
    functions: list[dict[str, Any]] | None = None
    function_call: str | dict[str, Any] | None = None

    def sampling_params(self) -> SamplingParams:
        """The engine's share of the request (see :class:`SamplingParams`)."""
        stop = [self.stop] if isinstance(self.stop, str) else self.stop
        bias = None
        if self.logit_bias is not None:
            bias = {int(k): v for k, v in self.logit_bias.items()}
        extra = {k: getattr(self, k) for k in PASSED_ON if getattr(self, k) is not None}
        return SamplingParams(
            temperature=self.temperature,
            top_p=self.top_p,
            seed=self.seed,
            stop=stop,
            max_tokens=self.token_limit,
            logprobs=self.logprobs,
            top_logprobs=self.top_logprobs,
            logit_bias=bias,
            presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty,
            n=self.n or 1,
            extra=extra,
        )

    @property
    def token_limit(self) -> int | None:
        """``max_completion_tokens`` (the current name), else ``max_tokens``."""
        return self.max_completion_tokens if self.max_completion_tokens else self.max_tokens

    @property
    def logprobs_top(self) -> int | None:
        """What the runtime's ``add(logprobs=...)`` takes: the likeliest tokens to report per
        position (None: no log probabilities)."""
        return (self.top_logprobs or 0) if self.logprobs else None

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


_FREE_FORM = (
    "tools",
    "tool_choice",
    "chat_template_kwargs",
    "prediction",
    "prompt_cache_options",
    "moderation",
    "web_search_options",
    "audio",
    "functions",
    "function_call",
)
"""Request fields that hold arbitrary JSON (their nesting is checked)."""


def too_deep(param: str) -> RequestError:
    return RequestError(
        f"{param} is nested more than {MAX_NESTING} levels deep; this server refuses deeper JSON",
        param=param,
    )


def decode_validated(
    decoder: msgspec.json.Decoder[_T], body: bytes, *, free_form: tuple[str, ...] = ()
) -> _T:
    """Decode a body with a protocol's decoder, or raise :class:`RequestError` (400)
    naming the field msgspec names. ``free_form``: top-level fields that hold arbitrary
    JSON, refused past :data:`MAX_NESTING` before code that recurses over them sees them."""
    try:
        req = decoder.decode(body)
    except msgspec.ValidationError as exc:
        message, param = _param(str(exc))
        where = f" (at {param})" if param else ""
        raise RequestError(f"invalid request: {message}{where}", param=param) from None
    except msgspec.DecodeError as exc:
        raise RequestError(f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise RequestError(
            "the request body is nested too deeply to decode (JSON over about 1,000 levels)"
        ) from None
    for name in free_form:
        if nested_deeper_than(getattr(req, name)):
            raise too_deep(name)
    return req


def parse_request(body: bytes) -> ChatCompletionRequest:
    """Decode and validate a request body, or raise :class:`RequestError` (400)."""
    req = decode_validated(_decoder, body, free_form=_FREE_FORM)
    _check_free_form(req)
    _check_unsupported(req)
    _check_tools(req)
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
    schema = (fmt.json_schema or {}).get("schema", {}) if fmt is not None else {}
    if not isinstance(schema, dict):
        got = type(schema).__name__
        raise RequestError(
            f"response_format.json_schema.schema must be a JSON Schema object, not {got}",
            param="response_format.json_schema.schema",
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


def _check_free_form(req: ChatCompletionRequest) -> None:
    """Nesting of the nested fields that hold arbitrary JSON, and the keys of ``logit_bias``."""
    fmt = req.response_format
    if fmt is not None and nested_deeper_than(fmt.json_schema):
        raise too_deep("response_format.json_schema")
    for i, m in enumerate(req.messages):
        if nested_deeper_than(m.tool_calls):
            raise too_deep(f"messages[{i}].tool_calls")
    for key in req.logit_bias or {}:
        if not key.isdigit():
            raise RequestError(
                f"logit_bias keys are token ids (non-negative integers as strings), not {key!r}",
                param="logit_bias",
            )


def _check_unsupported(req: ChatCompletionRequest) -> None:
    """What this server can never honour: a clear 400 rather than a silent answer."""
    if req.n is not None and req.n > 1:
        raise RequestError(
            f"n={req.n} is not supported: this server returns one choice per request "
            "(send n=1, or send the request n times)",
            param="n",
        )
    if req.modalities is not None and "audio" in req.modalities:
        raise RequestError(
            "audio output is not supported: this server serves text models "
            '(modalities must be ["text"])',
            param="modalities",
        )
    if req.simulated_output is not None and req.simulated_output_ids is not None:
        raise RequestError(
            "send simulated_output or simulated_output_ids, not both",
            param="simulated_output_ids",
        )
    if req.top_logprobs and not req.logprobs:
        raise RequestError("top_logprobs needs logprobs set to true", param="top_logprobs")


_TOOL_CHOICES = ("none", "auto", "required")


def function_tool(name: str, description: str | None, parameters: Any) -> dict[str, Any]:
    """A tool in Chat Completions' shape (what the chat template and the runtime read),
    from another protocol's flat one."""
    fn = {"name": name, "description": description or "", "parameters": parameters}
    return {"type": "function", "function": fn}


def _check_tools(req: ChatCompletionRequest) -> None:
    """``tools``, ``tool_choice`` and tool results as OpenAI defines them: what the types
    above cannot say (they hold free-form JSON) is checked here, each with the field."""
    names: list[str] = []
    for i, tool in enumerate(req.tools or ()):
        where = f"tools[{i}]"
        if tool.get("type") != "function":
            raise RequestError(
                f"{where}.type must be 'function' (the only tool type this server calls), "
                f"not {tool.get('type')!r}",
                param=f"{where}.type",
            )
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise RequestError(
                f"{where}.function must be an object with a non-empty string name",
                param=f"{where}.function",
            )
        params = fn.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise RequestError(
                f"{where}.function.parameters must be a JSON Schema object, "
                f"not {type(params).__name__}",
                param=f"{where}.function.parameters",
            )
        names.append(fn["name"])
    choice = req.tool_choice
    if isinstance(choice, str) and choice not in _TOOL_CHOICES:
        raise RequestError(
            f"tool_choice must be one of {', '.join(_TOOL_CHOICES)} or a named function, "
            f"not {choice!r}",
            param="tool_choice",
        )
    if isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if choice.get("type") != "function" or not isinstance(name, str):
            raise RequestError(
                'tool_choice must be {"type": "function", "function": {"name": ...}} when '
                "it is an object",
                param="tool_choice",
            )
        if name not in names:
            raise RequestError(
                f"tool_choice names the function {name!r}, which is not in tools",
                param="tool_choice.function.name",
            )
    if choice == "required" and not names:
        raise RequestError('tool_choice "required" needs tools', param="tool_choice")
    for i, m in enumerate(req.messages):
        if m.role == "tool" and not m.tool_call_id:
            raise RequestError(
                "a tool message needs the tool_call_id of the call it answers",
                param=f"messages[{i}].tool_call_id",
            )

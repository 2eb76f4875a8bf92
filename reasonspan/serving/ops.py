"""What a deployment asks of the server besides the protocols: readiness, metrics, and the
model's tokenizer over HTTP.

- ``GET /health``: 200 ``{"status": "ok"}`` once the server is serving (every model was
  loaded before the server could be made; the engine loop runs), else 503 in the OpenAI
  error shape (starting, or shut down).
- ``GET /metrics``: :mod:`.metrics` in the Prometheus text format.
- ``POST /tokenize``: ``{"model", "prompt"}`` or ``{"model", "messages"}`` (rendered with
  the model's chat template, as a chat request would be; ``add_generation_prompt``
  default true) gives ``{"count", "max_model_len", "tokens"}``, as vLLM answers;
  ``POST /detokenize``: ``{"model", "tokens"}`` gives ``{"prompt"}``.

Tokenizing runs on a worker thread and is bounded by ``max_model_len`` like a prompt.
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import Response

from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.serving.http_edges import error_response, json_response
from reasonspan.serving.metrics import Metrics
from reasonspan.serving.prompt_ids import check_ids, render_prompt_ids, tokenize
from reasonspan.serving.protocol import (
    Message,
    NonNegative,
    RequestError,
    decode_validated,
)
from reasonspan.serving.served import ServedModel
from reasonspan.serving.templates import ChatTemplateError


class Host(Protocol):
    """What these routes read of the server (:class:`~reasonspan.serving.app.Server`)."""

    state: str
    metrics: Metrics
    runtime: ReasoningRuntime
    max_model_len: int

    @property
    def limiter(self) -> anyio.CapacityLimiter: ...

    async def read_body(self, request: Request) -> bytes: ...

    def model(self, name: str) -> ServedModel: ...


class TokenizeRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    model: str
    prompt: str | None = None
    messages: list[Message] | None = None
    add_generation_prompt: bool = True
    tools: list[dict[str, Any]] | None = None
    chat_template_kwargs: dict[str, Any] | None = None


class DetokenizeRequest(msgspec.Struct, forbid_unknown_fields=True):
    model: str
    tokens: list[NonNegative]


class TokenizeResponse(msgspec.Struct):
    count: int
    max_model_len: int
    tokens: list[int]


class DetokenizeResponse(msgspec.Struct):
    prompt: str


_tokenize = msgspec.json.Decoder(TokenizeRequest)
_detokenize = msgspec.json.Decoder(DetokenizeRequest)


class Ops:
    """The routes of this module, over one server."""

    def __init__(self, server: Host) -> None:
        self.server = server

    async def health(self, _request: Request) -> Response:
        state = self.server.state
        if state == "serving":
            return Response(b'{"status":"ok"}', media_type="application/json")
        return error_response(
            RequestError(f"the server is {state}", status=503, type="server_error")
        )

    async def metrics(self, _request: Request) -> Response:
        text = self.server.metrics.render(self.server.runtime.step_ns)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    def _tokenize(self, body: bytes) -> TokenizeResponse:
        req = decode_validated(_tokenize, body, free_form=("tools", "chat_template_kwargs"))
        model = self.server.model(req.model)
        limit = self.server.max_model_len
        if (req.prompt is None) == (req.messages is None):
            raise RequestError("send prompt or messages (one of them)", param="prompt")
        if req.prompt is not None:
            ids = tokenize(model.tokenizer, req.prompt, max_tokens=limit, param="prompt")
        else:
            kwargs = {**model.chat_template_kwargs, **(req.chat_template_kwargs or {})}
            try:
                ids = render_prompt_ids(
                    model.tokenizer,
                    [m.for_template() for m in req.messages or ()],
                    max_tokens=limit,
                    tools=req.tools,
                    chat_template=model.chat_template,
                    chat_template_kwargs=kwargs,
                    add_generation_prompt=req.add_generation_prompt,
                    fallback=model.fallback,
                    template_name=f"model {model.name!r}",
                )
            except ChatTemplateError as exc:
                raise RequestError(str(exc), param="messages") from None
        return TokenizeResponse(len(ids), limit, ids)

    def _detokenize(self, body: bytes) -> DetokenizeResponse:
        req = decode_validated(_detokenize, body)
        model = self.server.model(req.model)
        limit = self.server.max_model_len
        check_ids(req.tokens, model.tokenizer, max_tokens=limit, param="tokens")
        return DetokenizeResponse(model.tokenizer.decode(req.tokens))

    async def tokenize(self, request: Request) -> Response:
        try:
            body = await self.server.read_body(request)
            out = await anyio.to_thread.run_sync(self._tokenize, body, limiter=self.server.limiter)
        except RequestError as exc:
            return error_response(exc)
        return json_response(out)

    async def detokenize(self, request: Request) -> Response:
        try:
            body = await self.server.read_body(request)
            out = await anyio.to_thread.run_sync(
                self._detokenize, body, limiter=self.server.limiter
            )
        except RequestError as exc:
            return error_response(exc)
        return json_response(out)

"""The reference OpenAI-compatible server: starlette + uvicorn (the ``server`` extra).

``/v1/chat/completions`` (streaming and not) and ``/v1/models`` over a
:class:`~reasonspan.runtime.stream.runtime.ReasoningRuntime` and an engine (the simulated one by
default; see ``examples/own_engine.py`` for one's own). Per request: read the body (at most
``max_body_bytes``, else 413), then on a worker thread (``anyio.to_thread``, at most
``workers`` at once) validate it (:mod:`.protocol`), create the parser with the request's
switches, render the prompt with the model's own chat template (:mod:`.templates`),
tokenize it (:mod:`.prompt_ids`: at most ``max_model_len`` tokens, else 400) and compile
its ``response_format`` grammar; back on the event loop, admit it into the runtime (the
grammar is a copy of that compile by then), hand it to the engine, then answer with SSE
(:mod:`.sse`) or the collected ``chat.completion``.

No request the server accepts stalls the event loop that streams everyone else's chunks
(the aim: no gap over 100 ms; ``python -m reasonspan.bench.stalls`` measures it). A worker
thread keeps the loop free only while it does not hold the GIL, so: what a tokenizer's
first request would build on the loop or with the GIL held for seconds (the runtime's
token tables and tool-call tables inside ``runtime.add``, llguidance's tokenizer) is built
when the :class:`Server` is made, before it can listen (``warm_up``); tokenizing never
holds the GIL for the encode nor for freeing its result (:mod:`.prompt_ids`); what is
still paid per token with the GIL held (the prompt ids as a Python list, the SIMULATED
engine's script) is bounded by ``max_model_len``, as vLLM bounds a prompt; and a
``simulated_output`` is tokenized on a worker thread, not in the engine's ``submit``. A
client that disconnects aborts its request at once (slot freed, engine told), streaming
or not.

Every answer of the app that is not a success is an OpenAI error body
(``{"error": {"message", "type", "param", "code"}}``): 4xx naming the field when the
request is at fault, 404/405 for an unknown path or method, 500 (``server_error``) when
the server is (its chat template cannot render even a minimal conversation, the engine
failed, a bug), 503 once the runtime is closed. The server keeps serving. What uvicorn
answers itself (malformed HTTP, its concurrency limit) takes the same shape when uvicorn
runs with :class:`~reasonspan.serving.uvicorn_errors.JSONErrorsProtocol` (``reasonspan
serve`` does).

starlette and uvicorn are imported here only, so ``import reasonspan`` never pulls in an
ASGI stack.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.batch.grammar import (
    GrammarError,
    GrammarUnavailableError,
    prepare_grammar,
)
from reasonspan.runtime.core.errors import InvalidOptionError, ReasonspanError, UnknownParserError
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import build_parser_sync, get_parser_class
from reasonspan.runtime.stream.runtime import (
    ReasoningRuntime,
    RequestStream,
    RuntimeClosedError,
)
from reasonspan.runtime.wire.events import EventWriter
from reasonspan.serving.engine import Engine, EngineRequest, SimulatedServingEngine
from reasonspan.serving.http_edges import (
    SSEResponse,
    collect_unless_gone,
    http_error,
    json_response,
    unhandled,
)
from reasonspan.serving.metrics import Metrics
from reasonspan.serving.ops import Ops
from reasonspan.serving.prompt_ids import check_ids, render_prompt_ids, tokenize
from reasonspan.serving.protocol import ChatCompletionRequest, RequestError
from reasonspan.serving.served import ServedModel as ServedModel
from reasonspan.serving.served import thinking_kwargs, warm_model
from reasonspan.serving.templates import (
    ChatTemplateError,
    template_problem,
)
from reasonspan.serving.wire_protocols import PROTOCOLS, Parsed, WireProtocol

log = logging.getLogger("reasonspan.serving")

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body accepted (413 beyond): a few MB of prompt."""

DEFAULT_WORKERS = 4
"""Requests prepared at once on worker threads (render, tokenize, compile)."""

DEFAULT_MAX_MODEL_LEN = 262_144
"""The longest prompt accepted, in tokens (400 ``context_length_exceeded`` beyond), and the
longest SIMULATED script: the longest native context of the families served (256k:
Qwen3-2507, Kimi K2). vLLM refuses a prompt past ``--max-model-len`` the same way. It
also bounds what a request costs the event loop per token (its ids as a Python list, made
and freed with the GIL held: about 0.1 µs a token, some 25 ms at this length)."""


@dataclass
class _Prepared:
    """A request ready to be admitted: the work done on the worker thread."""

    req: ChatCompletionRequest
    parser: ReasoningParser
    prompt_ids: list[int]
    model: ServedModel
    parsed: Parsed


class Server:
    """The app's state: models, runtime, engine. :attr:`app` is the ASGI application.

    ``max_body_bytes`` caps a request body (413 beyond); ``workers`` bounds the requests
    prepared at once on worker threads; ``max_model_len`` caps a prompt, and a SIMULATED
    script, in tokens (400 beyond). ``warm_up`` (default True): build here, before the
    server can serve, what each model's first request would otherwise build with the GIL
    held (:meth:`warm_up`: a few seconds a tokenizer, once per loaded tokenizer); off,
    the first request of each tokenizer stalls every other stream for a second or more."""

    def __init__(
        self,
        models: Sequence[ServedModel],
        engine: Engine | None = None,
        *,
        runtime: ReasoningRuntime | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        workers: int = DEFAULT_WORKERS,
        max_model_len: int = DEFAULT_MAX_MODEL_LEN,
        warm_up: bool = True,
    ) -> None:
        if not models:
            raise ValueError("a server needs at least one model")
        if max_body_bytes < 1 or workers < 1 or max_model_len < 1:
            raise ValueError("max_body_bytes, workers and max_model_len must be at least 1")
        self.models = {m.name: m for m in models}
        self.engine: Engine = engine if engine is not None else SimulatedServingEngine()
        self.runtime = (
            runtime
            if runtime is not None
            else ReasoningRuntime(model=models[0].name, time_steps=True)
        )
        self.metrics = Metrics([p.name for p in PROTOCOLS])
        self.state = "starting"
        """``starting`` until the engine loop runs, then ``serving``, then ``stopped``."""
        self.max_body_bytes = max_body_bytes
        self.workers = workers
        self.max_model_len = max_model_len
        self._limiter: anyio.CapacityLimiter | None = None
        self._template_ok: dict[str, str | None] = {}
        """Per model: why its template cannot render a minimal conversation (None: it can)."""
        ops = Ops(self)
        self.app = Starlette(
            routes=[
                *(
                    Route(p.path, self._endpoint(p), methods=["POST"], name=p.name)
                    for p in PROTOCOLS
                ),
                Route("/v1/models", self.list_models, methods=["GET"]),
                Route("/health", ops.health, methods=["GET"]),
                Route("/metrics", ops.metrics, methods=["GET"]),
                Route("/tokenize", ops.tokenize, methods=["POST"]),
                Route("/detokenize", ops.detokenize, methods=["POST"]),
            ],
            lifespan=self._lifespan,
            exception_handlers={HTTPException: http_error, Exception: unhandled},
        )
        if warm_up:
            self.warm_up()

    @asynccontextmanager
    async def _lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.engine.run, self.runtime)
            self.state = "serving"
            try:
                yield
            finally:
                self.state = "stopped"
                tg.cancel_scope.cancel()
        self.runtime.close()

    def warm_up(self) -> None:
        """Build, for every model, what its first request would build with the GIL held:
        llguidance's tokenizer (1.5-3.5 s for a 150k vocabulary, when llguidance is
        installed; one uninterrupted hold) and the runtime's per-tokenizer tables of the SSE
        path and of the family's tool calls (about 1.5 s, mostly Python loops, but built
        inside ``runtime.add`` on the event loop). Made with the server (``warm_up=True``),
        so before it listens; the tables are kept in the tokenizer's cache, so a tokenizer
        already warm costs nothing.

        A request whose ``reasoning_parser`` names another family still builds that
        family's tool-call tables on first use. A model whose parser or template fails here
        is left cold (its requests report the failure)."""
        for model in self.models.values():
            warm_model(model)

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The worker threads' bound (made on the event loop, on first use)."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.workers)
        return self._limiter

    # ------------------------------------------------------------------ routes

    async def list_models(self, _request: Request) -> Response:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "reasonspan"}
            for name in self.models
        ]
        return json_response({"object": "list", "data": data})

    def _endpoint(self, protocol: WireProtocol) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await self.serve(request, protocol)

        return endpoint

    async def serve(self, request: Request, protocol: WireProtocol) -> Response:
        """Every outcome is a response with the protocol's error body on failure; nothing
        escapes as a plain-text 500."""
        try:
            response = await self._serve(request, protocol)
        except RequestError as exc:
            response = Response(protocol.error_body(exc), exc.status, media_type="application/json")
        except Exception as exc:  # a bug: say so in the body, keep the traceback in the log
            log.exception("%s request failed", protocol.name)
            err = RequestError(
                f"internal server error: {type(exc).__name__}: {exc}",
                status=500,
                type="server_error",
            )
            response = Response(protocol.error_body(err), 500, media_type="application/json")
        self.metrics.finished(protocol.name, response.status_code)
        return response

    async def _serve(self, request: Request, protocol: WireProtocol) -> Response:
        arrived = time.perf_counter()
        body = await self.read_body(request)
        ready = await anyio.to_thread.run_sync(
            self._prepare_body, body, protocol, limiter=self.limiter
        )
        key = f"{protocol.key_prefix}{uuid.uuid4().hex}"
        # A streamed request rides the runtime's batch-wide output path, whatever its
        # protocol: Chat Completions' events are the runtime's own, the others' are written
        # by the protocol's writer at step time.
        writer = None
        if ready.req.stream:
            writer = protocol.writer(ready.parsed, key, len(ready.prompt_ids))
        stream = await self._admit(key, ready, sse=ready.req.stream, writer=writer)
        running = self.metrics.running
        running[protocol.name] += 1
        if ready.req.stream:
            parts = protocol.events(stream, writer)
            ttft = self.metrics.ttft[protocol.name]

            async def events() -> AsyncIterator[bytes]:
                first = True
                try:
                    async for event in parts:
                        if first and protocol.has_text(event):
                            first = False
                            ttft.observe(time.perf_counter() - arrived)
                        yield event
                finally:  # the stream ended, or its task was cancelled: free the slot now
                    running[protocol.name] -= 1
                    self.metrics.usage(stream.usage)
                    self.runtime.abort(key)

            return SSEResponse(events(), lambda: self.runtime.abort(key))
        try:
            completion = await collect_unless_gone(request, stream, lambda: self.runtime.abort(key))
        except RuntimeClosedError as exc:
            raise RequestError(str(exc), status=500, type="server_error") from None
        except (RequestFailedError, ReasonspanError) as exc:  # e.g. a grammar rejection
            raise RequestError(str(exc), status=500, type="server_error") from None
        finally:
            running[protocol.name] -= 1
            self.runtime.abort(key)
        self.metrics.usage(stream.usage)
        if completion is None:  # the client went away; nobody reads this
            return Response(status_code=499)
        answer = protocol.completion(completion, stream, ready.parsed, key)
        return Response(answer, media_type="application/json")

    async def _admit(
        self, key: str, ready: _Prepared, *, sse: bool, writer: EventWriter | None = None
    ) -> RequestStream:
        """Into the runtime, then to the engine: from the add on, a client that goes
        away aborts the request (a long ``simulated_output`` is tokenized after it, on a
        worker thread)."""
        req, parser, prompt_ids = ready.req, ready.parser, ready.prompt_ids
        try:
            stream = self.runtime.add(
                key,
                parser,
                prompt_ids,
                model=req.model,
                skip_special_tokens=req.skip_special_tokens,
                include_reasoning=req.include_reasoning,
                thinking_token_budget=req.thinking_token_budget,
                budget_lead_in=req.thinking_budget_lead_in,
                structured_output=req.structured_output,
                response_format=req.response_format,
                tools=req.tools,
                tool_choice=req.tool_choice,
                stop=req.stop,
                sse=sse,
                include_usage=req.include_usage,
                # A streamed answer sends a call's arguments as they are written, as
                # OpenAI does; a whole one reads each call once its markup closed.
                stream_arguments=req.stream,
                logprobs=req.logprobs_top,
                writer=writer,
            )
        except InvalidOptionError as exc:
            raise RequestError(str(exc), param=exc.key) from None
        except (GrammarError, GrammarUnavailableError) as exc:
            raise RequestError(str(exc), param="response_format") from None
        except RuntimeClosedError as exc:
            raise RequestError(str(exc), status=503, type="server_error") from None
        script = req.simulated_output_ids
        if req.simulated_output is not None:
            try:
                script = await anyio.to_thread.run_sync(  # a long one stalled the loop
                    partial(
                        tokenize,
                        ready.model.tokenizer,
                        req.simulated_output,
                        max_tokens=self.max_model_len,
                        param="simulated_output",
                    ),
                    limiter=self.limiter,
                )
            except BaseException:
                self.runtime.abort(key)
                raise
        self.engine.submit(
            EngineRequest(stream.engine_id, parser, prompt_ids, req, script_ids=script)
        )
        return stream

    async def read_body(self, request: Request) -> bytes:
        """The request body, refused (413) as soon as it is longer than the cap."""
        too_large = RequestError(
            f"the request body is larger than this server accepts ({self.max_body_bytes:,} "
            "bytes; see --max-body-bytes)",
            status=413,
            code="request_too_large",
        )
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body_bytes:
            raise too_large
        parts: list[bytes] = []
        size = 0
        async for part in request.stream():
            size += len(part)
            if size > self.max_body_bytes:
                raise too_large
            parts.append(part)
        return b"".join(parts)

    def _prepare_body(self, body: bytes, protocol: WireProtocol) -> _Prepared:
        """On a worker thread: everything about a request that does not touch the runtime
        (decode and validate, parser, prompt, grammar)."""
        parsed = protocol.parse(body)
        req = parsed.req
        model = self.model(req.model)
        parser, prompt_ids = self.prepare(req, model, thinking=parsed.thinking)
        if req.simulated_output_ids is not None:
            ids, limit = req.simulated_output_ids, self.max_model_len
            check_ids(ids, model.tokenizer, max_tokens=limit, param="simulated_output_ids")
        if req.response_format is not None and req.structured_output:
            try:  # compiled here; the runtime's add() then takes a copy
                prepare_grammar(req.response_format, model.tokenizer)
            except InvalidOptionError as exc:
                raise RequestError(str(exc), param=exc.key) from None
            except (GrammarError, GrammarUnavailableError) as exc:
                raise RequestError(str(exc), param="response_format") from None
        return _Prepared(req, parser, prompt_ids, model, parsed)

    def model(self, name: str) -> ServedModel:
        """The served model of that name, or a 404 naming the ones served."""
        model = self.models.get(name)
        if model is None:
            raise RequestError(
                f"the model {name!r} does not exist; served models: {', '.join(self.models)}",
                param="model",
                status=404,
                code="model_not_found",
            )
        return model

    def prepare(
        self, req: ChatCompletionRequest, model: ServedModel, *, thinking: bool | None = None
    ) -> tuple[ReasoningParser, list[int]]:
        """The request's parser (with its thinking switches) and rendered prompt ids (slow:
        the server calls it on a worker thread). ``thinking``: a protocol's own on/off
        (Anthropic's ``thinking``, Responses' effort ``"none"``), the family's switch set
        over the model's defaults and under the request's ``chat_template_kwargs``."""
        name = req.reasoning_parser or model.parser
        defaults = model.chat_template_kwargs
        if thinking is not None:
            try:
                defaults = {**defaults, **thinking_kwargs(get_parser_class(name), thinking)}
            except UnknownParserError as exc:
                raise RequestError(str(exc), param="reasoning_parser") from None
        kwargs = req.template_kwargs(defaults)
        try:
            parser = build_parser_sync(name, model.tokenizer, kwargs)
        except UnknownParserError as exc:
            raise RequestError(str(exc), param="reasoning_parser") from None
        except InvalidOptionError as exc:
            raise RequestError(str(exc), param=f"chat_template_kwargs.{exc.key}") from None
        except ReasonspanError as exc:  # e.g. a marker missing from this tokenizer
            raise RequestError(str(exc), param="reasoning_parser") from None
        try:
            prompt_ids = render_prompt_ids(
                model.tokenizer,
                [m.for_template() for m in req.messages],
                max_tokens=self.max_model_len,
                tools=req.tools,
                chat_template=model.chat_template,
                chat_template_kwargs=kwargs,
                fallback=model.fallback,
                template_name=f"model {model.name!r}",
            )
        except ChatTemplateError as exc:
            raise self._template_failure(exc, model, kwargs) from None
        return parser, prompt_ids

    def _template_failure(
        self, exc: ChatTemplateError, model: ServedModel, kwargs: dict[str, Any]
    ) -> RequestError:
        """Whose fault a failed rendering is. The server's (500) when its template cannot
        render a minimal conversation with the model's own defaults either; the client's
        ``chat_template_kwargs`` when they alone break that; else the client's
        ``messages`` / ``tools`` (400): the template rejects this conversation."""
        if model.name not in self._template_ok:
            self._template_ok[model.name] = self._template_problem(
                model, model.chat_template_kwargs
            )
        broken = self._template_ok[model.name]
        if broken is not None:
            log.error("the chat template of model %r is broken: %s", model.name, broken)
            return RequestError(
                f"the server's chat template for model {model.name!r} is broken "
                f"(it cannot render a one-message conversation): {broken}",
                status=500,
                type="server_error",
            )
        if kwargs != model.chat_template_kwargs and self._template_problem(model, kwargs):
            return RequestError(str(exc), param="chat_template_kwargs")
        return RequestError(str(exc), param="messages")

    @staticmethod
    def _template_problem(model: ServedModel, kwargs: dict[str, Any]) -> str | None:
        return template_problem(
            model.tokenizer,
            chat_template=model.chat_template,
            chat_template_kwargs=kwargs,
            fallback=model.fallback,
            template_name=f"model {model.name!r}",
        )


def create_app(
    models: Sequence[ServedModel],
    engine: Engine | None = None,
    *,
    runtime: ReasoningRuntime | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    workers: int = DEFAULT_WORKERS,
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
    warm_up: bool = True,
) -> Starlette:
    """The reference server as an ASGI app (run it with uvicorn, or any ASGI server)."""
    return Server(
        models,
        engine,
        runtime=runtime,
        max_body_bytes=max_body_bytes,
        workers=workers,
        max_model_len=max_model_len,
        warm_up=warm_up,
    ).app

"""The reference OpenAI-compatible server: starlette + uvicorn (the ``server`` extra).

``/v1/chat/completions`` (streaming and not) and ``/v1/models`` over a
:class:`~reasonspan.runtime.streams.ReasoningRuntime` and an engine (the simulated one by
default; see ``examples/own_engine.py`` for one's own). Per request: read the body (at most
``max_body_bytes``, else 413), then on a worker thread (``anyio.to_thread``, at most
``workers`` at once) validate it (:mod:`.protocol`), create the parser with the request's
switches, render the prompt with the model's own chat template (:mod:`.templates`),
tokenize it and compile its ``response_format`` grammar; back on the event loop, admit it
into the runtime (the grammar is a copy of that compile by then), hand it to the engine,
then answer with SSE (:mod:`.sse`) or the collected ``chat.completion``. So a huge prompt,
a slow template or a large grammar holds up its own request, never the event loop that
streams everyone else's chunks. A client that disconnects aborts its request at once (slot
freed, engine told), streaming or not.

Every failure is an OpenAI error body: 4xx naming the field when the request is at fault,
500 (``server_error``) when the server is (its chat template cannot render even a minimal
conversation, the engine failed, a bug), 503 once the runtime is closed. The server keeps
serving.

starlette and uvicorn are imported here only, so ``import reasonspan`` never pulls in an
ASGI stack.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive

from ..runtime.batch_errors import RequestFailedError
from ..runtime.errors import InvalidOptionError, ReasonspanError, UnknownParserError
from ..runtime.grammar import GrammarError, GrammarUnavailableError, prepare_grammar
from ..runtime.openai import ChatCompletion, encode
from ..runtime.parser import ReasoningParser
from ..runtime.registry import create_parser_sync
from ..runtime.streams import (
    ReasoningRuntime,
    RequestCancelledError,
    RequestStream,
    RuntimeClosedError,
)
from ..tokenizer import LoadedTokenizer
from .engine import Engine, EngineRequest, SimulatedServingEngine
from .protocol import ChatCompletionRequest, RequestError, parse_request
from .templates import ChatTemplateError, Fallback, render_prompt_ids, template_problem

log = logging.getLogger("reasonspan.serving")

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body accepted (413 beyond): a few MB of prompt."""

DEFAULT_WORKERS = 4
"""Requests prepared at once on worker threads (render, tokenize, compile)."""


@dataclass
class ServedModel:
    """One model the server answers for: its tokenizer, its reasoning parser (family
    name), and how its prompts are rendered."""

    name: str
    tokenizer: LoadedTokenizer
    parser: str
    chat_template: str | None = None
    """Overrides the folder's own template (None: the folder's)."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Defaults under the request's own ``chat_template_kwargs``."""
    fallback: Fallback = None
    """``"chatml"``: render plain ChatML when the folder has no template (opt-in)."""


@dataclass
class _Prepared:
    """A request ready to be admitted: the work done on the worker thread."""

    req: ChatCompletionRequest
    parser: ReasoningParser
    prompt_ids: list[int]


class Server:
    """The app's state: models, runtime, engine. :attr:`app` is the ASGI application.

    ``max_body_bytes`` caps a request body (413 beyond); ``workers`` bounds the requests
    prepared at once on worker threads."""

    def __init__(
        self,
        models: Sequence[ServedModel],
        engine: Engine | None = None,
        *,
        runtime: ReasoningRuntime | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        if not models:
            raise ValueError("a server needs at least one model")
        if max_body_bytes < 1 or workers < 1:
            raise ValueError("max_body_bytes and workers must be at least 1")
        self.models = {m.name: m for m in models}
        self.engine: Engine = engine if engine is not None else SimulatedServingEngine()
        self.runtime = runtime if runtime is not None else ReasoningRuntime(model=models[0].name)
        self.max_body_bytes = max_body_bytes
        self.workers = workers
        self._limiter: anyio.CapacityLimiter | None = None
        self._template_ok: dict[str, str | None] = {}
        """Per model: why its template cannot render a minimal conversation (None: it can)."""
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
                Route("/v1/models", self.list_models, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.engine.run, self.runtime)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
        self.runtime.close()

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
        return _json({"object": "list", "data": data})

    async def chat_completions(self, request: Request) -> Response:
        """Every outcome is a response with an OpenAI error body on failure; nothing
        escapes as a plain-text 500."""
        try:
            return await self._chat_completions(request)
        except RequestError as exc:
            return _error(exc)
        except Exception as exc:  # a bug: say so in the body, keep the traceback in the log
            log.exception("chat completion failed")
            return _error(
                RequestError(
                    f"internal server error: {type(exc).__name__}: {exc}",
                    status=500,
                    type="server_error",
                )
            )

    async def _chat_completions(self, request: Request) -> Response:
        body = await self._read_body(request)
        ready = await anyio.to_thread.run_sync(self._prepare_body, body, limiter=self.limiter)
        req, parser, prompt_ids = ready.req, ready.parser, ready.prompt_ids
        key = f"chatcmpl-{uuid.uuid4().hex}"
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
                sse=req.stream,
                include_usage=req.include_usage,
            )
        except InvalidOptionError as exc:
            raise RequestError(str(exc), param=exc.key) from None
        except (GrammarError, GrammarUnavailableError) as exc:
            raise RequestError(str(exc), param="response_format") from None
        except RuntimeClosedError as exc:
            raise RequestError(str(exc), status=503, type="server_error") from None
        self.engine.submit(EngineRequest(stream.engine_id, parser, prompt_ids, req))
        if req.stream:

            async def events() -> AsyncIterator[bytes]:
                try:
                    async for event in stream.sse_events():
                        yield event
                finally:  # the stream ended, or its task was cancelled: free the slot now
                    self.runtime.abort(key)

            return _SSEResponse(events(), lambda: self.runtime.abort(key))
        try:
            completion = await _collect_unless_gone(
                request, stream, lambda: self.runtime.abort(key)
            )
        except RuntimeClosedError as exc:
            raise RequestError(str(exc), status=500, type="server_error") from None
        except (RequestFailedError, ReasonspanError) as exc:  # e.g. a grammar rejection
            raise RequestError(str(exc), status=500, type="server_error") from None
        finally:
            self.runtime.abort(key)
        if completion is None:  # the client went away; nobody reads this
            return Response(status_code=499)
        return Response(encode(completion), media_type="application/json")

    async def _read_body(self, request: Request) -> bytes:
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

    def _prepare_body(self, body: bytes) -> _Prepared:
        """On a worker thread: everything about a request that does not touch the runtime
        (decode and validate, parser, prompt, grammar)."""
        req = parse_request(body)
        model = self.models.get(req.model)
        if model is None:
            raise RequestError(
                f"the model {req.model!r} does not exist; served models: {', '.join(self.models)}",
                param="model",
                status=404,
                code="model_not_found",
            )
        parser, prompt_ids = self.prepare(req, model)
        ids = req.simulated_output_ids
        vocab = model.tokenizer.vocab_size
        if ids is not None and any(t >= vocab for t in ids):
            bad = next(t for t in ids if t >= vocab)
            raise RequestError(
                f"simulated_output_ids holds token id {bad}, outside the vocabulary of "
                f"{req.model!r} (ids 0..{vocab - 1})",
                param="simulated_output_ids",
            )
        if req.response_format is not None and req.structured_output:
            try:  # compiled here; the runtime's add() then takes a copy
                prepare_grammar(req.response_format, model.tokenizer)
            except InvalidOptionError as exc:
                raise RequestError(str(exc), param=exc.key) from None
            except (GrammarError, GrammarUnavailableError) as exc:
                raise RequestError(str(exc), param="response_format") from None
        return _Prepared(req, parser, prompt_ids)

    def prepare(
        self, req: ChatCompletionRequest, model: ServedModel
    ) -> tuple[ReasoningParser, list[int]]:
        """The request's parser (with its thinking switches) and rendered prompt ids (slow:
        the server calls it on a worker thread)."""
        kwargs = req.template_kwargs(model.chat_template_kwargs)
        name = req.reasoning_parser or model.parser
        try:
            parser = create_parser_sync(name, model.tokenizer, kwargs)
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
) -> Starlette:
    """The reference server as an ASGI app (run it with uvicorn, or any ASGI server)."""
    return Server(
        models, engine, runtime=runtime, max_body_bytes=max_body_bytes, workers=workers
    ).app


class _SSEResponse(StreamingResponse):
    """SSE with the request aborted the moment the client disconnects.

    The abort is called directly rather than left to cancelling the streaming task: a
    stream whose chunks are always ready never suspends, so a cancellation would only land
    once the engine had generated everything."""

    def __init__(self, content: AsyncIterator[bytes], on_disconnect: Callable[[], object]):
        super().__init__(content, media_type="text/event-stream")
        self._on_disconnect = on_disconnect

    async def listen_for_disconnect(self, receive: Receive) -> None:
        await super().listen_for_disconnect(receive)
        self._on_disconnect()


async def _collect_unless_gone(
    request: Request, stream: RequestStream, abort: Callable[[], object]
) -> ChatCompletion | None:
    """``stream.collect()``, or None when the client disconnects first (then the request
    is aborted at once). The collect's own error is raised as it is, outside the task
    group, so callers never see it wrapped in an ``ExceptionGroup``."""
    gone = False
    result: ChatCompletion | None = None
    error: Exception | None = None
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            nonlocal gone
            while (await request.receive())["type"] != "http.disconnect":
                pass
            gone = True
            abort()

        tg.start_soon(watch)
        try:
            result = await stream.collect()
        except RequestCancelledError as exc:
            if not gone:
                error = exc
        except Exception as exc:
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error
    return result


def _json(obj: Any) -> Response:
    import msgspec

    return Response(msgspec.json.encode(obj), media_type="application/json")


def _error(err: RequestError) -> Response:
    return Response(err.body(), err.status, media_type="application/json")

"""The reference OpenAI-compatible server: starlette + uvicorn (the ``server`` extra).

``/v1/chat/completions`` (streaming and not) and ``/v1/models`` over a
:class:`~reasonspan.runtime.streams.ReasoningRuntime` and an engine (the simulated one by
default; see ``examples/own_engine.py`` for one's own). Per request: validate
(:mod:`.protocol`), render the prompt with the model's own chat template
(:mod:`.templates`), create the parser with the request's switches, admit it into the
runtime, hand it to the engine, then answer with SSE (:mod:`.sse`) or the collected
``chat.completion``. A client that disconnects aborts its request at once (slot freed,
engine told), streaming or not. Any bad request gets an OpenAI error body naming the
field, and the server keeps serving.

starlette and uvicorn are imported here only, so ``import reasonspan`` never pulls in an
ASGI stack.
"""

from __future__ import annotations

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

from ..runtime.errors import InvalidOptionError, ReasonspanError, UnknownParserError
from ..runtime.grammar import GrammarError, GrammarUnavailableError
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
from .sse import sse_stream
from .templates import ChatTemplateError, Fallback, render_prompt_ids


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


class Server:
    """The app's state: models, runtime, engine. :attr:`app` is the ASGI application."""

    def __init__(
        self,
        models: Sequence[ServedModel],
        engine: Engine | None = None,
        *,
        runtime: ReasoningRuntime | None = None,
    ) -> None:
        if not models:
            raise ValueError("a server needs at least one model")
        self.models = {m.name: m for m in models}
        self.engine: Engine = engine if engine is not None else SimulatedServingEngine()
        self.runtime = runtime if runtime is not None else ReasoningRuntime(model=models[0].name)
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

    # ------------------------------------------------------------------ routes

    async def list_models(self, _request: Request) -> Response:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "reasonspan"}
            for name in self.models
        ]
        return _json({"object": "list", "data": data})

    async def chat_completions(self, request: Request) -> Response:
        try:
            req = parse_request(await request.body())
            model = self.models.get(req.model)
            if model is None:
                raise RequestError(
                    f"the model {req.model!r} does not exist; served models: "
                    f"{', '.join(self.models)}",
                    param="model",
                    status=404,
                    code="model_not_found",
                )
            parser, prompt_ids = self.prepare(req, model)
            key = f"chatcmpl-{uuid.uuid4().hex}"
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
            )
        except RequestError as exc:
            return Response(exc.body(), exc.status, media_type="application/json")
        except InvalidOptionError as exc:
            return _error(RequestError(str(exc), param=exc.key))
        except (GrammarError, GrammarUnavailableError) as exc:
            return _error(RequestError(str(exc), param="response_format"))
        except RuntimeClosedError as exc:
            return _error(RequestError(str(exc), status=503, type="server_error"))
        self.engine.submit(EngineRequest(stream.engine_id, parser, prompt_ids, req))
        if req.stream:

            async def body() -> AsyncIterator[bytes]:
                try:
                    async for event in sse_stream(stream, include_usage=req.include_usage):
                        yield event
                finally:  # the stream ended, or its task was cancelled: free the slot now
                    self.runtime.abort(key)

            return _SSEResponse(body(), lambda: self.runtime.abort(key))
        try:
            completion = await _collect_unless_gone(
                request, stream, lambda: self.runtime.abort(key)
            )
        except ReasonspanError as exc:
            return _error(RequestError(str(exc), status=500, type="server_error"))
        finally:
            self.runtime.abort(key)
        if completion is None:  # the client went away; nobody reads this
            return Response(status_code=499)
        return Response(encode(completion), media_type="application/json")

    def prepare(
        self, req: ChatCompletionRequest, model: ServedModel
    ) -> tuple[ReasoningParser, list[int]]:
        """The request's parser (with its thinking switches) and rendered prompt ids."""
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
            )
        except ChatTemplateError as exc:
            raise RequestError(str(exc), param="messages") from None
        return parser, prompt_ids


def create_app(
    models: Sequence[ServedModel],
    engine: Engine | None = None,
    *,
    runtime: ReasoningRuntime | None = None,
) -> Starlette:
    """The reference server as an ASGI app (run it with uvicorn, or any ASGI server)."""
    return Server(models, engine, runtime=runtime).app


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
    is aborted at once)."""
    gone = False
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
        except RequestCancelledError:
            if not gone:
                raise
            return None
        finally:
            tg.cancel_scope.cancel()
    return result


def _json(obj: Any) -> Response:
    import msgspec

    return Response(msgspec.json.encode(obj), media_type="application/json")


def _error(err: RequestError) -> Response:
    return Response(err.body(), err.status, media_type="application/json")

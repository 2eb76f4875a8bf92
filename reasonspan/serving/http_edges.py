"""The HTTP edges of the server's routes: SSE that aborts its request when the client goes
away, a collect that does the same, and starlette's own errors (unknown path, wrong
method, an unhandled exception) in the protocol's JSON error shape instead of plain text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive

from reasonspan.runtime.stream.runtime import RequestCancelledError, RequestStream
from reasonspan.runtime.wire.openai import ChatCompletion
from reasonspan.serving.protocol import RequestError
from reasonspan.serving.wire_protocols import PROTOCOLS


class SSEResponse(StreamingResponse):
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


async def collect_unless_gone(
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


def json_response(obj: Any) -> Response:
    import msgspec

    return Response(msgspec.json.encode(obj), media_type="application/json")


def error_response(err: RequestError, headers: Mapping[str, str] | None = None) -> Response:
    """An OpenAI-shaped error body with the error's status."""
    return Response(err.body(), err.status, headers=headers, media_type="application/json")


ENDPOINTS = ", ".join(
    [
        *(f"POST {p.path}" for p in PROTOCOLS),
        "GET /v1/models",
        "GET /health",
        "GET /metrics",
        "POST /tokenize",
        "POST /detokenize",
    ]
)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own HTTP errors (no route for the path, a method the route does not
    take) as OpenAI error bodies; its default answers them in plain text."""
    assert isinstance(exc, HTTPException)
    where = f"{request.method} {request.url.path}"
    if exc.status_code == 404:
        err = RequestError(
            f"Invalid URL ({where}): this server answers {ENDPOINTS}", status=404, code="not_found"
        )
    elif exc.status_code == 405:
        allowed = {k.lower(): v for k, v in (exc.headers or {}).items()}.get("allow", "")
        err = RequestError(
            f"Method not allowed ({where}): this path takes {allowed}",
            status=405,
            code="method_not_allowed",
        )
    else:
        err = RequestError(f"{exc.detail} ({where})", status=exc.status_code)
    protocol = next((p for p in PROTOCOLS if p.path == request.url.path), PROTOCOLS[0])
    body = protocol.error_body(err)
    return Response(body, err.status, headers=exc.headers, media_type="application/json")


async def unhandled(_request: Request, exc: Exception) -> Response:
    """An exception no route caught (Starlette's last resort, which logs it too)."""
    return error_response(
        RequestError(
            f"internal server error: {type(exc).__name__}", status=500, type="server_error"
        )
    )

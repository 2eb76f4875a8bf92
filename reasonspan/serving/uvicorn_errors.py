"""uvicorn's own answers in the OpenAI error shape: pass ``http=JSONErrorsProtocol`` to
``uvicorn.Config`` (``reasonspan serve`` does).

Some answers never reach the app, so no Starlette handler can shape them. uvicorn writes
them itself, in plain text:

- a request it cannot parse (bad request line, bad header, broken chunked framing, a
  header block over ``h11_max_incomplete_event_size``): 400 "Invalid HTTP request
  received." (``H11Protocol.send_400_response``);
- a request over ``limit_concurrency`` (connections or requests in flight): 503 "Service
  Unavailable" (``flow_control.service_unavailable``, picked inside ``handle_events``).

:class:`JSONErrorsProtocol` is uvicorn's h11 protocol with those two answers as OpenAI
error bodies, the same status, and ``connection: close`` as before; the limit is checked
exactly as uvicorn checks it (the same counts at the same moment), in a wrapper around the
app instead of inside ``handle_events``. Everything else is uvicorn's.

What remains plain text: uvicorn's 500 when an ASGI app raises before it starts a response
or returns without one (``RequestResponseCycle.send_500_response``). The reference app
never does (Starlette's error middleware answers every exception with an OpenAI body
first); another app behind this protocol might. With ``http="httptools"`` (or ``"auto"``
with httptools installed) none of this applies: that protocol has its own plain-text
answers, and this module does not wrap it.
"""

from __future__ import annotations

from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from reasonspan.serving.protocol import RequestError

__all__ = ["JSONErrorsProtocol", "error_response_bytes"]

_MALFORMED = RequestError(
    "Invalid HTTP request received: the request line, a header or the body's framing "
    "could not be parsed (HTTP/1.1)",
    code="invalid_http_request",
)
_BUSY = RequestError(
    "the server is at its concurrency limit (--limit-concurrency); retry later",
    status=503,
    type="server_error",
    code="server_busy",
)


def error_response_bytes(err: RequestError) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Headers and body of an error answered outside the app (the connection then closes)."""
    body = err.body()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close"),
    ]
    return headers, body


class JSONErrorsProtocol(H11Protocol):
    """uvicorn's h11 protocol, answering malformed requests (400) and requests over its
    concurrency limit (503) with OpenAI error bodies instead of plain text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = self.limit_concurrency
        if limit is None:
            return
        # uvicorn picks its plain-text 503 when this is set; the wrapper below decides.
        self.limit_concurrency = None
        app = self.app

        async def limited(scope: Any, receive: Any, send: Any) -> None:
            # uvicorn checks before it adds the request's task to ``tasks``; here it is in.
            if len(self.connections) >= limit or len(self.tasks) - 1 >= limit:
                self.logger.warning("Exceeded concurrency limit.")
                headers, body = error_response_bytes(_BUSY)
                await send({"type": "http.response.start", "status": 503, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            await app(scope, receive, send)

        self.app = limited

    def send_400_response(self, msg: str) -> None:
        headers, body = error_response_bytes(_MALFORMED)
        try:
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:  # a response was already under way: just close
            pass
        self.transport.close()
        self.response_started = False
        self.response_complete = False

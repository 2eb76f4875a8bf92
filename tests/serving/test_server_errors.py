"""Every error the reference server sends is OpenAI's JSON error shape.

Over real HTTP on loopback, uvicorn running the app with
:class:`~reasonspan.serving.uvicorn_errors.JSONErrorsProtocol` (as ``reasonspan serve``
does): an unknown path (404) or method (405), an exception no route caught (500), a body
over the cap (413), and what uvicorn answers before the app sees a request: malformed
HTTP (400) and a request over ``limit_concurrency`` (503). Each body is
``{"error": {"message", "type", "param", "code"}}`` with ``application/json``; the
official openai client reads the 404 as its ``NotFoundError`` with that body.

What stays plain text (documented in ``uvicorn_errors``): uvicorn's own 500 when an app
fails before it starts a response, which this app never does (Starlette's handler answers
first), and everything uvicorn's httptools protocol answers, which the server does not use.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from reasonspan.bench.stalls import Live
from reasonspan.serving.app import ServedModel, Server
from reasonspan.serving.engine import SimulatedServingEngine
from tests.support.fixtures import tokenizer


class BrokenModels(Server):
    """``/v1/models`` raises: a bug no route catches."""

    async def list_models(self, _request: Any) -> Any:
        raise RuntimeError("boom")


def make_server(cls: type[Server] = Server) -> Server:
    return cls(
        [ServedModel("qwen3", tokenizer("qwen-3"), "qwen3")],
        SimulatedServingEngine(),
        max_body_bytes=10_000,
        warm_up=False,
    )


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with Live(make_server().app).running() as running:
        yield running


def assert_openai_error(r: httpx.Response, status: int) -> dict[str, Any]:
    """The response is ``status`` with an OpenAI error body; returns its ``error``."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert list(body) == ["error"]
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert err["type"] in ("invalid_request_error", "server_error")
    return dict(err)


def raw(live: Live, data: bytes) -> httpx.Response:
    """Send ``data`` as it is on a new connection; the answer parsed by httpx's reader."""
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            try:
                part = sock.recv(65536)
            except ConnectionResetError:
                break
            if not part:
                break
            chunks.append(part)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = [(k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in lines[1:])]
    return httpx.Response(status, headers=headers, content=body)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/"), ("GET", "/v1/nope"), ("POST", "/v1/completions"), ("GET", "/v1/models/x")],
)
def test_unknown_path_is_a_json_404(live: Live, method: str, path: str) -> None:
    r = httpx.request(method, f"http://127.0.0.1:{live.port}{path}")
    err = assert_openai_error(r, 404)
    assert err["code"] == "not_found" and err["type"] == "invalid_request_error"
    assert f"{method} {path}" in err["message"] and "/v1/chat/completions" in err["message"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/v1/chat/completions", "POST"),
        ("PUT", "/v1/chat/completions", "POST"),
        ("DELETE", "/v1/models", "GET"),
        ("POST", "/v1/models", "GET"),
    ],
)
def test_unknown_method_is_a_json_405(live: Live, method: str, path: str, allowed: str) -> None:
    r = httpx.request(method, f"{live.url.removesuffix('/v1')}{path}")
    err = assert_openai_error(r, 405)
    assert err["code"] == "method_not_allowed"
    assert allowed in r.headers["allow"] and allowed in err["message"]


def test_the_openai_client_reads_a_404_as_its_error(live: Live) -> None:
    client = openai.OpenAI(base_url=live.url, api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        client.models.retrieve("qwen3")  # GET /v1/models/qwen3: no such route here
    assert isinstance(info.value.body, dict) and info.value.body["code"] == "not_found"


def test_a_body_over_the_cap_is_a_json_413(live: Live) -> None:
    r = httpx.post(f"{live.url}/chat/completions", content=b"x" * 20_000)
    assert assert_openai_error(r, 413)["code"] == "request_too_large"


def test_an_uncaught_exception_is_a_json_500() -> None:
    with Live(make_server(BrokenModels).app).running() as running:
        r = httpx.get(f"{running.url}/models")
        err = assert_openai_error(r, 500)
        assert err["type"] == "server_error" and "RuntimeError" in err["message"]
        assert "boom" not in err["message"]  # the detail stays in the server's log


MALFORMED = {
    "garbage request line": b"GARBAGE\r\n\r\n",
    "header without a colon": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
    "bad content-length": b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: ten\r\n\r\n",
    "two content-lengths": b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    "bad chunk size": b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    # h11 refuses a header block still unfinished past 16 KB (a finished one is parsed).
    "header block over h11's limit": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: "
    + b"a" * 100_000,
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_http_is_a_json_400(live: Live, case: str) -> None:
    r = raw(live, MALFORMED[case])
    err = assert_openai_error(r, 400)
    assert err["code"] == "invalid_http_request"
    assert r.headers["connection"] == "close"


def test_the_server_still_serves_after_malformed_requests(live: Live) -> None:
    for data in MALFORMED.values():
        raw(live, data)
    r = httpx.get(f"{live.url}/models")
    assert r.status_code == 200 and r.json()["data"][0]["id"] == "qwen3"


def test_a_request_over_the_concurrency_limit_is_a_json_503() -> None:
    """uvicorn's limit counts connections and requests in flight; past it, its answer is
    still uvicorn's decision (same counts), in the OpenAI shape."""
    with Live(make_server().app, {"limit_concurrency": 2}).running() as running:
        idle = [socket.create_connection(("127.0.0.1", running.port)) for _ in range(2)]
        try:
            time.sleep(0.2)  # the server has accepted them
            r = httpx.get(f"{running.url}/models")
            err = assert_openai_error(r, 503)
            assert err["type"] == "server_error" and err["code"] == "server_busy"
            assert r.headers["connection"] == "close"
        finally:
            for s in idle:
                s.close()
        deadline = time.monotonic() + 10
        while True:  # once they are gone, requests are served again
            r = httpx.get(f"{running.url}/models")
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert r.status_code == 200

"""``python -m reasonspan.bench.stalls``: how long the reference server's event loop stalls
while it handles a big or first-of-its-kind request beside a stream in progress.

A stall is time the event loop cannot run: every stream in flight gets no chunk for that
long. The server runs in-process (uvicorn on loopback, the SIMULATED engine stepping every
10 ms); one client streams a long answer from one model while another sends the case's
request, and two clocks are read:

- **loop lag**: a task on the server's loop sleeps 10 ms at a time; the lag is how much
  later than asked it woke (the loop's own measure, independent of the client);
- **chunk gap**: the longest time between two chunks of the stream in progress, as its
  client (the openai package's, or httpx) receives them.

Both are the maximum over the case (from its request until 0.3 s after its answer). The
cases are what a probe of the server found stalling (a 6 MB prompt, the first
``response_format`` request, a 3 MB ``simulated_output``) and the first request of a
second model. The second model is a second load of the same tokenizer file, so its caches
start cold, as a freshly started server's do.

Nothing here asserts a time (the test ``tests/serving/test_server_stalls.py`` asserts a generous
bound); the figures are for BENCHMARKS.md. ``--quick`` leaves out the prompts of 4 MB and
more (tokenizing them takes tens of seconds of one core).
"""

from __future__ import annotations

import argparse
import itertools
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from reasonspan.bench.common import machine_line
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.serving.engine import SimulatedServingEngine
from reasonspan.tokenizer import LoadedTokenizer, load_tokenizer_sync
from reasonspan.transcripts import long_reasoning

TICK = 0.01
"""Seconds the loop-lag task sleeps at a time (also the engine's step interval)."""


class LagEngine(SimulatedServingEngine):
    """The SIMULATED engine, plus a task on the server's event loop that measures how late
    it wakes from each sleep of :data:`TICK` seconds (``lags``: (woke at, lag) pairs)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lags: list[tuple[float, float]] = []

    async def run(self, runtime: ReasoningRuntime) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._tick)
            await super().run(runtime)
            tg.cancel_scope.cancel()

    async def _tick(self) -> None:
        while True:
            start = time.perf_counter()
            await anyio.sleep(TICK)
            woke = time.perf_counter()
            self.lags.append((woke, woke - start - TICK))

    def max_lag(self, since: float) -> float:
        """The longest lag of a sleep that ended at ``since`` or later (seconds)."""
        return max((lag for woke, lag in list(self.lags) if woke >= since), default=0.0)


@dataclass
class Live:
    """A uvicorn server on a thread, bound to a free loopback port, answering its own
    errors as JSON (:class:`~reasonspan.serving.uvicorn_errors.JSONErrorsProtocol`);
    ``options``: more ``uvicorn.Config`` arguments."""

    app: Any
    options: dict[str, Any] = field(default_factory=dict)
    port: int = 0

    @contextmanager
    def running(self) -> Iterator[Live]:
        import uvicorn

        from reasonspan.serving.uvicorn_errors import JSONErrorsProtocol

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", http=JSONErrorsProtocol, **self.options
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 120  # startup builds every model's tables
            while not server.started:
                if time.monotonic() > deadline or not thread.is_alive():
                    raise RuntimeError("the server did not start")
                time.sleep(0.01)
            yield self
        finally:
            server.should_exit = True
            thread.join(30)
            sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class Victim:
    """A long streaming request in progress on a thread, its chunks' arrival times kept."""

    def __init__(self, url: str, model: str) -> None:
        self.times: list[float] = []
        self._stop = threading.Event()
        self._body = {
            "model": model,
            "messages": [{"role": "user", "content": "Think it over."}],
            "stream": True,
            "simulated_output": "<think>\n" + "step " * 50_000 + "</think>\n\nDone.",
        }
        self._url = url
        self._thread = threading.Thread(target=self._read, daemon=True)
        self.error: BaseException | None = None

    def _read(self) -> None:
        import httpx

        try:
            url = f"{self._url}/chat/completions"
            # A long read timeout: a stall is what is measured, not a reason to give up.
            with httpx.stream("POST", url, json=self._body, timeout=600) as r:
                for line in r.iter_lines():
                    if line:
                        self.times.append(time.perf_counter())
                    if self._stop.is_set():
                        return
        except BaseException as exc:  # kept for the caller to report
            self.error = exc

    def __enter__(self) -> Victim:
        self._thread.start()
        deadline = time.monotonic() + 60
        while len(self.times) < 10:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the stream in progress did not start ({self.error!r})")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def max_gap(self, since: float) -> float:
        """The longest time between two chunks, the later one at ``since`` or after."""
        t = list(self.times)
        return max((b - a for a, b in itertools.pairwise(t) if b >= since), default=0.0)

    @property
    def streaming(self) -> bool:
        return self._thread.is_alive()


class Stall(msgspec.Struct):
    """One case: the request's status and time, the loop's and the stream's worst gap."""

    case: str
    status: int
    seconds: float
    loop_lag_ms: float
    chunk_gap_ms: float
    note: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    body: Callable[[], dict[str, Any]]
    quick: bool = True


def _text(n_bytes: int) -> str:
    """English reasoning prose, ``n_bytes`` long (about 2.8 bytes a token in Qwen3's)."""
    base = long_reasoning() + "\n"
    return (base * (n_bytes // len(base) + 1))[:n_bytes]


def _chat(model: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}], **extra}


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def cases(cold: str) -> list[Case]:
    """The cases, in order (the first two depend on it: they are ``cold``'s first)."""
    mb = 1024 * 1024
    return [
        Case(
            "first request of a second model (streamed, tools offered)",
            lambda: _chat(cold, "Hello.", stream=True, tools=[WEATHER], max_tokens=16),
        ),
        Case(
            "first response_format request of that model",
            lambda: _chat(cold, "Hi.", response_format={"type": "json_object"}, max_tokens=8),
        ),
        Case(
            "prompt of 700 KB (~250k tokens, just under max_model_len)",
            lambda: _chat(cold, _text(700 * 1024), max_tokens=4),
        ),
        Case(
            "simulated_output of 700 KB (~250k tokens, accepted, max_tokens 16)",
            lambda: _chat(cold, "Hi.", simulated_output=_text(700 * 1024), max_tokens=16),
        ),
        Case(
            "simulated_output of 3 MB (over max_model_len: refused)",
            lambda: _chat(cold, "Hi.", simulated_output=_text(3 * mb), max_tokens=16),
        ),
        Case(
            "prompt of 6 MB (over max_model_len: refused)",
            lambda: _chat(cold, _text(6 * mb), max_tokens=4),
            quick=False,
        ),
        Case(
            "prompt of 12 MB (over max_model_len: refused)",
            lambda: _chat(cold, _text(12 * mb), max_tokens=4),
            quick=False,
        ),
    ]


def run_stalls(tok: LoadedTokenizer, *, quick: bool = False) -> list[Stall]:
    """Every case against one server (two models: ``tok``'s, and a cold second load)."""
    import httpx

    from reasonspan.serving.app import ServedModel, Server

    cold_tok = load_tokenizer_sync(tok.source)
    models = [
        ServedModel("warm", tok, "qwen3", fallback="chatml"),
        ServedModel("cold", cold_tok, "qwen3", fallback="chatml"),
    ]
    engine = LagEngine(step_interval=TICK)
    # The body cap is raised so that the prompts reach max_model_len, the limit under test.
    server = Server(models, engine, max_body_bytes=64 * 1024 * 1024)
    rows: list[Stall] = []
    with Live(server.app).running() as live, httpx.Client(timeout=600) as client:
        for case in cases("cold"):
            if quick and not case.quick:
                continue
            body = msgspec.json.encode(case.body())
            with Victim(live.url, "warm") as victim:
                t0 = time.perf_counter()
                r = client.post(
                    f"{live.url}/chat/completions",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                if r.headers.get("content-type", "").startswith("text/event-stream"):
                    _ = r.text
                seconds = time.perf_counter() - t0
                time.sleep(0.3)  # what the request's end costs (its slot, its ids freed)
                if not victim.streaming:
                    raise RuntimeError(f"the stream in progress ended during {case.name!r}")
                rows.append(
                    Stall(
                        case.name,
                        r.status_code,
                        seconds,
                        engine.max_lag(t0) * 1000,
                        victim.max_gap(t0) * 1000,
                        _note(r),
                    )
                )
            print(_row(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _note(r: Any) -> str:
    """The prompt's size in tokens (accepted), or the error's code (refused)."""
    try:
        data = r.json()
    except ValueError:
        return ""
    if "error" in data:
        return str(data["error"].get("code") or data["error"].get("type"))
    usage = data.get("usage") or {}
    return f"prompt {usage.get('prompt_tokens', 0):,} tokens" if usage else ""


HEADER = (
    "| case | status | request (s) | loop lag, max (ms) | stream's chunk gap, max (ms) | note |\n"
    "|---|---:|---:|---:|---:|---|"
)


def _row(s: Stall) -> str:
    return (
        f"| {s.case} | {s.status} | {s.seconds:,.2f} | {s.loop_lag_ms:,.0f} | "
        f"{s.chunk_gap_ms:,.0f} | {s.note} |"
    )


def render(rows: list[Stall]) -> str:
    return "\n".join([HEADER, *(_row(s) for s in rows)])


def main(argv: list[str] | None = None) -> int:
    from reasonspan.demo_data import default_tokenizer_path

    p = argparse.ArgumentParser(prog="python -m reasonspan.bench.stalls", description=__doc__)
    p.add_argument("--quick", action="store_true", help="leave out the prompts of 4 MB and more")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = p.parse_args(argv)
    tok = load_tokenizer_sync(default_tokenizer_path())
    print(f"machine: {machine_line()}")
    print(f"tokenizer: {tok.source} (models 'warm' and 'cold', parser qwen3)")
    print(f"engine: SIMULATED, one step every {TICK * 1000:.0f} ms\n")
    rows = run_stalls(tok, quick=args.quick)
    print(render(rows))
    if args.json:
        with open(args.json, "wb") as f:
            f.write(msgspec.json.format(msgspec.json.encode(rows), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

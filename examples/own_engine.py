"""Your own engine behind reasonspan's OpenAI-compatible server.

    pip install -e '.[server]'   # in a clone of the repository
    python examples/own_engine.py --model path/to/model_folder --parser qwen3

An engine fills two methods: ``submit()`` (a new request, on the event loop) and ``run()``
(the engine loop). This one runs its loop on a thread, as an engine around GPU kernels
does, and reaches the runtime through ``runtime.from_thread()``. Its "model" is a stand-in
(it thinks about the question, then echoes it); replace ``_next_tokens`` with a forward
pass. Everything else is what a real engine does each step:

1. stop the requests the runtime aborted (client gone) — ``take_aborted()``;
2. emit forced tokens where a thinking budget is spent, and cap speculative proposals at
   ``budget_remaining`` (here one token per step, so nothing to cap);
3. ``runtime.step(engine_ids, token_ids, offsets)`` with the step's new tokens;
4. ``runtime.finish(engine_id, "stop")`` at end of sequence, ``"length"`` at max_tokens.
"""

from __future__ import annotations

import argparse
import threading
from collections import deque
from dataclasses import dataclass, field

import anyio
import numpy as np
import uvicorn

from reasonspan import load_tokenizer_sync
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RuntimeFromThread
from reasonspan.serving.app import ServedModel, Server
from reasonspan.serving.engine import EngineRequest


@dataclass
class _Running:
    req: EngineRequest
    reply: list[int]
    pos: int = 0
    emitted: int = 0
    forced: list[int] = field(default_factory=list)


class EchoEngine:
    """A stand-in model on its own thread: one token per request per step."""

    def __init__(self) -> None:
        self._inbox: deque[EngineRequest] = deque()
        self._kick = threading.Event()

    def submit(self, request: EngineRequest) -> None:
        self._inbox.append(request)
        self._kick.set()

    async def run(self, runtime: ReasoningRuntime) -> None:
        stop = threading.Event()
        async with runtime.from_thread() as link:
            thread = threading.Thread(target=self._loop, args=(link, stop), daemon=True)
            thread.start()
            try:
                await anyio.sleep_forever()
            finally:
                stop.set()
                self._kick.set()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(thread.join)

    def _next_tokens(self, r: _Running) -> list[int]:
        """The 'forward pass': forced tokens first (budget spent), else the reply."""
        if r.forced:
            return [r.forced.pop(0)]
        r.pos += 1
        return r.reply[r.pos - 1 : r.pos]

    def _loop(self, link: RuntimeFromThread, stop: threading.Event) -> None:
        running: dict[int, _Running] = {}
        try:
            while not stop.is_set():
                for eid in link.take_aborted():  # 1. clients that went away
                    running.pop(eid, None)
                while self._inbox:
                    req = self._inbox.popleft()
                    question = req.request.messages[-1].for_template()["content"]
                    text = f"<think>\nThe user said: {question}\n</think>\n\nYou said: {question}"
                    running[req.engine_id] = _Running(req, req.parser.tokenizer.encode(text))
                if not running:
                    self._kick.wait(0.05)
                    self._kick.clear()
                    continue
                ids = list(running)
                new = [self._next_tokens(running[e]) for e in ids]
                offsets = np.cumsum([0, *map(len, new)])
                tokens = np.asarray([t for ts in new for t in ts], dtype=np.int64)
                for e, ts in zip(ids, new, strict=True):
                    running[e].emitted += len(ts)
                res = link.step(np.asarray(ids), tokens, offsets)  # 3. one hop per step
                for row in np.flatnonzero(res.forcing).tolist():  # 2. budget spent
                    eid = int(res.request_ids[row])
                    running[eid].forced = res.forced_token_ids(eid)
                for e in ids:  # 4. end of sequence, or max_tokens
                    r = running[e]
                    limit = r.req.request.token_limit
                    if r.pos >= len(r.reply) and not r.forced:
                        link.finish(e, "stop")
                        del running[e]
                    elif limit is not None and r.emitted >= limit:
                        link.finish(e, "length")
                        del running[e]
        except BaseException as exc:  # a dead engine must not leave clients waiting
            link.fail(exc)
            raise


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a model folder with a chat template")
    ap.add_argument("--parser", required=True, help="reasoning parser, e.g. qwen3")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    tok = load_tokenizer_sync(args.model)
    server = Server([ServedModel("echo", tok, args.parser)], EchoEngine())
    print(f"serving model 'echo' at http://127.0.0.1:{args.port}/v1")
    uvicorn.run(server.app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()

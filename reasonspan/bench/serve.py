"""The ``serve`` suite: what a server pays per generated token, token ids to SSE bytes.

One engine step for N concurrent requests (1 new token each), then every request's
output as the bytes a server writes: reasonspan's runtime (batched labels, text per
channel, ``chat.completion.chunk`` Structs) with its chunks encoded by
:func:`reasonspan.serving.sse.chunk_events`; beside it the text baseline (one
``DecodeStream`` + string search per request) with the same chunk Structs and the same
encoding, in the same run. Per-step figures are the median over repeated runs of
``STEPS`` steps; the HTTP write itself is left out of both.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..baseline import TextBaseline
from ..runtime import create_parser_sync
from ..runtime.openai import ChatCompletionChunk, ChoiceDelta, ChunkChoice
from ..runtime.streams import ReasoningRuntime
from ..serving.sse import chunk_events
from ..tokenizer import LoadedTokenizer
from .common import Row, transcript_ids

SIZES = (1, 64, 256)
STEPS = 200


def _schedule(ids: list[int], n: int) -> np.ndarray:
    """Token of request i at step s: the transcript read from request i's own offset."""
    arr = np.asarray(ids, dtype=np.int64)
    starts = (np.arange(n) * 37) % len(ids)
    pos = (starts[None, :] + np.arange(STEPS)[:, None]) % len(ids)
    out: np.ndarray = arr[pos]
    return out


def _ours(tok: LoadedTokenizer, tokens: np.ndarray) -> Callable[[], int]:
    parser = create_parser_sync("qwen3", tok)
    prompt = tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    n = tokens.shape[1]
    offsets = np.arange(n + 1, dtype=np.int64)

    def run() -> int:
        runtime = ReasoningRuntime(model="bench")
        streams = [runtime.add(f"chatcmpl-{i}", parser, prompt) for i in range(n)]
        eids = np.asarray([s.engine_id for s in streams], dtype=np.int64)
        sent = 0
        for step in tokens:
            runtime.step(eids, step, offsets)
            for s in streams:
                for chunk in s.ready():
                    sent += len(chunk_events(chunk, include_usage=False))
        return sent

    return run


def _baseline(tok: LoadedTokenizer, tokens: np.ndarray) -> Callable[[], int]:
    n = tokens.shape[1]
    rows = tokens.tolist()
    created = int(time.time())

    def run() -> int:
        splitters = [TextBaseline(tok.tokenizer, in_reasoning=True) for _ in range(n)]
        ids = [f"chatcmpl-{i}" for i in range(n)]
        sent = 0
        for step in rows:
            for i, t in enumerate(step):
                r, c = splitters[i].feed([t])
                if r or c:
                    chunk = ChatCompletionChunk(
                        id=ids[i],
                        created=created,
                        model="bench",
                        choices=[
                            ChunkChoice(
                                index=0, delta=ChoiceDelta(content=c or None, reasoning=r or None)
                            )
                        ],
                    )
                    sent += len(chunk_events(chunk, include_usage=False))
        return sent

    return run


def _median_ns(fn: Callable[[], int], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return float(statistics.median(times))


def bench_serve(tok: LoadedTokenizer, repeats: int, sizes: Sequence[int] = SIZES) -> list[Row]:
    """Token ids to SSE bytes per request-token, at each concurrency, beside the baseline."""
    ids = transcript_ids(tok)
    rows: list[Row] = []
    runs = max(3, repeats // 6)
    for n in sizes:
        tokens = _schedule(ids, n)
        total = n * STEPS
        base = _median_ns(_baseline(tok, tokens), runs)
        ours = _median_ns(_ours(tok, tokens), runs)
        note = f"{n} concurrent, {STEPS} steps; µs/call = one step"
        rows.append(
            Row(
                "serve",
                f"text baseline + chunk encoding, {n} concurrent",
                base / total,
                base / STEPS / 1e3,
                total,
                None,
                note,
                batch=n,
                k=1,
                steps=STEPS,
            )
        )
        rows.append(
            Row(
                "serve",
                f"ReasoningRuntime + SSE encoding, {n} concurrent",
                ours / total,
                ours / STEPS / 1e3,
                total,
                base / ours,
                note,
                batch=n,
                k=1,
                steps=STEPS,
            )
        )
    return rows

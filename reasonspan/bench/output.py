"""The ``output`` suite: the whole output path, token ids to the SSE bytes a server writes,
per request-token, for 1 to 4,096 concurrent requests and k = 1 or 4 tokens per step.

Four paths over the same schedule (request i reads the transcript from its own offset,
wrapping around), timed alternately so they see the same machine load:

- *text baseline*: per request, ``DecodeStream`` + string search (:class:`TextBaseline`),
  one ``chat.completion.chunk`` Struct per step with text, encoded as SSE;
- *runtime, chunk objects*: :class:`ReasoningRuntime` as the ``serve`` suite uses it (its
  chunks read with ``ready()`` and encoded by ``chunk_events``);
- *runtime, SSE path*: the same runtime with the requests added ``sse=True``: the plain
  tokens of a step become event bytes batch-wide (``runtime/stream/sse_path.py``), read with
  ``ready_bytes()``;
- *text baseline, labels + text only*: the baseline without its chunks and encoding, so the
  SSE path (which writes the bytes) is also set against a server's reasoning split and
  text alone;
- *ReasoningBatch + BatchText, labels + text*: the batch step and every request's
  reasoning and content text as str (``runtime/batch/text.py``), what a server that builds
  its own response objects reads: set against the baseline's labels + text alone.

Steps are timed in steady state: the requests are admitted before the clock starts and
stay open (their streams never end), so a figure is what one more generated token costs
a server at that concurrency. Admission is timed apart: adding one request to a runtime
that holds N (and removing it), beside constructing the baseline's per-request parser.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np

from reasonspan.baseline import TextBaseline
from reasonspan.bench.common import (
    Family,
    Plan,
    Row,
    collector_ns,
    interleaved_medians,
    transcript_ids,
)
from reasonspan.bench.serve import baseline_event
from reasonspan.runtime import BatchText, ReasoningBatch, build_parser_sync
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.wire.openai import ChoiceDelta
from reasonspan.runtime.wire.sse import chunk_events
from reasonspan.tokenizer import LoadedTokenizer

SIZES = (1, 64, 256, 1024, 4096)
KS = (1, 4)
BUDGET = 32_768
"""Request-tokens per timed run (steps = BUDGET / (N * k), between 4 and 256)."""
CASES = (
    "text baseline + chunk encoding",
    "ReasoningRuntime, chunk objects + encoding",
    "ReasoningRuntime, SSE path",
    "text baseline, labels + text only (no encoding)",
    "ReasoningBatch + BatchText, labels + text (no encoding)",
)
PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def _steps(n: int, k: int) -> int:
    return max(4, min(256, BUDGET // (n * k)))


def _schedule(ids: list[int], n: int, k: int) -> list[np.ndarray]:
    """The step arrays of one timed run, made before the clock starts (an engine hands
    them over ready): request i's next k tokens of the transcript, from its own offset,
    wrapping around. Every run replays them; the requests' state goes on."""
    arr = np.asarray(ids, dtype=np.int64)
    pos = (np.arange(n, dtype=np.int64) * 37) % len(ids)
    inner = np.arange(k, dtype=np.int64)
    steps = []
    for _ in range(_steps(n, k)):
        steps.append(arr[(pos[:, None] + inner[None, :]) % len(ids)].reshape(-1))
        pos = (pos + k) % len(ids)
    return steps


def _baseline(
    tok: LoadedTokenizer, family: Family, ids: list[int], n: int, k: int, *, encode: bool = True
) -> Callable[[int], int]:
    """The text baseline: per request, ``DecodeStream`` + string search, then (``encode``)
    one chunk per step encoded as SSE; without ``encode``, labels and text only (what the
    issue's "labels + text" row compares with)."""
    splitters = [
        TextBaseline(tok.tokenizer, family.start, family.end, in_reasoning=True) for _ in range(n)
    ]
    keys = [f"chatcmpl-{i}" for i in range(n)]
    created = int(time.time())
    steps = _schedule(ids, n, k)

    def run(count: int) -> int:
        sent = 0
        for step in steps[:count]:
            toks = step.tolist()
            for i in range(n):
                r, c = splitters[i].feed(toks[i * k : i * k + k])
                if not encode:
                    sent += len(r) + len(c)
                elif r or c:
                    delta = ChoiceDelta(content=c or None, reasoning=r or None)
                    sent += len(baseline_event(keys[i], created, delta))
        return sent

    return run


def _runtime(
    tok: LoadedTokenizer, family: Family, ids: list[int], n: int, k: int, *, sse: bool
) -> Callable[[int], int]:
    parser = build_parser_sync(family.parser, tok)
    prompt = tok.encode(PROMPT)
    runtime = ReasoningRuntime(model="bench")
    streams = [runtime.add(f"chatcmpl-{i}", parser, prompt, sse=sse) for i in range(n)]
    eids = np.asarray([s.engine_id for s in streams], dtype=np.int64)
    offsets = np.arange(n + 1, dtype=np.int64) * k
    steps = _schedule(ids, n, k)
    for s in streams:  # the role chunks: admission, not a step
        s.ready()

    if sse:

        def run(count: int) -> int:
            sent = 0
            for step in steps[:count]:
                runtime.step(eids, step, offsets)
                for s in streams:
                    sent += len(s.ready_bytes())
            return sent

        return run

    def run_chunks(count: int) -> int:
        sent = 0
        for step in steps[:count]:
            runtime.step(eids, step, offsets)
            for s in streams:
                for chunk in s.ready():
                    sent += len(chunk_events(chunk, include_usage=False))
        return sent

    return run_chunks


def _batch_text(
    tok: LoadedTokenizer, family: Family, ids: list[int], n: int, k: int
) -> Callable[[int], int]:
    """The batch step and :class:`BatchText`: every request's reasoning and content text
    of each step, as str (labels + text, no chunks, no encoding)."""
    parser = build_parser_sync(family.parser, tok)
    prompt = tok.encode(PROMPT)
    batch = ReasoningBatch()
    texts = BatchText(batch)
    for i in range(n):
        batch.add(i, parser, prompt)
        texts.add(i)
    rids = np.arange(n, dtype=np.int64)
    offsets = np.arange(n + 1, dtype=np.int64) * k
    steps = _schedule(ids, n, k)

    def run(count: int) -> int:
        sent = 0
        for step in steps[:count]:
            reasoning, content = texts.step(batch.step(rids, step, offsets))
            sent += len(reasoning) + len(content)
        return sent

    return run


def _admission(tok: LoadedTokenizer, family: Family, live: int, repeats: int) -> list[Row]:
    """One more request admitted to (and removed from) a runtime, and a batch with its
    BatchText, each holding ``live`` ones, beside constructing the baseline's per-request
    splitter. Every path seeds the request from the same prompt."""
    parser = build_parser_sync(family.parser, tok)
    prompt = tok.encode(PROMPT)
    runtime = ReasoningRuntime(model="bench")
    batch = ReasoningBatch()
    texts = BatchText(batch)
    for i in range(live):
        runtime.add(f"live-{i}", parser, prompt, sse=True)
        batch.add(i, parser, prompt)
        texts.add(i)
    many = 256
    keys = iter(range(live, 1 << 62))

    def admit() -> None:
        made = [f"new-{next(keys)}" for _ in range(many)]
        for key in made:
            runtime.add(key, parser, prompt, sse=True)
        for key in made:
            runtime.abort(key)

    def admit_batch() -> None:
        made = [next(keys) for _ in range(many)]
        for rid in made:
            batch.add(rid, parser, prompt)
        for rid in made:
            batch.remove(rid)

    def admit_text() -> None:
        made = [next(keys) for _ in range(many)]
        for rid in made:
            batch.add(rid, parser, prompt)
            texts.add(rid)
        for rid in made:
            texts.remove(rid)
            batch.remove(rid)

    def construct() -> None:
        for _ in range(many):
            TextBaseline(tok.tokenizer, family.start, family.end, in_reasoning=True)

    times = interleaved_medians([construct, admit_batch, admit_text, admit], repeats)
    note = f"{live:,} live requests; per request, add + remove (the baseline: construct)"
    cases = (
        "admission: text baseline splitter",
        "admission: ReasoningBatch.add (prompt scan included) + remove",
        "admission: ReasoningBatch.add + BatchText.add, + remove",
        "admission: ReasoningRuntime.add(sse=True) + abort",
    )
    return [
        Row(
            "output",
            f"{case}, {live:,} live",
            t / many,
            t / many / 1e3,
            1,
            times[0] / t if i else None,
            note,
            batch=live,
        )
        for i, (case, t) in enumerate(zip(cases, times, strict=True))
    ]


def bench_output(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """Ids to SSE bytes (and labels + text) per request-token, every path, each
    concurrency and k."""
    family = plan.family
    ids = transcript_ids(tok, family=family)
    rows: list[Row] = []
    runs = max(3, plan.repeats // 3)
    for n in plan.serve_sizes or SIZES:
        for k in plan.batch_ks or KS:
            count = _steps(n, k)
            paths = [
                _baseline(tok, family, ids, n, k),
                _runtime(tok, family, ids, n, k, sse=False),
                _runtime(tok, family, ids, n, k, sse=True),
                _baseline(tok, family, ids, n, k, encode=False),
                _batch_text(tok, family, ids, n, k),
            ]
            calls: list[Callable[[], object]] = [partial(p, count) for p in paths]
            times = interleaved_medians(calls, runs)
            total = n * k * count
            base = times[0]
            note = f"{n:,} concurrent, k={k}, {count} steps timed; µs/call = one step"
            for i, (case, t) in enumerate(zip(CASES, times, strict=True)):
                alone = f"; {times[3] / t:.1f}x the baseline's labels + text alone"
                ratio: float | None
                if i == 4:  # labels + text: set against the baseline's labels + text
                    note_i, ratio = note + alone, times[3] / t
                else:
                    note_i = note + alone if i == 2 else note
                    ratio = base / t if i else None
                # The paths that make chunks: how much of their time is the collector's.
                collected = collector_ns(calls[i]) / total if i < 3 else None
                rows.append(
                    Row(
                        "output",
                        f"{case}, {n:,} concurrent, k={k}",
                        t / total,
                        t / count / 1e3,
                        total,
                        ratio,
                        note_i,
                        batch=n,
                        k=k,
                        steps=count,
                        collector_ns_per_token=collected,
                    )
                )
    sizes = plan.serve_sizes or SIZES
    for live in sorted({min(1024, max(sizes)), max(sizes)}):  # the 1,024 and the most
        rows += _admission(tok, family, live, runs)
    return rows

"""The ``serve`` suite: what a server pays per generated token, token ids to SSE bytes.

One engine step for N concurrent requests (1 new token each), then every request's
output as the bytes a server writes: reasonspan's runtime as the reference server uses it
(requests added with ``sse=True``: batched labels, then the step's plain tokens written as
event bytes batch-wide, every other chunk encoded by
:func:`reasonspan.runtime.wire.sse.chunk_events`, read with ``ready_bytes()``); beside it
the text baseline (one ``DecodeStream`` + string search per request) with the same chunk
Structs and the same encoding, in the same run. Figures are medians over repeated runs of
``STEPS`` steps, the two sides timed alternately so both see the same machine load. Both
include what each request costs (admission, the first and the final chunk); the runtime
is created once, as a server does; the HTTP write is left out of both. Both get each
step's tokens as the engine's array and read it in the timed run (the baseline through
``tolist()``, as the ``output`` suite's does).

Every run replays the same tokens, so from the second run on the runtime's requests find
their first rows (``<think>``, ``\n``, the first word) in the decoder states the first
run taught (``runtime/text/decoder_states.py``), as a server's requests find the rows they
share. For one request alone a third row puts a new first word in every request, so its
third row always misses, as with a server whose answers open with different words.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from reasonspan.baseline import TextBaseline
from reasonspan.bench.common import Family, Plan, Row, interleaved_medians, transcript_ids
from reasonspan.runtime import ReasoningParser, build_parser_sync
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.wire.openai import (
    ChatCompletionChunk,
    ChoiceDelta,
    ChunkChoice,
    FinishReason,
)
from reasonspan.serving.messages_events import MessageEvents
from reasonspan.serving.responses import ResponsesRequest
from reasonspan.serving.responses_events import ResponseEvents, ResponseShape
from reasonspan.serving.segments import EventEncoder
from reasonspan.serving.sse import chunk_events
from reasonspan.tokenizer import LoadedTokenizer

SIZES = (1, 64, 256)
STEPS = 200
PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def _schedule(ids: list[int], n: int) -> np.ndarray:
    """Token of request i at step s: the transcript read from request i's own offset."""
    arr = np.asarray(ids, dtype=np.int64)
    starts = (np.arange(n) * 37) % len(ids)
    pos = (starts[None, :] + np.arange(STEPS)[:, None]) % len(ids)
    out: np.ndarray = arr[pos]
    return out


def _ours(
    tok: LoadedTokenizer, tokens: np.ndarray, family: Family, words: list[int] | None = None
) -> Callable[[], int]:
    parser = build_parser_sync(family.parser, tok)
    return runtime_to_sse(parser, tok.encode(PROMPT), tokens, "length", words=words)


FIRST_WORD = 2
"""The step whose token :func:`_first_words` varies: the transcript opens ``<think>``,
``\n``, then its first word."""


def _first_words(tok: LoadedTokenizer) -> list[int]:
    """Token ids of capitalized words of four letters or more (``Okay``, ``Sure``): a
    different first word for each request of the row that must not find its first rows
    in the decoder states earlier requests taught (``runtime/text/decoder_states.py``)."""
    vocab = tok.tokenizer.get_vocab()
    got = sorted(i for w, i in vocab.items() if len(w) > 3 and w.isalpha() and w[0].isupper())
    return got[:4096]


def runtime_to_sse(
    parser: ReasoningParser,
    prompt: list[int],
    tokens: np.ndarray,
    finish_reason: FinishReason,
    tools: Sequence[Mapping[str, Any]] | None = None,
    words: list[int] | None = None,
    stream_arguments: bool = False,
) -> Callable[[], int]:
    """One timed run: ``tokens.shape[1]`` requests admitted, stepped one token each per
    row of ``tokens``, every chunk encoded as SSE bytes as it is ready, then finished with
    ``finish_reason``; returns the bytes sent. The runtime is created once, outside the
    run, as a server does (not a per-request cost). ``words``: every run puts the next of
    them at step :data:`FIRST_WORD` (a new first word for every request).
    ``stream_arguments``: calls are sent as they are written (a server's ``stream=True``)."""
    n = tokens.shape[1]
    offsets = np.arange(n + 1, dtype=np.int64)
    runtime = ReasoningRuntime(model="bench")
    runs = iter(range(1 << 62))
    if words is not None:
        tokens = tokens.copy()  # (its own: each run writes its first word into it)

    def run() -> int:
        r = next(runs)
        if words is not None:
            tokens[FIRST_WORD] = words[r % len(words)]
        streams = [
            runtime.add(
                f"chatcmpl-{r}-{i}",
                parser,
                prompt,
                tools=tools,
                sse=True,
                stream_arguments=stream_arguments,
            )
            for i in range(n)
        ]
        eids = np.asarray([s.engine_id for s in streams], dtype=np.int64)
        sent = 0
        for step in tokens:
            runtime.step(eids, step, offsets)
            for s in streams:
                sent += len(s.ready_bytes())
        for s in streams:
            runtime.finish(s.engine_id, finish_reason)
            sent += len(s.ready_bytes())
        return sent

    return run


def _messages_encoder(key: str) -> tuple[EventEncoder, Callable[[RequestStream], bytes]]:
    enc = MessageEvents(key, "bench", 16)
    return enc, lambda s: enc.end(s.finish_reason, s.stop_sequence, 0)


def _responses_encoder(key: str) -> tuple[EventEncoder, Callable[[RequestStream], bytes]]:
    enc = ResponseEvents(ResponseShape(key, _RESPONSES_REQUEST, 0))
    return enc, lambda s: enc.end(s.finish_reason, s.usage)


_RESPONSES_REQUEST = ResponsesRequest(model="bench", input="hi")
PROTOCOL_ENCODERS = {"Messages": _messages_encoder, "Responses": _responses_encoder}
"""The server's other two protocols: each request's events written by its encoder."""


def runtime_to_protocol(
    parser: ReasoningParser,
    prompt: list[int],
    tokens: np.ndarray,
    finish_reason: FinishReason,
    protocol: str,
) -> Callable[[], int]:
    """:func:`runtime_to_sse` for the Messages or Responses API, as the server streams them:
    each request added with the protocol's writer (the encoder the server uses,
    :mod:`reasonspan.serving.messages_events`, :mod:`reasonspan.serving.responses_events`),
    which the runtime has write its events at step time; read with ``ready_bytes()`` after
    each step, the opening and closing events included."""
    n = tokens.shape[1]
    offsets = np.arange(n + 1, dtype=np.int64)
    runtime = ReasoningRuntime(model="bench")
    runs = iter(range(1 << 62))
    make = PROTOCOL_ENCODERS[protocol]

    def run() -> int:
        r = next(runs)
        encoders = [make(f"{protocol}-{r}-{i}") for i in range(n)]
        streams = [
            runtime.add(f"{protocol}-{r}-{i}", parser, prompt, writer=enc)
            for i, (enc, _end) in enumerate(encoders)
        ]
        eids = np.asarray([s.engine_id for s in streams], dtype=np.int64)
        sent = sum(len(enc.start()) for enc, _end in encoders)
        for step in tokens:
            runtime.step(eids, step, offsets)
            for s in streams:
                sent += len(s.ready_bytes())
        for s, (_enc, end) in zip(streams, encoders, strict=True):
            runtime.finish(s.engine_id, finish_reason)
            sent += len(s.ready_bytes()) + len(end(s))
        return sent

    return run


def baseline_event(
    rid: str, created: int, delta: ChoiceDelta, finish: FinishReason | None = None
) -> bytes:
    """The text baseline's SSE bytes for one delta: the same chunk Struct and encoding as
    the runtime's, so the suites compare splitting, not encoding."""
    c = ChatCompletionChunk(
        id=rid,
        created=created,
        model="bench",
        choices=[ChunkChoice(index=0, delta=delta, finish_reason=finish)],
    )
    return chunk_events(c, include_usage=False)


def _baseline(tok: LoadedTokenizer, tokens: np.ndarray, family: Family) -> Callable[[], int]:
    n = tokens.shape[1]
    created = int(time.time())

    def chunk(rid: str, delta: ChoiceDelta, finish: FinishReason | None = None) -> bytes:
        return baseline_event(rid, created, delta, finish)

    def run() -> int:
        splitters = [
            TextBaseline(tok.tokenizer, family.start, family.end, in_reasoning=True)
            for _ in range(n)
        ]
        ids = [f"chatcmpl-{i}" for i in range(n)]
        sent = sum(len(chunk(rid, ChoiceDelta(role="assistant", content=""))) for rid in ids)
        for step in tokens:  # the engine's arrays, as the runtime gets them
            for i, t in enumerate(step.tolist()):
                r, c = splitters[i].feed([t])
                if r or c:
                    sent += len(chunk(ids[i], ChoiceDelta(content=c or None, reasoning=r or None)))
        for rid in ids:
            sent += len(chunk(rid, ChoiceDelta(), "length"))
        return sent

    return run


def bench_serve(tok: LoadedTokenizer, plan: Plan) -> list[Row]:
    """Token ids to SSE bytes per request-token, at each concurrency, beside the baseline."""
    family = plan.family
    ids = transcript_ids(tok, family=family)
    rows: list[Row] = []
    runs = max(3, plan.repeats // 3)
    for n in plan.serve_sizes or SIZES:
        tokens = _schedule(ids, n)
        total = n * STEPS
        parser = build_parser_sync(family.parser, tok)
        prompt = tok.encode(PROMPT)
        paths: list[Callable[[], object]] = [
            _baseline(tok, tokens, family),
            _ours(tok, tokens, family),
            *(
                runtime_to_protocol(parser, prompt, tokens, "length", protocol)
                for protocol in PROTOCOL_ENCODERS
            ),
        ]
        if n == 1:
            paths.append(_ours(tok, tokens, family, _first_words(tok)))
        base, ours, *others = interleaved_medians(paths, runs)
        protocols, new_word = others[: len(PROTOCOL_ENCODERS)], others[len(PROTOCOL_ENCODERS) :]
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
        for case, t in [("", ours)] + [(", a new first word each request", t) for t in new_word]:
            rows.append(
                Row(
                    "serve",
                    f"ReasoningRuntime + SSE encoding, {n} concurrent{case}",
                    t / total,
                    t / STEPS / 1e3,
                    total,
                    base / t,
                    note,
                    batch=n,
                    k=1,
                    steps=STEPS,
                )
            )
        for protocol, t in zip(PROTOCOL_ENCODERS, protocols, strict=True):
            rows.append(
                Row(
                    "serve",
                    f"ReasoningRuntime + {protocol} API events, {n} concurrent",
                    t / total,
                    t / STEPS / 1e3,
                    total,
                    base / t,
                    f"{note}; {t / ours:.2f}× the Chat Completions path's cost",
                    batch=n,
                    k=1,
                    steps=STEPS,
                )
            )
    return rows

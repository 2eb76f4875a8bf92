"""The ``batch`` suite of ``reasonspan bench``: one engine step over a whole continuous batch.

Ways to route a step's tokens, on the same tokenizer, the same sizes and the same kind of
stream, so their rows compare directly:

- ``vectorized``: :class:`ReasoningBatch` with qwen3, whose markers are single tokens, so a
  step is a few numpy gathers and scatters over the batch;
- ``hold-back``: :class:`ReasoningBatch` with minimax_m3, whose ``<mm:think>`` markers are
  several tokens in Qwen3's vocabulary (matched on token bytes, with hold-back): the batch
  routes its tokens by table like qwen3's and hands a request to its own
  ``parser.stream()`` only from a token that may begin a marker (HOLD) until the held
  tokens are decided, so the row shows what the text-marker families cost;
- ``stream() loop``: the same minimax_m3 requests, each its own parser, stepped by a bare
  Python loop over ``parser.stream()`` with no batch around it: what routing every token
  through its parser costs, i.e. the floor of the per-request path that custom machines
  (harmony) and parsers still take in a batch;
- ``text baseline``: one :class:`TextBaseline` per request (DecodeStream + string search),
  each fed its tokens every step, which is what servers do today.

Every request reads a real transcript (``transcript_ids``) from its own offset, cycling,
so a step mixes requests in reasoning and in content and some of them cross ``</think>``.
Each request is seeded from the tokens before its offset, as a server seeds from the
prompt. Times are medians of single steps; memory is a separate pass under tracemalloc,
so tracing never slows the timed steps.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from reasonspan.baseline import TextBaseline
from reasonspan.bench.common import QWEN3, Family, Row, transcript_ids
from reasonspan.runtime import ReasoningBatch, ReasoningParser, build_parser_sync
from reasonspan.tokenizer import LoadedTokenizer

IntArray = npt.NDArray[np.int64]

SIZES: tuple[int, ...] = (1, 64, 256, 1024, 4096)
KS: tuple[int, ...] = (1, 4)
BUDGET_NS = 500_000_000
"""Timed time per (path, size, k): big batches get fewer steps (but at least MIN_STEPS), so
the whole suite stays well under a minute on a 2-core machine."""
MIN_STEPS = 5
WARMUP_STEPS = 2
MEMORY_STEPS = 4


def vectorized_label(parser: str) -> str:
    """The vectorized row's label, naming the family timed."""
    return f"vectorized: ReasoningBatch.step, {parser}"


VECTORIZED = vectorized_label("qwen3")
PER_REQUEST = "hold-back: ReasoningBatch.step, minimax_m3 (multi-token markers; table + stream())"
LOOP = "per-request floor: Python loop of parser.stream(), minimax_m3"
BASELINE = "text baseline: one TextBaseline per request"


class _Stream:
    """A cyclic token stream read by ``n`` requests from spread-out offsets."""

    def __init__(self, ids: list[int], n: int) -> None:
        self.ids: IntArray = np.asarray(ids, dtype=np.int64)
        size = len(ids)
        # 389 is prime and does not divide the length: offsets spread over the transcript.
        self.starts: IntArray = (np.arange(n, dtype=np.int64) * 389) % size

    def tokens(self, step: int, k: int) -> IntArray:
        """The flat token ids of one step: k per request, request after request."""
        pos = (self.starts + step * k)[:, None] + np.arange(k, dtype=np.int64)
        out: IntArray = self.ids[pos % self.ids.shape[0]].ravel()
        return out

    def prefix(self, i: int) -> IntArray:
        """What request ``i``'s stream held before its offset: its "prompt"."""
        return self.ids[: int(self.starts[i])]


class _Path(Protocol):
    """One way of routing a step's tokens; ``admit`` and ``step`` are what gets measured."""

    def admit(self) -> None: ...

    def prepare(self, toks: IntArray) -> object: ...

    def step(self, inputs: object) -> None: ...


class _BatchPath:
    """A :class:`ReasoningBatch` holding one request per stream reader."""

    def __init__(self, parser: ReasoningParser, stream: _Stream, k: int) -> None:
        self.parser = parser
        self.stream = stream
        n = stream.starts.shape[0]
        self.rids: IntArray = np.arange(n, dtype=np.int64)
        self.offsets: IntArray = np.arange(n + 1, dtype=np.int64) * k
        self.batch = ReasoningBatch()

    def admit(self) -> None:
        self.batch = ReasoningBatch()
        for i in range(self.rids.shape[0]):
            self.batch.add(i, self.parser, self.stream.prefix(i))

    def vectorized(self) -> bool:
        return self.batch.is_vectorized(0)

    def prepare(self, toks: IntArray) -> object:
        return toks

    def step(self, inputs: object) -> None:
        assert isinstance(inputs, np.ndarray)
        self.batch.step(self.rids, inputs, self.offsets)


class _BaselinePath:
    """One :class:`TextBaseline` per request, started in the state its prefix leaves."""

    def __init__(
        self, tok: LoadedTokenizer, starts_in_reasoning: list[bool], k: int, family: Family
    ) -> None:
        self.family = family
        self.tok = tok
        self.init = starts_in_reasoning
        self.k = k
        self.bases: list[TextBaseline] = []

    def admit(self) -> None:
        hf = self.tok.tokenizer
        start, end = self.family.start, self.family.end
        self.bases = [TextBaseline(hf, start, end, in_reasoning=r) for r in self.init]

    def prepare(self, toks: IntArray) -> object:
        # Per-request lists, built outside the timed step: kind to the baseline.
        flat = toks.tolist()
        k = self.k
        return [flat[i : i + k] for i in range(0, len(flat), k)]

    def step(self, inputs: object) -> None:
        assert isinstance(inputs, list)
        for b, chunk in zip(self.bases, inputs, strict=True):
            b.feed(chunk)


class _LoopPath:
    """One parser per request and a Python loop over them: no batch at all."""

    def __init__(self, parser: ReasoningParser, stream: _Stream, k: int) -> None:
        self.parser = parser
        self.stream = stream
        self.k = k
        self.parsers: list[ReasoningParser] = []
        self.states: list[bool] = []

    def admit(self) -> None:
        p = self.parser
        n = self.stream.starts.shape[0]
        self.parsers = [type(p)(p.tokenizer, p.machine, p.chat_template_kwargs) for _ in range(n)]
        self.states = [p.is_prompt_in_reasoning(self.stream.prefix(i)) for i in range(n)]

    def prepare(self, toks: IntArray) -> object:
        flat = toks.tolist()
        k = self.k
        return [flat[i : i + k] for i in range(0, len(flat), k)]

    def step(self, inputs: object) -> None:
        assert isinstance(inputs, list)
        states = self.states
        for i, (parser, chunk) in enumerate(zip(self.parsers, inputs, strict=True)):
            states[i] = parser.stream(chunk, states[i]).is_still_reasoning


def _peak_bytes(path: _Path, stream: _Stream, k: int) -> int:
    """Peak traced bytes of admitting every request and stepping a few times."""
    inputs = [path.prepare(stream.tokens(s, k)) for s in range(MEMORY_STEPS)]
    gc.collect()
    tracemalloc.start()
    try:
        path.admit()
        for inp in inputs:
            path.step(inp)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak


def _step_times(path: _Path, stream: _Stream, k: int, max_steps: int) -> list[int]:
    """Wall time of single steps (ns), inputs prepared outside the timed region."""
    gc.collect()
    path.admit()
    step = 0
    for _ in range(WARMUP_STEPS):
        path.step(path.prepare(stream.tokens(step, k)))
        step += 1
    times: list[int] = []
    spent = 0
    while len(times) < MIN_STEPS or (len(times) < max_steps and spent < BUDGET_NS):
        inp = path.prepare(stream.tokens(step, k))
        t0 = time.perf_counter_ns()
        path.step(inp)
        dt = time.perf_counter_ns() - t0
        times.append(dt)
        spent += dt
        step += 1
    return times


def _measure(case: str, path: _Path, stream: _Stream, k: int, max_steps: int, note: str) -> Row:
    n = stream.starts.shape[0]
    peak = _peak_bytes(path, stream, k)
    times = _step_times(path, stream, k, max_steps)
    med = float(np.median(times))
    return Row(
        "batch",
        case,
        ns_per_token=med / (n * k),
        us_per_call=med / 1e3,
        tokens=n * k,
        note=note,
        batch=n,
        k=k,
        bytes_per_request=peak / n,
        steps=len(times),
    )


def mm_transcript_ids(tok: LoadedTokenizer, ids: list[int], family: Family = QWEN3) -> list[int]:
    """The same transcript with MiniMax M3's markers, re-encoded (so the markers meet their
    neighbours the way the real tokenizer merges them)."""
    text = tok.decode(ids)
    text = text.replace(family.end, "</mm:think>").replace(family.start, "<mm:think>")
    return tok.encode(text)


def run_batch_suite(
    tok: LoadedTokenizer,
    repeats: int,
    sizes: Sequence[int] = SIZES,
    ks: Sequence[int] = KS,
    family: Family = QWEN3,
) -> list[Row]:
    """Rows for every size and k: vectorized (the family's parser), hold-back, the
    stream() loop, then the baseline they are compared with."""
    qwen = build_parser_sync(family.parser, tok)
    mm = build_parser_sync("minimax_m3", tok)
    ids = transcript_ids(tok, family=family)
    mm_ids = mm_transcript_ids(tok, ids, family)
    max_steps = max(MIN_STEPS, 10 * repeats)
    rows: list[Row] = []
    for k in ks:
        for n in sizes:
            stream = _Stream(ids, n)
            vec = _BatchPath(qwen, stream, k)
            vrow = _measure(vectorized_label(family.parser), vec, stream, k, max_steps, "")
            if not vec.vectorized():
                vrow.note = "NOT vectorized on this tokenizer"
            mm_stream = _Stream(mm_ids, n)
            per = _BatchPath(mm, mm_stream, k)
            prow = _measure(PER_REQUEST, per, mm_stream, k, max_steps, "")
            if per.vectorized():
                prow.note = "vectorized on this tokenizer (markers are single tokens)"
            lrow = _measure(LOOP, _LoopPath(mm, mm_stream, k), mm_stream, k, max_steps, "")
            init = [qwen.is_prompt_in_reasoning(stream.prefix(i)) for i in range(n)]
            base = _BaselinePath(tok, init, k, family)
            brow = _measure(BASELINE, base, stream, k, max_steps, "")
            for r in (vrow, prow, lrow):
                r.vs_baseline = brow.us_per_call / r.us_per_call
            rows += [vrow, prow, lrow, brow]
    return rows

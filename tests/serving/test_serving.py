"""The async runtime on top of the batch: OpenAI chunks per request, driven by the
simulated engine; slow consumers, cancellation, fault isolation, budgets, memory."""

from __future__ import annotations

import gc
import os
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.stream.simulation import SimRequest, SimulatedEngine, drive
from reasonspan.runtime.wire.openai import ChatCompletionChunk, encode
from reasonspan.workload import workload
from tests.support.fixtures import FAMILY_KWARGS, FAMILY_TOKENIZERS, tokenizer
from tests.support.sampling import examples
from tests.support.strategies import held_then_empty, splits

FAMILIES = ["qwen3", "deepseek_r1", "glm47", "minimax_m2", "minimax_m3", "kimi_k3", "openai_gptoss"]


def mixed_parsers() -> list[tuple[reasonspan.ReasoningParser, reasonspan.LoadedTokenizer]]:
    out = []
    for fam in FAMILIES:
        tok = tokenizer(FAMILY_TOKENIZERS[fam])
        out.append((reasonspan.create_parser_sync(fam, tok), tok))
    return out


class Collected(msgspec.Struct):
    reasoning: str = ""
    content: str = ""
    finish_reason: str | None = None
    reasoning_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_ended: bool | None = None
    chunks: int = 0
    error: BaseException | None = None


async def collect(stream: RequestStream, into: Collected, *, delay: float = 0.0) -> None:
    try:
        async for chunk in stream:
            if delay:
                await anyio.sleep(delay)
            into.chunks += 1
            # Every chunk survives the wire.
            again = msgspec.json.decode(encode(chunk), type=ChatCompletionChunk)
            assert again == chunk
            choice = chunk.choices[0]
            into.reasoning += choice.delta.reasoning or ""
            into.content += choice.delta.content or ""
            if choice.finish_reason:
                into.finish_reason = choice.finish_reason
            if chunk.usage is not None:
                into.reasoning_tokens = chunk.usage.completion_tokens_details.reasoning_tokens
                into.completion_tokens = chunk.usage.completion_tokens
                into.reasoning_ended = chunk.usage.reasoning_ended
    except RequestFailedError as err:
        into.error = err


def expected(r: SimRequest) -> tuple[str, str, int]:
    res = r.parser.parse(r.emitted_ids, prompt_token_ids=r.prompt_ids)
    return res.reasoning or "", res.content or "", res.reasoning_tokens


@pytest.mark.parametrize("k", [1, 3])
async def test_mixed_families_interleaved_equal_parse(k: int) -> None:
    """Hundreds of requests of mixed families, admitted over time, k tokens per step:
    each stream's text equals parse() of what the engine emitted for it."""
    requests = workload(mixed_parsers(), 240, seed=k, arrival_rate=3.0, truncate_fraction=0.2)
    engine = SimulatedEngine(requests, max_batch=48, tokens_per_step=k)
    runtime = ReasoningRuntime(model="sim")
    got: dict[int, Collected] = {}
    async with anyio.create_task_group() as tg:

        def on_admit(r: SimRequest, stream: RequestStream) -> None:
            got[r.request_id] = Collected()
            tg.start_soon(collect, stream, got[r.request_id])

        stats = await drive(engine, runtime, on_admit=on_admit)
    assert stats.finished == len(requests) == len(got)
    assert len(runtime) == 0 and len(runtime.batch) == 0  # every slot freed
    for r in engine.finished:
        c = got[r.request_id]
        reasoning, content, reasoning_tokens = expected(r)
        assert (c.reasoning, c.content) == (reasoning, content), r.parser.name
        assert c.reasoning_tokens == reasoning_tokens
        assert c.completion_tokens == len(r.emitted_ids)
        res = r.parser.parse(r.emitted_ids, prompt_token_ids=r.prompt_ids)
        # The engine's finish reason, kept; "ended inside reasoning" is reported apart.
        assert c.finish_reason == r.finish_reason
        assert c.reasoning_ended == res.reasoning_ended


async def test_slow_consumer_is_coalesced_and_never_blocks_the_loop() -> None:
    parsers = mixed_parsers()[:1]
    requests = workload(parsers, 4, seed=3, truncate_fraction=0.0)
    engine = SimulatedEngine(requests, tokens_per_step=1)
    runtime = ReasoningRuntime(buffer_size=3)
    streams: dict[int, RequestStream] = {}
    stats = await drive(engine, runtime, on_admit=lambda r, s: streams.__setitem__(r.request_id, s))
    # The engine ran to the end before anyone read a single chunk.
    assert stats.finished == 4
    for r in engine.finished:
        c = Collected()
        await collect(streams[r.request_id], c)
        assert c.chunks <= 3 + 1  # buffer_size, then the final chunk (finish_reason, usage)
        reasoning, content, _ = expected(r)
        assert (c.reasoning, c.content) == (reasoning, content)


async def test_cancelled_consumer_frees_its_slot() -> None:
    requests = workload(mixed_parsers()[:1], 6, seed=5, truncate_fraction=0.0)
    engine = SimulatedEngine(requests, tokens_per_step=1)
    runtime = ReasoningRuntime()
    got: dict[int, Collected] = {}
    victim = requests[0].request_id

    async def quit_early(stream: RequestStream) -> None:
        async with stream:
            async for _chunk in stream:
                break  # the client hangs up after the first chunk

    async with anyio.create_task_group() as tg:

        def on_admit(r: SimRequest, stream: RequestStream) -> None:
            if r.request_id == victim:
                tg.start_soon(quit_early, stream)
            else:
                got[r.request_id] = Collected()
                tg.start_soon(collect, stream, got[r.request_id])

        stats = await drive(engine, runtime, on_admit=on_admit)
    assert stats.aborted == 1
    assert victim not in runtime.batch
    aborted = [r for r in engine.finished if r.request_id == victim]
    assert aborted[0].finish_reason == "abort"
    assert len(aborted[0].emitted_ids) < len(aborted[0].output_ids)
    for r in engine.finished:
        if r.request_id != victim:
            assert (got[r.request_id].reasoning, got[r.request_id].content) == expected(r)[:2]


async def test_cancelling_the_consumer_task() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime()
    stream = runtime.add(1, parser, tok.encode("<|im_start|>assistant\n"))
    with anyio.move_on_after(0.05):
        async for _chunk in stream:
            pass  # waits for chunks that never come; the scope cancels it
    assert runtime.take_aborted() == [1]
    runtime.step(np.array([1]), np.array([tok.encode("x")[0]]), np.array([0, 1]))
    assert 1 not in runtime.batch


class Exploding(reasonspan.ReasoningParser):
    """A parser whose stream() raises on one token, to test fault isolation."""

    spec = reasonspan.get_parser_class("minimax_m3").spec
    bomb: int = -1

    def stream(self, delta: Any, is_currently_reasoning: bool = True) -> Any:
        if self.bomb in list(delta):
            raise RuntimeError("boom")
        return super().stream(delta, is_currently_reasoning)


async def test_a_failing_parser_ends_its_request_alone() -> None:
    tok = tokenizer("qwen-3")  # <mm:think> is several tokens here: the per-request path
    Exploding.bomb = tok.encode(" the")[0]
    bad = Exploding.create(tok)
    good = reasonspan.create_parser_sync("minimax_m3", tok)
    pairs = [(bad, tok), (good, tok)]
    requests = workload(pairs, 12, seed=1, truncate_fraction=0.0)
    assert any(
        r.parser.name == "minimax_m3"
        and Exploding.bomb in r.output_ids
        and isinstance(r.parser, Exploding)
        for r in requests
    )
    engine = SimulatedEngine(requests, tokens_per_step=2)
    runtime = ReasoningRuntime()
    got: dict[int, Collected] = {}
    async with anyio.create_task_group() as tg:

        def on_admit(r: SimRequest, stream: RequestStream) -> None:
            got[r.request_id] = Collected()
            tg.start_soon(collect, stream, got[r.request_id])

        await drive(engine, runtime, on_admit=on_admit)
    failed = 0
    for r in engine.finished:
        c = got[r.request_id]
        if isinstance(r.parser, Exploding) and Exploding.bomb in r.emitted_ids:
            assert isinstance(c.error, RequestFailedError)
            assert "boom" in str(c.error)
            failed += 1
        else:
            assert c.error is None
            assert (c.reasoning, c.content) == expected(r)[:2]
    assert failed >= 1
    assert len(runtime.batch) == 0


async def test_thinking_budget_through_the_stream() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    requests = workload([(parser, tok)], 3, seed=2, truncate_fraction=0.0)
    engine = SimulatedEngine(requests, tokens_per_step=1)
    runtime = ReasoningRuntime()
    lead_in = " Time to answer."
    got: dict[int, Collected] = {}
    async with anyio.create_task_group() as tg:

        def on_admit(r: SimRequest, stream: RequestStream) -> None:
            got[r.request_id] = Collected()
            tg.start_soon(collect, stream, got[r.request_id])

        stats = await drive(
            engine,
            runtime,
            options=lambda r: {"thinking_token_budget": 16, "budget_lead_in": lead_in},
            on_admit=on_admit,
        )
    assert stats.budget_hits == 3
    n_lead = len(tok.encode(lead_in))
    for r in engine.finished:
        c = got[r.request_id]
        assert c.reasoning_tokens == 16 + n_lead
        assert c.reasoning.endswith("Time to answer.")
        assert c.content and c.finish_reason == "stop"
        assert (c.reasoning, c.content) == expected(r)[:2]


async def test_reasoning_content_alias_for_old_clients() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime(reasoning_content_alias=True)
    stream = runtime.add(7, parser, tok.encode("<|im_start|>assistant\n<think>\n"))
    ids = tok.encode("hm</think>ok")
    runtime.step(np.array([7]), np.array(ids), np.array([0, len(ids)]))
    runtime.finish(7)
    deltas = [c.choices[0].delta async for c in stream]
    text = "".join(d.reasoning or "" for d in deltas)
    assert text == "hm" == "".join(d.reasoning_content or "" for d in deltas)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc")
def test_memory_stays_flat_over_100k_requests() -> None:
    """100,000 short requests through the runtime: resident memory does not grow.

    RSS rather than tracemalloc: tracing every allocation makes this test 8x slower, and a
    leak of even 100 bytes per request would show as 9 MB over the measured 90,000."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime()
    prompt = tok.encode("<|im_start|>assistant\n")
    out = tok.encode("<think>a</think>b")
    n_out = len(out)
    rid = 0

    def wave(n: int) -> None:
        nonlocal rid
        batch = 500
        for _ in range(n // batch):
            ids = np.arange(rid, rid + batch)
            streams = [runtime.add(int(i), parser, prompt) for i in ids]
            for j in range(n_out):
                runtime.step(ids, np.full(batch, out[j]), np.arange(batch + 1))
            for i in ids:
                runtime.finish(int(i))
            del streams
            rid += batch
        runtime.step_ns.clear()

    wave(10_000)
    gc.collect()
    base = _rss_bytes()
    wave(90_000)
    gc.collect()
    grown = _rss_bytes() - base
    assert rid == 100_000
    assert len(runtime) == 0 and len(runtime.batch) == 0
    assert grown < 8 * 1024 * 1024, f"RSS grew by {grown / 1e6:.1f} MB over 90,000 requests"


async def test_include_reasoning_false_sends_no_reasoning_but_counts_it() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime()
    stream = runtime.add(3, parser, tok.encode("<|im_start|>assistant\n"), include_reasoning=False)
    ids = tok.encode("<think>secret plan</think>The answer.")
    for t in ids:
        runtime.step(np.array([3]), np.array([t]), np.array([0, 1]))
    runtime.finish(3)
    c = Collected()
    await collect(stream, c)
    assert (c.reasoning, c.content) == ("", "The answer.")
    assert c.reasoning_tokens == len(tok.encode("secret plan"))


CASES = [(f, k) for f in sorted(FAMILY_TOKENIZERS) for k in FAMILY_KWARGS.get(f, [{}])]
_case_parsers: dict[str, reasonspan.ReasoningParser] = {}


def case_parser(family: str, kwargs: dict[str, Any]) -> reasonspan.ReasoningParser:
    key = f"{family}-{sorted(kwargs.items())}"
    if key not in _case_parsers:
        tok = tokenizer(FAMILY_TOKENIZERS[family])
        _case_parsers[key] = reasonspan.create_parser_sync(family, tok, kwargs)
    parser = _case_parsers[key]
    parser.reset()
    return parser


def run_steps(
    runtime: ReasoningRuntime, stream: RequestStream, deltas: list[list[int]]
) -> list[ChatCompletionChunk]:
    """Step the request through ``deltas`` (one step each), finish it, return its chunks."""
    chunks: list[ChatCompletionChunk] = []
    for delta in deltas:
        runtime.step(np.array([stream.engine_id]), np.array(delta, np.int64), [0, len(delta)])
        chunks += stream.ready()
    runtime.finish(stream.request_id)
    return chunks + stream.ready()


def texts(chunks: list[ChatCompletionChunk]) -> tuple[str, str]:
    deltas = [c.choices[0].delta for c in chunks]
    return "".join(d.reasoning or "" for d in deltas), "".join(d.content or "" for d in deltas)


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_runtime_equals_parse_when_a_held_channel_ends_in_empty_text(
    family: str, kwargs: dict[str, Any], data: st.DataObject
) -> None:
    """Every family, any split into steps: an output ending in a channel whose text may be
    held (reasoning nemotron_v3 holds until it knows it is not the answer, a half marker),
    then tokens whose text is empty, streams parse()'s reasoning and content (the
    held reasoning was once dropped)."""
    parser = case_parser(family, kwargs)
    ids = data.draw(held_then_empty(parser), label="ids")
    deltas = data.draw(splits(ids), label="deltas")
    expected = parser.parse(ids)
    runtime = ReasoningRuntime()
    stream = runtime.add("r", case_parser(family, kwargs), None)
    chunks = run_steps(runtime, stream, deltas)
    assert texts(chunks) == (expected.reasoning or "", expected.content or "")
    # Inline citations (cohere) are sent as parse() gives them.
    assert [x for ch in chunks for x in ch.choices[0].delta.citations or []] == (expected.citations)
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens_details.reasoning_tokens == expected.reasoning_tokens


def test_nemotron_held_reasoning_survives_an_empty_last_token() -> None:
    """The reported case: reasoning closed, then ``<|im_end|>`` (no text), one token per
    step: the reasoning is sent as reasoning, as parse() and TextSplitter give it."""
    tok = tokenizer("qwen-3")
    thought = "Let me think."
    ids = tok.encode(f"<think>{thought}</think><|im_end|>")
    for kwargs in ({"enable_thinking": False}, {"force_nonempty_content": True}):
        parser = reasonspan.create_parser_sync("nemotron_v3", tok, kwargs)
        runtime = ReasoningRuntime()
        stream = runtime.add(1, parser, None)
        chunks = run_steps(runtime, stream, [[t] for t in ids])
        assert texts(chunks) == (thought, "")

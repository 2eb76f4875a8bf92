"""Log probabilities from the engine to each request's chunks (``runtime/stream/logprobs.py``).

Every token of an output gets a log probability of its own (``-(request * 10_000 + i) /
10**6`` for token ``i``), so an entry names the token it belongs to. The property: however
the outputs are cut into steps, and whatever else runs in the batch, the entries a
request's chunks carry, joined, are exactly those of the tokens ``parse()`` labels as its
answer (``content``: content, kept tool markers, tool-call messages) and as its reasoning
(``reasoning``), each once and in order; marker tokens are in neither. Tokenizers: the
families' own (``tests/support/fixtures.py``; gpt-oss's and Nemotron 3's are a real Qwen3
vocabulary with their special tokens added).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest

import reasonspan
from reasonspan.runtime.batch.errors import InvalidStepError, RequestFailedError
from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL, TOOL_CALL
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.consumer import RequestStream
from reasonspan.runtime.stream.logprobs import StepLogprobs
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.wire.openai import ChatCompletionChunk, CompletionBuilder
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>'


@dataclass
class Case:
    """One request: its family, prompt, output and options."""

    family: str
    output: str
    prompt: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None


CASES = {
    "qwen3": Case("qwen3", "<think>\nLet me see: 6 × 7.\n</think>\n\nIt is 42 😀."),
    "qwen3_tools": Case("qwen3", "<think>\nCall it.\n</think>\n\nChecking.\n" + CALL, tools=TOOLS),
    "qwen3_no_reasoning": Case(
        "qwen3", "<think>\nhidden\n</think>\n\nshown", options={"include_reasoning": False}
    ),
    "deepseek_r1": Case(
        "deepseek_r1",
        "First, 2 + 2.\n</think>\n\nThe answer is 4.",
        prompt="<｜User｜>2+2?<｜Assistant｜><think>\n",
    ),
    "gptoss": Case(
        "openai_gptoss",
        "<|channel|>analysis<|message|>Think it over.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Done: 7.<|return|>",
    ),
    # The call's opener ends the reasoning and stays in the answer (a TOOL marker).
    "qwen3_call_ends_reasoning": Case(
        "qwen3", "<think>\nI need the weather.\n" + CALL, tools=TOOLS
    ),
    # A harmony tool-call message (TOOL_CALL tokens).
    "gptoss_call": Case(
        "openai_gptoss",
        "<|channel|>analysis<|message|>Check.<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.get_weather <|constrain|>json<|message|>{"city": "Zürich"}<|call|>',
        tools=TOOLS,
    ),
    "minimax_m3": Case("minimax_m3", "<mm:think>Short thought.</mm:think>Answer here."),
    # Thinking off, reasoning only: Nemotron 3 presents it as the answer (the swap).
    "nemotron_swap": Case(
        "nemotron_v3",
        "Only this, no closing marker",
        prompt="<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n",
        options={"chat_template_kwargs": {"enable_thinking": False}},
    ),
}


def parser_of(family: str) -> ReasoningParser:
    return reasonspan.create_parser_sync(family, tokenizer(FAMILY_TOKENIZERS[family]))


def encoded(case: Case) -> tuple[ReasoningParser, list[int], list[int] | None]:
    tok = tokenizer(FAMILY_TOKENIZERS[case.family])
    parser = reasonspan.create_parser_sync(
        case.family, tok, case.options.get("chat_template_kwargs", {})
    )
    prompt = None if case.prompt is None else tok.encode(case.prompt)
    return parser, tok.encode(case.output), prompt


def value(request: int, i: int) -> float:
    return -(request * 10_000 + i) / 10**6


def expected(
    parser: ReasoningParser, ids: list[int], prompt: list[int] | None, case: Case, request: int
) -> tuple[list[float], list[float]]:
    """The values of the answer's tokens and of the reasoning's, as ``parse()`` labels them."""
    got = parser.parse(ids, prompt, tools=case.tools, finish_reason="stop")
    content = [
        value(request, i) for i, lab in enumerate(got.labels) if lab in (CONTENT, TOOL, TOOL_CALL)
    ]
    reasoning = [value(request, i) for i, lab in enumerate(got.labels) if lab == REASONING]
    if not case.options.get("include_reasoning", True):
        reasoning = []
    return content, reasoning


def run_batch(
    cases: list[Case], seed: int, top: int, buffer_size: int = 32, plain_beside: bool = True
) -> tuple[
    list[RequestStream],
    list[tuple[ReasoningParser, list[int], list[int] | None]],
    list[RequestStream],
]:
    """Every case as one request of one runtime (plus, beside them, the same outputs without
    log probabilities on the SSE path), cut into steps of 1 to 4 tokens at random."""
    rng = random.Random(seed)
    rt = ReasoningRuntime(buffer_size=buffer_size, argument_step=1)
    built = [encoded(c) for c in cases]
    streams = []
    plain = []
    for r, (case, (parser, _ids, prompt)) in enumerate(zip(cases, built, strict=True)):
        opts = {k: v for k, v in case.options.items() if k != "chat_template_kwargs"}
        streams.append(
            rt.add(r, parser, prompt, tools=case.tools, logprobs=top, stream_arguments=True, **opts)
        )
        if plain_beside:
            plain.append(rt.add(1000 + r, parser, prompt, tools=case.tools, sse=True, **opts))
    pos = [0] * len(cases)
    while any(p < len(b[1]) for p, b in zip(pos, built, strict=True)):
        rids: list[int] = []
        toks: list[int] = []
        offs = [0]
        values: list[float] = []
        for r, (_parser, ids, _prompt) in enumerate(built):
            if pos[r] >= len(ids):
                continue
            k = rng.randint(1, 4)
            piece = ids[pos[r] : pos[r] + k]
            for owner in (r, 1000 + r) if plain_beside else (r,):
                rids.append(owner)
                toks += piece
                offs.append(len(toks))
                values += [value(r, pos[r] + j) for j in range(len(piece))]
            pos[r] += len(piece)
        tarr = np.asarray(toks, dtype=np.int64)
        steps = np.arange(max(top, 1), dtype=np.int64)
        lp = StepLogprobs(
            np.asarray(values),
            (tarr[:, None] + steps[None, :]) % 1000,
            np.asarray(values)[:, None] - steps[None, :],
        )
        rt.step(rids, toks, offs, logprobs=lp)
        for r, (_parser, ids, _prompt) in enumerate(built):
            if pos[r] >= len(ids) and r in rt:
                rt.finish(r, "stop")
                if plain_beside:
                    rt.finish(1000 + r, "stop")
    return streams, built, plain


async def chunks_of(stream: RequestStream) -> list[ChatCompletionChunk]:
    return [c async for c in stream]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("top", [0, 3])
def test_each_token_is_reported_once_in_its_list_at_any_split(seed: int, top: int) -> None:
    cases = list(CASES.values())
    streams, built, plain = run_batch(cases, seed, top)

    async def read() -> None:
        for r, (case, stream) in enumerate(zip(cases, streams, strict=True)):
            parser, ids, prompt = built[r]
            chunks = await chunks_of(stream)
            content: list[float] = []
            reasoning: list[float] = []
            builder = CompletionBuilder()
            for chunk in chunks:
                builder.add(chunk)
                lp = chunk.choices[0].logprobs
                if lp is msgspec.UNSET:
                    continue
                for entry in lp.content or []:
                    content.append(entry.logprob)
                    assert len(entry.top_logprobs) == top
                for entry in lp.reasoning or []:
                    reasoning.append(entry.logprob)
            want_c, want_r = expected(parser, ids, prompt, case, r)
            assert (content, reasoning) == (want_c, want_r), case
            whole = builder.build().choices[0].logprobs
            assert [e.logprob for e in whole.content or []] == want_c
            assert [e.logprob for e in whole.reasoning or []] == want_r
            # The requests beside them (no log probabilities, SSE path) are unaffected.
            events = [e async for e in plain[r].sse_events()]
            bodies = [json.loads(e[6:]) for e in events if e.startswith(b"data: {")]
            assert all("logprobs" not in b["choices"][0] for b in bodies if b["choices"])
            text = "".join(
                b["choices"][0]["delta"].get("content") or "" for b in bodies if b["choices"]
            )
            assert text == (
                parser.parse(ids, prompt, tools=case.tools, finish_reason="stop").content or ""
            )

    anyio.run(read)


def test_an_entry_names_its_token_and_the_likeliest_tokens() -> None:
    """``token`` is the token's text, ``bytes`` its bytes; the likeliest tokens are the
    engine's, in its order (here: the sampled token, then the ids after it)."""
    case = CASES["qwen3"]
    streams, built, _ = run_batch([case], seed=1, top=2, plain_beside=False)
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    _parser, ids, _prompt = built[0]
    completion = anyio.run(streams[0].collect)
    lp = completion.choices[0].logprobs
    by_value = {value(0, i): t for i, t in enumerate(ids)}
    entries = list(lp.content or []) + list(lp.reasoning or [])
    assert entries
    for e in entries:
        t = by_value[e.logprob]
        data = tok.token_bytes[t]
        assert e.bytes == list(data)
        assert e.token == data.decode("utf-8", "replace")
        assert [x.bytes for x in e.top_logprobs] == [
            list(tok.token_bytes[t % 1000]),
            list(tok.token_bytes[(t + 1) % 1000]),
        ]
        assert [x.logprob for x in e.top_logprobs] == [e.logprob, e.logprob - 1]
    # "😀" is several tokens of this vocabulary: the entries of its pieces have no text of
    # their own, their bytes join into the character.
    joined = b"".join(bytes(e.bytes) for e in lp.content or [])
    assert joined.decode("utf-8").endswith("It is 42 😀.")


def test_a_slow_reader_gets_every_entry_in_merged_chunks() -> None:
    """Past ``buffer_size`` undelivered chunks, new deltas merge into the last one; so do
    their entries."""
    cases = [CASES["qwen3"], CASES["deepseek_r1"]]
    streams, built, _ = run_batch(cases, seed=3, top=1, buffer_size=1, plain_beside=False)
    for r, stream in enumerate(streams):
        parser, ids, prompt = built[r]
        completion = anyio.run(stream.collect)
        lp = completion.choices[0].logprobs
        want_c, want_r = expected(parser, ids, prompt, cases[r], r)
        assert [e.logprob for e in lp.content or []] == want_c
        assert [e.logprob for e in lp.reasoning or []] == want_r


def test_a_request_without_logprobs_gets_none() -> None:
    parser, ids, _ = encoded(CASES["qwen3"])
    rt = ReasoningRuntime()
    stream = rt.add(1, parser, None)
    rt.step([1], ids, [0, len(ids)], logprobs=StepLogprobs(np.zeros(len(ids))))
    rt.finish(1)
    completion = anyio.run(stream.collect)
    assert completion.choices[0].message.content == "It is 42 😀."
    assert b"logprobs" not in reasonspan.runtime.wire.openai.encode(completion)


def test_step_logprobs_that_do_not_fit_the_step_raise_before_anything_changes() -> None:
    parser, ids, _ = encoded(CASES["qwen3"])
    rt = ReasoningRuntime()
    stream = rt.add(1, parser, None, logprobs=0)
    with pytest.raises(
        InvalidStepError, match=r"logprobs.logprobs has shape \(2,\): expected \(1,\)"
    ):
        rt.step([1], ids[:1], [0, 1], logprobs=StepLogprobs(np.zeros(2)))
    with pytest.raises(InvalidStepError, match=r"top_ids and logprobs\.top_logprobs go together"):
        rt.step([1], ids[:1], [0, 1], logprobs=StepLogprobs(np.zeros(1), top_ids=np.zeros((1, 1))))
    for i, t in enumerate(ids):  # the request is as it was: the whole output reads right
        rt.step([1], [t], [0, 1], logprobs=StepLogprobs(np.array([value(0, i)])))
    rt.finish(1)
    completion = anyio.run(stream.collect)
    assert completion.choices[0].message.content == "It is 42 😀."
    assert completion.choices[0].logprobs is not None


def test_wrong_entries_fail_that_request_alone() -> None:
    """A top id outside the vocabulary, or a step without log probabilities for a request
    that asked for them: that request ends with an error naming it, the others go on."""
    parser, ids, _ = encoded(CASES["qwen3"])
    rt = ReasoningRuntime()
    bad_top = rt.add(1, parser, None, logprobs=1)
    missing = rt.add(2, parser, None, logprobs=0)
    fine = rt.add(3, parser, None, logprobs=1)
    vocab = len(parser.tokenizer.token_bytes)
    rt.step(
        [1, 3],
        ids[:2],
        [0, 1, 2],
        logprobs=StepLogprobs(np.zeros(2), np.array([[vocab + 5], [ids[1]]]), np.zeros((2, 1))),
    )
    rt.step([2], ids[:1], [0, 1])  # no logprobs handed over
    for t in ids[1:]:
        rt.step(
            [3], [t], [0, 1], logprobs=StepLogprobs(np.zeros(1), np.array([[t]]), np.zeros((1, 1)))
        )
    rt.finish(3)
    with pytest.raises(RequestFailedError, match=f"token id {vocab + 5} is not in the vocabulary"):
        anyio.run(bad_top.collect)
    with pytest.raises(RequestFailedError, match="log probabilities for 0 of 1 tokens"):
        anyio.run(missing.collect)
    completion = anyio.run(fine.collect)
    assert completion.choices[0].message.content == "It is 42 😀."


@pytest.mark.parametrize("bad", [21, -1, True, 1.5, "3"])
def test_add_refuses_a_top_count_outside_0_to_20(bad: object) -> None:
    rt = ReasoningRuntime()
    with pytest.raises(InvalidOptionError, match="'logprobs'"):
        rt.add(1, parser_of("qwen3"), None, logprobs=bad)  # type: ignore[arg-type]
    assert 1 not in rt

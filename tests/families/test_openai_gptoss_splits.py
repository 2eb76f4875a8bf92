"""openai_gptoss (harmony): odd headers give the same labels, reasoning, content and tool calls
through ``parse()``, ``TextSplitter`` and the runtime (chunks and SSE bytes), however the
output is split into deltas.

The two outputs below once differed because the readers of tool-call messages took "the
reader is busy" (inside a header *or* a call's arguments) for "the last call is still open",
and busy-ness at the end depended on where the deltas were cut: a call closed by ``<|call|>``
or by the next header was dropped as cut short when a later header was still being read.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import TextSplitter
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.wire.openai import ChatCompletionChunk
from reasonspan.runtime.wire.sse import chunk_of_event
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.sampling import examples

TOK = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])
PARSER = reasonspan.create_parser_sync("openai_gptoss", TOK)

Calls = list[tuple[str, str]]
Answer = tuple[str, str, Calls]
"""(reasoning, content, calls as (name, arguments)) of one path."""

# Two outputs that once split differently by path, with the calls every path must give.
SPLIT_CASES = [
    # A call ended by <|call|>, then a header cut short by the end of the output: parse()
    # dropped the call (its arguments are not JSON and the reader was "busy").
    (" to=functions.get<|message|> The<|call|><|channel|> to=", [("get", " The")]),
    # A call ended by the next header (a tool message with an empty recipient, no function),
    # whose body the reader took for header text: one token at a time gave the call, one
    # feed dropped it.
    (" to=functions.f<|message|><|im_end|><|channel|> to=<|message|>x", [("f", "<|im_end|>")]),
]


def compositions(n: int) -> list[list[int]]:
    """Every way to cut ``n`` tokens into non-empty consecutive deltas, as cut points."""
    return [list(cuts) for r in range(n) for cuts in itertools.combinations(range(1, n), r)]


def cut(ids: list[int], cuts: list[int]) -> list[list[int]]:
    bounds = [0, *cuts, len(ids)]
    return [ids[a:b] for a, b in itertools.pairwise(bounds)]


def parsed(ids: list[int], prompt: list[int] | None = None) -> tuple[Answer, bytes]:
    r = PARSER.parse(ids, prompt_token_ids=prompt)
    calls = [(c.name, c.arguments) for c in r.tool_calls]
    return (r.reasoning or "", r.content or "", calls), bytes(r.labels)


def split_text(deltas: list[list[int]], prompt: list[int] | None = None) -> Answer:
    s = TextSplitter(PARSER, prompt)
    reasoning = content = ""
    calls: Calls = []
    for d in deltas:
        r, c = s.feed(d)
        reasoning, content = reasoning + r, content + c
        calls += [(x.name, x.arguments) for x in s.take_tool_calls()]
    r, c = s.finish()
    calls += [(x.name, x.arguments) for x in s.take_tool_calls()]
    return reasoning + r, content + c, calls


def streamed_labels(deltas: list[list[int]], prompt: list[int] | None = None) -> bytes:
    PARSER.reset()
    state = PARSER.is_prompt_in_reasoning(prompt) if prompt is not None else False
    labels = b""
    for d in deltas:
        got = PARSER.stream(d, state)
        state = got.is_still_reasoning
        labels += got.labels
    return labels + PARSER.finish(state).labels


def answer_of(chunks: list[ChatCompletionChunk]) -> Answer:
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    calls = [
        (t.function.name or "", t.function.arguments or "")
        for d in deltas
        for t in d.tool_calls or ()
        if t.function is not None
    ]
    return (
        "".join(d.reasoning or "" for d in deltas),
        "".join(d.content or "" for d in deltas),
        calls,
    )


def _step(runtime: ReasoningRuntime, rows: list[tuple[RequestStream, list[int]]]) -> None:
    rids = np.array([s.engine_id for s, _ in rows], np.int64)
    toks = np.array([t for _, d in rows for t in d], np.int64)
    offs = np.cumsum([0] + [len(d) for _, d in rows])
    runtime.step(rids, toks, offs)


def run_runtime(deltas: list[list[int]], prompt: list[int] | None = None) -> list[Answer]:
    """The runtime's answers for one split: a request read as chunks and one read as SSE
    bytes stepped together, and an SSE request alone in its runtime (its own lane)."""
    together, alone = ReasoningRuntime(), ReasoningRuntime()
    opts: dict[str, Any] = {"completion_id": "c"}
    obj = together.add("obj", PARSER, prompt, **opts)
    sse = together.add("sse", PARSER, prompt, sse=True, **opts)
    lone = alone.add("lone", PARSER, prompt, sse=True, **opts)
    chunks: list[ChatCompletionChunk] = []
    events: dict[str, list[bytes]] = {"sse": [], "lone": []}

    def drain() -> None:
        chunks.extend(obj.ready())
        events["sse"] += sse.ready_events()
        events["lone"] += lone.ready_events()

    for d in deltas:
        if d:
            _step(together, [(obj, d), (sse, d)])
            _step(alone, [(lone, d)])
        drain()
    together.finish("obj")
    together.finish("sse")
    alone.finish("lone")
    drain()
    answers = [answer_of(chunks)]
    for blobs in events.values():
        parts = [p for blob in blobs for p in blob.split(b"\n\n") if p]
        answers.append(
            answer_of([chunk_of_event(p + b"\n\n") for p in parts if p != b"data: [DONE]"])
        )
    return answers


@pytest.mark.parametrize(("text", "calls"), SPLIT_CASES, ids=["after-call", "after-header"])
def test_issue_outputs_give_one_answer_under_every_split(text: str, calls: Calls) -> None:
    """Every cut of the output into deltas (all 2^(n-1) of them) gives parse()'s labels,
    text and calls through the parser's stream, TextSplitter and the runtime's chunks and
    SSE bytes (beside a chunk twin, and alone)."""
    ids = TOK.encode(text)
    want, labels = parsed(ids)
    assert want == ("", "", calls)
    for cuts in compositions(len(ids)):
        deltas = cut(ids, cuts)
        assert streamed_labels(deltas) == labels, cuts
        assert split_text(deltas) == want, cuts
    # The runtime: one token at a time, whole, and every cut into two or three steps.
    few = [c for c in compositions(len(ids)) if len(c) <= 2] + [list(range(1, len(ids)))]
    for cuts in few:
        for got in run_runtime(cut(ids, cuts)):
            assert got == want, cuts


def test_a_call_closed_by_a_header_is_kept_even_when_its_arguments_are_not_json() -> None:
    """The policy both outputs hang on, stated alone: a call whose message was ended
    (by its terminator or the next header) is complete whatever its arguments; only a call
    the end of the output cuts inside its arguments must read as JSON to count."""
    for text, want in [
        (" to=functions.f<|message|>oops<|call|>", [("f", "oops")]),
        (" to=functions.f<|message|>oops<|start|>assistant<|channel|>final", [("f", "oops")]),
        (" to=functions.f<|message|>oops", []),
        (' to=functions.f<|message|>{"a": 1}', [("f", '{"a": 1}')]),
        # A built-in tool's body (no function) is nobody's arguments, nor a header.
        (" to=python<|message|>x to=functions.g<|call|>", []),
        # ... and never read as the next header's: that header calls g, not evil.
        (
            " to=python<|message|> to=functions.evil<|channel|>commentary to=functions.g"
            "<|message|>{}<|call|>",
            [("g", "{}")],
        ),
    ]:
        ids = TOK.encode(text)
        assert parsed(ids)[0][2] == want, text
        assert split_text([ids])[2] == want, text
        assert split_text([[t] for t in ids])[2] == want, text


# The vocabulary of the property test: pieces of headers, alone and odd, with plain words and
# tokens of the vocabulary that are special but not harmony's (<|im_end|>, <|endoftext|>).
HEADER_PIECES = (
    " to=",
    " to",
    "=",
    "to=",
    "functions.x",
    "functions.",
    ".get",
    " to=functions.f",
    " to=functions.get_weather",
    " to=python",
    "<|channel|>",
    "<|start|>",
    "<|constrain|>",
    "<|im_end|>",
    "<|im_start|>",
    "assistant",
    "user",
    "analysis",
    "analy",
    "sis",
    "final",
    "commentary",
    " json",
    "json",
)
BODY_PIECES = (
    " The",
    " answer",
    "x",
    '{"a": 1}',
    "{",
    "}",
    " ",
    "\n",
    "<|im_end|>",
    "<|endoftext|>",
    "<|message|>",
    "<|constrain|>",
    " to=functions.f",
)
RECIPIENTS = (" to=functions.f", " to=", "<|channel|> to=", " to=python", " to=user")
ENDS = ("<|end|>", "<|call|>", "<|return|>", "<|start|>", "<|channel|>", "")
PIECES = HEADER_PIECES + BODY_PIECES + ENDS[:-1] + ("<|message|>",)

PROMPTS: list[list[int] | None] = [
    None,
    TOK.encode("<|start|>user<|message|>Hi<|end|><|start|>assistant"),
    TOK.encode("<|start|>assistant<|channel|>analysis<|message|>"),
    TOK.encode("<|start|>assistant<|channel|>final<|message|>"),
    TOK.encode("<|start|>assistant to=functions.f<|channel|>commentary"),
]


@st.composite
def harmony_outputs(draw: st.DrawFn) -> list[int]:
    """Pieces of the vocabulary, drawn loose or as messages (header pieces, mostly a
    ``<|message|>``, body pieces, an end or none); each piece encoded alone or all encoded
    together (then BPE merges neighbours: ``=functions``, `` json``)."""
    if draw(st.booleans()):
        pieces = draw(st.lists(st.sampled_from(PIECES), max_size=20))
    else:
        pieces = []
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.booleans()):
                pieces.append(draw(st.sampled_from(RECIPIENTS)))
            pieces += draw(st.lists(st.sampled_from(HEADER_PIECES), max_size=3))
            if draw(st.integers(0, 4)):
                pieces.append("<|message|>")
            pieces += draw(st.lists(st.sampled_from(BODY_PIECES), max_size=3))
            pieces.append(draw(st.sampled_from(ENDS)))
    if draw(st.booleans()):
        return TOK.encode("".join(pieces))
    return [t for p in pieces for t in TOK.encode(p)]


@settings(
    max_examples=examples(2000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ids=harmony_outputs(),
    prompt=st.sampled_from(range(len(PROMPTS))),
    data=st.data(),
)
def test_odd_headers_give_one_answer_under_any_split(
    ids: list[int], prompt: int, data: st.DataObject
) -> None:
    """parse() == the stream's labels == TextSplitter at every cut point, one token at a
    time and a drawn split (calls, reasoning, content); the runtime's chunks and SSE bytes
    give the same for a drawn split. Run locally under ``--long`` with
    ``--hypothesis-seed`` 1 to 10: 20,000 examples, no failure; the CI sample (500) finds the
    old defect (the reader's busy-ness taken for an open call) in every run tried."""
    start = PROMPTS[prompt]
    want, labels = parsed(ids, start)
    one = [[t] for t in ids]
    assert streamed_labels(one, start) == labels
    assert split_text(one, start) == want
    for at in range(len(ids) + 1):
        assert split_text([ids[:at], ids[at:]], start) == want, at
    cuts = data.draw(st.lists(st.integers(1, max(1, len(ids) - 1)), unique=True, max_size=6))
    deltas = cut(ids, sorted(c for c in cuts if c < len(ids)))
    assert streamed_labels(deltas, start) == labels
    assert split_text(deltas, start) == want
    for got in run_runtime(deltas, start):
        assert got == want

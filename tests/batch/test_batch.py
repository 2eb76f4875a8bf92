"""The batch runtime against the per-request parser, on real tokenizers.

- Interleaving: requests of every family (vectorized and per-request paths mixed in one
  batch) admitted, stepped with 0..k tokens, finished, truncated and cancelled at random
  steps give, step by step, exactly what each request's own ``stream()`` gives, and in
  the end exactly ``parse()`` of its output with its prompt.
- Thinking budgets: exact count, lead-in, end marker, then content; a natural end cancels.
- Grammar gating flips at the token after the end of reasoning.
- Bad input raises before any state changes; a failing parser fails its request alone.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label, ReasoningBatch, ReasoningParser
from reasonspan.architectures.minimax import MiniMaxM3Parser
from reasonspan.architectures.qwen3 import Qwen3Parser
from reasonspan.runtime import (
    FAILED,
    HELD,
    BatchTokenError,
    DuplicateRequestError,
    InvalidOptionError,
    InvalidStepError,
    RequestFailedError,
    RequestFinishedError,
    UnknownRequestError,
)
from reasonspan.runtime.batch import tables as batch_tables
from reasonspan.runtime.core.machine import HOLD, Cursor, Machine, Spill
from reasonspan.tokenizer import LoadedTokenizer
from tests.support.fixtures import FAMILY_KWARGS, FAMILY_TOKENIZERS, tokenizer
from tests.support.sampling import examples
from tests.support.strategies import FILLER, marker_texts, outputs

R, C, D, T = (int(x) for x in (Label.REASONING, Label.CONTENT, Label.DELIMITER, Label.TOOL))

# Every family on its fixture tokenizer with each kwargs variant, plus text markers that
# are several tokens (minimax_m3 outside its own vocabulary): the per-request path.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    (family, FAMILY_TOKENIZERS[family], kwargs)
    for family in sorted(FAMILY_TOKENIZERS)
    for kwargs in FAMILY_KWARGS.get(family, [{}])
] + [
    ("minimax_m3", "minimax", {}),
    ("minimax_m3", "minimax", {"thinking_mode": "enabled"}),
]

MIX_COUNT = 4


def _mixes(
    cases: list[tuple[str, str, dict[str, Any]]], count: int
) -> list[list[tuple[str, str, dict[str, Any]]]]:
    """``cases`` in ``count`` mixes, every case of one fixture tokenizer in the same mix and
    the tokenizers dealt in turn (so each mix holds families of every kind). A test that
    puts many families in one batch runs once per mix: it holds a quarter of the ~42
    tokenizers at a time, not all of them (2-3 GB), and tests/conftest.py runs each mix's
    tests together, so each tokenizer is loaded once for all of them."""
    names = sorted({tok for _, tok, _ in cases})
    return [[c for c in cases if names.index(c[1]) % count == k] for k in range(count)]


MIXES = _mixes(CASES, MIX_COUNT)


def test_the_mixes_share_out_the_cases() -> None:
    """Every case is in exactly one mix, a fixture tokenizer's cases all in the same one, and
    each mix puts several tokenizers (and both kinds of lane) in one batch."""
    assert sorted(map(case_key, (c for mix in MIXES for c in mix))) == sorted(map(case_key, CASES))
    owner = {tok: k for k, mix in enumerate(MIXES) for _, tok, _ in mix}
    assert all(owner[tok] == k for k, mix in enumerate(MIXES) for _, tok, _ in mix)
    for mix in MIXES:
        assert len({tok for _, tok, _ in mix}) >= 8
        assert {case_key(c) in HOLD_BACK for c in mix} == {True, False}


@cache
def _parser(family: str, tok: str, kwargs_key: tuple[tuple[str, Any], ...]) -> ReasoningParser:
    return reasonspan.create_parser_sync(family, tokenizer(tok), dict(kwargs_key))


def parser(family: str, tok: str, kwargs: Mapping[str, Any] | None = None) -> ReasoningParser:
    return _parser(family, tok, tuple(sorted((kwargs or {}).items())))


def fresh(p: ReasoningParser) -> ReasoningParser:
    """An independent per-request parser (the reference the batch is compared with)."""
    return type(p).create(p.tokenizer, p.chat_template_kwargs)


def one(batch: ReasoningBatch, steps: list[tuple[int, list[int]]]) -> list[Any]:
    """Step one token list per (request id, tokens) pair, one step each."""
    out = []
    for rid, toks in steps:
        out.append(batch.step(np.array([rid]), np.array(toks, np.int64), np.array([0, len(toks)])))
    return out


# ---------------------------------------------------------------------------- interleaving


@dataclass
class Req:
    rid: int
    template: ReasoningParser
    prompt: list[int]
    output: list[int]
    include: bool = True
    structured: bool = False
    budget: int | None = None
    pos: int = 0
    ref: ReasoningParser | None = None
    state: bool = False
    held: int = 0
    reasoning: int = 0
    ids: list[int] = field(default_factory=list)
    labels: bytearray = field(default_factory=bytearray)
    spill: list[tuple[int, bytes, int, int]] = field(default_factory=list)


def step_active(
    batch: ReasoningBatch, active: list[Any], rng: random.Random, kmax: int
) -> tuple[list[list[int]], np.ndarray[Any, Any], Any]:
    """One batch step of the active requests (anything with ``rid``, ``output``, ``pos``)
    in a shuffled order, each with its next 0 to ``kmax`` tokens: ``(chunks, offsets,
    result)``."""
    rng.shuffle(active)
    chunks = []
    for r in active:
        k = min(rng.choice([0, *range(1, kmax + 1)]), len(r.output) - r.pos)
        chunks.append(r.output[r.pos : r.pos + k])
        r.pos += k
    offsets = np.cumsum([0, *(len(c) for c in chunks)])
    flat = [t for c in chunks for t in c]
    res = batch.step(np.array([r.rid for r in active], np.int64), np.array(flat, np.int64), offsets)
    return chunks, offsets, res


def simulate(reqs: list[Req], admit: list[int], rng: random.Random, kmax: int) -> int:
    """Run the requests through one batch; check every step against each request's own
    parser and every finished request against parse(). Returns the number of steps."""
    batch = ReasoningBatch(capacity=4)
    pending = sorted(range(len(reqs)), key=lambda i: admit[i])
    active: list[Req] = []
    checked = 0
    step = 0
    while pending or active:
        while pending and admit[pending[0]] <= step:
            r = reqs[pending.pop(0)]
            batch.add(
                r.rid,
                r.template,
                r.prompt,
                include_reasoning=r.include,
                structured_output=r.structured,
                thinking_token_budget=r.budget,
                budget_lead_in="Time to answer." if r.budget is not None else None,
            )
            r.ref = fresh(r.template)
            r.state = r.ref.is_prompt_in_reasoning(r.prompt)
            assert batch.is_reasoning(r.rid) == r.state
            assert batch.grammar_active(r.rid) == (r.structured and not r.state)
            active.append(r)
        chunks, offsets, res = step_active(batch, active, rng, kmax)
        assert not res.errors
        for row, (r, chunk) in enumerate(zip(active, chunks, strict=True)):
            _check_step(res, row, r, chunk, int(offsets[row]))
        step += 1
        for r in list(active):
            u = rng.random()
            if (r.pos == len(r.output) and u < 0.6) or u < 0.03:
                _check_finish(batch, r)
                batch.remove(r.rid)
                active.remove(r)
                checked += 1
            elif u > 0.99:  # cancelled: removed without finish()
                batch.remove(r.rid)
                active.remove(r)
                assert r.rid not in batch
    assert len(batch) == 0
    return checked


def _check_step(res: Any, row: int, r: Req, chunk: list[int], a: int) -> None:
    assert r.ref is not None
    ids: list[int] = []
    labels = bytearray()
    spill: list[tuple[int, bytes, int, int]] = []
    before: list[bool] = []
    held_before = r.held
    for t in chunk:  # token by token: stream() gives the same for any split
        before.append(r.state)
        d = r.ref.stream([t], r.state)
        spill += [(len(ids) + i, *rest) for i, *rest in d.spill]
        r.spill += [(len(r.ids) + len(ids) + i, *rest) for i, *rest in d.spill]
        ids += d.token_ids
        labels += d.labels
        r.state = d.is_still_reasoning
        r.held = d.held_token_count
    r.reasoning += labels.count(R)
    r.ids += ids
    r.labels += labels
    assert res.decided(r.rid) == (ids, bytes(labels))
    assert list(res.spill(r.rid)) == spill
    assert bool(res.is_reasoning[row]) == r.state
    assert int(res.held_tokens[row]) == r.held
    assert int(res.reasoning_tokens[row]) == r.reasoning
    own = labels[held_before:]
    expect = bytes(own) + bytes([HELD]) * (len(chunk) - len(own))
    assert res.labels[a : a + len(chunk)].tobytes() == expect
    assert bool(res.grammar_active[row]) == (r.structured and not r.state)
    assert res.grammar_mask[a : a + len(chunk)].tolist() == [r.structured and not b for b in before]
    reasoning_ids = [t for t, lab in zip(ids, labels, strict=True) if lab == R]
    content_ids = [t for t, lab in zip(ids, labels, strict=True) if lab in (C, T)]
    assert res.split(r.rid) == (reasoning_ids if r.include else [], content_ids)
    if r.budget is None:
        assert not res.forcing[row]
        assert res.forced_token_ids(r.rid) == []
        assert int(res.budget_remaining[row]) == -1
        return
    assert int(res.budget_remaining[row]) == max(r.budget - r.reasoning, 0)
    forced = res.forced_token_ids(r.rid)
    assert bool(res.forcing[row]) == bool(forced)
    if r.state and r.reasoning >= r.budget:
        assert forced
    if forced:
        assert r.state
        whole = r.template.tokenizer.encode("Time to answer.") + r.template.end_marker_token_ids()
        assert whole[len(whole) - len(forced) :] == forced
        assert int(res.next_forced_token[row]) == forced[0]
    else:
        assert int(res.next_forced_token[row]) == -1


def _check_finish(batch: ReasoningBatch, r: Req) -> None:
    assert r.ref is not None
    fin = batch.finish(r.rid)
    tail = r.ref.finish(r.state)
    assert fin.token_ids == tail.token_ids
    assert fin.reasoning_as_content == tail.reasoning_as_content
    labels = tail.labels
    if fin.reasoning_as_content:
        labels = labels.replace(bytes([R]), bytes([C]))
    assert fin.labels == labels
    tail_spill = list(tail.spill)
    if fin.reasoning_as_content:
        tail_spill = [(i, b, C, a) for i, b, _, a in tail_spill]
    assert list(fin.spill) == tail_spill
    expected = r.template.parse(r.output[: r.pos], r.prompt)
    streamed_ids = r.ids + tail.token_ids
    streamed = bytes(r.labels) + tail.labels
    if fin.reasoning_as_content:
        streamed = streamed.replace(bytes([R]), bytes([C]))
    assert streamed_ids == expected.token_ids
    assert streamed == expected.labels
    assert fin.reasoning_as_content == expected.reasoning_as_content
    whole_spill = r.spill + [(len(r.ids) + i, *rest) for i, *rest in fin.spill]
    if fin.reasoning_as_content:
        whole_spill = [(i, b, C, a) for i, b, _, a in whole_spill]
    assert whole_spill == list(expected.spill)
    u = fin.usage
    assert u.completion_tokens == r.pos
    assert u.held_tokens == 0
    assert u.reasoning_tokens == expected.reasoning_tokens
    assert u.delimiter_tokens == expected.delimiter_tokens
    # Tool-call messages (TOOL_CALL) are completion, not reasoning: usage counts them with
    # the content.
    assert u.content_tokens == len(expected.content_token_ids) + len(expected.tool_call_token_ids)
    assert u.reasoning_ended == expected.reasoning_ended
    assert fin.reasoning_ended == expected.reasoning_ended
    tail_r = [t for t, lab in zip(fin.token_ids, fin.labels, strict=True) if lab == R]
    tail_c = [t for t, lab in zip(fin.token_ids, fin.labels, strict=True) if lab in (C, T)]
    reasoning, content = fin
    assert (reasoning, content) == (tail_r if r.include else [], tail_c)


@st.composite
def requests(
    draw: st.DrawFn, cases: list[tuple[str, str, dict[str, Any]]]
) -> tuple[list[Req], list[int]]:
    n = draw(st.integers(1, 24), label="requests")
    reqs: list[Req] = []
    admit: list[int] = []
    for i in range(n):
        family, tok, kwargs = draw(st.sampled_from(cases), label="case")
        p = parser(family, tok, kwargs)
        reqs.append(
            Req(
                rid=i * 7919 - 50_000,
                template=p,
                prompt=draw(outputs(p), label="prompt"),
                output=draw(outputs(p), label="output"),
                include=draw(st.booleans(), label="include_reasoning"),
                structured=draw(st.booleans(), label="structured_output"),
                budget=draw(st.none() | st.integers(0, 8), label="budget"),
            )
        )
        admit.append(draw(st.integers(0, 6), label="admit step"))
    return reqs, admit


@pytest.mark.parametrize("mix", range(MIX_COUNT))
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), kmax=st.integers(1, 4))
def test_random_batches_equal_each_request_alone(
    mix: int, data: st.DataObject, seed: int, kmax: int
) -> None:
    reqs, admit = data.draw(requests(MIXES[mix]), label="batch")
    simulate(reqs, admit, random.Random(seed), kmax)


def random_output(rng: random.Random, p: ReasoningParser, pieces: int) -> list[int]:
    """Marker-rich token ids, as strategies.outputs draws them, from a seeded generator."""
    tok = p.tokenizer
    markers = marker_texts(p)
    ids: list[int] = []
    text = ""
    for _ in range(pieces):
        u = rng.random()
        if u < 0.15:
            if text:
                ids += tok.encode(text)
                text = ""
            ids.append(rng.randrange(tok.vocab_size))
        else:
            text += rng.choice(markers) if (u < 0.4 and markers) else rng.choice(FILLER)
    if text:
        ids += tok.encode(text)
    return ids


@pytest.mark.parametrize("mix", range(MIX_COUNT))
@pytest.mark.parametrize("seed", [0, 1])
def test_hundreds_of_requests_interleaved(seed: int, mix: int) -> None:
    rng = random.Random(seed * MIX_COUNT + mix)
    reqs: list[Req] = []
    admit: list[int] = []
    for i in range(300):
        p = parser(*rng.choice(MIXES[mix]))
        reqs.append(
            Req(
                rid=rng.randrange(-(2**40), 2**40) * 1000 + i,
                template=p,
                prompt=random_output(rng, p, rng.randrange(0, 12)),
                output=random_output(rng, p, rng.randrange(0, 40)),
                include=rng.random() < 0.8,
                structured=rng.random() < 0.3,
                budget=rng.choice([None, None, 0, 3, 20]),
            )
        )
        admit.append(rng.randrange(0, 60))
    checked = simulate(reqs, admit, rng, kmax=4)
    assert checked > 250  # most finish (some are cancelled)


def test_single_token_families_take_the_vectorized_path() -> None:
    """Otherwise the identity tests above would say nothing about the vectorized path."""
    batch = ReasoningBatch()
    batch.add(1, parser("qwen3", "qwen-3"), [])
    batch.add(2, parser("deepseek_v3", "deepseek-v3.1"), [])  # thinking off: no lead rule
    batch.add(3, parser("minimax_m3", "minimax"), [])  # text markers: held back
    batch.add(4, parser("openai_gptoss", FAMILY_TOKENIZERS["openai_gptoss"]), [])  # custom
    batch.add(5, parser("deepseek_r1", "deepseek-r1"), [])  # lead rule: starts aside
    assert [batch.is_vectorized(r) for r in (1, 2, 3, 4, 5)] == [True, True, False, False, False]


def count_batch_stream_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The tokens of each ``stream()`` call the batch makes (from ``step_fallback``),
    appended as they happen; other callers of ``stream()`` are not counted."""
    calls: list[int] = []
    original = ReasoningParser.stream

    def counting(self: ReasoningParser, delta: Any, reasoning: bool = True) -> Any:
        if sys._getframe(1).f_code.co_name == "step_fallback":
            calls.append(len(delta))
        return original(self, delta, reasoning)

    monkeypatch.setattr(ReasoningParser, "stream", counting)
    return calls


LEAD_CASES = [
    # (family, tokenizer, kwargs, the output's first text: what the lead rule decides)
    ("deepseek_r1", "deepseek-r1", {}, "\n \n<think>"),  # blank run dropped with the start
    ("deepseek_r1", "deepseek-r1", {}, "\n\nOkay"),  # blank run kept: other text came
    ("minimax_m3", "minimax-m3", {}, "</mm:think>"),  # a leading stray closer is dropped
    ("minimax_m3", "minimax-m3", {}, "Hi"),
]


@pytest.mark.parametrize("kmax", [1, 3])
@pytest.mark.parametrize(("family", "tok", "kwargs", "lead"), LEAD_CASES)
def test_lead_rule_families_go_by_table_once_their_output_started(
    family: str,
    tok: str,
    kwargs: dict[str, Any],
    lead: str,
    kmax: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A family with a rule for the output's first tokens (``end_in_content=
    "drop_leading"``, ``blank_before_start="drop"``) starts each request aside: its own
    stream() decides the start, then the table routes the rest. Every step equals the
    request's own stream() and the finished request parse() (simulate checks both), and
    stream() sees only the tokens of the start."""
    p = parser(family, tok, kwargs)
    assert p.machine.has_lead and not p.machine.vectorizable
    batch_calls = count_batch_stream_calls(monkeypatch)
    rng = random.Random(kmax)
    body = "x</think> The answer</think> is 42." if family == "deepseek_r1" else "a</mm:think>b"
    reqs = [
        Req(rid=i, template=p, prompt=[], output=p.tokenizer.encode(lead + body * 20))
        for i in range(6)
    ]
    simulate(reqs, [0, 0, 1, 2, 3, 3], rng, kmax)
    tokens = sum(r.pos for r in reqs)
    lead_tokens = len(p.tokenizer.encode(lead)) + 1
    assert sum(batch_calls) <= len(reqs) * (lead_tokens + kmax) < tokens / 2


def _hold_back(p: ReasoningParser) -> bool:
    """Text markers on the base machine, and a parser that need not see every token."""
    m = p.machine
    return (
        m.has_byte_markers and type(m).run is Machine.run and not p.may_return_reasoning_as_content
    )


def case_key(case: tuple[str, str, dict[str, Any]]) -> tuple[str, str, tuple[Any, ...]]:
    """A case as a hashable value (its kwargs as sorted items)."""
    family, tok, kwargs = case
    return family, tok, tuple(sorted(kwargs.items()))


# The CASES whose parser takes the hold-back lane (:func:`_hold_back`), written out: computed
# at import, every case's tokenizer and parser were built while collecting, in each xdist
# worker (2 GB and minutes each). The test below checks the list against the parsers.
HOLD_BACK = {
    ("deepseek_v4", "deepseek-v4", ()),
    ("deepseek_v4", "deepseek-v4", (("reasoning_effort", "none"),)),
    ("deepseek_v41", "deepseek-v4", ()),
    ("deepseek_v41", "deepseek-v4", (("reasoning_effort", "none"),)),
    ("granite", "qwen-2.5_base_with_granite_special_tokens", ()),
    ("granite", "qwen-2.5_base_with_granite_special_tokens", (("thinking", True),)),
    ("hunyuan_a13b", "qwen-2.5_base_with_hunyuan_a13b_special_tokens", ()),
    ("kimi_k3", "qwen-3_base_with_kimi_k3_special_tokens", ()),
    ("kimi_k3", "qwen-3_base_with_kimi_k3_special_tokens", (("thinking", False),)),
    # MiniCPM-V with thinking: its reserved markers are matched on bytes.
    ("minicpmv", "qwen-3_base_with_minicpmv_special_tokens", (("enable_thinking", True),)),
    ("nemotron_v1", "qwen-2.5_base_with_llama3_special_tokens", ()),
    ("olmo3", "qwen-2.5", ()),
    ("plamo3", "qwen-2.5_base_with_plamo3_special_tokens", ()),
    ("minimax_m3", "minimax", ()),
    ("minimax_m3", "minimax", (("thinking_mode", "enabled"),)),
}
HOLD_BACK_CASES = [c for c in CASES if case_key(c) in HOLD_BACK]


def test_the_hold_back_cases_are_cases() -> None:
    assert {case_key(c) for c in CASES} >= HOLD_BACK


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{sorted(c[2])}")
def test_the_hold_back_cases_are_the_parsers_that_hold_back(
    case: tuple[str, str, dict[str, Any]],
) -> None:
    """Each case's built parser agrees with HOLD_BACK (one case at a time: the test runs
    with its tokenizer's other tests, so no test holds every tokenizer)."""
    assert _hold_back(parser(*case)) == (case_key(case) in HOLD_BACK)


PROSE = ["hello", " world", " The answer is 42.", "Let me think.", "思考一下", " ok", " so", "."]


def prose_output(rng: random.Random, p: ReasoningParser, pieces: int) -> list[int]:
    """Mostly prose, with the tricky filler (``" <"``, ``"</"``, ``" Here"``, newlines: tokens
    that may begin a text marker) and a few markers: HOLD and plain tokens mixed."""
    markers = marker_texts(p)
    text = ""
    for _ in range(pieces):
        u = rng.random()
        if u < 0.04 and markers:
            text += rng.choice(markers)
        elif u < 0.14:
            text += rng.choice(FILLER)
        else:
            text += rng.choice(PROSE)
    return p.tokenizer.encode(text)


@pytest.mark.parametrize("kmax", [1, 2, 3, 4])
def test_hold_back_families_go_by_table_between_held_tokens(
    kmax: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hold-back families take the table path for every token they can decide and their own
    stream() only from a HOLD token on (or while tokens are held): every step still equals
    each request's own stream(), and every finished request parse(), with budgets and
    grammars on; and the batch calls stream() for a small part of the tokens only."""
    families = {family for family, _, _ in HOLD_BACK_CASES}
    assert {"minimax_m3", "kimi_k3", "olmo3", "deepseek_v4", "hunyuan_a13b"} <= families
    batch_calls = count_batch_stream_calls(monkeypatch)
    rng = random.Random(kmax)
    reqs: list[Req] = []
    admit: list[int] = []
    for i in range(8 * len(HOLD_BACK_CASES)):
        p = parser(*HOLD_BACK_CASES[i % len(HOLD_BACK_CASES)])
        reqs.append(
            Req(
                rid=i,
                template=p,
                prompt=prose_output(rng, p, rng.randrange(0, 6)),
                output=prose_output(rng, p, rng.randrange(40, 80)),
                structured=i % 3 == 0,
                budget=[None, 0, 5, 40][i % 4],
            )
        )
        admit.append(rng.randrange(0, 10))
    simulate(reqs, admit, rng, kmax)
    tokens = sum(r.pos for r in reqs)
    holds = sum(r.template.machine.lut[t] & HOLD != 0 for r in reqs for t in r.output[: r.pos])
    # HOLD tokens came, went through stream() (with the tokens held after them), and the
    # plain ones around them did not.
    assert holds >= 10
    assert holds <= sum(batch_calls) < tokens / 4
    assert len(batch_calls) < tokens / 4


# ---------------------------------------------------------------------------- budgets

LEAD = " Time is up, answering now."
MODEL = " Let me think about this carefully and check each step"
# (family, tokenizer, prompt text, text of the start marker the model writes itself)
BUDGET_CASES = [
    ("qwen3", "qwen-3", "<|im_start|>assistant\n<think>\n", ""),  # prompt leaves it open
    ("glm45", "glm-4.5v", "<|assistant|>", "<think>"),  # the model opens the block
    ("minimax_m3", "minimax", "", "<mm:think>"),  # markers of 5 tokens: per-request path
]


@dataclass
class Engine:
    """A tiny engine for one request: it emits the model's tokens, honours forced tokens,
    and with k > 1 caps its proposal at ``budget_remaining`` (so the budget is exact)."""

    batch: ReasoningBatch
    rid: int
    model: list[int]
    out: list[int] = field(default_factory=list)
    labels: bytearray = field(default_factory=bytearray)
    gmask: list[bool] = field(default_factory=list)
    forced_seen: list[list[int]] = field(default_factory=list)
    used: int = 0

    def run(self, rng: random.Random, kmax: int, content_tokens: int, cap: bool = True) -> Any:
        res = None
        for _ in range(500):
            forced = (
                res.forced_token_ids(self.rid) if res else self.batch.forced_token_ids(self.rid)
            )
            self.forced_seen.append(forced)
            k = rng.randint(1, kmax)
            if forced:
                emit = forced[:k]
            else:
                remaining = (
                    int(res.budget_remaining[0]) if res else self.batch.budget_remaining(self.rid)
                )
                if cap and remaining >= 0:
                    k = min(k, max(remaining, 1))
                emit = self.model[self.used : self.used + k]
                self.used += k
            res = self.batch.step(
                np.array([self.rid]), np.array(emit, np.int64), np.array([0, len(emit)])
            )
            labels = res.decided(self.rid)[1]
            assert res.labels.tolist().count(HELD) <= int(res.held_tokens[0])
            self.out += emit
            self.labels += labels
            self.gmask += res.grammar_mask.tolist()
            if not res.is_reasoning[0] and self.labels.count(C) >= content_tokens:
                return res
        raise AssertionError("the engine never got out of reasoning")


@pytest.mark.parametrize(("family", "tok", "prompt_text", "opener"), BUDGET_CASES)
@pytest.mark.parametrize("budget", [0, 1, 7])
@pytest.mark.parametrize("kmax", [1, 3])
def test_budget_is_exact(
    family: str, tok: str, prompt_text: str, opener: str, budget: int, kmax: int
) -> None:
    p = parser(family, tok)
    encode = p.tokenizer.encode
    prompt = encode(prompt_text)
    opener_ids = encode(opener) if opener else []
    model = opener_ids + encode(MODEL) * 20
    lead, end = encode(LEAD), p.end_marker_token_ids()
    assert end and end[0] not in model

    batch = ReasoningBatch()
    batch.add(
        5,
        p,
        prompt,
        thinking_token_budget=budget,
        budget_lead_in=LEAD,
        structured_output=True,
    )
    engine = Engine(batch, 5, model)
    res = engine.run(random.Random(budget * 10 + kmax), kmax, content_tokens=4)

    # The model's first tokens up to the budget, the lead-in, the end marker, then the
    # model goes on (in content) where it left off.
    n_model = len(opener_ids) + budget
    content = engine.out[n_model + len(lead) + len(end) :]
    assert engine.out == model[:n_model] + lead + end + content
    assert content == model[n_model : n_model + len(content)]
    assert len(content) >= 4
    expected_labels = (
        [D] * len(opener_ids) + [R] * (budget + len(lead)) + [D] * len(end) + [C] * len(content)
    )
    assert list(engine.labels) == expected_labels
    assert bytes(engine.labels) == p.parse(engine.out, prompt).labels
    # Forced tokens were asked for exactly once the budget was spent, and the engine saw
    # the rest of the sequence shrink as it emitted it.
    first = next(i for i, f in enumerate(engine.forced_seen) if f)
    assert engine.forced_seen[first] == lead + end
    assert not any(engine.forced_seen[-1])
    # The grammar sees the content after the end marker, and, where the prompt left the
    # model outside reasoning, the start marker it wrote under the grammar.
    assert engine.gmask == (
        [True] * len(opener_ids) + [False] * (budget + len(lead) + len(end)) + [True] * len(content)
    )
    assert bool(res.grammar_active[0])
    fin = batch.finish(5)
    assert fin.usage.reasoning_tokens == budget + len(lead)
    assert fin.usage.delimiter_tokens == len(opener_ids) + len(end)
    assert fin.usage.budget_exhausted
    assert fin.usage.reasoning_ended


@pytest.mark.parametrize(("family", "tok", "prompt_text", "opener"), BUDGET_CASES)
def test_natural_end_before_the_budget_cancels_forcing(
    family: str, tok: str, prompt_text: str, opener: str
) -> None:
    p = parser(family, tok)
    encode = p.tokenizer.encode
    end = p.end_marker_token_ids()
    thought = encode(MODEL)[:5]
    model = (encode(opener) if opener else []) + thought + end + encode(MODEL) * 3
    batch = ReasoningBatch()
    batch.add(6, p, encode(prompt_text), thinking_token_budget=6, budget_lead_in=LEAD)
    engine = Engine(batch, 6, model)
    engine.run(random.Random(1), 2, content_tokens=3)
    assert not any(engine.forced_seen)
    fin = batch.finish(6)
    assert fin.usage.reasoning_tokens == 5
    assert not fin.usage.budget_exhausted


@pytest.mark.parametrize(("family", "tok", "prompt_text", "opener"), BUDGET_CASES)
def test_forcing_waits_for_the_engine(family: str, tok: str, prompt_text: str, opener: str) -> None:
    """An engine that emits something else than the forced token is asked again for the
    same token; what it emitted is counted like any other token."""
    p = parser(family, tok)
    encode = p.tokenizer.encode
    filler = encode(MODEL)
    opener_ids = encode(opener) if opener else []
    batch = ReasoningBatch()
    batch.add(7, p, encode(prompt_text), thinking_token_budget=2, budget_lead_in=LEAD)
    forced = one(batch, [(7, opener_ids + filler[:2])])[-1].forced_token_ids(7)
    assert forced == encode(LEAD) + p.end_marker_token_ids()
    res = one(batch, [(7, [forced[0]]), (7, [filler[3]]), (7, forced[1:3])])
    assert [r.forced_token_ids(7) for r in res] == [forced[1:], forced[1:], forced[3:]]
    assert int(res[-1].reasoning_tokens[0]) == 2 + 1 + 1 + 2
    res = one(batch, [(7, forced[3:])])
    assert res[0].forced_token_ids(7) == []
    assert not res[0].is_reasoning[0]


def test_budget_zero_forces_before_the_first_token() -> None:
    p = parser("qwen3", "qwen-3")
    batch = ReasoningBatch()
    open_prompt = p.tokenizer.encode("<|im_start|>assistant\n<think>\n")
    closed_prompt = p.tokenizer.encode("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    batch.add(1, p, open_prompt, thinking_token_budget=0)
    batch.add(2, p, closed_prompt, thinking_token_budget=0)
    batch.add(3, parser("qwen3", "qwen-3", {"enable_thinking": False}), open_prompt)
    assert batch.forced_token_ids(1) == p.end_marker_token_ids()
    assert batch.forced_token_ids(2) == []
    assert batch.usage(1).budget_exhausted and not batch.usage(2).budget_exhausted
    res = batch.step(
        np.array([1, 2, 3]), np.array([*p.end_marker_token_ids(), 4913, 4913]), [0, 1, 2, 3]
    )
    assert res.labels.tolist() == [D, C, C]
    assert res.is_reasoning.tolist() == [False, False, False]
    assert not res.forcing.any()


def test_speculative_overshoot_is_counted_not_hidden() -> None:
    """An engine that does not cap its proposal at budget_remaining gets k tokens past the
    budget in one step: they are reasoning, counted, and the forcing follows them."""
    p = parser("qwen3", "qwen-3")
    filler = p.tokenizer.encode(MODEL)
    batch = ReasoningBatch()
    batch.add(1, p, p.tokenizer.encode("<think>\n"), thinking_token_budget=2)
    (res,) = one(batch, [(1, filler[:4])])
    assert res.labels.tolist() == [R] * 4
    assert int(res.reasoning_tokens[0]) == 4
    assert int(res.budget_remaining[0]) == 0
    assert res.forced_token_ids(1) == p.end_marker_token_ids()


# ---------------------------------------------------------------------------- grammar


def _grammar_run(
    batch: ReasoningBatch, rid: int, out: list[int], rng: random.Random
) -> tuple[list[bool], list[tuple[int, bool]], bytearray]:
    """Step ``out`` in random chunks: (grammar mask per token, (tokens so far,
    grammar_active) after each step, labels)."""
    mask: list[bool] = []
    active: list[tuple[int, bool]] = []
    labels = bytearray()
    i = 0
    while i < len(out):
        k = rng.randint(1, 3)
        (res,) = one(batch, [(rid, out[i : i + k])])
        i += len(out[i : i + k])
        mask += res.grammar_mask.tolist()
        active.append((i, bool(res.grammar_active[0])))
        labels += res.decided(rid)[1]
    labels += batch.finish(rid).labels
    return mask, active, labels


@pytest.mark.parametrize("seed", range(3))
def test_grammar_activates_at_the_token_after_the_end(seed: int) -> None:
    rng = random.Random(seed)
    p = parser("qwen3", "qwen-3")
    enc = p.tokenizer.encode
    think, answer = enc("Let me see, 2 + 2"), enc('{"a": 4}')
    end = p.end_marker_token_ids()
    mm = parser("minimax_m3", "minimax", {"thinking_mode": "enabled"})
    mm_think, mm_answer = mm.tokenizer.encode("Let me see"), mm.tokenizer.encode('{"a": 4}')
    cases = [
        # (parser, prompt, output, tokens before the grammar takes over)
        (p, enc("<|im_start|>assistant\n<think>\n"), think + end + answer, len(think) + 1),
        (p, enc("<|im_start|>assistant\n<think>\n\n</think>\n\n"), answer, 0),
        (parser("qwen3", "qwen-3", {"enable_thinking": False}), [], think + answer, 0),
        # An implicit end (<tool_call>) stays in content but was generated before.
        (p, [], think + enc("<tool_call>") + answer, len(think) + 1),
        # An end marker of five tokens (per-request path): all of them before.
        (
            mm,
            [],
            mm_think + mm.tokenizer.encode("</mm:think>") + mm_answer,
            len(mm_think) + 5,
        ),
    ]
    for rid, (q, prompt, out, before) in enumerate(cases):
        batch = ReasoningBatch()
        batch.add(rid, q, prompt, structured_output=True)
        batch.add(100 + rid, q, prompt, structured_output=False)
        assert batch.grammar_active(rid) == (before == 0)
        mask, active, labels = _grammar_run(batch, rid, out, rng)
        assert mask == [False] * before + [True] * (len(out) - before)
        # The tokens the grammar sees are exactly the content (CONTENT labels).
        assert [lab == C for lab in labels] == mask
        # After a step, the grammar is on exactly when the next token is the grammar's.
        assert [on for _, on in active] == [done >= before for done, _ in active]
        off_mask, off_active, _ = _grammar_run(batch, 100 + rid, out, rng)
        assert not any(off_mask) and not any(on for _, on in off_active)


def test_grammar_steps_aside_when_reasoning_reopens() -> None:
    """glm45: a <think> after content re-enters reasoning; the grammar sampled that marker
    (it is in the mask), is inactive for the reasoning, and active again after it."""
    p = parser("glm45", "glm-4.5v")
    enc = p.tokenizer.encode
    a, b, c = enc("answer"), enc("more thoughts"), enc("rest")
    out = a + enc("<think>") + b + enc("</think>") + c
    batch = ReasoningBatch()
    batch.add(1, p, enc("<|assistant|>"), structured_output=True)
    mask, _, labels = _grammar_run(batch, 1, out, random.Random(0))
    n = len(a) + 1
    assert mask == [True] * n + [False] * (len(b) + 1) + [True] * len(c)
    assert labels == bytes([C] * len(a) + [D] + [R] * len(b) + [D] + [C] * len(c))


# ---------------------------------------------------------------------------- bad input


def test_bad_input_raises_before_any_state_changes() -> None:
    """Each bad call names what was wrong; afterwards both requests (one per path) go on
    and end exactly as parse() says, so no bad call touched their state."""
    qwen = parser("qwen3", "qwen-3")
    mm = parser("minimax_m3", "minimax", {"thinking_mode": "enabled"})
    a_out = qwen.tokenizer.encode("Hmm, 2 + 2.") + qwen.end_marker_token_ids() + [19, 20]
    b_out = mm.tokenizer.encode("Hmm </mm:think> four")
    batch = ReasoningBatch()
    batch.add(10, qwen, [], thinking_token_budget=50)
    batch.add(-3, mm, [], structured_output=True)
    got: dict[int, tuple[list[int], bytearray]] = {10: ([], bytearray()), -3: ([], bytearray())}

    def ok(a: list[int], b: list[int]) -> None:
        res = batch.step([10, -3], a + b, [0, len(a), len(a) + len(b)])
        for rid in (10, -3):
            ids, labels = res.decided(rid)
            got[rid][0].extend(ids)
            got[rid][1].extend(labels)

    ok(a_out[:2], b_out[:2])
    t = a_out[2]
    qwen_vocab = qwen.machine.vocab_size
    bad_calls: list[tuple[Any, type[Exception], str]] = [
        (lambda: batch.step([10, 999], [t, t], [0, 1, 2]), UnknownRequestError, "request 999"),
        (lambda: batch.step([10, 10], [t, t], [0, 1, 2]), InvalidStepError, "more than once"),
        (lambda: batch.step([10, -3], [t], [0, 1]), InvalidStepError, "3 entries, got 2"),
        (lambda: batch.step([10, -3], [t], [0, 2, 1]), InvalidStepError, "non-decreasing"),
        (lambda: batch.step([10, -3], [t, t], [1, 1, 2]), InvalidStepError, "offsets[0]"),
        (lambda: batch.step([10, -3], [t, t], [0, 1, 3]), InvalidStepError, "offsets[-1]"),
        (
            lambda: batch.step([10, -3], [1.5, 2.0], [0, 1, 2]),
            BatchTokenError,
            "= 1.5 is of type float",
        ),
        (
            lambda: batch.step([10, -3], np.array([1.5, 2.0]), [0, 1, 2]),
            InvalidStepError,
            "integers",
        ),
        (lambda: batch.step([[10, -3]], [t, t], [0, 1, 2]), InvalidStepError, "1-D"),
        # A bool among ints in a list (numpy would read True as request 1, False as 0).
        (
            lambda: batch.step([10, True], [t, t], [0, 1, 2]),
            InvalidStepError,
            "request_ids[1] = True of type bool",
        ),
        (
            lambda: batch.step([10, -3], [t, t], [False, 1, 2]),
            InvalidStepError,
            "offsets[0] = False of type bool",
        ),
        (
            lambda: batch.step((10, -3), [t, t], (0, np.True_, 2)),
            InvalidStepError,
            f"offsets[1] = {np.True_!r} of type bool",
        ),
        # In minimax's vocabulary but not in qwen3's: the error names request 10.
        (
            lambda: batch.step([-3, 10], [t, qwen_vocab + 5], [0, 1, 2]),
            BatchTokenError,
            f"token_ids[1] = {qwen_vocab + 5} is outside the vocabulary [0, {qwen_vocab}) "
            "of request 10 (parser 'qwen3')",
        ),
        (lambda: batch.step([10, -3], [t, -1], [0, 1, 2]), BatchTokenError, "request -3"),
        (lambda: batch.add(10, qwen, []), DuplicateRequestError, "request 10 is already"),
        (lambda: batch.remove(11), UnknownRequestError, "remove(): request 11"),
        (lambda: batch.finish(11), UnknownRequestError, "finish(): request 11"),
        (lambda: batch.usage(11), UnknownRequestError, "usage(): request 11"),
        (lambda: batch.add(7, qwen, [], thinking_token_budget=-1), InvalidOptionError, "budget"),
        (lambda: batch.add(7, qwen, [], thinking_token_budget=True), InvalidOptionError, ">= 0"),
        (lambda: batch.add(7, qwen, [], budget_lead_in="x"), InvalidOptionError, "lead_in"),
        (lambda: batch.add(7, qwen, [], include_reasoning=1), InvalidOptionError, "a bool"),
        (lambda: batch.add(7, qwen, [], structured_output=None), InvalidOptionError, "a bool"),
        (lambda: batch.add(7, qwen, [qwen_vocab]), reasonspan.InvalidTokenError, "prompt"),
        (lambda: batch.add("7", qwen, []), TypeError, "request ids are ints"),
        (lambda: batch.add(7, None, []), TypeError, "needs a parser"),
        (lambda: batch.add(7, "qwen3", []), TypeError, "needs tokenizer="),
        (lambda: batch.add(7, "no_such", [], tokenizer=qwen.tokenizer), KeyError, "no_such"),
    ]
    for call, error, text in bad_calls:
        with pytest.raises(error) as info:
            call()
        assert text in str(info.value)
        assert sorted(batch.request_ids()) == [-3, 10]
    ok(a_out[2:], b_out[2:])
    for rid, p, out in ((10, qwen, a_out), (-3, mm, b_out)):
        tail = batch.finish(rid)
        expected = p.parse(out, [])
        assert got[rid][0] + tail.token_ids == expected.token_ids
        assert bytes(got[rid][1]) + tail.labels == expected.labels
        assert batch.usage(rid).reasoning_tokens == expected.reasoning_tokens
    # Finished requests cannot be stepped or finished again; remove() frees them.
    with pytest.raises(RequestFinishedError, match="request 10 is already finished"):
        batch.step([10], [t], [0, 1])
    with pytest.raises(RequestFinishedError):
        batch.finish(-3)
    batch.remove(10)
    batch.remove(-3)
    assert len(batch) == 0


# ---------------------------------------------------------------------------- faults


class ExplodingMachine(Machine):
    """A custom machine (so: routed per request) whose routing fails on one token."""

    boom = 0

    def run(
        self,
        tokens: Any,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        if self.boom in tokens:
            raise RuntimeError(f"cannot route token {self.boom}")
        return super().run(tokens, reasoning, cursor, out_ids, out_labels, spill)


def _exploding(
    cls: type[ExplodingMachine] | type[ExplodingDrainMachine],
    base: Machine,
    tokenizer: LoadedTokenizer,
    boom_text: str,
) -> Machine:
    """``base`` rebuilt as ``cls``, failing on the first token of ``boom_text``."""
    machine = cls(
        base.spec,
        tokenizer,
        thinking=base.thinking,
        prompt_start=base.spec.prompt_start,
        id_markers=base.id_markers,
        byte_markers=base.byte_markers,
    )
    machine.boom = tokenizer.encode(boom_text)[0]
    return machine


class ExplodingQwen3(Qwen3Parser):
    """Not registered: qwen3 on the exploding machine."""

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        return _exploding(ExplodingMachine, super().compile(tokenizer, kwargs), tokenizer, " BOOM")


def test_a_failing_parser_fails_its_request_alone() -> None:
    qwen = parser("qwen3", "qwen-3")
    bad = ExplodingQwen3.create(qwen.tokenizer)
    boom = bad.tokenizer.encode(" BOOM")[0]
    text = qwen.tokenizer.encode("Hmm.") + qwen.end_marker_token_ids() + [19, 20, 21]
    mm = parser("minimax_m3", "minimax")
    mm_text = mm.tokenizer.encode("<mm:think>Hmm</mm:think> four!")
    batch = ReasoningBatch()
    batch.add(1, qwen, [])
    batch.add(2, bad, [])
    batch.add(3, mm, [])
    assert not batch.is_vectorized(2)
    streams: dict[int, tuple[list[int], bytearray]] = {1: ([], bytearray()), 3: ([], bytearray())}
    outputs_ = {1: text, 2: [5, 6, boom] + [7] * 20, 3: mm_text}
    for i in range(0, 30, 2):
        ids = [r for r in (1, 2, 3) if r in batch]
        chunks = [outputs_[r][i : i + 2] for r in ids]
        res = batch.step(ids, [t for c in chunks for t in c], np.cumsum([0, *map(len, chunks)]))
        for rid in (1, 3):
            got_ids, got_labels = res.decided(rid)
            streams[rid][0].extend(got_ids)
            streams[rid][1].extend(got_labels)
        if i == 0:
            assert not res.errors
        else:
            err = res.errors[2]
            assert set(res.errors) == {2}
            assert isinstance(err, RequestFailedError)
            assert isinstance(err.__cause__, RuntimeError)
            assert "request 2: parser 'qwen3' raised RuntimeError" in str(err)
            a, b = int(res.offsets[1]), int(res.offsets[2])
            assert res.labels[a:b].tolist() == [FAILED] * (b - a)
    with pytest.raises(RequestFailedError):
        batch.finish(2)
    batch.remove(2)
    for rid, p in ((1, qwen), (3, mm)):
        tail = batch.finish(rid)
        expected = p.parse(outputs_[rid], [])
        assert streams[rid][0] + tail.token_ids == expected.token_ids
        assert bytes(streams[rid][1]) + tail.labels == expected.labels
    # The failed request's slot is free and clean for the next one.
    batch.add(2, qwen, [])
    (res,) = one(batch, [(2, text)])
    assert res.labels.tobytes() == qwen.parse(text, []).labels
    assert not res.errors


class ExplodingDrainMachine(Machine):
    """Base routing (so: a hold-back family on the table path) whose byte matcher fails on
    one token."""

    boom = 0

    def _drain(self, queue: list[int], *args: Any) -> int:
        if self.boom in queue:
            raise RuntimeError(f"cannot match token {self.boom}")
        return super()._drain(queue, *args)


class ExplodingMiniMaxM3(MiniMaxM3Parser):
    """Not registered: minimax_m3 (text markers on MiniMax M2's vocabulary), exploding."""

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        return _exploding(
            ExplodingDrainMachine, super().compile(tokenizer, kwargs), tokenizer, " <"
        )


def test_a_failing_hold_back_parser_fails_its_whole_step() -> None:
    """The tokens a hold-back request routed by table before its parser raised are FAILED
    too, uncounted and outside the grammar, as if the parser had seen the whole step."""
    good = parser("minimax_m3", "minimax", {"thinking_mode": "enabled"})
    bad = ExplodingMiniMaxM3.create(good.tokenizer, {"thinking_mode": "enabled"})
    enc = good.tokenizer.encode
    boom = bad.machine.boom
    assert enc(" <") == [boom] and bad.machine.lut[boom] & HOLD
    prompt = enc("<mm:think>Hmm.</mm:think>")  # the answer comes next, under the grammar
    plain = enc(" The answer is 42")
    batch = ReasoningBatch()
    for rid, p in ((1, good), (2, bad)):
        batch.add(rid, p, prompt, structured_output=True, thinking_token_budget=3)
        assert not batch.is_vectorized(rid) and not batch.is_reasoning(rid)
    res = batch.step([1, 2], plain[:2] + plain[:2], [0, 2, 4])
    assert not res.errors and res.labels.tolist() == [C] * 4
    assert res.grammar_mask.tolist() == [True] * 4
    before = batch.usage(2)
    out = [*plain[2:4], boom, *plain[4:]]  # two plain tokens by table, then the HOLD token
    res = batch.step([1, 2], out + out, [0, len(out), 2 * len(out)])
    assert set(res.errors) == {2}
    assert isinstance(res.errors[2].__cause__, RuntimeError)
    n = len(out)
    assert res.labels[n:].tolist() == [FAILED] * n
    assert not res.grammar_mask[n:].any()
    assert batch.usage(2) == before
    # The other request goes on exactly as its own stream() says.
    ref = fresh(good)
    expected = ref.stream(plain[:2], False)
    expected = ref.stream(out, expected.is_still_reasoning)
    assert res.decided(1) == (expected.token_ids, expected.labels)
    # Still reported, with no tokens and with tokens, until removed.
    res = batch.step([1, 2], plain[:1], [0, 1, 1])
    assert set(res.errors) == {2}
    res = batch.step([2, 1], plain[:2], [0, 1, 2])
    assert set(res.errors) == {2} and res.labels[0] == FAILED
    with pytest.raises(RequestFailedError):
        batch.finish(2)
    batch.remove(2)


# ---------------------------------------------------------------------------- slots, usage


def test_slots_are_reused_and_start_clean() -> None:
    qwen = parser("qwen3", "qwen-3")
    mm = parser("minimax_m3", "minimax")
    end = qwen.end_marker_token_ids()
    batch = ReasoningBatch(capacity=8)
    rng = random.Random(0)
    live: list[int] = []
    for rid in range(2000):
        if len(live) == 8:
            old = live.pop(rng.randrange(8))
            if rng.random() < 0.5:
                batch.finish(old)
            batch.remove(old)
        p = qwen if rid % 3 else mm
        # Leave state behind: reasoning, a spent budget, a grammar, held tokens.
        batch.add(rid, p, [], thinking_token_budget=rng.choice([None, 0]), structured_output=True)
        one(batch, [(rid, p.tokenizer.encode("x </"))])
        live.append(rid)
    assert batch.capacity == 8
    for old in live:
        batch.remove(old)
    closed = qwen.tokenizer.encode("<think>\n\n</think>\n\n")
    batch.add(5000, qwen, closed)
    assert batch.forced_token_ids(5000) == []
    assert batch.usage(5000) == reasonspan.RequestUsage(0, 0, 0, 0, 0, True, False)
    assert not batch.grammar_active(5000)
    (res,) = one(batch, [(5000, [19, *end])])
    assert res.labels.tobytes() == qwen.parse([19, *end], closed).labels == bytes([C, D])
    assert res.held_tokens.tolist() == [0]


def test_a_reused_slot_keeps_nothing_of_its_last_request() -> None:
    """add() writes only the slot fields a request sets and remove() puts the others
    back: a slot freed by a request with every option (a budget with a lead-in, structured
    output, reasoning left out, finished) serves a plain request exactly as a fresh batch
    would, and the other way round."""
    qwen = parser("qwen3", "qwen-3")
    enc = qwen.tokenizer.encode
    end = qwen.end_marker_token_ids()
    out = enc("<think>Let me see") + end + enc("The answer.")
    expected = qwen.parse(out, [])
    batch = ReasoningBatch(capacity=1)
    lead = "Enough thinking."
    batch.add(1, qwen, [], thinking_token_budget=0, budget_lead_in=lead, structured_output=True)
    batch.add(2, qwen, [], include_reasoning=False)  # grows to a second slot
    assert batch.forced_token_ids(1) == enc(lead) + end
    slot = batch.slot_of(1)
    batch.finish(1)
    batch.remove(1)
    batch.add(3, qwen, [])
    assert batch.slot_of(3) == slot
    assert batch.forced_token_ids(3) == []
    assert batch.usage(3) == reasonspan.RequestUsage(0, 0, 0, 0, 0, False, False)
    assert not batch.grammar_active(3)
    res = batch.step([3, 2], out + out, [0, len(out), 2 * len(out)])
    assert res.labels[: len(out)].tobytes() == expected.labels
    assert res.split(3) == (expected.reasoning_token_ids, expected.content_token_ids)
    assert res.split(2) == ([], expected.content_token_ids)
    assert res.next_forced_token.tolist() == [-1, -1]
    assert batch.finish(3).usage.reasoning_tokens == expected.reasoning_tokens
    # And the plain request's slot now takes a budgeted, structured one.
    batch.remove(3)
    batch.add(4, qwen, [], thinking_token_budget=0, budget_lead_in=lead, structured_output=True)
    assert batch.slot_of(4) == slot
    assert batch.forced_token_ids(4) == enc(lead) + end
    assert batch.usage(4).budget_exhausted


def _labelled_as_parsed(batch: ReasoningBatch, rid: int, p: ReasoningParser) -> None:
    """A short reasoning-then-answer output of request ``rid`` gets its parser's labels."""
    ids = p.tokenizer.encode("<think>hmm") + p.end_marker_token_ids()
    ids += p.tokenizer.encode("done")
    (res,) = one(batch, [(rid, ids)])
    assert res.labels.tobytes() == p.parse(ids, []).labels


def test_a_released_table_group_is_not_remembered_for_its_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The batch remembers the last machine's table group; once that group is released
    (here at once: no group is parked), its number can go to another family, and the
    machine must get its own again."""
    monkeypatch.setattr(batch_tables, "IDLE_GROUPS", 0)
    qwen = parser("qwen3", "qwen-3")
    mm = parser("minimax_m3", "minimax")
    batch = ReasoningBatch()
    batch.add(1, qwen, [])
    batch.remove(1)  # qwen's group is released
    batch.add(2, mm, [])
    batch.add(3, qwen, [])
    for rid, p in ((2, mm), (3, qwen)):
        _labelled_as_parsed(batch, rid, p)


def test_the_remembered_group_released_by_another_groups_parking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The remembered machine's group may be released when another group is parked (it
    was idle longest), and its number reused by a hold-back family: the machine's next
    request must get its own group again, not that family's tables."""
    monkeypatch.setattr(batch_tables, "IDLE_GROUPS", 1)
    glm = parser("glm45", "glm-4.5v")
    qwen = parser("qwen3", "qwen-3")
    # A hold-back family (multi-token markers: minimax_m3's on Qwen3's vocabulary) gets
    # a group without becoming the remembered machine.
    held = parser("minimax_m3", "qwen-3")
    batch = ReasoningBatch()
    batch.add(1, glm, [])
    batch.add(2, qwen, [])  # remembered: qwen's machine and group
    assert batch.is_vectorized(1) and batch.is_vectorized(2)
    batch.remove(2)  # qwen's group parked
    batch.remove(1)  # glm's parked too: qwen's, idle longest, is released
    batch.add(3, held, [])  # takes qwen's old number
    assert not batch.is_vectorized(3) and batch._slots.group[batch.slot_of(3)] >= 0
    batch.add(4, qwen, [])
    for rid, p in ((3, held), (4, qwen)):
        _labelled_as_parsed(batch, rid, p)


def test_an_idle_table_group_is_parked_for_the_next_request() -> None:
    """One request at a time (a single-user server): the family's table group outlives
    its last request, so the next request reuses it without building the tables again;
    past IDLE_GROUPS idle families the one idle longest is released, and its family's
    next request gets a group of its own again. Every request's labels stay its parser's."""
    parsers: list[ReasoningParser] = []
    probe = ReasoningBatch()  # six table-routed families of six different table groups
    groups: set[int] = set()
    for i, (family, tok) in enumerate(sorted(FAMILY_TOKENIZERS.items())):
        p = parser(family, tok)
        probe.add(i, p, [])
        g = int(probe._slots.group[probe.slot_of(i)])
        if probe.is_vectorized(i) and g >= 0 and g not in groups and len(parsers) < 6:
            parsers.append(p)
            groups.add(g)
    assert len(parsers) == 6
    batch = ReasoningBatch()
    tables = batch._tables
    built: list[int] = []
    real = tables._build

    def counting(machine: Any) -> int | None:
        built.append(1)
        return real(machine)

    tables._build = counting  # type: ignore[method-assign]
    rid = 0

    def serve(p: ReasoningParser) -> None:
        nonlocal rid
        rid += 1
        batch.add(rid, p, [])
        _labelled_as_parsed(batch, rid, p)
        batch.finish(rid)
        batch.remove(rid)

    serve(parsers[0])
    first = len(built)
    for _ in range(3):
        serve(parsers[0])
    assert len(built) == first  # parked: never built again
    assert len(parsers) - 1 > batch_tables.IDLE_GROUPS
    for p in parsers[1:]:
        serve(p)
    before = len(built)
    serve(parsers[0])  # idle longest: released, so built anew
    assert len(built) > before
    for p in parsers:
        serve(p)
    assert sum(1 for n in tables.live if n) == 0
    assert len(tables._parked) == batch_tables.IDLE_GROUPS


def test_usage_and_include_reasoning() -> None:
    qwen = parser("qwen3", "qwen-3")
    enc = qwen.tokenizer.encode
    out = enc("<think>Let me see") + qwen.end_marker_token_ids() + enc("<tool_call>{}")
    expected = qwen.parse(out, [])
    truncated = enc("Let me")
    batch = ReasoningBatch()
    batch.add(1, qwen, [], include_reasoning=False)
    batch.add(2, qwen, [])
    batch.add(3, "qwen3", [], tokenizer=qwen.tokenizer, include_reasoning=False)
    res = batch.step(
        [1, 2, 3], out + out + truncated, [0, len(out), 2 * len(out), len(out) * 2 + 2]
    )
    assert res.split(1) == ([], expected.content_token_ids)
    assert res.split(2) == (expected.reasoning_token_ids, expected.content_token_ids)
    assert res.split(3) == ([], [])
    for rid in (1, 2):
        u = batch.finish(rid).usage
        assert u.reasoning_tokens == expected.reasoning_tokens > 0
        assert u.delimiter_tokens == expected.delimiter_tokens == 2
        assert u.content_tokens == len(expected.content_token_ids)
        assert u.completion_tokens == len(out)
        assert u.reasoning_ended
    # finish_reason "length" inside reasoning: visible, never a silent empty content.
    fin = batch.finish(3)
    assert not fin.reasoning_ended
    assert fin.usage.reasoning_tokens == 2
    assert fin.usage.content_tokens == 0


def test_add_by_name_and_with_chat_template_kwargs() -> None:
    qwen = parser("qwen3", "qwen-3")
    prompt = qwen.tokenizer.encode("<|im_start|>assistant\n")
    batch = ReasoningBatch()
    batch.add(1, qwen, prompt)
    batch.add(2, qwen, prompt, chat_template_kwargs={"enable_thinking": False})
    batch.add(3, name="qwen3", tokenizer=qwen.tokenizer, prompt_token_ids=prompt)
    batch.add(4, qwen)  # no prompt: the family's default (a turn starts in reasoning)
    assert [batch.is_reasoning(r) for r in (1, 2, 3, 4)] == [True, False, True, True]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_request_ids_map_to_their_own_slots_under_churn(seed: int) -> None:
    """Admissions and removals in any order, ids reused after removal, large and negative
    ids, steps over any subset in any order: every request's tokens are labelled exactly as
    its own parse() labels them, and a step naming a removed id is refused (the id -> slot
    index is rebuilt lazily, never copied per admission or removal, so this is what keeps
    it honest)."""
    qwen = parser("qwen3", "qwen-3")
    enc = qwen.tokenizer.encode
    pieces = [enc("<think>a b"), enc(" c</think>"), enc("d e"), enc("<think>"), enc(" f g h")]
    rng = random.Random(seed)
    batch = ReasoningBatch(capacity=4)
    fed: dict[int, list[int]] = {}
    labels: dict[int, bytearray] = {}
    pool = [rng.randrange(-(2**62), 2**62) for _ in range(12)] + list(range(20))
    for _ in range(120):
        action = rng.random()
        if action < 0.35:
            rid = rng.choice(pool)
            if rid not in fed:
                batch.add(rid, qwen, [])
                fed[rid] = []
                labels[rid] = bytearray()
        elif action < 0.5 and fed:
            rid = rng.choice(sorted(fed))
            assert labels[rid] == bytearray(qwen.parse(fed[rid], []).labels), rid
            batch.remove(rid)
            del fed[rid], labels[rid]
        elif action < 0.55:
            gone = [r for r in pool if r not in fed]
            if gone:
                rid = rng.choice(gone)
                with pytest.raises(UnknownRequestError, match=f"request {rid}"):
                    batch.step([rid], [0], [0, 1])
        elif fed:
            rids = rng.sample(sorted(fed), rng.randint(1, len(fed)))
            toks: list[int] = []
            offs = [0]
            sent: dict[int, list[int]] = {}
            for rid in rids:
                sent[rid] = rng.choice(pieces)
                fed[rid] += sent[rid]
                toks += sent[rid]
                offs.append(len(toks))
            res = batch.step(rids, toks, offs)
            for rid in rids:
                ids, lab = res.decided(rid)
                assert ids == sent[rid]  # Qwen3's markers are single tokens: nothing held
                labels[rid] += lab
        check_id_index(batch)
    for rid in fed:
        assert labels[rid] == bytearray(qwen.parse(fed[rid], []).labels), rid


def check_id_index(batch: ReasoningBatch) -> None:
    """The sorted id index holds no stale entry (a removed request's is a tombstone), and
    each live request's recorded position, when it has one, is its own entry."""
    sl = batch._slots
    ids, slots = sl._ids.tolist(), sl._id_slots.tolist()
    for rid, slot in zip(ids, slots, strict=True):
        assert slot < 0 or sl.slot_of.get(rid) == slot
    for rid, slot in sl.slot_of.items():
        pos = int(sl.ipos[slot])
        assert pos < 0 or (ids[pos], slots[pos]) == (rid, slot)


# One mix (the first holds families of every kind of row, which the last line checks), run
# with that mix's other tests (tests/conftest.py groups them by their "mix" parameter).
@pytest.mark.parametrize("mix", [0])
def test_all_decided_of_a_few_rows_equals_those_rows_of_the_whole_step(mix: int) -> None:
    """``all_decided(rows)`` for a few rows of a large step slices the arrays instead of
    converting the step (the output paths ask for the rows they left): what it yields is
    what the whole step's conversion yields for those rows, held-back rows included."""
    rng = random.Random(7)
    batch = ReasoningBatch()
    reqs = []
    cases = MIXES[mix]
    for i in range(96):
        p = parser(*cases[i % len(cases)])
        batch.add(i, p, random_output(rng, p, rng.randrange(0, 6)))
        reqs.append((i, random_output(rng, p, 60)))
    sliced = irregular = spills = 0
    for pos in range(0, 60, 3):
        chunks = [out[pos : pos + rng.randrange(0, 4)] for _, out in reqs]
        offsets = np.cumsum([0, *(len(c) for c in chunks)])
        res = batch.step(
            np.arange(len(reqs)), np.array([t for c in chunks for t in c], np.int64), offsets
        )
        spilled = [i for i, _ in reqs if res.spill(i)]  # (request i is row i)
        rows = sorted({*rng.sample(range(len(reqs)), 4), *res.irregular_rows()[:4], *spilled[:3]})
        few = list(res.all_decided(rows))
        sliced += res._lists is None  # the arrays were sliced, not converted
        irregular += len(set(rows) & set(res.irregular_rows()))
        spills += bool(spilled)
        whole = list(res.all_decided())
        assert few == [whole[i] for i in rows]
    # Every kind of row went through the sliced path: plain, held back, partly a marker.
    assert sliced > 10 and irregular > 5 and spills > 0

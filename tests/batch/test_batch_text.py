"""Batch-wide text (``runtime/batch/text.py``) against each request's own TextSplitter and
``parse()``, on real tokenizers, for every family of the batch tests.

- Property: requests of mixed families (and so mixed tokenizers) stepped through one
  ``ReasoningBatch`` with any number of tokens per request per step (0 included), admitted
  and finished at random (slots are reused): every row's text deltas equal what the
  request's own ``TextSplitter`` returns for the same tokens, every finish equals its
  ``finish()``, and the whole text equals ``parse()``. Both of BatchText's loops run: the
  numpy one (any number of requests) and the scalar one.
- ``include_reasoning=False``: no reasoning text, the same content.
- Bad use: a request never added, added twice, finished twice: a clear error naming it,
  and nothing changed for the others.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonspan import BatchText, ReasoningBatch, ReasoningParser, TextSplitter, create_parser_sync
from reasonspan.runtime import BatchFinish, UnknownTextRequestError
from reasonspan.runtime.batch import text as batch_text
from reasonspan.runtime.core.labels import CONTENT, REASONING
from tests.batch.test_batch import CASES, MIX_COUNT, MIXES, case_key, fresh, parser, step_active
from tests.support.fixtures import tokenizer
from tests.support.sampling import examples
from tests.support.strategies import outputs


class Req:
    """One request of the property test and its reference, a TextSplitter of its own."""

    def __init__(
        self, rid: int, p: ReasoningParser, prompt: list[int], output: list[int], include: bool
    ) -> None:
        self.rid = rid
        self.template = p
        self.prompt = prompt
        self.output = output
        self.include = include
        self.pos = 0
        self.ref = TextSplitter(fresh(p), prompt)
        self.got = ["", ""]
        self.want = ["", ""]

    def expect(self, r: str, c: str) -> tuple[str, str]:
        return (r if self.include else ""), c


def _run(reqs: list[Req], rng: random.Random, kmax: int) -> None:
    batch = ReasoningBatch(capacity=4)
    texts = BatchText(batch)
    pending = list(reqs)
    active: list[Req] = []
    while pending or active:
        while pending and (not active or rng.random() < 0.3):
            r = pending.pop(0)
            batch.add(r.rid, r.template, r.prompt, include_reasoning=r.include)
            texts.add(r.rid)
            assert r.rid in texts
            active.append(r)
        chunks, _, res = step_active(batch, active, rng, kmax)
        reasoning, content = texts.step(res)
        assert len(reasoning) == len(content) == len(active)
        for row, (r, chunk) in enumerate(zip(active, chunks, strict=True)):
            want = r.expect(*r.ref.feed(chunk))
            assert (reasoning[row], content[row]) == want, (r.template.name, chunk)
            r.got[0] += reasoning[row]
            r.got[1] += content[row]
        for r in list(active):
            if r.pos == len(r.output) and rng.random() < 0.6:
                tail = texts.finish(r.rid, batch.finish(r.rid))
                assert tail == r.expect(*r.ref.finish()), r.template.name
                assert r.rid not in texts
                batch.remove(r.rid)
                active.remove(r)
                r.got[0] += tail[0]
                r.got[1] += tail[1]
                whole = r.template.parse(r.output, r.prompt)
                assert r.got == [(whole.reasoning or "") if r.include else "", whole.content or ""]
            elif rng.random() < 0.02:  # aborted: no last text
                texts.remove(r.rid)
                batch.remove(r.rid)
                active.remove(r)
    assert len(batch) == 0


@pytest.mark.parametrize("mix", range(MIX_COUNT))
@pytest.mark.parametrize("loop", ["numpy", "scalar"])
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_batch_text_equals_each_requests_text_splitter(
    loop: str, mix: int, data: st.DataObject, seed: int
) -> None:
    rng = random.Random(seed)
    n = data.draw(st.integers(1, 6), label="requests")
    kmax = data.draw(st.integers(1, 4), label="kmax")
    reqs = []
    for i in range(n):
        p = parser(*data.draw(st.sampled_from(MIXES[mix]), label="case"))
        reqs.append(
            Req(
                i * 7919 + 3,
                p,
                data.draw(outputs(p), label="prompt"),
                data.draw(outputs(p), label="output"),
                data.draw(st.booleans(), label="include_reasoning") or i % 2 == 0,
            )
        )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_text, "SMALL", 0 if loop == "numpy" else 1 << 30)
        _run(reqs, rng, kmax)


PROSE = (
    "<think>\nFirst, the question.\n\nThen an idea: é, ü, 你好, 🙂.\n</think>\n\n"
    "The answer is 42.\n\nThat is all."
)


def _batch_of(
    p: ReasoningParser, rids: list[int], prompt: list[int] | None = None
) -> tuple[ReasoningBatch, BatchText]:
    """A batch and its BatchText, each request added to both."""
    batch = ReasoningBatch()
    texts = BatchText(batch)
    for rid in rids:
        batch.add(rid, p, prompt or [])
        texts.add(rid)
    return batch, texts


@pytest.mark.parametrize("loop", ["numpy", "scalar"])
def test_many_requests_of_prose_take_the_table(loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty Qwen3 requests one token at a time, each from its own offset: the text equals
    TextSplitter's, and most rows never reach a decoder (counted)."""
    monkeypatch.setattr(batch_text, "SMALL", 0 if loop == "numpy" else 1 << 30)
    tok = tokenizer("qwen-3")
    p = parser("qwen3", "qwen-3", {})
    prompt = tok.encode("<|im_start|>assistant\n")
    out = tok.encode(PROSE)
    decoded = []
    real = BatchText._decode

    def counting(self: BatchText, *args: Any) -> tuple[str, str]:
        decoded.append(1)
        return real(self, *args)

    monkeypatch.setattr(BatchText, "_decode", counting)
    reqs = [Req(i, p, prompt, out[i % 5 :] + out[: i % 5], True) for i in range(40)]
    batch, texts = _batch_of(p, [r.rid for r in reqs], prompt)
    rows = 0
    for pos in range(len(out)):
        res = batch.step(
            np.arange(40), np.array([r.output[pos] for r in reqs]), np.arange(41, dtype=np.int64)
        )
        reasoning, content = texts.step(res)
        for row, r in enumerate(reqs):
            assert (reasoning[row], content[row]) == r.ref.feed([r.output[pos]])
            rows += 1
    assert len(decoded) < rows // 4  # the plain rows, the large majority, skip the decoder


def _one(batch: ReasoningBatch, rid: int, tok: int) -> Any:
    return batch.step(np.array([rid]), np.array([tok]), np.array([0, 1]))


def test_a_request_never_added_is_named_and_nothing_changes() -> None:
    tok = tokenizer("qwen-3")
    p = parser("qwen3", "qwen-3", {})
    batch, texts = _batch_of(p, [1])
    batch.add(2, p, [])  # not added to texts
    t = tok.encode("Hello")[0]
    res = batch.step(np.array([1, 2]), np.array([t, t]), np.array([0, 1, 2]))
    with pytest.raises(UnknownTextRequestError, match="request 2 was not added"):
        texts.step(res)
    # Request 1 is where it was: its next text is what a fresh splitter gives.
    ref = TextSplitter(fresh(p), [])
    ref.feed([t])
    want = ref.feed([t])
    assert texts.step(_one(batch, 1, t)) == ([want[0]], [want[1]])
    with pytest.raises(UnknownTextRequestError, match="finish\\(\\): request 2"):
        texts.finish(2, batch.finish(2))


def test_added_twice_and_finished_twice_raise() -> None:
    p = parser("qwen3", "qwen-3", {})
    batch, texts = _batch_of(p, [5])
    with pytest.raises(ValueError, match="request 5 was already added"):
        texts.add(5)
    texts.finish(5, batch.finish(5))
    with pytest.raises(UnknownTextRequestError, match="request 5"):
        texts.finish(5, BatchFinish([], [], [], b"", batch.usage(5)))
    texts.remove(5)  # a no-op once it left
    batch.remove(5)
    assert 5 not in texts


# The CASES whose parser may return reasoning as content, written out so that collecting
# builds no parser (as ``test_batch.HOLD_BACK``); the test below checks it against them.
HOLDING_KEYS = {
    (
        "granite_thinking",
        "deepseek-v2_base_with_granite_thinking_special_tokens",
        (("enable_thinking", False),),
    ),
    (
        "granite_thinking",
        "deepseek-v2_base_with_granite_thinking_special_tokens",
        (("force_nonempty_content", True),),
    ),
    (
        "nemotron_v3",
        "qwen-3_base_with_nemotron_v3_special_tokens",
        (("enable_thinking", False),),
    ),
    (
        "nemotron_v3",
        "qwen-3_base_with_nemotron_v3_special_tokens",
        (("force_nonempty_content", True),),
    ),
}
HOLDING = [case for case in CASES if case_key(case) in HOLDING_KEYS]


def test_the_holding_cases_are_cases() -> None:
    assert {case_key(c) for c in CASES} >= HOLDING_KEYS


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{sorted(c[2])}")
def test_the_holding_cases_are_the_parsers_that_may_swap(
    case: tuple[str, str, dict[str, Any]],
) -> None:
    """Each case's built parser agrees with HOLDING_KEYS (one case at a time: the test runs
    with its tokenizer's other tests)."""
    assert parser(*case).may_return_reasoning_as_content == (case_key(case) in HOLDING_KEYS)


def test_the_holding_cases_exist() -> None:
    """Otherwise the test below would say nothing."""
    assert {family for family, _, _ in HOLDING} >= {"nemotron_v3", "granite_thinking"}


@pytest.mark.parametrize("loop", ["numpy", "scalar"])
@pytest.mark.parametrize("case", HOLDING, ids=lambda c: f"{c[0]}-{sorted(c[2])}")
def test_held_reasoning_is_released_or_swapped_as_the_splitter_does(
    case: tuple[str, str, dict[str, Any]], loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A family that may present a reasoning-only output as content (nemotron_v3,
    granite with thinking off): reasoning text is held until content comes (then released
    before it) or the request ends (then it is the content); token by token and in
    steps of three, in a batch with a plain request beside it."""
    monkeypatch.setattr(batch_text, "SMALL", 0 if loop == "numpy" else 1 << 30)
    p = parser(*case)
    tok = p.tokenizer
    thought = tok.encode("Let me think.\n\nStill thinking, é.")
    answer = tok.encode("The answer.")
    other = parser("qwen3", "qwen-3", {})
    prose = other.tokenizer.encode("Plain prose beside it.")
    for output in (thought + p.end_marker_token_ids() + answer, thought):
        for k in (1, 3):
            reqs = [
                Req(1, p, [], output, True),
                Req(2, other, [], prose, True),
            ]
            _run(reqs, random.Random(k), k)
            assert reqs[0].got[0] + reqs[0].got[1]  # text came out


def test_a_request_removed_from_the_batch_first_is_named_by_the_next_in_its_slot() -> None:
    """``batch.remove`` without ``texts.remove``: the request that takes the slot next is
    refused with the old one's id, ``texts.remove(old)`` works after the batch forgot it,
    and the new request then starts clean."""
    tok = tokenizer("qwen-3")
    p = parser("qwen3", "qwen-3", {})
    batch, texts = _batch_of(p, [1])
    batch.remove(1)
    batch.add(2, p, [])
    with pytest.raises(ValueError, match=r"slot of request 1.*texts\.remove\(1\)"):
        texts.add(2)
    texts.remove(1)
    assert 1 not in texts
    texts.add(2)
    ref = TextSplitter(fresh(p), [])
    for t in tok.encode("<think>\nA thought.\n\n</think>\n\nAn answer."):
        want = ref.feed([t])
        assert texts.step(_one(batch, 2, t)) == ([want[0]], [want[1]])
    assert texts.finish(2, batch.finish(2)) == ref.finish()


@pytest.mark.parametrize("loop", ["numpy", "scalar"])
def test_a_tokenizer_without_a_byte_table_goes_through_its_decoder(
    loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Unigram/Metaspace vocabulary (jiutian, real) has no per-token text table: its
    request's rows all go through its decoder (DecodeStream), beside a byte-level request
    whose rows take the table, in one batch, and alone; every text is its splitter's."""
    monkeypatch.setattr(batch_text, "SMALL", 0 if loop == "numpy" else 1 << 30)
    meta = tokenizer("jiutian-139moe-chat")
    assert not meta.byte_level
    p = create_parser_sync("minimax_m3", meta)
    out = meta.encode("<mm:think>Some thought, é.\n\nMore.</mm:think>The answer, 你好.")
    qwen = parser("qwen3", "qwen-3", {})
    prose = qwen.tokenizer.encode("<think>\nA thought.\n</think>\n\nPlain prose beside it.")
    for k in (1, 3):
        reqs = [Req(1, p, [], out, True), Req(2, qwen, [], prose, True)]
        _run(reqs, random.Random(k), k)
        assert "answer" in reqs[0].got[1] and "prose" in reqs[1].got[1]
        # Alone (no byte-level table in the batch at all), its ids still index the masks.
        alone = [Req(1, p, [], out, True), Req(3, p, [], out[2:] + out[:2], True)]
        _run(alone, random.Random(k), k)
        assert "answer" in alone[0].got[1]


def _trims_a_trail(case: tuple[str, str, dict[str, Any]]) -> bool:
    dec = parser(*case).decoder()
    return any(
        plain is not None and plain[1] and dec.holds_trail(channel)
        for plain, channel in zip(dec.plain_channels(), (REASONING, CONTENT), strict=True)
    )


# The CASES whose decoder holds a trailing run for a trim (:func:`_trims_a_trail`), written
# out so that collecting builds no parser; the test below checks it against the decoders.
TRAILING_KEYS = {
    ("declared", "qwen-3_base_with_declared_response_schema", ()),
    ("ernie45", "qwen-2.5_base_with_ernie45_special_tokens", ()),
    ("gemma4", "qwen-3_base_with_gemma4_special_tokens", ()),
    ("gemma4", "qwen-3_base_with_gemma4_special_tokens", (("enable_thinking", True),)),
    ("glm45", "glm-4.5v", ()),
    ("glm45", "glm-4.5v", (("enable_thinking", False),)),
    ("glm47", "glm-4.7-flash", ()),
    ("mimo", "qwen-3", ()),
    ("mimo", "qwen-3", (("enable_thinking", True),)),
    ("minimax_m2", "minimax", ()),
    ("qwen3", "qwen-3", ()),
    ("qwen3", "qwen-3", (("enable_thinking", False),)),
    ("step3p5", "qwen-3", ()),
}
TRAILING = [case for case in CASES if case_key(case) in TRAILING_KEYS]


def test_the_trailing_cases_are_cases() -> None:
    assert {case_key(c) for c in CASES} >= TRAILING_KEYS


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{sorted(c[2])}")
def test_the_trailing_cases_are_the_decoders_that_hold_a_trail(
    case: tuple[str, str, dict[str, Any]],
) -> None:
    """Each case's decoder agrees with TRAILING_KEYS (one case at a time, as above)."""
    assert _trims_a_trail(case) == (case_key(case) in TRAILING_KEYS)


def test_the_trailing_cases_exist() -> None:
    """Otherwise the test below would say nothing: reasoning trims (qwen3, glm45) and a
    content trim (ernie45) among them."""
    assert {family for family, _, _ in TRAILING} >= {"qwen3", "ernie45", "glm45"}


@pytest.mark.parametrize("loop", ["numpy", "scalar"])
@pytest.mark.parametrize("case", TRAILING, ids=lambda c: f"{c[0]}-{sorted(c[2])}")
def test_paragraph_breaks_held_here_come_out_as_the_splitter_gives_them(
    case: tuple[str, str, dict[str, Any]], loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trim holds the trailing newlines of a text until the next text shows they are not
    before a marker or the end; BatchText holds them itself for a channel that is
    otherwise plain (:meth:`BatchText._trail_one`). Paragraph breaks followed by text, by
    another break token, by the end marker, by the end of the output, and crossed by
    several-token steps: every delta and finish equal the request's own TextSplitter,
    and the held path is taken (counted)."""
    monkeypatch.setattr(batch_text, "SMALL", 0 if loop == "numpy" else 1 << 30)
    p = parser(*case)
    tok = p.tokenizer
    taken = []
    real = BatchText._trail_one

    def counting(self: BatchText, *args: Any) -> str | None:
        got = real(self, *args)
        if got is not None:
            taken.append(got)
        return got

    monkeypatch.setattr(BatchText, "_trail_one", counting)

    def enc(*pieces: str) -> list[int]:
        return [t for piece in pieces for t in tok.encode(piece)]

    thought = enc("A thought.\n\n", "\n", ".\n\n", "More, é.\n\n", "Last.\n")
    answer = enc("\n\nThe answer.\n\n", "\n", ":\n", "Done.\n")
    end = p.end_marker_token_ids()
    other = parser("qwen3", "qwen-3", {})
    prose = other.tokenizer.encode("Plain prose beside it.\n\nAnd more.")
    for output in (thought + end + answer, thought, thought + end + answer[:-1]):
        for k in (1, 2, 3):
            reqs = [Req(1, p, [], output, True), Req(2, other, [], prose, True)]
            _run(reqs, random.Random(k), k)
            assert reqs[0].got[0] + reqs[0].got[1]  # text came out
    assert taken  # the held path ran

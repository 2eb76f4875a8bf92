"""The scalar step for a few requests (``runtime/batch/small.py``) against the vectorized
step and against each request's own ``stream()``, on real tokenizers.

- Lockstep: the same requests and steps through two batches, one allowed the scalar step
  and one not, give equal results field by field (values, dtypes, shapes), equal usage,
  and the scalar batch really took its path.
- Per request: ``test_batch.simulate`` (each step against the request's own ``stream()``,
  each finished request against ``parse()``) on small batches with plain options.
- Bad input: every bad call raises what the vectorized step raises, names the same
  thing, and changes nothing.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonspan import ReasoningBatch
from reasonspan.runtime import BatchTokenError, InvalidStepError, UnknownRequestError
from reasonspan.runtime.batch import small as batch_small
from reasonspan.runtime.batch import step as batch_module
from reasonspan.runtime.batch.result import BatchStepResult
from tests.batch.test_batch import CASES, MIX_COUNT, MIXES, Req, case_key, parser, simulate
from tests.support.sampling import examples
from tests.support.strategies import outputs


def _vectorized(case: tuple[str, str, dict[str, Any]]) -> bool:
    """A case whose requests go by table alone (single-token markers, no lead rule)."""
    b = ReasoningBatch()
    b.add(0, parser(*case), [])
    return b.is_vectorized(0)


# The CASES whose requests do not go by table alone, written out so that collecting builds
# no parser (every case's tokenizer, in each xdist worker: 2 GB and a minute); the rest,
# VECTORIZED, is the scalar step's whole domain. The test below checks the list.
NOT_VECTORIZED = {
    ("deepseek_r1", "deepseek-r1", ()),
    ("deepseek_v3", "deepseek-v3.1", (("thinking", True),)),
    ("deepseek_v4", "deepseek-v4", ()),
    ("deepseek_v4", "deepseek-v4", (("reasoning_effort", "none"),)),
    ("deepseek_v41", "deepseek-v4", ()),
    ("deepseek_v41", "deepseek-v4", (("reasoning_effort", "none"),)),
    ("granite", "qwen-2.5_base_with_granite_special_tokens", ()),
    ("granite", "qwen-2.5_base_with_granite_special_tokens", (("thinking", True),)),
    ("holo2", "qwen-3", ()),
    ("hunyuan_a13b", "qwen-2.5_base_with_hunyuan_a13b_special_tokens", ()),
    # Inkling holds the header after <|message_model|> until the next framing token.
    ("inkling", "glm-4_base_with_inkling_special_tokens", ()),
    ("kimi_k3", "qwen-3_base_with_kimi_k3_special_tokens", ()),
    ("kimi_k3", "qwen-3_base_with_kimi_k3_special_tokens", (("thinking", False),)),
    ("minicpmv", "qwen-3_base_with_minicpmv_special_tokens", ()),
    ("minicpmv", "qwen-3_base_with_minicpmv_special_tokens", (("enable_thinking", True),)),
    ("minimax_m3", "minimax-m3", ()),
    ("minimax_m3", "minimax-m3", (("thinking_mode", "enabled"),)),
    ("muse_glimmer", "qwen-3_base_with_muse_glimmer_special_tokens", ()),
    (
        "muse_glimmer",
        "qwen-3_base_with_muse_glimmer_special_tokens",
        (("reasoning_strength", "low"),),
    ),
    ("nemotron_v1", "qwen-2.5_base_with_llama3_special_tokens", ()),
    ("olmo3", "qwen-2.5", ()),
    ("openai_gptoss", "qwen-3_base_with_openai_gptoss_special_tokens", ()),
    ("plamo3", "qwen-2.5_base_with_plamo3_special_tokens", ()),
    ("plamo3", "qwen-2.5_base_with_plamo3_special_tokens", (("enable_thinking", False),)),
    ("minimax_m3", "minimax", ()),
    ("minimax_m3", "minimax", (("thinking_mode", "enabled"),)),
}
VECTORIZED = [case for case in CASES if case_key(case) not in NOT_VECTORIZED]
VECTORIZED_MIXES = [[c for c in mix if c in VECTORIZED] for mix in MIXES]


def test_the_listed_cases_are_cases() -> None:
    assert {case_key(c) for c in CASES} >= NOT_VECTORIZED


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{sorted(c[2])}")
def test_the_vectorized_cases_are_the_requests_that_go_by_table(
    case: tuple[str, str, dict[str, Any]],
) -> None:
    """Each case agrees with NOT_VECTORIZED (one case at a time: the test runs with its
    tokenizer's other tests, so no test holds every tokenizer)."""
    assert _vectorized(case) == (case_key(case) not in NOT_VECTORIZED)


FIELDS = (
    "request_ids",
    "token_ids",
    "offsets",
    "labels",
    "is_reasoning",
    "grammar_active",
    "grammar_mask",
    "grammar_stopped",
    "reasoning_tokens",
    "budget_remaining",
    "forcing",
    "next_forced_token",
    "held_tokens",
    "slots",
)


class Counting:
    """Counts the steps a scalar step (``step_small`` unless told, or ``step_one``) took;
    it returns None when it declines."""

    def __init__(self, step: Callable[..., BatchStepResult | None] | None = None) -> None:
        self.step = batch_small.step_small if step is None else step
        self.taken = 0
        self.declined = 0

    def __call__(self, *args: Any) -> BatchStepResult | None:
        got = self.step(*args)
        if got is None:
            self.declined += 1
        else:
            self.taken += 1
        return got


def test_the_domain_is_not_empty() -> None:
    """Otherwise the tests below would say nothing."""
    names = {family for family, _, _ in VECTORIZED}
    assert {"qwen3", "deepseek_v3", "glm45"} <= names


def _same(a: BatchStepResult, b: BatchStepResult, rids: list[int]) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert x.tolist() == y.tolist(), name
    assert a.errors == b.errors == {}
    assert len(a) == len(b)
    for rid in rids:
        assert a.split(rid) == b.split(rid)
        assert a.decided(rid) == b.decided(rid)
        assert a.forced_token_ids(rid) == b.forced_token_ids(rid) == []
        assert a.row(rid) == b.row(rid)
    assert list(a.all_decided()) == list(b.all_decided())


@pytest.mark.parametrize("mix", range(MIX_COUNT))
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_scalar_steps_equal_vectorized_steps(mix: int, data: st.DataObject, seed: int) -> None:
    rng = random.Random(seed)
    n = data.draw(st.integers(1, batch_small.SMALL_REQUESTS), label="requests")
    kmax = data.draw(st.integers(1, 4), label="kmax")
    as_lists = data.draw(st.booleans(), label="lists, not arrays")
    reqs = []
    for i in range(n):
        p = parser(*data.draw(st.sampled_from(VECTORIZED_MIXES[mix]), label="case"))
        reqs.append(
            (
                i * 7919 - 50_000,
                p,
                data.draw(outputs(p), label="prompt"),
                data.draw(outputs(p), label="output"),
                data.draw(st.booleans(), label="include_reasoning"),
            )
        )
    scalar, vector = ReasoningBatch(capacity=2), ReasoningBatch(capacity=2)
    for rid, p, prompt, _, include in reqs:
        for b in (scalar, vector):
            b.add(rid, p, prompt, include_reasoning=include)
    counting = Counting()
    pos = [0] * n
    too_many = 0
    with pytest.MonkeyPatch.context() as mp:
        first = True
        while first or any(pos[i] < len(r[3]) for i, r in enumerate(reqs)):
            first = False
            order = rng.sample(range(n), n)
            chunks = []
            for i in order:
                k = min(rng.randrange(0, kmax + 1), len(reqs[i][3]) - pos[i])
                chunks.append(reqs[i][3][pos[i] : pos[i] + k])
                pos[i] += k
            rids = [reqs[i][0] for i in order]
            flat = [t for c in chunks for t in c]
            offsets = np.cumsum([0, *map(len, chunks)]).tolist()
            args: tuple[Any, Any, Any] = (
                (rids, flat, offsets)
                if as_lists
                else (np.array(rids, np.int64), np.array(flat, np.int64), np.array(offsets))
            )
            mp.setattr(batch_module, "step_small", counting)
            a = scalar.step(*args)
            mp.undo()
            mp.setattr(batch_small, "SMALL_REQUESTS", 0)
            b = vector.step(*args)
            mp.undo()
            _same(a, b, rids)
            too_many += len(flat) > batch_small.SMALL_TOKENS  # the scalar step's bound
    assert counting.taken and counting.declined == too_many
    for rid, *_ in reqs:
        fa, fb = scalar.finish(rid), vector.finish(rid)
        assert fa == fb
        assert scalar.usage(rid) == vector.usage(rid)


@pytest.mark.parametrize("mix", range(MIX_COUNT))
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), kmax=st.integers(1, 4))
def test_small_batches_equal_each_request_alone(
    mix: int, data: st.DataObject, seed: int, kmax: int
) -> None:
    """``simulate`` with at most SMALL_REQUESTS requests, plain options: every step goes
    through the scalar step, and each request still gets what its own parser gives."""
    n = data.draw(st.integers(1, batch_small.SMALL_REQUESTS), label="requests")
    reqs, admit = [], []
    for i in range(n):
        p = parser(*data.draw(st.sampled_from(VECTORIZED_MIXES[mix]), label="case"))
        reqs.append(
            Req(
                rid=i * 104_729 + 3,
                template=p,
                prompt=data.draw(outputs(p), label="prompt"),
                output=data.draw(outputs(p), label="output"),
                include=data.draw(st.booleans(), label="include_reasoning"),
            )
        )
        admit.append(data.draw(st.integers(0, 4), label="admit step"))
    counting = Counting()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_module, "step_small", counting)
        simulate(reqs, admit, random.Random(seed), kmax)
    assert counting.taken


def test_bad_input_raises_as_before_and_changes_nothing() -> None:
    """The scalar step declines every bad call; the vectorized step then raises exactly
    its error, and both requests go on as if the call never happened."""
    qwen = parser("qwen3", "qwen-3")
    glm = parser("glm45", "glm-4.5v")
    a_out = qwen.tokenizer.encode("Hmm, 2 + 2.") + qwen.end_marker_token_ids() + [19, 20]
    b_out = glm.tokenizer.encode("Let me see.") + glm.end_marker_token_ids() + [33]
    batch, ref = ReasoningBatch(), ReasoningBatch()
    for b in (batch, ref):
        b.add(10, qwen, [])
        b.add(-3, glm, [])
    t = a_out[0]
    vocab = qwen.machine.vocab_size
    bad: list[tuple[tuple[Any, Any, Any], type[Exception], str]] = [
        (([10, 999], [t, t], [0, 1, 2]), UnknownRequestError, "request 999"),
        (([10, 10], [t, t], [0, 1, 2]), InvalidStepError, "more than once"),
        (([10, -3], [t], [0, 1]), InvalidStepError, "3 entries, got 2"),
        (([10, -3], [t], [0, 2, 1]), InvalidStepError, "non-decreasing"),
        (([10, -3], [t, t], [1, 1, 2]), InvalidStepError, "offsets[0]"),
        (([10, -3], [t, t], [0, 1, 3]), InvalidStepError, "offsets[-1]"),
        (([10, -3], [1.5, 2.0], [0, 1, 2]), BatchTokenError, "= 1.5 is of type float"),
        (([10, -3], [True, 2], [0, 1, 2]), BatchTokenError, "of type bool"),
        (([10, -3], np.array([1.5, 2.0]), [0, 1, 2]), InvalidStepError, "integers"),
        (([[10, -3]], [t, t], [0, 1, 2]), InvalidStepError, "1-D"),
        (([10, -3], [vocab + 5, t], [0, 1, 2]), BatchTokenError, "of request 10"),
        (([10, -3], [t, -1], [0, 1, 2]), BatchTokenError, "request -3"),
        (([10, -3], [t, 2**63], [0, 1, 2]), BatchTokenError, "request -3"),
        ((np.array([10, 3], np.uint64), [t, t], [0, 1, 2]), UnknownRequestError, "request 3"),
    ]
    counting = Counting()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_module, "step_small", counting)
        for args, exc, words in bad:
            with pytest.raises(exc, match=re.escape(words)):
                batch.step(*args)
    assert counting.declined == len(bad) and not counting.taken
    for i in range(max(len(a_out), len(b_out))):
        a, b = a_out[i : i + 1], b_out[i : i + 1]
        args = ([10, -3], a + b, [0, len(a), len(a) + len(b)])
        got = batch.step(*args)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batch_small, "SMALL_REQUESTS", 0)
            want = ref.step(*args)
        _same(got, want, [10, -3])
    for rid in (10, -3):
        assert batch.finish(rid) == ref.finish(rid)


def test_arrays_are_made_once_and_owned_by_the_result() -> None:
    """A scalar step's arrays are made on first read, stay the same objects, and are the
    result's own: writing into one changes no later step."""
    p = parser("qwen3", "qwen-3")
    batch = ReasoningBatch()
    batch.add(1, p, [])
    ids = p.tokenizer.encode("Thinking.") + p.end_marker_token_ids() + [11]
    res = batch.step([1], ids[:1], [0, 1])
    first = res.labels
    assert res.labels is first and first.flags.writeable
    res.is_reasoning[0] = not res.is_reasoning[0]
    res.reasoning_tokens[0] += 5
    nxt = batch.step([1], ids[1:2], [0, 1])
    assert bool(nxt.is_reasoning[0]) and int(nxt.reasoning_tokens[0]) == 2
    with pytest.raises(AttributeError):
        res.no_such_field  # noqa: B018


@pytest.mark.parametrize("case", VECTORIZED, ids=["-".join(map(str, c[:2])) for c in VECTORIZED])
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_lane_of_one_request_equals_vectorized_steps(
    case: tuple[str, str, dict[str, Any]], data: st.DataObject
) -> None:
    """One request decoding alone, one token per step or several (a draft model's),
    given as lists, tuples, int64 or int32 arrays: the lane (``step_one``) gives field
    by field what the vectorized step gives, through ``ReasoningBatch.step`` and
    ``ReasoningBatch.step_one`` alike."""
    p = parser(*case)
    prompt = data.draw(outputs(p), label="prompt")
    out = data.draw(outputs(p), label="output")
    include = data.draw(st.booleans(), label="include_reasoning")
    lane, vector = ReasoningBatch(), ReasoningBatch()
    for b in (lane, vector):
        b.add(-17, p, prompt, include_reasoning=include)
    counting = Counting(batch_small.step_one)
    pos = steps = 0
    while pos < len(out):
        k = data.draw(st.sampled_from([1, 1, 2, 3, 5]), label="k")
        toks, pos, steps = out[pos : pos + k], pos + k, steps + 1
        form = data.draw(st.sampled_from(["list", "tuple", "int64", "int32", "direct"]))
        args: tuple[Any, Any, Any]
        if form in ("list", "direct"):
            args = ([-17], toks, [0, len(toks)])
        elif form == "tuple":
            args = ((-17,), tuple(toks), [0, len(toks)])
        else:
            dtype = np.int32 if form == "int32" else np.int64
            args = (np.array([-17], dtype), np.array(toks, dtype), np.array([0, len(toks)], dtype))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batch_small, "step_one", counting)
            mp.setattr(batch_module, "step_one", counting)
            a = lane.step_one(*args) if form == "direct" else lane.step(*args)
        assert a is not None, f"step {steps}: the lane declined a plain step"
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batch_small, "SMALL_REQUESTS", 0)
            b = vector.step(*args)
        _same(a, b, [-17])
    assert counting.taken == steps and not counting.declined
    assert lane.finish(-17) == vector.finish(-17)


def test_the_lane_declines_what_it_cannot_take_and_errors_stay_the_same() -> None:
    """One-request steps the lane must not take (bad input, an unknown or finished id, a
    token outside the vocabulary, of one token or several) raise exactly what the
    vectorized step raises, or are taken by the general steps; nothing changes on an
    error."""
    p = parser("qwen3", "qwen-3")
    out = p.tokenizer.encode("Hmm, 2 + 2.") + p.end_marker_token_ids() + [19, 20]
    batch, ref = ReasoningBatch(), ReasoningBatch()
    for b in (batch, ref):
        b.add(10, p, [])
    t = out[0]
    vocab = p.machine.vocab_size
    bad: list[tuple[tuple[Any, Any, Any], type[Exception], str]] = [
        (([999], [t], [0, 1]), UnknownRequestError, "request 999"),
        (([10], [vocab + 5], [0, 1]), BatchTokenError, "of request 10"),
        (([10], [-1], [0, 1]), BatchTokenError, "of request 10"),
        (([10], [2**63], [0, 1]), BatchTokenError, "of request 10"),
        (([10], [True], [0, 1]), BatchTokenError, "of type bool"),
        (([10], [float(t)], [0, 1]), BatchTokenError, "of type float"),
        (([10], [t], [False, True]), InvalidStepError, "integers"),
        (([10], [t], [0, 2]), InvalidStepError, "offsets[-1]"),
        (([10], [t], [1, 1]), InvalidStepError, "offsets[0]"),
        (([[10]], [t], [0, 1]), InvalidStepError, "1-D"),
        (([10], np.array([t], dtype=object), [0, 1]), InvalidStepError, "integers"),
        (([10], [t], np.array([0, 1], dtype=object)), InvalidStepError, "integers"),
        ((np.array([10.0]), [t], [0, 1]), InvalidStepError, "integers"),
        # Arrays of other dtypes and shapes (read by tolist(): floats, bools, a scalar,
        # nested lists), each named as the vectorized step names it.
        (([10], np.array(t), [0, 1]), InvalidStepError, "1-D"),
        ((np.array(10), [t], [0, 1]), InvalidStepError, "1-D"),
        (([10], np.array([[t]]), [0, 1]), InvalidStepError, "1-D"),
        (([10], np.array([float(t)]), [0, 1]), InvalidStepError, "integers"),
        (([10], np.array([True]), [0, 1]), InvalidStepError, "integers"),
        (([10], [t], np.array([0.0, 1.0])), InvalidStepError, "integers"),
        (([10], [t], np.array([False, True])), InvalidStepError, "integers"),
        (([10], [t], np.array([[0, 1]])), InvalidStepError, "1-D"),
        # Several tokens.
        (([999], [t, t], [0, 2]), UnknownRequestError, "request 999"),
        (([10], [t, vocab + 5], [0, 2]), BatchTokenError, "of request 10"),
        (([10], [-1, t], [0, 2]), BatchTokenError, "of request 10"),
        (([10], [t, 2**63], [0, 2]), BatchTokenError, "of request 10"),
        (([10], [t, True], [0, 2]), BatchTokenError, "of type bool"),
        (([10], (t, float(t)), [0, 2]), BatchTokenError, "of type float"),
        (([10], [t, t], [0, 3]), InvalidStepError, "offsets[-1]"),
        (([10], [t, t], [1, 2]), InvalidStepError, "offsets[0]"),
        (([10, 10], [t, t], [0, 2]), InvalidStepError, "3 entries, got 2"),
        (([10], np.array([[t, t]]), [0, 2]), InvalidStepError, "1-D"),
        (([10], np.array([t, t], dtype=object), [0, 2]), InvalidStepError, "integers"),
        (([10], np.array([float(t), 1.0]), [0, 2]), InvalidStepError, "integers"),
        (([10], [t, t], np.array([0.0, 2.0])), InvalidStepError, "integers"),
        ((np.array([10.0]), [t, t], [0, 2]), InvalidStepError, "integers"),
    ]
    counting = Counting(batch_small.step_one)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_module, "step_one", counting)
        mp.setattr(batch_small, "step_one", counting)
        for args, exc, words in bad:
            with pytest.raises(exc, match=re.escape(words)):
                batch.step(*args)
    assert not counting.taken
    assert batch.step_one([999], [t], [0, 1]) is None
    assert batch.step_one([10], [vocab + 5], [0, 1]) is None
    assert batch.step_one([10], [t, vocab + 5], [0, 2]) is None
    # Steps of one request the lane leaves to the general step, taken there alike.
    many = [t] * (batch_small.SMALL_TOKENS + 1)
    general = [
        ([10], [], [0, 0]),
        ([10], (t,), (0, 1)),
        ([10], (t, t), (0, 2)),
        ([10], many, [0, len(many)]),
    ]
    for args in general:
        assert batch.step_one(*args) is None
        got = batch.step(*args)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batch_small, "SMALL_REQUESTS", 0)
            want = ref.step(*args)
        _same(got, want, [10])
    for tok in out:
        got = batch.step([10], [tok], [0, 1])
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batch_small, "SMALL_REQUESTS", 0)
            want = ref.step([10], [tok], [0, 1])
        _same(got, want, [10])
    assert batch.finish(10) == ref.finish(10)
    assert batch.step_one([10], [t], [0, 1]) is None  # finished: the lane declines
    with pytest.raises(Exception) as got_err:
        batch.step([10], [t], [0, 1])
    with pytest.raises(type(got_err.value), match=re.escape(str(got_err.value))):
        ref.step([10], [t], [0, 1])

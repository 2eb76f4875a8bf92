"""``ReasoningSpec.cut``: a marker after which the output is over (PLaMo 3's end of turn
``<|plamo:tag|>``). The marker and every later token are DELIMITERs, never text, however
the output is split, per request and in the batch.

PLaMo 3 runs on ``qwen-2.5_base_with_plamo3_special_tokens`` (a real Qwen2.5 tokenizer
with PLaMo 3's documented special tokens added: no PLaMo 3 tokenizer ships in the test
data); the generic spec runs on the real Qwen3 tokenizer. Expected labels and text are
built from the pieces each test writes.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label, ReasoningBatch, ReasoningParser, TextSplitter
from reasonspan.runtime.core.errors import MissingMarkerError
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from tests.batch.test_batch import Req, simulate
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.strategies import outputs, splits

R, C, D = (int(x) for x in (Label.REASONING, Label.CONTENT, Label.DELIMITER))
PLAMO = tokenizer(FAMILY_TOKENIZERS["plamo3"])
QWEN = tokenizer("qwen-3")
BEGIN, END = "<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>"
EOT = "<|plamo:tag|>"
THOUGHT, ANSWER = "Two and two make four.", "It is 4."
# What an engine that keeps generating past the end of turn may write: text, markers.
AFTER = f"<|plamo:msg|>user\nMore?{EOT}{BEGIN}x{END}y"
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def plamo(**kwargs: Any) -> ReasoningParser:
    return reasonspan.create_parser_sync("plamo3", PLAMO, kwargs or None)


def pieces(tok: Any, before: str, marker: str, after: str) -> tuple[list[int], int]:
    """Token ids of ``before + marker + after`` (the marker one token), and its index."""
    head = tok.encode(before)
    mid = tok.encode(marker)
    assert len(mid) == 1
    return head + mid + tok.encode(after), len(head)


class CutSpecParser(ReasoningParser):
    """A generic spec with a cut marker on a real tokenizer (not registered)."""

    spec: ClassVar[ReasoningSpec] = ReasoningSpec(
        name="cut_test", start=("<think>",), end=("</think>",), cut=("<|im_end|>",)
    )


def generic(thinking: bool = True) -> ReasoningParser:
    machine = compile_machine(CutSpecParser.spec, QWEN, thinking=thinking, prompt_start=True)
    return CutSpecParser(QWEN, machine)


# ----------------------------------------------------------------------------- parse


@pytest.mark.parametrize(
    ("kwargs", "before", "reasoning", "content"),
    [
        ({}, f"{THOUGHT}{END}{ANSWER}", THOUGHT, ANSWER),  # after the answer
        ({}, THOUGHT, THOUGHT, None),  # inside reasoning: it ends the reasoning too
        ({"enable_thinking": False}, ANSWER, None, ANSWER),
    ],
)
def test_plamo3_drops_everything_after_the_end_of_turn(
    kwargs: dict[str, Any], before: str, reasoning: str | None, content: str | None
) -> None:
    ids, at = pieces(PLAMO, before, EOT, AFTER)
    res = plamo(**kwargs).parse(ids)
    assert (res.reasoning, res.content) == (reasoning, content)
    assert res.labels[at:] == bytes([D]) * (len(ids) - at)
    assert res.reasoning_ended
    assert res.delimiter_tokens >= len(ids) - at
    # Without the tail the same output reads the same: nothing after the cut counts.
    alone = plamo(**kwargs).parse(ids[: at + 1])
    assert (alone.reasoning, alone.content, alone.labels) == (
        res.reasoning,
        res.content,
        res.labels[: at + 1],
    )


def test_generic_cut_marker_on_single_token_markers() -> None:
    ids, at = pieces(QWEN, "a</think>b", "<|im_end|>", "c<think>d</think>e")
    res = generic().parse(ids)
    n_a = len(QWEN.encode("a"))
    assert (res.reasoning, res.content) == ("a", "b")
    assert res.labels[:n_a] == bytes([R]) * n_a
    assert res.labels[at:] == bytes([D]) * (len(ids) - at)
    # The prompt scan reads a cut marker as an end: nothing primed after it is content.
    assert not generic().is_prompt_in_reasoning(QWEN.encode("x<|im_end|>"))
    assert generic().is_prompt_in_reasoning(QWEN.encode("x<|im_end|><think>"))


def test_a_cut_marker_must_be_one_token() -> None:
    spec = ReasoningSpec(name="cut_bad", start=("<think>",), end=("</think>",), cut=("<eot2>",))
    with pytest.raises(MissingMarkerError, match="<eot2>"):
        compile_machine(spec, QWEN, thinking=True, prompt_start=True)


# ----------------------------------------------------------------- streaming, any split


@pytest.mark.parametrize("make", [plamo, lambda: plamo(enable_thinking=False), generic])
@SETTINGS
@given(data=st.data())
def test_any_split_after_a_cut_equals_parse(make: Any, data: st.DataObject) -> None:
    parser = make()
    marker = EOT if parser.tokenizer is PLAMO else "<|im_end|>"
    head = data.draw(outputs(parser), label="head")
    tail = data.draw(outputs(parser), label="tail")
    ids = [*head, parser.tokenizer.single_token_id(marker), *tail]
    expected = parser.parse(ids)
    # Every token from the marker on is a DELIMITER (the marker may end a held run,
    # so count from where the labels say it is).
    assert expected.labels[len(ids) - len(tail) :] == bytes([D]) * len(tail)
    parser.reset()
    state = parser.default_reasoning
    labels = b""
    for delta in data.draw(splits(ids), label="deltas"):
        # A caller that still thinks it is reasoning changes nothing after the cut.
        d = parser.stream(delta, state or parser.output_cut)
        labels += d.labels
        state = d.is_still_reasoning
    labels += parser.finish(state).labels
    assert labels == expected.labels
    split = TextSplitter(parser)
    r = c = ""
    for delta in data.draw(splits(ids), label="text deltas"):
        a, b = split.feed(delta)
        r, c = r + a, c + b
    a, b = split.finish()
    assert (r + a, c + b) == (expected.reasoning or "", expected.content or "")
    # reset() forgets the cut.
    parser.reset()
    assert not parser.output_cut
    assert parser.parse(head).labels == parser.stream(head, parser.default_reasoning).labels + (
        parser.finish().labels
    )


# ---------------------------------------------------------------------------- batch


@pytest.mark.parametrize("kmax", [1, 3])
def test_batch_equals_each_request_alone_across_a_cut(kmax: int) -> None:
    """PLaMo 3 (text markers and thinking off) and the generic spec, mixed with a
    vectorized family: each step equals the request's own stream(), each finish parse()."""
    rng = random.Random(kmax)
    qwen3 = reasonspan.create_parser_sync("qwen3", QWEN)
    cases = [
        (plamo(), EOT),
        (plamo(enable_thinking=False), EOT),
        (generic(), "<|im_end|>"),
        (qwen3, "<|im_end|>"),
    ]
    words = [" so", " 4.", "\n", " <", "x", END, BEGIN, "</think>", "<think>"]
    reqs: list[Req] = []
    admit: list[int] = []
    for i in range(40):
        p, marker = cases[i % len(cases)]
        text = "".join(rng.choice(words) for _ in range(rng.randrange(3, 12)))
        after = "".join(rng.choice(words) for _ in range(rng.randrange(0, 12)))
        ids = p.tokenizer.encode(text) + p.tokenizer.encode(marker) + p.tokenizer.encode(after)
        reqs.append(Req(rid=i, template=p, prompt=[], output=ids, budget=[None, 3][i % 2]))
        admit.append(rng.randrange(0, 6))
    assert simulate(reqs, admit, rng, kmax) > 0


def test_thinking_off_plamo3_goes_by_table_until_the_cut() -> None:
    off = plamo(enable_thinking=False)
    ids, at = pieces(PLAMO, ANSWER, EOT, " more text")
    batch = ReasoningBatch()
    batch.add(7, off, None)
    assert not off.machine.vectorizable and not batch.is_vectorized(7)
    labels = b""
    for t in ids:
        res = batch.step(np.array([7]), np.array([t], np.int64), np.array([0, 1]))
        labels += res.decided(7)[1]
    fin = batch.finish(7)
    labels += fin.labels
    assert labels == bytes([C]) * at + bytes([D]) * (len(ids) - at)
    assert fin.usage.delimiter_tokens == len(ids) - at
    assert fin.usage.content_tokens == at


def test_runtime_sends_nothing_after_the_cut() -> None:
    ids, _ = pieces(PLAMO, f"{THOUGHT}{END}{ANSWER}", EOT, AFTER)
    runtime = ReasoningRuntime()
    stream = runtime.add("r", plamo(), None)
    for t in ids:
        runtime.step(np.array([stream.engine_id]), np.array([t], np.int64), [0, 1])
    runtime.finish("r")
    deltas = [c.choices[0].delta for c in stream.ready()]
    assert "".join(d.reasoning or "" for d in deltas) == THOUGHT
    assert "".join(d.content or "" for d in deltas) == ANSWER
    assert stream.usage is not None
    assert stream.usage.completion_tokens == len(ids)

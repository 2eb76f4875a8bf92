"""hunyuan_a13b: one JSON list of calls between plain-text ``<tool_calls>`` markers.

Tokenizer: Qwen2.5's BPE with Hunyuan-A13B's turn tokens added
(``qwen-2.5_base_with_hunyuan_a13b_special_tokens``); ``<think>``, ``<answer>`` and
``<tool_calls>`` are plain text there, as in A13B's vocabulary, so every marker is matched
on token bytes.

Facts (architectures/hunyuan.py): A13B's tool chat template (vLLM's
``examples/tool_chat_template_hunyuan_a13b.jinja``) asks for, and writes back,
``<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>``; vLLM's ``hunyuan_a13b``
tool parser reads that list. The model opens ``<think>\\n`` itself and wraps its answer in
``<answer>`` (consumed).

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
from reasonspan.runtime.wire.openai import FinishReason
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# Hunyuan-A13B: only the turn tokens are special; its think/answer tags are plain text.
FIXTURE = "qwen-2.5_base_with_hunyuan_a13b_special_tokens"
ADDED_TOKENS = (
    "<|startoftext|>",
    "<|extra_0|>",
    "<|extra_4|>",
    "<|eos|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/hunyuan.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<tool_calls>[{"name": "f", "arguments": {"a": V}}]</tool_calls>',)

TOK = tokenizer(FAMILY_TOKENIZERS["hunyuan_a13b"])
PROMPT = TOK.encode("<|startoftext|>tools<|extra_4|>用户：Weather?<|extra_0|>")
OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
THINK = "<think>\n"
END = "\n</think>\n<answer>\n"
ANSWER_END = "\n</answer>"
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


def parser() -> ReasoningParser:
    return reasonspan.create_parser_sync("hunyuan_a13b", TOK)


def calls_text(*calls: tuple[str, dict[str, Any]]) -> str:
    """A call list as A13B's template writes it (``{"name": "…", "arguments": …}``, ``, ``)."""
    items = ", ".join(
        '{"name": "' + name + '", "arguments": ' + json.dumps(args, ensure_ascii=False) + "}"
        for name, args in calls
    )
    return f"{OPEN}[{items}]{CLOSE}"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "深圳", "days": 3}
NOTE = {"text": "两行\n🙂", "tags": ["a"]}


def test_the_markers_are_text_in_this_vocabulary() -> None:
    for marker in (OPEN, CLOSE, "<think>", "<answer>"):
        assert TOK.single_token_id(marker) is None, marker


def test_a_call_after_reasoning_inside_the_answer() -> None:
    out = THINK + "I need the weather." + END + calls_text(("get_weather", WEATHER))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I need the weather."
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls_in_one_list_and_text_before() -> None:
    out = THINK + "plan" + END + "Checking.\n"
    out += calls_text(("get_weather", WEATHER), ("note", NOTE)) + " Done." + ANSWER_END
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == "Checking.\nDone."  # one separator: the run before the call
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]


@pytest.mark.parametrize("finish", ["length", "stop"])
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", ANSWER_END),
        ("Checking.\n", ANSWER_END),
        ("", "\n" + ANSWER_END),
        ("", ANSWER_END + "\n"),
    ],
)
def test_a_call_right_before_the_answer_close(
    before: str, after: str, finish: FinishReason
) -> None:
    out = THINK + "t" + END + before + calls_text(("note", NOTE)) + after
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS, finish)
    assert res.tool_calls == [call("note", NOTE)]
    assert (res.content or "") == before.strip()


def test_fast_think_then_a_call() -> None:
    out = "<think>\n\n</think>\n<answer>\n" + calls_text(("note", NOTE))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.tool_calls == [call("note", NOTE)]


def test_a_close_marker_inside_a_string_argument_is_text() -> None:
    args = {"text": f"write {CLOSE} literally"}
    res = every_path(parser, PROMPT, TOK.encode(calls_text(("note", args))), TOOLS)
    assert res.tool_calls == [call("note", args)]


def test_a_call_that_does_not_read_drops_only_itself() -> None:
    out = OPEN + '[{"name": "note", "arguments": 3}, ' + calls_text(("note", NOTE))[len(OPEN) + 1 :]
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("note", NOTE)]


@pytest.mark.parametrize("bad", [f"{OPEN}not json{CLOSE}", f'{OPEN}[{{"arguments": {{}}}}]{CLOSE}'])
def test_a_malformed_body_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = THINK + "t" + END + "Before.\n" + bad
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Before.\n" + bad


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), PROMPT, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    head = THINK + "t" + END + "Checking.\n"
    start = len(TOK.encode(head + OPEN))  # (a cut inside the opener leaves text)
    whole = TOK.encode(head + calls_text(("get_weather", WEATHER), ("note", NOTE)))
    for cut in range(start + 2, len(whole) - 1):
        ids = whole[:cut]
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert (res.content, res.tool_calls) == ("Checking.", []), cut
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            assert split_at(parser(), PROMPT, ids, cuts, TOOLS) == ("t", "Checking.", [])
        assert anyio.run(_served_until, ids, "length") == ("t", "Checking.", [])


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = THINK + "t" + END + calls_text(("note", NOTE)) + " ok" + ANSWER_END
    res = parser().parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == [] and res.content == calls_text(("note", NOTE)) + " ok"


def test_every_split_of_mixed_outputs() -> None:
    pieces = [
        THINK + "plan ",
        END,
        "A ",
        calls_text(("get_weather", {"city": "Oslo"})),
        f"\n{OPEN}{{bad{CLOSE}",
        " B",
        calls_text(("note", {}), ("note", NOTE)),
        " C" + ANSWER_END,
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        whole = sum(p.count('"name"') for p in chosen)
        # (an unclosed <think> block holds the rest of the output, calls included)
        assert len(res.tool_calls) == (whole if END in chosen else 0), chosen


# ---------------------------------------------------------------------- matrix rows

A13B_Q = "<|startoftext|>Q<|extra_0|>"


def test_think_and_answer() -> None:
    out = "<think>\nplan\n</think>\n<answer>\nHello\n</answer>"
    res = fc.split("hunyuan_a13b", out, prompt=A13B_Q)
    assert fc.texts(res) == ("plan", "Hello")
    assert res.reasoning_ended
    # The end marker starts inside a token ("\n\n" before "</") and still matches.
    out = "<think>\nplan\n\n</think>\n<answer>\nHello\n</answer>"
    assert fc.texts(fc.split("hunyuan_a13b", out)) == ("plan\n", "Hello")


def test_fast_think_answer_only_and_no_markers() -> None:
    assert not fc.in_reasoning("hunyuan_a13b", A13B_Q)
    fast = "<think>\n\n</think>\n<answer>\nHello\n</answer>"
    assert fc.texts(fc.split("hunyuan_a13b", fast, prompt=A13B_Q)) == (None, "Hello")
    fast = "<think>\n\n</think>\n<answer>Hello</answer>"
    assert fc.texts(fc.split("hunyuan_a13b", fast, prompt=A13B_Q)) == (None, "Hello")
    assert fc.texts(fc.split("hunyuan_a13b", "<answer>\nHi\n</answer>")) == (None, "Hi")
    assert fc.texts(fc.split("hunyuan_a13b", "Just text.")) == (None, "Just text.")


def test_truncated_empty_repeated() -> None:
    res = fc.split("hunyuan_a13b", "<think>\nplan")
    assert fc.texts(res) == ("plan", None) and not res.reasoning_ended
    res = fc.split("hunyuan_a13b", "<think>\nplan\n</think>\n<answer>\n")
    assert fc.texts(res) == ("plan", None) and res.reasoning_ended
    out = "<think>\na\n</think>\n<answer>\nb\n</think>\n<answer>\nc\n</answer>"
    assert fc.texts(fc.split("hunyuan_a13b", out)) == ("a", "bc")


def test_multi_turn_history() -> None:
    history = (
        "<|startoftext|>Q1<|extra_0|><think>\nold\n</think>\n<answer>\nA1\n</answer><|eos|>"
        "Q2<|extra_0|>"
    )
    assert not fc.in_reasoning("hunyuan_a13b", history)
    assert fc.in_reasoning("hunyuan_a13b", history + "<think>\n")
    unclosed = "<|startoftext|>Q1<|extra_0|><think>\nold<|eos|>Q2<|extra_0|>"
    assert not fc.in_reasoning("hunyuan_a13b", unclosed)

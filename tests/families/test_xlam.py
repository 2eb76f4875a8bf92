"""xlam: no reasoning; the answer is a bare JSON list of calls, or the list fenced, in
``<tool_call>`` tags or after ``[TOOL_CALLS]`` (the forms vLLM's ``xlam`` parser reads).

Tokenizer: Qwen2.5's real one (``qwen-2.5``): xLAM-2-1b/3b/32b-fc-r are Qwen2.5
fine-tunes on its vocabulary (``<tool_call>`` is one token there, ``[TOOL_CALLS]`` and the
fences are text). Facts: xLAM-2's chat templates as vLLM ships them (the system prompt's
"single JSON array", an assistant's calls written as that list alone), vLLM's ``xlam``
parser and its tests (whose outputs several cases below follow). The body is JSON, so
values are typed as the model wrote them. Expected texts and calls are built here from
their pieces, never read back from the output.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import reasonspan
from reasonspan import ReasoningParser
from reasonspan.runtime.core.labels import TOOL_CALL
from reasonspan.runtime.toolcalls import ToolCall
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# xLAM-2-1b/3b/32b-fc-r are Qwen2.5 fine-tunes on Qwen2.5's vocabulary: the real one.
FIXTURE = "qwen-2.5"

# One call to f(a=V) in each form of the tool-call format architectures/xlam.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '```json\n[{"name": "f", "arguments": {"a": V}}]\n```',
    '<tool_call>[{"name": "f", "arguments": {"a": V}}]</tool_call>',
    '[TOOL_CALLS][{"name": "f", "arguments": {"a": V}}]',
)

TOK = tokenizer(FAMILY_TOKENIZERS["xlam"])
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    for name in ("get_current_weather", "note")
]
Call = tuple[str, dict[str, Any]]
DALLAS: Call = ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})
ORLANDO: Call = ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("xlam", TOK, kwargs)


def listed(*calls: Call) -> str:
    """Calls as xLAM writes them: one JSON list (its templates)."""
    return json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False)


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(
        name=name, arguments=json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    )


def checked(text: str) -> reasonspan.ParseResult:
    """``parse()`` of ``text``, once every split and the runtime agreed with it (a region
    of this format runs to the end of the output, so a cut one reads the same whatever
    the finish reason)."""
    return every_path(parser, None, TOK.encode(text), TOOLS)


def test_a_bare_list_of_parallel_calls() -> None:
    res = checked(listed(DALLAS, ORLANDO))
    assert res.tool_calls == [call(*DALLAS), call(*ORLANDO)]
    assert res.content is None and res.reasoning is None
    assert set(res.labels) == {TOOL_CALL}


@pytest.mark.parametrize(
    ("before", "wrap"),
    [
        ("I'll help you with that.\n", "```json\n{}\n```"),
        ("", "```json\n{}\n```"),
        ("I'll check the weather for you.", "[TOOL_CALLS]{}"),
        ("", "[TOOL_CALLS]{}"),
        ("I'll help you check the weather.", "<tool_call>{}</tool_call>"),
    ],
)
def test_the_forms_vllms_parser_reads_after_text(before: str, wrap: str) -> None:
    res = checked(before + wrap.format(listed(DALLAS)))
    assert res.tool_calls == [call(*DALLAS)]
    assert (res.content or "") == before.strip()


@pytest.mark.parametrize(
    "wrap", ["```json\n{}\n```", "<tool_call>{}</tool_call>", "```json\n{}```"]
)
def test_text_on_both_sides_of_a_closed_form_keeps_one_separator(wrap: str) -> None:
    res = checked("Before.\n\n" + wrap.format(listed(DALLAS)) + "\n\nAfter.")
    assert res.tool_calls == [call(*DALLAS)]
    assert res.content == "Before.\n\nAfter."


def test_prose_after_the_list_stays_content() -> None:
    res = checked(listed(DALLAS) + "\nI asked for Dallas.")
    assert res.tool_calls == [call(*DALLAS)]
    assert res.content == "I asked for Dallas."
    # After [TOOL_CALLS] (vLLM's parser reads the list to the end of its line).
    res = checked("Ok.[TOOL_CALLS]" + listed(DALLAS) + "\nMore text.")
    assert res.tool_calls == [call(*DALLAS)]
    assert res.content == "Ok.\nMore text."


@pytest.mark.parametrize(
    "answer",
    [
        '[{"name": "Ada", "age": 36}]',  # a JSON answer: no "arguments", not a call
        '[{"name": "note", "parameters": {"city": "x"}}]',  # vLLM's rule: "arguments" only
        "[1] Smith et al., 2020.",
        "[]\n",  # what xLAM's template writes for an empty list of calls
        "```python\nprint([1])\n```",
        '```\n[{"name": "note", "arguments": {}}]\n```',  # no json tag: not read (module doc)
    ],
)
def test_what_is_not_a_call_list_stays_content_verbatim(answer: str) -> None:
    res = checked(answer)
    assert res.tool_calls == [] and res.content == answer


def test_a_list_after_think_text_is_content() -> None:
    # vLLM's parser reads a list after </think>; xLAM-2 has no thinking block (module doc).
    out = "<think>I'll help you with that.</think>" + listed(DALLAS)
    res = checked(out)
    assert res.tool_calls == [] and res.content == out and res.reasoning is None


def test_one_bad_call_keeps_its_siblings() -> None:
    good = {"name": "note", "arguments": {"city": "LA"}}
    for bad in ({"name": "note"}, {"arguments": {"a": 1}}, {"name": "note", "arguments": [1]}, 7):
        res = checked(json.dumps([bad, good]))
        assert res.tool_calls == [call("note", {"city": "LA"})], bad


def test_arguments_written_as_a_json_string_are_unwrapped() -> None:
    args = {"city": "Paris", "days": 3, "exact": False, "extra": None}
    res = checked(json.dumps([{"name": "note", "arguments": json.dumps(args)}]))
    assert res.tool_calls == [call("note", args)]


def test_markers_inside_a_string_are_argument_text() -> None:
    c = ("note", {"city": "```\nand </tool_call> and [TOOL_CALLS] ```json"})
    res = checked("Here:\n```json\n" + listed(c) + "\n```")
    assert res.tool_calls == [call(*c)] and res.content == "Here:"
    res = checked("<tool_call>" + listed(c) + "</tool_call>")
    assert res.tool_calls == [call(*c)] and not res.content


@pytest.mark.parametrize("wrap", ["{}", "```json\n{}\n```", "Ok.<tool_call>{}</tool_call>"])
def test_a_list_cut_by_the_end_of_the_output_is_not_a_call(wrap: str) -> None:
    body = listed(DALLAS, ORLANDO)
    whole = wrap.format(body)
    start = whole.index(body)
    for cut in (1, len(body) // 3, len(body) // 2, len(body) - 1):
        res = checked(whole[: start + cut])
        assert res.tool_calls == [], cut
        # Read to the end, it does not read: given back as written (no call, nothing lost).
        assert res.content == whole[: start + cut], cut


def test_without_tools_or_with_tool_choice_none_the_list_stays_content() -> None:
    out = listed(DALLAS)
    ids = TOK.encode(out)
    for res in (parser().parse(ids), parser().parse(ids, tools=TOOLS, tool_choice="none")):
        assert res.tool_calls == [] and res.content == out


def test_no_reasoning_whatever_the_switches() -> None:
    out = "<think>not a block</think> answer"
    for kwargs in ({}, {"enable_thinking": True}, {"thinking": True}):
        p = parser(**kwargs)
        assert not p.default_reasoning
        res = p.parse(TOK.encode(out), tools=TOOLS)
        assert res.reasoning is None and res.content == out


@pytest.mark.parametrize("seed", range(8))
def test_random_outputs_give_one_answer_on_every_path(seed: int) -> None:
    """A bare list, or text with fenced / tagged lists, in random order and sometimes cut:
    every split and the runtime (chunks and SSE) give parse()'s answer, which is the calls
    put in."""
    rng = random.Random(seed)
    calls: list[ToolCall] = []

    def some() -> str:
        made = [
            ("note", {"city": rng.choice(["a", 'q"uote', "```", "東京 🙂"]), "n": i})
            for i in range(rng.randint(1, 3))
        ]
        calls.extend(call(*c) for c in made)
        return listed(*made)

    if rng.random() < 0.3:
        text = some() + rng.choice(["", "\nDone.", " ok"])
    else:
        parts = []
        for _ in range(rng.randint(1, 4)):
            form = rng.choice(["```json\n{}\n```", "<tool_call>{}</tool_call>", "words"])
            parts.append(rng.choice(["Sure. ", "x\n", "東京 "]))
            if form != "words":
                parts.append(form.format(some()))
        text = "".join(parts)
    res = checked(text)
    assert res.tool_calls == calls

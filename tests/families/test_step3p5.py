"""step3p5: XML functions inside ``<tool_call>`` … ``</tool_call>``.

Tokenizer: Qwen3's real tokenizer (the family's stand-in; ``<think>``, ``</think>``,
``<tool_call>``, ``</tool_call>`` are one token each there).

Facts (architectures/step.py): vLLM's ``step3p5`` tool parser reads ``<tool_call>``,
``<function=NAME>``, ``<parameter=KEY>``; the StepFun 3.7 Flash template in llama.cpp's
``models/templates`` writes ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n``
``</parameter>\\n</function>\\n</tool_call>`` (mappings and lists as JSON, other values
with ``string``: Python's ``str``). The template prefills ``<think>\\n``; one newline on each
side of ``</think>`` is layout.

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
from tests.support.cases import split_with_parser
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path, read_chunks, split_at

# Qwen3's real tokenizer, the family's stand-in: <think>, </think>, <tool_call>,
# </tool_call> are one token each there.
FIXTURE = "qwen-3"

# One call to f(a=V) in each form of the tool-call format architectures/step.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["step3p5"])
PROMPT = TOK.encode("<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n")
OPEN, CLOSE = "<tool_call>", "</tool_call>"
END = "\n</think>\n"
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


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("step3p5", TOK, kwargs)


def call_text(name: str, args: dict[str, Any]) -> str:
    """One call as the template renders it (JSON for mappings and lists, else ``str``)."""
    params = "".join(
        f"<parameter={k}>\n{json.dumps(v) if isinstance(v, (dict, list)) else str(v)}"
        "\n</parameter>\n"
        for k, v in args.items()
    )
    return f"{OPEN}\n<function={name}>\n{params}</function>\n{CLOSE}"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "Beijing", "days": 3}
NOTE = {"text": "北京 🙂\n两行"}


def test_markers_are_single_tokens() -> None:
    for marker in (OPEN, CLOSE, "<think>", "</think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning() -> None:
    out = "I need the weather." + END + "Let me check.\n" + call_text("get_weather", WEATHER)
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls() -> None:
    out = "plan" + END + call_text("get_weather", WEATHER) + "\n" + call_text("note", NOTE)
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert not res.content  # "" (the newline between the calls is layout), as for qwen3
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]


def test_values_are_typed_from_the_schema() -> None:
    # Written as the template writes them: str() of a scalar (True), JSON of a mapping.
    args = {"city": "007", "days": 4, "metric": True, "where": {"lat": 1.5, "n": [1, 2]}}
    args["tags"] = ["a", "b"]
    text = call_text("get_weather", args)
    assert "<parameter=metric>\nTrue\n</parameter>" in text
    res = every_path(parser, PROMPT, TOK.encode("t" + END + text), TOOLS)
    assert res.tool_calls == [call("get_weather", args)]


def test_a_call_inside_the_reasoning_stays_reasoning() -> None:
    # Step-3.5 declares no tool marker that ends reasoning: the template writes calls
    # after </think>, and vLLM's step3p5 reasoning parser ends reasoning only there.
    out = "I will call " + call_text("note", NOTE) + END + "Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Done."


def test_an_empty_reasoning_block_then_calls() -> None:
    # Step-3.5 has no thinking switch: the template always opens the block.
    out = END.lstrip("\n") + "Sure.\n" + call_text("note", NOTE)
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert not res.reasoning
    assert res.content == "Sure."
    assert res.tool_calls == [call("note", NOTE)]


def test_a_close_marker_inside_a_value_is_text() -> None:
    args = {"text": f"wrap it in {CLOSE} please"}
    ids = TOK.encode("t" + END + call_text("note", args))
    close = TOK.single_token_id(CLOSE)
    assert close is not None and ids.count(close) == 2
    res = every_path(parser, PROMPT, ids, TOOLS)
    assert res.tool_calls == [call("note", args)]


@pytest.mark.parametrize(
    "bad",
    [
        f"{OPEN}not xml{CLOSE}",
        f"{OPEN}\n<function=note>\n<parameter=a>1</parameter>\nstray</function>\n{CLOSE}",
        f"{OPEN}\n<function=>\n</function>\n{CLOSE}",
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
    for cut in range(first + 1, len(whole)):
        ids = whole[:cut]
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert (res.content, res.tool_calls) == ("Checking.", want), cut
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            got = split_at(parser(), PROMPT, ids, cuts, TOOLS)
            assert got == ("t", "Checking.", want), (cut, cuts)
        sent = anyio.run(_served_until, ids, "length")
        assert sent == ("t", "Checking.", [("get_weather", want[0].arguments)])


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = "t" + END + "Sure.\n" + call_text("note", NOTE)
    res = parser().parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == []
    assert res.content == "Sure.\n" + call_text("note", NOTE)


def test_every_split_of_mixed_outputs() -> None:
    pieces = [
        "plan ",
        END,
        "A ",
        call_text("get_weather", {"city": "Oslo"}),
        f"\n{OPEN}{{bad}}{CLOSE}",
        " B",
        call_text("note", {}),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        whole = [p for p in chosen if p.startswith(OPEN + "\n<function=")]
        # (no </think>: the whole output is reasoning, calls included)
        assert len(res.tool_calls) == (len(whole) if END in chosen else 0), chosen


# ---------------------------------------------------------------------- matrix rows

ROWS = [
    fc.Row("trims one newline each side", "a\n\n</think>\n\nb", "a\n", "\nb", tokenizer="qwen-3"),
    fc.Row("single newlines", "a\n</think>\nb", "a", "b", tokenizer="qwen-3"),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: fc.Row) -> None:
    fc.check_row("step3p5", row)


def test_matrix_row_as_deepseek_r1() -> None:
    """As deepseek_r1 (prompt start, missing start tolerated, truncated = reasoning), one
    newline trimmed on each side of </think>."""
    parser = fc.parser_for("step3p5")
    res = split_with_parser(parser, "<think>\na\n\n</think>\n\nb")
    assert (res.reasoning, res.content) == ("\na\n", "\nb")
    res = split_with_parser(parser, "a\nb")
    assert (res.reasoning, res.content) == ("a\nb", None) and not res.reasoning_ended
    history = "<|BOT|>assistant\n<think>x</think>y<|EOT|><|BOT|>user\nq<|EOT|><|BOT|>assistant\n"
    step3 = fc.parser_for("step3p5", None, "deepseek-v3.1_base_with_step3_special_tokens")
    assert step3.is_prompt_in_reasoning(step3.tokenizer.encode(history))

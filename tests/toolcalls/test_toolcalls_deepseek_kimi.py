"""Section-style tool calls of the families not yet in their own module
(``tests/families/test_<family>.py``): DeepSeek V3-0324, V3.1, V4 DSML, V4.1 spaced DSML
and Kimi K2 sections, K3 XTML. Each family's :class:`~tests.support.section_calls.Family`
runs through :data:`tests.support.section_calls.CHECKS` (assembled outputs, cuts, malformed
blocks, markers inside arguments, any split and the runtime); its own quirks follow.

Tokenizers: DeepSeek's are real (``deepseek-v3``, ``deepseek-v3.1``, ``deepseek-v4``; V4.1
has V4's vocabulary). Kimi's are named stand-ins: ``qwen-3_base_with_kimi_k2_special_tokens``
and ``qwen-3_base_with_kimi_k3_special_tokens`` (Qwen3's real tokenizer with the family's
special tokens added, tests/support/fixtures.py).
"""

from __future__ import annotations

import pytest

from tests.support import section_calls
from tests.support.section_calls import (
    DS_PROMPT,
    K2_PROMPT,
    NOTE,
    TOOLS,
    WEATHER,
    Family,
    deepseek_v3,
    deepseek_v31,
    dsml,
    dumps,
    every_path,
    expected,
    kimi_k2,
)

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
}
NAMES = sorted(FAMILIES)
NAMES = sorted(FAMILIES)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
@pytest.mark.parametrize("name", NAMES)
def test_section_calls(name: str, check: str) -> None:
    section_calls.CHECKS[check](FAMILIES[name])


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


def test_deepseek_v3_0324_has_no_reasoning() -> None:
    fam = FAMILIES["deepseek_v3_0324"]
    tok = fam.tokenizer()
    assert tok.single_token_id("<think>") is None
    out = "Sure.\n" + deepseek_v3([WEATHER])
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning is None and res.content == "Sure."
    assert res.tool_calls == [expected(*WEATHER)]
